"""String operations of the expression language: one definition of what each means.

``a + b``, f-strings, ``str(x)``, ``s.lower()``, ``s.upper()``, ``s.startswith(t)``,
``s.endswith(t)``, ``t in s`` (substring) and ``len(s)`` are all the IR node
:class:`~graphgen.ir.StrOp`. :func:`apply` computes one on Python values; the
interpreter, the z3 encoding (which folds constants and tabulates over its finite
string table) and the slicing analysis all call it, and the code generator prints the
same operations as Python. A value is turned into text by :func:`text_of`: a decimal
at its scale ("12.50"), a bool as Python writes it, anything else as itself.
"""

from __future__ import annotations

from collections.abc import Sequence
from decimal import Decimal
from typing import Any

from graphgen import ir
from graphgen.decimals import dec_text
from graphgen.types import DecT, Ty, strip_opt

#: Operations whose result is a string (the others give a bool, or an int for len).
TEXT_OPS = frozenset({"concat", "fstring", "str", "lower", "upper"})


def message_parts(e: ir.StrOp) -> list[ir.Expr]:
    """The parts a text-making operation joins, nested texts spliced in: the literal
    parts (str literals) and the values written into the message."""
    out: list[ir.Expr] = []
    for a in e.args:
        if isinstance(a, ir.StrOp) and a.op in ("concat", "fstring", "str"):
            out.extend(message_parts(a))
        else:
            out.append(a)
    return out


def text_of(value: Any, ty: Ty) -> str:
    """``value`` (of type ``ty``) as it reads inside a message."""
    inner = strip_opt(ty)  # a present optional decimal reads as the decimal; None as None
    if isinstance(inner, DecT) and value is not None:
        return dec_text(Decimal(value), inner.scale)
    return str(value)


def apply(op: str, values: Sequence[Any], tys: Sequence[Ty]) -> Any:
    """The value of string operation ``op`` on argument ``values`` of types ``tys``."""
    if op in ("concat", "fstring", "str"):
        return "".join(text_of(v, t) for v, t in zip(values, tys, strict=True))
    s = values[0]
    if op == "lower":
        return s.lower()
    if op == "upper":
        return s.upper()
    if op == "len":
        return len(s)
    if op == "startswith":
        return s.startswith(values[1])
    if op == "endswith":
        return s.endswith(values[1])
    if op == "contains":  # values = (haystack, needle)
        return values[1] in s
    raise ValueError(f"unknown string operation {op!r}")
