"""The built-in clinic domain: its shape, its tools on a small hand-made state (the
appointment life cycle, today's date, weekdays off, the caps on upcoming visits and on a
doctor's day, soft failures, insurance arithmetic in decimals), and a generated task set
that baselines cannot game."""

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
from graphgen.tasks.taskset import read_taskset
from graphgen.types import EnumT, RefT, strip_opt

TODAY = "2026-06-10"  # a Wednesday


@pytest.fixture(scope="module")
def dom() -> Domain:
    return load_builtin("clinic")


def _appt(patient: str, doctor: str, day: str, hour: int, status: str) -> dict[str, Any]:
    return {
        "patient_id": patient,
        "doctor_id": doctor,
        "day": day,
        "hour": hour,
        "reason": "Persistent cough",
        "status": status,
    }


def _state() -> State:
    """Ana (insured) holds three upcoming visits, one of them today; Bo (uninsured) has an
    unpaid bill. Dr Scott (capacity 2, off on Fridays) is full on 2026-06-11."""
    return State(
        {
            "InsurancePlan": {
                "PL001": {
                    "name": "Harbor Health Gold",
                    "coverage_rate": "0.80",
                    "copay": "20.00",
                    "status": "active",
                },
                "PL002": {
                    "name": "Summit Care Bronze",
                    "coverage_rate": "0.50",
                    "copay": "10.00",
                    "status": "discontinued",
                },
                "PL003": {
                    "name": "Meridian Value",
                    "coverage_rate": "0.60",
                    "copay": "40.00",
                    "status": "active",
                },
            },
            "Patient": {
                "P0001": {
                    "full_name": "Ana Ruiz",
                    "email": "ana@mail.example",
                    "phone": "415-555-0101",
                    "birth_date": "1980-02-03",
                    "plan_id": "PL001",
                },
                "P0002": {
                    "full_name": "Bo Li",
                    "email": "bo@mail.example",
                    "phone": "415-555-0102",
                    "birth_date": "1991-07-08",
                    "plan_id": None,
                },
            },
            "Doctor": {
                "D001": {
                    "name": "Maya Scott",
                    "specialty": "general_practice",
                    "day_off": "friday",
                    "daily_capacity": 2,
                    "visit_fee": "120.00",
                },
                "D002": {
                    "name": "Omar Reyes",
                    "specialty": "cardiology",
                    "day_off": "monday",
                    "daily_capacity": 3,
                    "visit_fee": "250.00",
                },
            },
            "Appointment": {
                1: _appt("P0001", "D001", TODAY, 9, "booked"),
                2: _appt("P0001", "D001", "2026-06-11", 10, "booked"),
                3: _appt("P0001", "D002", "2026-06-16", 11, "booked"),
                4: _appt("P0001", "D001", "2026-06-08", 9, "booked"),
                5: _appt("P0002", "D001", "2026-06-11", 9, "booked"),
                6: _appt("P0002", "D002", "2026-06-09", 14, "completed"),
                7: _appt("P0001", "D002", TODAY, 10, "checked_in"),
            },
            "Invoice": {
                "INV0001": {
                    "appointment_id": 6,
                    "patient_id": "P0002",
                    "total": "250.00",
                    "insurer_pays": "0.00",
                    "patient_pays": "250.00",
                    "status": "unpaid",
                    "issued_on": "2026-06-09",
                },
            },
        },
        {"InsurancePlan": 4, "Patient": 3, "Doctor": 3, "Appointment": 8, "Invoice": 2},
        TODAY,
    )


def _book(day: str, hour: int, patient: str = "P0002", doctor: str = "D001") -> dict[str, Any]:
    return {
        "patient_id": patient,
        "doctor_id": doctor,
        "day": day,
        "hour": hour,
        "reason": "Back pain",
    }


def test_is_builtin_and_has_the_promised_shape(dom: Domain) -> None:
    assert "clinic" in builtin_names()
    assert len(dom.tools) >= 15
    assert len(dom.write_tools) >= 6
    assert len(dom.entities) >= 4
    refs = {
        (e.name, strip_opt(f.ty).entity)
        for e in dom.entities.values()
        for f in e.fields.values()
        if isinstance(strip_opt(f.ty), RefT)
    }
    assert {
        ("Appointment", "Patient"),
        ("Appointment", "Doctor"),
        ("Invoice", "Appointment"),
        ("Patient", "InsurancePlan"),
    } <= refs
    status = dom.entities["Appointment"].fields["status"].ty
    assert isinstance(status, EnumT) and len(status.values) == 5
    assert set(dom.int_keys) == {"Appointment"}


def test_every_tool_is_documented_and_intents_name_what_users_supply(dom: Domain) -> None:
    for t in dom.tools.values():
        assert t.description, t.name
        assert t.intents, t.name
        assert all(p.description for p in t.params.values()), t.name
        named = {f for it in t.intents for _, f, _, _ in string.Formatter().parse(it.text) if f}
        supplied = {n for n, p in t.params.items() if strip_opt(p.ty) != RefT("Patient")}
        assert supplied <= named, (t.name, supplied - named)
        assert "patient_id" not in named, t.name


