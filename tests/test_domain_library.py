"""The built-in library domain: its shape, its tools on a small hand-made state (the copy
and hold state machines, due dates from today(), late fees and replacement fees in
decimals, the loan and fine limits, a payment that fails softly), and a generated task
set that baselines cannot game."""

from __future__ import annotations

import string
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from graphgen import pipeline as pl
from graphgen.domain import Domain
from graphgen.domains import builtin_names, load_builtin
from graphgen.errors import ToolError
from graphgen.interp import call_tool, run_call
from graphgen.state import State
from graphgen.stategen import generate_state
from graphgen.tasks.taskset import read_taskset
from graphgen.types import EnumT, RefT, strip_opt

TODAY = "2026-05-10"


@pytest.fixture(scope="module")
def dom() -> Domain:
    return load_builtin("library")


def _member(card: str, status: str, fines: str, **kw: Any) -> dict[str, Any]:
    row: dict[str, Any] = {
        "card_number": card,
        "email": f"{card.lower()}@mail.example.org",
        "phone": f"555-555-0{card[-3:]}",
        "full_name": "Ana Ruiz",
        "card_status": status,
        "card_expires": "2026-12-31" if status != "expired" else "2026-04-30",
        "fines": fines,
    }
    row.update(kw)
    return row


def _loan(member: str, copy: str, due: str, status: str = "active", renewals: int = 0) -> dict:
    return {
        "member_id": member,
        "copy_id": copy,
        "checked_out": "2026-04-20",
        "due": due,
        "renewals": renewals,
        "status": status,
        "returned_on": None,
    }


def _state() -> State:
    """Ana (active, owes 1.00) has two loans, one overdue; Bo owes 7.50; Cy's card
    expired; Di's card is suspended. Every copy of 'The Glass Library' is out and Bo
    waits for it; a copy of 'Tides' is on the hold shelf for Ana."""
    return State(
        {
            "Member": {
                "M0001": _member("ANA001", "active", "1.00"),
                "M0002": _member("BOB002", "active", "7.50"),
                "M0003": _member("CYX003", "expired", "2.00"),
                "M0004": _member("DIX004", "suspended", "3.00"),
            },
            "Book": {
                "B0001": {
                    "title": "The Glass Library",
                    "author": "Margaret Ellison",
                    "format": "hardcover",
                    "year": 2019,
                },
                "B0002": {
                    "title": "Midnight at the Observatory",
                    "author": "Tomas Varga",
                    "format": "dvd",
                    "year": 2021,
                },
                "B0003": {
                    "title": "Tides of the North Sea",
                    "author": "Margaret Ellison",
                    "format": "paperback",
                    "year": 2008,
                },
            },
            "Copy": {
                "C0001": {"book_id": "B0001", "barcode": "GL0001", "status": "on_loan"},
                "C0002": {"book_id": "B0002", "barcode": "MO0002", "status": "on_loan"},
                "C0003": {"book_id": "B0002", "barcode": "MO0003", "status": "available"},
                "C0004": {"book_id": "B0003", "barcode": "TN0004", "status": "on_hold_shelf"},
                "C0005": {"book_id": "B0003", "barcode": "TN0005", "status": "available"},
            },
            "Loan": {
                "L0001": _loan("M0001", "C0001", "2026-05-20"),
                # 12 days overdue on 2026-05-10
                "L0002": _loan("M0001", "C0002", "2026-04-28"),
            },
            "Hold": {
                "H0001": {
                    "member_id": "M0002",
                    "book_id": "B0001",
                    "status": "waiting",
                    "copy_id": None,
                    "placed_on": "2026-05-01",
                },
                "H0002": {
                    "member_id": "M0001",
                    "book_id": "B0003",
                    "status": "ready",
                    "copy_id": "C0004",
                    "placed_on": "2026-04-25",
                },
            },
            "Payment": {},
        },
        {"Member": 5, "Book": 4, "Copy": 6, "Loan": 3, "Hold": 3, "Payment": 1},
        TODAY,
    )


def test_is_builtin_and_has_the_promised_shape(dom: Domain) -> None:
    assert "library" in builtin_names()
    assert len(dom.tools) >= 15
    assert len(dom.write_tools) >= 6
    assert len(dom.entities) >= 4
    refs = {
        (e.name, strip_opt(f.ty).entity)
        for e in dom.entities.values()
        for f in e.fields.values()
        if isinstance(strip_opt(f.ty), RefT)
    }
    assert {("Copy", "Book"), ("Loan", "Member"), ("Loan", "Copy"), ("Hold", "Copy")} <= refs
    status = dom.entities["Copy"].fields["status"].ty
    assert isinstance(status, EnumT) and len(status.values) == 4
    assert dom.policy.strip()


def test_every_tool_is_documented_and_intents_name_what_users_supply(dom: Domain) -> None:
    for t in dom.tools.values():
        assert t.description, t.name
        assert t.intents, t.name
        assert all(p.description for p in t.params.values()), t.name
        named = {f for it in t.intents for _, f, _, _ in string.Formatter().parse(it.text) if f}
        supplied = {n for n, p in t.params.items() if strip_opt(p.ty) != RefT("Member")}
        assert supplied <= named, (t.name, supplied - named)
        assert "member_id" not in named, t.name


