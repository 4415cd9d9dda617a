"""Bounded model checking over call chains an agent could make.

A chain has up to ``k`` steps. Step ``t`` has an *active* flag (inactive steps only at
the end, so the chain length is the number of active steps), a symbolic tool choice and
symbolic arguments for every tool. An active step must be a *successful* call (we only
consider chains of successful calls: a failing call changes nothing, and the only thing
it could reveal is its error message, which the knowledge model does not count — so
dropping failing calls loses no reachable state or knowledge of the model), and each
argument must be *known* at that step (:mod:`graphgen.knowledge`):

* a value the task's givens state at the parameter's sort (a stated value of an enum
  field states the member too); or
* a value an earlier step's output revealed at that sort — the symbolic mirror of
  :func:`graphgen.knowledge.facts_of_result`: comprehension items present in that step's
  post-state, a whole row's key and fields, a returned id, ...

What makes it small (each of these changes the size of the problem, never its answers):

* the state is the value-flow slice (:mod:`graphgen.verify.slicing`) for the givens, and only the
  tools some chain can call take part;
* per-tool transitions are built once as :class:`~graphgen.verify.templates.ToolTemplate`, over a
  pre-state in which only the cells a call can change are variables (all others are the
  initial constants, so reads of them fold), reading and writing only the rows each key
  can name, and instantiated per step by substitution; a template is built when a step
  first needs it;
* at a step where some argument of a tool cannot be known yet (nothing earlier can have
  revealed a value of its sort), the tool is simply not selectable there;
* outputs are tracked only at the sorts some parameter needs, and as possible answers
  only where an answer could be shown;
* steps are unrolled on demand, up to what the queries ask for.

States between steps are fresh variables only for cells some selectable tool changes;
all other cells are shared terms (the frame). One :class:`Bmc` serves many queries
through assumption literals, so the solver keeps what it learned between them.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from typing import Any, Protocol

import z3

from graphgen import ir
from graphgen.domain import Domain, Key, ToolDef, per_tool
from graphgen.footprint import ROWS, FieldRef, cells_read, cells_written
from graphgen.keys import key_order
from graphgen.knowledge import Sort, field_sorts, key_sort, param_sort, parse_sort
from graphgen.state import State
from graphgen.strings import message_parts
from graphgen.tasks.model import Call, Change, Given, Inconclusive
from graphgen.types import PRIMS, EnumT, ListT, MapT, OptT, RecordT, RefT, RowT, Ty, free_type
from graphgen.verify.calls import creates_per_call
from graphgen.verify.slicing import Flow, analyze_flow
from graphgen.verify.strings import TextChoice, TextVal
from graphgen.verify.symstate import SymState, read_field
from graphgen.verify.templates import Substitution, ToolTemplate, substitute_together
from graphgen.verify.terms import (
    LIT,
    EncodeError,
    Term,
    and_,
    compare,
    eq,
    fresh_bool,
    implies,
    int_const,
    int_val,
    is_f,
    is_t,
    ite,
    not_,
    or_,
)
from graphgen.verify.universe import NONE_VALUE, Universe
from graphgen.verify.values import ListVal, MapVal, RecVal, RowVal, SymVal, leaves

Status = str  # "sat" | "unsat" | "unknown"


# ------------------------------------------------------------------ sorts and givens


def sort_type(domain: Domain, s: Sort) -> Ty | None:
    """The IR type of values of sort ``s`` (None if the sort names nothing)."""
    if s.kind == "key":
        return RefT(s.name) if s.name in domain.entities else None
    if s.kind == "field":
        ent, _, f = s.name.partition(".")
        edef = domain.entities.get(ent)
        if edef is None:
            return None
        return edef.field_type(f)
    if s.kind == "free":
        return free_type(s.name)
    if s.kind == "enum":
        if s.name in domain.enums:
            return domain.enums[s.name]
        for edef in domain.entities.values():
            for fd in edef.fields.values():
                if isinstance(fd.ty, EnumT) and fd.ty.name == s.name:
                    return fd.ty
    return None


def chain_creates(tools: Sequence[ToolDef], k: int) -> dict[str, int]:
    """How many rows of each entity a chain of ``k`` calls of ``tools`` can create."""
    per: dict[str, int] = {}
    for t in tools:
        for e, n in creates_per_call(t).items():
            per[e] = max(per.get(e, 0), n)
    return {e: n * k for e, n in per.items()}


def chain_flow(
    domain: Domain,
    state: State,
    givens: Sequence[tuple[Sort, Ty, Any]],
    tools: Sequence[ToolDef],
    k: int,
    seeds: Iterable[str],
    extra_scans: Sequence[ir.Comp] = (),
) -> Flow:
    """The value-flow slice (:func:`~graphgen.verify.slicing.analyze_flow`) for chains of
    up to ``k`` calls of ``tools`` from ``givens`` (:func:`typed_givens`), keeping the
    rows keyed by a seed: what the encoding holds symbolically, and the state the
    explicit search runs on."""
    rows = [
        (e, s)
        for e in domain.entities
        for s in sorted(set(seeds), key=key_order)
        if s in state.tables.get(e, {})
    ]
    return analyze_flow(
        domain,
        state,
        tools=tools,
        givens=[(s, v) for s, _, v in givens],
        rows=rows,
        creates=chain_creates(tools, k),
        extra_scans=extra_scans,
    )


def typed_givens(domain: Domain, givens: Iterable[Given]) -> list[tuple[Sort, Ty, Any]]:
    """Givens with their sort and the type of that sort (unknown sorts are dropped)."""
    out = []
    for g in givens:
        s = parse_sort(g.sort)
        t = sort_type(domain, s)
        if t is not None:
            out.append((s, t, g.value))
    return out


# ------------------------------------------------------------------ knowledge sites


def enum_sort(t: Ty) -> Sort | None:
    """The sort of members of enum type ``t`` (None for other types)."""
    return Sort("enum", t.name) if isinstance(t, EnumT) else None


def shown_sorts(domain: Domain, entity: str, f: str) -> list[Sort]:
    """The sorts seeing a value of ``entity.f`` makes known: those of
    :func:`graphgen.knowledge.field_sorts`, and for an enum field the enum's own sort —
    an enum member is known once an output showed it (or the task gives it)."""
    out = list(field_sorts(domain, entity, f))
    edef = domain.entities[entity]
    es = enum_sort(edef.fields[f].ty) if f in edef.fields else None
    if es is not None and es not in out:
        out.append(es)
    return out


def reveal_sites(
    domain: Domain, e: ir.Expr | None, t: Ty, v: SymVal, g: Term, out: list[tuple[Term, Sort, Term]]
) -> None:
    """What an output ``v`` of expression ``e`` (type ``t``) reveals, as guarded
    (guard, sort, value) sites: the symbolic mirror of ``knowledge._facts``, plus the
    enum sort of every enum value shown (:func:`shown_sorts`)."""
    if isinstance(v, TextChoice):  # cases with different messages: each under its guard
        for cg, x in v.choices:
            reveal_sites(domain, None, t, x, and_(g, cg), out)
        return
    if isinstance(v, TextVal) and not isinstance(e, ir.StrOp):
        # a message whose expression is not at hand (one case's of several): each value
        # written into it is shown, as its type says
        for pv, pty in v.parts:
            reveal_sites(domain, None, pty, pv, g, out)
        return
    if isinstance(e, ir.Index):  # one item of a list, as knowledge._facts reads it
        e = e.operand.proj if isinstance(e.operand, ir.Comp) else None
    if isinstance(e, ir.FieldOf) and not isinstance(t, ListT):
        for s in shown_sorts(domain, e.entity, e.field):
            out.append((g, s, v))
        return
    if isinstance(t, ListT) and isinstance(v, ListVal):
        inner: ir.Expr | None = e.proj if isinstance(e, ir.Comp) else None
        for i, (p, item) in enumerate(v.items):
            if isinstance(e, ir.ListLit) and i < len(e.items):
                inner = e.items[i]
            reveal_sites(domain, inner, t.elem, item, and_(g, p), out)
        return
    if isinstance(t, RowT) and isinstance(v, RowVal):
        edef = domain.entities[t.entity]
        out.append((g, key_sort(t.entity), v.key))
        for name, x in v.fields.items():
            fd = edef.fields[name]
            if isinstance(fd.ty, ListT):
                if isinstance(fd.ty.elem, RefT) and isinstance(x, ListVal):
                    for p, item in x.items:
                        out.append((and_(g, p), key_sort(fd.ty.elem.entity), item))
            else:
                for s in shown_sorts(domain, t.entity, name):
                    out.append((g, s, x))
        return
    if isinstance(t, RecordT) and isinstance(v, RecVal):
        exprs = dict(zip(e.keys, e.values, strict=True)) if isinstance(e, ir.DictLit) else {}
        for name, ft in t.fields:
            if name in v.fields:
                reveal_sites(domain, exprs.get(name), ft, v.fields[name], g, out)
        return
    if isinstance(t, MapT) and isinstance(v, MapVal):
        proj = e.comp.proj if isinstance(e, ir.DictComp) else None
        for p, k, x in v.items:
            reveal_sites(domain, None, t.key, k, and_(g, p), out)
            reveal_sites(domain, proj, t.value, x, and_(g, p), out)
    if isinstance(e, ir.StrOp) and isinstance(v, TextVal):
        # every value written into a message is shown ("Ticket T0003 created")
        parts = message_parts(e)
        if len(parts) == len(v.parts):
            for part, (pv, pty) in zip(parts, v.parts, strict=True):
                reveal_sites(domain, part, pty, pv, g, out)
        return
    if isinstance(t, RefT):
        out.append((g, key_sort(t.entity), v))
    elif (es := enum_sort(t)) is not None:
        out.append((g, es, v))


def filter_params(tool: ToolDef) -> list[tuple[str, str]]:
    """The ``(E.f, p)`` pairs of a search's filter: ``[... for x in E if ... and x.f == p
    ...]`` (also keyed by id) pins field ``f`` of every row it lists to parameter ``p``."""
    e = tool.returns
    if isinstance(e, ir.DictComp):
        e = e.comp
    return comp_filter_params(e) if isinstance(e, ir.Comp) else []


def comp_filter_params(e: ir.Comp) -> list[tuple[str, str]]:
    """The ``(E.f, p)`` pairs of a comprehension's filter (see :func:`filter_params`):
    each ``x.f == p`` conjunct, ``p`` a variable (a parameter, or a name bound around
    the comprehension), in the filter's order."""
    out: list[tuple[str, str]] = []
    for atom in ir.conjuncts(e.cond):
        if not (isinstance(atom, ir.Compare) and atom.op == "=="):
            continue
        for a, b in ((atom.left, atom.right), (atom.right, atom.left)):
            if (
                isinstance(a, ir.FieldOf)
                and isinstance(a.key, ir.Var)
                and a.key.name == e.var
                and a.entity == e.entity
                and isinstance(b, ir.Var)
            ):
                out.append((f"{e.entity}.{a.field}", b.name))
    return out


