"""The dry-run: replay a chain with the interpreter, and the generator's executable gate.

:func:`replay` is the one replay of a chain. It records every step's outcome (its shape,
the arguments the agent could not know yet, the result or the failure) instead of
stopping at a "first problem", because its two callers rank problems differently:

* the generator's gate (:func:`check_candidate`) reports a misnamed tool or parameter
  anywhere in the chain first, then a failing call, then an unknown argument — the
  order in which a task author would fix them;
* the proofs (:mod:`graphgen.verify.proofs`) ask whether an *agent* could make the
  calls in order, so they report whichever problem comes first along the chain
  (:meth:`Replay.first_problem`).

Every gate check that fails names a reason; reasons are counted in the task-set
manifest and never silently dropped. The z3 half lives in ``verify``; a task needs both.

:func:`permitted_orders` lists the reorderings of a chain that keep every argument's
source before its use; the gate replays them (:func:`order_problem`) so an action task
whose writes only work out in the reference order is rejected (``order_dependent``).

The domain's invariants (the policy's rules about states,
:func:`graphgen.staterules.invariant_violations`) must hold on the initial state and
after the reference chain (``policy_violation``) — a permitted reordering that passes
grading ends in that same state, up to the ids of created rows, so it keeps them too;
and a task is about the one customer its instruction identifies
(:mod:`graphgen.tasks.identity`: ``several_customers``, ``unidentified_owner``).
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from graphgen.domain import Domain
from graphgen.errors import ExprError, ToolError
from graphgen.grading import changes_hold, grade, state_diff
from graphgen.interp import call_or_fail, failed_check
from graphgen.knowledge import Cell, Reveal, Sort, key_sort, param_sort, reveal
from graphgen.state import State, changed_views
from graphgen.staterules import policy_problem
from graphgen.tasks.identity import identity_problem
from graphgen.tasks.model import Call, Given, Goal, Target, Task, TaskKind
from graphgen.tasks.plan import Executor, Knowledge
from graphgen.tasks.referring import (
    MAX_CANDIDATES,
    candidates_of,
    described_fields,
    matching_keys,
    unseen_cells,
)
from graphgen.tasks.render import spoken_forms, stated, states_order
from graphgen.tasks.shortcuts import echo_answer, hedge_answer
from graphgen.tasks.softrefusal import SoftReason, soft_reason
from graphgen.types import OptT

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
    "too_many_candidates",
    "description_not_seen",
    "candidates_not_read",
    "stale_description",
    "answer_not_revealed",
    "answer_in_instruction",
    "state_changed",
    "refusal_succeeds",
    "order_dependent",
    "order_not_stated",
    "policy_violation",
    "several_customers",
    "unidentified_owner",
    "echo_passes",
    "hedge_passes",
)

# Most reorderings of a chain :func:`permitted_orders` lists (the reference order first).
ORDER_LIMIT = 120


@dataclass
class GateResult:
    """The gate's verdict on a candidate: ok, or the first failing reason and its detail."""

    ok: bool
    reason: str = ""
    detail: str = ""


@dataclass
class Unknown:
    """An argument the agent could not know when the call was made."""

    param: str
    value: Any
    sort: Sort


@dataclass
class Step:
    """What happened to one call of a replayed chain.

    ``bad_tool`` / ``extra_params`` describe its shape (checked for every call before
    anything runs); ``ran`` is false for calls after the first malformed or failing one.
    ``unknown`` lists the arguments (in argument order) not known when it was made —
    the call is executed anyway, so a later failure is still seen.
    """

    index: int
    call: Call
    bad_tool: bool = False
    extra_params: list[str] = field(default_factory=list)
    ran: bool = False
    unknown: list[Unknown] = field(default_factory=list)
    error: str = ""  # the ToolError message if the call failed
    result: Any = None
    shown: Reveal | None = None  # what its output showed (when it succeeded)

    @property
    def malformed(self) -> bool:
        """The call names a tool or a parameter the domain does not have."""
        return self.bad_tool or bool(self.extra_params)

    def problem(self) -> str:
        """This step's first problem in agent order (shape, knowledge, execution), or ""."""
        i, c = self.index, self.call
        if self.bad_tool:
            return f"call {i}: unknown tool {c.tool!r}"
        if self.extra_params:
            return f"call {i} ({c.tool}): no parameter {self.extra_params[0]!r}"
        if self.unknown:
            u = self.unknown[0]
            return f"call {i} ({c.tool}): {u.param}={u.value!r} is not known at {u.sort}"
        if self.error:
            return f"call {i} ({c.tool}) fails: {self.error}"
        return ""


