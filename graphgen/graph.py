"""The typed dependency graph of a domain.

:func:`build_graph` returns a :class:`networkx.MultiDiGraph` with three kinds of node
(attribute ``kind``):

* ``tool:<name>``  (``kind="tool"``): ``name``, ``write`` (has effects), ``params`` (names
  in order), ``param_sorts`` (the :class:`~graphgen.knowledge.Sort` of each, same order),
  ``description``.
* a value sort, ``str(Sort)`` such as ``key:Order``, ``field:User.email``,
  ``enum:OrderStatus``, ``free:int`` (``kind="sort"``): ``sort_kind`` and ``givable`` —
  true when an agent can know such a value *without calling any tool*: the sort is in
  :func:`~graphgen.knowledge.givable_sorts`, or it is a free value or an enum member.
  Every sort a parameter needs or a return value reveals is a node, and so is every
  givable sort.
* ``state:<Entity>.<field>`` and ``state:<Entity>.*`` (``kind="state"``): ``entity``,
  ``field``. ``*`` stands for *which rows exist*: written by create and delete, read by
  ``k in Entity``, by comprehensions over the table, by ``Entity[k]`` with a computed key,
  and by every parameter of entity type (an id argument must name an existing row).

Edges (attribute ``kind``; the multigraph key is the kind, ``data:<param>`` for
parameter edges so two parameters of one sort stay two edges):

* ``data``     sort → tool, one per parameter (attribute ``param``), and tool → sort for
  each sort the return value reveals (:func:`~graphgen.knowledge.produced_sorts`).
* ``reads``    state → tool for every field the tool reads *before it commits*:
  ``via`` lists where — ``requires`` (preconditions), ``param`` (an id argument must
  exist), ``effect`` (values and keys of effects, the old value of a ``+=``/``-=`` target,
  the list of an ``append``/``remove``, other rows of a ``unique`` field).
* ``queries``  state → tool for fields the *return value* reads. Kept apart from
  ``reads`` because the return value is evaluated after the effects and gates nothing an
  agent chooses: it is what the tool *shows*, not what it *needs*.
* ``writes``   tool → state for every field an effect writes; ``ops`` lists the effect
  kinds (``=``, ``+=``, ``-=``, ``append``, ``remove``, ``create``, ``delete``).
* ``enables``  tool → tool when an effect of the first may turn a failing call of the
  second into a succeeding one (see :func:`enabling_fields`); ``fields`` lists the
  written fields involved and ``checks`` the guard checks of the second tool they reach.

The read and write sets come from :mod:`graphgen.footprint`, which the bounded model
checker uses too; :func:`guard` and :func:`enabling_fields` (the ``enables`` analysis)
are plain functions over the IR built on them.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, TypeAlias, assert_never

import networkx as nx

from graphgen import ir
from graphgen.decimals import places
from graphgen.domain import Domain, ToolDef
from graphgen.footprint import (
    FieldRef,
    effect_op,
    effect_reads,
    effect_writes,
    fail_reads,
    reads,
    tool_queries,
    tool_reads,
    writes,
)
from graphgen.knowledge import Sort, givable_sorts, param_sort, produced_sorts
from graphgen.types import BOOL, INT, DecT, RefT, Ty

__all__ = [
    "GuardCheck",
    "build_graph",
    "enabling_fields",
    "guard",
    "sort_node",
    "state_node",
    "tool_node",
]


# ------------------------------------------------------------------ node ids


def tool_node(name: str) -> str:
    """Graph node id of a tool."""
    return f"tool:{name}"


def sort_node(sort: Sort) -> str:
    """Graph node id of a value sort (``str(sort)``)."""
    return str(sort)


def state_node(ref: FieldRef) -> str:
    """Graph node id of a state field; ``state:E.*`` is the row set of ``E``."""
    return f"state:{ref}"


# ------------------------------------------------------------------ guards


Literal = tuple[ir.Expr, bool]  # an atom and its polarity in negation normal form


@dataclass(frozen=True)
class GuardCheck:
    """One condition a call must pass, as the enabling analysis sees it.

    ``where`` names it (``requires[0]``, ``param order_id``, ``effects[1] bound``, ...).
    A call of the tool succeeds iff every check passes; a check passes iff it evaluates
    without raising and is true. ``literals`` are the atoms of the condition in negation
    normal form with their polarity (the check is a monotone and/or combination of
    them). ``opaque`` lists locations the check depends on in a way the analysis does
    not model: any write to one of them may make the check pass.
    """

    where: str
    literals: tuple[Literal, ...] = ()
    opaque: frozenset[FieldRef] = frozenset()


def _nnf(e: ir.Expr, positive: bool, out: list[Literal]) -> None:
    match e:
        case ir.BoolOp(values=vs):
            for v in vs:
                _nnf(v, positive, out)
        case ir.Not(operand=o):
            _nnf(o, not positive, out)
        case (
            ir.Lit()
            | ir.Var()
            | ir.FieldOf()
            | ir.RowOf()
            | ir.Exists()
            | ir.Compare()
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
            out.append((e, positive))  # an atom
        case _:
            assert_never(e)


def _condition_check(domain: Domain, where: str, e: ir.Expr) -> GuardCheck:
    lits: list[Literal] = []
    _nnf(e, True, lits)
    # With short-circuit evaluation, a literal that raises in both states can be stepped
    # around by another literal turning *false* (``(a and raising) or b``), which breaks
    # the "some literal must turn true" argument. Such checks are analysed as opaque.
    if len(lits) > 1 and any(fail_reads(x, domain) for x, _ in lits):
        return GuardCheck(where, opaque=frozenset(reads(e, domain)))
    return GuardCheck(where, literals=tuple(lits))


Bound: TypeAlias = int | Decimal | None  # a field's or parameter's min or max


def _num_ty(v: int | Decimal) -> Ty:
    return DecT(places(v)) if isinstance(v, Decimal) else INT


def _bound_atoms(new: ir.Expr, lo: Bound, hi: Bound) -> list[Literal]:
    out: list[Literal] = []
    if hi is not None:
        out.append((ir.Compare("<=", new, ir.Lit(hi, _num_ty(hi)), BOOL), True))
    if lo is not None:
        out.append((ir.Compare(">=", new, ir.Lit(lo, _num_ty(lo)), BOOL), True))
    return out


def guard(domain: Domain, tool: ToolDef) -> list[GuardCheck]:
    """Every way a call of ``tool`` can fail, as :class:`GuardCheck` s over the pre-state.

    * each precondition;
    * ``param p``: an id argument must name an existing row (the atom ``p in E``);
    * for each effect: rows named by computed keys must exist (opaque), and
      - ``E[k].f += v`` / ``-= v`` on a bounded int field: the bound atoms on
        ``E[k].f ± v``, leaving out the one a valid pre-state already guarantees
        (``+=`` of a value >= 0 cannot break ``min``);
      - ``E[k].f = v`` and ``E.create(f=v)`` on a bounded field: the bound atoms on ``v``;
      - a ``unique`` field: opaque over ``E.f``, ``E.*`` and the value's reads;
      - ``append(v)``: the atom ``v not in E[k].f``; ``remove(v)``: ``v in E[k].f``;
      An effect that reads what an earlier effect of the same call wrote is opaque over
      everything it reads (its inputs are no longer pre-state values), and a bound check
      whose field a later effect writes again is opaque too (bounds are checked at the
      end of the call, on the final value).
    * the return value must evaluate: opaque over its :func:`fail_reads`.

    Assumes the pre-state is *valid* (bounds and uniqueness hold), which every state
    reached by successful calls from a valid initial state is.
    """
    checks: list[GuardCheck] = []
    for i, chk in enumerate(tool.requires):
        checks.append(_condition_check(domain, f"requires[{i}]", chk.expr))
    for name, p in tool.params.items():
        if isinstance(p.ty, RefT):
            atom = ir.Exists(p.ty.entity, ir.Var(name, p.ty), BOOL)
            checks.append(GuardCheck(f"param {name}", literals=((atom, True),)))
    if tool.cases:
        # Which case runs, and whether its effects succeed, is a disjunction over the
        # cases that these checks (a conjunction) cannot state: one check, opaque over
        # everything the guards, effects and returns read (a soft-failure case is a
        # failed call, so any of those may turn it into a successful one).
        read: set[FieldRef] = set()
        for case in tool.cases:
            if case.when is not None:
                read |= reads(case.when, domain)
            for st in case.effects:
                read |= effect_reads(domain, st.effect)
            if case.returns is not None:
                read |= fail_reads(case.returns, domain)
        checks.append(GuardCheck("cases", opaque=frozenset(read)))
        return checks
    effs = [s.effect for s in tool.effects]
    wrote: list[set[FieldRef]] = [effect_writes(e) for e in effs]
    all_reads: set[FieldRef] = set()
    for i, eff in enumerate(effs):
        where = f"effects[{i}]"
        before = set().union(*wrote[:i]) if i else set()
        after = set().union(*wrote[i + 1 :]) if i + 1 < len(effs) else set()
        er = effect_reads(domain, eff)
        all_reads |= er
        if er & before:
            checks.append(GuardCheck(where, opaque=frozenset(er)))
            continue
        fr: set[FieldRef] = set()
        for e in ir.effect_exprs(eff):
            fr |= fail_reads(e, domain)
        if isinstance(eff, ir.Assign | ir.ListEdit | ir.Delete) and not isinstance(eff.key, ir.Var):
            # the targeted row, chosen by a computed key, must exist
            fr |= {FieldRef(eff.entity)} | reads(eff.key, domain)
        if fr:
            checks.append(GuardCheck(f"{where} rows", opaque=frozenset(fr)))
        checks.extend(_effect_checks(domain, tool, where, eff, after))
    if tool.returns is not None:
        fr = fail_reads(tool.returns, domain)
        if fr & set().union(set(), *wrote):
            fr |= all_reads  # the post-state value depends on the effects' inputs
        if fr:
            checks.append(GuardCheck("returns", opaque=frozenset(fr)))
    return checks


def _effect_checks(
    domain: Domain, tool: ToolDef, where: str, eff: ir.Effect, after: set[FieldRef]
) -> list[GuardCheck]:
    out: list[GuardCheck] = []
    bounds = {n: (p.min, p.max) for n, p in tool.params.items()}
    match eff:
        case ir.Assign(entity=ent, key=k, field=f, op=op, value=v):
            fd = domain.entities[ent].fields[f]
            ref = FieldRef(ent, f)
            if fd.unique:
                out.append(
                    GuardCheck(
                        f"{where} unique", opaque=frozenset({ref, FieldRef(ent)} | reads(v, domain))
                    )
                )
            if fd.min is None and fd.max is None:
                return out
            if ref in after:
                extra = {ref} if op != "=" else set()
                out.append(GuardCheck(f"{where} bound", opaque=frozenset(reads(v, domain) | extra)))
                return out
            x = ir.FieldOf(ent, k, f, fd.ty)
            lo, hi = fd.min, fd.max
            if op == "=":
                new = v
            else:
                new = ir.Arith("+" if op == "+=" else "-", x, v, INT)
                d = _direction(op, _sign(v, bounds, domain))
                # A valid pre-state already meets the bound the change moves away from.
                if d is not None and d >= 0:
                    lo = None
                if d is not None and d <= 0:
                    hi = None
            lits = _bound_atoms(new, lo, hi)
            if lits:
                out.extend(GuardCheck(f"{where} bound", literals=(lit,)) for lit in lits)
        case ir.ListEdit(entity=ent, key=k, field=f, op=op, value=v):
            x = ir.FieldOf(ent, k, f, domain.entities[ent].fields[f].ty)
            atom = ir.Contains(v, x, op == "append", BOOL)
            out.append(GuardCheck(f"{where} member", literals=((atom, True),)))
        case ir.Create(entity=ent, values=vs):
            fields = domain.entities[ent].fields
            for f, v in vs:
                fd = fields[f]
                ref = FieldRef(ent, f)
                if fd.unique:
                    out.append(
                        GuardCheck(
                            f"{where} unique {f}",
                            opaque=frozenset({ref, FieldRef(ent)} | reads(v, domain)),
                        )
                    )
                if (fd.min is not None or fd.max is not None) and reads(v, domain):
                    if ref in after:
                        out.append(
                            GuardCheck(f"{where} bound {f}", opaque=frozenset(reads(v, domain)))
                        )
                    else:
                        out.extend(
                            GuardCheck(f"{where} bound {f}", literals=(lit,))
                            for lit in _bound_atoms(v, fd.min, fd.max)
                        )
    return out


# ------------------------------------------------------------------ signs and changes


def _sign(e: ir.Expr, params: Mapping[str, tuple[Bound, Bound]], domain: Domain) -> int | None:
    """Sign of an int expression: 0 (always zero), 1 (always >= 0), -1 (always <= 0),
    None (unknown). ``params`` gives (min, max) of the calling tool's parameters."""
    match e:
        case ir.Lit(value=v) if isinstance(v, int) and not isinstance(v, bool):
            return 0 if v == 0 else 1 if v > 0 else -1
        case ir.Var(name=n) if n in params:
            lo, hi = params[n]
            return 1 if lo is not None and lo >= 0 else -1 if hi is not None and hi <= 0 else None
        case ir.FieldOf(entity=ent, field=f):
            fd = domain.entities[ent].fields[f]
            if fd.min is not None and fd.min >= 0:
                return 1
            return -1 if fd.max is not None and fd.max <= 0 else None
        case ir.Len():
            return 1
        case ir.Agg(fn="count"):
            return 1
        case ir.Agg(fn="sum" | "min" | "max", comp=c):
            return _sign(c.proj, params, domain)
        case ir.Arith(op="+", left=a, right=b):
            return _add(_sign(a, params, domain), _sign(b, params, domain))
        case ir.Arith(op="-", left=a, right=b):
            return _add(_sign(a, params, domain), _neg(_sign(b, params, domain)))
        case ir.Arith(op="*", left=a, right=b):
            return _mul(_sign(a, params, domain), _sign(b, params, domain))
        case ir.Neg(operand=o):
            return _neg(_sign(o, params, domain))
        case ir.IfExp(then=a, orelse=b):
            sa, sb = _sign(a, params, domain), _sign(b, params, domain)
            if sa == sb:
                return sa
            if sa == 0:
                return sb
            return sa if sb == 0 else None
        case (
            ir.Lit()
            | ir.Var()
            | ir.Agg()
            | ir.Arith()
            | ir.RowOf()
            | ir.Exists()
            | ir.Compare()
            | ir.BoolOp()
            | ir.Not()
            | ir.Contains()
            | ir.ListLit()
            | ir.Comp()
            | ir.DictLit()
            | ir.IsNone()
            | ir.Old()
            | ir.DictComp()
            | ir.Round()
            | ir.StrOp()
            | ir.Index()
            | ir.Today()
        ):
            return None  # not an int of known sign
        case _:
            assert_never(e)


