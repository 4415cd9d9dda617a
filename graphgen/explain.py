"""Which values a failed precondition's message reports.

The interpreter (:mod:`graphgen.interp`) and the compiled tools (:mod:`graphgen.envs.emit`)
both explain a false precondition by the fields it read; this is the one list of them, so
the two backends report the same facts in the same order.
"""

from __future__ import annotations

from typing import assert_never

from graphgen import ir


def explained_fields(expr: ir.Expr) -> list[ir.FieldOf]:
    """The field reads of ``expr`` a failure message reports, in pre-order, stopping at the
    first comprehension (a value read per row is not a single fact)."""
    out: list[ir.FieldOf] = []
    for node in ir.walk(expr):
        match node:
            case ir.Comp() | ir.DictComp():
                break
            case ir.FieldOf():
                out.append(node)
            case (
                ir.Lit()
                | ir.Var()
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
                | ir.Agg()
                | ir.IfExp()
                | ir.DictLit()
                | ir.IsNone()
                | ir.Old()
                | ir.Round()
                | ir.StrOp()
                | ir.Index()
                | ir.Today()
            ):
                pass  # states no field value itself
            case _:
                assert_never(node)
    return out
