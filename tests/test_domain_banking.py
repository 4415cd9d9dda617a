"""The built-in banking domain: its shape, its tools on a small hand-made state (decimal
money, conversion at fixed rates rounded to the cent, overdraft rules, soft failures,
the card state machine), and a generated task set that baselines cannot game."""

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
from graphgen.tasks.taskset import read_taskset
from graphgen.types import DecT, EnumT, RefT, strip_opt


@pytest.fixture(scope="module")
def dom() -> Domain:
    return load_builtin("banking")


def _account(
    cust: str, kind: str, cur: str, bal: str, od: str, status: str = "open"
) -> dict[str, Any]:
    return {
        "customer_id": cust,
        "kind": kind,
        "currency": cur,
        "balance": bal,
        "overdraft_limit": od,
        "status": status,
        "opened_on": "2025-01-10",
    }


def _state() -> State:
    """Ana: a USD checking account (100.00, overdraft 500.00), a EUR savings account, an
    empty CHF checking account whose only card is cancelled; Bo: a GBP account."""
    return State(
        {
            "Customer": {
                "C0001": {
                    "email": "ana@x.example",
                    "phone": "415-555-0101",
                    "full_name": "Ana Ruiz",
                },
                "C0002": {"email": "bo@x.example", "phone": "415-555-0102", "full_name": "Bo Li"},
            },
            "Account": {
                "AC0001": _account("C0001", "checking", "USD", "100.00", "500.00"),
                "AC0002": _account("C0001", "savings", "EUR", "1000.00", "0.00"),
                "AC0003": _account("C0002", "checking", "GBP", "50.00", "0.00"),
                "AC0004": _account("C0001", "checking", "CHF", "0.00", "0.00"),
            },
            "Card": {
                "CD0001": {
                    "customer_id": "C0001",
                    "account_id": "AC0001",
                    "last4": "4821",
                    "status": "active",
                    "daily_limit": "500.00",
                },
                "CD0002": {
                    "customer_id": "C0001",
                    "account_id": "AC0004",
                    "last4": "7310",
                    "status": "cancelled",
                    "daily_limit": "300.00",
                },
            },
            "Payee": {
                "PY0001": {
                    "customer_id": "C0001",
                    "name": "City Power and Light",
                    "account_number": "GB82WEST12345698765432",
                    "currency": "GBP",
                },
                "PY0002": {
                    "customer_id": "C0001",
                    "name": "Metro Broadband",
                    "account_number": "US7712345678901234",
                    "currency": "USD",
                },
            },
            "Transaction": {
                "TX00001": {
                    "account_id": "AC0001",
                    "kind": "card_payment",
                    "amount": "-12.40",
                    "description": "Coffee Corner",
                    "posted_on": "2025-02-01",
                },
                "TX00002": {
                    "account_id": "AC0001",
                    "kind": "deposit",
                    "amount": "2500.00",
                    "description": "Salary Acme Corp",
                    "posted_on": "2025-02-02",
                },
            },
        },
        {"Customer": 3, "Account": 5, "Card": 3, "Payee": 3, "Transaction": 3},
    )


def _balance(st: State, acc: str) -> Decimal:
    return Decimal(st.tables["Account"][acc]["balance"])


def test_is_builtin_and_has_the_promised_shape(dom: Domain) -> None:
    assert "banking" in builtin_names()
    assert len(dom.tools) >= 15
    assert len(dom.write_tools) >= 6
    assert len(dom.entities) >= 4
    refs = {
        (e.name, strip_opt(f.ty).entity)
        for e in dom.entities.values()
        for f in e.fields.values()
        if isinstance(strip_opt(f.ty), RefT)
    }
    assert {("Account", "Customer"), ("Card", "Account"), ("Payee", "Customer")} <= refs
    assert dom.entities["Account"].fields["balance"].ty == DecT(2)
    status = dom.entities["Card"].fields["status"].ty
    assert isinstance(status, EnumT) and status.values == ("active", "frozen", "cancelled")
    assert dom.policy.strip()


