"""Random draws from pools of values that may be whole tables.

The expander draws argument values and rows to ask about from the state's keys and
field values, which reach tens of thousands. A pool of at most :data:`SHUFFLE_MAX`
values is shuffled whole and drawn from, as it always was; a larger one is drawn from
in place (:meth:`random.Random.choice`, :meth:`random.Random.sample` on the state's
ordered views). Both give every value the same chance; the large case only skips the
shuffle, which would cost more than the rest of a candidate. The built-in domains'
tables at their declared sizes stay far below the bound, so their task sets keep their
bytes.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any, overload

#: The largest pool shuffled whole before drawing from it.
SHUFFLE_MAX = 1000


def in_random_order(rng: random.Random, pool: Sequence[Any]) -> Sequence[Any]:
    """``pool`` to draw from with ``rng.choice``: shuffled when small, else as it is."""
    if len(pool) > SHUFFLE_MAX:
        return pool
    out = list(pool)
    rng.shuffle(out)
    return out


def first_in_random_order(rng: random.Random, pool: Sequence[Any], k: int) -> list[Any]:
    """The first ``k`` values of ``pool`` in a random order (fewer when it is short)."""
    if len(pool) > SHUFFLE_MAX:
        return rng.sample(pool, k)
    out = list(pool)
    rng.shuffle(out)
    return out[:k]


class Joined(Sequence[Any]):
    """Two sequences one after the other, without copying them."""

    __slots__ = ("_a", "_b")

    def __init__(self, a: Sequence[Any], b: Sequence[Any]) -> None:
        self._a, self._b = a, b

    def __len__(self) -> int:
        return len(self._a) + len(self._b)

    @overload
    def __getitem__(self, i: int) -> Any: ...
    @overload
    def __getitem__(self, i: slice) -> list[Any]: ...
    def __getitem__(self, i: int | slice) -> Any:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        if i < 0:
            i += len(self)
        n = len(self._a)
        return self._a[i] if i < n else self._b[i - n]
