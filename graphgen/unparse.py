"""IR → Python-syntax source text (the same surface syntax domains are written in).

Used for messages shown to agents and authors, and as the base printer that the code
generator in ``envs`` specialises: :class:`Printer` renders the operators (and their
precedence) once, and subclasses override only the leaves that name state (fields, rows,
tables, comprehensions), so every target prints ``and``/``+``/``in`` the same way.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import assert_never

from graphgen import ir
from graphgen.types import RefT

# Binding strength of each printed form (higher binds tighter); shared with ``envs``.
PRECEDENCE = {
    "or": 1,
    "and": 2,
    "not": 3,
    "cmp": 4,
    "+": 5,
    "-": 5,
    "*": 6,
    "neg": 7,
    "atom": 9,
}


def precedence(e: ir.Expr) -> int:
    """How tightly ``e`` binds as printed (higher binds tighter)."""
    match e:
        case ir.BoolOp(op=op):
            return PRECEDENCE[op]
        case ir.Not():
            return PRECEDENCE["not"]
        case ir.Compare() | ir.Contains() | ir.Exists():
            return PRECEDENCE["cmp"]
        case ir.Arith(op=op):
            return PRECEDENCE[op]
        case ir.Neg():
            return PRECEDENCE["neg"]
        case ir.IfExp():
            return 0
        case (
            ir.Lit()
            | ir.Var()
            | ir.FieldOf()
            | ir.RowOf()
            | ir.Len()
            | ir.ListLit()
            | ir.Comp()
            | ir.Agg()
            | ir.DictLit()
        ):
            return PRECEDENCE["atom"]
        case _:
            assert_never(e)


class Printer:
    """Renders IR as domain syntax; the hooks below are what other targets override.

    ``rows`` is the set of comprehension variables in scope (each stands for a row of
    the table being visited). ``keys`` maps entity → key field name; without it the key
    of a comprehension variable ``v`` prints as bare ``v``, which reads back as the row.
    """

    keys: Mapping[str, str] = MappingProxyType({})

    def __init__(self, keys: Mapping[str, str] | None = None) -> None:
        if keys is not None:
            self.keys = keys

    def expr(self, e: ir.Expr, rows: frozenset[str] = frozenset()) -> str:
        """Render ``e``; operands are parenthesised only where precedence needs it."""
        match e:
            case ir.Lit():
                return self.lit(e)
            case ir.Var():
                return self.var(e, rows)
            case ir.FieldOf():
                return self.field_of(e, rows)
            case ir.RowOf():
                return self.row_of(e, rows)
            case ir.Exists(entity=ent, key=k):
                return f"{self.wrap(k, 5, rows)} in {self.table(ent)}"
            case ir.Compare(op=op, left=a, right=b):
                return f"{self.wrap(a, 5, rows)} {op} {self.wrap(b, 5, rows)}"
            case ir.BoolOp(op=op, values=vs):
                return f" {op} ".join(self.wrap(v, PRECEDENCE[op] + 1, rows) for v in vs)
            case ir.Not(operand=ir.Exists(entity=ent, key=k)):
                return f"{self.wrap(k, 5, rows)} not in {self.table(ent)}"
            case ir.Not(operand=o):
                return f"not {self.wrap(o, PRECEDENCE['not'], rows)}"
            case ir.Arith(op=op, left=a, right=b):
                prec = PRECEDENCE[op]
                left, right = self.wrap(a, prec, rows), self.wrap(b, prec + 1, rows)
                return f"{left} {op} {right}"
            case ir.Neg(operand=o):
                return f"-{self.wrap(o, PRECEDENCE['neg'], rows)}"
            case ir.Contains(item=a, container=b, negated=neg):
                word = "not in" if neg else "in"
                return f"{self.wrap(a, 5, rows)} {word} {self.wrap(b, 5, rows)}"
            case ir.Len(operand=o):
                return f"len({self.expr(o, rows)})"
            case ir.ListLit(items=items):
                return "[" + ", ".join(self.expr(x, rows) for x in items) + "]"
            case ir.Comp():
                return self.comp(e, rows)
            case ir.Agg():
                return self.agg(e, rows)
            case ir.IfExp(cond=c, then=t, orelse=o):
                then, cond = self.wrap(t, 1, rows), self.wrap(c, 1, rows)
                return f"{then} if {cond} else {self.wrap(o, 0, rows)}"
            case ir.DictLit(keys=ks, values=vs):
                pairs = zip(ks, vs, strict=True)
                body = ", ".join(f"{k!r}: {self.expr(v, rows)}" for k, v in pairs)
                return "{" + body + "}"
            case _:
                assert_never(e)

    def wrap(self, x: ir.Expr, min_prec: int, rows: frozenset[str]) -> str:
        """Render ``x`` as an operand that binds at least as tightly as ``min_prec``."""
        s = self.expr(x, rows)
        return f"({s})" if precedence(x) < min_prec else s

    # ------------------------------------------------------------ leaves (overridable)

    def lit(self, e: ir.Lit) -> str:
        return repr(e.value)

    def var(self, e: ir.Var, rows: frozenset[str]) -> str:
        # Inside a comprehension ``v.<key>`` elaborates to Var(v, RefT): print it back as
        # ``v.<key>``, since bare ``v`` means the whole row.
        if e.name in rows and isinstance(e.ty, RefT) and e.ty.entity in self.keys:
            return f"{e.name}.{self.keys[e.ty.entity]}"
        return e.name

    def table(self, entity: str) -> str:
        """How a whole table is named (right of ``in``)."""
        return entity

    def field_of(self, e: ir.FieldOf, rows: frozenset[str]) -> str:
        if isinstance(e.key, ir.Var) and e.key.name in rows:
            return f"{e.key.name}.{e.field}"
        return f"{e.entity}[{self.expr(e.key, rows)}].{e.field}"

    def row_of(self, e: ir.RowOf, rows: frozenset[str]) -> str:
        if isinstance(e.key, ir.Var) and e.key.name in rows:
            return e.key.name
        return f"{e.entity}[{self.expr(e.key, rows)}]"

    def comp(self, c: ir.Comp, rows: frozenset[str]) -> str:
        return f"[{self.comp_body(c, rows)}]"

    def agg(self, a: ir.Agg, rows: frozenset[str]) -> str:
        return f"{a.fn}({self.comp_body(a.comp, rows)})"

    def comp_body(self, c: ir.Comp, rows: frozenset[str]) -> str:
        inner = rows | {c.var}
        s = f"{self.expr(c.proj, inner)} for {c.var} in {c.entity}"
        if c.cond is not None:
            s += f" if {self.wrap(c.cond, 1, inner)}"  # `if a if b else c` does not parse
        return s


_SOURCE = Printer()


def to_source(
    e: ir.Expr, rows: frozenset[str] = frozenset(), keys: Mapping[str, str] | None = None
) -> str:
    """Render ``e`` back to expression syntax.

    Pass ``keys`` (entity → key field, e.g. ``{n: d.key for n, d in domain.entities.items()}``)
    so that the text parses back to the same tree.

    >>> from graphgen.types import INT
    >>> to_source(ir.Arith("+", ir.Lit(1, INT), ir.Var("x", INT), INT))
    '1 + x'
    """
    return (_SOURCE if keys is None else Printer(keys)).expr(e, rows)
