"""The expression IR: one typed tree that every backend reads.

Preconditions, effects, return values, queries and goals are all built from these
nodes. The interpreter (:mod:`graphgen.interp`), the z3 encoding (``verify``) and the
Python code generator (``envs``) each walk the same tree, so they cannot drift apart.

Every expression node carries its type in ``ty`` (set by the elaborator in
:mod:`graphgen.parse`). Nodes are frozen so they can be shared and hashed.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import Literal as TLiteral
from typing import TypeAlias, assert_never, get_args

from graphgen.types import Ty

Scalar = int | str | bool | Decimal | None


class ExprNode:
    """Base class of expression nodes; annotate with the closed union :data:`Expr`."""

    __slots__ = ()
    ty: Ty


@dataclass(frozen=True, slots=True)
class Lit(ExprNode):
    value: Scalar
    ty: Ty


@dataclass(frozen=True, slots=True)
class Var(ExprNode):
    """A tool parameter, a name bound by ``x = E.create(...)``, or a comprehension
    variable (bound to the key of the row being visited)."""

    name: str
    ty: Ty


@dataclass(frozen=True, slots=True)
class FieldOf(ExprNode):
    """``Entity[key].field``; also ``o.field`` inside a comprehension over Entity."""

    entity: str
    key: Expr
    field: str
    ty: Ty


@dataclass(frozen=True, slots=True)
class RowOf(ExprNode):
    """``Entity[key]`` as a whole record (only in return values)."""

    entity: str
    key: Expr
    ty: Ty


@dataclass(frozen=True, slots=True)
class Exists(ExprNode):
    """``key in Entity``: the table has a row with this key."""

    entity: str
    key: Expr
    ty: Ty


CmpOp = TLiteral["==", "!=", "<", "<=", ">", ">="]


@dataclass(frozen=True, slots=True)
class Compare(ExprNode):
    op: CmpOp
    left: Expr
    right: Expr
    ty: Ty


@dataclass(frozen=True, slots=True)
class BoolOp(ExprNode):
    op: TLiteral["and", "or"]
    values: tuple[Expr, ...]
    ty: Ty


@dataclass(frozen=True, slots=True)
class Not(ExprNode):
    operand: Expr
    ty: Ty


@dataclass(frozen=True, slots=True)
class Arith(ExprNode):
    op: TLiteral["+", "-", "*"]
    left: Expr
    right: Expr
    ty: Ty


@dataclass(frozen=True, slots=True)
class Neg(ExprNode):
    operand: Expr
    ty: Ty


@dataclass(frozen=True, slots=True)
class Contains(ExprNode):
    """``item in container`` (or ``not in`` when ``negated``) over a list value."""

    item: Expr
    container: Expr
    negated: bool
    ty: Ty


@dataclass(frozen=True, slots=True)
class Len(ExprNode):
    operand: Expr
    ty: Ty


@dataclass(frozen=True, slots=True)
class ListLit(ExprNode):
    items: tuple[Expr, ...]
    ty: Ty


@dataclass(frozen=True, slots=True)
class Comp(ExprNode):
    """``[proj for var in Entity if cond]``: rows visited in key order."""

    var: str
    entity: str
    cond: Expr | None
    proj: Expr
    ty: Ty


AggFn = TLiteral["any", "all", "count", "sum", "min", "max"]


@dataclass(frozen=True, slots=True)
class Agg(ExprNode):
    """``fn(proj for var in Entity if cond)``. ``count`` counts the rows."""

    fn: AggFn
    comp: Comp
    ty: Ty


@dataclass(frozen=True, slots=True)
class IfExp(ExprNode):
    cond: Expr
    then: Expr
    orelse: Expr
    ty: Ty


@dataclass(frozen=True, slots=True)
class DictLit(ExprNode):
    keys: tuple[str, ...]
    values: tuple[Expr, ...]
    ty: Ty


@dataclass(frozen=True, slots=True)
class IsNone(ExprNode):
    """``x is None`` (or ``x is not None`` when ``negated``) on an optional value."""

    operand: Expr
    negated: bool
    ty: Ty


@dataclass(frozen=True, slots=True)
class Old(ExprNode):
    """``old(expr)``: ``expr`` read on the state before the call's effects. In a
    precondition (which runs before any effect) it is ``expr`` itself. A tool's ``let:``
    names elaborate to it, so every backend gives a let its pre-call value."""

    operand: Expr
    ty: Ty


@dataclass(frozen=True, slots=True)
class DictComp(ExprNode):
    """``{v.<key>: proj for v in Entity if cond}``: each kept row's id mapped to
    ``comp.proj``, rows in key order (a result keyed by id; JSON object keys are
    strings, so int id 3 is shown as "3"). The key is always the row's own id, so keys
    never repeat; ``comp`` is the same comprehension a list would be."""

    comp: Comp
    ty: Ty


RoundMode = TLiteral["half_even", "half_up"]


@dataclass(frozen=True, slots=True)
class Round(ExprNode):
    """``round(num, places)`` or ``round(num / den, places)``, with an optional mode
    (``'half_up'``; the default is half-even, Python's ``round``): the exact value, or
    the exact quotient, rounded to a decimal of ``places`` places. Division exists only
    here, so every value is exact until it is rounded on purpose."""

    num: Expr
    den: Expr | None
    places: int
    mode: RoundMode
    ty: Ty


StrFn = TLiteral[
    "concat", "fstring", "str", "lower", "upper", "startswith", "endswith", "contains", "len"
]


@dataclass(frozen=True, slots=True)
class StrOp(ExprNode):
    """A string operation (see :mod:`graphgen.strings`): ``a + b`` (concat),
    ``f"..{x}.."`` (fstring: literal parts are str ``Lit`` s, the rest interpolated),
    ``str(x)``, ``s.lower()``, ``s.upper()``, ``s.startswith(t)``, ``s.endswith(t)``,
    ``t in s`` (contains, args ``(s, t)``) and ``len(s)``."""

    op: StrFn
    args: tuple[Expr, ...]
    ty: Ty


@dataclass(frozen=True, slots=True)
class Index(ExprNode):
    """``xs[i]``: item ``i`` of a list (from the end when negative, as in Python), e.g.
    ``[t.status for t in Ticket if t.code == code][0]`` picks one row's field. An index
    outside the list raises a ToolError (kind ``empty``), like ``min`` over no rows."""

    operand: Expr
    index: Expr
    ty: Ty


@dataclass(frozen=True, slots=True)
class Today(ExprNode):
    """``today()``: the date the state says is today (``State.today``). It is a value
    of the state, not of the call: constant through a chain of calls, read the same by
    ``old(...)``, and never written by an effect."""

    ty: Ty


# --------------------------------------------------------------------------- effects


class EffectNode:
    """Base class of effect statements; annotate with the closed union :data:`Effect`.

    Effects of one call apply in order, atomically.
    """

    __slots__ = ()


@dataclass(frozen=True, slots=True)
class Assign(EffectNode):
    """``Entity[key].field = value`` (``op`` '=') or ``+=`` / ``-=``."""

    entity: str
    key: Expr
    field: str
    op: TLiteral["=", "+=", "-="]
    value: Expr


@dataclass(frozen=True, slots=True)
class Create(EffectNode):
    """``name = Entity.create(f=v, ...)``: a new row with the next deterministic id, or
    with ``key`` when the create names the key field (an existing key fails the call)."""

    entity: str
    bind: str | None
    values: tuple[tuple[str, Expr], ...]
    key: Expr | None = None


@dataclass(frozen=True, slots=True)
class Delete(EffectNode):
    """``del Entity[key]``."""

    entity: str
    key: Expr


@dataclass(frozen=True, slots=True)
class ListEdit(EffectNode):
    """``Entity[key].field.append(v)`` or ``.remove(v)`` on a list field."""

    entity: str
    key: Expr
    field: str
    op: TLiteral["append", "remove"]
    value: Expr


# --------------------------------------------------------------------------- closed unions

# Every walker matches on these unions and ends in ``assert_never``, so mypy reports a
# walker that misses a node; ``tests/test_ir_backends.py`` checks the same statically.
Expr: TypeAlias = (
    Lit
    | Var
    | FieldOf
    | RowOf
    | Exists
    | Compare
    | BoolOp
    | Not
    | Arith
    | Neg
    | Contains
    | Len
    | ListLit
    | Comp
    | Agg
    | IfExp
    | DictLit
    | IsNone
    | Old
    | DictComp
    | Round
    | StrOp
    | Index
    | Today
)
Effect: TypeAlias = Assign | Create | Delete | ListEdit

EXPR_NODES: tuple[type[ExprNode], ...] = get_args(Expr)
EFFECT_NODES: tuple[type[EffectNode], ...] = get_args(Effect)


# --------------------------------------------------------------------------- helpers


@dataclass(frozen=True, slots=True)
class Check:
    """One precondition: an expression that must be true, plus an optional message."""

    expr: Expr
    source: str
    message: str = ""


@dataclass(frozen=True, slots=True)
class Stmt:
    """An effect with the text it was parsed from (for messages and generated code)."""

    effect: Effect
    source: str


def conjuncts(e: Expr | None) -> list[Expr]:
    """The parts of a conjunction, nested ``and`` flattened: ``[e]`` when ``e`` is no
    conjunction, ``[]`` for no condition (None)."""
    if e is None:
        return []
    if isinstance(e, BoolOp) and e.op == "and":
        return [x for v in e.values for x in conjuncts(v)]
    return [e]


def children(e: Expr) -> tuple[Expr, ...]:
    """The direct sub-expressions of ``e`` (used by generic walks)."""
    match e:
        case Lit() | Var() | Today():
            return ()
        case FieldOf(key=k) | RowOf(key=k) | Exists(key=k):
            return (k,)
        case Compare(left=a, right=b) | Arith(left=a, right=b):
            return (a, b)
        case BoolOp(values=vs) | ListLit(items=vs):
            return vs
        case Not(operand=o) | Neg(operand=o) | Len(operand=o) | Old(operand=o):
            return (o,)
        case Contains(item=a, container=b):
            return (a, b)
        case Comp(cond=c, proj=p):
            return (p,) if c is None else (c, p)
        case Agg(comp=c):
            return (c,)
        case IfExp(cond=c, then=t, orelse=o):
            return (c, t, o)
        case DictLit(values=vs) | StrOp(args=vs):
            return vs
        case IsNone(operand=o):
            return (o,)
        case DictComp(comp=c):
            return (c,)
        case Round(num=a, den=b):
            return (a,) if b is None else (a, b)
        case Index(operand=a, index=i):
            return (a, i)
        case _:
            assert_never(e)


def walk(e: Expr) -> list[Expr]:
    """All nodes of ``e`` in pre-order."""
    out: list[Expr] = []
    stack = [e]
    while stack:
        n = stack.pop()
        out.append(n)
        stack.extend(reversed(children(n)))
    return out


def effect_exprs(eff: Effect) -> tuple[Expr, ...]:
    """The expressions an effect reads."""
    match eff:
        case Assign(key=k, value=v) | ListEdit(key=k, value=v):
            return (k, v)
        case Create(values=vs, key=k):
            return tuple(v for _, v in vs) + (() if k is None else (k,))
        case Delete(key=k):
            return (k,)
        case _:
            assert_never(eff)


_FREE_VARS: dict[int, tuple[Expr, frozenset[str]]] = {}


def free_vars(e: Expr) -> frozenset[str]:
    """The variables ``e`` reads (a comprehension binds its own), memoised per node."""
    hit = _FREE_VARS.get(id(e))
    if hit is not None and hit[0] is e:
        return hit[1]
    out: frozenset[str]
    match e:
        case Var(name=name):
            out = frozenset({name})
        case Comp(var=var, cond=cond, proj=proj):
            inner = free_vars(proj) | (free_vars(cond) if cond is not None else frozenset())
            out = inner - {var}
        case (
            Lit()
            | FieldOf()
            | RowOf()
            | Exists()
            | Compare()
            | BoolOp()
            | Not()
            | Arith()
            | Neg()
            | Contains()
            | Len()
            | ListLit()
            | Agg()
            | IfExp()
            | DictLit()
            | IsNone()
            | Old()
            | DictComp()
            | Round()
            | StrOp()
            | Index()
            | Today()
        ):
            # binds nothing: the variables of its sub-expressions
            out = frozenset().union(*(free_vars(c) for c in children(e)))
        case _:
            assert_never(e)
    _FREE_VARS[id(e)] = (e, out)
    return out
