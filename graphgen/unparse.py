"""IR → Python-syntax source text (the same surface syntax domains are written in).

Used for messages shown to agents and authors, and as the base printer that the code
generator in ``envs`` specialises: :class:`Printer` renders the operators (and their
precedence) once, and subclasses override only the leaves that name state (fields, rows,
tables, comprehensions), so every target prints ``and``/``+``/``in`` the same way.
"""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal
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
        case ir.StrOp(op=op):
            cmp = PRECEDENCE["cmp"] if op == "contains" else PRECEDENCE["atom"]
            return PRECEDENCE["+"] if op == "concat" else cmp
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
            | ir.Old()
            | ir.DictComp()
            | ir.Round()
            | ir.Index()
            | ir.Today()
        ):
            return PRECEDENCE["atom"]
        case ir.IsNone():
            return PRECEDENCE["cmp"]
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
            case ir.Not(operand=ir.StrOp(op="contains", args=(s, t))):
                return f"{self.wrap(t, 5, rows)} not in {self.wrap(s, 5, rows)}"
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
            case ir.IsNone(operand=o, negated=neg):
                return f"{self.wrap(o, 5, rows)} {'is not' if neg else 'is'} None"
            case ir.Old():
                return self.old(e, rows)
            case ir.Index(operand=xs, index=i):
                return self.index(self.wrap(xs, PRECEDENCE["atom"], rows), self.expr(i, rows))
            case ir.DictComp(comp=c):
                key = self.map_key(self.expr(ir.Var(c.var, RefT(c.entity)), rows | {c.var}))
                return "{" + f"{key}: {self.comp_body(c, rows)}" + "}"
            case ir.Round():
                return self.rounded(e, rows)
            case ir.StrOp():
                return self.strop(e, rows)
            case ir.Today():
                return self.today()
            case _:
                assert_never(e)

    def wrap(self, x: ir.Expr, min_prec: int, rows: frozenset[str]) -> str:
        """Render ``x`` as an operand that binds at least as tightly as ``min_prec``."""
        s = self.expr(x, rows)
        return f"({s})" if precedence(x) < min_prec else s

    # ------------------------------------------------------------ leaves (overridable)

    def lit(self, e: ir.Lit) -> str:
        # a decimal prints as written: 12.50 (its places are its scale)
        return f"{e.value:f}" if isinstance(e.value, Decimal) else repr(e.value)

    def var(self, e: ir.Var, rows: frozenset[str]) -> str:
        # Inside a comprehension ``v.<key>`` elaborates to Var(v, RefT): print it back as
        # ``v.<key>``, since bare ``v`` means the whole row.
        if e.name in rows and isinstance(e.ty, RefT) and e.ty.entity in self.keys:
            return f"{e.name}.{self.keys[e.ty.entity]}"
        return e.name

    def strop(self, e: ir.StrOp, rows: frozenset[str]) -> str:
        a = e.args
        match e.op:
            case "concat":
                rest = " + ".join(self.wrap(x, PRECEDENCE["+"] + 1, rows) for x in a[1:])
                return f"{self.wrap(a[0], PRECEDENCE['+'], rows)} + {rest}"
            case "fstring":
                return self.fstring(e, rows)
            case "str" | "len":
                return f"{e.op}({self.expr(a[0], rows)})"
            case "lower" | "upper":
                return f"{self.wrap(a[0], PRECEDENCE['atom'], rows)}.{e.op}()"
            case "startswith" | "endswith":
                arg = self.expr(a[1], rows)
                return f"{self.wrap(a[0], PRECEDENCE['atom'], rows)}.{e.op}({arg})"
            case "contains":
                return f"{self.wrap(a[1], 5, rows)} in {self.wrap(a[0], 5, rows)}"
            case _:
                assert_never(e.op)

    def fstring(self, e: ir.StrOp, rows: frozenset[str]) -> str:
        """``f"..."``: literal parts escaped, the rest in braces (strings inside are
        printed with single quotes, so the f-string takes double ones)."""
        out = []
        for x in e.args:
            if isinstance(x, ir.Lit) and isinstance(x.value, str):
                text = x.value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
                out.append(text.replace("{", "{{").replace("}", "}}"))
            else:
                out.append("{" + self.expr(x, rows) + "}")
        return 'f"' + "".join(out) + '"'

    def rounded(self, e: ir.Round, rows: frozenset[str]) -> str:
        num = self.expr(e.num, rows)
        if e.den is not None:
            num = f"{self.wrap(e.num, PRECEDENCE['*'], rows)} / {self.wrap(e.den, 7, rows)}"
        mode = "" if e.mode == "half_even" else f", {e.mode!r}"
        return f"round({num}, {e.places}{mode})"

    def old(self, e: ir.Old, rows: frozenset[str]) -> str:
        return f"old({self.expr(e.operand, rows)})"

    def today(self) -> str:
        """The state's today (``today()``)."""
        return "today()"

    def table(self, entity: str) -> str:
        """How a whole table is named (right of ``in``)."""
        return entity

    def index(self, items: str, i: str) -> str:
        """Item ``i`` of a list."""
        return f"{items}[{i}]"

    def map_key(self, key: str) -> str:
        """The key of a dict comprehension's items (the row's id, as written)."""
        return key

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