@dataclass
class Replay:
    """A replayed chain: every step's outcome, the state after the calls that ran, and
    what the agent knows after them."""

    steps: list[Step]
    final: State
    knowledge: Knowledge

    @property
    def complete(self) -> bool:
        """Every call was well formed and succeeded (arguments may still be unknown)."""
        return all(s.ran and not s.error for s in self.steps)

    @property
    def results(self) -> list[Any]:
        """The results of the calls that succeeded, in order."""
        return [s.result for s in self.steps if s.ran and not s.error]

    def first_problem(self) -> str:
        """The first problem along the chain, as an agent meets it ("" if none)."""
        for s in self.steps:
            why = s.problem()
            if why:
                return why
        return ""


def replay(
    domain: Domain,
    initial: State,
    givens: list[Given],
    chain: list[Call],
    execute: Executor = call_or_fail,
) -> Replay:
    """Replay ``chain`` on a copy of ``initial``, recording each step's outcome.

    Every call's shape is checked first; calls then run in order until the first
    malformed or failing one. An argument not known at its call (from the givens and the
    earlier calls' results, :func:`graphgen.knowledge.facts_of_result`) is recorded and
    the call still runs, so a failure later in the chain is seen too.
    """
    steps = []
    for i, c in enumerate(chain):
        tool = domain.tools.get(c.tool)
        steps.append(
            Step(
                i,
                c,
                bad_tool=tool is None,
                extra_params=[] if tool is None else [p for p in c.args if p not in tool.params],
            )
        )
    st = initial.copy()
    know = Knowledge.from_givens(givens)
    for step in steps:
        if step.malformed:
            break
        c = step.call
        tool = domain.tools[c.tool]
        for p, v in c.args.items():
            s = param_sort(tool.params[p])
            if v is None and isinstance(tool.params[p].ty, OptT):
                continue  # None passed is the argument left out: nothing to know
            if not know.knows(s, v):
                step.unknown.append(Unknown(p, v, s))
        step.ran = True
        try:
            step.result = execute(domain, st, c.tool, dict(c.args))
        except ToolError as exc:
            step.error = exc.located()
            break
        step.shown = reveal(domain, st, tool, c.args, step.result)
        know.learn(step.shown, step.index)
    return Replay(steps, st, know)


def call_dependencies(
    domain: Domain,
    initial: State,
    givens: list[Given],
    chain: list[Call],
    execute: Executor = call_or_fail,
) -> list[set[int]]:
    """For each call of ``chain``, the earlier calls it depends on.

    A call depends on the call that first revealed a value it passes as an argument
    (the origin :class:`~graphgen.tasks.plan.Knowledge` records on a replay from
    ``initial``); givens and enum members come from no call. Nothing else orders two
    calls: writes that touch the same rows stay free to reorder.
    """
    run = replay(domain, initial, givens, chain, execute)
    deps: list[set[int]] = []
    for step in run.steps:
        tool = domain.tools.get(step.call.tool)
        mine: set[int] = set()
        for p, v in step.call.args.items():
            if tool is None or p not in tool.params:
                continue
            s = param_sort(tool.params[p])
            origin = run.knowledge.origin(s, v)
            if origin is not None and 0 <= origin < step.index:
                mine.add(origin)
        deps.append(mine)
    return deps


