"""The built-in university domain: its shape, its tools on a small hand-made state (the
enrollment state machine with waitlist promotion, every registration rule, seats and the
credit limit, pass/fail rules, holds and the balance due with its soft failure, majors,
transcript orders, contact details), and a generated task set that baselines cannot
game."""

from __future__ import annotations

import string
from pathlib import Path
from typing import Any

import pytest

from graphgen import pipeline as pl
from graphgen.domain import Domain
from graphgen.domains import builtin_names, load_builtin
from graphgen.errors import ToolError
from graphgen.interp import call_tool, run_call
from graphgen.state import State, diff
from graphgen.stategen import generate_state
from graphgen.staterules import invariant_violations
from graphgen.tasks.taskset import read_taskset
from graphgen.types import EnumT, RefT, strip_opt


@pytest.fixture(scope="module")
def dom() -> Domain:
    return load_builtin("university")


def _course(title: str, dept: str, credits: int, prereq: str | None = None) -> dict[str, Any]:
    return {"title": title, "department": dept, "credits": credits, "prerequisite": prereq}


def _sec(crn: str, course: str, term: str, slot: str, capacity: int, taken: int) -> dict[str, Any]:
    return {
        "crn": crn,
        "course_code": course,
        "term_id": term,
        "instructor": "Maya Scott",
        "slot": slot,
        "capacity": capacity,
        "seats_taken": taken,
    }


COURSE_OF = {  # section: (course, term, credits, meeting time)
    "SEC001": ("CS101", "T1", 4, "mwf_0900"),
    "SEC002": ("CS201", "T3", 4, "mwf_0900"),
    "SEC003": ("CS201", "T3", 4, "tth_0930"),
    "SEC004": ("MATH120", "T3", 4, "mwf_1100"),
    "SEC005": ("HIST101", "T2", 3, "tth_1230"),
    "SEC006": ("ECON101", "T2", 3, "mwf_1400"),
    "SEC007": ("HIST101", "T3", 3, "mwf_0900"),
    "SEC008": ("ECON101", "T3", 3, "tth_1530"),
    "SEC009": ("CS101", "T3", 4, "tth_1230"),
    "SEC010": ("MATH120", "T3", 4, "mwf_0900"),
    "SEC011": ("HIST101", "T1", 3, "tth_1230"),
}


def _enr(
    student: str, section: str, status: str, grade: str | None = None, basis: str = "letter"
) -> dict[str, Any]:
    course, term, credits, slot = COURSE_OF[section]
    return {
        "student_id": student,
        "section_id": section,
        "course_code": course,
        "term_id": term,
        "credits": credits,
        "slot": slot,
        "status": status,
        "grading_basis": basis,
        "grade": grade,
    }


def _student(
    email: str, number: str, standing: str, hold: str | None, balance: str, major: str | None
) -> dict[str, Any]:
    return {
        "email": email,
        "student_number": number,
        "full_name": email.split("@")[0].title(),
        "phone": "312-555-01" + number[-2:],
        "major": major,
        "standing": standing,
        "hold": hold,
        "balance_due": balance,
    }


