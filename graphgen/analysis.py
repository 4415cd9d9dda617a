"""Static analyses over a domain's dependency graph, and the report ``graphgen check`` prints.

All functions are plain and deterministic (sorted output). They read the graph built by
:func:`graphgen.graph.build_graph`, so they see exactly what task expansion sees.

Satisfiability is the one analysis this package cannot do alone: deciding whether a
write tool can ever succeed needs a solver, and the solver lives in ``verify`` (a later
stage, which ``graphgen`` must not import). So :func:`report` takes it as a parameter,
``sat_checker``: a function ``(domain) -> iterable of tool names`` returning the write
tools whose preconditions and effect invariants no valid state satisfies. Without one
the report says "not checked". The pipeline (:mod:`graphgen.pipeline`) passes
:func:`graphgen.verify.satcheck.unsatisfiable_writes`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import networkx as nx
from pydantic import BaseModel, Field

from graphgen.domain import Domain
from graphgen.graph import build_graph
from graphgen.limits import WARN_EXPR_COST, domain_costs

SatChecker = Callable[[Domain], Iterable[str]]


def _unsatisfiable(domain: Domain, sat_checker: SatChecker) -> list[str]:
    """The write tools ``sat_checker`` reports, sorted; a name that is not a write tool of
    ``domain`` is a bug in the checker and raises ``ValueError``."""
    names = set(sat_checker(domain))
    bad = sorted(names - {t.name for t in domain.write_tools})
    if bad:
        raise ValueError(
            f"{domain.source}: sat checker {getattr(sat_checker, '__name__', sat_checker)!r} "
            f"reported {', '.join(bad)}, which are not write tools of domain {domain.name!r}"
        )
    return sorted(names)


# ------------------------------------------------------------------ graph helpers


def _nodes(g: nx.MultiDiGraph, kind: str) -> list[str]:
    return sorted(n for n, k in g.nodes(data="kind") if k == kind)


def _tool_name(g: nx.MultiDiGraph, node: str) -> str:
    return str(g.nodes[node]["name"])


def _field_name(node: str) -> str:
    return node.removeprefix("state:")


def unreachable_tools(domain: Domain, g: nx.MultiDiGraph) -> list[str]:
    """Tools an agent can never call, because some argument can never be known.

    A fixpoint over the graph's ``data`` edges. Known sorts start as the ``givable``
    sort nodes (:func:`graphgen.knowledge.givable_sorts`, every ``free:*`` and every
    ``enum:*`` sort); a tool is callable once all its parameter sorts are known, and a
    callable tool makes the sorts it produces known. Preconditions are ignored: this is
    about *knowing* the arguments, not about the state.
    """
    known = {n for n in _nodes(g, "sort") if g.nodes[n].get("givable")}
    tools = _nodes(g, "tool")
    needs = {t: {u for u, _, k in g.in_edges(t, data="kind") if k == "data"} for t in tools}
    callable_: set[str] = set()
    changed = True
    while changed:
        changed = False
        for t in tools:
            if t in callable_ or not needs[t] <= known:
                continue
            callable_.add(t)
            changed = True
            known |= {v for _, v, k in g.out_edges(t, data="kind") if k == "data"}
    missing = sorted(_tool_name(g, t) for t in tools if t not in callable_)
    unknown = sorted(set(missing) - set(domain.tools))
    if unknown:
        raise ValueError(f"graph has tools {unknown} that domain {domain.name!r} lacks")
    return missing


def unread_fields(domain: Domain, g: nx.MultiDiGraph) -> list[str]:
    """State fields (``E.f``; ``E.*`` = which rows exist) that no precondition, effect or
    return value reads: nothing an agent does or sees depends on them."""
    out = []
    for n in _nodes(g, "state"):
        if not any(k in ("reads", "queries") for _, _, k in g.out_edges(n, data="kind")):
            out.append(_field_name(n))
    _check_fields(domain, out)
    return out


def _unwritten(domain: Domain, g: nx.MultiDiGraph) -> list[str]:
    out = []
    for n in _nodes(g, "state"):
        if not any(k == "writes" for _, _, k in g.in_edges(n, data="kind")):
            out.append(_field_name(n))
    _check_fields(domain, out)
    return out


def unwritten_fields(domain: Domain, g: nx.MultiDiGraph) -> list[str]:
    """State fields (``E.f``) no tool writes, through any lookup (a parameter, a
    literal key such as ``Session['S1'].user_id``, a comprehension's row).

    Informational: reference data (names, prices) is meant to be static, but a field
    that a precondition tests and no tool writes can never change that test's outcome.
    Tables whose rows no tool creates or deletes are :func:`fixed_tables`, not fields:
    the graph's ``E.*`` node stands for which rows exist.
    """
    return [f for f in _unwritten(domain, g) if not f.endswith(".*")]


def fixed_tables(domain: Domain, g: nx.MultiDiGraph) -> list[str]:
    """Tables no tool creates rows in or deletes rows from (their fields may still be
    written: a session table of one row whose user a login sets)."""
    return [f[: -len(".*")] for f in _unwritten(domain, g) if f.endswith(".*")]


def unexplained_checks(domain: Domain) -> list[str]:
    """Preconditions without a ``message:``: a failing one tells the agent only that the
    request is not possible (the condition itself is never shown to it)."""
    return [
        f"{t.name} requires[{i}]"
        for t in domain.tools.values()
        for i, c in enumerate(t.requires)
        if not c.message.strip()
    ]


def silent_writes(domain: Domain) -> list[str]:
    """Write tools without ``returns``: they answer a bare ``ok`` instead of what changed."""
    return [t.name for t in domain.write_tools if t.returns is None]


def _check_fields(domain: Domain, names: list[str]) -> None:
    for name in names:
        ent, _, f = name.partition(".")
        if ent not in domain.entities or (f != "*" and f not in domain.entities[ent].fields):
            raise ValueError(f"graph field {name!r} is not in domain {domain.name!r}")


ToolEdgeKinds = tuple[str, ...]


def tool_graph(g: nx.MultiDiGraph, kinds: ToolEdgeKinds = ("data", "enables")) -> nx.DiGraph:
    """Tools only, named by tool name: ``a → b`` when ``a`` produces a sort ``b`` takes
    (``"data"`` in ``kinds``) or ``a`` enables ``b`` (``"enables"`` in ``kinds``). The
    edge attribute ``kinds`` lists which relations hold."""
    t = nx.DiGraph()
    for n in _nodes(g, "tool"):
        t.add_node(_tool_name(g, n))

    def link(a: str, b: str, kind: str) -> None:
        u, v = _tool_name(g, a), _tool_name(g, b)
        if t.has_edge(u, v):
            t.edges[u, v]["kinds"] = sorted({*t.edges[u, v]["kinds"], kind})
        else:
            t.add_edge(u, v, kinds=[kind])

    for a in _nodes(g, "tool"):
        for _, x, k in sorted(g.out_edges(a, data="kind")):
            if k == "data" and "data" in kinds:
                for _, b, k2 in sorted(g.out_edges(x, data="kind")):
                    if k2 == "data":
                        link(a, b, "data")
            elif k == "enables" and "enables" in kinds:
                link(a, x, "enables")
    return t


def strongly_connected(
    g: nx.MultiDiGraph, kinds: ToolEdgeKinds = ("data", "enables")
) -> list[list[str]]:
    """Strongly connected sets of more than one tool in :func:`tool_graph` (``kinds``).

    Each is a sorted list of tool names; the list is sorted. Over data and enables edges
    most domains form one big component (a details tool returns the ids a lookup took);
    over ``("enables",)`` alone a component is a set of writes that can keep re-enabling
    each other, so chains through it must be bounded.
    """
    comps = nx.strongly_connected_components(tool_graph(g, kinds))
    return sorted(sorted(c) for c in comps if len(c) > 1)


# ------------------------------------------------------------------ report


class Report(BaseModel):
    """Everything ``graphgen check`` prints about one domain."""

    domain: str
    source: str
    content_hash: str
    counts: dict[str, int] = Field(
        description="tools, write_tools, read_tools, sorts, state_fields, and edges_<kind>"
    )
    unreachable_tools: list[str]
    unsatisfiable_writes: list[str]
    sat_checked: bool = Field(description="whether a satisfiability checker was given")
    unread_fields: list[str]
    unwritten_fields: list[str]
    unexplained_checks: list[str] = Field(
        default_factory=list, description="preconditions without a message for the agent"
    )
    silent_writes: list[str] = Field(
        default_factory=list, description="write tools that return a bare 'ok'"
    )
    costly_expressions: list[str] = Field(
        default_factory=list,
        description="expressions estimated above WARN_EXPR_COST evaluation steps",
    )
    cycles: list[list[str]] = Field(description="SCCs of the tool graph (data + enables)")
    enable_cycles: list[list[str]] = Field(description="SCCs over enables edges alone")
    fixed_tables: list[str] = Field(
        default_factory=list, description="tables no tool creates or deletes rows of"
    )

    @property
    def ok(self) -> bool:
        """No tool is unreachable or unsatisfiable (the other findings are advisory)."""
        return not self.unreachable_tools and not self.unsatisfiable_writes

    def findings(self) -> dict[str, list[str]]:
        """Check name → items, in a fixed order, for a table."""
        return {
            "unreachable tools": self.unreachable_tools,
            "unsatisfiable write tools": (
                self.unsatisfiable_writes if self.sat_checked else ["(not checked)"]
            ),
            "unread fields": self.unread_fields,
            "unwritten fields": self.unwritten_fields,
            "tables no tool adds or removes rows of": self.fixed_tables,
            "checks without a message": self.unexplained_checks,
            "writes that return only 'ok'": self.silent_writes,
            f"costly expressions (> {WARN_EXPR_COST} steps)": self.costly_expressions,
            "tool cycles (data + enables)": ["{" + ", ".join(c) + "}" for c in self.cycles],
            "enables cycles": ["{" + ", ".join(c) + "}" for c in self.enable_cycles],
        }


def costly_expressions(domain: Domain) -> list[str]:
    """Expressions whose estimated cost (:func:`~graphgen.limits.domain_costs`) is above
    :data:`~graphgen.limits.WARN_EXPR_COST`: tool calls or state generation will be slow.
    Above :data:`~graphgen.limits.MAX_EXPR_COST` the domain does not load at all."""
    return [
        f"{where}: about {cost} steps"
        for where, _, cost in domain_costs(domain)
        if cost > WARN_EXPR_COST
    ]


def report(
    domain: Domain, g: nx.MultiDiGraph | None = None, *, sat_checker: SatChecker | None = None
) -> Report:
    """Build the graph (unless given) and run every analysis on ``domain``.

    ``sat_checker`` finds the write tools that can never succeed (see the module
    docstring); without it ``unsatisfiable_writes`` is empty and ``sat_checked`` false.

    >>> from graphgen.domains import load_builtin
    >>> r = report(load_builtin("mock"))
    >>> r.unreachable_tools, r.sat_checked
    ([], False)
    """
    if g is None:
        g = build_graph(domain)
    counts = {
        "tools": len(domain.tools),
        "write_tools": len(domain.write_tools),
        "read_tools": len(domain.read_tools),
        "sorts": len(_nodes(g, "sort")),
        "state_fields": len(_nodes(g, "state")),
    }
    for kind in ("data", "reads", "queries", "writes", "enables"):
        counts[f"edges_{kind}"] = sum(1 for *_, k in g.edges(data="kind") if k == kind)
    return Report(
        domain=domain.name,
        source=domain.source,
        content_hash=domain.content_hash,
        counts=counts,
        unreachable_tools=unreachable_tools(domain, g),
        unsatisfiable_writes=_unsatisfiable(domain, sat_checker) if sat_checker else [],
        sat_checked=sat_checker is not None,
        unread_fields=unread_fields(domain, g),
        unwritten_fields=unwritten_fields(domain, g),
        unexplained_checks=unexplained_checks(domain),
        silent_writes=silent_writes(domain),
        costly_expressions=costly_expressions(domain),
        cycles=strongly_connected(g),
        enable_cycles=strongly_connected(g, ("enables",)),
        fixed_tables=fixed_tables(domain, g),
    )
