"""The reference interpreter: evaluate IR on a concrete :class:`State`, run tool calls.

This is the semantics every other backend is tested against. A tool call is atomic:
arguments are checked, preconditions evaluated, effects applied in order, then schema
invariants (bounds, uniqueness) checked; any failure rolls the state back and raises a
:class:`ToolError` whose message an agent can act on.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, TypeAlias, assert_never

from graphgen import ir, strings
from graphgen.decimals import argument_problem as decimal_argument_problem
from graphgen.decimals import dec_text, decimal_problem, parse_decimal, round_div, to_result
from graphgen.domain import Case, Domain, ToolDef
from graphgen.errors import NO_MESSAGE, ToolError
from graphgen.explain import explained_fields
from graphgen.keys import explicit_key, next_counter
from graphgen.parse import is_iso_date
from graphgen.state import State, call_key
from graphgen.today import today_of_state
from graphgen.types import (
    BOOL,
    DATE,
    INT,
    STR,
    DecT,
    EnumT,
    ListT,
    MapT,
    OptT,
    RecordT,
    RefT,
    Ty,
    strip_opt,
)
from graphgen.unparse import to_source

Env = Mapping[str, Any]

# The env entry holding the state before a call's effects, read by ``old(...)``. Names
# starting with "__" are forbidden in domain expressions, so it never meets a variable.
OLD_STATE = "__old_state__"


# ------------------------------------------------------------------ the undo log


@dataclass(frozen=True, slots=True)
class FieldWritten:
    """A field of an existing row was overwritten; ``old`` is its previous value."""

    entity: str
    key: Any
    field: str
    old: Any


@dataclass(frozen=True, slots=True)
class RowCreated:
    """A row was created; ``counter`` is the id counter before the creation."""

    entity: str
    key: Any
    counter: int


@dataclass(frozen=True, slots=True)
class RowDeleted:
    """A row was deleted; ``row`` is the record as it was, ``counter`` the id counter."""

    entity: str
    key: Any
    row: dict[str, Any]
    counter: int


# One entry per state change of a call, in order; rolled back newest first.
Undo: TypeAlias = FieldWritten | RowCreated | RowDeleted


def _row(st: State, ent: str, key: Any) -> dict[str, Any]:
    row = st.tables[ent].get(key)
    if row is None:
        raise ToolError(f"{ent} {key!r} not found", kind="not_found")
    return row


def evaluate(e: ir.Expr, st: State, env: Env, domain: Domain | None = None) -> Any:
    """Evaluate expression ``e`` on state ``st`` with variables ``env``.

    ``domain`` is needed only to render whole rows (``Entity[id]``) with their key.

    >>> from graphgen.types import INT
    >>> evaluate(ir.Arith("*", ir.Lit(6, INT), ir.Lit(7, INT), INT), State({}, {}), {})
    42
    """
    return compiled(e)(st, env, domain)


Evaluator: TypeAlias = Callable[[State, Env, Domain | None], Any]

# Per expression node (by id, with the node, so a reused id is not mistaken for it): its
# evaluator. Domain expressions live as long as their domain and are evaluated millions
# of times (state generation checks every rule on every row); walking the tree and
# matching node classes on every visit cost more than the work itself.
_COMPILED: dict[int, tuple[ir.Expr, Evaluator]] = {}


def compiled(e: ir.Expr) -> Evaluator:
    """``e`` as a function of (state, env, domain), made once per node: what
    :func:`evaluate` runs. Children are compiled with their parent, so evaluating a
    tree costs one Python call per node and no dispatch."""
    hit = _COMPILED.get(id(e))
    if hit is None or hit[0] is not e:
        if len(_COMPILED) > 50_000:  # expressions parsed on the fly come and go
            _COMPILED.clear()
        hit = _COMPILED[id(e)] = (e, _compile(e))
    return hit[1]


def _compile(e: ir.Expr) -> Evaluator:
    """The evaluator of one node; the semantics of the language, case by case."""
    match e:
        case ir.Lit(value=v):
            return lambda st, env, domain: v
        case ir.Var(name=name):
            return lambda st, env, domain: env[name]
        case ir.FieldOf(entity=ent, key=k, field=f):
            key_of = compiled(k)
            if isinstance(strip_opt(e.ty), DecT):
                # a decimal is stored in its JSON form ("12.50") and computed with as Decimal
                def dec_field(st: State, env: Env, domain: Domain | None) -> Any:
                    v = _row(st, ent, key_of(st, env, domain))[f]
                    return None if v is None else Decimal(v)

                return dec_field
            return lambda st, env, domain: _row(st, ent, key_of(st, env, domain))[f]
        case ir.RowOf(entity=ent, key=k):
            key_of = compiled(k)

            def row_of(st: State, env: Env, domain: Domain | None) -> Any:
                key = key_of(st, env, domain)
                row = _row(st, ent, key)
                keyname = domain.entities[ent].key if domain else "id"
                return {keyname: key, **row}

            return row_of
        case ir.Exists(entity=ent, key=k):
            key_of = compiled(k)
            return lambda st, env, domain: key_of(st, env, domain) in st.tables[ent]
        case ir.Compare(op=op, left=a, right=b):
            return _compare(op, compiled(a), compiled(b))
        case ir.BoolOp(op=op, values=vs):
            parts = [compiled(v) for v in vs]
            if op == "and":
                return lambda st, env, domain: all(p(st, env, domain) for p in parts)
            return lambda st, env, domain: any(p(st, env, domain) for p in parts)
        case ir.Not(operand=o):
            inner = compiled(o)
            return lambda st, env, domain: not inner(st, env, domain)
        case ir.Arith(op=op, left=a, right=b):
            return _arith(op, compiled(a), compiled(b), DATE in (a.ty, b.ty), a.ty == DATE)
        case ir.Neg(operand=o):
            inner = compiled(o)
            return lambda st, env, domain: -inner(st, env, domain)
        case ir.Contains(item=a, container=b, negated=neg):
            item, container = compiled(a), compiled(b)
            if neg:
                return lambda st, env, domain: (
                    item(st, env, domain) not in container(st, env, domain)
                )
            return lambda st, env, domain: item(st, env, domain) in container(st, env, domain)
        case ir.Len(operand=o):
            inner = compiled(o)
            return lambda st, env, domain: len(inner(st, env, domain))
        case ir.ListLit(items=items):
            parts = [compiled(x) for x in items]
            return lambda st, env, domain: [p(st, env, domain) for p in parts]
        case ir.Comp():
            return _comprehension(e)
        case ir.Agg(fn=fn, comp=c):
            return _aggregate(fn, c, compiled(c))
        case ir.IfExp(cond=c, then=t, orelse=o):
            cond, then, orelse = compiled(c), compiled(t), compiled(o)
            return lambda st, env, domain: (
                then(st, env, domain) if cond(st, env, domain) else orelse(st, env, domain)
            )
        case ir.DictLit(keys=ks, values=vs):
            pairs = [(k, compiled(v)) for k, v in zip(ks, vs, strict=True)]
            return lambda st, env, domain: {k: v(st, env, domain) for k, v in pairs}
        case ir.IsNone(operand=o, negated=neg):
            inner = compiled(o)
            return lambda st, env, domain: (inner(st, env, domain) is None) != neg
        case ir.Old(operand=o):
            inner = compiled(o)
            # Outside a call's effects (preconditions, goals) there is no earlier state.
            return lambda st, env, domain: inner(env.get(OLD_STATE, st), env, domain)
        case ir.DictComp(comp=c):
            # Same rows, same order, same errors as the list form; each value under its
            # row's id as a string, the JSON object key (int id 3 is "3").
            keys = _comprehension(
                ir.Comp(c.var, c.entity, c.cond, ir.Var(c.var, RefT(c.entity)), c.ty)
            )
            values = compiled(c)
            return lambda st, env, domain: dict(
                zip(map(str, keys(st, env, domain)), values(st, env, domain), strict=True)
            )
        case ir.Round(num=a, den=b, places=n, mode=mode):
            num = compiled(a)
            den = None if b is None else compiled(b)
            where = to_source(e)
            return lambda st, env, domain: round_div(
                num(st, env, domain),
                1 if den is None else den(st, env, domain),
                n,
                mode,
                ToolError,
                where,
            )
        case ir.StrOp(op=op, args=args):
            parts = [compiled(a) for a in args]
            types = [a.ty for a in args]
            if op == "contains":
                # held as (haystack, needle), written ``needle in haystack``: the needle
                # is evaluated first, as in the compiled code, so that where both read
                # a missing row the error names the same one
                haystack, needle = parts

                def contains(st: State, env: Env, domain: Domain | None) -> Any:
                    t = needle(st, env, domain)
                    return strings.apply(op, [haystack(st, env, domain), t], types)

                return contains
            return lambda st, env, domain: strings.apply(
                op, [p(st, env, domain) for p in parts], types
            )
        case ir.Index(operand=xs, index=i):
            items_of, index_of = compiled(xs), compiled(i)

            def index(st: State, env: Env, domain: Domain | None) -> Any:
                items = items_of(st, env, domain)
                n = index_of(st, env, domain)
                if not -len(items) <= n < len(items):
                    raise ToolError(f"index {n} is outside a list of {len(items)}", kind="empty")
                return items[n]

            return index
        case ir.Today():
            return lambda st, env, domain: today_of_state(st)
        case _:
            assert_never(e)


def _compare(op: str, a: Evaluator, b: Evaluator) -> Evaluator:
    if op == "==":
        return lambda st, env, domain: a(st, env, domain) == b(st, env, domain)
    if op == "!=":
        return lambda st, env, domain: a(st, env, domain) != b(st, env, domain)
    if op == "<":
        return lambda st, env, domain: a(st, env, domain) < b(st, env, domain)
    if op == "<=":
        return lambda st, env, domain: a(st, env, domain) <= b(st, env, domain)
    if op == ">":
        return lambda st, env, domain: a(st, env, domain) > b(st, env, domain)
    return lambda st, env, domain: a(st, env, domain) >= b(st, env, domain)


def _arith(op: str, a: Evaluator, b: Evaluator, dates: bool, left_is_date: bool) -> Evaluator:
    if dates:
        return lambda st, env, domain: _date_arith(
            op, a(st, env, domain), b(st, env, domain), left_is_date
        )
    if op == "+":
        return lambda st, env, domain: a(st, env, domain) + b(st, env, domain)
    if op == "-":
        return lambda st, env, domain: a(st, env, domain) - b(st, env, domain)
    return lambda st, env, domain: a(st, env, domain) * b(st, env, domain)


def _aggregate(fn: str, c: ir.Comp, rows: Evaluator) -> Evaluator:
    if fn == "any":
        return lambda st, env, domain: any(rows(st, env, domain))
    if fn == "all":
        return lambda st, env, domain: all(rows(st, env, domain))
    if fn == "count":
        return lambda st, env, domain: len(rows(st, env, domain))
    if fn == "sum":
        return lambda st, env, domain: sum(rows(st, env, domain))
    pick = min if fn == "min" else max

    def extreme(st: State, env: Env, domain: Domain | None) -> Any:
        vals = rows(st, env, domain)
        if not vals:
            raise ToolError(f"{fn}() over no {c.entity} rows", kind="empty")
        return pick(vals)

    return extreme


def _date_arith(op: str, x: Any, y: Any, left_is_date: bool) -> Any:
    """``d ± days`` (an ISO date) or ``d1 - d2`` (days); dates are day numbers here as in
    the z3 encoding, so both agree."""
    if isinstance(x, str) and isinstance(y, str):
        return _dt.date.fromisoformat(x).toordinal() - _dt.date.fromisoformat(y).toordinal()
    day, n = (x, y) if left_is_date else (y, x)
    try:
        shifted = _dt.date.fromisoformat(day) + _dt.timedelta(days=n if op == "+" else -n)
    except (OverflowError, ValueError):
        raise ToolError(f"the date {day} plus {n} days is out of range") from None
    return shifted.isoformat()


def _comprehension(c: ir.Comp) -> Evaluator:
    var, entity = c.var, c.entity
    cond = None if c.cond is None else compiled(c.cond)
    proj = compiled(c.proj)

    def rows(st: State, env: Env, domain: Domain | None) -> list[Any]:
        keys = probed_keys(c, st, env, domain)
        inner = dict(env)
        out = []
        # key order is the one order every backend uses
        for key in st.sorted_keys(entity) if keys is None else keys:
            inner[var] = key
            if cond is None or cond(st, inner, domain):
                out.append(proj(st, inner, domain))
        return out

    return rows


@dataclass(frozen=True, slots=True)
class Probe:
    """The first conjunct of a comprehension's condition when it pins the row:
    ``x.f == e`` (``kind`` "field"), ``x == e`` ("key"), ``x in e`` ("keys"),
    ``Y[x.r].f == e`` through a reference ("via"), or ``any(y.r == x for y in Y if c)``
    ("any": ``expr`` is then ``[y.r for y in Y if c]``), where ``e`` and ``c`` do not
    read the comprehension's variable ``x``.

    Every row evaluates that conjunct first, so a row it is false on is skipped
    without evaluating anything else, and ``e`` has the same value (or error) on every
    row: the rows it is true on, found through the state's index, are the only ones
    whose condition can hold, and the only ones on which it can raise. (Through a
    reference the conjunct raises on a row whose ``r`` names no row: the probe is used
    only when every ``r`` names one.)"""

    kind: str
    field: str  # "field": x's field; "via": the field of the row x.r names
    decimal: bool  # the field holds decimals (compared as numbers)
    expr: ir.Expr
    through: str = ""  # "via": x's reference field r ...
    target: str = ""  # ... and the entity Y it names


_PROBES: dict[int, tuple[ir.Expr, str, str, Probe | None]] = {}


def probe(c: ir.Comp) -> Probe | None:
    """The :class:`Probe` of ``c`` (None: every row must be visited), memoised per
    condition node."""
    cond = c.cond
    if cond is None:
        return None
    hit = _PROBES.get(id(cond))
    if hit is not None and hit[0] is cond and hit[1:3] == (c.var, c.entity):
        return hit[3]
    first = cond
    while isinstance(first, ir.BoolOp) and first.op == "and":
        first = first.values[0]
    got: Probe | None = None
    match first:
        case ir.Compare(op="==", left=left, right=right):
            for a, b in ((left, right), (right, left)):
                if c.var in ir.free_vars(b):
                    continue
                if isinstance(a, ir.Var) and a.name == c.var:
                    got = Probe("key", "", False, b)
                elif (
                    isinstance(a, ir.FieldOf)
                    and a.entity == c.entity
                    and isinstance(a.key, ir.Var)
                    and a.key.name == c.var
                    and not isinstance(strip_opt(a.ty), ListT | MapT | RecordT)
                ):
                    got = Probe("field", a.field, isinstance(strip_opt(a.ty), DecT), b)
                elif (
                    isinstance(a, ir.FieldOf)
                    and isinstance(a.key, ir.FieldOf)
                    and a.key.entity == c.entity
                    and isinstance(a.key.key, ir.Var)
                    and a.key.key.name == c.var
                    and a.key.ty == RefT(a.entity)
                    and not isinstance(strip_opt(a.ty), ListT | MapT | RecordT)
                ):
                    dec = isinstance(strip_opt(a.ty), DecT)
                    got = Probe("via", a.field, dec, b, a.key.field, a.entity)
                if got is not None:
                    break
        case ir.Contains(item=ir.Var(name=name), container=container, negated=False):
            if name == c.var and c.var not in ir.free_vars(container):
                got = Probe("keys", "", False, container)
        case ir.Agg(fn="any", comp=ir.Comp(var=y, entity=ent, cond=inner, proj=ir.Compare() as eq)):
            free = ir.free_vars(inner) if inner is not None else frozenset()
            if eq.op == "==" and y != c.var and c.var not in free:
                for a, b in ((eq.left, eq.right), (eq.right, eq.left)):
                    if (
                        isinstance(b, ir.Var)
                        and b.name == c.var
                        and isinstance(a, ir.FieldOf)
                        and a.entity == ent
                        and isinstance(a.key, ir.Var)
                        and a.key.name == y
                        and strip_opt(a.ty) == RefT(c.entity)
                    ):
                        shows = ir.Comp(y, ent, inner, a, ListT(a.ty))
                        got = Probe("any", a.field, False, shows)
                        break
        case _:
            pass  # any other condition: every row is visited
    if len(_PROBES) > 10_000:  # conditions parsed on the fly (descriptions) come and go
        _PROBES.clear()
    _PROBES[id(cond)] = (cond, c.var, c.entity, got)
    return got


def probed_keys(c: ir.Comp, st: State, env: Env, domain: Domain | None) -> Sequence[Any] | None:
    """The keys, in order, of the only rows whose condition can hold or raise (None:
    visit every row)."""
    p = probe(c)
    table = st.tables[c.entity]
    if p is None or not table:
        return None  # an empty table evaluates nothing, not even the probe
    try:
        v = evaluate(p.expr, st, env, domain)
    except Exception:
        return None  # every row raises it: the visit does, as it would
    if p.kind == "field":
        return keys_equal(st, c.entity, p.field, v, p.decimal)
    if p.kind == "via":
        ends = keys_equal(st, p.target, p.field, v, p.decimal)
        if ends is None or not st.refs_exist(c.entity, p.through, p.target):
            return None
        rows: set[Any] = set()
        for y in ends:
            rows.update(st.keys_where(c.entity, p.through, y))
        return sorted(rows)
    # Ids are str or int; anything else (True == 1) is left to the visit.
    ids = [v] if p.kind == "key" else v if isinstance(v, list) else None
    if p.kind == "any" and ids is not None:
        ids = [k for k in ids if k is not None]  # an absent reference names no row
    if ids is None or not all(isinstance(k, str | int) and not isinstance(k, bool) for k in ids):
        return None
    return sorted({k for k in ids if k in table})


def keys_equal(
    st: State, entity: str, field: str, value: Any, decimal: bool
) -> Sequence[Any] | None:
    """:meth:`State.keys_where`, or None when ``value`` cannot be looked up (a list)."""
    try:
        return st.keys_where(entity, field, value, decimal)
    except TypeError:
        return None


# ------------------------------------------------------------------ argument checks


def check_value(ty: Ty, value: Any, int_keys: Collection[str] | None = None) -> str | None:
    """Why ``value`` is not a valid value of ``ty`` (``None`` when it is).

    ``int_keys`` names the entities whose ids are ints (``Domain.int_keys``); without
    it an id may be an int or a string (the existence check then tells them apart).
    """
    if isinstance(ty, OptT):
        if value is None:
            return None
        return check_value(ty.inner, value, int_keys)
    is_int = isinstance(value, int) and not isinstance(value, bool)
    if ty == INT:
        return None if is_int else "an integer"
    if ty == BOOL:
        return None if isinstance(value, bool) else "true or false"
    if isinstance(ty, RefT) and int_keys is None:
        return None if isinstance(value, str) or is_int else "an id"
    if isinstance(ty, RefT) and ty.entity in int_keys:  # type: ignore[operator]
        return None if is_int else f"an integer ({ty.entity} id)"
    if ty == STR or isinstance(ty, RefT):
        return None if isinstance(value, str) else "a string"
    if ty == DATE:
        return None if isinstance(value, str) and is_iso_date(value) else "a date YYYY-MM-DD"
    if isinstance(ty, EnumT):
        return None if value in ty.values else "one of " + ", ".join(map(repr, ty.values))
    if isinstance(ty, DecT):
        return decimal_problem(value, ty.scale)
    if isinstance(ty, ListT):
        if not isinstance(value, list):
            return "a list"
        for v in value:
            why = check_value(ty.elem, v, int_keys)
            if why:
                return f"a list of {why}"
        return None
    return f"a {ty.show()}"


def argument_problem(
    tool: ToolDef,
    args: Mapping[str, Any],
    st: State | None = None,
    int_keys: Collection[str] | None = None,
) -> tuple[str, str] | None:
    """What is wrong with call arguments (the ``ToolError`` kind and the message), in
    the order a call checks them: shape, names, then per parameter its type, bounds and
    (given a state ``st``) that the row it names exists. ``int_keys``: as for
    :func:`check_value`."""
    if not isinstance(args, Mapping):
        return "bad_args", f"{tool.name}: arguments must be a JSON object"
    unknown = sorted(set(args) - set(tool.params))
    if unknown:
        return "bad_args", (
            f"{tool.name}: unknown argument(s) {', '.join(unknown)}; expected "
            f"{', '.join(tool.params) or 'none'}"
        )
    missing = [n for n, p in tool.params.items() if n not in args and not p.has_default]
    if missing:
        return "bad_args", f"{tool.name}: missing argument(s) {', '.join(missing)}"
    for name, p in tool.params.items():
        if name not in args:
            continue  # takes its default, which the domain check found valid
        v = args[name]
        pty = strip_opt(p.ty)
        if isinstance(pty, DecT) and v is not None:
            msg = decimal_argument_problem(tool.name, name, v, pty.scale, p.min, p.max)
            if msg is not None:
                return "bad_args", msg
            continue
        why = check_value(p.ty, v, int_keys)
        if why:
            return "bad_args", f"{tool.name}: argument {name} must be {why}, got {v!r}"
        if v is None:
            continue
        if p.min is not None and v < p.min:
            return "bad_args", f"{tool.name}: argument {name} must be at least {p.min}, got {v}"
        if p.max is not None and v > p.max:
            return "bad_args", f"{tool.name}: argument {name} must be at most {p.max}, got {v}"
        ref = p.ty.inner if isinstance(p.ty, OptT) else p.ty
        if st is not None and isinstance(ref, RefT) and v not in st.tables[ref.entity]:
            return "not_found", f"{tool.name}: {ref.entity} {v!r} not found"
    return None


def check_args(
    tool: ToolDef,
    args: Mapping[str, Any],
    st: State,
    int_keys: Collection[str] | None = None,
) -> dict[str, Any]:
    """Validate call arguments; return them as a plain dict or raise ToolError."""
    bad = argument_problem(tool, args, st, int_keys)
    if bad is not None:
        raise ToolError(bad[1], tool=tool.name, kind=bad[0])
    out = {name: args.get(name, p.default) for name, p in tool.params.items()}
    return {
        name: parse_decimal(v) if isinstance(strip_opt(p.ty), DecT) and v is not None else v
        for (name, p), v in zip(tool.params.items(), out.values(), strict=True)
    }


def _explain(check: ir.Check, st: State, env: Env) -> str:
    """The values a failed precondition read, for an actionable message."""
    facts: list[str] = []
    for node in explained_fields(check.expr):
        try:
            key = evaluate(node.key, st, env)
            val = st.tables[node.entity][key][node.field]
        except (ToolError, KeyError, TypeError):
            continue
        fact = f"{node.entity} {key!r} has {node.field} = {val!r}"
        if fact not in facts:
            facts.append(fact)
    return "; ".join(facts)


# ------------------------------------------------------------------ tool calls


def precheck(
    domain: Domain, st: State, name: str, args: Mapping[str, Any], *, explain: bool = True
) -> dict[str, Any]:
    """Validate arguments and preconditions without applying effects.

    Raises the same :class:`ToolError` a call would (effects may still hit an invariant).
    ``explain=False`` leaves the values a failed precondition read out of the error's
    detail, for a caller that only asks whether the call would fail, and how (the task
    expander draws thousands of arguments that fail).
    """
    tool = domain.tools.get(name)
    if tool is None:
        raise ToolError(
            f"unknown tool {name!r}; available: {', '.join(domain.tools)}",
            tool=name,
            kind="unknown_tool",
        )
    env = check_args(tool, args, st, domain.int_keys)
    failure = _first_failure(domain, st, tool, env)
    if failure is not None:
        chk, exc = failure
        if exc is not None:  # the condition itself could not be evaluated
            raise ToolError(f"{name}: {exc.message}", tool=name, kind=exc.kind, detail=exc.detail)
        facts = _explain(chk, st, env) if explain else ""
        # The agent reads the author's words only: the facts may show another customer's
        # rows, and the condition is in the rule language. Developers get both in detail.
        msg = chk.message.format(**env) if chk.message else NO_MESSAGE
        detail = f"requires {chk.source}" + (f"; {facts}" if facts else "")
        raise ToolError(f"{name}: {msg}", tool=name, kind="precondition", detail=detail)
    return env


def _first_failure(
    domain: Domain, st: State, tool: ToolDef, env: Env
) -> tuple[ir.Check, ToolError | None] | None:
    """The first precondition that is false (or raises, with its error); None if all hold."""
    for chk in tool.requires:
        try:
            if not evaluate(chk.expr, st, env, domain):
                return chk, None
        except ToolError as exc:
            return chk, exc
    return None


def failed_check(domain: Domain, st: State, name: str, args: Mapping[str, Any]) -> ir.Check | None:
    """The first precondition of ``name`` that is false for ``args`` (None if all hold)."""
    tool = domain.tools[name]
    failure = _first_failure(domain, st, tool, check_args(tool, args, st))
    return failure[0] if failure is not None else None


def pick_case(domain: Domain, st: State, tool: ToolDef, env: Env) -> Case:
    """The first case of ``tool`` whose ``when`` holds on ``st`` (after the requires
    checks); a ToolError when none does (a hard failure)."""
    for case in tool.branches:
        if case.when is None or evaluate(case.when, st, env, domain):
            return case
    raise ToolError(
        f"{tool.name}: no case applies",
        tool=tool.name,
        kind="no_case",
    )


def apply_unchecked(domain: Domain, st: State, name: str, args: Mapping[str, Any]) -> None:
    """Apply ``name``'s effects ignoring its preconditions (what a refused call *asks* for):
    those of the first case that is not a soft failure and whose ``when`` holds (or, if
    none holds, of the first case that is not a soft failure).

    Raises ToolError if the effects themselves cannot apply; the state is then unchanged.
    """
    tool = domain.tools[name]
    env = with_old(tool, st, dict(check_args(tool, args, st)))
    writes = [c for c in tool.branches if not c.fails]
    chosen = next(
        (c for c in writes if c.when is None or evaluate(c.when, st, env, domain)),
        writes[0] if writes else None,
    )
    undo: list[Undo] = []
    try:
        for stmt in chosen.effects if chosen is not None else ():
            apply_effect(domain, st, stmt.effect, env, undo)
    except ToolError:
        rollback(st, undo)
        raise


def footprint(
    domain: Domain, st: State, name: str, args: Mapping[str, Any]
) -> list[tuple[str, str, str]]:
    """The cells (entity, key, field) a successful call would write on ``st``, including
    writes that leave a value as it was; ``field`` is '*' for created or deleted rows.

    The state is not changed. Raises ToolError if the call would fail.
    """
    probe = st.copy()
    env = with_old(domain.tools[name], probe, dict(precheck(domain, probe, name, args)))
    undo: list[Undo] = []
    case = pick_case(domain, probe, domain.tools[name], env)
    if case.fails:
        raise ToolError(f"{name}: soft failure", tool=name, kind="soft_failure")
    for stmt in case.effects:
        apply_effect(domain, probe, stmt.effect, env, undo)
    check_invariants(domain, probe, undo)
    cells = []
    for u in undo:
        match u:
            case FieldWritten(entity=ent, key=key, field=f):
                cell = (ent, key, f)
            case RowCreated(entity=ent, key=key) | RowDeleted(entity=ent, key=key):
                cell = (ent, key, "*")
            case _:
                assert_never(u)
        if cell not in cells:
            cells.append(cell)
    return cells


@dataclass(frozen=True, slots=True)
class Outcome:
    """What a call returned, and whether that was a soft failure (a ``fails: true``
    case: no state change, a result instead of an error)."""

    value: Any
    soft_failed: bool


def call_tool(domain: Domain, st: State, name: str, args: Mapping[str, Any]) -> Any:
    """Run tool ``name`` on ``st`` (mutated in place) and return its result (also the
    result of a soft failure: the agent sees what the tool returns).

    Atomic: on a :class:`ToolError`, or any other exception, the state is left exactly
    as it was.
    """
    return run_call(domain, st, name, args).value


def call_or_fail(domain: Domain, st: State, name: str, args: Mapping[str, Any]) -> Any:
    """:func:`call_tool` for task generation and checking, where a soft failure is a
    failure: it raises a ToolError of kind ``soft_failure`` carrying the result."""
    out = run_call(domain, st, name, args)
    if out.soft_failed:
        raise ToolError(
            f"{name}: soft failure, returned {out.value!r}",
            tool=name,
            kind="soft_failure",
            detail=repr(out.value),
        )
    return out.value


def run_call(domain: Domain, st: State, name: str, args: Mapping[str, Any]) -> Outcome:
    """Run a call: argument and ``requires`` checks, then the first case whose ``when``
    holds (no case: a hard failure), its effects, the invariants, its result.

    A read that succeeds is kept in the state's memo (:meth:`State.memo`): its outcome
    depends only on the rows, the arguments and the date (``today``, which is set on a
    state without a write, so it is part of the key), and the candidates drawn on one initial
    state repeat the same reads (a listing of a large table costs milliseconds each
    time). Its result is then shared, like every result: callers do not change one."""
    # a malformed call (no such tool, arguments that are no mapping) fails in the checks
    tool = domain.tools.get(name) if isinstance(name, str) else None
    ok = tool is not None and not tool.is_write and isinstance(args, Mapping)
    call = call_key(name, args) if ok else None
    if call is None:
        return _run(domain, st, name, args)
    memo, key = st.memo(), ("outcome", id(domain), st.today, call)
    hit = memo.get(key)
    if hit is not None and hit[0] is domain:
        return hit[1]  # type: ignore[no-any-return]
    out = _run(domain, st, name, args)
    memo[key] = (domain, out)
    return out


def _run(domain: Domain, st: State, name: str, args: Mapping[str, Any]) -> Outcome:
    env = dict(precheck(domain, st, name, args))
    tool = domain.tools[name]
    env = with_old(tool, st, env)
    undo: list[Undo] = []
    try:
        case = pick_case(domain, st, tool, env)
        for stmt in case.effects:
            apply_effect(domain, st, stmt.effect, env, undo)
        check_invariants(domain, st, undo)
        value = (
            to_result(evaluate(case.returns, st, env, domain), result_shape(case.returns.ty))
            if case.returns is not None
            else "ok"
        )
        return Outcome(value, case.fails)
    except ToolError as exc:
        rollback(st, undo)
        raise ToolError(
            f"{name}: {exc.message}" if not exc.message.startswith(name) else exc.message,
            tool=name,
            kind=exc.kind,
            detail=exc.detail,
        ) from None
    except BaseException:
        # Whatever stops a call (a fault, an interrupt) undoes it: calls are atomic.
        rollback(st, undo)
        raise


def result_shape(ty: Ty) -> Any:
    """Where a value of type ``ty`` holds computed decimals, for
    :func:`graphgen.decimals.to_result` (rows hold theirs in JSON form already)."""
    ty = strip_opt(ty)
    if isinstance(ty, DecT):
        return ty.scale
    if isinstance(ty, ListT):
        inner = result_shape(ty.elem)
        return None if inner is None else ["list", inner]
    if isinstance(ty, MapT):  # a JSON object keyed by ids: its values are results
        inner = result_shape(ty.value)
        return None if inner is None else ["map", inner]
    if isinstance(ty, RecordT):
        shapes = {k: result_shape(t) for k, t in ty.fields}
        return {k: s for k, s in shapes.items() if s is not None} or None
    return None


def stored(ty: Ty, value: Any) -> Any:
    """A computed value in the form a field of type ``ty`` keeps: a decimal as its JSON
    text at the field's scale (elaboration made sure it has no more places); None stays."""
    ty = strip_opt(ty)
    return dec_text(value, ty.scale) if isinstance(ty, DecT) and value is not None else value


