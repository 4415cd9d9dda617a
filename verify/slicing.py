"""Cone of influence by value flow: the rows that any knowable call chain can touch.

Proofs quantify over every chain of up to k calls whose arguments the agent *knows*
(:mod:`graphgen.knowledge`). A chain only touches the rows it can reach, and which rows it
can reach depends on which values it can hold. :func:`analyze_flow` computes, as one
fixpoint over the tools chains may use, an over-approximation of

* ``know[S]``   — every id/str/date value that can be known at sort ``S`` (givens at
  ``S``, plus what any output of any tool can reveal at ``S``, the mirror of
  :func:`graphgen.knowledge.facts_of_result`);
* ``vals(n)``   — every id/str/date value IR node ``n`` can evaluate to (literals;
  parameters range over ``know`` at their sort; fields of the rows the key can name;
  loop variables over the rows a scan can match; ...);
* ``written``   — the rows whose field (or existence, ``'*'``) a call can change, and the
  values it can write there.

and keeps, in the slice, every row of the state that some evaluation can *probe*:

1. a point read ``E[k]`` (also ``k in E``, a write to ``E[k]``, an id parameter's
   existence check) probes the rows whose key is in ``vals(k)``;
2. a scan over ``E`` (comprehension or aggregate) probes the rows that can satisfy
   every *selective* conjunct of its filter reached with only error-free conjuncts
   before it: ``x.f == X`` (also ``x.f in X``, ``X in x.f`` for a list field ``f``,
   ``R[x.r].g == X`` through a total reference ``r``, or an ``or`` of selective
   disjuncts) on a str/date/id field, satisfiable when the row's value can be in
   ``vals(X)``; a scan without one probes the whole table;
3. a call that can touch a row of ``E`` probes, for each ``unique`` str/date/id field,
   the rows holding a value that field of a touched row can hold (the uniqueness check
   compares a touched row with every other row); a unique field of another type keeps
   the table whole;
4. the rows a goal names are kept as they are (the goal reads them).

Only *callable* tools count: a tool some argument of which can never be known (no given
or output at its sort) is in no chain. And an argument for which a *fixed* precondition
(one reading only that parameter and cells no tool writes) is false on the initial
state can make no call succeed, so it is not followed further.

Why this is sound (the slice behaves exactly like the full state for every chain of
known arguments). By induction over the calls and over evaluation: (a) the states agree
on every kept row and rows outside the slice never change, since every write goes to a
probed row; (b) every id/str/date value an evaluation that counts produces at node ``n``
is in ``vals(n)`` — strings are never computed (the IR has no string operations), so
each is a literal, an argument (known, hence in ``know`` at its sort: knowledge only ever
comes from givens and outputs, which the fixpoint mirrors), a created id, or a field of
a row the evaluation reached through a probed key or a matching scan row (whose current
value is its initial one or one written there). Hence a point read finds the same row,
or the same absence, on both states; a scan visits a row outside the slice only up to
one of its selective conjuncts, which is false there (the row's value is not in
``vals(X)`` while ``X``'s value is), and the conjuncts before it cannot raise, so its
value and failure are the same; and uniqueness clashes can only involve kept rows. Ints are
computed, so int fields never select (tables read by int comparisons only stay whole
when scanned without a selective conjunct). Error-freedom is syntactic: literals,
variables, fields of the loop row (or of a row behind a *total* reference: a ref field
whose targets all exist and cannot be deleted), and operators over those; no
``min``/``max``.

The same fixpoint gives the encoding more facts it relies on: the *changeable* cells
(``written``: everything else keeps its initial value in every reachable state, so the
encoding can keep it constant); per key expression that does not depend on a loop
variable, the finite set of rows it can name (so a read or write through it only needs
those rows' cells); the items a list field can ever hold; and the tools chains can call.
The encoding checks the first claim (a template writing elsewhere is refused) and the
tests compare answers with the analysis on and off.

When the analysis meets something it does not model (a value it cannot bound, or a
node outside the IR's closed unions), it gives up and keeps the whole state; that is
always sound. Every walker here matches each IR node class by name, so mypy reports a
node added to the IR that the analysis has not been taught.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Never, NoReturn, TypeGuard, cast

from graphgen import ir
from graphgen.domain import Domain, Key, ToolDef, per_tool
from graphgen.errors import ToolError
from graphgen.footprint import cells_read
from graphgen.interp import evaluate
from graphgen.ir import free_vars
from graphgen.keys import next_counter
from graphgen.knowledge import Sort, field_sorts, key_sort, param_sort
from graphgen.state import State
from graphgen.strings import TEXT_OPS
from graphgen.strings import apply as str_apply
from graphgen.today import today_of_state
from graphgen.types import DATE, STR, ListT, MapT, OptT, PrimT, RecordT, RefT, RowT, Ty, strip_opt

# (field, is a list field); field "#key" is the key, "r>g" field g behind reference r
Selector = tuple[str, bool]
CellKey = tuple[str, str]  # (entity, field); field '*' is the row's existence
Alt = tuple[str, bool, ir.Expr, bool]  # (field, is a list field, X, X is a list)


_MAX_TEXTS = 1000  # computed texts tracked per expression; more is "unbounded"
# From this many keys (or arguments) on, what a field holds over them, and which of them
# a fixed check passes, is kept in the state's memo by the set itself: on a big catalogue
# every task on the state asks about the same thousands of items, and hashing the set
# costs a small part of walking its rows in Python.
_BIG = 512


def _stringish(t: Ty) -> bool:
    t = strip_opt(t)  # None is no string: an optional value's strings are its present ones
    # by class and name: ``t in (STR, DATE)`` ran the dataclass's __eq__ twice per call
    return isinstance(t, RefT) or (isinstance(t, PrimT) and t.name in _STRINGISH)


_STRINGISH = frozenset({STR.name, DATE.name})


def _atom(v: object) -> TypeGuard[Any]:
    """A value the analysis tracks as a finite set: a str (strings, dates, ids) or an
    int id (``type: int`` keys; other ints are never bounded, by their type)."""
    return isinstance(v, str) or (isinstance(v, int) and not isinstance(v, bool))


def _items(v: object) -> Iterable[object]:
    """A list field's items, or a scalar field's one value."""
    return v if isinstance(v, list) else (v,)


def _mentions(e: ir.Expr, var: str) -> bool:
    return any(isinstance(n, ir.Var) and n.name == var for n in ir.walk(e))


# ------------------------------------------------------------------ abstract values
# The value of an id/str/date expression is a set of strings; of a list, the value of
# its items; of a row, its entity and possible keys; of a dict literal, its fields'.
# ``None`` is the value of everything else (ints, bools, enum members: never tracked).


@dataclass
class AList:
    """A list value: what each item can be."""

    elem: Any


@dataclass
class ARow:
    """A whole row of ``entity`` whose key is one of ``keys``."""

    entity: str
    keys: set[Key]


@dataclass
class ARec:
    """A dict literal's value, per field."""

    fields: dict[str, Any]


@dataclass
class AMap:
    """A dict comprehension's value: the ids it can be keyed by, what each value can be."""

    keys: Any
    value: Any


class _GiveUp(Exception):
    """A value the analysis cannot bound: the caller keeps the whole state."""


def _unmodelled(node: Never) -> NoReturn:
    """The last arm of every walker here, in place of ``assert_never``: mypy accepts the
    call only when the arms before it name every IR node, and at run time a node outside
    the IR's closed unions makes the analysis give up, keeping the whole state (sound),
    instead of reading it as a value it does not track."""
    raise _GiveUp(f"{type(node).__name__} is not an IR node the analysis models")


