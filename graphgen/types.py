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


def is_scalar(t: Ty) -> bool:
    """Scalars can be stored in fields, compared and passed as parameters."""
    return isinstance(t, PrimT | EnumT | RefT)


def is_ordered(t: Ty) -> bool:
    """Types that support ``< <= > >=`` (dates compare as ISO strings do)."""
    return t in (INT, DATE, STR)
