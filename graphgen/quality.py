"""What will hurt task quality: the analyses of ``graphgen check --strict``.

:mod:`graphgen.analysis` reports what is *wrong* with a domain (a tool no agent can
call, a write no state allows). A domain can pass all of that and still make poor tasks:
a tool no task ever uses, a field nothing reads, a write that can never be refused, an
enum member no state holds, an entity users name but no tool can find. These functions
find those, each as a :class:`Finding` naming the domain file, the tool or field (with
its line when the file is at hand) and a fix in plain words.

All are plain functions over the domain and its dependency graph
(:func:`graphgen.graph.build_graph`), deterministic (sorted output), like those of
:mod:`graphgen.analysis`. Two of them also look at generated states
(:func:`graphgen.stategen.generate_state`, fixed seeds): whether a precondition can fail
on realistic data, and which enum members realistic data holds.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import networkx as nx

from graphgen import ir
from graphgen.analysis import unreachable_tools
from graphgen.decimals import from_units, units
from graphgen.domain import Domain, ParamDef, ToolDef
from graphgen.errors import DomainError, GraphgenError, ToolError
from graphgen.footprint import FieldRef, reads
from graphgen.graph import build_graph, sort_node, state_node, tool_node
from graphgen.interp import failed_check
from graphgen.knowledge import key_sort, param_sort
from graphgen.load import _lines
from graphgen.state import State
from graphgen.stategen import generate_state
from graphgen.types import BOOL, DATE, INT, STR, DecT, EnumT, ListT, RefT

__all__ = [
    "STRICT_SEEDS",
    "Finding",
    "missing_search_tools",
    "strict_findings",
    "task_unreachable_tools",
    "ungraded_parameters",
    "unmentioned_fields",
    "unreachable_enum_members",
    "writes_without_refusal",
]

STRICT_SEEDS = (0, 1, 2)
"""Seeds of the generated states the data-driven analyses look at."""

SAMPLES_PER_STATE = 64
"""Random calls per write tool and state tried by :func:`writes_without_refusal`."""


@dataclass(frozen=True)
class Finding:
    """One thing that will hurt task quality, located, with what to do about it.

    >>> f = Finding("unused field", "shop.yaml", "field 'Order.note' (line 40)",
    ...             "no tool reads or writes it", "use it in a tool, or remove it")
    >>> print(f)
    shop.yaml: field 'Order.note' (line 40): unused field: no tool reads or writes it
        fix: use it in a tool, or remove it
    """

    check: str
    file: str
    where: str
    message: str
    fix: str

    def __str__(self) -> str:
        return f"{self.file}: {self.where}: {self.check}: {self.message}\n    fix: {self.fix}"


class _Where:
    """Names tools and fields with the line of their tool or entity in the domain file
    (when ``domain.source`` is a readable file)."""

    def __init__(self, domain: Domain) -> None:
        self.lines: dict[tuple[str, str], int] = {}
        path = Path(domain.source)
        try:
            if path.is_file():
                self.lines = _lines(path.read_text(encoding="utf-8"))[0]
        except (OSError, UnicodeDecodeError, DomainError):
            pass  # a location is a help, not a requirement

    def _at(self, section: str, name: str, what: str = "line") -> str:
        line = self.lines.get((section, name))
        return f" ({what} {line})" if line else ""

    def tool(self, name: str) -> str:
        return f"tool {name!r}{self._at('tools', name)}"

    def field(self, entity: str, name: str) -> str:
        return f"field '{entity}.{name}'{self._at('entities', entity, 'its entity at line')}"

    def entity(self, entity: str) -> str:
        return f"entity {entity!r}{self._at('entities', entity)}"


def _finding(domain: Domain, check: str, where: str, message: str, fix: str) -> Finding:
    return Finding(check, domain.source, where, message, fix)


# ------------------------------------------------------------------ tools


def task_unreachable_tools(domain: Domain, g: nx.MultiDiGraph | None = None) -> list[Finding]:
    """Tools no task can use.

    A tool is out of reach of every task when an agent can never know one of its
    arguments (:func:`graphgen.analysis.unreachable_tools`); when it is a write without
    ``intents`` (no instruction can ask for it, so it is never a goal nor a refusal); or
    when it is a read without ``intents`` whose output feeds no other tool (no question
    asks for it and no chain needs it).

    >>> from graphgen.load import loads_domain
    >>> d = loads_domain('''
    ... name: t
    ... description: d
    ... policy: p
    ... entities:
    ...   A:
    ...     key: {name: a_id, prefix: "A", width: 2}
    ...     fields: {n: {type: int, min: 0, max: 9}}
    ... tools:
    ...   bump:
    ...     description: Bump.
    ...     params: {a_id: {type: A}}
    ...     effects: ["A[a_id].n += 1"]
    ... ''')
    >>> [f.where for f in task_unreachable_tools(d)]
    ["tool 'bump'"]
    """
    g = build_graph(domain) if g is None else g
    where = _Where(domain)
    out: list[Finding] = []
    for name in unreachable_tools(domain, g):
        out.append(
            _finding(
                domain,
                "tool no task can reach",
                where.tool(name),
                "an agent can never know some argument of it: no user can give it and no "
                "tool returns it",
                "mark the field users know as givable: true, or add a read tool that "
                "returns the missing ids or values",
            )
        )
    unknowable = set(unreachable_tools(domain, g))
    for t in sorted(domain.tools.values(), key=lambda t: t.name):
        if t.name in unknowable or t.intents:
            continue
        if t.is_write:
            out.append(
                _finding(
                    domain,
                    "tool no task can reach",
                    where.tool(t.name),
                    "a write tool without intents: no instruction can ask for it, so it is "
                    "never the goal of an action or a refusal task",
                    "add intents: requests in the user's voice that name every parameter, "
                    'e.g. "Please ... {param}."',
                )
            )
        elif not _feeds_a_tool(g, t.name):
            out.append(
                _finding(
                    domain,
                    "tool no task can reach",
                    where.tool(t.name),
                    "a read tool without intents whose output no other tool takes: no "
                    "question asks for it and no chain needs it",
                    "add intents (questions it answers), or return ids another tool takes",
                )
            )
    return out


def _feeds_a_tool(g: nx.MultiDiGraph, tool: str) -> bool:
    """Whether some sort ``tool`` produces is a parameter sort of another tool."""
    tn = tool_node(tool)
    for _, sort, k in g.out_edges(tn, data="kind"):
        if k != "data":
            continue
        if any(k2 == "data" and t2 != tn for _, t2, k2 in g.out_edges(sort, data="kind")):
            return True
    return False


# ------------------------------------------------------------------ fields


def unmentioned_fields(domain: Domain, g: nx.MultiDiGraph | None = None) -> list[Finding]:
    """Fields no tool reads, shows or writes and no intent guard mentions: no task can
    ask about them, change them or be refused because of them.

    >>> from graphgen.domains import load_builtin
    >>> unmentioned_fields(load_builtin("mock"))
    []
    """
    g = build_graph(domain) if g is None else g
    guarded = {
        (ref.entity, ref.field)
        for t in domain.tools.values()
        for i in t.intents
        if i.when is not None
        for ref in reads(i.when, domain)
    }
    where = _Where(domain)
    out: list[Finding] = []
    for ent in sorted(domain.entities):
        for f in sorted(domain.entities[ent].fields):
            node = state_node_of(ent, f)
            used = any(k in ("reads", "queries") for *_, k in g.out_edges(node, data="kind"))
            used = used or any(k == "writes" for *_, k in g.in_edges(node, data="kind"))
            if used or (ent, f) in guarded:
                continue
            out.append(
                _finding(
                    domain,
                    "field no tool or intent mentions",
                    where.field(ent, f),
                    "no tool reads, returns or writes it, and no intent guard mentions it: "
                    "it is in the state for nothing",
                    f"return it from a read tool (e.g. {ent}[...] as a whole row), test it in "
                    "a precondition, write it in an effect, or remove it",
                )
            )
    return out


def state_node_of(entity: str, field: str) -> str:
    """The graph's state node of ``entity.field``."""
    return state_node(FieldRef(entity, field))