def _check_modelled(e: ir.Expr) -> None:
    """Give up on any node of ``e`` outside :data:`graphgen.ir.Expr`, before a walker
    that cannot give up (``ir.children``, ``free_vars``) meets it."""
    match e:
        case (
            ir.Lit()
            | ir.Var()
            | ir.FieldOf()
            | ir.RowOf()
            | ir.Exists()
            | ir.Compare()
            | ir.BoolOp()
            | ir.Not()
            | ir.Arith()
            | ir.Neg()
            | ir.Contains()
            | ir.Len()
            | ir.ListLit()
            | ir.Comp()
            | ir.Agg()
            | ir.IfExp()
            | ir.DictLit()
            | ir.IsNone()
            | ir.Old()
            | ir.DictComp()
            | ir.Round()
            | ir.StrOp()
            | ir.Index()
            | ir.Today()
        ):
            for sub in ir.children(e):
                _check_modelled(sub)
        case _:
            _unmodelled(e)


def _check_tool_modelled(tool: ToolDef) -> None:
    """:func:`_check_modelled` over every expression and effect of ``tool``."""
    for chk in tool.requires:
        _check_modelled(chk.expr)
    for case in tool.cases:
        if case.when is not None:
            _check_modelled(case.when)
    for stmt in tool.effects:
        match stmt.effect:
            case ir.Assign() | ir.Create() | ir.Delete() | ir.ListEdit():
                for sub in ir.effect_exprs(stmt.effect):
                    _check_modelled(sub)
            case _:
                _unmodelled(stmt.effect)
    if tool.returns is not None:
        _check_modelled(tool.returns)


def _join(a: Any, b: Any) -> Any:
    if a is None:
        return b
    if b is None:
        return a
    if isinstance(a, set) and isinstance(b, set):
        return a | b
    if isinstance(a, AList) and isinstance(b, AList):
        return AList(_join(a.elem, b.elem))
    if isinstance(a, ARow) and isinstance(b, ARow) and a.entity == b.entity:
        return ARow(a.entity, a.keys | b.keys)
    if isinstance(a, ARec) and isinstance(b, ARec):
        return ARec(
            {k: _join(a.fields.get(k), b.fields.get(k)) for k in a.fields.keys() | b.fields.keys()}
        )
    raise _GiveUp(f"cannot join {type(a).__name__} and {type(b).__name__}")


def _strings(av: Any) -> set[Key]:
    """The strings of a scalar value (a set), or give up."""
    if isinstance(av, set):
        return av
    raise _GiveUp("an id/str/date value that the analysis did not bound")


# ------------------------------------------------------------------ the result


@dataclass
class Flow:
    """What :func:`analyze_flow` found (see the module docstring)."""

    state: State
    know: dict[Sort, frozenset[Key]] | None
    """Every id/str/date value knowable at each sort (None: not bounded)."""
    written: dict[CellKey, frozenset[Key]] | None
    """Rows (keys) whose field can change, per (entity, field); None: any row may."""
    key_vals: dict[int, tuple[ir.Expr, frozenset[Key]]] = field(default_factory=dict)
    """Per key expression that reads no loop variable (by ``id``), the keys it can
    evaluate to, with the node itself (ids are only meaningful while it lives)."""
    whole: bool = False
    """True when the analysis gave up and the state was kept whole."""

    everywhere: frozenset[Key] = frozenset()
    """Strings known at every sort."""
    callable: frozenset[str] = frozenset()
    """The tools some chain can call (every argument can be known): no other tool can
    appear in a chain the slice is for."""
    values: dict[CellKey, frozenset[Key]] = field(default_factory=dict)
    """Per (entity, field) of id/str/date values (or list items), every value a call
    can write there (rows created included)."""
    params: dict[tuple[str, str], frozenset[Key]] = field(default_factory=dict)
    """Per (tool, parameter) whose preconditions rule out some known values for every
    reachable state, the values left (see ``_fixed_checks``)."""

    def keys_of(self, e: ir.Expr) -> frozenset[Key] | None:
        """The keys ``e`` can evaluate to, if bounded."""
        hit = self.key_vals.get(id(e))
        return hit[1] if hit is not None and hit[0] is e else None

    def param_keys(self, tool: str, p: Any) -> frozenset[Key] | None:
        """The values parameter ``p`` (an id) of ``tool`` can be given in a call that can
        succeed: those known at its sort, less those a fixed precondition rules out."""
        if self.know is None:
            return None
        hit = self.params.get((tool, p.name))
        if hit is not None:
            return hit
        return self.know.get(param_sort(p), frozenset()) | self.everywhere


# ------------------------------------------------------------------ the analysis