def _neg(s: int | None) -> int | None:
    return None if s is None else -s


def _add(a: int | None, b: int | None) -> int | None:
    if a == 0:
        return b
    if b == 0:
        return a
    return a if a is not None and a == b else None


def _mul(a: int | None, b: int | None) -> int | None:
    if a == 0 or b == 0:
        return 0
    return None if a is None or b is None else a * b


def _direction(op: str, s: int | None) -> int | None:
    """How ``+= v`` / ``-= v`` moves the field, given the sign of ``v``."""
    if s is None:
        return None
    return s if op == "+=" else -s


@dataclass(frozen=True)
class _Change:
    """What one effect of the enabling tool can do to one field occurrence."""

    kind: str  # "set" | "add" | "append" | "remove"
    value: ir.Expr | None = None  # for "set"
    direction: int | None = None  # for "add": 1 up, -1 down, 0 none, None unknown


class _Writer:
    """The enabling tool's effects, indexed for the queries of :func:`_may_help`."""

    def __init__(self, domain: Domain, tool: ToolDef) -> None:
        self.domain = domain
        self.effects = [s.effect for s in tool.effects]
        self.written = writes(tool)
        self.params = {n: (p.min, p.max) for n, p in tool.params.items()}
        self.creates = {e.entity for e in self.effects if isinstance(e, ir.Create)}
        self.deletes = {e.entity for e in self.effects if isinstance(e, ir.Delete)}

    def hit(self, e: ir.Expr) -> set[FieldRef]:
        return reads(e, self.domain) & self.written

    def changes(self, x: ir.FieldOf, b_params: Mapping[str, object]) -> list[_Change]:
        """The changes the effects can make to the value of occurrence ``x``."""
        out: list[_Change] = []
        for eff in self.effects:
            match eff:
                case ir.Assign(entity=ent, field=f, op=op, value=v) if (
                    ent == x.entity and f == x.field
                ):
                    if op == "=":
                        out.append(_Change("set", value=v))
                    else:
                        s = _sign(v, self.params, self.domain)
                        out.append(_Change("add", direction=_direction(op, s)))
                case ir.ListEdit(entity=ent, field=f, op=op) if ent == x.entity and f == x.field:
                    out.append(_Change(op))
                case ir.Create(entity=ent, values=vs) if ent == x.entity:
                    # A parameter key names a row that existed before (else the call
                    # failed on the argument, which the ``param`` check accounts for),
                    # so a new row cannot be the one ``x`` reads.
                    if isinstance(x.key, ir.Var) and x.key.name in b_params:
                        continue
                    out.append(_Change("set", value=dict(vs).get(x.field)))
        return out


