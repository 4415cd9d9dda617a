"""The z3 half of ``graphgen check``: write tools whose precondition no state satisfies.

Each precondition is encoded over an *abstract* state: every ``Entity[k].field`` read
with the same key expression is one z3 variable constrained only by the schema (the
field's type, enum members, ``min``/``max`` bounds); parameters are variables with their
own type and bounds; anything the abstraction does not model exactly (comprehensions,
aggregates, list membership, row existence) is a fresh unconstrained value of its type.
Dates are day numbers, exactly as in the symbolic state
(:func:`graphgen.verify.universe.date_ordinal`), so a date window with no day in it is
found empty here too.
The abstraction allows every real state and more, so when the conjunction of a tool's
``requires`` is unsatisfiable here, it is unsatisfiable on every state the schema allows:
a report is never a false alarm (the converse does not hold: some never-callable tools
go unreported).
"""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal
from typing import Any, assert_never

import z3

from graphgen import ir
from graphgen.domain import Domain, ToolDef
from graphgen.parse import is_iso_date
from graphgen.types import BOOL, DATE, INT, STR, DecT, EnumT, Ty
from graphgen.unparse import to_source
from graphgen.verify.universe import date_ordinal


class _Abstraction:
    def __init__(self, domain: Domain, tool: ToolDef) -> None:
        self.domain = domain
        self.tool = tool
        self.vars: dict[str, Any] = {}
        self.side: list[Any] = []  # schema constraints on the variables made
        self.strings: dict[str, int] = {}

    def _fresh(self, name: str, ty: Ty, lo: Any = None, hi: Any = None) -> Any:
        if name in self.vars:
            return self.vars[name]
        # decimals are reals here: every decimal is one, so the abstraction stays sound
        v = z3.Bool(name) if ty == BOOL else z3.Real(name) if isinstance(ty, DecT) else z3.Int(name)
        if isinstance(lo, Decimal):
            lo = z3.RealVal(str(lo))
        if isinstance(hi, Decimal):
            hi = z3.RealVal(str(hi))
        if isinstance(ty, EnumT):
            self.side.append(z3.And(v >= 0, v < len(ty.values)))
        if lo is not None:
            self.side.append(v >= lo)
        if hi is not None:
            self.side.append(v <= hi)
        self.vars[name] = v
        return v

    def _lit(self, e: ir.Lit) -> Any:
        v = e.value
        if isinstance(v, bool):
            return z3.BoolVal(v)
        if isinstance(v, Decimal):
            return z3.RealVal(str(v))
        if isinstance(e.ty, EnumT):
            return z3.IntVal(e.ty.values.index(str(v)))
        if isinstance(v, int):
            return z3.IntVal(v)
        if e.ty == DATE and is_iso_date(str(v)):
            # the encoder's day number: no integer lies between two consecutive days
            return z3.IntVal(date_ordinal(str(v)))
        # Strings only meet equality here (ordering on str is over-approximated below).
        return z3.IntVal(self.strings.setdefault(str(v), len(self.strings) + 1_000_000))

    def encode(self, e: ir.Expr) -> Any:
        """The term of ``e`` over the abstract state (see the module docstring)."""
        match e:
            case ir.Lit():
                return self._lit(e)
            case ir.Var(name=n):
                p = self.tool.params.get(n)
                return self._fresh(f"param:{n}", e.ty, p.min if p else None, p.max if p else None)
            case ir.FieldOf(entity=ent, key=k, field=f):
                fd = self.domain.entities[ent].fields.get(f)
                lo, hi = (fd.min, fd.max) if fd is not None else (None, None)
                return self._fresh(f"{ent}[{to_source(k)}].{f}", e.ty, lo, hi)
            case ir.Compare(op=op, left=a, right=b):
                x, y = self.encode(a), self.encode(b)
                if op == "==":
                    return x == y
                if op == "!=":
                    return x != y
                if a.ty == STR:  # interned ids carry no order: any outcome is possible
                    return self._opaque(e)
                ops: dict[str, Callable[[Any, Any], Any]] = {
                    "<": lambda p, q: p < q,
                    "<=": lambda p, q: p <= q,
                    ">": lambda p, q: p > q,
                    ">=": lambda p, q: p >= q,
                }
                return ops[op](x, y)
            case ir.BoolOp(op=op, values=vs):
                parts = [self.encode(v) for v in vs]
                return z3.And(*parts) if op == "and" else z3.Or(*parts)
            case ir.Not(operand=o):
                return z3.Not(self.encode(o))
            case ir.Arith(op=op, left=a, right=b):
                x, y = self.encode(a), self.encode(b)
                return x + y if op == "+" else x - y if op == "-" else x * y
            case ir.Neg(operand=o):
                return -self.encode(o)
            case ir.IfExp(cond=c, then=t, orelse=o):
                return z3.If(self.encode(c), self.encode(t), self.encode(o))
            case ir.Len():
                v = self._opaque(e)
                self.side.append(v >= 0)
                return v
            case (
                ir.RowOf()
                | ir.Exists()
                | ir.Contains()
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
                return self._opaque(e)
            case _:
                assert_never(e)

    def _opaque(self, e: ir.Expr) -> Any:
        """A value the abstraction does not model: free, of the right type."""
        ty = BOOL if e.ty == BOOL else e.ty if isinstance(e.ty, DecT) else INT
        return self._fresh(f"opaque:{to_source(e)}", ty)


def unsatisfiable_writes(domain: Domain) -> list[str]:
    """Write tools whose ``requires`` no schema-respecting state and arguments satisfy.

    >>> from graphgen.domains import load_builtin
    >>> unsatisfiable_writes(load_builtin("mock"))
    []
    """
    out: list[str] = []
    for tool in domain.write_tools:
        if not tool.requires:
            continue
        abstraction = _Abstraction(domain, tool)
        for name, p in tool.params.items():  # declared argument bounds hold for every call
            abstraction.encode(ir.Var(name, p.ty))
        conds = [abstraction.encode(c.expr) for c in tool.requires]
        solver = z3.Solver()
        solver.set("timeout", 5000)
        solver.add(*abstraction.side, *conds)
        if solver.check() == z3.unsat:
            out.append(tool.name)
    return out
