"""How busy the workers of a generation run were, and what the drawing loop cost.

On a shared machine a worker's CPU time over the run's wall time under-reports how
well the run was scheduled: a worker that holds a task but waits for a core other
processes use gets no CPU, yet it was given work. So each worker also reports the
wall time it held each task (*busy in hand*): ``busy / (wall x jobs)`` says whether the
scheduler kept the workers fed, ``cpu / (wall x jobs)`` what the machine gave them.
The main loop's own time drawing candidates (expander, dry-run gate, paraphrase) is
measured apart: when proofs are fast it is what bounds the run.

Nothing here reaches the tasks: the figures ride beside each outcome and are read by
:class:`~graphgen.tasks.taskset.GenResult` callers only (``benchmarks/bench_generate.py``).
Times are ``time.perf_counter`` (monotonic, the same clock for every process of one
machine), so the start-up and tail figures are meaningful when the workers run on the
machine of the loop (the local backend, or a Ray instance started for the run).
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import NamedTuple, TypeVar

R = TypeVar("R")


class Span(NamedTuple):
    """One task held by one worker."""

    worker: int  # the worker's process id
    start: float  # time.perf_counter() when it took the task
    end: float  # ... and when it gave the outcome back
    cpu: float  # CPU seconds of the checks (this thread's time)


def timed(fn: Callable[[], R]) -> tuple[R, Span]:
    """``fn()`` and the :class:`Span` of this process running it."""
    start, cpu = time.perf_counter(), time.thread_time()
    got = fn()
    return got, Span(os.getpid(), start, time.perf_counter(), time.thread_time() - cpu)


@dataclass
class WorkerUse:
    """What one worker did during a run."""

    tasks: int = 0
    busy: float = 0.0  # wall seconds holding a task
    cpu: float = 0.0  # CPU seconds running the checks
    first: float = math.inf  # start of its first task (perf_counter)
    last: float = -math.inf  # end of its last task

    def add(self, span: Span) -> None:
        self.tasks += 1
        self.busy += span.end - span.start
        self.cpu += span.cpu
        self.first = min(self.first, span.start)
        self.last = max(self.last, span.end)


@dataclass
class Utilisation:
    """The time of one generation run: its wall time, the drawing loop's, each worker's.

    ``wall`` runs from before the workers start to after they have stopped, so worker
    start-up and the tail of the run (fewer candidates left than workers) count as idle.
    A spare candidate still being checked when the run ends is stopped; its time counts
    as idle too (and on the Ray backend that of every unneeded spare).
    """

    jobs: int
    start: float = field(default_factory=time.perf_counter)
    wall: float = 0.0
    draws: int = 0  # calls of the drawing loop that handed a candidate out
    unused: int = 0  # tasks checked whose outcome the run did not need (spares)
    draw_wall: float = 0.0  # wall seconds drawing candidates
    draw_cpu: float = 0.0  # CPU seconds of the loop's thread drawing them
    wait: float = 0.0  # wall seconds the loop waited for the oldest outcome
    workers: dict[int, WorkerUse] = field(default_factory=dict)

    def record(self, span: Span, *, taken: bool = True) -> None:
        """Count one task a worker held (``taken``: its outcome was used)."""
        self.workers.setdefault(span.worker, WorkerUse()).add(span)
        if not taken:
            self.unused += 1

    @contextmanager
    def drawing(self) -> Iterator[None]:
        """Time one call of the drawing loop."""
        start, cpu = time.perf_counter(), time.thread_time()
        try:
            yield
        finally:
            self.draw_wall += time.perf_counter() - start
            self.draw_cpu += time.thread_time() - cpu

    @contextmanager
    def waiting(self) -> Iterator[None]:
        """Time one wait for the oldest candidate's outcome."""
        start = time.perf_counter()
        try:
            yield
        finally:
            self.wait += time.perf_counter() - start

    def stop(self) -> None:
        """The run is over: fix its wall time."""
        self.wall = time.perf_counter() - self.start

    @property
    def tasks(self) -> int:
        """Tasks the workers checked (``unused`` ones included)."""
        return sum(w.tasks for w in self.workers.values())

    @property
    def busy(self) -> float:
        """Wall seconds the workers held tasks, summed."""
        return sum(w.busy for w in self.workers.values())

    @property
    def cpu(self) -> float:
        """CPU seconds the workers spent on the checks, summed."""
        return sum(w.cpu for w in self.workers.values())

    def _share(self, seconds: float) -> float:
        return seconds / (self.wall * self.jobs) if self.wall > 0 else 0.0

    @property
    def busy_share(self) -> float:
        """Busy in hand over (wall x jobs): how well the workers were kept fed."""
        return self._share(self.busy)

    @property
    def cpu_share(self) -> float:
        """Worker CPU over (wall x jobs): what the machine gave them."""
        return self._share(self.cpu)

    @property
    def ramp(self) -> float:
        """Wall seconds, summed over the workers, before each took its first task."""
        return sum(max(0.0, w.first - self.start) for w in self.workers.values() if w.tasks)

    @property
    def tail(self) -> float:
        """Wall seconds, summed over the workers, after each gave back its last task."""
        end = self.start + self.wall
        return sum(max(0.0, end - w.last) for w in self.workers.values() if w.tasks)
