"""The built-in HR domain: its shape, its tools on a small hand-made state (the leave
request state machine and manager approval, allowances computed from approved requests,
public holidays not charged, the pending-request cap, expense caps, soft failures of a
leave the allowance cannot cover and of unchanged bank details), and a generated task set
that baselines cannot game."""

from __future__ import annotations

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


@pytest.fixture(scope="module")
def dom() -> Domain:
    return load_builtin("hr")


def _employee(name: str, manager: str | None, salary: str, **kw: Any) -> dict[str, Any]:
    row: dict[str, Any] = {
        "full_name": name,
        "email": name.split()[0].lower() + "@corp.example",
        "department_id": "D01",
        "manager_id": manager,
        "salary": salary,
        "bank_name": "Harbor Savings",
        "bank_account": "DE44500105175407324931",
    }
    row.update(kw)
    return row


def _request(allowance: int, start: str, days: int, charged: int, status: str) -> dict[str, Any]:
    return {
        "allowance_id": allowance,
        "start_date": start,
        "days": days,
        "charged_days": charged,
        "status": status,
        "decision_note": None,
    }


def _state() -> State:
    """Mia manages Noah; Ola reports to nobody. Today is 2026-05-01; 2026-06-01 is a
    public holiday."""
    return State(
        {
            "Department": {"D01": {"name": "Engineering", "location": "Zurich"}},
            "Employee": {
                "E0001": _employee("Mia Stone", None, "120000.00"),
                "E0002": _employee("Noah Berg", "E0001", "48000.00"),
                "E0003": _employee("Ola Nowak", None, "60000.00"),
            },
            "LeaveAllowance": {
                1: {"employee_id": "E0002", "leave_type": "annual", "entitlement": 10},
                2: {"employee_id": "E0002", "leave_type": "study", "entitlement": 2},
                3: {"employee_id": "E0003", "leave_type": "annual", "entitlement": 20},
            },
            "LeaveRequest": {
                1: _request(1, "2026-06-01", 5, 4, "draft"),
                2: _request(1, "2026-07-01", 3, 3, "approved"),
                3: _request(1, "2026-04-10", 2, 2, "approved"),
                4: _request(2, "2026-08-01", 3, 3, "draft"),
                5: _request(3, "2026-06-02", 2, 2, "submitted"),
            },
            "Holiday": {"H01": {"name": "Founders Day", "day": "2026-06-01"}},
            "Payslip": {
                "PS0001": {
                    "employee_id": "E0001",
                    "paid_on": "2026-04-25",
                    "gross": "10000.00",
                    "tax": "2750.00",
                    "net": "7250.00",
                }
            },
            "ExpenseClaim": {
                1: {
                    "employee_id": "E0002",
                    "category": "travel",
                    "amount": "1900.00",
                    "description": "Flight to the regional office",
                    "submitted_on": "2026-04-20",
                    "status": "pending",
                },
                2: {
                    "employee_id": "E0002",
                    "category": "meals",
                    "amount": "40.00",
                    "description": "Team lunch with a customer",
                    "submitted_on": "2026-04-02",
                    "status": "approved",
                },
            },
        },
        {
            "Department": 2,
            "Employee": 4,
            "LeaveAllowance": 4,
            "LeaveRequest": 6,
            "Holiday": 2,
            "Payslip": 2,
            "ExpenseClaim": 3,
        },
        today="2026-05-01",
    )


def test_is_builtin_and_has_the_promised_shape(dom: Domain) -> None:
    assert "hr" in builtin_names()
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
        ("Employee", "Department"),
        ("Employee", "Employee"),
        ("LeaveAllowance", "Employee"),
        ("LeaveRequest", "LeaveAllowance"),
        ("ExpenseClaim", "Employee"),
    } <= refs
    status = dom.entities["LeaveRequest"].fields["status"].ty
    assert isinstance(status, EnumT) and len(status.values) == 5
    for t in dom.tools.values():
        assert t.description and t.intents, t.name
        assert all("{employee_id}" not in it.text for it in t.intents), t.name


def test_leave_state_machine_and_manager_approval(dom: Domain) -> None:
    st = _state()
    # only a draft is submitted; the holiday on 2026-06-01 is not charged
    with pytest.raises(ToolError, match="not a draft"):
        call_tool(dom, st, "submit_leave_request", {"employee_id": "E0002", "request_id": 2})
    with pytest.raises(ToolError, match="does not belong to employee E0003"):
        call_tool(dom, st, "submit_leave_request", {"employee_id": "E0003", "request_id": 1})
    out = call_tool(dom, st, "submit_leave_request", {"employee_id": "E0002", "request_id": 1})
    assert out["success"] is True and st.tables["LeaveRequest"][1]["status"] == "submitted"
    # only Noah's manager may decide, and only on a submitted request
    with pytest.raises(ToolError, match="does not report to E0003"):
        call_tool(dom, st, "approve_leave_request", {"manager_id": "E0003", "request_id": 1})
    with pytest.raises(ToolError, match="not submitted"):
        call_tool(dom, st, "approve_leave_request", {"manager_id": "E0001", "request_id": 4})
    call_tool(dom, st, "approve_leave_request", {"manager_id": "E0001", "request_id": 1})
    assert st.tables["LeaveRequest"][1]["status"] == "approved"
    # the allowance is the entitlement minus approved charged days: 10 - 3 - 2 - 4
    assert call_tool(dom, st, "get_leave_balance", {"allowance_id": 1}) == {
        "leave_type": "annual",
        "entitlement": 10,
        "used": 9,
        "days_left": 1,
    }
    # approved and not started: cancellable; rejected/cancelled are final; started: not
    call_tool(dom, st, "cancel_leave_request", {"employee_id": "E0002", "request_id": 1})
    with pytest.raises(ToolError, match="already rejected or cancelled"):
        call_tool(dom, st, "cancel_leave_request", {"employee_id": "E0002", "request_id": 1})
    with pytest.raises(ToolError, match="already started"):
        call_tool(dom, st, "cancel_leave_request", {"employee_id": "E0002", "request_id": 3})
    # a rejection keeps the manager's reason
    with pytest.raises(ToolError, match="does not report"):
        call_tool(
            dom,
            st,
            "reject_leave_request",
            {"manager_id": "E0001", "request_id": 5, "reason": "Too many people are away already"},
        )