def test_weekdays_are_computed_from_the_date(dom: Domain) -> None:
    st = _state()
    days = {
        "2026-01-05": "monday",
        "2026-06-10": "wednesday",
        "2026-06-13": "saturday",
        "2026-06-14": "sunday",
        "2025-12-31": "wednesday",
        "2027-03-05": "friday",
    }
    for day, name in days.items():
        assert call_tool(dom, st, "get_weekday", {"day": day}) == name, day
    out = call_tool(dom, st, "get_doctor_day", {"doctor_id": "D001", "day": "2026-06-11"})
    assert out == {"weekday": "thursday", "works": True, "taken_hours": [10, 9], "free_places": 0}
    out = call_tool(dom, st, "get_doctor_day", {"doctor_id": "D001", "day": "2026-06-12"})
    assert out["works"] is False and out["free_places"] == 2


def test_booking_rules(dom: Domain) -> None:
    st = _state()
    before = st.copy()
    cases = [
        ("2026-06-11", 11, "fully booked on 2026-06-11"),  # capacity 2 reached
        ("2026-06-12", 11, "does not work on that weekday"),  # Dr Scott is off on Fridays
        ("2026-06-13", 11, "closed at weekends"),
        (TODAY, 15, "after today"),
        ("2026-06-01", 15, "after today"),
    ]
    for day, hour, msg in cases:
        with pytest.raises(ToolError, match=msg):
            call_tool(dom, st, "book_appointment", _book(day, hour))
    assert st == before
    out = call_tool(dom, st, "book_appointment", _book("2026-06-15", 9))
    assert out["appointment_id"] == 8
    assert st.tables["Appointment"][8]["status"] == "booked"
    with pytest.raises(ToolError, match="already has an appointment at 9:00"):
        call_tool(dom, st, "book_appointment", _book("2026-06-15", 9))


def test_at_most_three_upcoming_appointments(dom: Domain) -> None:
    st = _state()
    # Ana's visits today, tomorrow and next week count; the past booked one does not
    with pytest.raises(ToolError, match="already has 3 upcoming"):
        call_tool(dom, st, "book_appointment", _book("2026-06-15", 11, patient="P0001"))
    out = run_call(dom, st, "cancel_appointment", {"patient_id": "P0001", "appointment_id": 2})
    assert not out.soft_failed and out.value["success"] is True
    out = call_tool(dom, st, "book_appointment", _book("2026-06-15", 11, patient="P0001"))
    assert out["appointment_id"] == 8


def test_soft_failures_change_nothing(dom: Domain) -> None:
    st = _state()
    before = st.copy()
    # too late to cancel on the day of the visit
    out = run_call(dom, st, "cancel_appointment", {"patient_id": "P0001", "appointment_id": 1})
    assert out.soft_failed and out.value["success"] is False and "too late" in out.value["message"]
    # check-in only on the day
    out = run_call(dom, st, "check_in", {"patient_id": "P0001", "appointment_id": 2})
    assert out.soft_failed and out.value["success"] is False
    assert st == before
    out = run_call(dom, st, "check_in", {"patient_id": "P0001", "appointment_id": 1})
    assert not out.soft_failed
    assert diff(before, st) == [("Appointment", 1, "status", "booked", "checked_in")]


def test_appointment_state_machine(dom: Domain) -> None:
    st = _state()
    ana = {"patient_id": "P0001"}
    with pytest.raises(ToolError, match="not checked in"):
        call_tool(dom, st, "complete_visit", {**ana, "appointment_id": 3})
    with pytest.raises(ToolError, match="has not passed yet"):
        call_tool(dom, st, "mark_no_show", {**ana, "appointment_id": 3})
    call_tool(dom, st, "mark_no_show", {**ana, "appointment_id": 4})
    assert st.tables["Appointment"][4]["status"] == "no_show"
    for tool in ("cancel_appointment", "check_in", "mark_no_show"):
        with pytest.raises(ToolError, match="is not booked"):
            call_tool(dom, st, tool, {**ana, "appointment_id": 4})
    with pytest.raises(ToolError, match="is not booked"):
        call_tool(
            dom,
            st,
            "reschedule_appointment",
            {**ana, "appointment_id": 7, "day": "2026-06-17", "hour": 9},
        )
    with pytest.raises(ToolError, match="does not belong to patient P0002"):
        call_tool(dom, st, "cancel_appointment", {"patient_id": "P0002", "appointment_id": 3})
    # the visit of today is completed and billed: 250.00, of which the plan pays 80% of
    # what exceeds the 20.00 copay
    out = call_tool(dom, st, "complete_visit", {**ana, "appointment_id": 7})
    inv = out["invoice"]
    assert (inv["invoice_id"], inv["total"], inv["insurer_pays"], inv["patient_pays"]) == (
        "INV0002",
        "250.00",
        "184.00",
        "66.00",
    )
    assert inv["issued_on"] == TODAY and inv["status"] == "unpaid"
    with pytest.raises(ToolError, match="not checked in"):
        call_tool(dom, st, "complete_visit", {**ana, "appointment_id": 7})