# ------------------------------------------------------------------ atom shapes

_FLIP: dict[str, ir.CmpOp] = {"==": "==", "!=": "!=", "<": ">", "<=": ">=", ">": "<", ">=": "<="}
_NEGATE: dict[str, ir.CmpOp] = {
    "==": "!=",
    "!=": "==",
    "<": ">=",
    "<=": ">",
    ">": "<=",
    ">=": "<",
}
_CMP: dict[str, Callable[[Any, Any], Any]] = {
    "==": operator.eq,
    "!=": operator.ne,
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
}
_NEED: dict[str, int | None] = {"<": -1, "<=": -1, ">": 1, ">=": 1, "==": None, "!=": None}


def _cmp(op: str, a: object, b: object) -> bool:
    try:
        return bool(_CMP[op](a, b))
    except TypeError:
        return True  # incomparable values: assume the atom may hold


def _value_atom(
    e: ir.Expr, positive: bool
) -> tuple[ir.FieldOf, Callable[[object], bool], int | None] | None:
    """``E[k].f`` against constants: (occurrence, which new values make the literal
    true, which direction of change can help — None when any change can)."""
    x: ir.FieldOf
    op: ir.CmpOp
    c: ir.Scalar
    match e:
        case ir.FieldOf(ty=t) if t == BOOL:
            return e, (lambda v: bool(v) == positive), None
        case ir.Contains(
            item=ir.FieldOf() as x, container=ir.ListLit(items=items), negated=neg
        ) if all(isinstance(i, ir.Lit) for i in items):
            vals = {i.value for i in items if isinstance(i, ir.Lit)}
            want_in = (not neg) == positive
            return x, (lambda v: (v in vals) == want_in), None
        case ir.Compare(op=op, left=ir.FieldOf() as x, right=ir.Lit(value=c)):
            pass
        case ir.Compare(op=op0, left=ir.Lit(value=c), right=ir.FieldOf() as x):
            op = _FLIP[op0]
        case _:
            return None
    if not positive:
        op = _NEGATE[op]
    return x, (lambda v: _cmp(op, v, c)), _NEED[op]