def test_submit_fails_softly_when_the_allowance_cannot_cover_it(dom: Domain) -> None:
    st = _state()
    before = st.copy()
    out = run_call(dom, st, "submit_leave_request", {"employee_id": "E0002", "request_id": 4})
    assert out.soft_failed and out.value["success"] is False
    assert out.value["days_left"] == 2 and "3 days" in out.value["message"]
    assert st == before


def test_drafting_charges_no_holidays_and_caps_pending_requests(dom: Domain) -> None:
    st = _state()
    args = {"employee_id": "E0002", "allowance_id": 1, "start_date": "2026-05-30", "days": 4}
    out = call_tool(dom, st, "create_leave_request", args)
    assert out["request_id"] == 6 and out["charged_days"] == 3
    assert st.tables["LeaveRequest"][6]["status"] == "draft"
    with pytest.raises(ToolError, match="must start after today"):
        call_tool(dom, st, "create_leave_request", {**args, "start_date": "2026-05-01"})
    with pytest.raises(ToolError, match="does not belong"):
        call_tool(dom, st, "create_leave_request", {**args, "allowance_id": 3})
    # Noah now has drafts 1, 4 and 6: a fourth pending request is refused
    with pytest.raises(ToolError, match="already has 3 pending"):
        call_tool(dom, st, "create_leave_request", args)


def test_expense_caps(dom: Domain) -> None:
    st = _state()
    claim = {
        "employee_id": "E0002",
        "category": "meals",
        "amount": "150.01",
        "description": "Team lunch with a customer",
    }
    with pytest.raises(ToolError, match="at most the category's cap"):
        call_tool(dom, st, "submit_expense_claim", claim)
    # 1900.00 pending already: 1100.01 more would pass the 3000.00 cap on pending claims
    with pytest.raises(ToolError, match=r"more than 3000\.00 in pending"):
        call_tool(
            dom, st, "submit_expense_claim", {**claim, "category": "travel", "amount": "1100.01"}
        )
    out = call_tool(
        dom, st, "submit_expense_claim", {**claim, "category": "travel", "amount": "1100.00"}
    )
    assert out["claim_id"] == 3
    assert st.tables["ExpenseClaim"][3]["submitted_on"] == "2026-05-01"
    with pytest.raises(ToolError, match="not pending"):
        call_tool(dom, st, "withdraw_expense_claim", {"employee_id": "E0002", "claim_id": 2})


def test_bank_details_partial_update_and_soft_failure(dom: Domain) -> None:
    st = _state()
    before = st.copy()
    out = run_call(
        dom, st, "update_bank_details", {"employee_id": "E0002", "bank_name": "Harbor Savings"}
    )
    assert out.soft_failed and st == before
    call_tool(
        dom, st, "update_bank_details", {"employee_id": "E0002", "bank_name": "Crescent Trust"}
    )
    assert diff(before, st) == [
        ("Employee", "E0002", "bank_name", "Harbor Savings", "Crescent Trust")
    ]
    with pytest.raises(ToolError, match="nothing to change"):
        call_tool(dom, st, "update_bank_details", {"employee_id": "E0002"})


def test_pay_in_two_tax_bands(dom: Domain) -> None:
    st = _state()
    # 120000 / 12 = 10000.00; 20% of 5000.00 + 35% of 5000.00 = 2750.00
    assert call_tool(dom, st, "estimate_monthly_pay", {"employee_id": "E0001"}) == {
        "gross": "10000.00",
        "tax": "2750.00",
        "net": "7250.00",
    }
    # 48000 / 12 = 4000.00, all in the low band
    assert call_tool(dom, st, "estimate_monthly_pay", {"employee_id": "E0002"})["tax"] == "800.00"


@pytest.fixture(scope="module")
def task_set(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("hr") / "hr.jsonl"
    pl.generate("hr", 15, pl.Options(seed=3, prove=False), output=path)
    return path


def test_generated_set_has_all_kinds_and_is_not_gamed(task_set: Path) -> None:
    tasks = read_taskset(task_set)[1]
    assert len(tasks) == 15
    assert {t.kind for t in tasks} == {"action", "information", "refusal"}
    assert pl.evaluate(task_set, "oracle").success_rate == 1.0
    for agent in ("noop", "echo"):
        assert pl.evaluate(task_set, agent).success_rate == 0.0


def test_a_rejection_keeps_the_reason_and_is_final(dom: Domain) -> None:
    st = _state()
    call_tool(dom, st, "submit_leave_request", {"employee_id": "E0002", "request_id": 1})
    reason = "It overlaps the quarterly close"
    call_tool(
        dom, st, "reject_leave_request", {"manager_id": "E0001", "request_id": 1, "reason": reason}
    )
    row = st.tables["LeaveRequest"][1]
    assert (row["status"], row["decision_note"]) == ("rejected", reason)
    with pytest.raises(ToolError, match="not submitted"):
        call_tool(dom, st, "approve_leave_request", {"manager_id": "E0001", "request_id": 1})
    with pytest.raises(ToolError, match="already rejected"):
        call_tool(dom, st, "cancel_leave_request", {"employee_id": "E0002", "request_id": 1})