def search_sites(
    tool: ToolDef, ret: SymVal, args: dict[str, Term]
) -> list[tuple[Term, Sort, Term]]:
    """What a filtered search shows about the rows it returns: for ``[x.k for x in E if
    ... and x.f == p ...]`` every returned row has ``f`` equal to the argument ``p``, so a
    non-empty result shows that value at ``field:E.f`` (:func:`filter_params`). Used for
    recognising targets only (the agent passed the value itself; it learns nothing new
    to pass on)."""
    e = tool.returns
    if isinstance(e, ir.DictComp) and isinstance(ret, MapVal):
        some = or_(*(p for p, _, _ in ret.items))  # keyed by id: the same rows
    elif isinstance(e, ir.Comp) and isinstance(ret, ListVal):
        some = or_(*(p for p, _ in ret.items))
    else:
        return []
    return [(some, Sort("field", f), args[p]) for f, p in filter_params(tool) if p in args]


@dataclass(frozen=True)
class Recognition:
    """A target the agent must *recognise* before a write may name it: row ``key`` of
    ``entity``, and the values that tell it apart, as ``(E, f, value)`` atoms. It is
    recognised at a step when, for every atom, an earlier output showed ``value`` at
    ``field:E.f`` (a row or a field read, or a search filtered on that value); givens
    do not count, the user's words do not say which id fits."""

    entity: str
    key: Key
    atoms: tuple[tuple[str, str, Any], ...]


def description_atoms(cond: ir.Expr) -> tuple[tuple[str, Any], ...] | None:
    """The ``(field, value)`` atoms of a conjunction of ``x.f == literal`` (None if the
    description has another form: then recognition cannot be stated and is not
    required — the caller decides)."""
    out: list[tuple[str, Any]] = []
    for atom in ir.conjuncts(cond):
        if not (isinstance(atom, ir.Compare) and atom.op == "=="):
            return None
        a, b = atom.left, atom.right
        if isinstance(b, ir.FieldOf):
            a, b = b, a
        if not (isinstance(a, ir.FieldOf) and isinstance(a.key, ir.Var) and isinstance(b, ir.Lit)):
            return None
        out.append((a.field, b.value))
    return tuple(out)


# ------------------------------------------------------------------ relevance


@per_tool
def revealed_sorts(domain: Domain, tool: ToolDef) -> frozenset[Sort]:
    """The sorts a call of ``tool`` can make known: those its output can show
    (:func:`graphgen.knowledge.produced_sorts`) and, for a shown field, every sort seeing
    it makes known (:func:`shown_sorts`)."""
    from graphgen.knowledge import produced_sorts

    out = set(produced_sorts(domain, tool))
    for s in list(out):
        if s.kind == "field":
            ent, _, f = s.name.partition(".")
            out.update(shown_sorts(domain, ent, f))
    return frozenset(out)


def relevant_tools(
    domain: Domain, reads: AbstractSet[FieldRef], outputs: bool, sorts: Iterable[Sort] = ()
) -> list[str]:
    """The tools that can matter for a goal reading ``reads`` (and, when ``outputs``,
    values shown by outputs; ``sorts``: values that must be shown, e.g. to recognise a
    target): the backward closure over "writes a cell a relevant call or the goal reads"
    and "reveals a sort a relevant call's parameter needs" (enum members included: they
    are known only once given or shown).

    Sound for chain search: deleting the other calls from a chain leaves every relevant
    call reading the same cells and knowing the same values, so it stays valid and the
    goal keeps its value. Hence a shortest solution uses relevant tools only.

    A pure function of the domain and the question: kept on the domain, since every
    proof of a task asks it again and tasks of one kind ask the same.
    """
    cells, wanted = frozenset(reads), frozenset(sorts)
    key = ("relevant_tools", cells, outputs, wanted)
    memo = domain.derived
    hit = memo.get(key)
    if hit is None:
        hit = memo[key] = tuple(_relevant_tools(domain, cells, outputs, wanted))
    return list(hit)


def _relevant_tools(
    domain: Domain, reads: AbstractSet[FieldRef], outputs: bool, sorts: AbstractSet[Sort]
) -> list[str]:
    start = [t for t in domain.tools.values() if t.returns is not None] if outputs else []
    cells = set(reads).union(*(cells_read(domain, t) for t in start))
    wanted = set(sorts) | {param_sort(p) for t in start for p in t.params.values()}
    chosen = {t.name for t in start}
    for level in relevance_levels(domain, list(domain.tools), cells, wanted):
        chosen |= level
    return [n for n in domain.tools if n in chosen]


