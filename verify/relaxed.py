"""The relaxed problem behind the explicit search's forward bound
(:meth:`~graphgen.verify.explicit.Space.useful`): how many calls, at least, are still
needed to meet what a node has left to do.

What is left is a list of *needs*. Each need names the moves that can meet it and, per
tool of those with something to do first (an id known, a value of a target's
description shown), the sets of moves each of which must have had a call before it. A
move is a tool (a call of it on any row) or a tool on one row, where only calls on that
row can do it (a write of that row; a read of it, or a search of the rows filtered on
it). A call making a move that meets a need with nothing left to do first meets it; a
call does the "first" part of every need whose set holds one of its moves.

Relaxed, every call succeeds and shows every sort its tool ever can, so what is known is
a set of sorts that only grows, and a tool can be called once its required arguments'
sorts are known. A chain of real calls that meets every need is, tool by tool, a relaxed
plan of the same length: the least length of a relaxed plan is a lower bound on the real
number, and a call that cannot begin a chain within it can be dropped. The plans
:meth:`Relaxed.fits` searches are of calls of tools, on no row in particular; the count
of sets that need calls of their own (:meth:`Relaxed.quick`) tells the rows apart (calls
on two rows are two calls), and :meth:`Relaxed.after` takes a call on one row, which
makes that row's moves only.

:meth:`Relaxed.quick` is a bound without search: the larger of a critical path and a
count of needs only disjoint sets of moves can meet. :meth:`Relaxed.fits` asks whether a
relaxed plan of a given length exists, depth first over relaxed plans pruned by the quick
bound, within an effort budget (a count of expansions, so the answer is the same on
every machine); past the budget it answers yes, which drops nothing. The pruning keeps
the answer a lower bound on real chains: after a relaxed plan's first calls (the tools
of a real chain's first calls), what is left is at most what the real calls left, and
the real chain's remaining calls meet it, so the quick bound there is at most their
number.

>>> from graphgen.knowledge import Sort
>>> user, order = Sort("key", "User"), Sort("key", "Order")
>>> r = Relaxed(
...     ["find_user", "list_orders", "cancel"],
...     takes={"find_user": frozenset(), "list_orders": {user}, "cancel": {order}},
...     shows={"find_user": {user}, "list_orders": {order}, "cancel": frozenset()},
... )
>>> need = (frozenset({"cancel"}), ())
>>> r.quick(frozenset(), [need]), r.fits(frozenset(), (need,), 3), r.fits(frozenset(), (need,), 2)
(3, True, False)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence, Set
from typing import Any

from graphgen.knowledge import Sort

#: A need's things to do first: per tool, the sets of moves each of which must have had
#: a call before it.
First = tuple[tuple[str, tuple[frozenset[str], ...]], ...]
#: A need: the moves that can meet it, and per tool of those with something to do first
#: the sets of moves each of which must have had a call before it (see the module
#: docstring).
#: A move is a tool's name, or ``tool@row`` when only a call of the tool on that row
#: can do it (see :func:`move_tool`).
Need = tuple[frozenset[str], First]


def move_tool(move: str) -> str:
    """The tool of a move: ``"get_order@O1"`` is a call of ``get_order`` on row ``O1``,
    ``"get_order"`` one on any row.

    >>> move_tool("get_order@O1"), move_tool("get_order")
    ('get_order', 'get_order')
    """
    return move.partition("@")[0]


_UNSEEN: Any = object()

#: Expansions one :meth:`Relaxed.fits` may make before it answers yes, unproven.
EFFORT = 400


class _OutOfEffort(Exception):
    pass


class Relaxed:
    """The relaxed problem over ``tools``: per tool the sorts its required arguments take
    and the sorts its output can make known. Bounds are kept per (known sorts, needs), so
    the nodes of one search that agree on those share them."""

    def __init__(
        self,
        tools: Sequence[str],
        takes: Mapping[str, Set[Sort]],
        shows: Mapping[str, Set[Sort]],
    ) -> None:
        self.tools = list(tools)
        self.takes = {t: frozenset(takes[t]) for t in self.tools}
        self.shows = {t: frozenset(shows[t]) for t in self.tools}
        # per known sorts: the least calls before each tool can be called, per tool set
        # (filled as asked) before one of its tools can, and each need's part of the
        # bound (:meth:`_need_bound`)
        self._ready: dict[
            frozenset[Sort],
            tuple[
                dict[str, int],
                dict[frozenset[str], int | None],
                dict[Need, tuple[int | None, tuple[frozenset[str], ...]]],
            ],
        ] = {}
        self._quick: dict[tuple[frozenset[Sort], tuple[Need, ...]], float] = {}
        self._named: dict[tuple[Need, ...], frozenset[str]] = {}
        # per (known, needs): the longest plan length proven too short (no relaxed plan
        # of that many calls meets them), and the shortest a plan was found for (or the
        # effort ran out at)
        self._short: dict[tuple[frozenset[Sort], tuple[Need, ...]], int] = {}
        self._enough: dict[tuple[frozenset[Sort], tuple[Need, ...]], int] = {}
        self._effort = 0
        # per (needs, tool): the needs a relaxed call of the tool leaves; the searches
        # and the forward bound ask the same few pairs at most of their nodes
        # (and per positions of needs it leaves in place: see :meth:`after`)
        self._left: dict[tuple[Any, ...], tuple[Need, ...] | None] = {}
        self._rank: dict[frozenset[str], tuple[int, int, tuple[str, ...]]] = {}
        # per set of moves: its tools, and (its tools on any row, its moves on one row)
        self._tools_of: dict[frozenset[str], frozenset[str]] = {}
        self._split: dict[frozenset[str], tuple[frozenset[str], frozenset[str]]] = {}
        # per need's things to do first: every move their sets hold (:meth:`_first_moves`)
        self._first_moves_of: dict[First, frozenset[str]] = {}

    def tools_of(self, moves: frozenset[str]) -> frozenset[str]:
        """The tools of a set of moves (:func:`move_tool`), kept per set."""
        got = self._tools_of.get(moves)
        if got is None:
            got = self._tools_of[moves] = frozenset(map(move_tool, moves))
        return got

    def after(
        self,
        known: frozenset[Sort],
        todo: Sequence[Need],
        move: str,
        keep: frozenset[int] = frozenset(),
    ) -> tuple[frozenset[Sort], tuple[Need, ...]]:
        """What is known and left after a relaxed call making ``move``: its tool's sorts
        shown, each need it meets gone (those it has nothing left to do first for), and
        it no longer to do first wherever a set holds a move it makes. A move that is a
        tool is a call on no row in particular, which makes every move of its tool; a
        move on a row (``tool@row``) makes that one and its tool's row-free move.
        ``keep``: the positions in ``todo`` of needs the call is known not to meet (a
        write putting another value in a field a need waits for); those stay, with what
        the call does first for them done."""
        todo = tuple(todo)
        key = (todo, move, keep) if keep else (todo, move)
        got = self._left.get(key, _UNSEEN)
        if got is _UNSEEN:
            got = self._left[key] = self._left_after(todo, move, keep)
        left = todo if got is None else got
        shows = self.shows[move_tool(move)]
        return (known if shows <= known else known | shows), left

    def makes(self, move: str, moves: frozenset[str]) -> bool:
        """Does a call making ``move`` make one of ``moves`` (see :meth:`after`)?"""
        if "@" not in move:
            return move in self.tools_of(moves)
        return move in moves or move_tool(move) in moves

    def _left_after(
        self, todo: tuple[Need, ...], move: str, keep: frozenset[int] = frozenset()
    ) -> tuple[Need, ...] | None:
        """The needs left after a relaxed call making ``move``, or None when it changes
        none (:meth:`after` then hands back the caller's own ``todo``, which callers test
        by identity). It meets no need at a position in ``keep``."""
        tool, makes = move_tool(move), self.makes
        left: list[Need] = []
        changed = False
        for at, need in enumerate(todo):
            meets, first = need
            if (
                at not in keep
                and makes(move, meets)
                and not any(w == tool and ms for w, ms in first)
            ):
                changed = True
                continue
            # a call makes a move of one of the sets exactly when it makes one of their
            # union
            if not makes(move, self._first_moves(first)):
                left.append(need)
                continue
            changed = True
            rest = []
            for w, ms in first:
                open_ = tuple(m for m in ms if not makes(move, m))
                if open_:
                    rest.append((w, open_))
            left.append((meets, tuple(rest)))
        return tuple(left) if changed else None

    def _first_moves(self, first: First) -> frozenset[str]:
        """Every move the sets of a need's things to do first hold (kept per ``first``:
        asked of every need a call leaves)."""
        got = self._first_moves_of.get(first)
        if got is None:
            got = self._first_moves_of[first] = frozenset().union(
                *(m for _, ms in first for m in ms)
            )
        return got

    def quick(self, known: frozenset[Sort], todo: Sequence[Need]) -> float:
        """A lower bound on the calls that meet every one of ``todo``, without search:
        infinite when some cannot be met.

        The larger of two. Each need is met by a call after what it needs first was
        done, each a call after its tool's sorts can be known: one more than the latest
        of those. And needs met, or things needed first done, only by tools of disjoint
        sets take distinct calls: the size of such a family (picked smallest first)."""
        if not todo:
            return 0
        key = (known, tuple(todo))
        got = self._quick.get(key)
        if got is None:
            got = self._quick[key] = self._bound(known, todo)
        return got

    def _bound(self, known: frozenset[Sort], todo: Sequence[Need]) -> float:
        got = self._ready.get(known)
        if got is None:
            got = self._ready[known] = (self._ready_after(known), {}, {})
        ready, soonest_of, per_need = got
        most = 0
        family: list[frozenset[str]] = []
        for need in todo:
            # a need's part depends on what is known alone, and most needs come again
            # in the next node's list, beside the one a call met
            one = per_need.get(need)
            if one is None:
                one = per_need[need] = self._need_bound(need, ready, soonest_of)
            soonest, sets = one
            if soonest is None:
                return float("inf")
            most = max(most, soonest + 1)
            family += sets
        # Sets no one call can serve two of take a call each. A call of a tool on one
        # row does that row's moves and the tool's row-free ones, never another row's.
        any_row: set[str] = set()  # tools taken by a row-free move
        on_rows: set[str] = set()  # moves taken on one row
        tools_taken: set[str] = set()
        apart = 0
        for moves in sorted(set(family), key=self._smallest_first):
            free, rowed = self._parts(moves)
            if free & tools_taken or rowed & on_rows:
                continue
            if rowed and not any_row.isdisjoint(map(move_tool, rowed)):
                continue
            any_row |= free
            on_rows |= rowed
            tools_taken |= self.tools_of(moves)
            apart += 1
        return max(most, apart)

    def _parts(self, moves: frozenset[str]) -> tuple[frozenset[str], frozenset[str]]:
        """A set of moves as (the tools of its row-free moves, its moves on one row)."""
        got = self._split.get(moves)
        if got is None:
            free = frozenset(m for m in moves if "@" not in m)
            got = self._split[moves] = (free, moves - free)
        return got

    def _need_bound(
        self,
        need: Need,
        ready: Mapping[str, int],
        soonest_of: dict[frozenset[str], int | None],
    ) -> tuple[int | None, tuple[frozenset[str], ...]]:
        """One need's part of :meth:`_bound`, given the least calls before each tool can
        be called (``ready``): the least calls before a call can meet it (None: never),
        and the sets of moves that must each have a call of their own."""
        meets, first = need
        tools_of = self.tools_of
        tools = tools_of(meets)
        before = dict(first)
        soonest: float = float("inf")
        for t in tools:
            if t not in ready:
                continue
            at = float(ready[t])
            for m in before.get(t, ()):
                given = soonest_of.get(m, _UNSEEN)
                if given is _UNSEEN:
                    given = soonest_of[m] = min(
                        (ready[u] for u in tools_of(m) if u in ready), default=None
                    )
                at = float("inf") if given is None else max(at, given + 1)
            soonest = min(soonest, at)
        if soonest == float("inf"):
            return None, ()
        sets = [meets]
        # what every one of its tools needs first is needed, whichever makes it
        if all(before.get(t) for t in tools):
            common = set.intersection(*(set(before[t]) for t in tools))
            sets.extend(common or [self._first_moves(first)])
        return int(soonest), tuple(sets)

    def _smallest_first(self, moves: frozenset[str]) -> tuple[int, int, tuple[str, ...]]:
        """The order :meth:`_bound` picks sets of moves in: fewest row-free moves first
        (a tool's row-free move clashes with every set holding a move of that tool, a
        move on a row only with that row's), then smallest, then by name (kept per set:
        the same few sets come up at most of a search's nodes)."""
        got = self._rank.get(moves)
        if got is None:
            free = sum("@" not in m for m in moves)
            got = self._rank[moves] = (free, len(moves), tuple(sorted(moves)))
        return got

    def _ready_after(self, known: frozenset[Sort]) -> dict[str, int]:
        """Per tool, the least calls after which all its required arguments' sorts can
        be known; a tool that never can is left out."""
        have, level = set(known), 0
        ready: dict[str, int] = {}
        while True:
            new = [t for t in self.tools if t not in ready and self.takes[t] <= have]
            if not new:
                return ready
            for t in new:
                ready[t] = level
                have |= self.shows[t]
            level += 1

    def fits(self, known: frozenset[Sort], todo: tuple[Need, ...], calls: int) -> bool:
        """Can a relaxed plan of at most ``calls`` calls meet every one of ``todo``? No
        only when that is proven: when :meth:`quick` says more, or the search over
        relaxed plans ends without one; yes when it finds one or spends its effort
        budget (:data:`EFFORT`) first. Both answers are kept for the same (known, needs):
        fewer calls than one proven too short are too short, more than one found enough
        are enough."""
        if not todo:
            return True
        key = (known, todo)
        if calls <= self._short.get(key, -1):
            return False
        if calls >= self._enough.get(key, calls + 1):
            return True
        if calls < 0 or self.quick(known, todo) > calls:
            return False
        self._effort = EFFORT
        try:
            found = self._plan_within(known, todo, calls)
        except _OutOfEffort:
            found = True
        if found:
            self._enough[key] = calls
        return found

    def _plan_within(self, known: frozenset[Sort], todo: tuple[Need, ...], calls: int) -> bool:
        """Does a relaxed plan of at most ``calls`` calls meet every one of ``todo``? Depth
        first, each relaxed state's proven-too-short length kept (a plan reaching the
        same known sorts and needs in another order is not looked at again). Raises
        :class:`_OutOfEffort` past the budget; what it kept until then stays true."""
        if not todo:
            return True
        key = (known, todo)
        if calls <= self._short.get(key, -1) or self.quick(known, todo) > calls:
            return False
        self._effort -= 1
        if self._effort < 0:
            raise _OutOfEffort
        # a call of a tool no need names and that shows no new sort changes nothing
        named = self._named.get(todo)
        if named is None:
            named = self._named[todo] = frozenset(
                [t for meets, _ in todo for t in self.tools_of(meets)]
                + [t for _, first in todo for _, ms in first for m in ms for t in self.tools_of(m)]
            )
        for t in self.tools:
            if not self.takes[t] <= known or (t not in named and self.shows[t] <= known):
                continue
            nxt = self.after(known, todo, t)
            if nxt[1] is todo and nxt[0] is known:
                continue
            if self._plan_within(nxt[0], nxt[1], calls - 1):
                return True
        self._short[key] = max(self._short.get(key, -1), calls)
        return False
