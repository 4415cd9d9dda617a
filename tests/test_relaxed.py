"""The relaxed problem behind the explicit search's forward bound
(graphgen.verify.relaxed): what a relaxed call does, and that its search answers exactly
"is there a relaxed plan of this many calls" on random small problems, against a plain
breadth-first count; past its effort budget it may only say yes."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from graphgen.knowledge import Sort
from graphgen.verify import relaxed as relaxed_module
from graphgen.verify.relaxed import Need, Relaxed

USER, ORDER, ITEM = Sort("key", "User"), Sort("key", "Order"), Sort("key", "Item")


def _shop() -> Relaxed:
    """A user found by email, their orders listed, an order read (showing its items),
    a catalogue search (showing items), and a write taking an order and an item."""
    return Relaxed(
        ["find_user", "list_orders", "read_order", "search", "exchange"],
        takes={
            "find_user": set(),
            "list_orders": {USER},
            "read_order": {ORDER},
            "search": set(),
            "exchange": {ORDER, ITEM},
        },
        shows={
            "find_user": {USER},
            "list_orders": {ORDER},
            "read_order": {ITEM},
            "search": {ITEM},
            "exchange": set(),
        },
    )


def test_a_call_meets_a_need_only_with_nothing_left_to_do_first() -> None:
    """The exchange needs the order's description shown first (a read): a call of it
    before that meets nothing, and the read it needed no longer waits to be made."""
    r = _shop()
    need: Need = (frozenset({"exchange"}), (("exchange", (frozenset({"read_order"}),)),))
    known = frozenset({ORDER, ITEM})
    same, left = r.after(known, (need,), "exchange")
    assert (same, left) == (known, (need,))
    read, left = r.after(known, (need,), "read_order")
    assert left == ((frozenset({"exchange"}), ()),)
    assert r.after(read, left, "exchange") == (read, ())
    # a call of a tool that shows a sort adds it, whatever it meets
    assert r.after(frozenset(), (), "find_user") == (frozenset({USER}), ())


def test_the_search_finds_what_counting_alone_misses() -> None:
    """Two writes to make, each after a lookup of its own (the user's orders, an item
    from the catalogue): the quick bound's longest chain is 2 calls and its disjoint
    tool sets 2, but no plan has fewer than 4."""
    r = _shop()
    needs: tuple[Need, ...] = ((frozenset({"list_orders"}), ()), (frozenset({"exchange"}), ()))
    known = frozenset({ORDER})
    assert r.quick(known, needs) == 2
    assert not r.fits(known, needs, 3)
    assert r.fits(known, needs, 4)


def _optimum(r: Relaxed, known: frozenset[Sort], todo: tuple[Need, ...], most: int) -> int | None:
    """The least number of relaxed calls meeting ``todo``, breadth first over every
    call sequence (no pruning), or None past ``most``."""
    layer = {(known, todo)}
    for depth in range(most + 1):
        if any(not t for _, t in layer):
            return depth
        layer = {r.after(k, t, tool) for k, t in layer for tool in r.tools if r.takes[tool] <= k}
    return None


@st.composite
def _problems(draw: st.DrawFn) -> tuple[Relaxed, frozenset[Sort], tuple[Need, ...]]:
    n_tools = draw(st.integers(2, 5))
    sorts = [Sort("key", f"S{i}") for i in range(4)]
    tools = [f"t{i}" for i in range(n_tools)]
    some = st.sets(st.sampled_from(sorts), max_size=2)
    takes = {t: draw(some) for t in tools}
    shows = {t: draw(some) for t in tools}
    tool_sets = st.frozensets(st.sampled_from(tools), min_size=1, max_size=3)
    todo: list[Need] = []
    for _ in range(draw(st.integers(1, 3))):
        meet = draw(tool_sets)
        first = []
        for w in sorted(meet):
            ms = draw(st.lists(tool_sets, max_size=2))
            if ms:
                first.append((w, tuple(ms)))
        todo.append((meet, tuple(first)))
    known = frozenset(draw(st.sets(st.sampled_from(sorts), max_size=1)))
    return Relaxed(tools, takes, shows), known, tuple(todo)


@settings(max_examples=300, deadline=None)
@given(_problems())
def test_the_search_answers_exactly_on_small_problems(
    problem: tuple[Relaxed, frozenset[Sort], tuple[Need, ...]],
) -> None:
    """On random problems of a few tools, sorts and needs: the quick bound is never
    above the optimum, and the search says a plan of ``j`` calls exists exactly when
    ``j`` is at least the optimum (none when no sequence of 8 calls meets the needs)."""
    r, known, todo = problem
    best = _optimum(r, known, todo, 8)
    if best is not None:
        assert r.quick(known, todo) <= best
    for j in range(9):
        assert r.fits(known, todo, j) == (best is not None and j >= best), (j, best)


def test_past_its_effort_the_search_drops_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    """With no effort to spend, a length the quick bound allows is answered yes, even
    where the search would prove it too short; one the quick bound rules out is still
    no."""
    monkeypatch.setattr(relaxed_module, "EFFORT", 0)
    r = _shop()
    needs: tuple[Need, ...] = ((frozenset({"list_orders"}), ()), (frozenset({"exchange"}), ()))
    known = frozenset({ORDER})
    assert r.fits(known, needs, 3)
    assert not r.fits(known, needs, 1)
