"""The grading function: exact goal changes, nothing else, strict answer matching.

Unit cases on tiny dict states, then a bounded property test over generated task sets:
every reference chain re-executes to its goal and grades as a success, while the initial
state, a state with one extra change, and answers missing the values all fail.
"""

from __future__ import annotations

import ast
import math
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import graphgen.grading
from graphgen.domains import load_builtin
from graphgen.errors import ToolError
from graphgen.grading import (
    MAX_RENAMINGS,
    changes_hold,
    expected_final,
    grade,
    renamings,
    state_diff,
)
from graphgen.interp import call_tool
from graphgen.state import State
from graphgen.tasks.dryrun import replay
from graphgen.tasks.model import Goal, Task
from graphgen.tasks.shortcuts import hedge_answer
from graphgen.tasks.taskset import generate

S0: dict[str, Any] = {
    "tables": {
        "A": {"a1": {"n": 1, "s": "active"}, "a2": {"n": 7, "s": "locked"}},
        "B": {"b1": {"a": "a1", "x": 3}},
    },
    "counters": {"A": 3, "B": 2},
}


def _copy(s: dict[str, Any]) -> dict[str, Any]:
    return {
        "tables": {e: {k: dict(r) for k, r in t.items()} for e, t in s["tables"].items()},
        "counters": dict(s["counters"]),
    }


def _change(entity: str, key: str, field: str, before: Any, after: Any) -> dict[str, Any]:
    return {"entity": entity, "key": key, "field": field, "before": before, "after": after}


# --------------------------------------------------------------------------- state_diff


def test_state_diff_reports_fields_creations_and_deletions() -> None:
    s1 = _copy(S0)
    s1["tables"]["A"]["a1"]["n"] = 2
    s1["tables"]["B"]["b2"] = {"a": "a2", "x": 1}
    del s1["tables"]["A"]["a2"]
    assert state_diff(S0, s1) == [
        ("A", "a1", "n", 1, 2),
        ("A", "a2", "*", {"n": 7, "s": "locked"}, None),
        ("B", "b2", "*", None, {"a": "a2", "x": 1}),
    ]
    assert state_diff(S0, _copy(S0)) == []


# --------------------------------------------------------------------------- changes


def test_exact_change_succeeds_and_missing_or_wrong_change_fails() -> None:
    goal = {"changes": [_change("A", "a1", "n", 1, 5)]}
    s1 = _copy(S0)
    s1["tables"]["A"]["a1"]["n"] = 5
    assert grade(S0, s1, goal)["success"]
    assert not grade(S0, S0, goal)["success"]
    s1["tables"]["A"]["a1"]["n"] = 6
    res = grade(S0, s1, goal)
    assert not res["success"]
    bad = [i for i in res["items"] if not i["ok"]]
    assert bad[0]["check"] == "change A a1 n" and "want 5" in bad[0]["detail"]


def test_any_other_change_fails_and_is_named() -> None:
    goal = {"changes": [_change("A", "a1", "n", 1, 5)]}
    s1 = _copy(S0)
    s1["tables"]["A"]["a1"]["n"] = 5
    s1["tables"]["B"]["b1"]["x"] = 4
    res = grade(S0, s1, goal)
    assert not res["success"]
    other = next(i for i in res["items"] if i["check"] == "no other changes")
    assert not other["ok"] and "B b1 x" in other["detail"]


def test_created_and_deleted_rows() -> None:
    new_row = {"a": "a2", "x": 9}
    goal = {
        "changes": [
            _change("B", "b2", "*", None, new_row),
            _change("A", "a2", "*", {"n": 7, "s": "locked"}, None),
        ]
    }
    s1 = _copy(S0)
    s1["tables"]["B"]["b2"] = dict(new_row)
    del s1["tables"]["A"]["a2"]
    assert grade(S0, s1, goal)["success"]
    s1["tables"]["B"]["b2"]["x"] = 8  # created, but with the wrong contents
    assert not grade(S0, s1, goal)["success"]
    s2 = _copy(S0)
    s2["tables"]["B"]["b2"] = dict(new_row)  # the deletion is missing
    assert not grade(S0, s2, goal)["success"]


