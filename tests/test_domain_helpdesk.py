"""The built-in helpdesk domain: its shape, its tools on a small hand-made state (int ids,
the login session and its soft failures, partial updates, the status state machine,
agent capacity), and a generated task set that baselines cannot game."""

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


@pytest.fixture(scope="module")
def dom() -> Domain:
    return load_builtin("helpdesk")


def _ticket(user: int, status: str, category: str, agent: int | None, **kw: Any) -> dict[str, Any]:
    row: dict[str, Any] = {
        "user_id": user,
        "title": "VPN drops every hour",
        "category": category,
        "priority": 3,
        "status": status,
        "assignee_id": agent,
        "resolution": "Replaced the cable" if status in ("resolved", "closed") else None,
        "opened_on": "2026-05-01",
    }
    row.update(kw)
    return row


def _state() -> State:
    """Two employees; Ana has an open, an in-progress, a resolved and a closed ticket."""
    return State(
        {
            "User": {
                1: {
                    "username": "ana1",
                    "email": "ana@corp.example",
                    "full_name": "Ana Ruiz",
                    "password": "K7PQ2M",
                },
                2: {
                    "username": "bo2",
                    "email": "bo@corp.example",
                    "full_name": "Bo Li",
                    "password": "Z9XW4T",
                },
            },
            "Agent": {
                1: {"name": "Dana Hill", "team": "network", "capacity": 2, "on_duty": True},
                2: {"name": "Eli Park", "team": "network", "capacity": 1, "on_duty": True},
                3: {"name": "Fay Chen", "team": "hardware", "capacity": 3, "on_duty": False},
            },
            "Ticket": {
                1: _ticket(1, "open", "network", None),
                2: _ticket(1, "in_progress", "network", 2, title="Printer jams on double-sided"),
                3: _ticket(1, "resolved", "network", 1, title="Mailbox is full"),
                4: _ticket(1, "closed", "network", 1, title="Webcam not detected"),
                5: _ticket(2, "open", "hardware", None, title="Laptop fan is very loud"),
            },
            "Comment": {
                1: {
                    "ticket_id": 2,
                    "author": "ana1",
                    "body": "It happened again",
                    "posted_on": "2026-05-02",
                },
            },
            "Session": {"S1": {"username": None}},
        },
        {"User": 3, "Agent": 4, "Ticket": 6, "Comment": 2, "Session": 2},
    )


def test_is_builtin_and_has_the_promised_shape(dom: Domain) -> None:
    assert "helpdesk" in builtin_names()
    assert len(dom.tools) >= 15
    assert len(dom.write_tools) >= 6
    # at least four entity types, linked by references
    assert len(dom.entities) >= 4
    refs = {
        (e.name, strip_opt(f.ty).entity)
        for e in dom.entities.values()
        for f in e.fields.values()
        if isinstance(strip_opt(f.ty), RefT)
    }
    assert {("Ticket", "User"), ("Ticket", "Agent"), ("Comment", "Ticket")} <= refs
    # a status state machine, int ids, optional fields
    status = dom.entities["Ticket"].fields["status"].ty
    assert isinstance(status, EnumT) and len(status.values) == 4
    assert {e for e in dom.int_keys} == {"User", "Agent", "Ticket", "Comment"}
    assert dom.policy.strip()
    assert all(
        p.has_default
        for n, p in dom.tools["edit_ticket"].params.items()
        if n in ("title", "category", "priority")
    )


def test_every_tool_is_documented_and_intents_name_what_users_supply(dom: Domain) -> None:
    for t in dom.tools.values():
        assert t.description, t.name
        assert t.intents, t.name
        assert all(p.description for p in t.params.values()), t.name
        named = {f for it in t.intents for _, f, _, _ in string.Formatter().parse(it.text) if f}
        supplied = {n for n, p in t.params.items() if strip_opt(p.ty) != RefT("User")}
        assert supplied <= named, (t.name, supplied - named)
        assert "user_id" not in named, t.name


def test_ids_are_ints_and_a_create_takes_the_next_one(dom: Domain) -> None:
    st = _state()
    out = call_tool(
        dom,
        st,
        "create_ticket",
        {"user_id": 2, "title": "Mouse stops responding", "category": "hardware", "priority": 2},
    )
    assert out["ticket_id"] == 6
    row = st.tables["Ticket"][6]
    assert (row["status"], row["assignee_id"], row["resolution"]) == ("open", None, None)
    # the priority has a default of 3
    out = call_tool(dom, st, "create_ticket", {"user_id": 2, "title": "x", "category": "network"})
    assert out["ticket_id"] == 7 and st.tables["Ticket"][7]["priority"] == 3


def test_log_in_and_log_out_fail_softly(dom: Domain) -> None:
    st = _state()
    before = st.copy()
    # nobody is logged in: logging out answers success False and changes nothing
    out = run_call(dom, st, "log_out", {})
    assert out.soft_failed and out.value["success"] is False
    assert st == before
    # a wrong password is a soft failure too
    out = run_call(dom, st, "log_in", {"username": "ana1", "password": "nope"})
    assert out.soft_failed and out.value["success"] is False and st == before
    out = run_call(dom, st, "log_in", {"username": "ana1", "password": "K7PQ2M"})
    assert not out.soft_failed and out.value["success"] is True
    assert st.tables["Session"]["S1"]["username"] == "ana1"
    assert call_tool(dom, st, "get_login_status", {}) == {"logged_in": True, "username": "ana1"}
    out = run_call(dom, st, "log_out", {})
    assert not out.soft_failed and st.tables["Session"]["S1"]["username"] is None