def test_reschedule(dom: Domain) -> None:
    st = _state()
    ana = {"patient_id": "P0001"}
    with pytest.raises(ToolError, match="has come"):
        call_tool(
            dom,
            st,
            "reschedule_appointment",
            {**ana, "appointment_id": 1, "day": "2026-06-17", "hour": 9},
        )
    with pytest.raises(ToolError, match="does not work on that weekday"):
        call_tool(
            dom,
            st,
            "reschedule_appointment",
            {**ana, "appointment_id": 3, "day": "2026-06-15", "hour": 9},
        )
    with pytest.raises(ToolError, match="already on"):
        call_tool(
            dom,
            st,
            "reschedule_appointment",
            {**ana, "appointment_id": 3, "day": "2026-06-16", "hour": 11},
        )
    # moving within a full day is allowed: the visit keeps its own place
    before = st.copy()
    call_tool(
        dom,
        st,
        "reschedule_appointment",
        {**ana, "appointment_id": 2, "day": "2026-06-11", "hour": 15},
    )
    assert diff(before, st) == [("Appointment", 2, "hour", 10, 15)]


def test_insurance_and_bills(dom: Domain) -> None:
    st = _state()
    est = call_tool(dom, st, "estimate_visit_cost", {"patient_id": "P0001", "doctor_id": "D001"})
    assert est == {
        "visit_fee": "120.00",
        "insurer_pays": "80.00",
        "patient_pays": "40.00",
    }
    est = call_tool(dom, st, "estimate_visit_cost", {"patient_id": "P0002", "doctor_id": "D001"})
    assert est["insurer_pays"] == "0.00" and est["patient_pays"] == "120.00"
    with pytest.raises(ToolError, match="discontinued"):
        call_tool(dom, st, "change_plan", {"patient_id": "P0001", "plan_id": "PL002"})
    with pytest.raises(ToolError, match="already on plan"):
        call_tool(dom, st, "change_plan", {"patient_id": "P0001", "plan_id": "PL001"})
    with pytest.raises(ToolError, match="unpaid invoice"):
        call_tool(dom, st, "change_plan", {"patient_id": "P0002", "plan_id": "PL003"})
    with pytest.raises(ToolError, match="does not belong"):
        call_tool(dom, st, "pay_invoice", {"patient_id": "P0001", "invoice_id": "INV0001"})
    call_tool(dom, st, "pay_invoice", {"patient_id": "P0002", "invoice_id": "INV0001"})
    with pytest.raises(ToolError, match="already paid"):
        call_tool(dom, st, "pay_invoice", {"patient_id": "P0002", "invoice_id": "INV0001"})
    call_tool(dom, st, "change_plan", {"patient_id": "P0002", "plan_id": "PL003"})
    # a copay of 40.00 on a 120.00 fee: the plan pays 60% of 80.00
    est = call_tool(dom, st, "estimate_visit_cost", {"patient_id": "P0002", "doctor_id": "D001"})
    assert est["insurer_pays"] == "48.00" and est["patient_pays"] == "72.00"
    call_tool(dom, st, "drop_plan", {"patient_id": "P0002"})
    with pytest.raises(ToolError, match="no insurance plan"):
        call_tool(dom, st, "drop_plan", {"patient_id": "P0002"})


def test_contact_update_is_partial(dom: Domain) -> None:
    st = _state()
    before = st.copy()
    call_tool(dom, st, "update_contact", {"patient_id": "P0001", "phone": "415-555-0199"})
    assert diff(before, st) == [("Patient", "P0001", "phone", "415-555-0101", "415-555-0199")]
    with pytest.raises(ToolError, match="nothing to change"):
        call_tool(dom, st, "update_contact", {"patient_id": "P0001"})
    with pytest.raises(ToolError, match="already used by another patient"):
        call_tool(dom, st, "update_contact", {"patient_id": "P0001", "email": "bo@mail.example"})
    # Emails match exactly (a case-insensitive match was too costly to prove).
    assert call_tool(dom, st, "find_patient_by_email", {"email": "ana@mail.example"}) == ["P0001"]
    assert call_tool(dom, st, "find_patient_by_email", {"email": "Ana@Mail.example"}) == []


@pytest.fixture(scope="module")
def task_set(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("clinic") / "clinic.jsonl"
    pl.generate("clinic", 15, pl.Options(seed=3, prove=False), output=path)
    return path


def test_generated_set_has_all_kinds_and_is_not_gamed(task_set: Path) -> None:
    tasks = read_taskset(task_set)[1]
    assert len(tasks) == 15
    assert {t.kind for t in tasks} == {"action", "information", "refusal"}
    assert pl.evaluate(task_set, "oracle").success_rate == 1.0
    for agent in ("noop", "echo"):
        assert pl.evaluate(task_set, agent).success_rate == 0.0