def test_every_tool_is_documented_and_intents_name_what_users_supply(dom: Domain) -> None:
    for t in dom.tools.values():
        assert t.description, t.name
        assert t.intents, t.name
        assert all(p.description for p in t.params.values()), t.name
        named = {f for it in t.intents for _, f, _, _ in string.Formatter().parse(it.text) if f}
        supplied = {n for n, p in t.params.items() if strip_opt(p.ty) != RefT("Customer")}
        assert supplied <= named, (t.name, supplied - named)
        assert "customer_id" not in named, t.name


def test_transfer_converts_and_rounds_to_the_cent(dom: Domain) -> None:
    st = _state()
    args = {"customer_id": "C0001", "from_account_id": "AC0001", "to_account_id": "AC0002"}
    out = call_tool(dom, st, "transfer_funds", {**args, "amount": "100.00"})
    # 100.00 USD * 1.0000 / 1.0850 = 92.1658... EUR
    assert out["success"] is True and out["credited"] == "92.17" and out["debited"] == "100.00"
    assert _balance(st, "AC0001") == Decimal("0.00")
    assert _balance(st, "AC0002") == Decimal("1092.17")
    new = [t for k, t in st.tables["Transaction"].items() if k not in ("TX00001", "TX00002")]
    assert sorted((t["account_id"], t["kind"], t["amount"]) for t in new) == [
        ("AC0001", "transfer_out", "-100.00"),
        ("AC0002", "transfer_in", "92.17"),
    ]
    # JSON numbers are accepted as amounts; more places than the scale are refused
    call_tool(dom, st, "transfer_funds", {**args, "amount": 1.5})
    with pytest.raises(ToolError):
        call_tool(dom, st, "transfer_funds", {**args, "amount": "1.005"})


def test_overdraft_is_a_soft_failure(dom: Domain) -> None:
    st = _state()
    before = st.copy()
    args = {"customer_id": "C0001", "from_account_id": "AC0001", "to_account_id": "AC0002"}
    # 100.00 balance + 500.00 overdraft: 600.01 is declined, nothing moves
    out = run_call(dom, st, "transfer_funds", {**args, "amount": "600.01"})
    assert out.soft_failed and out.value["success"] is False
    assert st == before
    out = run_call(dom, st, "transfer_funds", {**args, "amount": "600.00"})
    assert not out.soft_failed and _balance(st, "AC0001") == Decimal("-500.00")
    # a savings account never goes below zero
    back = {"customer_id": "C0001", "from_account_id": "AC0002", "to_account_id": "AC0001"}
    out = run_call(dom, st, "transfer_funds", {**back, "amount": "5000.00"})
    assert out.soft_failed


def test_payment_in_another_currency_pays_a_fee(dom: Domain) -> None:
    st = _state()
    out = call_tool(
        dom,
        st,
        "pay_payee",
        {"customer_id": "C0001", "account_id": "AC0001", "payee_id": "PY0001", "amount": "50.00"},
    )
    # 50.00 GBP = 63.50 USD; fee 1% = 0.635, rounded half-even to 0.64
    assert (out["debited"], out["fee"]) == ("64.14", "0.64")
    assert _balance(st, "AC0001") == Decimal("35.86")
    out = call_tool(
        dom,
        st,
        "pay_payee",
        {"customer_id": "C0001", "account_id": "AC0001", "payee_id": "PY0002", "amount": "10.00"},
    )
    assert (out["debited"], out["fee"]) == ("10.00", "0.00")


def test_exchange_rates_and_conversion(dom: Domain) -> None:
    st = _state()
    rate = call_tool(dom, st, "get_exchange_rate", {"from_currency": "GBP", "to_currency": "EUR"})
    assert rate == "1.1705"  # 1.2700 / 1.0850, 4 places
    amount = {"amount": "250.00", "from_currency": "EUR", "to_currency": "CAD"}
    assert call_tool(dom, st, "convert_amount", amount) == "371.58"  # 250 * 1.085 / 0.73


