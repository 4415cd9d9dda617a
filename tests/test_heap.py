"""The generation loop keeps its states out of full garbage collections while it runs
(graphgen/heap.py), and leaves the collector as it found it; table indexes group keys
by value as a plain scan does (graphgen/tablebase.py: ``grouped``)."""

from __future__ import annotations

import gc
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from graphgen.domains import load_builtin
from graphgen.heap import FrozenHeap
from graphgen.tablebase import grouped
from graphgen.tasks import taskset
from graphgen.tasks.expand import GenOptions


def _plain(pairs: list[tuple[Any, Any]]) -> dict[Any, tuple[Any, ...]]:
    out: dict[Any, list[Any]] = {}
    for v, k in pairs:
        out.setdefault(v, []).append(k)
    return {v: tuple(ks) for v, ks in out.items()}


@given(st.lists(st.tuples(st.sampled_from([None, 0, 1, "a", "b", 2.5]), st.integers())))
def test_grouped_is_a_plain_grouping_in_order(pairs: list[tuple[Any, Any]]) -> None:
    got = grouped(pairs)
    assert got == _plain(pairs)
    assert list(got) == list(_plain(pairs))  # values in order of first appearance


def test_grouped_refuses_unhashable_values() -> None:
    try:
        grouped([([1], "k")])
    except TypeError:
        return
    raise AssertionError("a list value must raise TypeError")


def test_generation_freezes_its_states_only_while_it_runs() -> None:
    seen: list[int] = []
    made = taskset.generate_state

    def watched(*args: Any, **kwargs: Any) -> Any:
        seen.append(gc.get_freeze_count())
        return made(*args, **kwargs)

    domain = load_builtin("mock")
    taskset.generate_state = watched  # type: ignore[assignment]
    try:
        res = taskset.generate(domain, 6, 0, GenOptions(tasks_per_state=2))
    finally:
        taskset.generate_state = made  # type: ignore[assignment]
    assert len(res.tasks) == 6 and len(seen) >= 3
    # the first state is made before anything is frozen, the later ones after the
    # earlier states were frozen; nothing is left frozen at the end
    assert seen[0] == 0 and all(n > 0 for n in seen[1:])
    assert gc.get_freeze_count() == 0


def test_a_freeze_made_elsewhere_is_left_alone() -> None:
    gc.freeze()
    try:
        before = gc.get_freeze_count()
        with FrozenHeap() as heap:
            heap.settle()
            assert not heap.active
        # not more (a frozen object freed by reference counting may make it less)
        assert gc.get_freeze_count() <= before
    finally:
        gc.unfreeze()
    assert gc.get_freeze_count() == 0


def test_nothing_is_frozen_when_the_collector_is_off() -> None:
    gc.disable()
    try:
        with FrozenHeap() as heap:
            heap.settle()
            assert gc.get_freeze_count() == 0
    finally:
        gc.enable()
