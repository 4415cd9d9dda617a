"""The built-in telecom domain: its shape, its tools on a small hand-made state (the line
state machine, the lines-per-account and data-pack caps, data usage against the quota,
overdue bills, device financing and its soft failures, the partial update of line
settings), and a generated task set that baselines cannot game."""

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
from graphgen.state import State, diff
from graphgen.tasks.taskset import read_taskset
from graphgen.types import EnumT, RefT, strip_opt


@pytest.fixture(scope="module")
def dom() -> Domain:
    return load_builtin("telecom")


def _line(customer: str, number: str, plan: str, status: str, **kw: Any) -> dict[str, Any]:
    row: dict[str, Any] = {
        "customer_id": customer,
        "number": number,
        "plan_id": plan,
        "status": status,
        "roaming": False,
        "data_used_gb": Decimal("3.00"),
        "nickname": None,
        "usage_alert_gb": None,
    }
    row.update(kw)
    return row


def _bill(customer: str, status: str, due_on: str, amount: str = "29.99") -> dict[str, Any]:
    return {
        "customer_id": customer,
        "kind": "monthly",
        "amount": Decimal(amount),
        "status": status,
        "due_on": due_on,
    }


def _state() -> State:
    """Two customers on 2026-06-10. Ana has four lines (one of each status, one near its
    quota), two devices and no overdue bill; Bo has a suspended line and an overdue bill."""
    return State(
        {
            "Customer": {
                "C0001": {"email": "ana@mail.example", "full_name": "Ana Ruiz", "city": "Rome"},
                "C0002": {"email": "bo@mail.example", "full_name": "Bo Li", "city": "Oslo"},
            },
            "Plan": {
                "PL01": {
                    "name": "Starter",
                    "monthly_price": Decimal("19.99"),
                    "data_quota_gb": 5,
                    "roaming_included": False,
                },
                "PL02": {
                    "name": "Travel World",
                    "monthly_price": Decimal("59.99"),
                    "data_quota_gb": 50,
                    "roaming_included": True,
                },
            },
            "Line": {
                "L0001": _line(
                    "C0001", "415-555-0101", "PL02", "active", data_used_gb=Decimal("8.50")
                ),
                "L0002": _line("C0001", "415-555-0102", "PL01", "suspended"),
                "L0003": _line("C0001", "415-555-0103", "PL01", "terminated"),
                "L0004": _line("C0001", "415-555-0104", "PL01", "active"),
                "L0005": _line("C0002", "212-555-0105", "PL02", "suspended"),
            },
            "Device": {
                "D0001": {
                    "customer_id": "C0001",
                    "line_id": "L0001",
                    "model": "Pixel 8",
                    "imei": "355260181590838",
                    "financing_balance": Decimal("120.00"),
                    "unlocked": False,
                },
                "D0002": {
                    "customer_id": "C0001",
                    "line_id": "L0004",
                    "model": "iPhone 14",
                    "imei": "350166131860913",
                    "financing_balance": Decimal("0.00"),
                    "unlocked": False,
                },
            },
            "DataPack": {
                "DP0001": {
                    "line_id": "L0004",
                    "size": "medium",
                    "gb": 5,
                    "price": Decimal("15.00"),
                    "status": "active",
                },
            },
            "Bill": {
                "B0001": _bill("C0001", "unpaid", "2026-06-20"),
                "B0002": _bill("C0001", "paid", "2026-05-20"),
                "B0003": _bill("C0002", "unpaid", "2026-06-01", "44.99"),
            },
        },
        {"Customer": 3, "Plan": 3, "Line": 6, "Device": 3, "DataPack": 2, "Bill": 4},
        today="2026-06-10",
    )


def test_is_builtin_and_has_the_promised_shape(dom: Domain) -> None:
    assert "telecom" in builtin_names()
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
        ("Line", "Customer"),
        ("Line", "Plan"),
        ("Device", "Line"),
        ("DataPack", "Line"),
        ("Bill", "Customer"),
    } <= refs
    status = dom.entities["Line"].fields["status"].ty
    assert isinstance(status, EnumT) and status.values == ("active", "suspended", "terminated")
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