def relevance_levels(
    domain: Domain, names: Sequence[str], cells: AbstractSet[FieldRef], sorts: AbstractSet[Sort]
) -> Iterator[frozenset[str]]:
    """The backward closure over tools ``names``, level by level: level 1 is the tools
    that write a cell of ``cells`` or show a value of a sort in ``sorts``; each next
    level adds the tools that write a cell a tool of the levels before reads
    (:func:`cells_read`: checks, effects, output) or show a sort one takes. It stops
    once a level adds nothing; the last level is the closure :func:`relevant_tools`
    keeps, and the levels themselves bound how far from the goal a call of a shortest
    chain can be (:meth:`graphgen.verify.explicit.Space.within`)."""
    need_cells, need_sorts = set(cells), set(sorts)
    level: frozenset[str] = frozenset()
    while True:
        added = {
            n
            for n in names
            if n not in level
            and (
                cells_written(domain, domain.tools[n]) & need_cells
                or revealed_sorts(domain, domain.tools[n]) & need_sorts
            )
        }
        if not added:
            return
        for n in added:
            need_cells.update(cells_read(domain, domain.tools[n]))
            need_sorts.update(param_sort(p) for p in domain.tools[n].params.values())
        level = level | added
        yield level


# ------------------------------------------------------------------ goals


class GoalView:
    """What a goal can look at: the symbolic state after ``horizon`` steps (the final
    state of every chain of at most that many calls) and the agent's knowledge then."""

    def __init__(self, bmc: Bmc, horizon: int | None = None) -> None:
        self.bmc = bmc
        self.uni = bmc.uni
        self.horizon = bmc.k if horizon is None else horizon
        self.final = bmc.state_at(self.horizon)

    def key(self, ent: str, key: Key) -> Term | None:
        """The index term of ``ent`` key ``key`` (None if outside the universe)."""
        i = self.uni.index.get(ent, {}).get(key)
        return None if i is None else self.uni.index_term(i)

    def exists(self, ent: str, key: Key) -> Term:
        """Row ``ent``/``key`` exists in the final state."""
        i = self.uni.index.get(ent, {}).get(key)
        return LIT.FALSE if i is None else self.final.exists[ent][i]

    def field_is(self, ent: str, key: Key, f: str, value: Any) -> Term:
        """Row ``ent``/``key`` exists and its field ``f`` equals ``value`` at the end."""
        edef = self.uni.domain.entities.get(ent)
        k = self.key(ent, key)
        if edef is None or k is None or f not in edef.fields:
            return LIT.FALSE
        ty = edef.fields[f].ty
        cur = read_field(self.uni, self.final, ent, k, f)
        if isinstance(ty, ListT):
            assert isinstance(cur, ListVal)
            if not isinstance(value, list):
                return LIT.FALSE
            el = self.uni.field_elements(ent, f)
            if any(x not in el for x in value) or list(value) != sorted(set(value)):
                return LIT.FALSE
            want = set(value)
            parts = [p if x in want else not_(p) for (p, _), x in zip(cur.items, el, strict=True)]
            return and_(self.exists(ent, key), *parts)
        t = self.uni.encode_value(ty, value)
        if t is None:
            return LIT.FALSE
        return and_(self.exists(ent, key), eq(cur, t))

    def known(self, value: Any) -> Term:
        """``value`` is given or was shown by some output of the chain (any sort)."""
        for _, _, gv in self.bmc.givens:
            if same_value(gv, value):
                return LIT.TRUE
        if self.bmc.answers is not None and not any(same_value(a, value) for a in self.bmc.answers):
            raise ValueError(f"answer {value!r} was not announced to the unrolling")
        parts = []
        for guard, ty, term in self.bmc.leaves_until(self.horizon):
            t = _enc_like(self.uni, ty, value)
            if t is not None:
                parts.append(and_(guard, eq(term, t)))
        return or_(*parts)


def _const_key(t: Term) -> Any:
    """The Python key of a literal term (int or bool), else None."""
    c = int_const(t)
    if c is not None:
        return c
    if is_t(t):
        return True
    if is_f(t):
        return False
    return None


def same_value(a: Any, b: Any) -> bool:
    # bool is an int in Python; an answer True must not match a shown 1
    return type(a) is type(b) and a == b


def _enc_like(uni: Universe, ty: Ty, value: Any) -> Term | None:
    if isinstance(value, bool) != (ty == PRIMS["bool"]):
        return None
    return uni.encode_value(ty, value)


class GoalPredicate(Protocol):
    """A goal over the final symbolic state (and knowledge)."""

    def build(self, view: GoalView) -> Term: ...

    def seeds(self) -> set[Any]: ...

    def typed_values(self, domain: Domain) -> list[tuple[Ty, Any]]: ...

    def relevance(self, domain: Domain) -> tuple[set[FieldRef], bool] | None: ...


@dataclass
class ChangesGoal:
    """The intent of a task goal: every listed change holds (each field has its ``after``
    value, created rows exist with those values, deleted rows do not exist), and every
    answer value is known."""

    changes: list[Change] = field(default_factory=list)
    answers: list[Any] = field(default_factory=list)

    def build(self, view: GoalView) -> Term:
        parts: list[Term] = []
        for c in self.changes:
            if c.field == "*":
                if c.after is None:
                    parts.append(not_(view.exists(c.entity, c.key)))
                elif isinstance(c.after, dict):
                    parts.append(view.exists(c.entity, c.key))
                    parts.extend(view.field_is(c.entity, c.key, f, v) for f, v in c.after.items())
                else:
                    parts.append(LIT.FALSE)
            else:
                parts.append(view.field_is(c.entity, c.key, c.field, c.after))
        parts.extend(view.known(a) for a in self.answers)
        return and_(*parts)

    def seeds(self) -> set[Any]:
        # Ints too: they may be ids (``type: int`` keys); callers drop them otherwise.
        out: set[Any] = set()
        for c in self.changes:
            out.add(c.key)
            for v in (c.before, c.after):
                out.update(strings_in(v, ints=True))
        for a in self.answers:
            out.update(strings_in(a, ints=True))
        return out

    def relevance(self, domain: Domain) -> tuple[set[FieldRef], bool] | None:
        """The cells the goal reads, and whether it reads outputs (answers)."""
        reads: set[FieldRef] = set()
        for c in self.changes:
            edef = domain.entities.get(c.entity)
            if edef is None:
                continue
            reads.add(FieldRef(c.entity))
            if c.field == ROWS:
                reads.update(FieldRef(c.entity, f) for f in edef.fields)
            else:
                reads.add(FieldRef(c.entity, c.field))
        return reads, bool(self.answers)

    def typed_values(self, domain: Domain) -> list[tuple[Ty, Any]]:
        out: list[tuple[Ty, Any]] = []
        for c in self.changes:
            edef = domain.entities.get(c.entity)
            if edef is None:
                continue
            out.append((RefT(c.entity), c.key))
            for v in (c.before, c.after):
                if c.field == "*" and isinstance(v, dict):
                    out.extend((edef.fields[f].ty, x) for f, x in v.items() if f in edef.fields)
                elif c.field in edef.fields:
                    out.append((edef.fields[c.field].ty, v))
        return out


@dataclass
class AnyGoal:
    """One of several goals holds: a task's goal under each consistent renaming of the
    ids of the rows it creates (ids come from counters, so creating the same rows in
    another order swaps them; the grader accepts any such renaming, and so do the
    proofs). The first goal is the one as written."""

    goals: list[ChangesGoal]

    def build(self, view: GoalView) -> Term:
        return or_(*(g.build(view) for g in self.goals))

    def seeds(self) -> set[Any]:
        return set().union(*(g.seeds() for g in self.goals))

    def typed_values(self, domain: Domain) -> list[tuple[Ty, Any]]:
        return [x for g in self.goals for x in g.typed_values(domain)]

    def relevance(self, domain: Domain) -> tuple[set[FieldRef], bool] | None:
        reads: set[FieldRef] = set()
        outputs = False
        for g in self.goals:
            rel = g.relevance(domain)
            if rel is None:
                return None
            r, o = rel
            reads |= r
            outputs = outputs or o
        return reads, outputs