def test_checkout_due_date_follows_format_and_today(dom: Domain) -> None:
    st = _state()
    out = call_tool(dom, st, "check_out", {"member_id": "M0001", "copy_id": "C0003"})
    # a DVD goes out for 7 days from today
    assert out["loan_id"] == "L0003" and out["due"] == "2026-05-17"
    assert st.tables["Copy"]["C0003"]["status"] == "on_loan"
    assert st.tables["Loan"]["L0003"]["checked_out"] == TODAY
    # the copy is no longer available to anyone
    with pytest.raises(ToolError, match="not available"):
        call_tool(dom, st, "check_out", {"member_id": "M0001", "copy_id": "C0003"})


def test_hold_shelf_copy_only_for_its_member(dom: Domain) -> None:
    st = _state()
    st.set_field("Member", "M0002", "fines", "0.00")
    with pytest.raises(ToolError, match="not available to member M0002"):
        call_tool(dom, st, "check_out", {"member_id": "M0002", "copy_id": "C0004"})
    call_tool(dom, st, "check_out", {"member_id": "M0001", "copy_id": "C0004"})
    assert st.tables["Hold"]["H0002"]["status"] == "fulfilled"
    assert st.tables["Copy"]["C0004"]["status"] == "on_loan"


def test_fines_and_card_block_checkout(dom: Domain) -> None:
    st = _state()
    with pytest.raises(ToolError, match=r"owes more than 5\.00"):
        call_tool(dom, st, "check_out", {"member_id": "M0002", "copy_id": "C0005"})
    with pytest.raises(ToolError, match="not active"):
        call_tool(dom, st, "check_out", {"member_id": "M0003", "copy_id": "C0005"})


def test_at_most_four_loans(dom: Domain) -> None:
    st = _state()
    for i in range(2):
        cid = f"C01{i}"
        st.put_row("Copy", cid, {"book_id": "B0003", "barcode": f"X{i}", "status": "available"})
        call_tool(dom, st, "check_out", {"member_id": "M0001", "copy_id": cid})
    # Ana now has 4 loans: the fifth is refused
    with pytest.raises(ToolError, match="already has 4 copies on loan"):
        call_tool(dom, st, "check_out", {"member_id": "M0001", "copy_id": "C0005"})


def test_generated_states_reach_the_loan_cap(dom: Domain) -> None:
    # The cap's refusal must be reachable from generated states: the generator lends
    # recent checkouts to a member in good standing, who often ends up at the cap.
    at_cap = 0
    for seed in range(20):
        st = generate_state(dom, seed)
        per_member: dict[str, int] = {}
        for loan in st.tables["Loan"].values():
            if loan["status"] == "active":
                per_member[loan["member_id"]] = per_member.get(loan["member_id"], 0) + 1
        assert max(per_member.values(), default=0) <= 4, seed
        full = [m for m, n in per_member.items() if n == 4]
        if any(
            st.tables["Member"][m]["card_status"] == "active"
            and Decimal(st.tables["Member"][m]["fines"]) <= Decimal("5.00")
            for m in full
        ):
            at_cap += 1
    assert at_cap >= 4, at_cap


def test_renewal_rules(dom: Domain) -> None:
    st = _state()
    # someone waits for The Glass Library
    with pytest.raises(ToolError, match="someone is waiting"):
        call_tool(dom, st, "renew_loan", {"member_id": "M0001", "loan_id": "L0001"})
    with pytest.raises(ToolError, match="overdue"):
        call_tool(dom, st, "renew_loan", {"member_id": "M0001", "loan_id": "L0002"})
    with pytest.raises(ToolError, match="does not belong"):
        call_tool(dom, st, "renew_loan", {"member_id": "M0002", "loan_id": "L0001"})
    call_tool(dom, st, "cancel_hold", {"member_id": "M0002", "hold_id": "H0001"})
    out = call_tool(dom, st, "renew_loan", {"member_id": "M0001", "loan_id": "L0001"})
    assert out["loan"]["due"] == "2026-05-31" and out["loan"]["renewals"] == 1
    call_tool(dom, st, "renew_loan", {"member_id": "M0001", "loan_id": "L0001"})
    with pytest.raises(ToolError, match="renewed 2 times"):
        call_tool(dom, st, "renew_loan", {"member_id": "M0001", "loan_id": "L0001"})


