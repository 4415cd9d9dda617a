"""Explicit-state search: the shortest chain that reaches a task's goal, found by running
the interpreter on concrete states, breadth first over every call the agent can make.

A second engine for the question :meth:`graphgen.verify.proofs.Prover.shortest` answers
with z3, written from the agent's side only: a call is possible when every argument it
passes is known (a given, or shown by an earlier output, :class:`~graphgen.tasks.plan.Knowledge`
and :func:`~graphgen.knowledge.facts_of_result` exactly as the dry-run uses them); an
optional argument may always be left out; a call that raises changes nothing and shows
nothing, so it is never part of a shortest chain. The goal is checked after every
length with :func:`~graphgen.verify.proofs.goal_holds` (the grader's renaming of created
rows included).

It has no bound on strings, numbers or table sizes; its cost is the number of distinct
(state, knowledge, shown values) nodes, which grows with the branching (tools times known
values per parameter) to the power of the depth. Nodes reached by calls in another
order are one node (two reads in either order show the same values; two writes that
commute end in the same state), which is the reduction that keeps it small. It is exact
on small tasks and gives up, saying so, past ``max_nodes``: it never guesses.

The two engines are cross-checked on random small tasks (``tests/test_explicit_search.py``):
any disagreement is a bug in one of them, as the z3 encoding's refusal of omitted
optional arguments was.

>>> from graphgen.domains import load_builtin
>>> from graphgen.stategen import generate_state
>>> from graphgen.tasks.model import Change, Given, Goal
>>> d = load_builtin("mock")
>>> s = generate_state(d, 0)
>>> key = sorted(s.tables["Account"])[0]
>>> row = s.tables["Account"][key]
>>> goal = Goal(changes=[Change(entity="Account", key=key, field="status",
...                             before=row["status"], after="locked")])
>>> r = shortest_chain(d, s, [Given(sort="field:Account.email", value=row["email"])], goal, 3)
>>> r.complete, r.min_calls, [c.tool for c in r.chain or []]
(True, 2, ['find_account', 'lock_account'])
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from graphgen.domain import Domain, ToolDef
from graphgen.errors import ToolError
from graphgen.interp import call_or_fail
from graphgen.knowledge import facts_of_result, param_sort
from graphgen.state import State
from graphgen.tasks.model import Call, Given, Goal, Task
from graphgen.tasks.plan import Executor, Knowledge
from graphgen.types import OptT, RefT
from graphgen.verify.bmc import ChangesGoal, Recognition, scalars

#: Distinct nodes a search may expand before it gives up (``complete`` false).
MAX_NODES = 20_000


@dataclass(frozen=True)
class SearchResult:
    """The answer: ``min_calls`` and a witness ``chain`` (None and None when no chain of
    at most the bound reaches the goal), ``complete`` false when the search gave up
    before it could say, and the number of nodes it expanded."""

    min_calls: int | None
    chain: list[Call] | None
    complete: bool
    nodes: int


@dataclass
class _Node:
    state: State
    know: Knowledge
    shown: list[Any]
    chain: list[Call]
    # (field sort name, value) outputs showed: what recognising a target takes
    seen: frozenset[tuple[str, Any]] = frozenset()


def moves(domain: Domain, know: Knowledge) -> Iterator[Call]:
    """Every call whose arguments are all known, tools and values in a fixed order; an
    optional parameter is also left out (its default)."""
    for name in sorted(domain.tools):
        tool = domain.tools[name]
        options: list[list[tuple[str, Any]]] = []
        for p in tool.params.values():
            vals: list[tuple[str, Any]] = [
                (p.name, v) for v in sorted(know.values(param_sort(p)), key=_order)
            ]
            if isinstance(p.ty, OptT):
                vals.append((p.name, _OMIT))
            if not vals:
                break
            options.append(vals)
        else:
            for combo in itertools.product(*options):
                yield Call(tool=name, args={p: v for p, v in combo if v is not _OMIT})


def shortest_chain(
    domain: Domain,
    initial: State,
    givens: Sequence[Given],
    goal: Goal,
    upto: int,
    *,
    max_nodes: int = MAX_NODES,
    execute: Executor | None = None,
    recognize: Sequence[Recognition] = (),
) -> SearchResult:
    """The shortest chain of at most ``upto`` calls after which ``goal`` holds (its
    changes, and each of its answers shown by an output or given).

    Breadth first: every node at depth ``j`` is the end of some chain of ``j``
    successful calls, so the first depth at which the goal holds is the minimum. A write
    may name a target of ``recognize`` only once outputs showed the values its
    description rests on (:func:`graphgen.verify.proofs.recognitions`), as in the
    proofs' model of the agent."""
    from graphgen.verify.proofs import goal_holds  # proofs may use this module

    run = execute or call_or_fail
    given = list(givens)
    want = ChangesGoal(list(goal.changes), list(goal.answer))
    root = _Node(initial.copy(), Knowledge.from_givens(given), [], [])
    if goal_holds(want, root.state, root.shown, given, initial):
        return SearchResult(0, [], True, 1)
    seen = {_fingerprint(root)}
    layer = [root]
    expanded = 0
    for depth in range(1, upto + 1):
        nxt: list[_Node] = []
        for node in layer:
            expanded += 1
            if expanded > max_nodes:
                return SearchResult(None, None, False, expanded)
            for call in moves(domain, node.know):
                tool = domain.tools[call.tool]
                if not _recognised(tool, call, recognize, node.seen):
                    continue
                st = node.state.copy()
                try:
                    result = run(domain, st, call.tool, dict(call.args))
                except ToolError:
                    continue  # a failing call changes nothing and shows nothing
                child = _child(domain, tool, node, st, call, result, depth)
                fp = _fingerprint(child)
                if fp in seen:
                    continue
                seen.add(fp)
                if goal_holds(want, child.state, child.shown, given, initial):
                    return SearchResult(depth, child.chain, True, expanded)
                nxt.append(child)
        layer = nxt
        if not layer:
            break
    return SearchResult(None, None, True, expanded)


