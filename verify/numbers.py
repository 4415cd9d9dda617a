"""Decimals in the z3 encoding: exact, as scaled integers.

A value of type ``decimal(s)`` is the Int ``v * 10**s``: every decimal the language can
compute is such an integer, since ``+ - *`` of decimals with finitely many places have
finitely many places and division exists only inside ``round``. Each IR node's type
gives the scale of its term (an int is scale 0): a sum is brought to the larger scale
by multiplying by a power of ten (exact), a product of scales ``a`` and ``b`` is the
Int product at scale ``a + b`` (exact), comparisons bring both sides to one scale, and
``round(n / d, k)`` is integer division with the rounding rule written out on
magnitudes (below). Nothing is approximated, so the encoding agrees with the
interpreter's :class:`decimal.Decimal` arithmetic on every value (the interpreter's
limit of 28 significant digits aside; see docs/verify.md).
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import z3

from graphgen.types import DecT, NoneT, OptT, Ty, scale_of
from graphgen.verify.terms import (
    LIT,
    Term,
    arith,
    eq,
    int_const,
    int_val,
    ite,
)
from graphgen.verify.universe import NONE_VALUE


def scaled(value: Any, scale: int) -> int:
    """The integer ``value * 10**scale`` of a number with at most ``scale`` places."""
    return int(Decimal(value).scaleb(scale))


def rescale(t: Term, src: Ty, dst: Ty | int) -> Term:
    """Term ``t`` of type ``src`` at the scale of ``dst`` (never smaller than src's); an
    absent optional value stays the None sentinel."""
    want = dst if isinstance(dst, int) else scale_of(dst)
    up = want - scale_of(src)
    assert up >= 0, "a rescale never drops places (elaboration rounds explicitly)"
    if up == 0 or isinstance(src, NoneT):
        return t
    grown = arith("*", t, int_val(10**up))
    if isinstance(src, OptT):
        none = int_val(NONE_VALUE)
        return ite(eq(t, none), none, grown)
    return grown


def bound_term(ty: Ty, bound: Any) -> Term:
    """A field's or parameter's ``min``/``max`` as a term at its scale."""
    return int_val(scaled(bound, ty.scale) if isinstance(ty, DecT) else bound)


def round_terms(num: Term, den: Term, shift: int, mode: str) -> Term:
    """``num * 10**shift / den`` rounded to an integer, half-even or half-up (ties away
    from zero), on magnitudes: q = |n| div |d| and r = |n| mod |d| (non-negative), the
    magnitude rounds up when 2r > |d|, or 2r = |d| and (half-up or q is odd); the sign
    is that of n * d. ``den`` must not be 0 (the caller makes that an error)."""
    n = arith("*", num, int_val(10**shift)) if shift else num
    cn, cd = int_const(n), int_const(den)
    if cn is not None and cd is not None and cd != 0:
        from fractions import Fraction

        q = Fraction(cn, cd)
        if mode == "half_up":
            k = int(abs(q) + Fraction(1, 2))
            return int_val(k if q >= 0 else -k)
        return int_val(round(q))
    an = ite(n >= 0, n, -n)
    ad = ite(den >= 0, den, -den)
    q = an / ad  # z3 Int division: floor for a positive divisor
    r = an - q * ad
    twice = r * 2
    tie_up = LIT.TRUE if mode == "half_up" else q % 2 == 1  # half-even: up to the even one
    up = z3.Or(twice > ad, z3.And(eq(twice, ad), tie_up))
    mag = ite(up, q + 1, q)
    negative = z3.Xor(n < 0, den < 0)
    return ite(negative, -mag, mag)