def test_return_charges_late_fee_and_feeds_the_hold_queue(dom: Domain) -> None:
    st = _state()
    # 12 days late: 3.00
    out = call_tool(dom, st, "return_loan", {"member_id": "M0001", "loan_id": "L0002"})
    assert out["late_fee"] == "3.00" and out["fines"] == "4.00"
    assert st.tables["Copy"]["C0002"]["status"] == "available"
    # on time, and Bo waits for the title: the copy goes on the hold shelf for him
    out = call_tool(dom, st, "return_loan", {"member_id": "M0001", "loan_id": "L0001"})
    assert out["late_fee"] == "0.00"
    assert st.tables["Copy"]["C0001"]["status"] == "on_hold_shelf"
    hold = st.tables["Hold"]["H0001"]
    assert (hold["status"], hold["copy_id"]) == ("ready", "C0001")
    assert st.tables["Loan"]["L0001"]["returned_on"] == TODAY
    # a returned loan cannot be returned again (the state machine refuses)
    with pytest.raises(ToolError, match="nothing to return"):
        call_tool(dom, st, "return_loan", {"member_id": "M0001", "loan_id": "L0001"})


def test_late_fee_is_capped(dom: Domain) -> None:
    st = _state()
    st.set_field("Loan", "L0002", "due", "2026-01-10")
    out = call_tool(dom, st, "return_loan", {"member_id": "M0001", "loan_id": "L0002"})
    assert out["late_fee"] == "10.00"


def test_lost_copy_charges_replacement(dom: Domain) -> None:
    st = _state()
    out = call_tool(dom, st, "report_lost", {"member_id": "M0001", "loan_id": "L0001"})
    assert out["charged"] == "30.00" and out["fines"] == "31.00"
    assert st.tables["Copy"]["C0001"]["status"] == "lost"
    assert st.tables["Loan"]["L0001"]["status"] == "lost"
    with pytest.raises(ToolError, match="not active"):
        call_tool(dom, st, "report_lost", {"member_id": "M0001", "loan_id": "L0001"})


def test_holds(dom: Domain) -> None:
    st = _state()
    # a copy of the DVD is on the shelf
    with pytest.raises(ToolError, match="on the shelf"):
        call_tool(dom, st, "place_hold", {"member_id": "M0002", "book_id": "B0002"})
    with pytest.raises(ToolError, match="already has a hold"):
        call_tool(dom, st, "place_hold", {"member_id": "M0002", "book_id": "B0001"})
    with pytest.raises(ToolError, match="already has B0001 on loan"):
        call_tool(dom, st, "place_hold", {"member_id": "M0001", "book_id": "B0001"})
    # cancelling a ready hold puts its copy back on the shelf
    call_tool(dom, st, "cancel_hold", {"member_id": "M0001", "hold_id": "H0002"})
    assert st.tables["Copy"]["C0004"]["status"] == "available"
    assert st.tables["Hold"]["H0002"]["copy_id"] is None
    with pytest.raises(ToolError, match="cannot be cancelled"):
        call_tool(dom, st, "cancel_hold", {"member_id": "M0001", "hold_id": "H0002"})


def test_payment_fails_softly_when_too_large(dom: Domain) -> None:
    st = _state()
    before = st.copy()
    out = run_call(dom, st, "pay_fine", {"member_id": "M0002", "amount": "8.00"})
    assert out.soft_failed and out.value["success"] is False and st == before
    out = run_call(dom, st, "pay_fine", {"member_id": "M0002", "amount": "2.50"})
    assert not out.soft_failed and out.value["fines"] == "5.00"
    assert st.tables["Payment"]["P0001"]["amount"] == "2.50"
    with pytest.raises(ToolError, match="suspended"):
        call_tool(dom, st, "pay_fine", {"member_id": "M0004", "amount": "1.00"})


def test_card_renewal(dom: Domain) -> None:
    st = _state()
    with pytest.raises(ToolError, match="not expired"):
        call_tool(dom, st, "renew_card", {"member_id": "M0001"})
    call_tool(dom, st, "renew_card", {"member_id": "M0003"})
    m = st.tables["Member"]["M0003"]
    assert (m["card_status"], m["card_expires"]) == ("active", "2027-05-10")


def test_searches(dom: Domain) -> None:
    st = _state()
    found = call_tool(dom, st, "search_books_by_title", {"query": "the glass library"})
    assert [b["book_id"] for b in found] == ["B0001"]
    by = call_tool(dom, st, "search_books_by_author", {"author": "Margaret Ellison"})
    assert [b["book_id"] for b in by] == ["B0001", "B0003"]
    assert call_tool(dom, st, "find_member_by_card", {"card_number": "BOB002"}) == ["M0002"]
    assert call_tool(dom, st, "list_hold_queue", {"book_id": "B0001"}) == ["H0001"]
    status = call_tool(dom, st, "get_borrowing_status", {"member_id": "M0002"})
    assert status["can_borrow"] is False and status["loans_left"] == 4


@pytest.fixture(scope="module")
def task_set(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("library") / "library.jsonl"
    pl.generate("library", 15, pl.Options(seed=3, prove=False), output=path)
    return path


def test_generated_set_has_all_kinds_and_is_not_gamed(task_set: Path) -> None:
    tasks = read_taskset(task_set)[1]
    assert len(tasks) == 15
    assert {t.kind for t in tasks} == {"action", "information", "refusal"}
    assert pl.evaluate(task_set, "oracle").success_rate == 1.0
    for agent in ("noop", "echo"):
        assert pl.evaluate(task_set, agent).success_rate == 0.0
