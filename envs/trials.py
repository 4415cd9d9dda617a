"""Running many episodes: trials and pass^k, concurrency, a crash-safe trajectories file.

An evaluation is a list of *slots*, one per (task, trial). :func:`run_slots` runs them
on a pool of threads (model calls spend their time waiting on the network) and hands
each finished episode to a callback on the calling thread, in the order they finish;
:class:`TrajectoryLog` appends each one to the trajectories file as one JSON line and
flushes it, so a crash or a kill loses only the episodes in flight. On resume the file's
complete lines are read back, those slots are skipped, and when the run completes the
file is rewritten in slot order, so it is byte-identical to a run never interrupted.

pass^k is τ²-bench's reliability measure: for a task with ``n`` trials of which ``c``
succeeded, the chance that ``k`` trials drawn without replacement all succeed,
``C(c, k) / C(n, k)``, averaged over the tasks.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import signal
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from math import comb
from pathlib import Path
from types import FrameType
from typing import Any

from graphgen.envs.agent import Episode
from graphgen.errors import GraphgenError
from graphgen.files import write_atomic

Slot = tuple[str, int]
"""One episode to run: (task id, trial)."""


class TrajectoryError(GraphgenError, ValueError):
    """A trajectories file cannot be resumed (another agent's run)."""


def pass_hat_k(outcomes: Mapping[str, Sequence[bool]], k: int) -> float:
    """τ²-bench's pass^k: the mean over tasks of ``C(c, k) / C(n, k)`` (``n`` trials,
    ``c`` successes). Tasks with fewer than ``k`` trials are left out; 0.0 when none
    has ``k``.

    >>> round(pass_hat_k({"a": [True, True, False, False], "b": [True] * 4}, 2), 4)
    0.5833
    >>> pass_hat_k({"a": [True, False]}, 1), pass_hat_k({"a": [True, False]}, 3)
    (0.5, 0.0)
    """
    if k < 1:
        raise ValueError(f"pass^k needs k >= 1, not {k}")
    shares = [
        comb(sum(1 for ok in runs if ok), k) / comb(len(runs), k)
        for runs in outcomes.values()
        if len(runs) >= k
    ]
    return sum(shares) / len(shares) if shares else 0.0


def outcomes_by_task(episodes: Sequence[Episode]) -> dict[str, list[bool]]:
    """Each task's successes, one per trial."""
    found: dict[str, list[bool]] = {}
    for e in episodes:
        found.setdefault(e.task_id, []).append(e.success)
    return found


# ------------------------------------------------------------------ the file


def episode_line(episode: Episode) -> str:
    """An episode as its one line of a trajectories file (sorted keys, newline ended)."""
    return json.dumps(dataclasses.asdict(episode), sort_keys=True, ensure_ascii=False) + "\n"


_FIELDS = {f.name for f in dataclasses.fields(Episode)}


def read_episodes(path: Path) -> tuple[list[Episode], int]:
    """The episodes of a trajectories file, and how many lines could not be read (the
    last line of a killed run may be cut short)."""
    episodes: list[Episode] = []
    bad = 0
    with path.open(encoding="utf-8", errors="replace") as fh:
        for line in fh:
            try:
                data = json.loads(line)
                if not isinstance(data, dict) or not set(data) <= _FIELDS:
                    raise ValueError("not an episode record")
                episodes.append(Episode(**data))
            except (ValueError, TypeError, RecursionError):
                bad += 1
    return episodes, bad


class TrajectoryLog:
    """The trajectories file of a run, written as episodes finish.

    Opening it without ``resume`` starts the file empty. With ``resume`` its complete
    lines are kept: :attr:`done` holds those episodes by slot (a slot recorded twice keeps
    its first line; an episode that ended in an error is dropped, to be run again), the
    file is rewritten with only them, and new episodes are appended after.
    """

    def __init__(self, path: Path, *, resume: bool, agent: str, slots: Sequence[Slot]) -> None:
        self.path = path
        self.done: dict[Slot, Episode] = {}
        self.notes: list[str] = []
        if resume and path.exists():
            episodes, bad = read_episodes(path)
            wanted = set(slots)
            others = {e.agent for e in episodes if e.agent != agent}
            if others:
                raise TrajectoryError(
                    f"{path} holds episodes of {', '.join(sorted(others))}, not {agent}: "
                    "resume a run with the agent that made it"
                )
            for e in episodes:
                slot = (e.task_id, e.trial)
                if slot in wanted and slot not in self.done and e.error is None:
                    self.done[slot] = e
            if bad:
                self.notes.append(f"{path}: {bad} unreadable line(s) dropped (cut short?)")
        ordered = [self.done[s] for s in slots if s in self.done]
        write_atomic(path, "".join(episode_line(e) for e in ordered))
        self._fh = path.open("a", encoding="utf-8")

    def append(self, episode: Episode) -> None:
        """Write one finished episode and flush it to the operating system (it survives
        the death of this process from then on)."""
        self._fh.write(episode_line(episode))
        self._fh.flush()

    def close(self) -> None:
        """Close the file."""
        self._fh.close()

    def finish(self, episodes: Sequence[Episode]) -> None:
        """Close the file and rewrite it with ``episodes`` (the whole run, in slot order)."""
        self.close()
        write_atomic(self.path, "".join(episode_line(e) for e in episodes))


# ------------------------------------------------------------------ running


def run_slots(
    slots: Sequence[Slot],
    work: Callable[[Slot], Episode | None],
    on_done: Callable[[Episode], None],
    *,
    concurrency: int = 1,
    stop: threading.Event | None = None,
) -> None:
    """Run ``work`` on every slot, at most ``concurrency`` at once; ``on_done`` gets each
    episode on this thread as it finishes. ``work`` returns None for a slot it dropped
    (the run was stopped). Once ``stop`` is set no new slot starts."""
    if concurrency <= 1:
        for slot in slots:
            if stop is not None and stop.is_set():
                return
            episode = work(slot)
            if episode is not None:
                on_done(episode)
        return
    pending = iter(slots)
    running: set[Future[Episode | None]] = set()
    with ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="episode") as pool:

        def fill() -> None:
            while len(running) < concurrency and not (stop is not None and stop.is_set()):
                slot = next(pending, None)
                if slot is None:
                    return
                running.add(pool.submit(work, slot))

        fill()
        while running:
            # A timeout keeps this thread waking up, so a signal handler runs promptly.
            finished, _ = wait(running, timeout=0.2, return_when=FIRST_COMPLETED)
            for fut in finished:
                running.discard(fut)
                episode = fut.result()
                if episode is not None:
                    on_done(episode)
            fill()


@contextlib.contextmanager
def request_stop_on_signals(stop: threading.Event) -> Iterator[list[int]]:
    """While inside, SIGINT and SIGTERM set ``stop`` (the run finishes the episodes it can
    and closes its files); a second signal raises :class:`KeyboardInterrupt`. Yields the
    list the received signal numbers are put in. Outside the main thread, does nothing."""
    got: list[int] = []
    if threading.current_thread() is not threading.main_thread():
        yield got
        return

    def handler(signum: int, frame: FrameType | None) -> None:
        got.append(signum)
        if stop.is_set():
            raise KeyboardInterrupt
        stop.set()

    old: dict[signal.Signals, Any] = {}
    for sig in (signal.SIGINT, signal.SIGTERM):
        old[sig] = signal.signal(sig, handler)
    try:
        yield got
    finally:
        for sig, h in old.items():
            signal.signal(sig, h)