def test_line_state_machine(dom: Domain) -> None:
    st = _state()
    # only an active line can be suspended
    for line in ("L0002", "L0003"):
        with pytest.raises(ToolError, match="not active, so it cannot be suspended"):
            call_tool(dom, st, "suspend_line", {"customer_id": "C0001", "line_id": line})
    call_tool(dom, st, "suspend_line", {"customer_id": "C0001", "line_id": "L0004"})
    assert st.tables["Line"]["L0004"]["status"] == "suspended"
    # suspended -> active, and only suspended lines are restored
    call_tool(dom, st, "restore_line", {"customer_id": "C0001", "line_id": "L0004"})
    assert st.tables["Line"]["L0004"]["status"] == "active"
    with pytest.raises(ToolError, match="not suspended"):
        call_tool(dom, st, "restore_line", {"customer_id": "C0001", "line_id": "L0004"})
    # terminated is final
    with pytest.raises(ToolError, match="already terminated"):
        call_tool(dom, st, "terminate_line", {"customer_id": "C0001", "line_id": "L0003"})
    with pytest.raises(ToolError, match="not suspended"):
        call_tool(dom, st, "restore_line", {"customer_id": "C0001", "line_id": "L0003"})
    # a device still being paid off blocks terminating its line; a paid-off one does not
    with pytest.raises(ToolError, match="still has a financing balance"):
        call_tool(dom, st, "terminate_line", {"customer_id": "C0001", "line_id": "L0001"})
    call_tool(dom, st, "terminate_line", {"customer_id": "C0001", "line_id": "L0004"})
    assert st.tables["Line"]["L0004"]["status"] == "terminated"
    # another customer's line is refused
    with pytest.raises(ToolError, match="does not belong to customer C0002"):
        call_tool(dom, st, "suspend_line", {"customer_id": "C0002", "line_id": "L0001"})


def test_an_overdue_bill_blocks_restoring_and_adding_lines(dom: Domain) -> None:
    st = _state()
    with pytest.raises(ToolError, match="overdue bill"):
        call_tool(dom, st, "restore_line", {"customer_id": "C0002", "line_id": "L0005"})
    with pytest.raises(ToolError, match="overdue bill"):
        call_tool(
            dom,
            st,
            "add_line",
            {"customer_id": "C0002", "number": "212-555-0199", "plan_id": "PL01"},
        )
    due = call_tool(dom, st, "get_amount_due", {"customer_id": "C0002"})
    assert due["unpaid_total"] == due["overdue_total"] == "44.99"
    call_tool(dom, st, "pay_bill", {"customer_id": "C0002", "bill_id": "B0003"})
    call_tool(dom, st, "restore_line", {"customer_id": "C0002", "line_id": "L0005"})
    assert st.tables["Line"]["L0005"]["status"] == "active"


def test_paying_a_paid_bill_fails_softly(dom: Domain) -> None:
    st = _state()
    before = st.copy()
    out = run_call(dom, st, "pay_bill", {"customer_id": "C0001", "bill_id": "B0002"})
    assert out.soft_failed and out.value["success"] is False and st == before
    with pytest.raises(ToolError, match="does not belong"):
        call_tool(dom, st, "pay_bill", {"customer_id": "C0002", "bill_id": "B0001"})


def test_at_most_five_lines_and_numbers_are_not_reused(dom: Domain) -> None:
    st = _state()
    # Ana holds 3 lines that are not terminated (the terminated one does not count)
    with pytest.raises(ToolError, match="already in use"):
        call_tool(
            dom,
            st,
            "add_line",
            {"customer_id": "C0001", "number": "415-555-0103", "plan_id": "PL01"},
        )
    for n in ("415-555-0111", "415-555-0112"):
        out = call_tool(
            dom, st, "add_line", {"customer_id": "C0001", "number": n, "plan_id": "PL01"}
        )
    assert out["line_id"] == "L0007"
    assert st.tables["Line"]["L0007"]["status"] == "active"
    with pytest.raises(ToolError, match="already has 5 lines"):
        call_tool(
            dom,
            st,
            "add_line",
            {"customer_id": "C0001", "number": "415-555-0113", "plan_id": "PL01"},
        )


def test_data_usage_against_the_quota(dom: Domain) -> None:
    st = _state()
    usage = call_tool(dom, st, "get_data_usage", {"line_id": "L0004"})
    assert (usage["quota_gb"], usage["remaining_gb"]) == (10, "7.00")
    # 8.50 GB used does not fit in Starter's 5 GB
    with pytest.raises(ToolError, match="already used more data"):
        call_tool(
            dom, st, "change_plan", {"customer_id": "C0001", "line_id": "L0001", "plan_id": "PL01"}
        )
    # a large pack (20 GB) makes room; it is charged at once, so no bill is made
    bills = dict(st.tables["Bill"])
    out = call_tool(
        dom, st, "buy_data_pack", {"customer_id": "C0001", "line_id": "L0001", "size": "large"}
    )
    assert out["message"] == "Added 20 GB to 415-555-0101 for 40.00."
    assert st.tables["Bill"] == bills
    pack = st.tables["DataPack"][out["pack_id"]]
    assert (pack["gb"], str(pack["price"]), pack["status"]) == (20, "40.00", "active")
    call_tool(
        dom, st, "change_plan", {"customer_id": "C0001", "line_id": "L0001", "plan_id": "PL01"}
    )
    assert st.tables["Line"]["L0001"]["plan_id"] == "PL01"
    # the pack now carries the usage, so it cannot be cancelled
    with pytest.raises(ToolError, match="already used data from pack"):
        call_tool(dom, st, "cancel_data_pack", {"customer_id": "C0001", "pack_id": out["pack_id"]})
    # L0004's pack is not needed (3.00 GB used of Starter's 5), so it can be
    call_tool(dom, st, "cancel_data_pack", {"customer_id": "C0001", "pack_id": "DP0001"})
    assert st.tables["DataPack"]["DP0001"]["status"] == "cancelled"


