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
from graphgen.keys import key_from_json
from graphgen.today import check_today

Row = dict[str, Any]
Table = dict[Any, Row]  # id (str, or int for ``type: int`` keys) -> row


class StateModel(BaseModel):
    """The JSON boundary form of a state (what files and tasks hold)."""

    model_config = ConfigDict(extra="forbid")
    tables: dict[str, dict[str | int, dict[str, Any]]]  # int ids in memory, "3" in JSON
    counters: dict[str, int]
    # The tables whose ids are ints (``key: {type: int}``). JSON object keys are strings,
    # so int id 3 is written "3"; this list says which tables to read back as ints. It
    # is written only when some table has int ids, so other states keep their bytes.
    int_keys: list[str] = []
    # The state's today (``today()``; graphgen.today), written only when set, so the
    # states of domains that never read it keep their bytes.
    today: str | None = None


class State:
    """A mutable concrete state. Cheap to copy; compares by value."""

    __slots__ = ("counters", "tables", "today")

    def __init__(
        self, tables: dict[str, Table], counters: dict[str, int], today: str | None = None
    ) -> None:
        self.tables = tables
        self.counters = counters
        self.today = today  # None: graphgen.today.DEFAULT_TODAY

    @classmethod
    def empty(cls, domain: Domain) -> State:
        return cls({e: {} for e in domain.entities}, {e: 1 for e in domain.entities})

    def copy(self) -> State:
        return State(
            {e: {k: dict(r) for k, r in t.items()} for e, t in self.tables.items()},
            dict(self.counters),
            self.today,
        )

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, State)
            and self.tables == other.tables
            and self.counters == other.counters
            and self.today == other.today
        )

    __hash__ = None  # type: ignore[assignment]

    def to_dict(self) -> dict[str, Any]:
        """The JSON-ready form (:class:`StateModel`). Row ids are the tables' keys: int
        ids stay ints here and become strings only in JSON text, listed in
        ``int_keys`` so :meth:`from_dict` reads them back as ints."""
        out: dict[str, Any] = {
            "tables": {
                e: {k: dict(t[k]) for k in sorted(t)} for e, t in sorted(self.tables.items())
            },
            "counters": dict(sorted(self.counters.items())),
        }
        ints = sorted(e for e, t in self.tables.items() if any(isinstance(k, int) for k in t))
        if ints:
            out["int_keys"] = ints
        if self.today is not None:
            out["today"] = self.today
        return out

    def to_json(self, indent: int | None = 2) -> str:
        """Canonical JSON: same state ⇒ same bytes."""
        return json.dumps(self.to_dict(), indent=indent, sort_keys=True, ensure_ascii=False)

    @classmethod
    def from_dict(cls, data: dict[str, Any], domain: Domain | None = None) -> State:
        """A state from its JSON form. Ids of the tables listed in ``int_keys`` (or, given
        ``domain``, of its ``type: int`` keys) are read as ints: ``"3"`` is id 3.

        Raises ValueError (pydantic's ValidationError) on a malformed state, including
        an int-keyed table with a key that is not an integer's canonical text.
        """
        m = StateModel.model_validate(data)
        ints = set(m.int_keys) if domain is None else set(domain.int_keys)
        tables: dict[str, Table] = {}
        for e, t in m.tables.items():
            if e in ints:
                try:
                    rows = {key_from_json(True, str(k)): dict(r) for k, r in t.items()}
                except ValueError as exc:
                    raise ValueError(f"table {e}: {exc}") from None
            else:
                rows = {k: dict(r) for k, r in t.items()}
            tables[e] = dict(sorted(rows.items()))  # type: ignore[type-var]
        today = None if m.today is None else check_today(m.today)
        return cls(tables, dict(m.counters), today)

    def __repr__(self) -> str:
        sizes = ", ".join(f"{e}={len(t)}" for e, t in self.tables.items())
        return f"State({sizes})"


def diff(before: State, after: State) -> list[tuple[str, str, str, Any, Any]]:
    """Field-level differences as (entity, key, field, old, new), sorted.

    A created row shows as field '*' with old ``None``; a deleted row as field '*' with
    new ``None``. The grader's own diff does the work, so the two cannot disagree.
    """
    return state_diff({"tables": before.tables}, {"tables": after.tables})
