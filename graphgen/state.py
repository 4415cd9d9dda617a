"""The concrete state a domain's tools act on.

A state is a set of tables (entity → key → row) plus, per table, the counter that the
next ``create`` turns into an id. Rows hold field values only; the key lives in the
table's mapping. Lists inside rows are never mutated in place (effects replace them), so
:meth:`State.copy` only needs to copy the row dicts.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel, ConfigDict

from graphgen.domain import Domain
from graphgen.grading import state_diff

Row = dict[str, Any]
Table = dict[str, Row]


class StateModel(BaseModel):
    """The JSON boundary form of a state (what files and tasks hold)."""

    model_config = ConfigDict(extra="forbid")
    tables: dict[str, dict[str, dict[str, Any]]]
    counters: dict[str, int]


class State:
    """A mutable concrete state. Cheap to copy; compares by value."""

    __slots__ = ("counters", "tables")

    def __init__(self, tables: dict[str, Table], counters: dict[str, int]) -> None:
        self.tables = tables
        self.counters = counters

    @classmethod
    def empty(cls, domain: Domain) -> State:
        return cls({e: {} for e in domain.entities}, {e: 1 for e in domain.entities})

    def copy(self) -> State:
        return State(
            {e: {k: dict(r) for k, r in t.items()} for e, t in self.tables.items()},
            dict(self.counters),
        )

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, State)
            and self.tables == other.tables
            and self.counters == other.counters
        )

    __hash__ = None  # type: ignore[assignment]

    def to_dict(self) -> dict[str, Any]:
        return {
            "tables": {
                e: {k: dict(t[k]) for k in sorted(t)} for e, t in sorted(self.tables.items())
            },
            "counters": dict(sorted(self.counters.items())),
        }

    def to_json(self, indent: int | None = 2) -> str:
        """Canonical JSON: same state ⇒ same bytes."""
        return json.dumps(self.to_dict(), indent=indent, sort_keys=True, ensure_ascii=False)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> State:
        m = StateModel.model_validate(data)
        return cls(
            {e: {k: dict(r) for k, r in sorted(t.items())} for e, t in m.tables.items()},
            dict(m.counters),
        )

    def __repr__(self) -> str:
        sizes = ", ".join(f"{e}={len(t)}" for e, t in self.tables.items())
        return f"State({sizes})"


def diff(before: State, after: State) -> list[tuple[str, str, str, Any, Any]]:
    """Field-level differences as (entity, key, field, old, new), sorted.

    A created row shows as field '*' with old ``None``; a deleted row as field '*' with
    new ``None``. The grader's own diff does the work, so the two cannot disagree.
    """
    return state_diff({"tables": before.tables}, {"tables": after.tables})