class _Flow:
    def __init__(
        self,
        domain: Domain,
        state: State,
        tools: Sequence[ToolDef],
        creates: Mapping[str, int],
        everywhere: set[Key],
        all_known: bool = False,
    ) -> None:
        self.domain = domain
        self.state = state
        self.tools = list(tools)
        self.everywhere = everywhere
        self.all_known = all_known
        self.some: set[Sort] = set()  # sorts at which some value can be known
        self.called: set[str] = set()  # tools some chain can call
        self.static_writes = {
            (s.effect.entity, s.effect.field)
            for t in self.tools
            for s in t.effects
            if isinstance(s.effect, ir.Assign | ir.ListEdit)
        }
        self._fixed: dict[str, dict[str, list[ir.Expr]]] = {}
        self.param_values: dict[tuple[str, str], set[Key]] = {}  # filtered arguments
        self.deleted = {
            s.effect.entity
            for t in self.tools
            for s in t.effects
            if isinstance(s.effect, ir.Delete)
        }
        self.total = self._total_refs()
        self.tables = {e: state.tables.get(e, {}) for e in domain.entities}
        # what is worked out from the state's rows alone, shared by every task on it
        self.memo = state.memo()
        self.created: dict[str, list[Key]] = {}
        made = {
            s.effect.entity
            for t in self.tools
            for s in t.effects
            if isinstance(s.effect, ir.Create)
        }
        for ent, edef in domain.entities.items():
            n0 = next_counter(edef, state.tables.get(ent, {}), state.counters.get(ent, 1))
            n = int(creates.get(ent, 0)) if ent in made else 0
            self.created[ent] = [edef.make_id(n0 + i) for i in range(n)]
        self.kept_rows: dict[str, set[Key]] = {e: set() for e in domain.entities}
        self.full: set[str] = set()
        self.know: dict[Sort, set[Key]] = {}
        self.written_keys: dict[CellKey, set[Key]] = {}
        self.written_values: dict[CellKey, set[Key]] = {}
        # per key expression, the keys it can evaluate to: shared with the value first
        # found (or the warm start's) until it grows, then a _Grown of its own
        self.key_vals: dict[int, tuple[ir.Expr, set[Key] | frozenset[Key]]] = {}
        self.changed = False
        self._sel: dict[int, tuple[ir.Comp, list[list[Alt]] | None]] = {}
        self._loops = 0  # depth of comprehensions being evaluated
        self._loop_vars: set[str] = set()
        self._memo: dict[int, Any] = {}
        # What each tool last ran on: a tool whose inputs have not grown since adds
        # nothing when run again (every set here only grows), so it is skipped.
        self.ran: dict[str, tuple[int, ...]] = {}

    def snapshot(self) -> _Warm:
        """Everything found so far, frozen (for :meth:`resume`)."""
        return _Warm(
            tuple(self.tools),
            frozenset(self.some),
            frozenset(self.called),
            frozenset(self.full),
            {e: frozenset(v) for e, v in self.kept_rows.items()},
            {s: frozenset(v) for s, v in self.know.items()},
            {ck: frozenset(v) for ck, v in self.written_keys.items()},
            {ck: frozenset(v) for ck, v in self.written_values.items()},
            {tp: frozenset(v) for tp, v in self.param_values.items()},
            _frozen_bounds(self.key_vals),
            dict(self.ran),
        )

    def resume(self, w: _Warm) -> None:
        """Go on from ``w``, found by an analysis of the same state and tools from less
        knowledge and fewer created rows. Every set here only grows and every step is
        monotone, so the fixpoint reached from ``w`` is the one reached from nothing;
        a tool whose inputs (:meth:`_inputs`) are still those it last ran on in ``w``
        would add nothing, and is skipped as within one analysis."""
        self.some = set(w.some)
        self.called = set(w.called)
        self.full = set(w.full)
        self.kept_rows = {e: set(v) for e, v in w.kept_rows.items()}
        self.know = {s: set(v) for s, v in w.know.items()}
        self.written_keys = {ck: set(v) for ck, v in w.written_keys.items()}
        self.written_values = {ck: set(v) for ck, v in w.written_values.items()}
        self.param_values = {tp: set(v) for tp, v in w.param_values.items()}
        self.key_vals = dict(w.key_vals)
        self.ran = dict(w.ran)

    # ------------------------------------------------------------ total references

    def _total_refs(self) -> set[tuple[str, str]]:
        """Ref fields whose value always names an existing row."""
        writes: dict[tuple[str, str], list[ir.Expr]] = {}
        for t in self.tools:
            for s in t.effects:
                match s.effect:
                    case ir.Assign(entity=ent, field=f, value=v):
                        writes.setdefault((ent, f), []).append(v)
                    case ir.Create(entity=ent, values=vs):
                        for f, v in vs:
                            writes.setdefault((ent, f), []).append(v)
                    case ir.ListEdit() | ir.Delete():
                        pass  # list items are no ref values; deletes are in ``deleted``
                    case _:
                        _unmodelled(s.effect)
        cand: set[tuple[str, str]] = set()
        for ent, edef in self.domain.entities.items():
            for f, fd in edef.fields.items():
                if not isinstance(fd.ty, RefT) or fd.ty.entity in self.deleted:
                    continue
                if self._names_rows(ent, f, fd.ty.entity):
                    cand.add((ent, f))
        changed = True
        while changed:
            changed = False
            for ef in sorted(cand):
                if not all(self._existing(v, cand) for v in writes.get(ef, [])):
                    cand.discard(ef)
                    changed = True
        return cand

    def _names_rows(self, ent: str, f: str, target: str) -> bool:
        """Does field ``f`` of every row of ``ent`` name a row of ``target``?"""
        return self.state.refs_exist(ent, f, target)

    def _existing(self, v: ir.Expr, total: set[tuple[str, str]]) -> bool:
        """``v`` (an id) names an existing row whenever it is written."""
        match v:
            case ir.Var():
                return True  # a parameter (checked), a created id, or a loop row
            case ir.FieldOf(entity=e, field=f):
                return (e, f) in total
            case ir.Lit(value=val, ty=RefT(entity=e)):
                return e not in self.deleted and val in self.state.tables.get(e, {})
            case ir.IfExp(then=a, orelse=b):
                return self._existing(a, total) and self._existing(b, total)
            case (
                ir.Lit()
                | ir.RowOf()
                | ir.Exists()
                | ir.Compare()
                | ir.BoolOp()
                | ir.Not()
                | ir.Arith()
                | ir.Neg()
                | ir.Contains()
                | ir.Len()
                | ir.ListLit()
                | ir.Comp()
                | ir.Agg()
                | ir.DictLit()
                | ir.IsNone()
                | ir.Old()
                | ir.DictComp()
                | ir.Round()
                | ir.StrOp()
                | ir.Index()
                | ir.Today()
            ):
                return False  # not shown to name a row: the reference is not total
            case _:
                _unmodelled(v)

    # ------------------------------------------------------------ error freedom

    def _safe_key(self, ent: str, k: ir.Expr, loops: frozenset[str]) -> bool:
        match k:
            case ir.Var(name=n):
                # loop rows exist; parameters are checked and bindings created, and stay
                # when the table is never deleted from
                return n in loops or ent not in self.deleted
            case ir.FieldOf(entity=e, key=k2, field=f):
                return (e, f) in self.total and self._safe_key(e, k2, loops)
            case ir.IfExp(cond=c, then=a, orelse=b):
                return (
                    self.error_free(c, loops)
                    and self._safe_key(ent, a, loops)
                    and self._safe_key(ent, b, loops)
                )
            case (
                ir.Lit()
                | ir.RowOf()
                | ir.Exists()
                | ir.Compare()
                | ir.BoolOp()
                | ir.Not()
                | ir.Arith()
                | ir.Neg()
                | ir.Contains()
                | ir.Len()
                | ir.ListLit()
                | ir.Comp()
                | ir.Agg()
                | ir.DictLit()
                | ir.IsNone()
                | ir.Old()
                | ir.DictComp()
                | ir.Round()
                | ir.StrOp()
                | ir.Index()
                | ir.Today()
            ):
                return False  # not shown to name an existing row: the read may raise
            case _:
                _unmodelled(k)

    def error_free(self, e: ir.Expr, loops: frozenset[str]) -> bool:
        """``e`` can never raise (so evaluating it on any row changes nothing)."""
        match e:
            case ir.Lit() | ir.Var():
                return True
            case ir.FieldOf(entity=ent, key=k) | ir.RowOf(entity=ent, key=k):
                return self._safe_key(ent, k, loops) and self.error_free(k, loops)
            case ir.Agg(fn=fn, comp=c):
                return fn not in ("min", "max") and self.error_free(c, loops)
            case ir.Round(den=den) if den is not None:
                return False  # the divisor may be zero
            case ir.Index():
                return False  # an index past the end raises
            case ir.Comp(var=v, cond=c, proj=p):
                inner = loops | {v}
                return (c is None or self.error_free(c, inner)) and self.error_free(p, inner)
            case (
                ir.Exists()
                | ir.Compare()
                | ir.BoolOp()
                | ir.Not()
                | ir.Arith()
                | ir.Neg()
                | ir.Contains()
                | ir.Len()
                | ir.ListLit()
                | ir.IfExp()
                | ir.DictLit()
                | ir.IsNone()
                | ir.Old()
                | ir.DictComp()
                | ir.Round()
                | ir.StrOp()
                | ir.Today()
            ):
                # these raise only through a sub-expression
                return all(self.error_free(x, loops) for x in ir.children(e))
            case _:
                _unmodelled(e)

    # ------------------------------------------------------------ selective conjuncts

    def _loop_field(self, e: ir.Expr, var: str, ent: str) -> Selector | None:
        """What of the loop row ``e`` reads: its key (``"#key"``), a field ``f``, or a
        field ``g`` of the row a total reference ``r`` names (``"r>g"``)."""
        match e:
            case ir.Var(name=n):
                return ("#key", False) if n == var else None
            case ir.FieldOf(entity=row_ent, key=ir.Var(name=n), field=f):
                if row_ent != ent or n != var:
                    return None
                fd = self.domain.entities[ent].fields[f]
                if isinstance(fd.ty, ListT):
                    return (f, True) if _stringish(fd.ty.elem) else None
                return (f, False) if _stringish(fd.ty) else None
            case ir.FieldOf(
                entity=target,
                key=ir.FieldOf(entity=row_ent, key=ir.Var(name=n), field=ref),
                field=g,
            ):
                if (
                    row_ent == ent
                    and n == var
                    and (ent, ref) in self.total
                    and target not in self.deleted
                ):
                    fd = self.domain.entities[target].fields[g]
                    if _stringish(fd.ty) and not isinstance(fd.ty, ListT):
                        return (f"{ref}>{g}", False)
                return None
            case (
                ir.Lit()
                | ir.FieldOf()
                | ir.RowOf()
                | ir.Exists()
                | ir.Compare()
                | ir.BoolOp()
                | ir.Not()
                | ir.Arith()
                | ir.Neg()
                | ir.Contains()
                | ir.Len()
                | ir.ListLit()
                | ir.Comp()
                | ir.Agg()
                | ir.IfExp()
                | ir.DictLit()
                | ir.IsNone()
                | ir.Old()
                | ir.DictComp()
                | ir.Round()
                | ir.StrOp()
                | ir.Index()
                | ir.Today()
            ):
                return None  # reads no field of the loop row that the analysis follows
            case _:
                _unmodelled(e)

    def _requirements(
        self, e: ir.Expr, var: str, ent: str, loops: frozenset[str]
    ) -> list[list[Alt]] | None:
        """Requirements on a row, each a list of alternatives ``(field, is_list, X, X is
        a list)``: a row that matches no alternative of some requirement makes ``e``
        false without raising. None when there is none."""
        match e:
            case ir.Compare(op="==", left=a, right=b):
                for x, y in ((a, b), (b, a)):
                    lf = self._loop_field(x, var, ent)
                    if (
                        lf is not None
                        and not lf[1]
                        and not _mentions(y, var)
                        and self.error_free(y, loops)
                    ):
                        return [[(lf[0], False, y, False)]]
                return None
            case ir.Contains(item=a, container=b, negated=False):
                lf = self._loop_field(a, var, ent)
                if (
                    lf is not None
                    and not lf[1]
                    and not _mentions(b, var)
                    and self.error_free(b, loops)
                ):
                    return [[(lf[0], False, b, True)]]
                lf = self._loop_field(b, var, ent)
                if lf is not None and lf[1] and not _mentions(a, var) and self.error_free(a, loops):
                    return [[(lf[0], True, a, False)]]
                return None
            case ir.Agg(
                fn="any", comp=ir.Comp(var=y, entity=other, cond=inner, proj=ir.Compare() as eq)
            ) if eq.op == "==" and y != var:
                # any(y.r == x.f for y in Y if c): false unless x.f is among
                # [y.r for y in Y if c], a list that does not depend on the row ("the
                # payment method of my reservation on ..."). Error-free as a whole, so
                # is the any on any row: reading x.f cannot raise.
                for a, b in ((eq.left, eq.right), (eq.right, eq.left)):
                    lf = self._loop_field(b, var, ent)
                    if lf is None or lf[1] or _mentions(a, var):
                        continue
                    if inner is not None and _mentions(inner, var):
                        return None
                    shows = ir.Comp(y, other, inner, a, ListT(a.ty))
                    if self.error_free(shows, loops):
                        return [[(lf[0], False, shows, True)]]
                return None
            case ir.BoolOp(op="and", values=vs):
                # Every requirement of a conjunct reached with only error-free conjuncts
                # before it counts: failing it makes the conjunction false, and nothing
                # before it raises.
                out: list[list[Alt]] = []
                for c in vs:
                    r = self._requirements(c, var, ent, loops)
                    if r is not None:
                        out += r
                    if not self.error_free(c, loops):
                        break
                return out or None
            case ir.BoolOp(op="or", values=vs):
                # False without raising when every disjunct is: a row must fail one
                # requirement of each (we keep the first of each disjunct).
                alts: list[Alt] = []
                for v in vs:
                    r = self._requirements(v, var, ent, loops)
                    if r is None:
                        return None
                    alts += r[0]
                return [alts]
            case (
                ir.Lit()
                | ir.Var()
                | ir.FieldOf()
                | ir.RowOf()
                | ir.Exists()
                | ir.Compare()
                | ir.BoolOp()
                | ir.Not()
                | ir.Arith()
                | ir.Neg()
                | ir.Contains()
                | ir.Len()
                | ir.ListLit()
                | ir.Comp()
                | ir.Agg()
                | ir.IfExp()
                | ir.DictLit()
                | ir.IsNone()
                | ir.Old()
                | ir.DictComp()
                | ir.Round()
                | ir.StrOp()
                | ir.Index()
                | ir.Today()
            ):
                return None  # no requirement: the scan keeps every row it can reach
            case _:
                _unmodelled(e)

    def requirements(self, c: ir.Comp, loops: frozenset[str]) -> list[list[Alt]] | None:
        """The requirements of ``c``'s filter on the rows it scans (cached per node)."""
        hit = self._sel.get(id(c))
        if hit is not None and hit[0] is c:
            return hit[1]
        inner = loops | {c.var}
        req = None if c.cond is None else self._requirements(c.cond, c.var, c.entity, inner)
        self._sel[id(c)] = (c, req)
        return req

    # ------------------------------------------------------------ rows and fields

    def keys_with(self, ent: str, f: str, value: Key) -> Sequence[Key]:
        """The keys of the state rows whose field ``f`` holds ``value`` (an item of it,
        for a list field). Answered by the state's own indexes (:meth:`State.keys_where`,
        :meth:`State.keys_holding`): built once per table and shared with the
        interpreter and every task on the same initial state."""
        if isinstance(self.domain.entities[ent].fields[f].ty, ListT):  # never optional
            return self.state.keys_holding(ent, f, value)
        return self.state.keys_where(ent, f, value)

    def include(self, ent: str, keys: Iterable[Key]) -> None:
        kept = self.kept_rows[ent]
        table = self.tables[ent]
        if len(kept) == len(table):
            return  # every row is kept (kept rows are the table's)
        # the set difference first: the same large sets come back on every pass
        new = (keys if isinstance(keys, set | frozenset) else set(keys)) - kept
        for k in new:
            if k in table:
                kept.add(k)
                self.changed = True

    def whole(self, ent: str) -> None:
        if ent not in self.full:
            self.full.add(ent)
            self.include(ent, list(self.tables[ent]))
            self.changed = True

    def probe(self, ent: str, keys: Any) -> set[Key]:
        ks = _strings(keys)
        self.include(ent, ks)
        return ks

    def all_keys(self, ent: str) -> set[Key]:
        return set(self.tables[ent]) | set(self.created[ent])

    def existing(self, ent: str, keys: set[Key]) -> set[Key]:
        """The keys of ``keys`` that name a row, initial or created (``keys &
        all_keys(ent)`` without building the whole table's key set)."""
        table, created = self.tables[ent], self.created[ent]
        return {k for k in keys if k in table or k in created}

    def _add(self, store: dict[Any, set[Key]], key: Any, vals: Iterable[Key]) -> None:
        cur = store.setdefault(key, set())
        n = len(cur)
        cur.update(vals)
        if len(cur) != n:
            self.changed = True

    def field_values(self, ent: str, f: str, keys: set[Key]) -> Any:
        """What field ``f`` of a row keyed in ``keys`` can hold."""
        fd = self.domain.entities[ent].fields[f]
        ty = fd.ty
        is_list = isinstance(ty, ListT)
        elem = ty.elem if isinstance(ty, ListT) else ty
        if not _stringish(elem):
            return AList(None) if is_list else None
        if self._every_row(ent, keys):
            # once a listing made a whole table known, its scans ask this again and again
            out = set(self._column(ent, f))
        elif len(keys) >= _BIG:
            memo_key = ("slice-field-of", id(self.domain), ent, f, frozenset(keys))
            got = self.memo.get(memo_key)
            if got is None:
                got = self.memo[memo_key] = frozenset(self._held(ent, f, keys))
            out = set(got)
        else:
            out = self._held(ent, f, keys)
        wk = self.written_keys.get((ent, f))
        if wk and not wk.isdisjoint(keys):
            out |= self.written_values.get((ent, f), set())
        return AList(out) if is_list else out

    def _held(self, ent: str, f: str, keys: Iterable[Key]) -> set[Key]:
        """The tracked values field ``f`` of the state's rows keyed in ``keys`` holds."""
        table = self.tables[ent]
        out: set[Key] = set()
        for k in keys:
            row = table.get(k)
            if row is not None:
                v = row.get(f)
                if isinstance(v, list):
                    out.update(x for x in v if _atom(x))
                elif _atom(v):
                    out.add(v)
        return out

    def _every_row(self, ent: str, keys: set[Key]) -> bool:
        """Do ``keys`` name every row of ``ent``'s table?"""
        table = self.tables[ent]
        return len(keys) >= len(table) and keys.issuperset(table.keys())

    def _every_value(self, ent: str, f: str, want: set[Key]) -> bool:
        """Is ``want`` every value field ``f`` of ``ent`` holds (:meth:`_column`)?"""
        col = self._column(ent, f)
        return len(want) >= len(col) and want.issuperset(col)

    def _column(self, ent: str, f: str) -> frozenset[Key]:
        """The tracked values of field ``f`` over all of ``ent``'s rows: a function of
        the state's rows alone, kept in the state's memo for every task on that state."""
        memo = self.memo
        key = ("slice-column", id(self.domain), ent, f)
        got = memo.get(key)
        if got is None:
            vals: set[Key] = set()
            for row in self.tables[ent].values():
                v = row.get(f)
                if isinstance(v, list):
                    vals.update(x for x in v if _atom(x))
                elif _atom(v):
                    vals.add(v)
            got = memo[key] = frozenset(vals)
        return got

    def _holders(self, ent: str, f: str) -> frozenset[Key]:
        """The keys of ``ent``'s rows whose field ``f`` holds a tracked value (one of
        :meth:`_column`), kept in the state's memo as that is."""
        memo = self.memo
        key = ("slice-holders", id(self.domain), ent, f)
        got = memo.get(key)
        if got is None:
            got = memo[key] = frozenset(
                k
                for k, row in self.tables[ent].items()
                if any(_atom(x) for x in _items(row.get(f)))
            )
        return got

    # ------------------------------------------------------------ evaluation

    def param_value(self, p: Any) -> Any:
        if not _stringish(p.ty):
            return None
        known = self.know.get(param_sort(p), set())
        return known | self.everywhere if self.everywhere else set(known)

    def value_of(self, e: ir.Expr, env: Mapping[str, Any]) -> Any:
        """The abstract value of ``e``, recording every probe it makes."""
        match e:
            case ir.Lit(value=v, ty=t):
                if v is None and _stringish(t):
                    return set()  # None names no row and is no string
                return {v} if _stringish(t) and _atom(v) else None
            case ir.Var(name=n):
                if n not in env:
                    raise _GiveUp(f"unbound name {n!r}")
                return env[n]  # never changed in place: every value here is a new set
            case ir.FieldOf(entity=ent, key=k, field=f):
                keys = self.key(k, env, ent)
                return self.field_values(ent, f, keys)
            case ir.RowOf(entity=ent, key=k):
                return ARow(ent, self.key(k, env, ent))
            case ir.Exists(entity=ent, key=k):
                self.key(k, env, ent)
                return None
            case ir.Comp():
                return self.comp(e, env)
            case ir.Agg(fn=fn, comp=c):
                lst = self.comp(c, env)
                return lst.elem if fn in ("min", "max") else None
            case ir.IfExp(cond=c, then=t, orelse=o):
                self.value_of(c, env)
                return _join(self.value_of(t, env), self.value_of(o, env))
            case ir.ListLit(items=items):
                out: Any = None
                for it in items:
                    out = _join(out, self.value_of(it, env))
                if out is None and isinstance(e.ty, ListT) and _stringish(e.ty.elem):
                    out = set()  # the empty list
                return AList(out)
            case ir.DictLit(keys=ks, values=vs):
                return ARec({k: self.value_of(v, env) for k, v in zip(ks, vs, strict=True)})
            case ir.Old(operand=o):
                # the state before a call is a reachable state: what the operand can be
                # on any reachable state bounds it
                return self.value_of(o, env)
            case ir.DictComp(comp=c):
                ids = ir.Comp(c.var, c.entity, c.cond, ir.Var(c.var, RefT(c.entity)), c.ty)
                return AMap(self.comp(ids, env).elem, self.comp(c, env).elem)
            case ir.Round():
                for x in ir.children(e):  # a number, never tracked; operands probe rows
                    self.value_of(x, env)
                return None
            case ir.StrOp(op=op, args=args):
                vals = [self.value_of(x, env) for x in args]
                if op not in TEXT_OPS:
                    return None  # a bool or an int
                # the texts it can make, when every part is a bounded set of strings
                texts: set[str] = {""}
                for x, v in zip(args, vals, strict=True):
                    if not (isinstance(v, set) and _stringish(x.ty)):
                        return None
                    if len(texts) * len(v) > _MAX_TEXTS:
                        return None
                    texts = {t + str(s) for t in texts for s in v}  # an id may be an int
                if op in ("lower", "upper"):
                    return {str_apply(op, [t], [STR]) for t in texts}
                return texts
            case ir.Index(operand=xs, index=i):
                self.value_of(i, env)
                lst = self.value_of(xs, env)
                return lst.elem if isinstance(lst, AList) else None  # any item of the list
            case ir.Today():
                # one date through a whole chain (the state's): bounded, so a row created
                # with today's date does not make the analysis keep the whole state
                return {today_of_state(self.state)}
            case ir.Arith() if e.ty == DATE and all(
                isinstance(n, ir.Today | ir.Lit | ir.Arith) for n in ir.walk(e)
            ):
                # a constant number of days from today ("today() + 30") is one date too.
                # A shift of a field's date stays unbounded: due_on + 7, written back,
                # would grow the set of dates without end.
                try:
                    return {evaluate(e, self.state, {}, self.domain)}
                except ToolError:
                    return set()  # out of the calendar: the call fails, writing nothing
            case (
                ir.Compare()
                | ir.BoolOp()
                | ir.Not()
                | ir.Arith()
                | ir.Neg()
                | ir.Contains()
                | ir.Len()
                | ir.IsNone()
            ):
                # bool or int values, never tracked; their operands still probe rows
                for x in ir.children(e):
                    self.value_of(x, env)
                return None
            case _:
                _unmodelled(e)

    def key(self, k: ir.Expr, env: Mapping[str, Any], ent: str) -> set[Key]:
        """Evaluate a key expression and probe the rows it can name."""
        ks = self.probe(ent, self.value_of(k, env))
        if self._loops == 0 or not (free_vars(k) & self._loop_vars):
            # The first value is kept as it is (no value here is changed in place, and
            # key expressions reading one parameter share it), copied when it grows.
            prev = self.key_vals.get(id(k))
            if prev is None or prev[0] is not k:
                self.key_vals[id(k)] = (k, ks)
            elif isinstance(prev[1], _Grown):
                prev[1].update(ks)
            elif not prev[1].issuperset(ks):
                grown = _Grown(prev[1])  # (a set subclass's `|` gives a plain set)
                grown.update(ks)
                self.key_vals[id(k)] = (k, grown)
        return ks

    def matching(self, ent: str, alts: list[Alt], env: Mapping[str, Any]) -> set[Key]:
        """The rows (state rows and created ones) that can match some alternative."""
        rows: set[Key] = set()
        for f, _is_list, x, x_list in alts:
            xv = self.value_of(x, env)
            if x_list:
                if not isinstance(xv, AList):
                    raise _GiveUp("'in' over something that is not a list")
                xv = xv.elem
            want = _strings(xv)
            if f == "#key":
                rows.update(k for k in want if k in self.tables[ent] or k in self.created[ent])
                continue
            if ">" in f:
                # through a total reference: the rows whose referenced row can match
                ref, f2 = f.split(">")
                rty = self.domain.entities[ent].fields[ref].ty
                assert isinstance(rty, RefT)
                want = self._holding(rty.entity, f2, want)
                f = ref
            rows |= self._holding(ent, f, want)
        return rows

    def _holding(self, ent: str, f: str, want: set[Key]) -> set[Key]:
        """The rows (state rows and created ones) whose field ``f`` (an item of it, for
        a list) can be one of ``want``: now, or after a write."""
        if self._every_value(ent, f, want):
            rows = set(self._holders(ent, f))
        else:
            rows = set()
            for v in want:
                rows.update(self.keys_with(ent, f, v))
        # a written row can hold any value written there
        wk = self.written_keys.get((ent, f))
        if wk and not self.written_values.get((ent, f), set()).isdisjoint(want):
            rows |= wk
        return rows

    def comp(self, c: ir.Comp, env: Mapping[str, Any]) -> AList:
        ent = c.entity
        loops = frozenset(n for n, v in env.items() if n in self._loop_vars)
        reqs = self.requirements(c, loops)
        rows: set[Key] = set()
        if reqs is None:
            self.whole(ent)
            rows = self.all_keys(ent)
        else:
            first = True
            for req in reqs:
                got = self.matching(ent, req, env)
                rows = got if first else rows & got
                first = False
            self.include(ent, rows)
        inner = dict(env)
        inner[c.var] = rows
        outer = self._loop_vars
        self._loop_vars = outer | {c.var}
        self._loops += 1
        try:
            if c.cond is not None:
                self.value_of(c.cond, inner)
            proj = self.value_of(c.proj, inner)
        finally:
            self._loops -= 1
            self._loop_vars = outer
        if proj is None and _stringish(c.proj.ty):
            proj = set()
        return AList(proj)

    # ------------------------------------------------------------ knowledge

    def reveal(self, e: ir.Expr | None, t: Ty, av: Any) -> None:
        """What an output of ``e`` (type ``t``, value ``av``) can reveal (the mirror of
        :func:`graphgen.knowledge._facts`)."""
        if av is None:
            return
        if isinstance(e, ir.FieldOf) and not isinstance(t, ListT):
            for s in field_sorts(self.domain, e.entity, e.field):
                self._learn(s, av)
            return
        if isinstance(t, ListT) and isinstance(av, AList):
            if isinstance(e, ir.ListLit):
                for item in e.items:
                    # the item's own value when the return value was evaluated item by
                    # item, else the join of all items (an over-approximation)
                    self.reveal(item, t.elem, self._memo.get(id(item), av.elem))
                return
            inner = e.proj if isinstance(e, ir.Comp) else None
            self.reveal(inner, t.elem, av.elem)
            return
        if isinstance(t, RowT) and isinstance(av, ARow):
            edef = self.domain.entities[t.entity]
            self._learn(key_sort(t.entity), av.keys)
            for name, fd in edef.fields.items():
                fv = self.field_values(t.entity, name, av.keys)
                if isinstance(fd.ty, ListT):
                    if isinstance(fd.ty.elem, RefT) and isinstance(fv, AList):
                        self._learn(key_sort(fd.ty.elem.entity), fv.elem)
                else:
                    for s in field_sorts(self.domain, t.entity, name):
                        self._learn(s, fv)
            return
        if isinstance(t, RecordT) and isinstance(av, ARec):
            exprs = dict(zip(e.keys, e.values, strict=True)) if isinstance(e, ir.DictLit) else {}
            for name, ft in t.fields:
                if name in av.fields:
                    self.reveal(exprs.get(name), ft, av.fields[name])
            return
        if isinstance(t, MapT) and isinstance(av, AMap):
            self.reveal(None, t.key, av.keys)
            self.reveal(e.comp.proj if isinstance(e, ir.DictComp) else None, t.value, av.value)
            return
        if isinstance(t, RefT):
            self._learn(key_sort(t.entity), av)

    def _learn(self, s: Sort, av: Any) -> None:
        if s not in self.some:
            self.some.add(s)
            self.changed = True
        if av is None:
            return  # an int/bool sort: only *whether* something is known is tracked
        self._add(self.know, s, _strings(av))

    def callable(self, t: ToolDef) -> bool:
        """Every argument of ``t`` can be known (else no chain can call it)."""
        if self.all_known:
            return True
        for p in t.params.values():
            if isinstance(p.ty, OptT):
                continue  # it can always be left out (None), whatever is known
            s = param_sort(p)
            if _stringish(p.ty):
                if not self.know.get(s) and not self.everywhere:
                    return False
            elif s not in self.some:
                return False
        return True

    # ------------------------------------------------------------ tools

    def _fixed_checks(self, t: ToolDef) -> dict[str, list[ir.Expr]]:
        """Per id/str/date parameter, the conjuncts of ``t``'s preconditions that read
        only that parameter and cells no tool writes (no scans, no existence tests):
        such a conjunct has the same value for a given argument in every reachable
        state, so an argument for which it is false on the initial state can never make
        a call succeed (if it raises there, the argument is kept)."""
        hit = self._fixed.get(t.name)
        if hit is not None:
            return hit
        out: dict[str, list[ir.Expr]] = {}
        for chk in t.requires:
            stack = [chk.expr]
            while stack:
                c = stack.pop()
                if isinstance(c, ir.BoolOp) and c.op == "and":
                    stack.extend(c.values)
                    continue
                names = free_vars(c)
                if len(names) != 1:
                    continue
                (pn,) = names
                p = t.params.get(pn)
                if p is None or not _stringish(p.ty):
                    continue
                if all(self._fixed_node(n) for n in ir.walk(c)):
                    out.setdefault(pn, []).append(c)
        self._fixed[t.name] = out
        return out

    def _fixed_node(self, n: ir.Expr) -> bool:
        """Node ``n`` reads nothing that can differ between reachable states."""
        match n:
            case ir.FieldOf(entity=ent, field=f):
                return (ent, f) not in self.static_writes
            case ir.Comp() | ir.Agg() | ir.Exists() | ir.RowOf() | ir.DictComp():
                return False  # scans and existence see rows created or deleted
            case (
                ir.Lit()
                | ir.Var()
                | ir.Compare()
                | ir.BoolOp()
                | ir.Not()
                | ir.Arith()
                | ir.Neg()
                | ir.Contains()
                | ir.Len()
                | ir.ListLit()
                | ir.IfExp()
                | ir.DictLit()
                | ir.IsNone()
                | ir.Old()
                | ir.Round()
                | ir.StrOp()
                | ir.Index()
                | ir.Today()
            ):
                return True
            case _:
                _unmodelled(n)

    def _passing(self, c: ir.Expr, name: str, vals: set[Key]) -> set[Key]:
        """The arguments of ``vals`` for which the fixed check ``c`` on ``name`` is not
        false on the state (or raises). A function of the state's rows and date, the
        check and the argument: kept in the state's memo for every task on that state,
        the check with its answers, so that its id names it while the entry lives."""
        key = ("slice-passes", id(c), name, self.state.today)
        entry = self.memo.get(key)
        if entry is None or entry[0] is not c:
            entry = self.memo[key] = (c, {}, {})
        passed: dict[Key, bool] = entry[1]
        if len(vals) >= _BIG:
            sets: dict[frozenset[Key], frozenset[Key]] = entry[2]
            whole = frozenset(vals)
            got = sets.get(whole)
            if got is None:
                got = sets[whole] = frozenset(self._passing_each(c, name, vals, passed))
            return set(got)
        return self._passing_each(c, name, vals, passed)

    def _passing_each(
        self, c: ir.Expr, name: str, vals: Iterable[Key], passed: dict[Key, bool]
    ) -> set[Key]:
        out: set[Key] = set()
        for v in vals:
            hit = passed.get(v)
            if hit is None:
                try:
                    hit = evaluate(c, self.state, {name: v}, self.domain) is not False
                except (ToolError, KeyError, TypeError, IndexError):
                    hit = True
                passed[v] = hit
            if hit:
                out.add(v)
        return out

    def tool(self, t: ToolDef) -> None:
        env: dict[str, Any] = {}
        fixed = self._fixed_checks(t)
        for p in t.params.values():
            v = self.param_value(p)
            if p.name in fixed and isinstance(v, set):
                for c in fixed[p.name]:
                    v = self._passing(c, p.name, v)
                self._add(self.param_values, (t.name, p.name), v)
            env[p.name] = v
            if isinstance(p.ty, RefT):
                self.probe(p.ty.entity, env[p.name])
        for chk in t.requires:
            self.value_of(chk.expr, env)
        for case in t.cases:  # every case's guard may probe rows
            if case.when is not None:
                self.value_of(case.when, env)
        for stmt in t.effects:  # the union of the cases' effects
            self.effect(stmt.effect, env)
        if t.returns is not None:
            self._memo = {}
            rv = self._value_remembering_items(t.returns, env)
            self.reveal(t.returns, t.returns.ty, rv)

    def _inputs(self, t: ToolDef) -> tuple[int, ...]:
        """The size of everything :meth:`tool` reads of what the analysis has found so
        far: the values known at its parameters' sorts, what was written to the
        entities it reads (the state's rows themselves never change), and the rows of
        those entities chains may create (fixed within one analysis, but not between a
        warm start's and the task's, :func:`_warm_start`)."""
        sorts, ents = _tool_inputs(self.domain, t)
        out = [len(self.know.get(s, ())) for s in sorts]
        for store in (self.written_keys, self.written_values):
            out.extend(len(v) for (e, _), v in store.items() if e in ents)
        out.extend(len(self.created[e]) for e in sorted(ents))
        return tuple(out)

    def _value_remembering_items(self, e: ir.Expr, env: Mapping[str, Any]) -> Any:
        """``value_of`` that remembers the values of a list literal's items (for ``reveal``)."""
        if isinstance(e, ir.ListLit):
            out: Any = None
            for it in e.items:
                v = self._value_remembering_items(it, env)
                self._memo[id(it)] = v
                out = _join(out, v)
            if out is None and isinstance(e.ty, ListT) and _stringish(e.ty.elem):
                out = set()
            return AList(out)
        if isinstance(e, ir.DictLit):
            return ARec(
                {
                    k: self._value_remembering_items(v, env)
                    for k, v in zip(e.keys, e.values, strict=True)
                }
            )
        return self.value_of(e, env)

    def effect(self, eff: ir.Effect, env: dict[str, Any]) -> None:
        match eff:
            case ir.Assign(entity=ent, key=k, field=f, op=op, value=v):
                keys = self.key(k, env, ent)
                val = self.value_of(v, env)
                self._add(self.written_keys, (ent, f), self.existing(ent, keys))
                if op == "=":
                    self._write(ent, f, val)
            case ir.ListEdit(entity=ent, key=k, field=f, op=op, value=v):
                keys = self.key(k, env, ent)
                val = self.value_of(v, env)
                self._add(self.written_keys, (ent, f), self.existing(ent, keys))
                if op == "append":
                    self._write(ent, f, AList(val))
            case ir.Create(entity=ent, bind=b, values=vs, key=given):
                if given is not None:  # ids from an argument: no bound on the new rows
                    raise _GiveUp(f"{ent}.create(...) names its key")
                made = self.created[ent]
                vals = {f: self.value_of(x, env) for f, x in vs}
                for f in self.domain.entities[ent].fields:
                    self._add(self.written_keys, (ent, f), made)
                    self._write(ent, f, vals.get(f))
                self._add(self.written_keys, (ent, "*"), made)
                if b is not None:
                    env[b] = set(made)
            case ir.Delete(entity=ent, key=k):
                keys = self.key(k, env, ent)
                self._add(self.written_keys, (ent, "*"), keys & set(self.tables[ent]))
            case _:
                _unmodelled(eff)

    def _write(self, ent: str, f: str, val: Any) -> None:
        fd = self.domain.entities[ent].fields[f]
        ty = fd.ty
        if isinstance(ty, ListT):
            if not _stringish(ty.elem):
                return
            if not isinstance(val, AList):
                raise _GiveUp(f"a list written to {ent}.{f} without a bound")
            self._add(self.written_values, (ent, f), _strings(val.elem))
        elif _stringish(ty):
            self._add(self.written_values, (ent, f), _strings(val))

    def invariants(self) -> None:
        """Rule 3: rows a touched row's unique field can clash with."""
        for ent, edef in self.domain.entities.items():
            touched: set[Key] = set()
            for f in edef.fields:
                touched |= self.written_keys.get((ent, f), set())
            if not touched:
                continue
            for f, fd in edef.fields.items():
                if not fd.unique:
                    continue
                if not _stringish(fd.ty):
                    self.whole(ent)
                    continue
                for v in _strings(self.field_values(ent, f, touched)):
                    self.include(ent, self.keys_with(ent, f, v))

    def run(
        self,
        givens: Iterable[tuple[Sort, Any]],
        rows: Iterable[tuple[str, Key]],
        extra_scans: Sequence[ir.Comp],
    ) -> None:
        for s, v in givens:
            self.some.add(s)
            self._add(self.know, s, [x for x in _flat(v) if _atom(x)])
        for ent, k in rows:
            if ent in self.kept_rows:
                self.include(ent, [k])
        for ent in self.domain.entities:
            self.include(ent, self.created[ent])  # an id a create would clash with
        self.changed = True
        ran = self.ran
        while self.changed:
            self.changed = False
            for t in self.tools:
                if t.name in self.called or self.callable(t):
                    if t.name not in self.called:
                        self.called.add(t.name)
                        self.changed = True
                    now = self._inputs(t)
                    if ran.get(t.name) != now:
                        ran[t.name] = now
                        self.tool(t)
            for c in extra_scans:
                self.value_of(c, {})
            self.invariants()