def _child(
    domain: Domain,
    tool: ToolDef,
    node: _Node,
    st: State,
    call: Call,
    result: Any,
    depth: int,
) -> _Node:
    know = node.know.copy()
    for s, v in facts_of_result(domain, tool, result):
        know.add(s, v, depth - 1)
    from graphgen.verify.proofs import search_facts

    shown = node.shown + (list(scalars(result)) if tool.returns is not None else [])
    seen = set(node.seen)
    for s, v in facts_of_result(domain, tool, result):
        if s.kind == "field":
            seen.add((s.name, _hashable(v)))
    seen.update((name, _hashable(v)) for name, v in search_facts(tool, call.args, result))
    return _Node(st, know, shown, [*node.chain, call], frozenset(seen))


def _recognised(
    tool: ToolDef, call: Call, recognize: Sequence[Recognition], seen: frozenset[tuple[str, Any]]
) -> bool:
    """A write names no target whose description's values no output has shown yet."""
    if not tool.is_write or not recognize:
        return True
    for p, v in call.args.items():
        pd = tool.params[p]
        if not isinstance(pd.ty, RefT):
            continue
        for r in recognize:
            named = r.entity == pd.ty.entity and r.key == v
            if named and any((f"{e}.{f}", _hashable(x)) not in seen for e, f, x in r.atoms):
                return False
    return True


class _Omit:
    def __repr__(self) -> str:
        return "<omitted>"


_OMIT = _Omit()


def _order(v: Any) -> tuple[str, str]:
    return (type(v).__name__, repr(v))


def _fingerprint(node: _Node) -> tuple[str, frozenset[Any], frozenset[str], frozenset[Any]]:
    """What decides a node's future: its state, what the agent knows (origins aside),
    the values shown so far (as text: they may be unhashable) and the fields seen."""
    facts = frozenset((s, _hashable(v)) for s, v in node.know.facts_items())
    shown = frozenset(json.dumps(v, sort_keys=True, default=str) for v in node.shown)
    return node.state.to_json(indent=None), facts, shown, node.seen


def _hashable(v: Any) -> Any:
    try:
        hash(v)
    except TypeError:
        return json.dumps(v, sort_keys=True, default=str)
    return v


def task_shortest(
    domain: Domain, task: Task, upto: int | None = None, *, max_nodes: int = MAX_NODES
) -> SearchResult:
    """:func:`shortest_chain` for ``task`` as the proofs see it: the agent's givens
    (enum members the instruction states included, :func:`~graphgen.verify.proofs.agent_givens`),
    its targets to recognise (none for a target whose id the user gives), and at most
    ``upto`` calls (default: the reference chain's length)."""
    from graphgen.verify.proofs import agent_givens, recognitions

    initial = State.from_dict(task.initial_state, domain)
    givens = agent_givens(domain, task)
    given_keys = {(g.sort, repr(g.value)) for g in givens}
    recognize = [
        r
        for r in recognitions(domain, task.targets, initial)
        if (f"key:{r.entity}", repr(r.key)) not in given_keys
    ]
    bound = len(task.chain) if upto is None else upto
    return shortest_chain(
        domain, initial, givens, task.goal, bound, max_nodes=max_nodes, recognize=recognize
    )
