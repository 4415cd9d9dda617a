"""The reference interpreter: evaluate IR on a concrete :class:`State`, run tool calls.

This is the semantics every other backend is tested against. A tool call is atomic:
arguments are checked, preconditions evaluated, effects applied in order, then schema
invariants (bounds, uniqueness) checked; any failure rolls the state back and raises a
:class:`ToolError` whose message an agent can act on.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, TypeAlias, assert_never

from graphgen import ir
from graphgen.domain import Domain, ToolDef
from graphgen.errors import NO_MESSAGE, ToolError
from graphgen.explain import explained_fields
from graphgen.parse import is_iso_date
from graphgen.state import State
from graphgen.types import BOOL, DATE, INT, STR, EnumT, ListT, RefT, Ty

Env = Mapping[str, Any]


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
    """A row was deleted; ``row`` is the record as it was."""

    entity: str
    key: Any
    row: dict[str, Any]


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
    match e:
        case ir.Lit(value=v):
            return v
        case ir.Var(name=n):
            return env[n]
        case ir.FieldOf(entity=ent, key=k, field=f):
            return _row(st, ent, evaluate(k, st, env, domain))[f]
        case ir.RowOf(entity=ent, key=k):
            key = evaluate(k, st, env, domain)
            row = _row(st, ent, key)
            keyname = domain.entities[ent].key if domain else "id"
            return {keyname: key, **row}
        case ir.Exists(entity=ent, key=k):
            return evaluate(k, st, env, domain) in st.tables[ent]
        case ir.Compare(op=op, left=a, right=b):
            x, y = evaluate(a, st, env, domain), evaluate(b, st, env, domain)
            if op == "==":
                return x == y
            if op == "!=":
                return x != y
            if op == "<":
                return x < y
            if op == "<=":
                return x <= y
            if op == ">":
                return x > y
            return x >= y
        case ir.BoolOp(op="and", values=vs):
            return all(evaluate(v, st, env, domain) for v in vs)
        case ir.BoolOp(values=vs):
            return any(evaluate(v, st, env, domain) for v in vs)
        case ir.Not(operand=o):
            return not evaluate(o, st, env, domain)
        case ir.Arith(op=op, left=a, right=b):
            x, y = evaluate(a, st, env, domain), evaluate(b, st, env, domain)
            return x + y if op == "+" else x - y if op == "-" else x * y
        case ir.Neg(operand=o):
            return -evaluate(o, st, env, domain)
        case ir.Contains(item=a, container=b, negated=neg):
            r = evaluate(a, st, env, domain) in evaluate(b, st, env, domain)
            return not r if neg else r
        case ir.Len(operand=o):
            return len(evaluate(o, st, env, domain))
        case ir.ListLit(items=items):
            return [evaluate(x, st, env, domain) for x in items]
        case ir.Comp():
            return _comp(e, st, env, domain)
        case ir.Agg(fn=fn, comp=c):
            vals = _comp(c, st, env, domain)
            if fn == "any":
                return any(vals)
            if fn == "all":
                return all(vals)
            if fn == "count":
                return len(vals)
            if fn == "sum":
                return sum(vals)
            if not vals:
                raise ToolError(f"{fn}() over no {c.entity} rows", kind="empty")
            return min(vals) if fn == "min" else max(vals)
        case ir.IfExp(cond=c, then=t, orelse=o):
            return evaluate(t if evaluate(c, st, env, domain) else o, st, env, domain)
        case ir.DictLit(keys=ks, values=vs):
            return {k: evaluate(v, st, env, domain) for k, v in zip(ks, vs, strict=True)}
        case _:
            assert_never(e)


def _comp(c: ir.Comp, st: State, env: Env, domain: Domain | None) -> list[Any]:
    table = st.tables[c.entity]
    inner = dict(env)
    out = []
    for key in sorted(table):  # key order is the one order every backend uses
        inner[c.var] = key
        if c.cond is None or evaluate(c.cond, st, inner, domain):
            out.append(evaluate(c.proj, st, inner, domain))
    return out


# ------------------------------------------------------------------ argument checks


def check_value(ty: Ty, value: Any) -> str | None:
    """Why ``value`` is not a valid value of ``ty`` (``None`` when it is)."""
    if ty == INT:
        return None if isinstance(value, int) and not isinstance(value, bool) else "an integer"
    if ty == BOOL:
        return None if isinstance(value, bool) else "true or false"
    if ty == STR or isinstance(ty, RefT):
        return None if isinstance(value, str) else "a string"
    if ty == DATE:
        return None if isinstance(value, str) and is_iso_date(value) else "a date YYYY-MM-DD"
    if isinstance(ty, EnumT):
        return None if value in ty.values else "one of " + ", ".join(map(repr, ty.values))
    if isinstance(ty, ListT):
        if not isinstance(value, list):
            return "a list"
        for v in value:
            why = check_value(ty.elem, v)
            if why:
                return f"a list of {why}"
        return None
    return f"a {ty.show()}"


def argument_problem(
    tool: ToolDef, args: Mapping[str, Any], st: State | None = None
) -> tuple[str, str] | None:
    """What is wrong with call arguments (the ``ToolError`` kind and the message), in
    the order a call checks them: shape, names, then per parameter its type, bounds and
    (given a state ``st``) that the row it names exists."""
    if not isinstance(args, Mapping):
        return "bad_args", f"{tool.name}: arguments must be a JSON object"
    unknown = sorted(set(args) - set(tool.params))
    if unknown:
        return "bad_args", (
            f"{tool.name}: unknown argument(s) {', '.join(unknown)}; expected "
            f"{', '.join(tool.params) or 'none'}"
        )
    missing = [p for p in tool.params if p not in args]
    if missing:
        return "bad_args", f"{tool.name}: missing argument(s) {', '.join(missing)}"
    for name, p in tool.params.items():
        v = args[name]
        why = check_value(p.ty, v)
        if why:
            return "bad_args", f"{tool.name}: argument {name} must be {why}, got {v!r}"
        if p.min is not None and v < p.min:
            return "bad_args", f"{tool.name}: argument {name} must be at least {p.min}, got {v}"
        if p.max is not None and v > p.max:
            return "bad_args", f"{tool.name}: argument {name} must be at most {p.max}, got {v}"
        if st is not None and isinstance(p.ty, RefT) and v not in st.tables[p.ty.entity]:
            return "not_found", f"{tool.name}: {p.ty.entity} {v!r} not found"
    return None


def check_args(tool: ToolDef, args: Mapping[str, Any], st: State) -> dict[str, Any]:
    """Validate call arguments; return them as a plain dict or raise ToolError."""
    bad = argument_problem(tool, args, st)
    if bad is not None:
        raise ToolError(bad[1], tool=tool.name, kind=bad[0])
    return {name: args[name] for name in tool.params}


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


def precheck(domain: Domain, st: State, name: str, args: Mapping[str, Any]) -> dict[str, Any]:
    """Validate arguments and preconditions without applying effects.

    Raises the same :class:`ToolError` a call would (effects may still hit an invariant).
    """
    tool = domain.tools.get(name)
    if tool is None:
        raise ToolError(
            f"unknown tool {name!r}; available: {', '.join(domain.tools)}",
            tool=name,
            kind="unknown_tool",
        )
    env = check_args(tool, args, st)
    failure = _first_failure(domain, st, tool, env)
    if failure is not None:
        chk, exc = failure
        if exc is not None:  # the condition itself could not be evaluated
            raise ToolError(f"{name}: {exc.message}", tool=name, kind=exc.kind, detail=exc.detail)
        facts = _explain(chk, st, env)
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


def apply_unchecked(domain: Domain, st: State, name: str, args: Mapping[str, Any]) -> None:
    """Apply ``name``'s effects ignoring its preconditions (what a refused call *asks* for).

    Raises ToolError if the effects themselves cannot apply; the state is then unchanged.
    """
    tool = domain.tools[name]
    env = dict(check_args(tool, args, st))
    undo: list[Undo] = []
    try:
        for stmt in tool.effects:
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
    env = dict(precheck(domain, probe, name, args))
    undo: list[Undo] = []
    for stmt in domain.tools[name].effects:
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


def call_tool(domain: Domain, st: State, name: str, args: Mapping[str, Any]) -> Any:
    """Run tool ``name`` on ``st`` (mutated in place) and return its result.

    Atomic: on a :class:`ToolError`, or any other exception, the state is left exactly
    as it was.
    """
    env = dict(precheck(domain, st, name, args))
    tool = domain.tools[name]
    undo: list[Undo] = []
    try:
        for stmt in tool.effects:
            apply_effect(domain, st, stmt.effect, env, undo)
        check_invariants(domain, st, undo)
        return evaluate(tool.returns, st, env, domain) if tool.returns is not None else "ok"
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
            row[f] = val if op == "=" else old + val if op == "+=" else old - val
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
            row[f] = new
        case ir.Create(entity=ent, bind=b, values=vs):
            edef = domain.entities[ent]
            n = st.counters[ent]
            key = edef.make_id(n)
            if key in st.tables[ent]:
                raise ToolError(
                    f"{ent} id {key!r} already exists (the id counter is behind)", kind="invariant"
                )
            row = {f: evaluate(x, st, env, domain) for f, x in vs}
            undo.append(RowCreated(ent, key, n))
            st.tables[ent][key] = row
            st.counters[ent] = n + 1
            if b is not None:
                env[b] = key
        case ir.Delete(entity=ent, key=k):
            key = evaluate(k, st, env, domain)
            row = _row(st, ent, key)
            undo.append(RowDeleted(ent, key, row))
            del st.tables[ent][key]
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
                for k2, r2 in sorted(st.tables[ent].items()):
                    if k2 != key and r2[f.name] == v:
                        raise ToolError(
                            f"{ent} {f.name} {v!r} is already used by {k2!r}", kind="invariant"
                        )


def rollback(st: State, undo: list[Undo]) -> None:
    """Undo recorded effects, newest first."""
    for u in reversed(undo):
        match u:
            case FieldWritten(entity=ent, key=key, field=f, old=old):
                st.tables[ent][key][f] = old
            case RowCreated(entity=ent, key=key, counter=n):
                del st.tables[ent][key]
                st.counters[ent] = n
            case RowDeleted(entity=ent, key=key, row=row):
                st.tables[ent][key] = row
            case _:
                assert_never(u)
