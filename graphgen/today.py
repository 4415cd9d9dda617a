"""A state's "today": the one date ``today()`` reads and task instructions speak of.

A state carries its today (``State.today``, the ``today`` field of the state JSON) when
its domain reads ``today()``: the state generator draws it from the seed, an imported
state may give it. A state without one (every state of a domain that never reads
``today()``, so their bytes stay as they were) has :data:`DEFAULT_TODAY`. Every backend
reads the same value: the interpreter and the z3 encoding from the state, generated code
from ``Db.today`` — a constant of the state, never written by a call.
"""

from __future__ import annotations

import datetime as _dt
import random
from typing import TYPE_CHECKING

from graphgen import ir
from graphgen.domain import per_domain

if TYPE_CHECKING:
    from graphgen.domain import Domain, ToolDef
    from graphgen.state import State

# The fixed year generated dates fall in (graphgen.vocabulary): a today drawn from it
# sits among the dates of the state.
DEFAULT_TODAY = "2026-01-01"
TODAY_RANGE = ("2026-01-01", "2026-12-31")


def check_today(value: object) -> str:
    """``value`` if it is a ``YYYY-MM-DD`` calendar date; ValueError otherwise."""
    if isinstance(value, str):
        try:
            if _dt.date.fromisoformat(value).isoformat() == value:
                return value
        except ValueError:
            pass
    raise ValueError(f"today must be a date YYYY-MM-DD, got {value!r}")


def today_of_state(st: State) -> str:
    """The date ``today()`` reads on ``st``."""
    return st.today if st.today is not None else DEFAULT_TODAY


def tool_uses_today(tool: ToolDef) -> bool:
    """Whether ``tool`` reads ``today()`` (functions and ``let`` names are inlined, so
    their uses show here)."""
    return any(isinstance(n, ir.Today) for e in tool.expressions() for n in ir.walk(e))


@per_domain
def uses_today(domain: Domain) -> bool:
    """Whether some tool of ``domain`` reads ``today()``."""
    return any(tool_uses_today(t) for t in domain.tools.values())


def draw_today(rng: random.Random, span: tuple[str, str] | None = None) -> str:
    """A today drawn uniformly from ``span`` (the domain's ``today: {from, to}``, else
    :data:`TODAY_RANGE`) with ``rng`` (seeded: the same seed gives the same date)."""
    lo, hi = (_dt.date.fromisoformat(d).toordinal() for d in span or TODAY_RANGE)
    return _dt.date.fromordinal(rng.randint(lo, hi)).isoformat()