def test_expected_final_is_graded_a_success() -> None:
    goal = {
        "changes": [
            _change("A", "a1", "s", "active", "locked"),
            _change("B", "b2", "*", None, {"a": "a1", "x": 0}),
        ]
    }
    final = expected_final(S0, goal)
    assert final["tables"]["A"]["a1"]["s"] == "locked"
    assert final["tables"]["B"]["b2"] == {"a": "a1", "x": 0}
    assert S0["tables"]["A"]["a1"]["s"] == "active"  # the input is not mutated
    assert grade(S0, final, goal)["success"]


def test_empty_goal_accepts_only_the_unchanged_state() -> None:
    assert grade(S0, _copy(S0), {"changes": []})["success"]
    s1 = _copy(S0)
    s1["tables"]["A"]["a2"]["s"] = "active"
    assert not grade(S0, s1, {"changes": []})["success"]


# --------------------------------------------------------------------------- answers


@pytest.mark.parametrize(
    ("value", "text", "ok"),
    [
        (5, "You have 5 units left.", True),
        (5, "You have 15 units left.", False),  # numbers must stand alone
        (5, "It costs 5.9 now.", False),
        (15, "It costs 5 now.", False),
        (1369, "Your balance is 1,369.", True),
        (1369, "Your balance is 11369.", False),
        (0, "Your balance is 0.", True),
        (0, "Your balance is 10.", False),
        ("locked", "The account is Locked.", True),  # case does not matter
        ("active", "The account is inactive.", False),
        ("Lily Owens", "The owner is lily owens.", True),
        ("2026-03-02", "It was placed on 2026-03-02.", True),
        (True, "Yes, it is insured.", True),
        (False, "No, it is not.", True),
        (False, "I know it is insured.", False),  # "no" is not a word of "know"
    ],
)
def test_answer_matching_is_strict(value: Any, text: str, ok: bool) -> None:
    res = grade(S0, S0, {"changes": [], "answer": [value]}, text)
    assert res["success"] is ok


@pytest.mark.parametrize(
    ("value", "text", "ok"),
    [
        ("gift_card", "You can't pay with a gift card.", True),  # _ as a space
        ("gift_card", "That gift-card has no funds.", True),
        ("gift_card", "That GIFT_CARD has no funds.", True),
        ("gift_card", "That card has no funds.", False),
        (324, "The fare is $324.", True),
        (324, "The fare is 324.00 dollars.", True),
        (324, "The fare is $324.50.", False),
        (1324, "The fare is $1,324.00.", True),
        (324, "The fare is $1,324.", False),
        ("2026-05-20", "It leaves on May 20, 2026.", True),
        ("2026-05-20", "It leaves on 20 May 2026.", True),
        ("2026-05-20", "It leaves on 2026/05/20.", True),
        ("2026-05-20", "It leaves on May 20th 2026.", True),
        ("2026-05-20", "It leaves on May 21, 2026.", False),
        ("2026-05-20", "It leaves on 2026-05-2.", False),
        (True, "True.", True),
        (False, "false", True),
    ],
)
def test_answer_forms_people_write_are_accepted(value: Any, text: str, ok: bool) -> None:
    assert grade(S0, S0, {"changes": [], "answer": [value]}, text)["success"] is ok


def test_any_one_true_reason_is_enough() -> None:
    goal = {"changes": [], "answer_any": [["cancelled"], [50], [324]]}
    assert grade(S0, S0, goal, "Sorry, that flight was cancelled.")["success"]
    assert grade(S0, S0, goal, "Your certificate holds only $50.")["success"]
    assert grade(S0, S0, goal, "The fare is $324.00, more than you have.")["success"]
    res = grade(S0, S0, goal, "Sorry, I can't do that.")
    assert not res["success"]
    assert [i["check"] for i in res["items"] if not i["ok"]] == [
        "answer mentions one of 'cancelled' | 50 | 324"
    ]