def _state() -> State:
    """Spring 2026 is over, Summer 2026 in session, Fall 2026 open for registration.

    Ana (computer science, good standing) passed CS101 and HIST101, takes two summer
    courses and holds a seat in the full CS201 section SEC003; Bo (on probation, owes
    500.00, so a financial hold) got a D in CS101, takes one summer course and waits for
    SEC003; Cy has an advising hold; Dee is new, with no hold and no record."""
    return State(
        {
            "Student": {
                "S0001": _student(
                    "ana@uni.example", "20230001", "good", None, "0.00", "computer_science"
                ),
                "S0002": _student(
                    "bo@uni.example", "20230002", "probation", "financial", "500.00", None
                ),
                "S0003": _student("cy@uni.example", "20230003", "good", "advising", "0.00", None),
                "S0004": _student("dee@uni.example", "20230004", "good", None, "0.00", None),
            },
            "Course": {
                "CS101": _course("Introduction to Programming", "computer_science", 4),
                "CS201": _course("Data Structures", "computer_science", 4, "CS101"),
                "MATH120": _course("Calculus I", "mathematics", 4),
                "HIST101": _course("World History to 1500", "history", 3),
                "ECON101": _course("Principles of Microeconomics", "economics", 3),
            },
            "Term": {
                "T1": {"name": "Spring 2026", "status": "finished"},
                "T2": {"name": "Summer 2026", "status": "in_session"},
                "T3": {"name": "Fall 2026", "status": "registration"},
            },
            "Section": {
                "SEC001": _sec("40001", "CS101", "T1", "mwf_0900", 30, 30),
                "SEC002": _sec("40002", "CS201", "T3", "mwf_0900", 2, 1),
                "SEC003": _sec("40003", "CS201", "T3", "tth_0930", 2, 2),
                "SEC004": _sec("40004", "MATH120", "T3", "mwf_1100", 2, 2),
                "SEC005": _sec("40005", "HIST101", "T2", "tth_1230", 30, 10),
                "SEC006": _sec("40006", "ECON101", "T2", "mwf_1400", 30, 10),
                "SEC007": _sec("40007", "HIST101", "T3", "mwf_0900", 30, 5),
                "SEC008": _sec("40008", "ECON101", "T3", "tth_1530", 30, 5),
                "SEC009": _sec("40009", "CS101", "T3", "tth_1230", 30, 3),
                "SEC010": _sec("40010", "MATH120", "T3", "mwf_0900", 30, 0),
                "SEC011": _sec("40011", "HIST101", "T1", "tth_1230", 30, 25),
            },
            "Enrollment": {
                "E0001": _enr("S0001", "SEC001", "completed", "A"),
                "E0002": _enr("S0001", "SEC005", "enrolled"),
                "E0003": _enr("S0001", "SEC006", "enrolled"),
                "E0004": _enr("S0001", "SEC003", "enrolled"),
                "E0005": _enr("S0002", "SEC001", "completed", "D"),
                "E0006": _enr("S0002", "SEC005", "enrolled"),
                "E0007": _enr("S0002", "SEC003", "waitlisted"),
                "E0008": _enr("S0001", "SEC011", "completed", "B"),
            },
            "TranscriptRequest": {
                "TR0001": {
                    "student_id": "S0001",
                    "recipient": "Recruiting, Summit Health Systems",
                    "delivery": "electronic",
                    "fee": "10.00",
                    "status": "sent",
                },
            },
            "Payment": {},
        },
        {
            "Student": 5,
            "Course": 1,
            "Term": 4,
            "Section": 12,
            "Enrollment": 9,
            "TranscriptRequest": 2,
            "Payment": 1,
        },
    )


def _call(dom: Domain, st: State, tool: str, **args: Any) -> Any:
    return call_tool(dom, st, tool, args)


def _refused(dom: Domain, st: State, tool: str, match: str, **args: Any) -> None:
    before = st.copy()
    with pytest.raises(ToolError, match=match):
        call_tool(dom, st, tool, args)
    assert st == before


def _status(st: State, enrollment: str) -> str:
    return str(st.tables["Enrollment"][enrollment]["status"])


def _seats(st: State, section: str) -> int:
    return int(st.tables["Section"][section]["seats_taken"])


def test_is_builtin_and_has_the_promised_shape(dom: Domain) -> None:
    assert "university" in builtin_names()
    assert len(dom.tools) >= 15
    assert len(dom.write_tools) >= 6
    assert all(t.requires for t in dom.write_tools)
    assert len(dom.entities) >= 4
    refs = {
        (e.name, strip_opt(f.ty).entity)
        for e in dom.entities.values()
        for f in e.fields.values()
        if isinstance(strip_opt(f.ty), RefT)
    }
    assert {
        ("Section", "Course"),
        ("Section", "Term"),
        ("Enrollment", "Student"),
        ("Enrollment", "Section"),
        ("Course", "Course"),
        ("TranscriptRequest", "Student"),
        ("Payment", "Student"),
    } <= refs
    status = dom.entities["Enrollment"].fields["status"].ty
    assert isinstance(status, EnumT)
    assert status.values == ("enrolled", "waitlisted", "dropped", "withdrawn", "completed")
    assert dom.policy.strip()