@dataclass(frozen=True)
class _Warm:
    """A snapshot of :class:`_Flow`'s findings (:meth:`_Flow.snapshot`)."""

    tools: tuple[ToolDef, ...]
    some: frozenset[Sort]
    called: frozenset[str]
    full: frozenset[str]
    kept_rows: dict[str, frozenset[Key]]
    know: dict[Sort, frozenset[Key]]
    written_keys: dict[CellKey, frozenset[Key]]
    written_values: dict[CellKey, frozenset[Key]]
    param_values: dict[tuple[str, str], frozenset[Key]]
    key_vals: dict[int, tuple[ir.Expr, frozenset[Key]]]
    ran: dict[str, tuple[int, ...]]


def _warm_start(domain: Domain, state: State, tools: Sequence[ToolDef]) -> _Warm | None:
    """The analysis of ``state`` for ``tools`` from no givens and no created rows, kept
    in the state's memo: what chains can learn without being told anything (on retail,
    the whole catalogue, from listing its products) is the same for every task on the
    state, and at 10,000 products working it out again was most of a task's analysis.
    None when that analysis gives up."""
    memo = state.memo()
    key = ("slice-warm", id(domain), tuple(t.name for t in tools))
    hit = memo.get(key)
    if hit is not None and all(a is b for a, b in zip(hit[0], tools, strict=True)):
        return cast("_Warm | None", hit[1])
    base = _Flow(domain, state, tools, {}, set())
    try:
        base.run([], [], ())
        warm: _Warm | None = base.snapshot()
    except _GiveUp:
        warm = None
    memo[key] = (tuple(tools), warm)
    return warm


