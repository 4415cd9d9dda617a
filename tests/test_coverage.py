"""Coverage measures on a task set built by hand on the mock domain, where every number
can be worked out on paper (the reasoning is beside each expectation)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from graphgen.cli import app
from graphgen.domains import load_builtin
from graphgen.tasks.coverage import (
    branch_coverage,
    coverage,
    enables_coverage,
    enum_coverage,
    failing_branches,
    length_distribution,
    state_diversity,
    tool_coverage,
)
from graphgen.tasks.model import Call, Change, Goal, Manifest, Task
from graphgen.tasks.taskset import write_taskset

MOCK = load_builtin("mock")


def _state(a001_status: str) -> dict[str, Any]:
    return {
        "tables": {
            "Account": {
                "A001": {"email": "a@x.com", "owner": "Ann", "balance": 100, "status": a001_status},
                "A002": {"email": "b@x.com", "owner": "Bob", "balance": 50, "status": "locked"},
            },
            "Payment": {},
        },
        "counters": {"Account": 3, "Payment": 1},
    }


ACTIVE = _state("active")  # the state of five tasks
LOCKED = _state("locked")  # A001 locked too: one task


def _task(
    n: int,
    kind: str,
    state: dict[str, Any],
    chain: list[tuple[str, dict[str, Any]]],
    *,
    refused: tuple[str, dict[str, Any]] | None = None,
    changes: list[Change] | None = None,
    min_calls: int | None = None,
) -> Task:
    calls = [Call(tool=t, args=a) for t, a in chain]
    return Task(
        id=f"hand-{n}",
        domain="mock",
        domain_hash=MOCK.content_hash,
        seed=0,
        kind=kind,  # type: ignore[arg-type]
        instruction=f"task {n}",
        givens=[],
        initial_state=state,
        chain=calls,
        goal=Goal(changes=changes or []),
        min_calls=len(calls) if min_calls is None else min_calls,
        difficulty=len(calls),
        tools_used=sorted({c.tool for c in calls}),
        refused_call=Call(tool=refused[0], args=refused[1]) if refused else None,
    )


TASKS = [
    # deposit, then pay: walks the edge deposit -> pay
    _task(
        1,
        "action",
        ACTIVE,
        [
            ("find_account", {"email": "a@x.com"}),
            ("deposit", {"account_id": "A001", "amount": 10}),
            ("pay", {"account_id": "A001", "amount": 20}),
        ],
        changes=[Change(entity="Account", key="A001", field="balance", before=100, after=90)],
    ),
    # a status change active -> locked: both members of Account.status
    _task(
        2,
        "action",
        ACTIVE,
        [("get_account", {"account_id": "A001"}), ("lock_account", {"account_id": "A001"})],
        changes=[
            Change(entity="Account", key="A001", field="status", before="active", after="locked")
        ],
    ),
    # paying 80 from A002 (locked, balance 50) fails BOTH preconditions of pay
    _task(
        3,
        "refusal",
        ACTIVE,
        [("find_account", {"email": "b@x.com"}), ("get_account", {"account_id": "A002"})],
        refused=("pay", {"account_id": "A002", "amount": 80}),
    ),
    # depositing into a locked A001 fails deposit's only precondition
    _task(
        4,
        "refusal",
        LOCKED,
        [("get_account", {"account_id": "A001"})],
        refused=("deposit", {"account_id": "A001", "amount": 5}),
    ),
    _task(
        5,
        "information",
        ACTIVE,
        [("find_account", {"email": "a@x.com"}), ("get_account", {"account_id": "A001"})],
    ),
    # deposit, deposit, pay, pay: deposit -> pay again, counted once for this task; pay
    # never comes before a deposit. Its proven minimum is set below its length.
    _task(
        6,
        "action",
        ACTIVE,
        [
            ("deposit", {"account_id": "A001", "amount": 1}),
            ("deposit", {"account_id": "A001", "amount": 1}),
            ("pay", {"account_id": "A001", "amount": 1}),
            ("pay", {"account_id": "A001", "amount": 1}),
        ],
        changes=[
            Change(entity="Payment", key=k, field="*", after={"account_id": "A001", "amount": 1})
            for k in ("P001", "P002")
        ],
        min_calls=3,
    ),
]


def test_tool_coverage_counts_calls_not_refused_requests() -> None:
    cov = tool_coverage(MOCK, TASKS)
    # find_account: tasks 1, 3, 5; get_account: 2, 3, 4, 5; deposit: 1 + 2 (task 6);
    # pay: 1 + 2 (task 6), and not task 3's refused request; lock_account: task 2.
    assert cov.counts == {
        "find_account": 3,
        "get_account": 4,
        "deposit": 3,
        "pay": 3,
        "lock_account": 1,
    }
    assert cov.uncovered == [] and cov.ratio == 1.0
    assert tool_coverage(MOCK, TASKS[2:5]).uncovered == ["deposit", "pay", "lock_account"]


def test_branch_coverage_names_every_failed_precondition() -> None:
    assert failing_branches(MOCK, TASKS[2]) == ["pay.requires[0]", "pay.requires[1]"]
    assert failing_branches(MOCK, TASKS[3]) == ["deposit.requires[0]"]
    assert failing_branches(MOCK, TASKS[0]) == []  # not a refusal
    cov = branch_coverage(MOCK, TASKS)
    assert cov.counts == {
        "deposit.requires[0]": 1,
        "pay.requires[0]": 1,
        "pay.requires[1]": 1,
        "lock_account.requires[0]": 0,  # no task asks to lock a locked account
    }
    assert cov.uncovered == ["lock_account.requires[0]"] and cov.ratio == 0.75
    assert cov.notes["lock_account.requires[0]"] == "Account[account_id].status == 'active'"


def test_a_refusal_whose_chain_fails_is_reported_by_id() -> None:
    broken = _task(
        9,
        "refusal",
        ACTIVE,
        [("pay", {"account_id": "A002", "amount": 1})],  # A002 is locked: the chain fails
        refused=("deposit", {"account_id": "A002", "amount": 5}),
    )
    with pytest.raises(ValueError, match="task hand-9: reference call pay"):
        failing_branches(MOCK, broken)


def test_enables_coverage_counts_tasks_that_call_a_then_b() -> None:
    cov = enables_coverage(MOCK, TASKS)
    # mock's graph has two enables edges; tasks 1 and 6 call deposit before pay (task 6
    # twice over, counted once); no chain calls pay before deposit.
    assert cov.counts == {"deposit -> pay": 2, "pay -> deposit": 0}
    assert cov.uncovered == ["pay -> deposit"]


def test_enum_coverage_from_goal_changes() -> None:
    cov = enum_coverage(MOCK, TASKS)
    # only task 2 changes a status, from active to locked; no mock tool takes an enum
    assert cov.counts == {"Account.status=active": 1, "Account.status=locked": 1}
    assert enum_coverage(MOCK, [TASKS[0]]).uncovered == [
        "Account.status=active",
        "Account.status=locked",
    ]


def test_state_diversity_and_length_distributions() -> None:
    states = state_diversity(TASKS)
    assert list(states.values()) == [5, 1]  # ACTIVE for tasks 1, 2, 3, 5, 6; LOCKED for 4
    dist = length_distribution(TASKS)
    # lengths: 3, 2, 2, 1, 2, 4; proven minima: the same but task 6's is 3
    assert dist["length"]["action"] == {2: 1, 3: 1, 4: 1}
    assert dist["length"]["refusal"] == {1: 1, 2: 1}
    assert dist["length"]["all"] == {1: 1, 2: 3, 3: 1, 4: 1}
    assert dist["min_calls"]["action"] == {2: 1, 3: 2}
    assert dist["min_calls"]["information"] == {2: 1}


def test_coverage_command_json(tmp_path: Path) -> None:
    path = tmp_path / "hand.jsonl"
    manifest = Manifest(
        generator_version="hand",
        domain="mock",
        domain_hash=MOCK.content_hash,
        seed=0,
        options={},
        accepted=len(TASKS),
        by_kind={"action": 3, "information": 1, "refusal": 2},
        by_length={},
        rejected={},
    )
    write_taskset(path, manifest, TASKS)
    res = CliRunner().invoke(app, ["coverage", str(path), "--json"])
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    assert data == json.loads(json.dumps(coverage(MOCK, TASKS).to_dict()))
    assert (data["branches"]["covered"], data["branches"]["total"]) == (3, 4)
    assert data["enables"]["uncovered"] == ["pay -> deposit"]
    assert data["states"]["distinct"] == 2
    assert data["refusals"] == {
        "hand-3": ["pay.requires[0]", "pay.requires[1]"],
        "hand-4": ["deposit.requires[0]"],
    }
    text = CliRunner().invoke(app, ["coverage", str(path)])
    assert text.exit_code == 0 and "lock_account.requires[0]" in text.stdout
    assert "distinct initial states: 2" in text.stdout