def test_every_tool_is_documented_and_intents_name_what_users_supply(dom: Domain) -> None:
    for t in dom.tools.values():
        assert t.description, t.name
        assert t.intents, t.name
        assert all(p.description for p in t.params.values()), t.name
        named = {f for it in t.intents for _, f, _, _ in string.Formatter().parse(it.text) if f}
        supplied = {n for n, p in t.params.items() if strip_opt(p.ty) != RefT("Student")}
        assert supplied <= named, (t.name, supplied - named)
        assert "student_id" not in named, t.name


def test_the_hand_made_state_keeps_the_invariants(dom: Domain) -> None:
    assert invariant_violations(dom, _state()) == []


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_generated_states_hold_a_consistent_record(dom: Domain, seed: int) -> None:
    st = generate_state(dom, seed)
    courses = st.tables["Course"]
    assert courses["CS201"]["title"] == "Data Structures" if "CS201" in courses else True
    for code, c in courses.items():
        assert c["prerequisite"] is None or c["prerequisite"] in courses, code
    for key, s in st.tables["Section"].items():
        waiting = [
            e
            for e in st.tables["Enrollment"].values()
            if e["section_id"] == key and e["status"] == "waitlisted"
        ]
        assert not waiting or s["seats_taken"] == s["capacity"]
    for s in st.tables["Student"].values():
        assert (s["hold"] == "financial") == (s["balance_due"] != "0.00")
    # a course appears once per student and term, dropped registrations aside
    kept = [
        (e["student_id"], e["course_code"], e["term_id"])
        for e in st.tables["Enrollment"].values()
        if e["status"] != "dropped"
    ]
    assert len(kept) == len(set(kept))
    # and no two classes taken at the same time in a term
    taken = [
        (e["student_id"], e["term_id"], e["slot"])
        for e in st.tables["Enrollment"].values()
        if e["status"] in ("enrolled", "waitlisted", "completed")
    ]
    assert len(taken) == len(set(taken))
    terms = {k: t["status"] for k, t in st.tables["Term"].items()}
    for e in st.tables["Enrollment"].values():
        assert e["status"] != "completed" or terms[e["term_id"]] == "finished"
        assert e["status"] != "waitlisted" or terms[e["term_id"]] == "registration"
        assert (e["grade"] is not None) == (e["status"] in ("completed", "withdrawn"))
    assert invariant_violations(dom, st) == []


def test_enroll_checks_every_registration_rule(dom: Domain) -> None:
    st = _state()
    # Summer is in session: registration for it is over
    _refused(dom, st, "enroll", "registration is not open", student_id="S0004", section_id="SEC005")
    # a hold blocks registering
    _refused(dom, st, "enroll", "has a hold", student_id="S0003", section_id="SEC007")
    _refused(dom, st, "enroll", "has a hold", student_id="S0002", section_id="SEC007")
    # one section of a course per term; a passed course is not taken again
    _refused(
        dom, st, "enroll", "already enrolled or waitlisted", student_id="S0001", section_id="SEC002"
    )
    _refused(dom, st, "enroll", "already passed", student_id="S0001", section_id="SEC009")
    # CS201 needs CS101 with a C or better: Dee never took it
    _refused(dom, st, "enroll", "prerequisite", student_id="S0004", section_id="SEC002")
    # a full section sends the student to its waitlist
    _refused(dom, st, "enroll", "is full", student_id="S0004", section_id="SEC004")
    out = _call(dom, st, "enroll", student_id="S0004", section_id="SEC007")
    assert out["enrollment_id"] == "E0009"
    assert out["message"] == "Registered in HIST101 (CRN 40007) for Fall 2026."
    assert st.tables["Enrollment"]["E0009"] == {**_enr("S0004", "SEC007", "enrolled")}
    assert _seats(st, "SEC007") == 6
    # SEC010 meets Mon/Wed/Fri at 9:00 too
    _refused(dom, st, "enroll", "already has a class", student_id="S0004", section_id="SEC010")