class _Grown(set[Key]):
    """A key bound of :attr:`_Flow.key_vals` that the analysis made for itself, and
    so may add to in place."""


def _frozen_bounds(
    bounds: Mapping[int, tuple[ir.Expr, set[Key] | frozenset[Key]]],
) -> dict[int, tuple[ir.Expr, frozenset[Key]]]:
    """:attr:`_Flow.key_vals` frozen, each distinct set once (many bounds share one)."""
    done: dict[int, frozenset[Key]] = {}
    out = {}
    for i, (n, v) in bounds.items():
        f = done.get(id(v))
        if f is None:
            f = done[id(v)] = frozenset(v)
        out[i] = (n, f)
    return out


def _flat(v: Any) -> Iterable[Any]:
    if isinstance(v, list):
        for x in v:
            yield from _flat(x)
    elif isinstance(v, dict):
        for x in v.values():
            yield from _flat(x)
    else:
        yield v


@per_tool
def _tool_inputs(domain: Domain, tool: ToolDef) -> tuple[tuple[Sort, ...], frozenset[str]]:
    """The sorts of ``tool``'s parameters and the entities any of its parts read
    (:func:`graphgen.footprint.cells_read`)."""
    sorts = tuple(dict.fromkeys(param_sort(p) for p in tool.params.values()))
    return sorts, frozenset(r.entity for r in cells_read(domain, tool))