def with_old(tool: ToolDef, st: State, env: dict[str, Any]) -> dict[str, Any]:
    """``env`` plus, when ``tool`` reads ``old(...)``, a copy of ``st`` as it is before the
    call's effects (copied only then: most tools never look back)."""
    if tool.uses_old:
        env[OLD_STATE] = st.copy()
    return env


def apply_effect(
    domain: Domain, st: State, eff: ir.Effect, env: dict[str, Any], undo: list[Undo]
) -> None:
    """Apply one effect, recording how to undo it."""
    match eff:
        case ir.Assign(entity=ent, key=k, field=f, op=op, value=v):
            key = evaluate(k, st, env, domain)
            row = _row(st, ent, key)
            val = evaluate(v, st, env, domain)
            old = row[f]
            undo.append(FieldWritten(ent, key, f, old))
            fty = domain.entities[ent].fields[f].ty
            cur = Decimal(old) if isinstance(fty, DecT) else old
            new = stored(fty, val if op == "=" else cur + val if op == "+=" else cur - val)
            st.set_field(ent, key, f, new)
        case ir.ListEdit(entity=ent, key=k, field=f, op=op, value=v):
            key = evaluate(k, st, env, domain)
            row = _row(st, ent, key)
            val = evaluate(v, st, env, domain)
            old = row[f]
            # List fields are sets kept sorted, so two orders of the same appends reach
            # the same state and every backend agrees on equality.
            if op == "append":
                if val in old:
                    raise ToolError(f"{val!r} is already in {ent} {key!r} {f}", kind="precondition")
                new = sorted([*old, val])
            else:
                if val not in old:
                    raise ToolError(f"{val!r} is not in {ent} {key!r} {f}", kind="precondition")
                new = list(old)
                new.remove(val)
            undo.append(FieldWritten(ent, key, f, old))
            st.set_field(ent, key, f, new)
        case ir.Create(entity=ent, bind=b, values=vs, key=given):
            edef = domain.entities[ent]
            n = next_counter(edef, st.tables[ent], st.counters[ent])
            if given is not None:
                key = explicit_key(edef, evaluate(given, st, env, domain), st.tables[ent])
                n = st.counters[ent] - 1  # a named key leaves the counter where it is
            else:
                key = edef.make_id(n)
            if key in st.tables[ent]:
                raise ToolError(
                    f"{ent} id {key!r} already exists (the id counter is behind)", kind="invariant"
                )
            fields = edef.fields
            row = {f: stored(fields[f].ty, evaluate(x, st, env, domain)) for f, x in vs}
            undo.append(RowCreated(ent, key, st.counters[ent]))
            st.put_row(ent, key, row)
            st.counters[ent] = n + 1
            if b is not None:
                env[b] = key
        case ir.Delete(entity=ent, key=k):
            key = evaluate(k, st, env, domain)
            row = _row(st, ent, key)
            undo.append(RowDeleted(ent, key, row, st.counters[ent]))
            # A delete does not give its id back: the counter moves past the ids the
            # table holds first (it may be behind them in an imported state).
            st.counters[ent] = next_counter(domain.entities[ent], st.tables[ent], st.counters[ent])
            st.delete_row(ent, key)
        case _:
            assert_never(eff)