def test_a_d_is_no_prerequisite_and_probation_caps_credits_at_12(dom: Domain) -> None:
    st = _state()
    _call(dom, st, "pay_balance", student_id="S0002", amount="500.00", method="card")
    assert st.tables["Student"]["S0002"]["hold"] is None
    # Bo got a D in CS101: no CS201 for him (once off its waitlist)
    off = st.copy()
    _call(dom, off, "drop_course", student_id="S0002", enrollment_id="E0007")
    _refused(dom, off, "enroll", "prerequisite", student_id="S0002", section_id="SEC002")
    # on probation: 12 credits, the 4 of the CS201 waitlist included
    _call(dom, st, "enroll", student_id="S0002", section_id="SEC007")
    _call(dom, st, "enroll", student_id="S0002", section_id="SEC008")
    load = _call(dom, st, "get_credit_load", student_id="S0002", term_id="T3")
    assert load == {"credits": 10, "limit": 12, "credits_left": 2}
    # a D may be retaken, but CS101's 4 credits would make 14
    _refused(dom, st, "enroll", "over their credit limit", student_id="S0002", section_id="SEC009")
    # Ana, in good standing, may hold 18
    assert _call(dom, st, "get_credit_load", student_id="S0001", term_id="T3")["limit"] == 18


def test_waitlist_rules(dom: Domain) -> None:
    st = _state()
    _refused(dom, st, "join_waitlist", "has free seats", student_id="S0004", section_id="SEC010")
    _refused(
        dom,
        st,
        "join_waitlist",
        "registration is not open",
        student_id="S0004",
        section_id="SEC001",
    )
    out = _call(dom, st, "join_waitlist", student_id="S0004", section_id="SEC004")
    assert (out["position"], _status(st, out["enrollment_id"])) == (1, "waitlisted")
    assert _seats(st, "SEC004") == 2  # waiting takes no seat
    # the waitlist holds 3: two more fill it, a fourth student is turned away
    for student, number in (("S0005", "20230005"), ("S0006", "20230006"), ("S0007", "20230007")):
        st.put_row(
            "Student",
            student,
            _student(f"{student.lower()}@uni.example", number, "good", None, "0.00", None),
        )
    _call(dom, st, "join_waitlist", student_id="S0005", section_id="SEC004")
    _call(dom, st, "join_waitlist", student_id="S0006", section_id="SEC004")
    _refused(
        dom,
        st,
        "join_waitlist",
        "waitlist of section SEC004 is full",
        student_id="S0007",
        section_id="SEC004",
    )
    assert _call(dom, st, "list_waitlist", section_id="SEC004") == ["E0009", "E0010", "E0011"]
    section = _call(dom, st, "get_section", section_id="SEC004")
    assert (section["seats_free"], section["waitlisted"]) == (0, 3)


def test_drop_frees_the_seat_for_the_first_student_waiting(dom: Domain) -> None:
    st = _state()
    out = _call(dom, st, "drop_course", student_id="S0001", enrollment_id="E0004")
    assert "first student on the waitlist" in out["message"]
    assert (_status(st, "E0004"), _status(st, "E0007")) == ("dropped", "enrolled")
    assert _seats(st, "SEC003") == 2
    # without a waitlist the seat is freed
    _call(dom, st, "enroll", student_id="S0004", section_id="SEC007")
    _call(dom, st, "drop_course", student_id="S0004", enrollment_id="E0009")
    assert _seats(st, "SEC007") == 5
    # dropped is final; another student's enrollment is refused
    _refused(
        dom,
        st,
        "drop_course",
        "neither enrolled nor waitlisted",
        student_id="S0004",
        enrollment_id="E0009",
    )
    _refused(dom, st, "drop_course", "does not belong", student_id="S0004", enrollment_id="E0007")


