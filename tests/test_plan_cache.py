"""The planner's memoised reads stay true across writes.

After a write the planner keeps the cached reads whose whole-call read set
(:func:`graphgen.footprint.cells_read`) misses every cell the write can change
(:func:`graphgen.footprint.cells_written`). Over the first write of generated action tasks of
every built-in domain, each kept read must equal the same read executed
afresh on the new state, and each read the write did change must have been dropped.
"""

from __future__ import annotations

import itertools
import random
from typing import Any

import pytest

from graphgen.domain import Domain, ToolDef
from graphgen.domains import load_builtin
from graphgen.errors import ToolError
from graphgen.interp import call_tool
from graphgen.knowledge import facts_of_result
from graphgen.state import State
from graphgen.tasks.expand import GenOptions
from graphgen.tasks.plan import Planner
from graphgen.tasks.taskset import generate


def _outcome(domain: Domain, st: Any, tool: ToolDef, args: dict[str, Any]) -> Any:
    try:
        return ("ok", call_tool(domain, st.copy(), tool.name, args))
    except ToolError as exc:
        return ("err", str(exc))


@pytest.mark.parametrize("name", ["mock", "retail", "airline"])
def test_reads_kept_after_a_write_are_still_true(name: str) -> None:
    domain = load_builtin(name)
    kept = dropped_changed = 0
    tasks = [t for t in generate(domain, 8, 1, GenOptions()).tasks if t.kind == "action"]
    for task in tasks[:4]:
        planner = Planner(domain, State.from_dict(task.initial_state), random.Random(0))
        asked: list[tuple[ToolDef, dict[str, Any]]] = []
        for tool in domain.read_tools:
            for args in itertools.islice(planner._bindings(tool), 6):
                planner.revealed(tool, args)
                asked.append((tool, args))
        before = {i: _outcome(domain, planner.state, t, a) for i, (t, a) in enumerate(asked)}
        # the task's first write, as the reference chain makes it
        call = next(c for c in task.chain if domain.tools[c.tool].is_write)
        result = call_tool(domain, planner.state, call.tool, dict(call.args))
        planner.record(call.tool, call.args, result)
        for i, (tool, args) in enumerate(asked):
            key = (tool.name, tuple(sorted(args.items())))
            now = _outcome(domain, planner.state, tool, args)
            if key in planner._cache:
                kept += 1
                got = planner._cache[key]
                was = ("ok", got.value) if got.ok else ("err", str(got.value))
                assert was == now, (tool.name, args)
                if got.ok:
                    facts = facts_of_result(domain, tool, got.value)
                    assert planner.revealed(tool, args) == frozenset(
                        (s, tuple(v) if isinstance(v, list) else v) for s, v in facts
                    )
            elif now != before[i]:
                dropped_changed += 1
    assert kept > 0  # reads survive writes
    if name != "mock":
        assert dropped_changed > 0  # and the writes did change some of the reads asked