# ------------------------------------------------------------------ refusals


def _states(domain: Domain, seeds: Sequence[int]) -> list[State]:
    """Generated states for ``seeds``; a domain whose states cannot be generated has none
    (``graphgen check`` and ``generate`` report that on their own)."""
    out = []
    for s in seeds:
        try:
            out.append(generate_state(domain, s))
        except GraphgenError:
            return []
    return out


def _column(st: State, entity: str, field: str) -> list[Any]:
    rows = st.tables.get(entity, {})
    return [k if field == "*" else r.get(field) for k, r in sorted(rows.items())]


def _sample_arg(domain: Domain, p: ParamDef, st: State, rng: random.Random) -> Any:
    """A plausible argument: a row of the state, a value some row holds, a bound."""
    if isinstance(p.ty, RefT):
        keys = sorted(st.tables.get(p.ty.entity, {}))
        return rng.choice(keys) if keys else None
    if p.source is not None:
        ent, f = p.source
        vals = _column(st, ent, f if f in domain.entities[ent].fields else "*")
        return rng.choice(vals) if vals else None
    if isinstance(p.ty, EnumT):
        return rng.choice(p.ty.values)
    if p.ty == INT:
        lo = int(p.min) if p.min is not None else 0
        hi = int(p.max) if p.max is not None else max(lo, 100)
        return rng.choice([lo, hi, (lo + hi) // 2, rng.randint(lo, hi)])
    if isinstance(p.ty, DecT):  # as for ints, counted in units of its last place
        lo = units(p.min if p.min is not None else 0, p.ty.scale)
        hi = units(p.max, p.ty.scale) if p.max is not None else max(lo, units(100, p.ty.scale))
        pick = rng.choice([lo, hi, (lo + hi) // 2, rng.randint(lo, hi)])
        return from_units(pick, p.ty.scale)
    if p.ty == BOOL:
        return rng.random() < 0.5
    if p.ty == DATE:
        return rng.choice(["2026-01-01", "2026-06-15", "2026-12-31"])
    if p.ty == STR:
        return rng.choice(["Main Street 1", "note", "x"])
    if isinstance(p.ty, ListT):
        return []
    return None


def _can_fail(domain: Domain, tool: ToolDef, states: Iterable[State], samples: int) -> bool:
    """Whether some precondition of ``tool`` is false for a sampled call on a state."""
    for i, st in enumerate(states):
        rng = random.Random(f"{i}:{tool.name}")
        for _ in range(samples):
            args = {n: _sample_arg(domain, p, st, rng) for n, p in tool.params.items()}
            try:
                if failed_check(domain, st, tool.name, args) is not None:
                    return True
            except ToolError:
                continue  # bad arguments are no refusal
    return False


def writes_without_refusal(
    domain: Domain,
    seeds: Sequence[int] = STRICT_SEEDS,
    samples: int = SAMPLES_PER_STATE,
) -> list[Finding]:
    """Write tools with no refusal path: no precondition, or none that fails on any of
    ``samples`` random plausible calls in the generated states of ``seeds``. Refusal
    tasks ("cancel my delivered order" → the agent must refuse and say why) come only
    from preconditions the data can break.

    >>> from graphgen.domains import load_builtin
    >>> writes_without_refusal(load_builtin("mock"))
    []
    """
    where = _Where(domain)
    states = _states(domain, seeds)
    out: list[Finding] = []
    for t in sorted(domain.write_tools, key=lambda t: t.name):
        if not t.requires:
            why = "it has no precondition"
        elif states and not _can_fail(domain, t, states, samples):
            why = (
                f"none of its preconditions failed on {samples * len(states)} plausible "
                "calls in generated states"
            )
        else:
            continue
        out.append(
            _finding(
                domain,
                "write tool without a refusal path",
                where.tool(t.name),
                f"{why}, so no refusal task can be made from it",
                "add a requires check the state can break (a status the row must be in, a "
                "bound on an amount, the owner of the row) with a message for the agent",
            )
        )
    return out


# ------------------------------------------------------------------ enums


def _written_members(domain: Domain, entity: str, field: str, ty: EnumT) -> set[str]:
    """Members some effect can store in ``entity.field``: a literal one, or any member
    when the value is computed (a parameter, a condition)."""
    out: set[str] = set()
    for t in domain.tools.values():
        for stmt in t.effects:
            eff = stmt.effect
            values: list[ir.Expr] = []
            if isinstance(eff, ir.Assign) and (eff.entity, eff.field) == (entity, field):
                values.append(eff.value)
            elif isinstance(eff, ir.Create) and eff.entity == entity:
                values += [v for f, v in eff.values if f == field]
            for v in values:
                if isinstance(v, ir.Lit):
                    out.add(str(v.value))
                else:
                    return set(ty.values)
    return out


def unreachable_enum_members(domain: Domain, seeds: Sequence[int] = STRICT_SEEDS) -> list[Finding]:
    """Members of an enum field that no generated state holds (the ``generate:`` rules
    exclude them) and no effect writes: no task can start from, reach or cite them.

    >>> from graphgen.domains import load_builtin
    >>> unreachable_enum_members(load_builtin("mock"))
    []
    """
    where = _Where(domain)
    states = _states(domain, seeds)
    if not states:
        return []
    out: list[Finding] = []
    for ent in sorted(domain.entities):
        for fname, f in sorted(domain.entities[ent].fields.items()):
            if not isinstance(f.ty, EnumT):
                continue
            held = {str(v) for st in states for v in _column(st, ent, fname)}
            reached = held | _written_members(domain, ent, fname, f.ty)
            missing = [m for m in f.ty.values if m not in reached]
            if missing:
                out.append(
                    _finding(
                        domain,
                        "enum member never reachable",
                        where.field(ent, fname),
                        f"{', '.join(missing)}: no generated state holds "
                        f"{'it' if len(missing) == 1 else 'them'} and no tool writes "
                        f"{'it' if len(missing) == 1 else 'them'}",
                        "add a tool whose effect moves a row into that member (a state "
                        "machine step), let the generate: rules allow it, or drop the member",
                    )
                )
    return out


# ------------------------------------------------------------------ search tools


def missing_search_tools(domain: Domain, g: nx.MultiDiGraph | None = None) -> list[Finding]:
    """Entities users refer to (with ``givable`` fields) that no read tool can find: none
    returns their ids without already taking one. Users say "my order placed on
    2026-03-02", never an internal id; an agent needs a search or list tool to go from
    the one to the other.

    >>> from graphgen.domains import load_builtin
    >>> missing_search_tools(load_builtin("retail"))
    []
    """
    g = build_graph(domain) if g is None else g
    where = _Where(domain)
    out: list[Finding] = []
    for ent in sorted(domain.entities):
        edef = domain.entities[ent]
        givable = sorted(f for f, fd in edef.fields.items() if fd.givable)
        if edef.key_givable or not givable:
            continue
        key = sort_node(key_sort(ent))
        finders = [
            t
            for t in domain.read_tools
            if g.has_edge(tool_node(t.name), key)
            and all(param_sort(p) != key_sort(ent) for p in t.params.values())
        ]
        if finders:
            continue
        out.append(
            _finding(
                domain,
                "entity without a search tool",
                where.entity(ent),
                f"users refer to {ent} rows by {', '.join(givable)}, but no read tool returns "
                f"{ent} ids without taking one",
                f"add a read tool such as find_{ent.lower()}_by_{givable[0]} with a parameter "
                f"of type {ent}.{givable[0]} returning "
                f"[x.{edef.key} for x in {ent} if x.{givable[0]} == {givable[0]}], or a list "
                "tool from the owner's id",
            )
        )
    return out


def ungraded_parameters(domain: Domain) -> list[Finding]:
    """Parameters of write tools that no effect and no case condition reads, and that no
    check pins to one value (``x == param``, as an owner's id is pinned by the row it
    owns): the final state does not show which value was passed, so the grader cannot
    tell a task's requested value from any other the checks allow. "A gift card paid
    with my PayPal account" would pass with the customer's credit card. (Two such
    parameters checked equal to each other pin each other: a pair is not found.)

    >>> from graphgen.domains import load_builtin
    >>> ungraded_parameters(load_builtin("retail"))
    []
    """
    where = _Where(domain)
    out: list[Finding] = []
    for tool in sorted(domain.write_tools, key=lambda t: t.name):
        read: set[str] = set()
        exprs = [x for s in tool.effects for x in ir.effect_exprs(s.effect)]
        exprs += [c.when for c in tool.cases if c.when is not None]
        for e in exprs:
            read.update(n.name for n in ir.walk(e) if isinstance(n, ir.Var))
        for chk in tool.requires:
            for c in ir.conjuncts(chk.expr):
                if isinstance(c, ir.Compare) and c.op == "==":
                    for side, other in ((c.left, c.right), (c.right, c.left)):
                        if isinstance(side, ir.Var) and side.name not in ir.free_vars(other):
                            read.add(side.name)
        for p in tool.params:
            if p in read:
                continue
            out.append(
                _finding(
                    domain,
                    "ungraded parameter",
                    where.tool(tool.name),
                    f"no effect or case condition reads parameter {p!r} and no check pins "
                    "it, so the final state does not show which value was passed: a task "
                    "that asks for one value is graded as if it asked for any the checks "
                    "allow",
                    f"record it in a field an effect writes (as a gift card records the "
                    f"method that paid for it), or drop {p!r}",
                )
            )
    return out


# ------------------------------------------------------------------ all


def strict_findings(domain: Domain, g: nx.MultiDiGraph | None = None) -> list[Finding]:
    """Every finding of ``graphgen check --strict``, in a fixed order: unreachable tools,
    unmentioned fields, writes without a refusal path, unreachable enum members,
    entities without a search tool, ungraded parameters.

    >>> from graphgen.domains import load_builtin
    >>> strict_findings(load_builtin("mock"))
    []
    """
    g = build_graph(domain) if g is None else g
    return [
        *task_unreachable_tools(domain, g),
        *unmentioned_fields(domain, g),
        *writes_without_refusal(domain),
        *unreachable_enum_members(domain),
        *missing_search_tools(domain, g),
        *ungraded_parameters(domain),
    ]