def test_leaving_the_waitlist_and_dropping_in_session(dom: Domain) -> None:
    st = _state()
    out = _call(dom, st, "drop_course", student_id="S0002", enrollment_id="E0007")
    assert out["message"] == "Removed from the waitlist of CS201."
    assert _status(st, "E0007") == "dropped" and _seats(st, "SEC003") == 2
    # once the term is in session a course is withdrawn from, not dropped
    _refused(
        dom, st, "drop_course", "only withdrawn from", student_id="S0001", enrollment_id="E0002"
    )


def test_withdrawal_in_session_but_not_from_the_last_course(dom: Domain) -> None:
    st = _state()
    _refused(
        dom, st, "withdraw_course", "not in session", student_id="S0001", enrollment_id="E0004"
    )
    _refused(dom, st, "withdraw_course", "last course", student_id="S0002", enrollment_id="E0006")
    before = st.copy()
    _call(dom, st, "withdraw_course", student_id="S0001", enrollment_id="E0002")
    assert sorted(diff(before, st)) == [
        ("Enrollment", "E0002", "grade", None, "W"),
        ("Enrollment", "E0002", "status", "enrolled", "withdrawn"),
        ("Section", "SEC005", "seats_taken", 10, 9),
    ]
    _refused(dom, st, "withdraw_course", "not enrolled", student_id="S0001", enrollment_id="E0002")
    _refused(dom, st, "withdraw_course", "last course", student_id="S0001", enrollment_id="E0003")
    _refused(dom, st, "withdraw_course", "not enrolled", student_id="S0001", enrollment_id="E0001")


def test_switching_sections(dom: Domain) -> None:
    st = _state()
    _refused(
        dom,
        st,
        "swap_section",
        "not a section of the course",
        student_id="S0001",
        enrollment_id="E0004",
        section_id="SEC004",
    )
    _refused(
        dom,
        st,
        "swap_section",
        "already in section",
        student_id="S0001",
        enrollment_id="E0004",
        section_id="SEC003",
    )
    _refused(
        dom,
        st,
        "swap_section",
        "not enrolled",
        student_id="S0002",
        enrollment_id="E0007",
        section_id="SEC002",
    )
    _refused(
        dom,
        st,
        "swap_section",
        "closed",
        student_id="S0001",
        enrollment_id="E0002",
        section_id="SEC007",
    )
    # SEC002 has a free seat; Bo, first on SEC003's waitlist, gets Ana's old seat
    _call(dom, st, "swap_section", student_id="S0001", enrollment_id="E0004", section_id="SEC002")
    assert st.tables["Enrollment"]["E0004"]["section_id"] == "SEC002"
    assert st.tables["Enrollment"]["E0004"]["slot"] == "mwf_0900"
    assert (_seats(st, "SEC002"), _seats(st, "SEC003")) == (2, 2)
    assert _status(st, "E0007") == "enrolled"
    # now SEC002 is full
    st.set_field("Student", "S0002", "hold", None)
    st.set_field("Student", "S0002", "balance_due", "0.00")
    _refused(
        dom,
        st,
        "swap_section",
        "is full",
        student_id="S0002",
        enrollment_id="E0007",
        section_id="SEC002",
    )


def test_switching_without_a_waitlist_moves_the_seat(dom: Domain) -> None:
    st = _state()
    st.set_field("Enrollment", "E0007", "status", "dropped")
    _call(dom, st, "swap_section", student_id="S0001", enrollment_id="E0004", section_id="SEC002")
    assert (_seats(st, "SEC002"), _seats(st, "SEC003")) == (2, 1)