def test_hedged_answer_is_rejected() -> None:
    goal = {"changes": [], "answer": ["delayed"], "answer_not": ["scheduled", "cancelled"]}
    assert grade(S0, S0, goal, "Your flight is delayed.")["success"]
    res = grade(S0, S0, goal, "Your flight is scheduled, delayed, cancelled or departed.")
    assert not res["success"]
    assert [i["detail"] for i in res["items"] if not i["ok"]] == [
        "states 'scheduled', states 'cancelled'"
    ]


def test_a_denied_value_is_not_stated() -> None:
    """Defect: "Has my flight been cancelled?" graded on the status word. A truthful
    "No, it hasn't been cancelled, it is scheduled" must pass; a bare "yes" must not."""
    goal = {"changes": [], "answer": ["scheduled"], "answer_not": ["delayed", "cancelled"]}
    assert grade(S0, S0, goal, "No, it hasn't been cancelled: it is scheduled.")["success"]
    assert grade(S0, S0, goal, "It is scheduled, not delayed.")["success"]
    assert not grade(S0, S0, goal, "Yes.")["success"]
    assert not grade(S0, S0, goal, "It is scheduled. Actually it is cancelled.")["success"]
    # A denial reaches only within its clause: a listed "no" denies nothing after it.
    assert not grade(S0, S0, goal, "no, 4, scheduled, cancelled")["success"]


def test_denying_the_answer_does_not_give_it() -> None:
    """A value mentioned only to be denied is not the answer: "your order is not
    exchanged" fails a question whose answer is 'exchanged', and a refusal that denies
    its only reason gives none. A mention outside the denial still counts, and so do a
    rule or a plan ("it can be exchanged", "scheduled to depart")."""
    goal = {"changes": [], "answer": ["exchanged"], "answer_not": ["returned"]}
    assert not grade(S0, S0, goal, "Your order is not exchanged.")["success"]
    assert not grade(S0, S0, goal, "It has never been exchanged or returned.")["success"]
    assert grade(S0, S0, goal, "It was exchanged; it has not been exchanged twice.")["success"]
    assert grade(S0, S0, goal, "It is exchanged, so it can no longer be changed.")["success"]
    refusal = {"changes": [], "answer_any": [["departed"], [0]]}
    assert not grade(S0, S0, refusal, "Sorry, the flight has not departed.")["success"]
    assert grade(S0, S0, refusal, "Sorry, the flight has departed.")["success"]
    plan = {"changes": [], "answer": ["scheduled"], "answer_not": ["delayed"]}
    assert grade(S0, S0, plan, "It is scheduled to depart at 10:05.")["success"]
    flag = {"changes": [], "answer": [False]}
    assert grade(S0, S0, flag, "No, it has not.")["success"]


def test_old_format_goal_grades_the_same() -> None:
    """A task file written before answer_any/answer_not existed reads and grades as
    before, and a goal without them writes no new keys."""
    old = {"changes": [], "answer": ["gold", 12]}
    goal = Goal.model_validate(old)
    assert goal.model_dump(mode="json") == old
    res = grade(S0, S0, goal.model_dump(), "gold, 12")
    assert res["success"]
    assert [i["check"] for i in res["items"]] == [
        "no other changes",
        "answer mentions 'gold'",
        "answer mentions 12",
    ]
    assert not grade(S0, S0, old, "gold")["success"]


def test_every_answer_value_is_needed() -> None:
    goal = {"changes": [], "answer": [12, "gold"]}
    assert grade(S0, S0, goal, "12 and gold")["success"]
    assert not grade(S0, S0, goal, "only 12")["success"]
    res = grade(S0, S0, goal, None)
    assert not res["success"]
    assert all(
        i["detail"] == "no answer given" for i in res["items"] if i["check"].startswith("answer")
    )


def test_grade_module_imports_nothing_from_the_pipeline() -> None:
    """Environments ship this very file, so it may only use the standard library."""
    tree = ast.parse(Path(graphgen.grading.__file__).read_text(encoding="utf-8"))
    mods = {
        a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names
    }
    mods |= {
        (n.module or "").split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)
    }
    assert mods <= set(sys.stdlib_module_names) | {"__future__"}