def _write_deps(
    domain: Domain, chain: list[Call], deps: list[set[int]], ordered: bool
) -> tuple[list[int], dict[int, set[int]]]:
    """The chain's writes and, per write, the earlier writes it must follow: those it
    depends on, even through reads; with ``ordered`` (the instruction states the order
    of its requests) every earlier write of the reference chain."""
    writes = [
        i for i, c in enumerate(chain) if c.tool in domain.tools and domain.tools[c.tool].is_write
    ]
    before: list[set[int]] = []  # every call's transitive dependencies
    for d in deps:
        before.append(set(d).union(*(before[j] for j in d)))
    if ordered:
        return writes, {w: set(writes[:n]) for n, w in enumerate(writes)}
    return writes, {w: before[w] & set(writes) for w in writes}


def _placements(deps: list[set[int]], perm: list[int]) -> Iterator[list[int]]:
    """Every order of the whole chain whose writes come in the order ``perm``, each call
    after its dependencies, the reference placement of the reads first."""
    pinned = {i: set(d) for i, d in enumerate(deps)}
    for a, b in itertools.pairwise(perm):
        pinned[b].add(a)
    return topological_orders(list(range(len(deps))), pinned)


def permitted_orders(
    domain: Domain,
    initial: State,
    givens: list[Given],
    chain: list[Call],
    limit: int = ORDER_LIMIT,
    execute: Executor = call_or_fail,
    ordered: bool = False,
) -> list[list[int]]:
    """The orders (lists of indices into ``chain``) in which an agent may make its calls:
    the topological orders of :func:`call_dependencies`, at most ``limit`` of them. With
    ``ordered`` the instruction states the order of its requests, so the writes keep the
    reference chain's order and only the reads move.

    The reference order comes first. Since reads change nothing, an order's final state
    depends only on the order of its writes, so the orders are listed round-robin over
    the permitted orders of the writes: every write order appears (one order each) before
    a second placement of the reads around any of them. Deterministic.
    """
    deps = call_dependencies(domain, initial, givens, chain, execute)
    writes, write_deps = _write_deps(domain, chain, deps, ordered)
    streams = [
        _placements(deps, perm)
        for perm in itertools.islice(topological_orders(writes, write_deps), limit)
    ]
    out: list[list[int]] = []
    while streams and len(out) < limit:
        alive = []
        for it in streams:
            order = next(it, None)
            if order is None:
                continue
            alive.append(it)
            out.append(order)
            if len(out) >= limit:
                break
        streams = alive
    return out


def topological_orders(nodes: list[int], deps: dict[int, set[int]]) -> Iterator[list[int]]:
    """Every order of ``nodes`` with each after its dependencies (those among ``nodes``),
    lexicographically, so ``nodes`` itself comes first when it is one. ``deps`` must be
    acyclic (it is: dependencies point to earlier calls, and a write order pinned on top
    of them follows their transitive closure), so no branch dead-ends."""
    order: list[int] = []
    placed: set[int] = set()
    inside = set(nodes)

    def walk() -> Iterator[list[int]]:
        if len(order) == len(nodes):
            yield list(order)
            return
        for i in nodes:
            if i not in placed and deps[i] & inside <= placed:
                order.append(i)
                placed.add(i)
                yield from walk()
                placed.discard(i)
                order.pop()

    return walk()


@dataclass(frozen=True)
class OrderCheck:
    """What replaying the permitted write orders of a chain found.

    ``problem`` describes the first order that does not work out ("" if none);
    ``orders`` counts the write orders examined; ``complete`` says every permitted write
    order was examined (none was left out by the limit)."""

    problem: str
    orders: int
    complete: bool


