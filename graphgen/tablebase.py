"""A table's shared rows and what is computed from them once.

Copies of a :class:`~graphgen.state.State` share their tables' rows (see its module
docstring). Each table keeps the rows it started from, its :class:`Base`, which no state
ever changes, and the keys written since. What depends on the base alone is built the
first time it is asked for and serves every copy: the keys in order, the distinct values
of a field in order, and equality indexes (value -> keys). A state whose table differs
from its base by a few rows answers through an :class:`OrderedView`: the base's ordered
sequence less some items, plus some, read without building the whole new sequence.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable, Iterable, Iterator, Sequence
from decimal import Decimal
from operator import itemgetter
from typing import Any, overload

Row = dict[str, Any]
Table = dict[Any, Row]  # id (str, or int for ``type: int`` keys) -> row


def field_value(raw: Any, decimal: bool) -> Any:
    """A stored field value as expressions see it: a decimal is stored in its JSON form
    ("12.50") and computed with as a ``Decimal``."""
    return Decimal(raw) if decimal and raw is not None else raw


def hashable(v: Any) -> Any:
    """``v`` as a set member: a list as a tuple (how knowledge holds list values)."""
    return tuple(v) if isinstance(v, list) else v


def grouped(pairs: Iterable[tuple[Any, Any]]) -> dict[Any, tuple[Any, ...]]:
    """Value -> the keys paired with it, in the order given; values in order of first
    appearance. Raises TypeError for an unhashable value.

    A list is made only for a value that comes again: most values of an id column
    (``payment_id``, ``email``) come once, and on a table of 40,000 rows a list per
    value was 40,000 container objects that the cyclic garbage collector tracks, enough
    to start a full collection, which on a large state walks every one of its rows.

    >>> grouped([("a", 1), ("b", 2), ("a", 3)])
    {'a': (1, 3), 'b': (2,)}
    """
    first: dict[Any, Any] = {}
    more: dict[Any, list[Any]] = {}
    for v, k in pairs:
        if v in first:
            got = more.get(v)
            if got is None:
                more[v] = [first[v], k]
            else:
                got.append(k)
        else:
            first[v] = k
    out = dict(zip(first, zip(first.values()), strict=True))  # value -> (key,), in C
    for v, ks in more.items():
        out[v] = tuple(ks)
    return out


#: Lookups of a list field's items :meth:`Base.holding` answers by a pass over the
#: rows before it builds the field's item index.
SCANS_BEFORE_INDEX = 2


class Base:
    """The rows a table started from, shared by every copy of a state and never changed;
    what is computed from them is computed once."""

    __slots__ = ("_eq", "_items", "_refs", "_scans", "_sorted", "_values", "rows")

    def __init__(self, rows: Table) -> None:
        self.rows = rows
        self._sorted: tuple[Any, ...] | None = None
        self._eq: dict[tuple[str, bool], dict[Any, tuple[Any, ...]]] = {}
        self._values: dict[str, tuple[tuple[Any, ...], tuple[str, ...]]] = {}
        self._refs: dict[tuple[str, int], tuple[Base, bool]] = {}
        self._items: dict[str, dict[Any, tuple[Any, ...]]] = {}
        self._scans: dict[str, int] = {}  # per list field: lookups answered by a pass

    def sorted_keys(self) -> tuple[Any, ...]:
        if self._sorted is None:
            self._sorted = tuple(sorted(self.rows))
        return self._sorted

    def index(self, field: str, decimal: bool) -> dict[Any, tuple[Any, ...]]:
        """Value of ``field`` (as expressions see it) -> the keys holding it, in order.
        Raises TypeError if a value is not hashable (a list) and KeyError if a row has
        no such field, before anything is kept."""
        got = self._eq.get((field, decimal))
        if got is None:
            keys, col = self.sorted_keys(), self._column(field, decimal)
            if len(set(col)) == len(col):  # an id-like column: each value once, built in C
                got = dict(zip(col, zip(keys), strict=True))
            else:
                got = grouped(zip(col, keys, strict=True))
            self._eq[(field, decimal)] = got
        return got

    def indexed(self, field: str, decimal: bool) -> bool:
        """Is the equality index of ``field`` built already?"""
        return (field, decimal) in self._eq

    def _column(self, field: str, decimal: bool) -> list[Any]:
        """The values of ``field`` in key order (KeyError if a row has no such field)."""
        rows, keys = self.rows, self.sorted_keys()
        if decimal:
            return [field_value(rows[k][field], True) for k in keys]
        return list(map(itemgetter(field), map(rows.__getitem__, keys)))  # in C

    def holding(self, field: str, item: Any) -> tuple[Any, ...]:
        """The keys, in order, of the rows whose list ``field`` holds ``item`` (TypeError
        for an unhashable item, in a row or asked for). The first
        :data:`SCANS_BEFORE_INDEX` lookups of a field pass over the rows; later ones
        build :meth:`item_index` and answer from it. Most list fields are asked about
        once or twice per state, and on 50,000 orders the index of their items costs
        about twenty passes."""
        got = self._items.get(field)
        if got is not None:
            return got.get(item, ())
        done = self._scans.get(field, 0)
        if done >= SCANS_BEFORE_INDEX:
            return self.item_index(field).get(item, ())
        self._scans[field] = done + 1
        hash(item)  # an unhashable item raises, as the index's lookup would
        rows = self.rows
        # dict.fromkeys: an unhashable item in a row raises, as building the index would
        return tuple(k for k in self.sorted_keys() if item in dict.fromkeys(rows[k][field]))

    def item_index(self, field: str) -> dict[Any, tuple[Any, ...]]:
        """Item of list ``field`` -> the keys of the rows whose list holds it, in order
        (TypeError for an unhashable item)."""
        got = self._items.get(field)
        if got is None:
            rows = self.rows
            pairs = (
                (item, k) for k in self.sorted_keys() for item in dict.fromkeys(rows[k][field])
            )
            got = self._items[field] = grouped(pairs)
        return got

    def names_rows_of(self, field: str, target: Base) -> bool:
        """Does ``field`` of every row name a row of ``target`` (None names none)? Raises
        TypeError for list values."""
        hit = self._refs.get((field, id(target)))
        if hit is None or hit[0] is not target:
            hit = (target, all(v in target.rows for v in self.index(field, False)))
            self._refs[(field, id(target))] = hit
        return hit[1]

    def values(self, field: str) -> tuple[tuple[Any, ...], tuple[str, ...]]:
        """The distinct values of ``field`` but None, ordered by ``repr``, and their
        reprs (TypeError for list values)."""
        got = self._values.get(field)
        if got is None:
            # In order of first appearance, like the index's values, which it does not
            # build: listing a field's values (a pool of candidates) is no lookup.
            index = self._eq.get((field, False))
            distinct = index if index is not None else dict.fromkeys(self._column(field, False))
            vals = sorted((v for v in distinct if v is not None), key=repr)
            got = self._values[field] = (tuple(vals), tuple(map(repr, vals)))
        return got


class OrderedView(Sequence[Any]):
    """An ordered sequence given as a base sequence (ordered by ``order``) less the
    items ``gone`` plus the items ``extra``; read-only. Indexing, membership and
    :meth:`index` take time in the number of changes, not in the length."""

    __slots__ = (
        "_base",
        "_events",
        "_extra",
        "_extra_orders",
        "_gone",
        "_gone_at",
        "_len",
        "_order",
        "_orders",
    )

    def __init__(
        self,
        base: tuple[Any, ...],
        orders: Sequence[Any],
        order: Callable[[Any], Any],
        gone: Iterable[Any],
        extra: Iterable[Any],
    ) -> None:
        """``orders``: ``order`` of each base item (the base itself when ``order`` is the
        identity); ``gone`` are base items, ``extra`` are not."""
        self._base, self._orders, self._order = base, orders, order
        self._gone = set(gone)
        self._extra = sorted(set(extra), key=order)
        self._extra_orders = [order(x) for x in self._extra]
        self._gone_at = sorted(bisect_left(orders, order(x)) for x in self._gone)
        # (base position, 0 = an extra item inserted before it / 1 = the item removed)
        events: list[tuple[int, int, Any]] = [
            (bisect_left(orders, o), 0, x)
            for x, o in zip(self._extra, self._extra_orders, strict=True)
        ]
        events += [(at, 1, None) for at in self._gone_at]
        self._events = sorted(events, key=lambda ev: (ev[0], ev[1]))
        self._len = len(base) - len(self._gone) + len(self._extra)

    def __len__(self) -> int:
        return self._len

    @overload
    def __getitem__(self, i: int) -> Any: ...
    @overload
    def __getitem__(self, i: slice) -> list[Any]: ...
    def __getitem__(self, i: int | slice) -> Any:
        if isinstance(i, slice):
            start, stop, step = i.indices(self._len)
            if step != 1:
                return [self[j] for j in range(start, stop, step)]
            out: list[Any] = []
            for x in self:
                if len(out) >= stop:
                    break
                out.append(x)
            return out[start:]
        if i < 0:
            i += self._len
        if not 0 <= i < self._len:
            raise IndexError("ordered view index out of range")
        pos = done = 0
        for at, kind, x in self._events:
            run = at - pos  # base items between the changes are in place
            if i < done + run:
                return self._base[pos + i - done]
            done, pos = done + run, at
            if kind == 0:
                if i == done:
                    return x
                done += 1
            else:
                pos += 1
        return self._base[pos + i - done]

    def __iter__(self) -> Iterator[Any]:
        if not self._events:
            return iter(self._base)  # unchanged: the base's own iterator, in C
        return self._changed_iter()

    def _changed_iter(self) -> Iterator[Any]:
        base = self._base  # read item by item: a caller may stop after a few
        pos = 0
        for at, kind, x in self._events:
            for j in range(pos, at):
                yield base[j]
            pos = at
            if kind == 0:
                yield x
            else:
                pos += 1
        for j in range(pos, len(base)):
            yield base[j]

    def __contains__(self, x: object) -> bool:
        return self.rank(x) is not None

    def rank(self, x: Any) -> int | None:
        """The position of ``x`` (None when it is not an item)."""
        try:
            if x in self._gone:
                return None
            o = self._order(x)
            at = bisect_left(self._orders, o)
            extra_at = bisect_left(self._extra_orders, o)
        except TypeError:
            return None  # unhashable, or not comparable with the items: not one of them
        in_base = at < len(self._base) and self._orders[at] == o and self._base[at] == x
        in_extra = extra_at < len(self._extra) and self._extra[extra_at] == x
        if not (in_base or in_extra):
            return None
        return at - bisect_left(self._gone_at, at) + extra_at

    def index(self, x: Any, start: int = 0, stop: int | None = None) -> int:
        r = self.rank(x)
        if r is None or r < start or (stop is not None and r >= stop):
            raise ValueError(f"{x!r} is not in the view")
        return r