# --------------------------------------------------------------------------- created rows
# Ids of created rows come from per-table counters: making the same rows in another
# order swaps their ids, so the grader matches new rows up to a consistent renaming.


def _created(*rows: tuple[str, int]) -> dict[str, Any]:
    """S0 plus new B rows (key, x), each pointing at a1, and a1.n naming the last one."""
    s1 = _copy(S0)
    for key, x in rows:
        s1["tables"]["B"][key] = {"a": "a1", "x": x}
    s1["tables"]["A"]["a1"]["n"] = rows[-1][0]
    return s1


def _created_goal(*rows: tuple[str, int]) -> dict[str, Any]:
    changes = [_change("B", k, "*", None, {"a": "a1", "x": x}) for k, x in rows]
    return {"changes": [*changes, _change("A", "a1", "n", 1, rows[-1][0])]}


def test_rows_created_in_the_other_order_pass() -> None:
    goal = _created_goal(("b2", 10), ("b3", 20))
    assert grade(S0, _created(("b2", 10), ("b3", 20)), goal)["success"]
    # the same two rows made the other way round: ids swapped, a1.n follows its row
    assert grade(S0, _created(("b3", 10), ("b2", 20)), goal)["success"]
    assert changes_hold(_created(("b3", 10), ("b2", 20)), goal["changes"], S0)
    assert not changes_hold(_created(("b3", 10), ("b2", 20)), goal["changes"])


def test_a_wrong_created_row_still_fails() -> None:
    goal = _created_goal(("b2", 10), ("b3", 20))
    for wrong in (
        _created(("b2", 10), ("b3", 21)),  # a value no renaming fixes
        _created(("b2", 10)),  # one row missing
        _created(("b2", 10), ("b3", 20), ("b4", 30)),  # one row too many
    ):
        assert not grade(S0, wrong, goal)["success"]


def test_references_to_new_ids_are_renamed_with_them() -> None:
    goal = _created_goal(("b2", 10), ("b3", 20))
    # ids swapped, but a1.n still names the id the *reference* gave the 20-row: under the
    # only renaming that matches the rows, a1.n should name b2, so this fails
    inconsistent = _created(("b3", 10), ("b2", 20))
    inconsistent["tables"]["A"]["a1"]["n"] = "b3"
    assert not grade(S0, inconsistent, goal)["success"]
    assert renamings_of(goal, _created(("b3", 10), ("b2", 20))) == [
        {},
        {("B", "b2"): "b3", ("B", "b3"): "b2"},
    ]


class _Unlisted(dict[str, Any]):
    """A table that may be looked up but not listed: listing it fails the test."""

    def __iter__(self) -> Any:
        raise AssertionError("the whole table was listed")


def test_the_final_table_is_listed_only_when_the_ids_as_written_fail() -> None:
    """Finding the renamings lists every row of the final tables (which rows are new);
    when the changes hold under the ids as written that is never needed, which on a
    table of 40,000 rows is most of a check's cost."""
    goal = _created_goal(("b2", 10), ("b3", 20))
    same = _created(("b2", 10), ("b3", 20))
    same["tables"]["B"] = _Unlisted(same["tables"]["B"])
    assert changes_hold(same, goal["changes"], S0)
    swapped = _created(("b3", 10), ("b2", 20))
    swapped["tables"]["B"] = _Unlisted(swapped["tables"]["B"])
    with pytest.raises(AssertionError, match="listed"):
        changes_hold(swapped, goal["changes"], S0)


def renamings_of(goal: dict[str, Any], final: dict[str, Any]) -> list[dict[Any, str]]:
    return list(renamings(S0, final, goal["changes"]))


