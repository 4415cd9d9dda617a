"""What a task set exercises in its domain: one plain function per measure.

Every measure takes the domain and the tasks (and, where it needs one, the dependency
graph of :func:`graphgen.graph.build_graph`) and returns a :class:`Coverage`: the items
it counts, how often each was exercised, and the items never exercised. The
distributions (:func:`length_distribution`) return plain counts. :func:`coverage` runs
them all for ``graphgen coverage``.

* :func:`tool_coverage` — tools called in reference chains;
* :func:`branch_coverage` — preconditions of write tools a refusal's request fails;
* :func:`enables_coverage` — ``enables`` edges of the graph a chain walks;
* :func:`enum_coverage` — enum members passed as arguments or set or cleared by goals;
* :func:`state_diversity` — distinct initial states, by content hash;
* :func:`length_distribution` — chain length and proven minimum per kind.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import networkx as nx

from graphgen.domain import Domain, ToolDef, canonical_json
from graphgen.errors import ToolError
from graphgen.graph import build_graph
from graphgen.interp import call_or_fail, check_args, evaluate
from graphgen.state import State
from graphgen.tasks.model import Task
from graphgen.types import EnumT

__all__ = [
    "Coverage",
    "CoverageReport",
    "branch_coverage",
    "coverage",
    "enables_coverage",
    "enum_coverage",
    "failing_branches",
    "length_distribution",
    "state_diversity",
    "tool_coverage",
]


@dataclass(frozen=True)
class Coverage:
    """One measure: how often each item was exercised (0 = never), in a fixed order."""

    name: str
    counts: dict[str, int]
    """item → number of tasks (or calls, see the measure) that exercised it."""
    notes: dict[str, str] = field(default_factory=dict)
    """item → what it is (e.g. a precondition's source text), where that helps."""

    @property
    def covered(self) -> list[str]:
        """Items exercised at least once."""
        return [k for k, v in self.counts.items() if v > 0]

    @property
    def uncovered(self) -> list[str]:
        """Items never exercised."""
        return [k for k, v in self.counts.items() if v == 0]

    @property
    def ratio(self) -> float:
        """Share of items exercised (1.0 when there is nothing to exercise)."""
        return len(self.covered) / len(self.counts) if self.counts else 1.0

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON data (``graphgen coverage --json``)."""
        return {
            "covered": len(self.covered),
            "total": len(self.counts),
            "ratio": self.ratio,
            "counts": dict(self.counts),
            "uncovered": self.uncovered,
            **({"notes": dict(self.notes)} if self.notes else {}),
        }


def tool_coverage(domain: Domain, tasks: Sequence[Task]) -> Coverage:
    """Calls of each tool in the tasks' reference chains.

    Parameters
    ----------
    domain : Domain
        The domain of the tasks.
    tasks : sequence of Task
        The task set.

    Returns
    -------
    Coverage
        One item per tool of the domain, in declaration order, counting calls (a chain
        that calls a tool twice counts twice). A refusal's refused call is not made, so
        it does not count (see :func:`branch_coverage`).

    Examples
    --------
    >>> from graphgen.domains import load_builtin
    >>> from graphgen.tasks.taskset import generate
    >>> d = load_builtin("mock")
    >>> cov = tool_coverage(d, generate(d, 4, 0).tasks)
    >>> sorted(cov.counts) == sorted(d.tools), cov.counts["find_account"] > 0
    (True, True)
    """
    used = Counter(c.tool for t in tasks for c in t.chain)
    return Coverage("tools", {name: used[name] for name in domain.tools})


def _branch(tool: ToolDef, i: int) -> str:
    return f"{tool.name}.requires[{i}]"


def failing_branches(domain: Domain, task: Task) -> list[str]:
    """The preconditions a refusal's refused call fails, after its reference chain.

    Every precondition of the refused tool is evaluated on the state the chain leaves
    (not only the first one, which is the one an agent is told about): a request can be
    refused for several reasons at once. A precondition that cannot be evaluated (it
    names a missing row) fails, as it does in a call. Empty for other kinds of task.

    Parameters
    ----------
    domain : Domain
        The domain of the task.
    task : Task
        A task; only refusals have a refused call.

    Returns
    -------
    list of str
        Branch names ``tool.requires[i]``, in declaration order; ``tool.arguments`` when
        the arguments themselves are rejected (an id naming no row).

    Examples
    --------
    >>> from graphgen.domains import load_builtin
    >>> from graphgen.tasks.taskset import generate
    >>> d = load_builtin("mock")
    >>> [failing_branches(d, t) for t in generate(d, 2, 0).tasks]
    [[], []]
    """
    call = task.refused_call
    if call is None:
        return []
    st = State.from_dict(task.initial_state)
    for c in task.chain:
        try:
            call_or_fail(domain, st, c.tool, c.args)
        except ToolError as exc:
            raise ValueError(
                f"task {task.id}: reference call {c.tool}({c.args}) fails: {exc.message}"
            ) from None
    tool = domain.tools[call.tool]
    try:
        env = check_args(tool, call.args, st)
    except ToolError:
        return [f"{tool.name}.arguments"]
    out = []
    for i, chk in enumerate(tool.requires):
        try:
            ok = bool(evaluate(chk.expr, st, dict(env), domain))
        except ToolError:
            ok = False
        if not ok:
            out.append(_branch(tool, i))
    return out


def branch_coverage(domain: Domain, tasks: Sequence[Task]) -> Coverage:
    """Preconditions of write tools exercised by refusals.

    A refusal exercises every precondition its refused call fails
    (:func:`failing_branches`); a precondition no refusal fails is a way of saying no
    that the task set never tests.

    Parameters
    ----------
    domain : Domain
        The domain of the tasks.
    tasks : sequence of Task
        The task set (tasks other than refusals exercise no branch).

    Returns
    -------
    Coverage
        One item ``tool.requires[i]`` per precondition of each write tool, counting the
        refusals that fail it; ``notes`` holds each one's source text.

    Examples
    --------
    >>> from graphgen.domains import load_builtin
    >>> cov = branch_coverage(load_builtin("mock"), [])
    >>> cov.uncovered
    ['deposit.requires[0]', 'pay.requires[0]', 'pay.requires[1]', 'lock_account.requires[0]']
    >>> cov.notes["pay.requires[1]"]
    'Account[account_id].balance >= amount'
    """
    counts: dict[str, int] = {}
    notes: dict[str, str] = {}
    for tool in domain.write_tools:
        for i, chk in enumerate(tool.requires):
            counts[_branch(tool, i)] = 0
            notes[_branch(tool, i)] = chk.source
    for t in tasks:
        for b in failing_branches(domain, t):
            counts[b] = counts.get(b, 0) + 1
    return Coverage("branches", counts, notes)


def _enables_edges(graph: nx.MultiDiGraph) -> list[tuple[str, str]]:
    return sorted(
        (str(graph.nodes[u]["name"]), str(graph.nodes[v]["name"]))
        for u, v, k in graph.edges(data="kind")
        if k == "enables"
    )


def enables_coverage(
    domain: Domain, tasks: Sequence[Task], graph: nx.MultiDiGraph | None = None
) -> Coverage:
    """``enables`` edges of the dependency graph that reference chains walk.

    The edge *A enables B* is exercised by a task whose chain calls A and later B: the
    task can only be solved in an order the edge allows for. A task counts once per
    edge, however many such pairs its chain holds.

    Parameters
    ----------
    domain : Domain
        The domain of the tasks.
    tasks : sequence of Task
        The task set.
    graph : networkx.MultiDiGraph, optional
        The domain's dependency graph (built when not given).

    Returns
    -------
    Coverage
        One item ``"A -> B"`` per enables edge, sorted, counting tasks.

    Examples
    --------
    >>> from graphgen.domains import load_builtin
    >>> cov = enables_coverage(load_builtin("mock"), [])
    >>> list(cov.counts), cov.ratio
    (['deposit -> pay', 'pay -> deposit'], 0.0)
    """
    g = graph if graph is not None else build_graph(domain)
    edges = _enables_edges(g)
    counts = {f"{a} -> {b}": 0 for a, b in edges}
    wanted = set(edges)
    for t in tasks:
        seen: set[tuple[str, str]] = set()
        names = [c.tool for c in t.chain]
        for i, a in enumerate(names):
            for b in names[i + 1 :]:
                if (a, b) in wanted:
                    seen.add((a, b))
        for a, b in seen:
            counts[f"{a} -> {b}"] += 1
    return Coverage("enables", counts)


def _enum_types(domain: Domain) -> dict[str, EnumT]:
    found: dict[str, EnumT] = dict(domain.enums)
    for ent in domain.entities.values():
        for f in ent.fields.values():
            if isinstance(f.ty, EnumT):
                found.setdefault(f.ty.name, f.ty)
    for tool in domain.tools.values():
        for p in tool.params.values():
            if isinstance(p.ty, EnumT):
                found.setdefault(p.ty.name, p.ty)
    return found


def enum_coverage(domain: Domain, tasks: Sequence[Task]) -> Coverage:
    """Enum members the tasks use.

    A member of enum ``N`` is exercised by a task that passes it as an argument of type
    ``N`` (in the chain or the refused call), or whose goal changes a field of type
    ``N`` from or to it (a status moving from ``pending`` to ``cancelled`` exercises
    both). A task counts once per member.

    Parameters
    ----------
    domain : Domain
        The domain of the tasks.
    tasks : sequence of Task
        The task set.

    Returns
    -------
    Coverage
        One item ``"N=member"`` per member of every enum type of the domain (named
        enums and the anonymous ones of fields and parameters), counting tasks.

    Examples
    --------
    >>> from graphgen.domains import load_builtin
    >>> list(enum_coverage(load_builtin("mock"), []).counts)
    ['Account.status=active', 'Account.status=locked']
    """
    types = _enum_types(domain)
    counts = {f"{n}={v}": 0 for n, ty in types.items() for v in ty.values}
    for t in tasks:
        hit: set[str] = set()
        calls = [*t.chain, *([t.refused_call] if t.refused_call else [])]
        for c in calls:
            tool = domain.tools.get(c.tool)
            if tool is None:
                continue
            for pname, value in c.args.items():
                p = tool.params.get(pname)
                if p is not None and isinstance(p.ty, EnumT):
                    hit.add(f"{p.ty.name}={value}")
        for ch in t.goal.changes:
            ent = domain.entities.get(ch.entity)
            fd = ent.fields.get(ch.field) if ent else None
            if fd is not None and isinstance(fd.ty, EnumT):
                for v in (ch.before, ch.after):
                    if v is not None:
                        hit.add(f"{fd.ty.name}={v}")
        for h in hit:
            if h in counts:
                counts[h] += 1
    return Coverage("enum values", counts)


def _state_hash(state: dict[str, Any]) -> str:
    return hashlib.sha256(canonical_json(state).encode()).hexdigest()[:16]


def state_diversity(tasks: Sequence[Task]) -> dict[str, int]:
    """Distinct initial states of a task set, by content hash.

    Parameters
    ----------
    tasks : sequence of Task
        The task set.

    Returns
    -------
    dict
        State hash (sha256 of the canonical JSON, 16 hex digits) → number of tasks
        starting from that state, most used first (ties by hash).

    Examples
    --------
    >>> from graphgen.domains import load_builtin
    >>> from graphgen.tasks.taskset import generate
    >>> len(state_diversity(generate(load_builtin("mock"), 3, 0).tasks))
    1
    """
    hashes = Counter(_state_hash(t.initial_state) for t in tasks)
    return dict(sorted(hashes.items(), key=lambda kv: (-kv[1], kv[0])))


def length_distribution(tasks: Sequence[Task]) -> dict[str, dict[str, dict[int, int]]]:
    """How many tasks have each chain length and each proven minimum, per kind.

    Parameters
    ----------
    tasks : sequence of Task
        The task set.

    Returns
    -------
    dict
        ``{"length": {kind: {n: tasks}}, "min_calls": {kind: {n: tasks}}}`` with a kind
        ``"all"`` too; counts sorted by ``n``. ``length`` is the reference chain's
        length (``difficulty``), ``min_calls`` the proven minimum (equal to the length
        in a set made without proofs).

    Examples
    --------
    >>> from graphgen.domains import load_builtin
    >>> from graphgen.tasks.taskset import generate
    >>> dist = length_distribution(generate(load_builtin("mock"), 3, 0).tasks)
    >>> sum(dist["length"]["all"].values())
    3
    """
    out: dict[str, dict[str, dict[int, int]]] = {}
    for measure in ("length", "min_calls"):
        per: dict[str, Counter[int]] = {}
        for t in tasks:
            n = t.difficulty if measure == "length" else t.min_calls
            for kind in (t.kind, "all"):
                per.setdefault(kind, Counter())[n] += 1
        out[measure] = {k: dict(sorted(c.items())) for k, c in sorted(per.items())}
    return out


@dataclass(frozen=True)
class CoverageReport:
    """Every measure of one task set (what ``graphgen coverage`` prints)."""

    domain: str
    tasks: int
    tools: Coverage
    branches: Coverage
    enables: Coverage
    enums: Coverage
    states: dict[str, int]
    lengths: dict[str, dict[str, dict[int, int]]]
    refusals: dict[str, list[str]]
    """refusal task id → the branches it exercises."""

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON data."""
        return {
            "domain": self.domain,
            "tasks": self.tasks,
            "tools": self.tools.to_dict(),
            "branches": self.branches.to_dict(),
            "enables": self.enables.to_dict(),
            "enums": self.enums.to_dict(),
            "states": {"distinct": len(self.states), "tasks_per_state": self.states},
            "lengths": {
                m: {k: {str(n): c for n, c in d.items()} for k, d in per.items()}
                for m, per in self.lengths.items()
            },
            "refusals": self.refusals,
        }


def coverage(
    domain: Domain, tasks: Sequence[Task], graph: nx.MultiDiGraph | None = None
) -> CoverageReport:
    """Every measure of this module on one task set.

    Examples
    --------
    >>> from graphgen.domains import load_builtin
    >>> from graphgen.tasks.taskset import generate
    >>> d = load_builtin("mock")
    >>> rep = coverage(d, generate(d, 6, 0).tasks)
    >>> rep.tasks, rep.tools.ratio > 0
    (6, True)
    """
    g = graph if graph is not None else build_graph(domain)
    if g.graph.get("content_hash") != domain.content_hash:
        raise ValueError(f"the graph given is not the graph of domain {domain.name!r}")
    return CoverageReport(
        domain.name,
        len(tasks),
        tool_coverage(domain, tasks),
        branch_coverage(domain, tasks),
        enables_coverage(domain, tasks, g),
        enum_coverage(domain, tasks),
        state_diversity(tasks),
        length_distribution(tasks),
        {t.id: failing_branches(domain, t) for t in tasks if t.refused_call is not None},
    )