def _linear(e: ir.Expr, sign: int, out: list[tuple[int, ir.Expr]]) -> None:
    """Split an int expression into signed leaves (through ``+``, ``-``, negation and
    products with a constant); anything else is one leaf."""
    match e:
        case ir.Arith(op="+", left=a, right=b):
            _linear(a, sign, out)
            _linear(b, sign, out)
        case ir.Arith(op="-", left=a, right=b):
            _linear(a, sign, out)
            _linear(b, -sign, out)
        case ir.Neg(operand=o):
            _linear(o, -sign, out)
        case (
            ir.Arith(op="*", left=ir.Lit(value=c), right=o)
            | ir.Arith(op="*", left=o, right=ir.Lit(value=c))
        ) if isinstance(c, int) and not isinstance(c, bool):
            if c != 0:
                _linear(o, sign if c > 0 else -sign, out)
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
            out.append((sign, e))  # a leaf
        case _:
            assert_never(e)


def _change_helps(c: _Change, need: int | None, accept: Callable[[object], bool] | None) -> bool:
    if c.kind == "set":
        if accept is not None and isinstance(c.value, ir.Lit):
            return accept(c.value.value)
        return True
    if c.kind == "add":
        if c.direction == 0:
            return False
        return c.direction is None or need is None or c.direction == need
    return True  # list edits of a scalar-compared field: not analysed