def test_grading_basis_rules(dom: Domain) -> None:
    st = _state()
    _refused(
        dom,
        st,
        "set_grading_basis",
        "in the student's major",
        student_id="S0001",
        enrollment_id="E0004",
        basis="pass_fail",
    )
    _refused(
        dom,
        st,
        "set_grading_basis",
        "already graded letter",
        student_id="S0001",
        enrollment_id="E0004",
        basis="letter",
    )
    _refused(
        dom,
        st,
        "set_grading_basis",
        "no longer change",
        student_id="S0001",
        enrollment_id="E0002",
        basis="pass_fail",
    )
    _refused(
        dom,
        st,
        "set_grading_basis",
        "not enrolled",
        student_id="S0002",
        enrollment_id="E0007",
        basis="pass_fail",
    )
    _call(dom, st, "enroll", student_id="S0004", section_id="SEC007")
    _call(dom, st, "enroll", student_id="S0004", section_id="SEC008")
    _call(
        dom, st, "set_grading_basis", student_id="S0004", enrollment_id="E0009", basis="pass_fail"
    )
    assert st.tables["Enrollment"]["E0009"]["grading_basis"] == "pass_fail"
    _refused(
        dom,
        st,
        "set_grading_basis",
        "already takes a course pass/fail",
        student_id="S0004",
        enrollment_id="E0010",
        basis="pass_fail",
    )
    _call(dom, st, "set_grading_basis", student_id="S0004", enrollment_id="E0009", basis="letter")
    _call(
        dom, st, "set_grading_basis", student_id="S0004", enrollment_id="E0010", basis="pass_fail"
    )


def test_payments_lift_the_financial_hold_only_when_paid_in_full(dom: Domain) -> None:
    st = _state()
    before = st.copy()
    out = run_call(
        dom, st, "pay_balance", {"student_id": "S0002", "amount": "600.00", "method": "card"}
    )
    assert out.soft_failed and out.value["success"] is False and st == before
    assert out.value["message"] == "The payment is more than the 500.00 due."
    out = _call(dom, st, "pay_balance", student_id="S0002", amount="200.00", method="bank_transfer")
    assert (out["balance_due"], st.tables["Student"]["S0002"]["hold"]) == ("300.00", "financial")
    _refused(
        dom,
        st,
        "request_transcript",
        "financial hold",
        student_id="S0002",
        delivery="paper",
        recipient="Credential Evaluation Services",
    )
    _call(dom, st, "pay_balance", student_id="S0002", amount="300.00", method="card")
    assert st.tables["Student"]["S0002"]["hold"] is None
    _refused(
        dom, st, "pay_balance", "no balance due", student_id="S0002", amount="1.00", method="card"
    )
    paid = _call(dom, st, "list_payments", student_id="S0002")
    assert [(p["amount"], p["method"]) for p in paid] == [
        ("200.00", "bank_transfer"),
        ("300.00", "card"),
    ]
    # the hold no longer blocks registration
    _call(dom, st, "enroll", student_id="S0002", section_id="SEC007")


def test_declaring_a_major(dom: Domain) -> None:
    st = _state()
    _refused(
        dom,
        st,
        "declare_major",
        "already majors",
        student_id="S0001",
        department="computer_science",
    )
    _refused(dom, st, "declare_major", "advising hold", student_id="S0003", department="history")
    _refused(
        dom,
        st,
        "declare_major",
        "academic probation",
        student_id="S0002",
        department="computer_science",
    )
    _refused(
        dom,
        st,
        "declare_major",
        "not completed a course in economics",
        student_id="S0001",
        department="economics",
    )
    out = _call(dom, st, "declare_major", student_id="S0001", department="history")
    assert st.tables["Student"]["S0001"]["major"] == "history"
    assert out["message"] == "Your major is now history."
    # computer science is no longer her major: a CS course may now go pass/fail
    _call(
        dom, st, "set_grading_basis", student_id="S0001", enrollment_id="E0004", basis="pass_fail"
    )


