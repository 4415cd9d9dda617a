"""The executable half of the acceptance gate: dry-run a candidate and check it.

Every check that fails names a reason; reasons are counted in the task-set manifest and
never silently dropped. The z3 half lives in ``verify``; a task needs both.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from graphgen.domain import Domain
from graphgen.errors import ExprError, ToolError
from graphgen.grading import changes_hold, grade, state_diff
from graphgen.interp import call_tool, failed_check
from graphgen.knowledge import facts_of_result, param_sort, parse_sort
from graphgen.state import State
from graphgen.tasks.model import Call, Given, Goal, Target, TaskKind
from graphgen.tasks.plan import Knowledge
from graphgen.tasks.referring import matching_keys
from graphgen.tasks.render import stated

Executor = Callable[[Domain, State, str, dict[str, Any]], Any]

REASONS = (
    "bad_chain",
    "call_failed",
    "unknown_argument",
    "given_not_stated",
    "id_leak",
    "goal_already_true",
    "goal_not_reached",
    "nondeterministic",
    "ambiguous_target",
    "answer_not_revealed",
    "answer_in_instruction",
    "state_changed",
    "refusal_succeeds",
)


@dataclass
class GateResult:
    ok: bool
    reason: str = ""
    detail: str = ""


@dataclass
class DryRun:
    """What executing a chain produced."""

    final: State
    results: list[Any]


def run_chain(domain: Domain, initial: State, chain: list[Call],
              execute: Executor = call_tool) -> DryRun:
    """Execute ``chain`` on a copy of ``initial``; ToolError propagates with its index."""
    st = initial.copy()
    results = []
    for i, c in enumerate(chain):
        try:
            results.append(execute(domain, st, c.tool, dict(c.args)))
        except ToolError as exc:
            raise ToolError(f"call {i} ({c.tool}): {exc.message}", tool=c.tool,
                            kind=exc.kind) from None
    return DryRun(st, results)


def check_candidate(domain: Domain, kind: TaskKind, initial: State, chain: list[Call],
                    givens: list[Given], targets: list[Target], instruction: str, goal: Goal,
                    refused_call: Call | None = None, execute: Executor = call_tool
                    ) -> GateResult:
    """Dry-run a candidate task and return the first failing reason (or ok)."""
    # Shape first: a misnamed tool or parameter is a broken chain, not a failing call.
    for i, c in enumerate(chain):
        if c.tool not in domain.tools:
            return GateResult(False, "bad_chain", f"call {i}: unknown tool {c.tool!r}")
        extra = sorted(set(c.args) - set(domain.tools[c.tool].params))
        if extra:
            return GateResult(False, "bad_chain", f"call {i}: {c.tool} has no param {extra[0]!r}")
    # 1. every call executes, and every argument was known when it was made
    try:
        run = run_chain(domain, initial, chain, execute)
    except ToolError as exc:
        return GateResult(False, "call_failed", exc.message)
    know = Knowledge()
    for g in givens:
        know.add(parse_sort(g.sort), g.value, -1)
    for i, (c, res) in enumerate(zip(chain, run.results, strict=True)):
        tool = domain.tools[c.tool]
        for p, v in c.args.items():
            s = param_sort(tool.params[p])
            if not know.knows(s, v):
                return GateResult(False, "unknown_argument",
                                  f"call {i} ({c.tool}): {p}={v!r} is not known at {s}")
        for s, v in facts_of_result(domain, tool, res):
            know.add(s, v, i)
    # 2. the instruction states the givens and leaks no internal id
    for g in givens:
        if not stated(instruction, g.value):
            return GateResult(False, "given_not_stated", f"{g.sort}={g.value!r}")
    for c in [*chain, *([refused_call] if refused_call else [])]:
        tool = domain.tools[c.tool]
        for p, v in c.args.items():
            ps = param_sort(tool.params[p]) if p in tool.params else None
            if (ps is not None and ps.kind == "key" and isinstance(v, str)
                    and not domain.entities[ps.name].key_givable
                    and re.search(rf"(?<![\w#-]){re.escape(v)}(?![\w-])", instruction)):
                return GateResult(False, "id_leak", f"{ps.name} id {v!r} appears in the text")
    # 3. targets are unique on the initial state
    for t in targets:
        try:
            keys = matching_keys(domain, initial, t.entity, t.description)
        except (ExprError, ToolError) as exc:
            return GateResult(False, "ambiguous_target", f"{t.description}: {exc}")
        if keys != [t.key]:
            return GateResult(False, "ambiguous_target",
                              f"{t.phrase!r} matches {len(keys)} {t.entity} rows: {keys[:5]}")
    # 4. determinism: the same chain gives the same state and outputs
    try:
        again = run_chain(domain, initial, chain, execute)
    except ToolError as exc:
        return GateResult(False, "nondeterministic", f"re-run failed: {exc.message}")
    if again.final != run.final or again.results != run.results:
        return GateResult(False, "nondeterministic", "re-running the chain gave another result")
    s0, s1 = initial.to_dict(), run.final.to_dict()
    # 5. kind-specific goal checks
    if kind == "action":
        if not goal.changes or changes_hold(s0, goal.model_dump()["changes"]):
            return GateResult(False, "goal_already_true", "the goal holds on the initial state")
        graded = grade(s0, s1, goal.model_dump())
        if not graded["success"]:
            bad = [i for i in graded["items"] if not i["ok"]]
            return GateResult(False, "goal_not_reached", f"{bad[0]['check']}: {bad[0]['detail']}")
    else:
        if state_diff(s0, s1):
            return GateResult(False, "state_changed", f"a {kind} task must change nothing")
        if kind == "refusal":  # first: is there anything to refuse at all?
            if refused_call is None:
                return GateResult(False, "bad_chain", "a refusal task names its refused call")
            try:
                chk = failed_check(domain, run.final, refused_call.tool, dict(refused_call.args))
            except ToolError as exc:
                return GateResult(False, "bad_chain", f"refused call is malformed: {exc.message}")
            if chk is None:
                return GateResult(False, "refusal_succeeds",
                                  f"{refused_call.tool} would succeed: nothing to refuse")
        revealed = {repr(v) for _, v in know.facts_items()} | {repr(r) for r in run.results}
        for v in goal.answer:
            if kind == "information" and stated(instruction, v):
                return GateResult(False, "answer_in_instruction", f"{v!r} is in the text")
            if repr(v) not in revealed:
                # Refusals too: the agent must be able to see the reason it reports.
                return GateResult(False, "answer_not_revealed", f"no call reveals {v!r}")
        if not goal.answer:
            return GateResult(False, "goal_already_true", "nothing to answer: a no-op passes")
    return GateResult(True)