def _may_help(lit: Literal, w: _Writer, b_params: Mapping[str, object]) -> bool:
    """Can the writer's effects turn this literal from false to true (its raising
    behaviour unchanged)? Over-approximates: True unless a rule below proves not."""
    e, positive = lit
    if not w.hit(e):
        return False
    if fail_reads(e, w.domain) & w.written:
        return True  # the writer may make the literal stop (or start) raising
    va = _value_atom(e, positive)
    if va is not None:
        x, accept, need = va
        if w.hit(x.key):
            return True
        return any(_change_helps(c, need, accept) for c in w.changes(x, b_params))
    match e:
        case ir.Compare(op=op, left=a, right=b) if a.ty == INT:
            op = op if positive else _NEGATE[op]
            need = _NEED[op]
            if need is None:
                return True
            leaves: list[tuple[int, ir.Expr]] = []
            _linear(a, 1, leaves)
            _linear(b, -1, leaves)
            return any(_leaf_helps(s, leaf, need, w, b_params) for s, leaf in leaves)
        case ir.Contains(item=item, container=ir.FieldOf() as x, negated=neg):
            if w.hit(item) or w.hit(x.key):
                return True
            want_in = (not neg) == positive
            for c in w.changes(x, b_params):
                if c.kind == "set" or c.kind == "add":
                    return True
                if (c.kind == "append") == want_in:
                    return True
            return False
        case ir.Exists(entity=ent, key=k):
            if w.hit(k):
                return True
            return ent in (w.creates if positive else w.deletes)
    return True