def order_problem(
    domain: Domain,
    initial: State,
    givens: list[Given],
    chain: list[Call],
    goal: Goal | dict[str, Any],
    *,
    ordered: bool = False,
    execute: Executor = call_or_fail,
    limit: int = ORDER_LIMIT,
) -> OrderCheck:
    """Does every order of ``chain`` the instruction permits work out?

    The permitted write orders are those of :func:`permitted_orders` (with ``ordered``,
    only the reference order). For each, the reads are placed around the writes, each
    call after the sources of its arguments, until one placement runs cleanly; that
    placement must end in a state the grader accepts. Reads change nothing, so one clean
    placement stands for all of them, and a write that fails fails in every placement
    (the state before it depends only on the writes before it).

    A permitted order in which a write fails is a problem too, not an error the agent
    can shrug off: the user asked for every request, and a call refused in that order
    (cancelling an order before re-addressing it) usually cannot be made good. Such a
    task must state its order in words (``ordered``), and then only the stated order is
    checked. Up to ``limit`` write orders, and ``limit`` placements each, are tried; past
    that the result is not ``complete``.
    """
    g = goal.model_dump() if isinstance(goal, Goal) else goal
    goal_rows = [(c["entity"], c["key"]) for c in g.get("changes", [])]
    deps = call_dependencies(domain, initial, givens, chain, execute)
    writes, write_deps = _write_deps(domain, chain, deps, ordered)
    is_write = set(writes)

    def named(order: list[int]) -> str:
        return "[" + ", ".join(f"{i}:{chain[i].tool}" for i in order) + "]"

    n = 0
    for perm in topological_orders(writes, write_deps):
        if n >= limit:
            return OrderCheck("", n, False)
        n += 1
        for tried, order in enumerate(_placements(deps, perm)):
            if tried >= limit:
                return OrderCheck("", n, False)
            run = replay(domain, initial, givens, [chain[i] for i in order], execute)
            failed = next((st for st in run.steps if st.error), None)
            if failed is not None and order[failed.index] in is_write:
                i = order[failed.index]
                return OrderCheck(
                    f"in order {named(order)} call {i} ({chain[i].tool}) fails: {failed.error}",
                    n,
                    True,
                )
            if not run.complete or any(st.unknown for st in run.steps):
                continue
            result = grade(*changed_views(initial, run.final, goal_rows), g)
            if not result["success"]:
                bad = next(i for i in result["items"] if not i["ok"])
                return OrderCheck(
                    f"order {named(order)} runs cleanly but fails {bad['check']}: {bad['detail']}",
                    n,
                    True,
                )
            break
        else:
            return OrderCheck(
                f"write order {named(perm)}: no placement of the reads runs cleanly", n, True
            )
    return OrderCheck("", n, True)


def recognition_problem(
    domain: Domain, initial: State, run: Replay, targets: list[Target]
) -> GateResult | None:
    """Can an agent tell each described target apart, from what the chain shows it?

    Before the first write that acts on a target (or by the end of the chain), the calls
    must have shown the target's described fields for that very row, and those of every
    other candidate the call that revealed its id listed (in list order, at most
    :data:`~graphgen.tasks.referring.MAX_CANDIDATES`); a field that names another row
    ("with flight GG123") needs that row's display value too. Knowing a list of ids is
    not knowing which one was placed on 2026-11-02.
    """
    chain = [s.call for s in run.steps]
    results = [s.result for s in run.steps]
    for t in targets:
        edef = domain.entities.get(t.entity)
        if edef is None or edef.key_givable or not described_fields(domain, t):
            continue
        deadline = next(
            (s.index for s in run.steps if _acts_on(domain, s.call, t.entity, t.key)),
            len(run.steps),
        )
        shown: set[Cell] = set()
        for s in run.steps[:deadline]:
            if s.shown is not None:
                shown |= s.shown.cells
        origin = run.knowledge.origin(key_sort(t.entity), t.key)
        cands = candidates_of(domain, chain, results, origin, t.key, t.entity)
        if len(cands) > MAX_CANDIDATES:
            return GateResult(
                False,
                "too_many_candidates",
                f"{t.phrase!r}: call {origin} lists {len(cands)} {t.entity} ids "
                f"(more than {MAX_CANDIDATES} to read one by one) and no search narrows them",
            )
        missing = unseen_cells(domain, initial, t, cands, shown)
        rivals = {(t.entity, k) for k in cands if k != t.key}
        own = [c for c in missing if c[:2] not in rivals]
        if own:
            e, k, f = own[0]
            return GateResult(
                False,
                "description_not_seen",
                f"{t.phrase!r}: no call before it is used shows {e} {k!r}'s {f}",
            )
        if missing:
            e, k, f = missing[0]
            return GateResult(
                False,
                "candidates_not_read",
                f"{t.phrase!r} is picked among {len(cands)} {t.entity} ids from call {origin}, "
                f"but no call shows candidate {k!r}'s {f}",
            )
    return None