def test_comments_are_posted_as_the_logged_in_employee(dom: Domain) -> None:
    st = _state()
    with pytest.raises(ToolError, match="nobody is logged in"):
        call_tool(dom, st, "add_comment", {"ticket_id": 1, "body": "Any update on this"})
    call_tool(dom, st, "log_in", {"username": "bo2", "password": "Z9XW4T"})
    with pytest.raises(ToolError, match="not raised by the logged-in employee"):
        call_tool(dom, st, "add_comment", {"ticket_id": 1, "body": "Any update on this"})
    out = call_tool(dom, st, "add_comment", {"ticket_id": 5, "body": "Any update on this"})
    assert out["comment_id"] == 2
    assert st.tables["Comment"][2]["author"] == "bo2"


def test_edit_changes_only_the_fields_given(dom: Domain) -> None:
    st = _state()
    before = st.copy()
    call_tool(dom, st, "edit_ticket", {"user_id": 1, "ticket_id": 1, "priority": 5})
    assert diff(before, st) == [("Ticket", 1, "priority", 3, 5)]
    before = st.copy()
    call_tool(
        dom,
        st,
        "edit_ticket",
        {"user_id": 1, "ticket_id": 1, "title": "VPN down", "priority": None},
    )
    assert diff(before, st) == [("Ticket", 1, "title", "VPN drops every hour", "VPN down")]
    with pytest.raises(ToolError, match="nothing to change"):
        call_tool(dom, st, "edit_ticket", {"user_id": 1, "ticket_id": 1})
    with pytest.raises(ToolError, match="is closed"):
        call_tool(dom, st, "edit_ticket", {"user_id": 1, "ticket_id": 4, "priority": 1})
    with pytest.raises(ToolError, match="does not belong to user 2"):
        call_tool(dom, st, "edit_ticket", {"user_id": 2, "ticket_id": 1, "priority": 1})
    # an assigned ticket keeps its team
    with pytest.raises(ToolError, match="already with an agent"):
        call_tool(dom, st, "edit_ticket", {"user_id": 1, "ticket_id": 2, "category": "software"})


def test_status_state_machine(dom: Domain) -> None:
    st = _state()
    # open -> in_progress (assign), only to an on-duty agent of the ticket's team with room
    with pytest.raises(ToolError, match="no free slot"):
        call_tool(dom, st, "assign_ticket", {"user_id": 1, "ticket_id": 1, "agent_id": 2})
    with pytest.raises(ToolError, match="not on the team"):
        call_tool(dom, st, "assign_ticket", {"user_id": 1, "ticket_id": 1, "agent_id": 3})
    call_tool(dom, st, "assign_ticket", {"user_id": 1, "ticket_id": 1, "agent_id": 1})
    assert st.tables["Ticket"][1]["status"] == "in_progress"
    assert st.tables["Ticket"][1]["assignee_id"] == 1
    # in_progress -> resolved -> in_progress (reopen) -> closed, and closed is final
    call_tool(dom, st, "resolve_ticket", {"user_id": 1, "ticket_id": 1, "resolution": "Rebooted"})
    assert st.tables["Ticket"][1]["resolution"] == "Rebooted"
    call_tool(dom, st, "reopen_ticket", {"user_id": 1, "ticket_id": 1})
    assert st.tables["Ticket"][1]["resolution"] is None
    call_tool(dom, st, "close_ticket", {"user_id": 1, "ticket_id": 1})
    for tool in ("close_ticket", "reopen_ticket"):
        with pytest.raises(ToolError):
            call_tool(dom, st, tool, {"user_id": 1, "ticket_id": 1})
    # a resolved ticket goes back to its agent only if the agent has room (Eli is full)
    st.set_field("Ticket", 3, "assignee_id", 2)
    with pytest.raises(ToolError, match="has no free slot"):
        call_tool(dom, st, "reopen_ticket", {"user_id": 1, "ticket_id": 3})


def test_quota_of_unclosed_tickets(dom: Domain) -> None:
    st = _state()
    # Ana holds 3 tickets that are not closed; two more reach the quota of 5
    for _ in range(2):
        call_tool(dom, st, "create_ticket", {"user_id": 1, "title": "x", "category": "network"})
    with pytest.raises(ToolError, match="already has 5 tickets"):
        call_tool(dom, st, "create_ticket", {"user_id": 1, "title": "x", "category": "network"})


def test_searches_and_lists(dom: Domain) -> None:
    st = _state()
    assert call_tool(dom, st, "find_user_by_username", {"username": "bo2"}) == [2]
    mine = call_tool(dom, st, "list_user_tickets", {"user_id": 1})
    assert [t["ticket_id"] for t in mine] == [1, 2, 3, 4]
    resolved = call_tool(dom, st, "list_user_tickets", {"user_id": 1, "status": "resolved"})
    assert [t["ticket_id"] for t in resolved] == [3]
    found = call_tool(dom, st, "search_tickets", {"user_id": 1, "query": "Mailbox is full"})
    assert [t["ticket_id"] for t in found] == [3]
    network = call_tool(dom, st, "list_agents", {"team": "network"})
    assert [a["agent_id"] for a in network] == [1, 2]
    assert call_tool(dom, st, "get_agent_workload", {"agent_id": 2}) == {
        "agent_id": 2,
        "in_progress": 1,
        "free_slots": 0,
    }


@pytest.fixture(scope="module")
def task_set(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("helpdesk") / "helpdesk.jsonl"
    pl.generate("helpdesk", 15, pl.Options(seed=3, prove=False), output=path)
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
    pl.generate("helpdesk", 15, pl.Options(seed=3, prove=False), output=again)
    assert again.read_bytes() == task_set.read_bytes()
