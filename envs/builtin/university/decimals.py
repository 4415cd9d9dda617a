"""Decimal values with a declared scale: the one implementation of their semantics.

A ``decimal`` field or parameter has a scale (places after the point, 2 for money). Its
JSON form (states, tool arguments, tool results) is a string with exactly ``scale``
places, ``"12.50"``; arguments also accept a JSON number. Expressions compute with
:class:`decimal.Decimal`; ``+ - *`` are exact, division happens only inside ``round``
(:func:`round_div`), which rounds the exact quotient half-even (Python's ``round``) or
half-up (ties away from zero).

This module imports only the standard library: the code generator ships it verbatim in
every compiled package whose domain uses decimals, so the interpreter and the compiled
tools share one implementation.
"""

from __future__ import annotations

import math
import re
from decimal import Decimal, InvalidOperation
from fractions import Fraction
from typing import Any

#: The rounding modes of ``round(x, n, mode)``; the first is the default.
MODES = ("half_even", "half_up")

_TEXT = re.compile(r"^[+-]?\d+(\.\d+)?\Z")


def dec_text(value: Decimal | int, scale: int) -> str:
    """``value`` as its JSON text with exactly ``scale`` places (it has at most that many).

    >>> dec_text(Decimal("12.5"), 2), dec_text(3, 2), dec_text(Decimal("-0.10"), 1)
    ('12.50', '3.00', '-0.1')
    """
    q = Decimal(value).quantize(Decimal(1).scaleb(-scale))
    return f"{q:f}"


def units(value: object, scale: int) -> int:
    """``value`` counted in units of the last place at ``scale``: 12.50 at 2 is 1250.
    Drawing a decimal is drawing an int of units (:func:`from_units` turns it back)."""
    return int(Decimal(str(value)).scaleb(scale))


def from_units(n: int, scale: int) -> str:
    """The JSON form of ``n`` units at ``scale``: 1250 at 2 is "12.50"."""
    return dec_text(Decimal(n).scaleb(-scale), scale)


def places(value: Decimal) -> int:
    """How many places ``value`` needs (trailing zeros do not count): 12.50 needs 1."""
    exp = value.normalize().as_tuple().exponent
    return max(0, -exp) if isinstance(exp, int) else 0


def decimal_problem(value: object, scale: int) -> str | None:
    """Why ``value`` (a JSON string or number) is not a decimal with at most ``scale``
    places, in the words an argument error uses after "must be"; None when it is."""
    want = f'a decimal with at most {scale} places (e.g. "{dec_text(Decimal("12.5"), scale)}")'
    d = parse_decimal(value)
    if d is None or places(d) > scale:
        return want
    return None


def parse_decimal(value: object) -> Decimal | None:
    """The Decimal a JSON string (``"12.50"``) or number (``12.5``) stands for, or None.

    >>> parse_decimal("12.50"), parse_decimal(3), parse_decimal("1e3"), parse_decimal(True)
    (Decimal('12.50'), Decimal('3'), None, None)
    """
    if isinstance(value, bool):
        return None
    if isinstance(value, Decimal):  # already parsed (a checked argument passed on)
        return value if value.is_finite() else None
    if isinstance(value, int):
        return Decimal(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            return None
        value = repr(value)  # the shortest text that reads back as this float
        if "e" in value or "E" in value:
            return None
    if not isinstance(value, str) or not _TEXT.match(value) or len(value) > 60:
        return None
    try:
        return Decimal(value)
    except InvalidOperation:  # pragma: no cover - the pattern admits only numbers
        return None


def round_div(
    num: Decimal | int,
    den: Decimal | int,
    ndigits: int,
    mode: str,
    error: Any = None,
    where: str = "",
) -> Decimal:
    """``num / den`` rounded to ``ndigits`` places, computed exactly (no intermediate
    rounding): half-even or half-up (ties away from zero). When ``den`` is 0,
    ``error("division by zero in <where>", kind="precondition")`` is raised (the
    caller's ToolError class), or ZeroDivisionError without one.

    >>> round_div(Decimal("10.00"), 3, 2, "half_even"), round_div(5, 2, 0, "half_even")
    (Decimal('3.33'), Decimal('2'))
    >>> round_div(Decimal("-0.125"), 1, 2, "half_up")
    Decimal('-0.13')
    """
    if den == 0 and error is not None:
        raise error(f"division by zero in {where}", kind="precondition")
    q = Fraction(Decimal(num)) / Fraction(Decimal(den)) * 10**ndigits
    if mode == "half_up":
        mag = abs(q)
        n = int(mag + Fraction(1, 2))  # floor of |q| + 1/2: ties go away from zero
        k = n if q >= 0 else -n
    else:
        k = round(q)  # Fraction rounds half to even
    return Decimal(k).scaleb(-ndigits) if ndigits else Decimal(k)


def to_result(value: Any, shape: Any) -> Any:
    """A computed value in its JSON form: ``shape`` says where decimals are (an int is a
    decimal's scale, ``["list", s]`` a list of ``s``, ``["map", s]`` an object whose
    values are ``s``, ``{"key": s}`` a record's fields, None a value with no computed
    decimal in it).

    >>> to_result({"1": Decimal("2.5"), "7": Decimal("0")}, ["map", 2])
    {'1': '2.50', '7': '0.00'}
    """
    if shape is None:
        return value
    if isinstance(shape, int):
        return None if value is None else dec_text(value, shape)
    if isinstance(shape, list):
        if shape[0] == "map":
            return {k: to_result(v, shape[1]) for k, v in value.items()}
        return [to_result(v, shape[1]) for v in value]
    return {k: to_result(v, shape.get(k)) for k, v in value.items()}


def argument_problem(
    tool: str, name: str, value: object, scale: int, minimum: Any = None, maximum: Any = None
) -> str | None:
    """The message of a decimal argument that is not acceptable (its form, places or
    bounds), in the words every other argument error uses; None when it is fine."""
    why = decimal_problem(value, scale)
    if why is not None:
        return f"{tool}: argument {name} must be {why}, got {value!r}"
    d = parse_decimal(value)
    if minimum is not None and d is not None and d < minimum:
        return f"{tool}: argument {name} must be at least {minimum}, got {d}"
    if maximum is not None and d is not None and d > maximum:
        return f"{tool}: argument {name} must be at most {maximum}, got {d}"
    return None


def check_decimal(
    tool: str,
    name: str,
    value: object,
    scale: int,
    minimum: Any,
    maximum: Any,
    error: Any,
) -> Decimal:
    """A decimal argument as a Decimal; ``error(message, tool=..., kind="bad_args")``
    (the caller's ToolError class) is raised when it is not acceptable."""
    msg = argument_problem(tool, name, value, scale, minimum, maximum)
    d = parse_decimal(value)
    if msg is not None or d is None:
        raise error(msg, tool=tool, kind="bad_args")
    return d