@dataclass
class FnGoal:
    """A goal given as a function of the view (``seeds``: strings it mentions)."""

    fn: Callable[[GoalView], Term]
    seed_strings: set[str] = field(default_factory=set)

    def build(self, view: GoalView) -> Term:
        return self.fn(view)

    def seeds(self) -> set[str]:
        return set(self.seed_strings)

    def typed_values(self, domain: Domain) -> list[tuple[Ty, Any]]:
        return []

    def relevance(self, domain: Domain) -> tuple[set[FieldRef], bool] | None:
        return None  # unknown reads: every tool stays


def scalars(v: Any) -> Iterator[Any]:
    """The scalars of a JSON-like value (list items and dict values, recursively)."""
    if isinstance(v, list):
        for x in v:
            yield from scalars(x)
    elif isinstance(v, dict):
        for x in v.values():
            yield from scalars(x)
    else:
        yield v


def strings_in(v: Any, ints: bool = False) -> Iterable[Any]:
    """The strings among :func:`scalars` of ``v``; with ``ints``, the ints too (which
    may be ids, in a domain with ``type: int`` keys)."""
    return (
        x
        for x in scalars(v)
        if isinstance(x, str) or (ints and isinstance(x, int) and not isinstance(x, bool))
    )


# ------------------------------------------------------------------ the unrolling


@dataclass
class SearchResult:
    """The answer of one query: ``chain`` is a witness when ``status == 'sat'``."""

    status: Status
    chain: list[Call] | None = None
    ms: float = 0.0
    reason: str = ""


@dataclass
class _Step:
    act: Term
    sel: Term
    chosen: list[Term]  # per tool: this step is active and calls that tool
    args: list[dict[str, Term]]


RLIMIT_PER_MS = 5000  # z3 resource units granted per millisecond of the time limit
# The wall-clock limit of a query, in multiples of its time limit: a guard against a hang
# only; the resource limit decides (see :meth:`Bmc.check`).
WALL_GUARD = 200
#: Universe rows above which a query's resource limit shrinks in proportion to them.
QUERY_ROWS = 500


def query_rlimit(timeout_ms: int, rows: int) -> int:
    """The z3 resource units of a query with time limit ``timeout_ms`` over a universe
    of ``rows`` rows.

    A unit of z3's work costs about the same up to a few hundred rows (0.3-0.8 us on
    retail and airline at x1 and x10), then grows with the rows (about 1 ns per row: 4 us
    at 4,000, so one query of a x100 retail task ran 64-84 s on a 4 s limit). Past
    :data:`QUERY_ROWS` the units shrink by the same factor, which keeps a query near its
    time limit at any table size and leaves every smaller universe's limit as it was;
    the rows are a count, so the limit is the same on every machine.

    >>> query_rlimit(4000, 60) == query_rlimit(4000, 500) == 4000 * RLIMIT_PER_MS
    True
    >>> query_rlimit(4000, 5000)
    2000000
    """
    units = timeout_ms * RLIMIT_PER_MS
    return units if rows <= QUERY_ROWS else units * QUERY_ROWS // rows