def test_overdraft_limits_are_capped_together(dom: Domain) -> None:
    st = _state()
    base = {"customer_id": "C0001", "account_id": "AC0004"}
    with pytest.raises(ToolError, match=r"would exceed 3000\.00"):
        call_tool(dom, st, "set_overdraft_limit", {**base, "limit": 2600})
    call_tool(dom, st, "set_overdraft_limit", {**base, "limit": 2500})
    assert st.tables["Account"]["AC0004"]["overdraft_limit"] == "2500.00"
    with pytest.raises(ToolError, match="only checking accounts"):
        call_tool(
            dom,
            st,
            "set_overdraft_limit",
            {"customer_id": "C0001", "account_id": "AC0002", "limit": 100},
        )
    # a limit cannot be set below what the account is already overdrawn
    st.set_field("Account", "AC0001", "balance", "-300.00")
    with pytest.raises(ToolError, match="overdrawn by more than"):
        call_tool(
            dom,
            st,
            "set_overdraft_limit",
            {"customer_id": "C0001", "account_id": "AC0001", "limit": 200},
        )


def test_card_state_machine(dom: Domain) -> None:
    st = _state()
    card = {"customer_id": "C0001", "card_id": "CD0001"}
    with pytest.raises(ToolError, match="not frozen"):
        call_tool(dom, st, "unfreeze_card", card)
    call_tool(dom, st, "freeze_card", card)
    with pytest.raises(ToolError, match="not active"):
        call_tool(dom, st, "freeze_card", card)
    call_tool(dom, st, "unfreeze_card", card)
    call_tool(dom, st, "cancel_card", card)
    assert st.tables["Card"]["CD0001"]["status"] == "cancelled"
    for tool in ("freeze_card", "unfreeze_card", "cancel_card"):
        with pytest.raises(ToolError):
            call_tool(dom, st, tool, card)
    with pytest.raises(ToolError, match="is cancelled"):
        call_tool(dom, st, "set_card_limit", {**card, "daily_limit": 800})
    with pytest.raises(ToolError, match="does not belong to customer C0002"):
        call_tool(dom, st, "freeze_card", {"customer_id": "C0002", "card_id": "CD0002"})


def test_accounts_open_and_close(dom: Domain) -> None:
    st = _state()
    with pytest.raises(ToolError, match="must be exactly zero"):
        call_tool(dom, st, "close_account", {"customer_id": "C0001", "account_id": "AC0001"})
    call_tool(dom, st, "close_account", {"customer_id": "C0001", "account_id": "AC0004"})
    out = call_tool(
        dom, st, "open_account", {"customer_id": "C0001", "kind": "savings", "currency": "GBP"}
    )
    assert out["account_id"] == "AC0005"
    row = st.tables["Account"]["AC0005"]
    assert (row["balance"], row["overdraft_limit"], row["status"]) == ("0.00", "0.00", "open")
    call_tool(
        dom, st, "open_account", {"customer_id": "C0001", "kind": "savings", "currency": "USD"}
    )
    with pytest.raises(ToolError, match="maximum of 4 open accounts"):
        call_tool(
            dom, st, "open_account", {"customer_id": "C0001", "kind": "savings", "currency": "EUR"}
        )


def test_payees_and_statements(dom: Domain) -> None:
    st = _state()
    with pytest.raises(ToolError, match="already set up"):
        call_tool(
            dom,
            st,
            "add_payee",
            {
                "customer_id": "C0001",
                "name": "Someone",
                "account_number": "US7712345678901234",
                "currency": "USD",
            },
        )
    call_tool(dom, st, "remove_payee", {"customer_id": "C0001", "payee_id": "PY0002"})
    assert "PY0002" not in st.tables["Payee"]
    found = call_tool(
        dom, st, "search_transactions", {"account_id": "AC0001", "query": "Coffee Corner"}
    )
    assert [t["txn_id"] for t in found] == ["TX00001"]
    assert (
        call_tool(dom, st, "get_available_funds", {"account_id": "AC0001"})["available"] == "600.00"
    )


@pytest.fixture(scope="module")
def task_set(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("banking") / "banking.jsonl"
    pl.generate("banking", 15, pl.Options(seed=3, prove=False), output=path)
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
    pl.generate("banking", 15, pl.Options(seed=3, prove=False), output=again)
    assert again.read_bytes() == task_set.read_bytes()