def test_at_most_three_active_packs_on_active_lines(dom: Domain) -> None:
    st = _state()
    with pytest.raises(ToolError, match="not active, so no data pack"):
        call_tool(
            dom, st, "buy_data_pack", {"customer_id": "C0001", "line_id": "L0002", "size": "small"}
        )
    for _ in range(2):
        call_tool(
            dom, st, "buy_data_pack", {"customer_id": "C0001", "line_id": "L0004", "size": "small"}
        )
    with pytest.raises(ToolError, match="already has 3 active data packs"):
        call_tool(
            dom, st, "buy_data_pack", {"customer_id": "C0001", "line_id": "L0004", "size": "small"}
        )


def test_roaming_needs_an_active_line_on_a_roaming_plan(dom: Domain) -> None:
    st = _state()
    with pytest.raises(ToolError, match="does not include roaming"):
        call_tool(
            dom, st, "set_roaming", {"customer_id": "C0001", "line_id": "L0004", "setting": "on"}
        )
    with pytest.raises(ToolError, match="not active, so roaming"):
        call_tool(
            dom, st, "set_roaming", {"customer_id": "C0002", "line_id": "L0005", "setting": "on"}
        )
    before = st.copy()
    out = run_call(
        dom, st, "set_roaming", {"customer_id": "C0001", "line_id": "L0001", "setting": "off"}
    )
    assert out.soft_failed and "already off" in out.value["message"] and st == before
    call_tool(dom, st, "set_roaming", {"customer_id": "C0001", "line_id": "L0001", "setting": "on"})
    assert st.tables["Line"]["L0001"]["roaming"] is True


def test_device_payments_and_unlocking(dom: Domain) -> None:
    st = _state()
    with pytest.raises(ToolError, match="not paid off yet"):
        call_tool(dom, st, "unlock_device", {"customer_id": "C0001", "device_id": "D0001"})
    before = st.copy()
    out = run_call(
        dom,
        st,
        "pay_device_balance",
        {"customer_id": "C0001", "device_id": "D0001", "amount": "150.00"},
    )
    assert out.soft_failed and out.value["success"] is False and st == before
    with pytest.raises(ToolError, match="already paid off"):
        call_tool(
            dom,
            st,
            "pay_device_balance",
            {"customer_id": "C0001", "device_id": "D0002", "amount": "5.00"},
        )
    out = call_tool(
        dom,
        st,
        "pay_device_balance",
        {"customer_id": "C0001", "device_id": "D0001", "amount": "120.00"},
    )
    assert out["balance"] == "0.00"
    call_tool(dom, st, "unlock_device", {"customer_id": "C0001", "device_id": "D0001"})
    with pytest.raises(ToolError, match="already unlocked"):
        call_tool(dom, st, "unlock_device", {"customer_id": "C0001", "device_id": "D0001"})


def test_line_settings_change_only_what_is_given(dom: Domain) -> None:
    st = _state()
    before = st.copy()
    args = {"customer_id": "C0001", "line_id": "L0004"}
    call_tool(dom, st, "update_line_settings", {**args, "nickname": "Work phone"})
    assert diff(before, st) == [("Line", "L0004", "nickname", None, "Work phone")]
    with pytest.raises(ToolError, match="more than the plan's data quota"):
        call_tool(dom, st, "update_line_settings", {**args, "usage_alert_gb": 6})
    with pytest.raises(ToolError, match="nothing to change"):
        call_tool(dom, st, "update_line_settings", args)


def test_searches(dom: Domain) -> None:
    st = _state()
    assert call_tool(dom, st, "find_line_by_number", {"number": "212-555-0105"}) == ["L0005"]
    assert call_tool(dom, st, "get_line", {"line_id": "L0005"})["customer_id"] == "C0002"
    assert [
        p["plan_id"] for p in call_tool(dom, st, "find_plan_by_name", {"name": "travel world"})
    ] == ["PL02"]
    assert [
        d["device_id"]
        for d in call_tool(dom, st, "search_devices", {"customer_id": "C0001", "query": "pixel"})
    ] == ["D0001"]
    unpaid = call_tool(
        dom, st, "list_bills_by_status", {"customer_id": "C0001", "status": "unpaid"}
    )
    assert [b["bill_id"] for b in unpaid] == ["B0001"]


@pytest.fixture(scope="module")
def task_set(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("telecom") / "telecom.jsonl"
    pl.generate("telecom", 15, pl.Options(seed=3, prove=False), output=path)
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
    pl.generate("telecom", 15, pl.Options(seed=3, prove=False), output=again)
    assert again.read_bytes() == task_set.read_bytes()