def stale_description(
    domain: Domain,
    initial: State,
    chain: list[Call],
    targets: list[Target],
    execute: Executor = call_or_fail,
) -> str:
    """A target whose description no longer singles out its row when a write of the
    chain acts on it ("" if none).

    The text describes every target once, and an agent doing the requests in turn reads
    each description when it gets to that request: after buying a new gift card, "pay
    with my gift card" fits two rows; after moving a booking to another flight, "my
    reservation on flight GG1635" fits none. The gate re-counts each description on the
    state just before each write that names the target (the reference order; an
    ``ordered`` task fixes it, and for the others it is one order an agent may take).
    """
    st = initial.copy()
    for i, c in enumerate(chain):
        for t in targets:
            if not _acts_on(domain, c, t.entity, t.key):
                continue
            try:
                keys = matching_keys(domain, st, t.entity, t.description)
            except (ExprError, ToolError) as exc:
                return f"call {i} ({c.tool}): {t.phrase!r}: {exc}"
            if keys != [t.key]:
                return (
                    f"call {i} ({c.tool}): by then {t.phrase!r} matches {len(keys)} "
                    f"{t.entity} rows: {keys[:5]}"
                )
        try:
            execute(domain, st, c.tool, dict(c.args))
        except ToolError:
            return ""  # the chain's own failure is reported by the replay
    return ""


def _acts_on(domain: Domain, call: Call, entity: str, key: Any) -> bool:
    """Is ``call`` a write with ``key`` (an id of ``entity``) among its arguments?"""
    tool = domain.tools.get(call.tool)
    if tool is None or not tool.is_write:
        return False
    return any(
        p in tool.params and param_sort(tool.params[p]) == key_sort(entity) and v == key
        for p, v in call.args.items()
    )