def check_invariants(domain: Domain, st: State, undo: list[Undo]) -> None:
    """Bounds and uniqueness on the rows this call touched."""
    touched: set[tuple[str, Any]] = set()
    for u in undo:
        match u:
            case FieldWritten(entity=ent, key=key) | RowCreated(entity=ent, key=key):
                touched.add((ent, key))
            case RowDeleted():
                pass  # a deleted row has no values left to check
            case _:
                assert_never(u)
    for ent, key in sorted(touched):
        row = st.tables[ent].get(key)
        if row is None:
            continue
        for f in domain.entities[ent].fields.values():
            v = row[f.name]
            if v is None:
                continue  # an absent optional value has no bounds and clashes with nothing
            if isinstance(strip_opt(f.ty), DecT):
                v = Decimal(v)
            if f.min is not None and v < f.min:
                raise ToolError(
                    f"{ent} {key!r} {f.name} would be {v}, below the minimum {f.min}",
                    kind="invariant",
                )
            if f.max is not None and v > f.max:
                raise ToolError(
                    f"{ent} {key!r} {f.name} would be {v}, above the maximum {f.max}",
                    kind="invariant",
                )
            if f.unique:
                table = st.tables[ent]
                same = keys_equal(st, ent, f.name, v, isinstance(strip_opt(f.ty), DecT))
                for k2 in st.sorted_keys(ent) if same is None else same:
                    if k2 != key and table[k2][f.name] == v:
                        raise ToolError(
                            f"{ent} {f.name} {v!r} is already used by {k2!r}", kind="invariant"
                        )


def rollback(st: State, undo: list[Undo]) -> None:
    """Undo recorded effects, newest first."""
    for u in reversed(undo):
        match u:
            case FieldWritten(entity=ent, key=key, field=f, old=old):
                st.set_field(ent, key, f, old)
            case RowCreated(entity=ent, key=key, counter=n):
                st.delete_row(ent, key)
                st.counters[ent] = n
            case RowDeleted(entity=ent, key=key, row=row, counter=n):
                st.put_row(ent, key, row)
                st.counters[ent] = n
            case _:
                assert_never(u)
