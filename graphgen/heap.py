"""Keeping large long-lived states out of the garbage collector's full collections.

CPython's cyclic collector walks *every* tracked object on a full collection, and
starts one whenever the objects that survived the younger generations reach a quarter
of those already old. A generated state's rows are :class:`~graphgen.state.SharedRow`
dicts, which the collector always tracks: at 1,000 times the default tables an airline
state holds 128,000 of them, one full collection costs about 45 ms, and building the
indexes and candidates of its first tasks starts several (7 full collections, 0.34 s,
over the 25 tasks drawn on one such state, nearly half of their generation time). The
rows cannot be in a reference cycle (they hold only field values) and live as long as
the run, so walking them finds nothing.

:class:`FrozenHeap` moves the objects alive at a chosen moment (right after a state is
made) into the collector's permanent generation with :func:`gc.freeze`, and back with
:func:`gc.unfreeze` when the scope ends, so nothing stays frozen after it. It does
nothing when the collector is off or something else has frozen objects already (a
server that freezes before forking keeps its own freeze): it never undoes a freeze it
did not make. Objects are still freed by reference counting while frozen; only cyclic
garbage among them waits for the scope's end.

A check worker (a process of the generator's pool, or a Ray actor) owns its heap and
keeps the states it has read for the tasks that follow: :func:`refreeze` runs there each
time it reads a large one.
"""

from __future__ import annotations

import gc
from types import TracebackType

#: Rows from which a state read by a check worker is frozen (:func:`refreeze`): below
#: it, a full collection walks few objects and collecting once costs more than it saves.
LARGE_STATE_ROWS = 10_000


def refreeze() -> None:
    """In a process that owns its heap, after it read a large state: return what an
    earlier call froze to the collector, collect, and freeze everything alive now. A
    state dropped since the last call is collected here, even inside a reference cycle
    (a frozen one would never be), so the frozen set is always what is alive."""
    if gc.isenabled():
        gc.unfreeze()
        gc.collect()
        gc.freeze()


class FrozenHeap:
    """A scope in which :meth:`settle` keeps every object alive now out of full
    collections; leaving the scope returns them to the collector.

    >>> with FrozenHeap() as heap:
    ...     rows = [dict(a=[i]) for i in range(3)]
    ...     heap.settle()
    ...     frozen = gc.get_freeze_count() > 0
    >>> frozen, gc.get_freeze_count()
    (True, 0)
    """

    def __init__(self) -> None:
        self.active = False

    def __enter__(self) -> FrozenHeap:
        self.active = gc.isenabled() and gc.get_freeze_count() == 0
        return self

    def settle(self) -> None:
        """Freeze every object alive now (in the scope only)."""
        if self.active:
            gc.freeze()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self.active:
            gc.unfreeze()
            self.active = False