class Bmc:
    """All chains of up to ``k`` known-argument successful calls from ``state``.

    ``state`` is sliced (see :mod:`graphgen.verify.slicing`) for the knowledge the givens start
    from, keeping the rows keyed by ``seeds`` (ids the queries name besides the givens),
    unless ``slice_rows`` is false; ``extra`` are typed values that must be representable
    (goal values, pinned arguments).

    Steps are unrolled on demand: a query about chains of at most ``h`` calls only needs
    ``h`` steps (:meth:`ensure`), and a goal looks at the state after a given *horizon*
    (:meth:`goal_term`). Inactive steps keep the state and reveal nothing, so the state
    after ``h`` steps is the final state of every chain of at most ``h`` calls.
    """

    def __init__(
        self,
        domain: Domain,
        state: State,
        givens: Iterable[Given],
        k: int,
        *,
        tools: Sequence[str] | None = None,
        seeds: Iterable[str] = (),
        extra: Iterable[tuple[Ty, Any]] = (),
        extra_scans: Sequence[ir.Comp] = (),
        slice_rows: bool = True,
        answers: Sequence[Any] | None = None,
        recognize: Sequence[Recognition] = (),
        flow: Flow | None = None,
    ) -> None:
        """``answers``: the values goals may ask to be *shown* (:meth:`GoalView.known`);
        only outputs that can show one are tracked. None: track every output.
        ``recognize``: targets a write call may name only once recognised
        (:class:`Recognition`; a target whose key is a given needs no recognition).
        ``flow``: the slice :func:`chain_flow` gives for these arguments, when the caller
        has it already (the explicit search ran on it): it is not computed again."""
        self.domain = domain
        self.k = k
        names = list(domain.tools) if tools is None else list(tools)
        self.tools: list[ToolDef] = [domain.tools[n] for n in names]
        self.givens = typed_givens(domain, givens)
        self.creates = self._creates(k)
        seeds = set(seeds)
        self.full_state = state
        self.flow: Flow | None = None
        if slice_rows:
            if flow is None:
                flow = chain_flow(domain, state, self.givens, self.tools, k, seeds, extra_scans)
            self.flow = flow
            self.state = self.flow.state
            # a tool with an argument no chain can know is never called
            self.tools = [t for t in self.tools if t.name in self.flow.callable]
            self.creates = self._creates(k)
        else:
            self.state = state
        self.uni = Universe.build(
            domain, self.state, self.creates, [(t, v) for _, t, v in self.givens] + list(extra)
        )
        if self.flow is not None and not self.flow.whole:
            self.uni.bounds = self.flow
            self.uni.list_elements = self._list_elems(self.flow)
        self.answers = None if answers is None else list(answers)
        given_keys = {(s.name, v) for s, _, v in self.givens if s.kind == "key"}
        self.recognize = [
            r
            for r in recognize
            if (r.entity, r.key) not in given_keys and r.key in self.uni.index.get(r.entity, {})
        ]
        self._setup()

    def _list_elems(self, flow: Flow) -> dict[tuple[str, str], list[Any]]:
        """Per list field of ids/strings/dates, the items it can ever hold: those of the
        slice's rows and those a call can write (the analysis' ``values``)."""
        out: dict[tuple[str, str], list[Any]] = {}
        for ent, edef in self.domain.entities.items():
            for f, fd in edef.fields.items():
                if not isinstance(fd.ty, ListT) or not (
                    fd.ty.elem in (PRIMS["str"], PRIMS["date"]) or isinstance(fd.ty.elem, RefT)
                ):
                    continue
                can: set[Any] = set(flow.values.get((ent, f), frozenset()))
                for row in self.state.tables.get(ent, {}).values():
                    v = row.get(f)
                    if isinstance(v, list):
                        can.update(v)
                out[(ent, f)] = [x for x in self.uni.elements(fd.ty.elem) if x in can]
        return out

    def _creates(self, k: int) -> dict[str, int]:
        return chain_creates(self.tools, k)

    def _setup(self) -> None:
        """The per-unrolling part (shared by :meth:`only`)."""
        self._created = {e: set(ids) for e, ids in self.uni.created.items()}
        self.given_terms: dict[Sort, list[Term]] = {}
        for s, gty, v in self.givens:
            term = self.uni.encode_value(gty, v)
            if term is not None:
                self.given_terms.setdefault(s, []).append(term)
                # a stated value of an enum field ("status pending") states the member
                es = enum_sort(gty)
                if es is not None and es != s:
                    self.given_terms.setdefault(es, []).append(term)
        self.solver = z3.SimpleSolver()
        self._last = self.solver  # the solver of the last check (reason_unknown reads it)
        self.templates: list[ToolTemplate | None] = []
        self._site_tpl: list[list[tuple[Term, Sort, Term]]] = []
        self._leaf_tpl: list[list[tuple[Term, Ty, Term]]] = []
        self._extra: list[list[Term]] = []
        self._mask: list[int] = []
        self.steps: list[_Step] = []
        self.states: list[SymState] = [SymState.from_state(self.uni, self.state)]
        # the state never changes when no tool writes: every horizon sees the first one
        self.static = not any(t.is_write for t in self.tools)
        self.sites: dict[Sort, list[tuple[int, Term, Term]]] = {}
        self.leaf_sites: list[tuple[Term, Ty, Term]] = []
        self._leaf_count: list[int] = [0]  # leaf sites revealed by the first h steps
        self._lits: dict[str, Term] = {}
        # per recognition, per atom: "an earlier output showed it" (before the next step)
        self._seen: list[list[Term]] = [[LIT.FALSE for _ in r.atoms] for r in self.recognize]
        self._ready = False
        self.added: list[Term] = []  # every constraint asserted, in order
        # the one tool each step may call (:meth:`only`), or None: any of :attr:`tools`
        self._per_step: list[str] | None = None

    @property
    def generation(self) -> int:
        """How many constraints were asserted so far."""
        return len(self.added)

    def _add(self, *terms: Term) -> None:
        self.added.extend(terms)
        ctx = self.solver.ctx.ref()
        for t in terms:  # the C call: Solver.add coerces every term in Python first
            z3.Z3_solver_assert(ctx, self.solver.solver, t.ast)

    @property
    def rows(self) -> int:
        """The rows of the universe (the slice's and those chains can create): what
        the cost of z3's work grows with (:func:`query_rlimit`)."""
        return sum(len(ks) for ks in self.uni.keys.values())

    def reads_only(self, k: int | None = None) -> Bmc:
        """The unrolling of the same universe whose chains call only read tools, up to
        ``k`` (default: this one's k) calls: reads create nothing and change nothing, so
        the slice and key bounds, computed for more tools, still cover them at any
        length."""
        return self.only([t.name for t in self.tools if not t.is_write], k)

    def only(
        self, names: Iterable[str], k: int | None = None, *, per_step: Sequence[str] | None = None
    ) -> Bmc:
        """The unrolling of the same universe (same rows, values, cell encoding and
        knowledge model) whose chains call only the tools ``names`` of this one's, up to
        ``k`` (default: this one's k) calls. Fewer tools make fewer chains, so the slice
        and key bounds computed for more tools still cover them; longer chains than this
        one's k may create more rows than the universe holds, so ``k`` may exceed it only
        for reads. Each step encodes only these tools: far smaller than this unrolling's
        steps when they are few.

        ``per_step``: step ``t`` may call only the tool ``per_step[t]`` (and no step past
        them any), for pinning that very chain: the other tools' parts of a step are
        vacuous once its tool is fixed, so leaving them out states the same."""
        keep = set(names)
        tools = [t for t in self.tools if t.name in keep]
        k = self.k if k is None else k
        if k > self.k and any(t.is_write for t in tools):
            raise ValueError(f"an unrolling of writes up to {k} calls needs a universe for {k}")
        other = object.__new__(Bmc)
        other.__dict__.update(
            {
                "domain": self.domain,
                "k": k,
                "givens": self.givens,
                "creates": self.creates,
                "full_state": self.full_state,
                "flow": self.flow,
                "state": self.state,
                "uni": self.uni,
                "answers": self.answers,
                "recognize": self.recognize,
                "tools": tools,
            }
        )
        other._setup()
        other._per_step = None if per_step is None else list(per_step)
        return other

    # ------------------------------------------------------------ building

    def _may_show(self, ty: Ty) -> bool:
        """Can an output leaf of type ``ty`` show one of the answers?"""
        if self.answers is None:
            return True
        return any(_enc_like(self.uni, ty, a) is not None for a in self.answers)

    def _prepare(self) -> None:
        """The shared pre-state and the knowledge, before the first step. Templates are
        built when a step first needs them (:meth:`_template`)."""
        if self._ready:
            return
        self._ready = True
        self._needed = {param_sort(p) for t in self.tools for p in t.params.values()}
        self._needed.update(
            Sort("field", f"{e}.{f}") for r in self.recognize for e, f, _ in r.atoms
        )
        self._mask, self._pre = self._pre_state()
        self._pre_terms = self._pre.terms()
        self.templates = [None] * len(self.tools)
        self._tpl_slots: dict[tuple[Sort, bool, int], Term] = {}  # see _slot_args
        self._site_tpl = [[] for _ in self.tools]
        self._leaf_tpl = [[] for _ in self.tools]
        self._extra = [[] for _ in self.tools]
        self._init_knowledge()

    def _pre_state(self) -> tuple[list[int], SymState]:
        """The templates' shared pre-state, in which only *changeable* cells are
        variables: every other cell holds its initial value in every state a chain can
        reach (no call writes it), so it stays a constant and folds. The changeable
        cells come from the value-flow analysis (every cell, without one)."""
        base = self.states[0]
        layout = base.layout()
        written = None if self.flow is None or self.flow.whole else self.flow.written
        if written is None:
            mask = list(range(len(layout)))
        else:
            keys = self.uni.keys
            mask = []
            for i, (ent, f, row) in enumerate(layout):
                if f == "#":
                    if self.creates.get(ent, 0):
                        mask.append(i)
                elif keys[ent][row] in written.get((ent, f), ()):
                    mask.append(i)
        return mask, base.with_fresh(mask, "pre")

    def shared_pre(self) -> SymState:
        """The pre-state every template is built over: a free constant at each cell
        some call can change, the initial value everywhere else."""
        self._prepare()
        return self._pre

    def template(self, j: int) -> ToolTemplate:
        """Tool ``j``'s template over :meth:`shared_pre` (built on first use)."""
        self._prepare()
        return self._template(j)

    def _template(self, j: int) -> ToolTemplate:
        """Tool ``j``'s template, built on first use. A template that could write a
        cell the analysis found constant would mean the analysis is wrong: the encoding
        then refuses (an error, so the task is rejected) rather than answer from it."""
        tpl = self.templates[j]
        if tpl is not None:
            return tpl
        tpl = ToolTemplate(
            self.uni, self.tools[j], f"T{j}", self._pre, self._mask, self._slot_args(j)
        )
        if not set(tpl.changed_idx) <= set(self._mask):
            raise EncodeError(
                f"tool {tpl.tool.name!r} can write cells the value-flow analysis found constant"
            )
        sites: list[tuple[Term, Sort, Term]] = []
        lv: list[tuple[Term, Ty, Term]] = []
        ret, rty = tpl.call.ret, tpl.call.ret_ty
        if ret is not None and rty is not None:
            reveal_sites(self.domain, tpl.tool.returns, rty, ret, LIT.TRUE, sites)
            sites.extend(search_sites(tpl.tool, ret, tpl.args))
            # knowledge no parameter (or recognition) needs changes nothing a chain can do
            sites = [x for x in sites if x[1] in self._needed]
            lv = [x for x in leaves(self.domain, ret, rty) if self._may_show(x[1])]
        self._site_tpl[j] = sites
        self._leaf_tpl[j] = lv
        # the site and leaf terms the template outputs besides its transition
        self._extra[j] = [x for g, _, v in sites for x in (g, v)] + [
            x for g, _, v in lv for x in (g, v)
        ]
        self.templates[j] = tpl
        return tpl

    def _slot_args(self, j: int) -> dict[str, Term]:
        """Tool ``j``'s argument variables named by slot: the ``i``-th parameter of a
        sort is one variable whichever tool has it (as at every step, :meth:`_step`)."""
        out: dict[str, Term] = {}
        taken: Counter[tuple[Sort, bool]] = Counter()
        for p in self.tools[j].params.values():
            kind = (param_sort(p), p.ty == PRIMS["bool"])
            slot = (*kind, taken[kind])
            taken[kind] += 1
            var = self._tpl_slots.get(slot)
            if var is None:
                var = self._tpl_slots[slot] = self.uni.z3_var(p.ty, f"T.{kind[0]}.{slot[2]}")
            out[p.name] = var
        return out

    def _domain_of(self, s: Sort) -> list[tuple[Any, Term]] | None:
        """The finite value domain of sort ``s`` as (python key, term) pairs; None for
        int sorts (unbounded) — those keep a list of sites."""
        ty = sort_type(self.domain, s)
        uni = self.uni
        if isinstance(ty, RefT):
            return [(i, uni.index_term(i)) for i in range(len(uni.keys[ty.entity]))]
        if ty == PRIMS["str"]:
            return [(i, uni.index_term(i)) for i in range(len(uni.strings))]
        if ty == PRIMS["date"]:
            out = []
            for d in uni.dates:
                t = uni.encode_value(ty, d)
                out.append((int_const(t), t))
            return out
        if ty == PRIMS["bool"]:
            return [(True, LIT.TRUE), (False, LIT.FALSE)]
        if isinstance(ty, EnumT):
            return [(i, uni.index_term(i)) for i in range(len(ty.values))]
        return None

    def _init_knowledge(self) -> None:
        """Per needed sort: a Bool per value ("known before this step"), or a site list."""
        needed = {param_sort(p) for t in self.tools for p in t.params.values()}
        self.kn: dict[Sort, dict[Any, Term]] = {}
        self.kn_terms: dict[Sort, dict[Any, Term]] = {}
        self.kn_list: dict[Sort, list[tuple[Term, Term]]] = {}
        # Every sort must be known, enum members too: the schema lists them, but which one
        # applies is known only when the task gives it or an output showed it.
        for s in sorted(needed):
            dom = self._domain_of(s)
            givens = self.given_terms.get(s, [])
            if dom is None:
                self.kn_list[s] = [(LIT.TRUE, g) for g in givens]
                continue
            self.kn_terms[s] = dict(dom)
            self.kn[s] = {}
            for g in givens:
                c = _const_key(g)
                if c is not None and c in self.kn_terms[s]:
                    self.kn[s][c] = LIT.TRUE

    def _known(self, p: Any, arg: Term) -> Term:
        s = param_sort(p)
        opts = [and_(g, eq(arg, v)) for g, v in self.kn_list.get(s, [])]
        if isinstance(p.ty, OptT):
            # None is the omitted argument: an agent can always leave an optional
            # parameter out, as the dry-run lets it (it checks only what is passed)
            opts.append(eq(arg, int_val(NONE_VALUE)))
        if s in self.kn:
            terms = self.kn_terms[s]
            opts += [and_(eq(arg, terms[v]), b) for v, b in self.kn[s].items()]
        return or_(*opts)

    def _learn(self, sites: list[tuple[Term, Sort, Term]]) -> None:
        """Add one step's reveal sites to the knowledge: a site with a literal value
        strengthens that value's Bool; a symbolic value is kept as a guarded site."""
        new: dict[Sort, dict[Any, list[Term]]] = {}
        for g, s, v in sites:
            if is_f(g):
                continue
            c = _const_key(v) if s in self.kn else None
            if c is None:
                if s in self.kn or s in self.kn_list:
                    self.kn_list.setdefault(s, []).append((g, v))
                continue
            if c in self.kn_terms[s]:
                new.setdefault(s, {}).setdefault(c, []).append(g)
        for s, per in new.items():
            for key, gs in per.items():
                old = self.kn[s].get(key, LIT.FALSE)
                val = or_(old, *gs)
                if is_t(val) or is_f(val):
                    self.kn[s][key] = val
                    continue
                b = fresh_bool("known")
                self._add(b == val)
                self.kn[s][key] = b

    def ensure(self, n: int) -> None:
        """Unroll steps until there are ``min(n, k)``."""
        n = min(n, self.k)
        if len(self.steps) >= n:
            return
        self._prepare()
        while len(self.steps) < n:
            self._step()

    def _step(self) -> None:
        t = len(self.steps)
        n = len(self.tools)
        act = z3.Bool(f"act{t}")
        sel = z3.Int(f"sel{t}")
        if n:
            self._add(compare(">=", sel, int_val(0)), compare("<", sel, int_val(n)))
        else:
            self._add(not_(act))  # no tool: only the empty chain
        if t > 0:
            self._add(implies(act, self.steps[-1].act))
        chosen = [and_(act, eq(sel, self.uni.index_term(j))) for j in range(n)]
        # One step calls one tool, so the tools share argument variables: the i-th
        # parameter of a sort is one variable whichever tool has it (every constraint on
        # a tool's arguments holds only when that tool is chosen). Its knowledge is then
        # encoded once per step, not once per tool that could take it.
        slots: dict[tuple[Sort, bool, int], Term] = {}
        args: list[dict[str, Term]] = []
        for tool in self.tools:
            mine: dict[str, Term] = {}
            taken: Counter[tuple[Sort, bool]] = Counter()
            for p in tool.params.values():
                kind = (param_sort(p), p.ty == PRIMS["bool"])
                slot = (*kind, taken[kind])
                taken[kind] += 1
                if slot not in slots:
                    slots[slot] = self.uni.z3_var(p.ty, f"s{t}.{kind[0]}.{slot[2]}")
                mine[p.name] = slots[slot]
            args.append(mine)
        self.steps.append(_Step(act, sel, chosen, args))
        self._require_recognition(chosen, args)
        cur = self.states[-1]
        cur_terms = cur.terms()
        posts: list[list[Term] | None] = []
        new_sites: list[tuple[Term, Sort, Term]] = []
        new_leaves: list[tuple[Term, Ty, Term]] = []
        knowns: list[Term] = []
        known_of: dict[tuple[int, bool], Term] = {}  # per variable and optionality
        allowed = self._per_step
        for j, tool in enumerate(self.tools):
            if allowed is not None and (t >= len(allowed) or allowed[t] != tool.name):
                knowns.append(LIT.FALSE)  # never called here: encoded as not callable
                continue
            parts = []
            for p in tool.params.values():
                a = args[j][p.name]
                key = (a.ast.value, isinstance(p.ty, OptT))
                if key not in known_of:
                    known_of[key] = self._known(p, a)
                parts.append(known_of[key])
            knowns.append(and_(*parts))
            if not is_f(knowns[j]):
                self._template(j)
        # one substitution for every template: the shared pre-state's variables to this
        # state, and each template's argument variables to this step's
        pre = self._pre_terms
        pairs = [(pre[i], cur_terms[i]) for i in self._mask]
        callable_ = [j for j in range(len(self.tools)) if not is_f(knowns[j])]
        seen: set[int] = set()
        for j in callable_:
            for name, var in self._template(j).args.items():
                if var.ast.value not in seen:  # tools share slot variables
                    seen.add(var.ast.value)
                    pairs.append((var, args[j][name]))
        insts = substitute_together(
            [self._template(j).packed(self._extra[j]) for j in callable_], Substitution(pairs)
        )
        inst_of = dict(zip(callable_, insts[1:], strict=True))
        for j in range(len(self.tools)):
            ch = chosen[j]
            known = knowns[j]
            if is_f(known):
                # some argument cannot be known yet: the tool is not callable here, so
                # its transition is not needed at this step
                self._add(not_(ch))
                posts.append(None)
                continue
            ok, post, subs = self._template(j).unpack(inst_of[j], self._extra[j], cur_terms)
            self._add(implies(ch, and_(ok, known)))
            posts.append(post)
            ns = len(self._site_tpl[j])
            for i, (_, s, _) in enumerate(self._site_tpl[j]):
                new_sites.append((and_(ch, subs[2 * i]), s, subs[2 * i + 1]))
            for i, (_, ty, _) in enumerate(self._leaf_tpl[j]):
                new_leaves.append((and_(ch, subs[2 * (ns + i)]), ty, subs[2 * (ns + i) + 1]))
        nxt = list(cur_terms)
        writers: dict[int, list[int]] = {}
        for j, pj in enumerate(posts):
            tj = self.templates[j]
            if pj is not None and tj is not None:
                for i in tj.changed_idx:
                    writers.setdefault(i, []).append(j)
        # A written cell's next value is the term itself, not a fresh constant equated
        # to it: the incremental solver takes its assumptions only during search, so it
        # cannot eliminate such definitions as a one-shot solver's preprocessing does,
        # and carried every cell of every step as a variable of its own. z3's terms are
        # shared DAGs, so the nested if-then-elses do not grow with the chain.
        for i in sorted(writers):
            val = cur_terms[i]
            for j in reversed(writers[i]):
                pj = posts[j]
                assert pj is not None
                val = ite(chosen[j], pj[i], val)
            nxt[i] = val
        self.states.append(cur.rebuild(nxt))
        for g, s, v in new_sites:
            self.sites.setdefault(s, []).append((t, g, v))
        self.leaf_sites.extend(new_leaves)
        self._leaf_count.append(len(self.leaf_sites))
        if t + 1 < self.k:
            self._learn(new_sites)
            self._see(new_sites)

    def _require_recognition(self, chosen: list[Term], args: list[dict[str, Term]]) -> None:
        """A write call may pass a target's key only once the target is recognised."""
        for r, seen in zip(self.recognize, self._seen, strict=True):
            rec = and_(*seen)
            if is_t(rec):
                continue
            key = self.uni.index_term(self.uni.index[r.entity][r.key])
            for j, tool in enumerate(self.tools):
                if not tool.is_write:
                    continue  # looking at a row is how an agent recognises it
                for p in tool.params.values():
                    if p.ty == RefT(r.entity):
                        self._add(implies(and_(chosen[j], eq(args[j][p.name], key)), rec))

    def _see(self, sites: list[tuple[Term, Sort, Term]]) -> None:
        """Add one step's output sites to the recognition atoms they show."""
        for r, seen in zip(self.recognize, self._seen, strict=True):
            for i, (ent, f, v) in enumerate(r.atoms):
                edef = self.domain.entities[ent]
                if is_t(seen[i]) or f not in edef.fields:
                    continue
                want = self.uni.encode_value(edef.fields[f].ty, v)
                if want is None:
                    continue
                s = Sort("field", f"{ent}.{f}")
                new = [and_(g, eq(x, want)) for g, st, x in sites if st == s]
                if not new:
                    continue
                val = or_(seen[i], *new)
                if not (is_t(val) or is_f(val)):
                    b = fresh_bool("seen")
                    self._add(b == val)
                    val = b
                seen[i] = val

    def state_at(self, h: int) -> SymState:
        """The state after ``h`` steps (the final state of chains of at most ``h``)."""
        if self.static:
            return self.states[0]
        self.ensure(h)
        return self.states[min(h, self.k)]

    def leaves_until(self, h: int) -> list[tuple[Term, Ty, Term]]:
        """The output leaves (guard, type, value) of the first ``h`` steps."""
        self.ensure(h)
        return self.leaf_sites[: self._leaf_count[min(h, len(self.steps))]]

    # ------------------------------------------------------------ assumptions

    def lit(self, name: str, term: Term) -> Term:
        """A fresh assumption literal implying ``term`` (cached under ``name``)."""
        if name not in self._lits:
            b = fresh_bool(name)
            self._add(implies(b, term))
            self._lits[name] = b
        return self._lits[name]

    def length_is(self, n: int) -> list[Term]:
        """Assumptions: the chain has exactly ``n`` calls (steps past the unrolled ones
        do not exist yet, so they are inactive)."""
        self.ensure(n)
        out = []
        if n > 0:
            out.append(self.steps[n - 1].act)
        if n < len(self.steps):
            out.append(not_(self.steps[n].act))
        return out

    def length_below(self, n: int) -> list[Term]:
        """Assumptions: the chain has fewer than ``n`` calls (n ≥ 1)."""
        self.ensure(n - 1)
        return [not_(self.steps[n - 1].act)] if n - 1 < len(self.steps) else []

    def read_only(self, horizon: int | None = None) -> Term:
        """Assumption: every call of the first ``horizon`` (default k) steps is a read."""
        h = self.k if horizon is None else horizon
        self.ensure(h)
        reads = [j for j, t in enumerate(self.tools) if not t.is_write]
        return self.lit(
            f"read_only@{h}",
            and_(*(implies(s.act, or_(*(s.chosen[j] for j in reads))) for s in self.steps[:h])),
        )

    def pinned(self, chain: Sequence[Call], name: str = "pinned") -> Term | None:
        """Assumption: the chain is exactly ``chain`` (None if it cannot be expressed:
        unknown tool, wrong arguments, too long, a value outside the universe)."""
        if len(chain) > self.k:
            return None
        self.ensure(len(chain))
        parts: list[Term] = []
        names = [t.name for t in self.tools]
        for t, c in enumerate(chain):
            if c.tool not in names:
                return None
            j = names.index(c.tool)
            tool = self.tools[j]
            full = tool.full_args(c.args)
            if set(full) != set(tool.params):
                return None
            parts.append(self.steps[t].chosen[j])
            for p, v in full.items():
                term = self.uni.encode_value(tool.params[p].ty, v)
                if term is None:
                    return None
                parts.append(eq(self.steps[t].args[j][p], term))
        if len(chain) < len(self.steps):
            parts.append(not_(self.steps[len(chain)].act))
        key = repr([(c.tool, sorted(c.args.items())) for c in chain])
        return self.lit(f"{name}:{len(self.steps)}:{key}", and_(*parts))

    # ------------------------------------------------------------ queries

    def goal_term(self, goal: GoalPredicate, horizon: int | None = None) -> Term:
        """The goal over the state and knowledge after ``horizon`` steps (default k)."""
        return goal.build(GoalView(self, horizon))

    def check(
        self, assumptions: Sequence[Term], timeout_ms: int = 5000, *, fixed: bool = False
    ) -> tuple[Status, z3.ModelRef | None, float]:
        """Check the unrolling under ``assumptions``: (status, model if sat, ms).

        The limit is z3's *resource* limit (``rlimit``), which counts solver work, not
        seconds: the same query gives up at the same point on a busy or an idle machine,
        so the same task set comes out either way. ``timeout_ms`` is converted at
        :data:`RLIMIT_PER_MS` (calibrated on this project's queries: a few million units
        per second), fewer over a big universe (:func:`query_rlimit`); a wall-clock
        limit :data:`WALL_GUARD` times longer only guards against a hang. It must stay
        far above what a loaded machine needs: at ten times,
        a machine running ten processes per core hit it first, and the same seed gave
        another task set (a proof tallied ``timeout`` on one run and not the other).

        ``fixed``: the assumptions fix every choice (a pinned chain); they are asserted
        in a one-shot solver that propagates them first (:meth:`_fixed_solver`).
        """
        t0 = time.perf_counter()
        solver = self._fixed_solver(assumptions) if fixed else self.solver
        solver.set("rlimit", query_rlimit(int(timeout_ms), self.rows))
        solver.set("timeout", int(timeout_ms) * WALL_GUARD)
        self._last = solver
        r = solver.check() if fixed else solver.check(*assumptions)
        ms = (time.perf_counter() - t0) * 1000
        if r == z3.sat:
            return "sat", solver.model(), ms
        if r == z3.unsat:
            return "unsat", None, ms
        return "unknown", None, ms

    def _fixed_solver(self, facts: Sequence[Term]) -> z3.Solver:
        """A one-shot solver holding every constraint and ``facts``, for a query that
        fixes every choice (the reference chain pinned): propagating the fixed values and
        solving the equations that define each step's state decide it before any search.
        The incremental solver, which takes its assumptions only during search, branches
        on every atom instead: 2.2 s against 0.3 s for a 13-call airline chain."""
        solver = z3.Then("propagate-values", "solve-eqs", "simplify", "smt").solver()
        ctx, ref = solver.ctx.ref(), solver.solver
        for t in [*self.added, *facts]:
            z3.Z3_solver_assert(ctx, ref, t.ast)
        return solver

    def reason_unknown(self) -> tuple[Inconclusive, str]:
        """Why the last check was inconclusive: the cause, and a detail to show.

        Running out of the resource limit is z3's ``max. resource limit exceeded``; the
        wall-clock guard gives ``timeout`` or ``canceled``. All three are a timeout here
        (:meth:`check` sets the resource limit from the time limit)."""
        r = str(self._last.reason_unknown())
        if "timeout" in r or "canceled" in r:
            return Inconclusive.TIMEOUT, "timeout"
        if "resource limit" in r:
            return Inconclusive.TIMEOUT, f"timeout ({r})"
        return Inconclusive.UNKNOWN, f"inconclusive: {r}"

    def extract(self, m: z3.ModelRef) -> list[Call]:
        """The witness chain of a model."""
        out: list[Call] = []
        for s in self.steps:
            if not is_t(m.eval(s.act, model_completion=True)):
                break
            j = m.eval(s.sel, model_completion=True).as_long()
            tool = self.tools[j]
            args = {
                p.name: self.uni.decode_value(
                    p.ty, m.eval(s.args[j][p.name], model_completion=True)
                )
                for p in tool.params.values()
            }
            out.append(Call(tool=tool.name, args=tool.given_args(args)))
        return out

    def final_state(self, m: z3.ModelRef, horizon: int | None = None) -> State:
        """The state after ``horizon`` steps (default: all unrolled) of a model
        (the slice's rows and created ones)."""
        st = self.states[-1] if horizon is None else self.state_at(horizon)
        return st.decode(self.uni, lambda t: m.eval(t, model_completion=True))

    def state_differs(self, other: State, horizon: int | None = None) -> Term:
        """The state after ``horizon`` steps (default k) differs from concrete
        ``other`` on the rows the encoding tracks."""
        ref = SymState.from_state(self.uni, self.restrict(other))
        fin = self.state_at(self.k if horizon is None else horizon)
        parts: list[Term] = []
        for ent, edef in self.domain.entities.items():
            for i in range(len(self.uni.keys[ent])):
                e1, e2 = fin.exists[ent][i], ref.exists[ent][i]
                diffs: list[Term] = []
                for f, fd in edef.fields.items():
                    a, b = fin.cells[ent][f][i], ref.cells[ent][f][i]
                    if isinstance(fd.ty, ListT):
                        diffs.extend(not_(eq(x, y)) for x, y in zip(a, b, strict=True))
                    else:
                        diffs.append(not_(eq(a, b)))
                parts.append(not_(eq(e1, e2)))
                parts.append(and_(e1, e2, or_(*diffs)))
            n_other = other.counters.get(ent, self.uni.counter0[ent]) - self.uni.counter0[ent]
            parts.append(not_(eq(fin.created[ent], int_val(n_other))))
        return or_(*parts)

    def _matches(self, step: _Step, j: int, calls: Sequence[Call]) -> list[Term]:
        """Per call of ``calls`` to tool ``j``: this step's arguments are that call's."""
        tool = self.tools[j]
        out: list[Term] = []
        for c in calls:
            full = tool.full_args(c.args)
            if c.tool != tool.name or set(full) != set(tool.params):
                continue
            parts: list[Term] = []
            for p, v in full.items():
                t = self.uni.encode_value(tool.params[p].ty, v)
                if t is None:
                    break
                parts.append(eq(step.args[j][p], t))
            else:
                out.append(and_(*parts))
        return out

    def writes_among(
        self, horizon: int, calls: Sequence[Call], times: Sequence[int], total: int
    ) -> Term:
        """Every write call of the first ``horizon`` steps is one of ``calls`` (same tool,
        same arguments), call ``i`` made at most ``times[i]`` times and at most ``total``
        writes in all; reads are free."""
        self.ensure(horizon)
        names = [t.name for t in self.tools]
        made: list[list[Term]] = [[] for _ in calls]
        parts: list[Term] = []
        for step in self.steps[:horizon]:
            for j, tool in enumerate(self.tools):
                if not tool.is_write:
                    continue
                opts: list[Term] = []
                for i, c in enumerate(calls):
                    if c.tool != names[j]:
                        continue
                    match = self._matches(step, j, [c])
                    if match:
                        m = and_(step.chosen[j], match[0])
                        made[i].append(m)
                        opts.append(match[0])
                parts.append(implies(step.chosen[j], or_(*opts)))
        for bs, n in zip(made, times, strict=True):
            live = [b for b in bs if not is_f(b)]
            if len(live) > n:
                parts.append(z3.AtMost(*live, n))
        parts.append(self.writes_at_most(horizon, total))
        return and_(*parts)

    def writes_at_most(self, horizon: int, total: int) -> Term:
        """The first ``horizon`` steps make at most ``total`` write calls, of any tool and
        arguments; reads are free."""
        self.ensure(horizon)
        chosen = [
            step.chosen[j]
            for step in self.steps[:horizon]
            for j, tool in enumerate(self.tools)
            if tool.is_write
        ]
        live = [b for b in chosen if not is_f(b)]
        return z3.AtMost(*live, total) if len(live) > total else LIT.TRUE

    def new_write(self, horizon: int, calls: Sequence[Call]) -> Term:
        """Some write call of the first ``horizon`` steps is none of ``calls``."""
        self.ensure(horizon)
        return or_(
            *(
                and_(step.chosen[j], not_(or_(*self._matches(step, j, calls))))
                for step in self.steps[:horizon]
                for j, tool in enumerate(self.tools)
                if tool.is_write
            )
        )

    def restrict(self, st: State) -> State:
        """``st`` restricted to the rows the encoding tracks: the slice's rows and the
        ids creates can make (to compare with decoded states). Other universe keys are
        ids that rows of the slice refer to; their rows never change, so the encoding
        holds them as absent constants and does not decode them."""
        tables: dict[str, dict[Key, dict[str, Any]]] = {}
        for e in self.domain.entities:
            rows = st.tables.get(e, {})
            # walk the tracked keys, not the whole table: the slice is small
            tracked = set(self.state.tables.get(e, {})) | self._created[e]
            tables[e] = {k: dict(rows[k]) for k in sorted(tracked, key=key_order) if k in rows}
        return State(tables, dict(st.counters), st.today)