def check_candidate(
    domain: Domain,
    kind: TaskKind,
    initial: State,
    chain: list[Call],
    givens: list[Given],
    targets: list[Target],
    instruction: str,
    goal: Goal,
    refused_call: Call | None = None,
    execute: Executor = call_or_fail,
    ordered: bool = False,
) -> GateResult:
    """Dry-run a candidate task and return the first failing reason (or ok).

    ``ordered`` says the instruction states the order of its requests ("First, … Then
    …"), so only that order of the writes must work out (:func:`order_problem`)."""
    run = replay(domain, initial, givens, chain, execute)
    # Shape first: a misnamed tool or parameter is a broken chain, not a failing call.
    for step in run.steps:
        i, c = step.index, step.call
        if step.bad_tool:
            return GateResult(False, "bad_chain", f"call {i}: unknown tool {c.tool!r}")
        if step.extra_params:
            return GateResult(
                False,
                "bad_chain",
                f"call {i}: {c.tool} has no param {sorted(step.extra_params)[0]!r}",
            )
    # 1. every call executes, and every argument was known when it was made
    for step in run.steps:
        if step.error:
            return GateResult(
                False, "call_failed", f"call {step.index} ({step.call.tool}): {step.error}"
            )
    for step in run.steps:
        if step.unknown:
            u = step.unknown[0]
            return GateResult(
                False,
                "unknown_argument",
                f"call {step.index} "
                f"({step.call.tool}): {u.param}={u.value!r} is not known at {u.sort}",
            )
    know = run.knowledge
    # 2. the instruction states the givens and leaks no internal id
    for g in givens:
        if not stated(instruction, g.value, spoken_forms(domain, g.sort, g.value)):
            return GateResult(False, "given_not_stated", f"{g.sort}={g.value!r}")
    for c in [*chain, *([refused_call] if refused_call else [])]:
        tool = domain.tools[c.tool]
        for p, v in c.args.items():
            ps = param_sort(tool.params[p]) if p in tool.params else None
            if (
                ps is not None
                and ps.kind == "key"
                and isinstance(v, str)
                and not domain.entities[ps.name].key_givable
                and re.search(rf"(?<![\w#-]){re.escape(v)}(?![\w-])", instruction)
            ):
                return GateResult(False, "id_leak", f"{ps.name} id {v!r} appears in the text")
    # 3. targets are unique on the initial state
    for t in targets:
        try:
            keys = matching_keys(domain, initial, t.entity, t.description)
        except (ExprError, ToolError) as exc:
            return GateResult(False, "ambiguous_target", f"{t.description}: {exc}")
        if keys != [t.key]:
            return GateResult(
                False,
                "ambiguous_target",
                f"{t.phrase!r} matches {len(keys)} {t.entity} rows: {keys[:5]}",
            )
    # 3b. the agent can recognise each target from what the chain shows
    unfit = recognition_problem(domain, initial, run, targets)
    if unfit is not None:
        return unfit
    # 3c. ... and each description still fits its row when a request acts on it
    why = stale_description(domain, initial, chain, targets, execute)
    if why:
        return GateResult(False, "stale_description", why)
    # 4. determinism: the same chain gives the same state and outputs
    again = replay(domain, initial, givens, chain, execute)
    if not again.complete:
        failed = next(s for s in again.steps if s.error)
        return GateResult(
            False,
            "nondeterministic",
            f"re-run failed: call {failed.index} ({failed.call.tool}): {failed.error}",
        )
    if again.final != run.final or again.results != run.results:
        return GateResult(False, "nondeterministic", "re-running the chain gave another result")
    # The rows the chain wrote and the goal names: all the grader reads of a state.
    s0, s1 = changed_views(initial, run.final, [(c.entity, c.key) for c in goal.changes])
    # 5. the state obeys the policy before and after the chain
    why = policy_problem(domain, initial)
    if why:
        return GateResult(False, "policy_violation", f"initial state: {why}")
    why = policy_problem(domain, run.final, since=initial)
    if why:
        return GateResult(False, "policy_violation", f"after the chain: {why}")
    # 6. kind-specific goal checks
    if kind == "action":
        if not goal.changes or changes_hold(s0, goal.model_dump()["changes"]):
            return GateResult(False, "goal_already_true", "the goal holds on the initial state")
        graded = grade(s0, s1, goal.model_dump())
        if not graded["success"]:
            bad = [i for i in graded["items"] if not i["ok"]]
            return GateResult(False, "goal_not_reached", f"{bad[0]['check']}: {bad[0]['detail']}")
        if sum(domain.tools[c.tool].is_write for c in chain) >= 2:
            if ordered and not states_order(instruction):
                return GateResult(
                    False, "order_not_stated", "the task is ordered but the text states no order"
                )
            orders = order_problem(
                domain, initial, givens, chain, goal, ordered=ordered, execute=execute
            )
            if orders.problem or not orders.complete:
                why = orders.problem or f"more than {ORDER_LIMIT} permitted orders"
                return GateResult(False, "order_dependent", why)
    else:
        if state_diff(s0, s1):
            return GateResult(False, "state_changed", f"a {kind} task must change nothing")
        soft: SoftReason | None = None
        if kind == "refusal":  # first: is there anything to refuse at all?
            if refused_call is None:
                return GateResult(False, "bad_chain", "a refusal task names its refused call")
            try:
                chk = failed_check(domain, run.final, refused_call.tool, dict(refused_call.args))
            except ToolError as exc:
                return GateResult(False, "bad_chain", f"refused call is malformed: {exc.message}")
            if chk is None:
                # passing its requires, the call may still soft-fail: then the message
                # it returns is the one true reason (tasks/softrefusal.py)
                soft = soft_reason(domain, run.final, refused_call.tool, refused_call.args)
                if soft is None:
                    return GateResult(
                        False,
                        "refusal_succeeds",
                        f"{refused_call.tool} would succeed: nothing to refuse",
                    )
                true = soft.groups()
                if [soft.message] not in goal.answer_any or any(
                    g not in true for g in goal.answer_any
                ):
                    return GateResult(
                        False,
                        "refusal_reason_wrong",
                        f"{refused_call.tool} soft-fails with {soft.message!r}; the reasons "
                        f"to give are {true!r}, not {goal.answer_any!r}",
                    )
                if all(g == [soft.message] for g in goal.answer_any):
                    return GateResult(
                        False,
                        "refusal_reason_uncitable",
                        f"{refused_call.tool} soft-fails with {soft.message!r}, and only that "
                        "message word for word would pass: no value to give in other words",
                    )
        revealed = {repr(v) for _, v in know.facts_items()} | {repr(r) for r in run.results}
        if soft is not None:
            revealed.add(repr(soft.message))  # the refused call shows it, changing nothing
        for v in [*goal.answer, *(x for group in goal.answer_any for x in group)]:
            if stated(instruction, v):
                # A value the user already said is no answer (nor a reason to refuse).
                return GateResult(False, "answer_in_instruction", f"{v!r} is in the text")
        for v in goal.answer:
            if repr(v) not in revealed:
                return GateResult(False, "answer_not_revealed", f"no call reveals {v!r}")
        if goal.answer_any and not any(
            all(repr(v) in revealed for v in group) for group in goal.answer_any
        ):
            # The agent must be able to see a reason it could give; every true reason
            # counts, as an agent that read more may give another.
            shown = " | ".join(repr(g) for g in goal.answer_any)
            return GateResult(False, "answer_not_revealed", f"no call reveals any of {shown}")
        if not goal.has_answer:
            return GateResult(False, "goal_already_true", "nothing to answer: a no-op passes")
        shortcut = shortcut_check(domain, s0, goal, instruction, run.results)
        if not shortcut.ok:
            return shortcut
    # 7. the task is about the one customer the instruction identifies
    who = identity_problem(domain, initial, run.final, givens, chain, goal, refused_call)
    if who is not None:
        return GateResult(False, *who)
    return GateResult(True)