def test_too_many_created_rows_are_graded_by_their_ids() -> None:
    rows = [(f"b{i}", 10 * i) for i in range(2, 9)]  # 7 rows: 5040 renamings > the cap
    assert math.factorial(len(rows)) > MAX_RENAMINGS
    goal = _created_goal(*rows)
    assert grade(S0, _created(*rows), goal)["success"]
    shifted = [(k, x) for (k, _), (_, x) in zip(rows, [*rows[1:], rows[0]], strict=True)]
    shifted_goal = _created_goal(*shifted)
    assert renamings_of(shifted_goal, _created(*rows)) == [{}]
    assert not grade(S0, _created(*rows), shifted_goal)["success"]


# --------------------------------------------------------------------------- property

SIZES = {"mock": 40, "airline": 15, "retail": 10}


def _goal_holds(goal: dict[str, Any], state: dict[str, Any]) -> bool:
    for c in goal["changes"]:
        row = state["tables"].get(c["entity"], {}).get(c["key"])
        if c["field"] == "*":
            if row != c["after"]:
                return False
        elif row is None or row.get(c["field"]) != c["after"]:
            return False
    return True


def _perturb(state: dict[str, Any], goal: dict[str, Any]) -> dict[str, Any]:
    """A copy of ``state`` with one change the goal does not mention."""
    touched = {(c["entity"], c["key"]) for c in goal["changes"]}
    out = _copy(state)
    for ent, table in sorted(out["tables"].items()):
        for key, row in sorted(table.items()):
            if (ent, key) in touched:
                continue
            for f, v in sorted(row.items()):
                if isinstance(v, bool):
                    row[f] = not v
                elif isinstance(v, int):
                    row[f] = v + 1
                elif isinstance(v, str):
                    row[f] = v + "x"
                elif isinstance(v, list):
                    row[f] = [*v, "zz"]
                else:
                    continue
                return out
    raise AssertionError("no field to perturb")


def _check_task(domain_name: str, task: Task) -> None:
    domain = load_builtin(domain_name)
    initial = State.from_dict(task.initial_state)
    run = replay(domain, initial, task.givens, task.chain)
    assert run.complete, run.first_problem()
    s0, s1 = initial.to_dict(), run.final.to_dict()
    goal = task.goal.model_dump()
    assert State.from_dict(task.initial_state) == initial, "the chain mutated its input"
    if task.kind == "action":
        assert goal["changes"] and not _goal_holds(goal, s0), task.id
        assert _goal_holds(goal, s1), task.id
        assert grade(s0, s1, goal)["success"], (task.id, grade(s0, s1, goal))
        assert not grade(s0, s0, goal)["success"], task.id
        assert not grade(s0, _perturb(s1, goal), goal)["success"], task.id
        assert expected_final(s0, goal)["tables"] == s1["tables"], task.id
        return
    assert state_diff(s0, s1) == [], task.id
    assert goal["answer"] or goal.get("answer_any"), task.id
    # Any one true reason (or the one answer), said plainly, passes.
    for group in goal.get("answer_any") or [[]]:
        said = "Here you go: " + "; ".join(str(v) for v in [*goal["answer"], *group]) + "."
        assert grade(s0, s1, goal, said)["success"], (task.id, said)
    # Naming every value seen does not.
    hedge = hedge_answer(domain, run.results)
    assert not grade(s0, s1, goal, hedge)["success"], (task.id, hedge)
    assert not grade(s0, s1, goal, "Sorry, I cannot help with that.")["success"], task.id
    assert not grade(s0, s1, goal, None)["success"], task.id
    assert not grade(s0, _perturb(s1, goal), goal, said)["success"], task.id
    if task.kind == "refusal":
        assert task.refused_call is not None
        with pytest.raises(ToolError) as exc:
            call_tool(domain, run.final.copy(), task.refused_call.tool, task.refused_call.args)
        assert exc.value.kind == "precondition", task.id


@pytest.mark.slow
@settings(
    max_examples=50, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow]
)
@given(domain_name=st.sampled_from(sorted(SIZES)), seed=st.integers(0, 100_000))
def test_generated_tasks_replay_and_grade(domain_name: str, seed: int) -> None:
    res = generate(load_builtin(domain_name), SIZES[domain_name], seed)
    assert len(res.tasks) == SIZES[domain_name]
    for task in res.tasks:
        _check_task(domain_name, task)
