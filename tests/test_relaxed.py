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


def test_moves_on_different_rows_take_calls_of_their_own() -> None:
    """Reading two orders is two calls, though one tool makes both: sets of moves on
    different rows count apart; a row-free move of the tool counts with any of its
    rows; a relaxed call of the tool (on no row in particular) does every one of its
    moves."""
    r = _shop()
    known = frozenset({ORDER, ITEM})

    def needing(*sets: frozenset[str]) -> tuple[Need, ...]:
        return tuple((frozenset({"exchange"}), (("exchange", (m,)),)) for m in sets)

    two_rows = needing(frozenset({"read_order@O1"}), frozenset({"read_order@O2"}))
    assert r.quick(known, two_rows) == 3  # two reads, then the exchange
    assert not r.fits(known, two_rows, 2)
    one_row = needing(frozenset({"read_order@O1"}), frozenset({"read_order@O1", "search"}))
    assert r.quick(known, one_row) == 2
    any_row = needing(frozenset({"read_order@O1"}), frozenset({"read_order"}))
    assert r.quick(known, any_row) == 2
    assert r.after(known, two_rows, "read_order")[1] == ((frozenset({"exchange"}), ()),) * 2
    assert r.tools_of(frozenset({"read_order@O1", "search"})) == {"read_order", "search"}


def _hit(m: frozenset[str], tool: str, row: str | None) -> bool:
    """Does a call of ``tool`` on ``row`` (None: a row no move names; ``"*"``: every
    row at once, the relaxed call of a tool) make a move of ``m``?"""
    if row == "*":
        return any(x.partition("@")[0] == tool for x in m)
    return tool in m or (row is not None and f"{tool}@{row}" in m)


def _call_on_row(
    r: Relaxed, k: frozenset[Sort], todo: tuple[Need, ...], tool: str, row: str | None
) -> tuple[frozenset[Sort], tuple[Need, ...]]:
    """What is known and left after a call of ``tool`` on ``row``, written out from the
    rules (every call succeeds and shows its tool's sorts)."""
    left: list[Need] = []
    for meet, first in todo:
        if _hit(meet, tool, row) and not any(w == tool and ms for w, ms in first):
            continue
        rest = []
        for w, ms in first:
            open_ = tuple(m for m in ms if not _hit(m, tool, row))
            if open_:
                rest.append((w, open_))
        left.append((meet, tuple(rest)))
    return k | r.shows[tool], tuple(left)


def _move_optimum(
    r: Relaxed, known: frozenset[Sort], todo: tuple[Need, ...], rows: list[str], most: int
) -> int | None:
    """The least number of calls meeting ``todo`` when each call is a tool on one row
    (of ``rows``, or another): it does the moves of its tool on that row and the tool's
    row-free ones. Breadth first, or None past ``most``."""
    layer = {(known, todo)}
    for depth in range(most + 1):
        if any(not t for _, t in layer):
            return depth
        layer = {
            _call_on_row(r, k, t, tool, row)
            for k, t in layer
            for tool in r.tools
            if r.takes[tool] <= k
            for row in [None, *rows]
        }
    return None


@st.composite
def _row_problems(
    draw: st.DrawFn,
) -> tuple[Relaxed, frozenset[Sort], tuple[Need, ...]]:
    """Like :func:`_problems`, with things to do first that only a call on one row
    (of two) can do."""
    r, known, todo = draw(_problems())
    moves = [*r.tools, *(f"{t}@{row}" for t in r.tools for row in ("r0", "r1"))]
    move_sets = st.frozensets(st.sampled_from(moves), min_size=1, max_size=3)
    tagged: list[Need] = []
    for meet, first in todo:
        # a need met by a call on one row only: the tool's move there, or on any row
        on_rows = frozenset(draw(st.sampled_from([t, f"{t}@r0", f"{t}@r1"])) for t in sorted(meet))
        tagged.append((on_rows, tuple((w, tuple(draw(move_sets) for _ in ms)) for w, ms in first)))
    return r, known, tuple(tagged)


@settings(max_examples=200, deadline=None)
@given(_row_problems())
def test_moves_on_rows_never_bound_above_the_calls_they_take(
    problem: tuple[Relaxed, frozenset[Sort], tuple[Need, ...]],
) -> None:
    """With moves on rows (in what a need waits for and in the moves that meet it): the
    quick bound is never above the least number of calls on rows that meet the needs,
    and the search never says no plan of that many exists; a move leaves the needs the
    rules leave (a tool's move: its calls on every row at once); after a call on one row,
    relaxed as that move, it never says no plan exists of as many calls as finish from
    what the real call left."""
    r, known, todo = problem
    best = _move_optimum(r, known, todo, ["r0", "r1"], 7)
    if best is not None:
        assert r.quick(known, todo) <= best
        for j in range(best, 9):
            assert r.fits(known, todo, j), (j, best)
    # after a call on one row, relaxed as that move: never more left than the call left
    for tool in r.tools:
        if not r.takes[tool] <= known:
            continue
        # what is left after a move is what the rules leave, need by need
        assert r.after(known, todo, tool) == _call_on_row(r, known, todo, tool, "*")
        for row in ("r0", "r1"):
            move = f"{tool}@{row}"
            assert r.after(known, todo, move) == _call_on_row(r, known, todo, tool, row)
            then = _move_optimum(r, *_call_on_row(r, known, todo, tool, row), ["r0", "r1"], 6)
            if then is not None:
                assert r.fits(*r.after(known, todo, f"{tool}@{row}"), then), (tool, row, then)
