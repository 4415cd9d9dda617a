"""The value types of the expression IR.

Types are small frozen dataclasses compared structurally. Ids of entities are strings
at run time but typed ``RefT(entity)`` so that an order id can never be passed where a
user id is wanted.
"""

from __future__ import annotations

from dataclasses import dataclass


class Ty:
    """Base of all IR types."""

    __slots__ = ()

    def show(self) -> str:
        raise NotImplementedError


@dataclass(frozen=True, slots=True)
class PrimT(Ty):
    name: str  # "int" | "str" | "bool" | "date"

    def show(self) -> str:
        return self.name


INT = PrimT("int")
STR = PrimT("str")
BOOL = PrimT("bool")
DATE = PrimT("date")
PRIMS: dict[str, PrimT] = {"int": INT, "str": STR, "bool": BOOL, "date": DATE}


def free_type(name: str) -> Ty | None:
    """The type of the free sort ``name``: a primitive, or ``decimal``/``decimal(n)``
    (the names :meth:`DecT.show` gives); None for any other name."""
    if name in PRIMS:
        return PRIMS[name]
    if name == "decimal":
        return DecT(2)
    if name.startswith("decimal(") and name.endswith(")") and name[8:-1].isdigit():
        return DecT(int(name[8:-1]))
    return None


@dataclass(frozen=True, slots=True)
class DecT(Ty):
    """A decimal number with ``scale`` places (``decimal`` alone is scale 2). A value
    of an expression has the scale its computation gives (a product adds the scales);
    a field or parameter has its declared one."""

    scale: int

    def show(self) -> str:
        return "decimal" if self.scale == 2 else f"decimal({self.scale})"


@dataclass(frozen=True, slots=True)
class EnumT(Ty):
    name: str
    values: tuple[str, ...]

    def show(self) -> str:
        return f"enum {self.name}{{{', '.join(self.values)}}}"


@dataclass(frozen=True, slots=True)
class RefT(Ty):
    """The key of an entity: an id string that names one row of ``entity``."""

    entity: str

    def show(self) -> str:
        return f"{self.entity} id"


@dataclass(frozen=True, slots=True)
class ListT(Ty):
    elem: Ty

    def show(self) -> str:
        return f"list[{self.elem.show()}]"


@dataclass(frozen=True, slots=True)
class RowT(Ty):
    """A whole row of an entity, returned to the agent as a JSON object."""

    entity: str

    def show(self) -> str:
        return f"{self.entity} record"


@dataclass(frozen=True, slots=True)
class RecordT(Ty):
    """A dict literal with string keys, used in tool return values."""

    fields: tuple[tuple[str, Ty], ...]

    def show(self) -> str:
        return "{" + ", ".join(f"{k}: {t.show()}" for k, t in self.fields) + "}"


@dataclass(frozen=True, slots=True)
class MapT(Ty):
    """A dict comprehension's value: ids of ``key``'s entity mapped to ``value``s (tool
    return values only; a JSON object keyed by the ids as strings)."""

    key: Ty
    value: Ty

    def show(self) -> str:
        return f"dict[{self.key.show()}, {self.value.show()}]"


def is_scalar(t: Ty) -> bool:
    """Scalars can be stored in fields, compared and passed as parameters."""
    return isinstance(t, PrimT | EnumT | RefT | DecT) or (
        isinstance(t, OptT) and is_scalar(t.inner)
    )


def is_number(t: Ty) -> bool:
    """int or decimal: the types arithmetic and ordering mix freely."""
    return t == INT or isinstance(t, DecT)


def scale_of(t: Ty) -> int:
    """Places of a number type: a decimal's scale (an optional one's too), 0 for int."""
    t = strip_opt(t)
    return t.scale if isinstance(t, DecT) else 0


def is_ordered(t: Ty) -> bool:
    """Types that support ``< <= > >=`` (dates compare as ISO strings do)."""
    return t in (INT, DATE, STR) or isinstance(t, DecT)


@dataclass(frozen=True, slots=True)
class OptT(Ty):
    """``T | None``: a value of ``inner`` or ``None`` (absent). ``inner`` is a scalar that
    is not bool and not itself optional; nothing else changes at run time (a present
    value is the plain value), so narrowing (``x is not None and x > 3``) only retypes."""

    inner: Ty

    def show(self) -> str:
        return f"{self.inner.show()} | None"


@dataclass(frozen=True, slots=True)
class NoneT(Ty):
    """The type of the literal ``None`` before context gives it an ``OptT``."""

    def show(self) -> str:
        return "None"


NONE = NoneT()


def optional(t: Ty) -> OptT:
    """``t | None`` (``t`` itself when already optional)."""
    return t if isinstance(t, OptT) else OptT(t)


def strip_opt(t: Ty) -> Ty:
    """The type of a present value: ``inner`` of an ``OptT``, else ``t``."""
    return t.inner if isinstance(t, OptT) else t


def is_optable(t: Ty) -> bool:
    """Types that may be made optional: scalars other than bool (a bool's z3 sort has
    no third value to stand for None)."""
    return is_scalar(t) and t != BOOL and not isinstance(t, OptT)
