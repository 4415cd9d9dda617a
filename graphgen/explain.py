"""Which values a failed precondition's message reports.

The interpreter (:mod:`graphgen.interp`) and the compiled tools (:mod:`graphgen.envs.emit`)
both explain a false precondition by the fields it read; this is the one list of them, so
the two backends report the same facts in the same order.
"""

from __future__ import annotations

from graphgen import ir


def explained_fields(expr: ir.Expr) -> list[ir.FieldOf]:
    """The field reads of ``expr`` a failure message reports, in pre-order, stopping at the
    first comprehension (a value read per row is not a single fact)."""
    out: list[ir.FieldOf] = []
    for node in ir.walk(expr):
        if isinstance(node, ir.Comp):
            break
        if isinstance(node, ir.FieldOf):
            out.append(node)
    return out