@per_tool
def _tool_unmodelled(domain: Domain, tool: ToolDef) -> str:
    """Why the analysis cannot model ``tool`` ("" when it can): a property of the tool's
    IR alone, which every slice of every task asks."""
    try:
        _check_tool_modelled(tool)
    except _GiveUp as exc:
        return str(exc)
    return ""


def analyze_flow(
    domain: Domain,
    state: State,
    *,
    tools: Sequence[ToolDef] | None = None,
    givens: Iterable[tuple[Sort, Any]] = (),
    everywhere: Iterable[Key] = (),
    all_known: bool = False,
    rows: Iterable[tuple[str, Key]] = (),
    creates: Mapping[str, int] | None = None,
    extra_scans: Sequence[ir.Comp] = (),
    warm: bool = True,
) -> Flow:
    """Slice ``state`` for chains of ``tools`` (default: all) from the knowledge
    ``givens`` (sort, value), with ``everywhere`` strings known at every sort (and, when
    ``all_known``, any int/bool argument), keeping the rows ``rows`` names; ``creates[E]``
    is how many E rows a chain may create and ``extra_scans`` are further scans to
    account for (e.g. target descriptions).

    ``warm``: start from what chains of ``tools`` learn on ``state`` from nothing,
    worked out once per state and tool list (:func:`_warm_start`); the result is the
    same either way, and the tests compare the two."""
    chosen = list(domain.tools.values()) if tools is None else list(tools)
    try:
        for t in chosen:
            why = _tool_unmodelled(domain, t)
            if why:
                raise _GiveUp(why)
        for c in extra_scans:
            _check_modelled(c)
        analysis = _Flow(
            domain,
            state,
            chosen,
            creates or {},
            {s for s in everywhere if _atom(s)},
            all_known,
        )
        if warm and not analysis.everywhere and not all_known:
            start = _warm_start(domain, state, chosen)
            if start is not None:
                analysis.resume(start)
        analysis.run(list(givens), list(rows), extra_scans)
    except _GiveUp:
        return Flow(
            state.copy(), None, None, whole=True, callable=frozenset(t.name for t in chosen)
        )
    found = analysis.snapshot()
    tables = {
        e: _kept_table(state, e, found.kept_rows[e]) for e in domain.entities if e in state.tables
    }
    for e in domain.entities:
        tables.setdefault(e, {})
    return Flow(
        State(tables, dict(state.counters), state.today),
        found.know,
        found.written_keys,
        found.key_vals,
        everywhere=frozenset(analysis.everywhere),
        callable=found.called,
        params=found.param_values,
        values=found.written_values,
    )