def _leaf_helps(
    sign: int, leaf: ir.Expr, need: int, w: _Writer, b_params: Mapping[str, object]
) -> bool:
    if not w.hit(leaf):
        return False
    match leaf:
        case ir.FieldOf() as x:
            if w.hit(x.key):
                return True
            for c in w.changes(x, b_params):
                if c.kind != "add" or c.direction is None:
                    return True
                if c.direction != 0 and sign * c.direction == need:
                    return True
            return False
        case ir.Len(operand=ir.FieldOf() as x):
            if w.hit(x.key):
                return True
            for c in w.changes(x, b_params):
                if c.kind not in ("append", "remove"):
                    return True
                if sign * (1 if c.kind == "append" else -1) == need:
                    return True
            return False
    return True


def enabling_fields(domain: Domain, a: ToolDef, b: ToolDef) -> dict[str, set[FieldRef]]:
    """How tool ``a`` may enable tool ``b``: guard check of ``b`` → fields ``a`` writes
    that may make it pass. Empty when ``a`` provably cannot turn a failing call of ``b``
    into a succeeding one.

    Soundness (an over-approximation; it never misses a real enabling). Suppose ``b``
    fails on a valid state ``s`` and succeeds on ``s'``, the state after a call of
    ``a``, with the same arguments. Some :func:`guard` check of ``b`` fails on ``s`` and
    passes on ``s'``. If it is opaque, it depends on a location ``a`` writes and is
    reported. Otherwise it is a monotone and/or combination of literals, none of which
    can raise differently on ``s'`` (a literal whose :func:`fail_reads` ``a`` writes is
    reported; a check with several literals of which one may raise at all is opaque), so
    one literal must go from false to true. A literal can only change if ``a`` writes
    something it reads; it is dismissed only when one of these rules proves the change
    cannot make it true:

    * (values) the literal compares one occurrence ``E[k].f`` with constants —
      ``E[k].f == c``, ``!=``, ``<``..., ``E[k].f in [c1, c2]``, a bool field itself — in
      either polarity, ``k`` reads nothing ``a`` writes, and every effect of ``a`` on
      ``E.f`` assigns a literal the literal rejects, or moves the field in a direction
      that cannot help an ordered comparison (below);
    * (monotonicity) the literal is an int comparison whose sides are sums of signed
      terms (constant factors allowed); every term ``a`` touches is ``E[k].f`` or
      ``len(E[k].f)`` with ``k`` untouched, and ``a`` only changes them by ``+= v`` /
      ``-= v`` with ``v`` of known sign (literals, parameters and fields with ``min >= 0``,
      sums and products of those) or by ``append``/``remove``, each moving the
      comparison away from truth: ``+=`` of a value >= 0 never helps ``E[k].f <= c``,
      ``-=`` never helps ``E[k].f >= c``;
    * (membership) ``v in E[k].f`` is not helped by ``remove``, ``v not in E[k].f`` is
      not helped by ``append``;
    * (rows) ``k in E`` is only helped by a create of ``E``, ``not k in E`` by a delete;
    * a create of ``E`` does not change ``E[p].f`` for a parameter ``p`` of ``b``: ``p``
      named an existing row on ``s``, or the ``param p`` check failed and is reported.

    Everything else (comprehensions, aggregates, conditional expressions, comparisons
    with non-constants, keys that ``a`` changes) counts as possibly enabling.
    """
    w = _Writer(domain, a)
    out: dict[str, set[FieldRef]] = {}
    if not w.written:
        return out
    for chk in guard(domain, b):
        hits: set[FieldRef] = set(chk.opaque & w.written)
        for lit in chk.literals:
            if _may_help(lit, w, b.params):
                hits |= w.hit(lit[0])
        if hits:
            out[chk.where] = hits
    return out


