"""The planner finds the reads that reveal a value from the rows that show it.

For a read that lists rows by equalities on their fields (a :class:`Lookup`), the
planner computes the bindings that can reveal a value instead of trying every binding
(tasks/plan.py, ``_revealing_bindings``). It must yield exactly what trying them in
order does (the first 400 tuples, or every value of a lookup's one parameter): the same
(tool, args, result) triples, in the same order, whatever the agent already knows, on
fresh states and after writes, at the tables' declared sizes and larger.
"""

from __future__ import annotations

import random
from typing import Any
from unittest import mock

import pytest

from graphgen.domain import Domain, ToolDef
from graphgen.domains import load_builtin
from graphgen.interp import call_tool
from graphgen.knowledge import Sort, field_sorts, key_sort, produced_sorts
from graphgen.state import State
from graphgen.tasks.expand import GenOptions
from graphgen.tasks.plan import MAX_BINDINGS, Planner, lookup_shape
from graphgen.tasks.taskset import generate


def _facts_to_find(domain: Domain, st: State, rng: random.Random) -> list[tuple[Sort, Any]]:
    """Values of every sort some read produces, drawn from the state (and one absent)."""
    out: list[tuple[Sort, Any]] = []
    sorts = {s for t in domain.read_tools for s in produced_sorts(domain, t)}
    for ent, table in st.tables.items():
        keys = sorted(table)
        if not keys:
            continue
        for k in rng.sample(keys, min(3, len(keys))):
            if key_sort(ent) in sorts:
                out.append((key_sort(ent), k))
            for f, v in table[k].items():
                for s in field_sorts(domain, ent, f):
                    if s in sorts and not isinstance(v, list):
                        out.append((s, v))
        out.append((key_sort(ent), "no-such-id"))
    return out


def _found(planner: Planner, s: Sort, v: Any) -> list[tuple[str, dict[str, Any], Any]]:
    producers = list(planner.producers.get(s, []))
    return [
        (t.name, args, res) for t, args, res in planner._revealing(producers, s, v, frozenset())
    ]


_bindings = Planner._bindings


def _tried_one_by_one(self: Planner, tool: ToolDef, limit: int | None = MAX_BINDINGS) -> Any:
    """The rule the lookups keep, by trying bindings in order: every value of a lookup's
    one parameter, else the first MAX_BINDINGS tuples."""
    one = len(tool.params) == 1 and lookup_shape(self.domain, tool) is not None
    return _bindings(self, tool, None if one else limit)


@pytest.mark.parametrize("name", ["mock", "retail", "airline"])
@pytest.mark.parametrize("scale", [1, 15])
def test_looked_up_bindings_are_the_ones_trying_every_binding_finds(name: str, scale: int) -> None:
    domain = load_builtin(name)
    assert any(lookup_shape(domain, t) is not None for t in domain.read_tools)
    sizes = {e: d.size * scale for e, d in domain.entities.items()}
    rng = random.Random(f"{name}{scale}")
    compared = looked_up = written = 0
    tasks = generate(domain, 6, 3, GenOptions(sizes=sizes, kinds={"action": 1.0})).tasks
    for task in tasks[:3]:
        st = State.from_dict(task.initial_state)
        for i in range(len(task.chain) + 1):
            planner = Planner(domain, st, rng)
            # the agent knows a few values already: they come first in every pool
            for s, v in rng.sample(_facts_to_find(domain, st, rng), 6):
                planner.know.add(s, v, -1)
            for s, v in _facts_to_find(domain, st, rng):
                fast = _found(planner, s, v)
                with (
                    mock.patch.object(Planner, "_revealing_bindings", lambda *a: None),
                    mock.patch.object(Planner, "_bindings", _tried_one_by_one),
                ):
                    slow = _found(planner, s, v)
                assert fast == slow, (s, v)
                compared += 1
                looked_up += bool(fast)
            if i < len(task.chain):  # the chain's next call, on the changed state after
                c = task.chain[i]
                written += domain.tools[c.tool].is_write
                call_tool(domain, st, c.tool, dict(c.args))
    assert compared > 50 and looked_up > 5 and written > 0