def _kept_table(state: State, ent: str, kept: frozenset[Key]) -> dict[Key, Any]:
    """The rows of ``ent`` keyed in ``kept``, in key order. A state never changes a row
    in place, nor a table given to it, so slices share the rows they keep and, where a
    big set of them is kept again (a whole catalogue, task after task), the table."""
    if len(kept) < _BIG:
        return _rows_of(state, ent, kept)
    memo = state.memo()
    key = ("slice-table", ent, kept)
    got = memo.get(key)
    if got is None:
        got = memo[key] = _rows_of(state, ent, kept)
    return cast("dict[Key, Any]", got)


def _rows_of(state: State, ent: str, kept: Iterable[Key]) -> dict[Key, Any]:
    table = state.tables[ent]
    return {k: table[k] for k in sorted(kept)}


def slice_state(
    domain: Domain,
    state: State,
    seeds: Iterable[Key],
    creates: Mapping[str, int] | None = None,
    extra_scans: Sequence[ir.Comp] = (),
) -> State:
    """The slice of ``state`` for chains of any tools whose string arguments are among
    ``seeds`` (each known at every sort); rows keyed by a seed are kept too.
    ``creates[E]`` is how many E rows a chain may create."""
    seeds = {s for s in seeds if _atom(s)}
    rows = [(e, s) for e in domain.entities for s in seeds if s in state.tables.get(e, {})]
    return analyze_flow(
        domain,
        state,
        everywhere=seeds,
        all_known=True,
        rows=rows,
        creates=creates,
        extra_scans=extra_scans,
    ).state


__all__ = ["AList", "ARec", "ARow", "Flow", "analyze_flow", "slice_state"]
