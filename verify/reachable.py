"""The values an existing row's enum, bool or string field can ever hold,
over-approximated without a solver: what settles proof 6 for a refusal whose refused
call needs a value no call can give its row ("cancel an order that was delivered":
nothing sets a delivered order back to pending), and whose requested change no call
can make there (a delivered order's address: only calls on a pending order write it).

Each field of a row starts from its value in the state. A tool's assignment
``E[p].f = c`` (``p`` one of its parameters, ``c`` a literal) may add ``c`` to the
field of any row ``p`` can name, once that row's fields can satisfy the tool's simple
checks on the same row (``E[p].g == d``, ``!=``, ``in [...]``, ``not in [...]``, a bool
field alone or negated); a computed write on such a row (a parameter, ``+=``, a list
edit) makes the field any value there, under the same condition. Every other write of
``E.f`` (another key, a create that names its key) makes ``f`` any value on every row.
Every other check, and a case's condition, is taken to hold, so the sets only ever grow
past what chains can do: a value outside a row's set is one no chain of any length
gives the row. Only fields of enum, bool and string type are followed (their literals
compare exactly); others are any value.

A row's fields evolve apart from every other row's here (a simple check reads the row
the assignment writes), so each row's sets are a small fixpoint of their own, computed
when first asked for.

>>> from graphgen.domains import load_builtin
>>> from graphgen.stategen import generate_state
>>> d = load_builtin("retail")
>>> s = generate_state(d, 0)
>>> key = next(k for k, o in sorted(s.tables["Order"].items()) if o["status"] == "delivered")
>>> sorted(Reach(d, s).values("Order", key, "status"))
['delivered', 'exchanged', 'returned']
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from graphgen import ir
from graphgen.domain import Domain, FieldDef, Key, ToolDef
from graphgen.state import State
from graphgen.types import BOOL, INT, STR, DecT, EnumT, strip_opt

#: (field, the values it must be among, or must not be (``negated``)).
Guard = tuple[str, frozenset[Any], bool]


class _Any:
    def __repr__(self) -> str:
        return "<any value>"


#: What a write of a computed value (``+=``, a parameter, a list edit) gives its field.
ANY: Any = _Any()


@dataclass(frozen=True)
class _Write:
    """``E[param].field = value`` (``value`` :data:`ANY` for a computed one), made only
    where ``guards`` can hold."""

    field: str
    value: Any
    guards: tuple[Guard, ...]


def simple_check(e: ir.Expr) -> tuple[str, str, str, frozenset[Any], bool] | None:
    """``E[p].f == d`` (also ``!=``, ``in``/``not in`` a list of literals, either side of
    a comparison, and a bool field alone or negated: ``E[p].f``, ``not E[p].f``) as
    (entity, parameter, field, values, negated), or None."""
    match e:
        case ir.FieldOf(key=ir.Var(name=p)) as f if f.ty == BOOL:
            return f.entity, p, f.field, frozenset([True]), False
        case ir.Not(operand=ir.FieldOf(key=ir.Var(name=p)) as f) if f.ty == BOOL:
            return f.entity, p, f.field, frozenset([True]), True
        case ir.Compare(op="==" | "!=" as op, left=ir.FieldOf() as f, right=ir.Lit() as lit) | (
            ir.Compare(op="==" | "!=" as op, left=ir.Lit() as lit, right=ir.FieldOf() as f)
        ):
            if isinstance(f.key, ir.Var):
                return f.entity, f.key.name, f.field, frozenset([lit.value]), op == "!="
        case ir.Contains(item=ir.FieldOf() as f, container=ir.ListLit(items=items), negated=neg):
            if isinstance(f.key, ir.Var) and all(isinstance(x, ir.Lit) for x in items):
                vals = frozenset(x.value for x in items if isinstance(x, ir.Lit))
                return f.entity, f.key.name, f.field, vals, neg
    return None


def may_hold(cur: frozenset[Any] | None, vals: frozenset[Any], negated: bool) -> bool:
    """Can a field whose values are ``cur`` (None: any) be among ``vals`` (or, negated,
    outside them)?"""
    if cur is None:
        return True
    return bool(cur - vals) if negated else bool(cur & vals)


class Reach:
    """The values each enum, bool or string field of the rows of ``state`` can ever hold
    under the tools of ``domain`` (see the module docstring)."""

    def __init__(self, domain: Domain, state: State) -> None:
        self.domain = domain
        self.state = state
        self.followed = {
            (e, f)
            for e, ed in domain.entities.items()
            for f, fd in ed.fields.items()
            if isinstance(fd.ty, EnumT) or fd.ty in (BOOL, STR)
        }
        self.writes: dict[str, list[_Write]] = {}
        for tool in domain.tools.values():
            self._read_tool(tool)
        self._rows: dict[tuple[str, Key], dict[str, frozenset[Any] | None]] = {}

    def _read_tool(self, tool: ToolDef) -> None:
        simple = [simple_check(c) for r in tool.requires for c in ir.conjuncts(r.expr)]
        for stmt in tool.effects:
            eff = stmt.effect
            match eff:
                case ir.Assign(key=ir.Var(name=p)) | ir.ListEdit(key=ir.Var(name=p)) if (
                    p in tool.params
                ):
                    guards = tuple(
                        (f, vals, neg)
                        for e, q, f, vals, neg in filter(None, simple)
                        if (e, q) == (eff.entity, p)
                    )
                    v: Any = ANY  # a computed value: any
                    if (
                        isinstance(eff, ir.Assign)
                        and eff.op == "="
                        and isinstance(eff.value, ir.Lit)
                    ):
                        v = eff.value.value
                    w = _Write(eff.field, v, guards)
                    self.writes.setdefault(eff.entity, []).append(w)
                case ir.Assign() | ir.ListEdit():
                    self.followed.discard((eff.entity, eff.field))
                case ir.Create(key=k) if k is not None:
                    # a named key may be one a deleted row had: any value, any field
                    for f in self.domain.entities[eff.entity].fields:
                        self.followed.discard((eff.entity, f))
                case ir.Create() | ir.Delete():
                    pass  # new rows' values, or a row gone: no existing row's field changes

    def row(self, entity: str, key: Key) -> Mapping[str, frozenset[Any] | None]:
        """Per field of row ``entity``/``key`` (which must exist in the state) the values
        it can ever hold, None for any value."""
        got = self._rows.get((entity, key))
        if got is not None:
            return got
        start = self.state.tables[entity][key]
        cur: dict[str, frozenset[Any] | None] = {
            f: frozenset([start.get(f)]) if (entity, f) in self.followed else None
            for f in self.domain.entities[entity].fields
        }
        writes = [w for w in self.writes.get(entity, []) if (entity, w.field) in self.followed]
        grown = True
        while grown:
            grown = False
            for w in writes:
                have = cur[w.field]
                if have is None or w.value in have:
                    continue
                if all(may_hold(cur.get(g), vals, neg) for g, vals, neg in w.guards):
                    cur[w.field] = None if w.value is ANY else have | {w.value}
                    grown = True
        self._rows[(entity, key)] = cur
        return cur

    def values(self, entity: str, key: Key, field: str) -> frozenset[Any] | None:
        """The values field ``field`` of an existing row can ever hold (None: any)."""
        return self.row(entity, key).get(field)

    def never(self, tool: ToolDef, args: Mapping[str, Any]) -> str | None:
        """Why a call of ``tool`` with ``args`` can never pass its checks, after any
        chain: a simple check on an existing row that no value its field can hold
        satisfies (its source and the values, as text); None when there is none."""
        full = tool.full_args(args)
        for check in tool.requires:
            for c in ir.conjuncts(check.expr):
                got = self._unsatisfiable(c, full)
                if got is not None:
                    return f"`{check.source}` never holds: {got}"
        return None

    def _unsatisfiable(self, c: ir.Expr, args: Mapping[str, Any]) -> str | None:
        got = simple_check(c)
        if got is None:
            return None
        entity, p, f, vals, neg = got
        key = args.get(p)
        if key is None or key not in self.state.tables.get(entity, {}):
            return None
        have = self.values(entity, key, f)
        if may_hold(have, vals, neg):
            return None
        assert have is not None
        return f"{entity} {key}'s {f} can only ever be {_listed(have)}"

    def unreachable(self, entity: str, key: Key, field: str, value: Any) -> str | None:
        """Why no chain gives existing row ``entity``/``key`` the value ``value`` at
        ``field`` (as text), or None when one may."""
        row = self.state.tables.get(entity, {}).get(key)
        fd = self.domain.entities[entity].fields.get(field)
        if row is None or fd is None:
            return None
        outside = _out_of_bounds(fd, value)
        if outside is not None and value != row[field]:
            # a call that leaves a row it touched outside a bound fails, and a row no
            # call touches keeps its value
            return f"{entity} {key}'s {field} is never {value!r}: {outside}"
        have = self.values(entity, key, field)
        if have is None or value in have:
            return None
        return f"{entity} {key}'s {field} can only ever be {_listed(have)}, never {value!r}"


def _out_of_bounds(fd: FieldDef, value: Any) -> str | None:
    """Why ``value`` breaks ``fd``'s ``min``/``max`` (as text), or None."""
    if fd.min is None and fd.max is None:
        return None
    ty = strip_opt(fd.ty)
    if ty == INT and isinstance(value, int) and not isinstance(value, bool):
        v: int | Decimal = value
    elif (
        isinstance(ty, DecT)
        and isinstance(value, int | str | Decimal)
        and not isinstance(value, bool)
    ):
        try:
            v = Decimal(value)
        except ArithmeticError:
            return None
    else:
        return None
    if fd.min is not None and v < fd.min:
        return f"below its minimum {fd.min}"
    if fd.max is not None and v > fd.max:
        return f"above its maximum {fd.max}"
    return None


def _listed(vals: frozenset[Any]) -> str:
    return ", ".join(repr(v) for v in sorted(vals, key=repr))