def test_transcript_orders(dom: Domain) -> None:
    st = _state()
    _refused(
        dom,
        st,
        "request_transcript",
        "no completed course",
        student_id="S0004",
        delivery="electronic",
        recipient="Recruiting, Summit Health Systems",
    )
    fees = []
    for delivery in ("electronic", "paper", "paper"):
        out = _call(
            dom,
            st,
            "request_transcript",
            student_id="S0001",
            delivery=delivery,
            recipient="State Teacher Licensing Board",
        )
        fees.append(out["fee"])
    assert fees == ["10.00", "15.00", "15.00"]
    _refused(
        dom,
        st,
        "request_transcript",
        "3 transcript orders pending",
        student_id="S0001",
        delivery="paper",
        recipient="State Teacher Licensing Board",
    )
    _refused(
        dom,
        st,
        "cancel_transcript_request",
        "no longer pending",
        student_id="S0001",
        request_id="TR0001",
    )
    _refused(
        dom,
        st,
        "cancel_transcript_request",
        "does not belong",
        student_id="S0002",
        request_id="TR0002",
    )
    _call(dom, st, "cancel_transcript_request", student_id="S0001", request_id="TR0002")
    assert st.tables["TranscriptRequest"]["TR0002"]["status"] == "cancelled"
    _call(
        dom,
        st,
        "request_transcript",
        student_id="S0001",
        delivery="electronic",
        recipient="State Teacher Licensing Board",
    )


def test_contact_changes(dom: Domain) -> None:
    st = _state()
    before = st.copy()
    _call(dom, st, "update_contact", student_id="S0004", phone="720-555-0104")
    assert diff(before, st) == [("Student", "S0004", "phone", "312-555-0104", "720-555-0104")]
    _refused(
        dom,
        st,
        "update_contact",
        "already used by another student",
        student_id="S0004",
        email="ana@uni.example",
    )
    _refused(dom, st, "update_contact", "nothing to change", student_id="S0004")
    _call(dom, st, "update_contact", student_id="S0004", email="dee.new@uni.example")
    assert _call(dom, st, "find_student_by_email", email="dee.new@uni.example") == ["S0004"]


def test_reads(dom: Domain) -> None:
    st = _state()
    assert _call(dom, st, "find_student_by_number", student_number="20230002") == ["S0002"]
    assert _call(dom, st, "find_student_by_email", email="ANA@uni.example") == []
    assert _call(dom, st, "get_course", course_code="CS201")["prerequisite"] == "CS101"
    assert [
        s["crn"] for s in _call(dom, st, "list_sections", course_code="CS201", term_id="T3")
    ] == ["40002", "40003"]
    assert [s["crn"] for s in _call(dom, st, "find_section_by_crn", crn="40004")] == ["40004"]
    assert [
        c["title"] for c in _call(dom, st, "list_department_courses", department="history")
    ] == ["World History to 1500"]
    assert [t["status"] for t in _call(dom, st, "list_terms")] == [
        "finished",
        "in_session",
        "registration",
    ]
    assert [
        e["enrollment_id"]
        for e in _call(dom, st, "list_term_enrollments", student_id="S0001", term_id="T2")
    ] == ["E0002", "E0003"]
    record = _call(dom, st, "get_academic_record", student_id="S0001")
    # A in CS101 (4 credits), B in HIST101 (3): (16 + 9) / 7 = 3.571...
    assert (record["gpa"], record["credits_earned"], record["standing"]) == ("3.57", 7, "good")
    assert _call(dom, st, "get_academic_record", student_id="S0004")["gpa"] == "0.00"
    assert _call(dom, st, "estimate_tuition", student_id="S0001", term_id="T2") == {
        "credits": 6,
        "tuition": "2550.00",
    }


@pytest.fixture(scope="module")
def task_set(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("university") / "university.jsonl"
    pl.generate("university", 15, pl.Options(seed=3, prove=False), output=path)
    return path


def test_generated_set_has_all_kinds_and_is_not_gamed(task_set: Path) -> None:
    tasks = read_taskset(task_set)[1]
    assert len(tasks) == 15
    assert {t.kind for t in tasks} == {"action", "information", "refusal"}
    assert pl.evaluate(task_set, "oracle").success_rate == 1.0
    for agent in ("noop", "echo"):
        assert pl.evaluate(task_set, agent).success_rate == 0.0


def test_generation_is_deterministic(task_set: Path, tmp_path: Path) -> None:
    again = tmp_path / "again.jsonl"
    pl.generate("university", 15, pl.Options(seed=3, prove=False), output=again)
    assert again.read_bytes() == task_set.read_bytes()