# ------------------------------------------------------------------ the graph


def build_graph(domain: Domain) -> nx.MultiDiGraph:
    """The typed dependency graph of ``domain`` (node and edge kinds: module docstring).

    Nodes and edges are added in sorted order, so two builds of the same domain are equal
    and export byte-identically.
    """
    g = nx.MultiDiGraph(domain=domain.name, source=domain.source, content_hash=domain.content_hash)
    given = givable_sorts(domain)
    tools = [domain.tools[n] for n in sorted(domain.tools)]

    sorts: set[Sort] = set(given)
    for t in tools:
        sorts.update(param_sort(p) for p in t.params.values())
        sorts |= produced_sorts(domain, t)
    for s in sorted(sorts):
        g.add_node(
            sort_node(s),
            kind="sort",
            sort_kind=s.kind,
            givable=s in given or s.kind in ("free", "enum"),
        )
    for ent in sorted(domain.entities):
        for f in ["*", *sorted(domain.entities[ent].fields)]:
            g.add_node(state_node(FieldRef(ent, f)), kind="state", entity=ent, field=f)
    for t in tools:
        g.add_node(
            tool_node(t.name),
            kind="tool",
            name=t.name,
            write=t.is_write,
            params=list(t.params),
            param_sorts=[str(param_sort(p)) for p in t.params.values()],
            description=t.description,
        )

    for t in tools:
        tn = tool_node(t.name)
        for pname, p in t.params.items():
            g.add_edge(sort_node(param_sort(p)), tn, key=f"data:{pname}", kind="data", param=pname)
        for s in sorted(produced_sorts(domain, t)):
            g.add_edge(tn, sort_node(s), key="data", kind="data")
        for ref, via in sorted(tool_reads(domain, t).items(), key=lambda kv: str(kv[0])):
            g.add_edge(state_node(ref), tn, key="reads", kind="reads", via=sorted(via))
        for ref in sorted(tool_queries(domain, t), key=str):
            g.add_edge(state_node(ref), tn, key="queries", kind="queries")
        ops: dict[FieldRef, set[str]] = {}
        for stmt in t.effects:
            for ref in effect_writes(stmt.effect):
                ops.setdefault(ref, set()).add(effect_op(stmt.effect))
        for ref, names in sorted(ops.items(), key=lambda kv: str(kv[0])):
            g.add_edge(tn, state_node(ref), key="writes", kind="writes", ops=sorted(names))

    for a in tools:
        if not a.is_write:
            continue
        for b in tools:
            how = enabling_fields(domain, a, b)
            if how:
                fields = sorted({str(r) for refs in how.values() for r in refs})
                g.add_edge(
                    tool_node(a.name),
                    tool_node(b.name),
                    key="enables",
                    kind="enables",
                    fields=fields,
                    checks=sorted(how),
                )
    return g
