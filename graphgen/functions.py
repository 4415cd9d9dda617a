"""Domain-level ``constants:`` and pure ``functions:``, expanded at elaboration.

A constant is a typed literal: a use of its name elaborates to an :class:`~graphgen.ir.Lit`.
A constant table (``RATE[currency]``) elaborates to ``v1 if k == k1 else v2 if ...``:
total by construction (an enum key lists every member, any other key type has a
``default:``), so a lookup never fails and needs no node or error path of its own.
A function is a typed body over its parameters (and the constants and the functions
declared before it); a call elaborates to the body with the arguments put in for the
parameters. Both are gone from the IR after elaboration, so no backend has anything to
add for them: they mean exactly what their expansion means in every backend.

Bodies are pure: no table reads (a lookup, ``in Entity``, a comprehension), no
``old(...)``, no recursion (a function sees only the ones declared before it).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from decimal import Decimal
from typing import Any

from graphgen import ir
from graphgen.decimals import dec_text, parse_decimal, places
from graphgen.parse import is_iso_date
from graphgen.types import BOOL, DATE, INT, STR, DecT, EnumT, RefT, Ty

#: Rows of a constant table: its lookup is a chain of that many ``if``s in every backend.
MAX_TABLE_ROWS = 64


@dataclass(frozen=True)
class FunctionDef:
    """A pure function of the domain: typed parameters, return type and body."""

    name: str
    params: tuple[tuple[str, Ty], ...]
    returns: Ty
    body: ir.Expr
    source: str


@dataclass(frozen=True)
class ConstTable:
    """A constant table of the domain: key type, value type, rows and the default."""

    name: str
    key: Ty
    ty: Ty
    rows: tuple[tuple[ir.Lit, ir.Lit], ...]
    default: ir.Lit | None

    def lookup(self, key: ir.Expr) -> ir.Expr:
        """The value of the row whose key equals ``key`` (an expression of type
        :attr:`key`), as the ``if`` chain every backend already knows."""
        rows = list(self.rows)
        if self.default is None:  # an enum table lists every member: the last is the rest
            *rows, (_, out) = rows
            out_e: ir.Expr = out
        else:
            out_e = self.default
        for k, v in reversed(rows):
            out_e = ir.IfExp(ir.Compare("==", key, k, BOOL), v, out_e, self.ty)
        return out_e


def table_key(ty: Ty, raw: Any) -> tuple[Any, str | None]:
    """A table key as written in YAML, checked against the key type ``ty``."""
    if isinstance(ty, EnumT):
        return raw, None if raw in ty.values else f"{raw!r} is not one of {', '.join(ty.values)}"
    if isinstance(ty, RefT):
        ok = isinstance(raw, str | int) and not isinstance(raw, bool)
        return raw, None if ok else f"{raw!r} is not an id"
    if ty in (INT, STR):
        return constant_value(ty, raw)
    return raw, f"a table key is a shared enum, int, str or an entity's id, not {ty.show()}"


def substitute(e: ir.Expr, values: Mapping[str, ir.Expr]) -> ir.Expr:
    """``e`` with every ``Var`` named in ``values`` replaced by its expression.

    Function bodies bind no names (they have no comprehensions), so no argument can be
    captured. The rebuild is structural: every node is a frozen dataclass whose fields
    are sub-expressions, tuples of them, or plain values.
    """
    if isinstance(e, ir.Var):
        return values.get(e.name, e)
    changes: dict[str, Any] = {}
    for f in fields(e):  # type: ignore[arg-type]
        v = getattr(e, f.name)
        if isinstance(v, ir.ExprNode):
            changes[f.name] = substitute(v, values)  # type: ignore[arg-type]
        elif isinstance(v, tuple) and v and all(isinstance(x, ir.ExprNode) for x in v):
            changes[f.name] = tuple(substitute(x, values) for x in v)
    return replace(e, **changes) if changes else e  # type: ignore[type-var]


def impure_part(body: ir.Expr) -> ir.Expr | None:
    """The first node of ``body`` a pure function may not contain (a table read or
    ``old``), or None."""
    for n in ir.walk(body):
        if isinstance(n, ir.FieldOf | ir.RowOf | ir.Exists | ir.Comp | ir.Agg | ir.Old):
            return n
    return None


def constant_value(ty: Ty, value: Any) -> tuple[Any, str | None]:
    """The Python value of a constant of type ``ty`` written as ``value`` (from YAML),
    and why it does not fit, if it does not."""
    if ty == INT:
        ok = isinstance(value, int) and not isinstance(value, bool)
        return value, None if ok else f"{value!r} is not an integer"
    if ty == BOOL:
        return value, None if isinstance(value, bool) else f"{value!r} is not true or false"
    if ty == STR:
        return value, None if isinstance(value, str) else f"{value!r} is not a string"
    if ty == DATE:
        v = value.isoformat() if hasattr(value, "isoformat") else value
        ok = isinstance(v, str) and is_iso_date(v)
        return v, None if ok else f"{value!r} is not an ISO date (YYYY-MM-DD)"
    if isinstance(ty, DecT):
        d = parse_decimal(value)
        if d is None or places(d) > ty.scale:
            return value, f'{value!r} is not a decimal with at most {ty.scale} places ("0.015")'
        return Decimal(dec_text(d, ty.scale)), None  # written at its scale: 0.50, not 0.5
    return value, f"constants of type {ty.show()} are not supported"