def check_task(
    domain: Domain, task: Task, execute: Executor = call_or_fail, **override: Any
) -> GateResult:
    """:func:`check_candidate` on a task's own fields; ``override`` replaces some of them
    by name (``instruction=`` a rewrite, ``givens=`` …)."""
    fields: dict[str, Any] = {
        "kind": task.kind,
        "initial": State.from_dict(task.initial_state),
        "chain": task.chain,
        "givens": task.givens,
        "targets": task.targets,
        "instruction": task.instruction,
        "goal": task.goal,
        "refused_call": task.refused_call,
        "ordered": task.ordered,
    }
    fields.update(override)
    return check_candidate(domain, execute=execute, **fields)


def shortcut_check(
    domain: Domain, initial: dict[str, Any], goal: Goal, instruction: str, results: list[Any]
) -> GateResult:
    """Reject a goal that a shortcut answer passes: the instruction echoed back with no
    call made, or a hedge naming every enum member and every value the chain's reads
    show (:mod:`graphgen.tasks.shortcuts`). Such a task grades nothing."""
    g = goal.model_dump()
    if grade(initial, initial, g, echo_answer(instruction))["success"]:
        return GateResult(False, "echo_passes", "repeating the instruction passes")
    hedge = hedge_answer(domain, results)
    if grade(initial, initial, g, hedge)["success"]:
        return GateResult(False, "hedge_passes", f"naming every value seen passes: {hedge[:80]}")
    return GateResult(True)