def search(
    domain: Domain,
    state: State,
    givens: Iterable[Given],
    goal: GoalPredicate,
    k: int,
    *,
    tools: Sequence[str] | None = None,
    timeout_ms: int = 5000,
    length: int | None = None,
) -> SearchResult:
    """Is there a chain of at most ``k`` (exactly ``length``, if given) successful calls
    with known arguments after which ``goal`` holds? A witness chain when sat.

    ``tools`` restricts the tools chains may use; by default (and without ``length``),
    when the goal says what it reads, the tools irrelevant to it are left out
    (:func:`relevant_tools`: this changes no answer, since deleting irrelevant calls from
    a solution leaves a shorter solution; an exact length keeps every tool).
    A timeout gives status ``'unknown'`` with ``reason`` ``'timeout'``.
    """
    t0 = time.perf_counter()
    givens = list(givens)
    if tools is None and length is None:
        rel = goal.relevance(domain)
        tools = relevant_tools(domain, *rel) if rel is not None else None
    bmc = Bmc(
        domain,
        state,
        givens,
        max(k, length or 0),
        tools=tools,
        seeds={x for x in goal.seeds() if domain.int_keys or isinstance(x, str)},
        extra=goal.typed_values(domain),
    )
    assume = [bmc.lit("goal", bmc.goal_term(goal))]
    if length is not None:
        assume += bmc.length_is(length)
    status, model, _ = bmc.check(assume, timeout_ms)
    chain = bmc.extract(model) if model is not None else None
    reason = bmc.reason_unknown()[1] if status == "unknown" else ""
    return SearchResult(status, chain, (time.perf_counter() - t0) * 1000, reason)


__all__ = [
    "AnyGoal",
    "Bmc",
    "ChangesGoal",
    "FnGoal",
    "GoalPredicate",
    "GoalView",
    "Recognition",
    "SearchResult",
    "description_atoms",
    "query_rlimit",
    "reveal_sites",
    "search",
    "search_sites",
    "shown_sorts",
    "sort_type",
    "typed_givens",
]
