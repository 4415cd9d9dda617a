"""Stopping long runs cleanly: signals become an exception, worker pools die with their
parent.

* :func:`stop_on_signals` turns SIGINT and SIGTERM into :class:`Interrupted` in the main
  thread, so the code that writes results can close its journal (``finally`` blocks run)
  and the command line can say how to resume, instead of the process dying mid-write.
* :func:`worker_pool` is the process pool of ``generate -j`` and ``verify -j``. Its
  workers ignore SIGINT (a Ctrl-C reaches the whole process group; the parent decides
  what happens and terminates them) and each runs a watchdog thread that ends the
  worker as soon as its parent is gone, even when the parent was killed with SIGKILL
  and had no chance to clean up.

Why a watchdog that polls ``os.getppid()``: when a process dies its children are
re-parented, so a changed parent id is a sure sign on every POSIX system. Linux's
``PR_SET_PDEATHSIG`` would be instant but is Linux-only and fires when the *thread* that
forked the worker exits, which in a pool is not always the main one; a pipe closed by
the parent's death is inherited by every later worker, so it never closes while one is
alive. The poll costs one system call per interval and at most that long a delay; the
solver runs without the GIL, so the thread is served during long proofs too.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import multiprocessing.pool
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from types import FrameType
from typing import Any

__all__ = ["PARENT_POLL_SECONDS", "Interrupted", "as_interrupted", "stop_on_signals", "worker_pool"]

PARENT_POLL_SECONDS = 0.25
"""How often a pool worker checks that its parent is still alive."""


class Interrupted(KeyboardInterrupt):
    """SIGINT or SIGTERM arrived while a run was going; ``detail`` says what was kept
    and how to resume (set by the code that knows)."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum
        self.detail = ""


_received: list[int] = []
"""The signals that arrived while the innermost :func:`stop_on_signals` block ran."""


def _raise_interrupted(signum: int, frame: FrameType | None) -> None:
    _received.append(signum)
    raise Interrupted(signum)


def as_interrupted(exc: BaseException) -> Interrupted | None:
    """``exc`` as the :class:`Interrupted` it stands for, or None.

    A signal's exception is raised in whatever Python code runs when it arrives. When
    that code is a callback of a library that wraps its callbacks' errors (pydantic's
    serializers raise ``PydanticSerializationError`` with the message only), the
    exception that reaches the caller is another one. So any exception that ends a
    :func:`stop_on_signals` block after a signal arrived in it stands for that signal.

    >>> as_interrupted(ValueError("bad input")) is None
    True
    """
    if isinstance(exc, Interrupted):
        return exc
    if not _received:
        return None
    stop = Interrupted(_received[0])
    stop.__cause__ = exc
    return stop


@contextlib.contextmanager
def stop_on_signals() -> Iterator[None]:
    """While the block runs, SIGINT and SIGTERM raise :class:`Interrupted` (in the main
    thread; elsewhere the block runs with the handlers as they are)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    before = {s: signal.signal(s, _raise_interrupted) for s in (signal.SIGINT, signal.SIGTERM)}
    outer = _received[:]
    _received.clear()
    try:
        yield
    finally:
        for s, h in before.items():
            signal.signal(s, h)
        _received[:] = outer


def _alive(pid: int) -> bool:
    if sys.platform == "win32":  # there os.kill(pid, 0) sends CTRL_C_EVENT
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, owned by someone else (the pid was reused)
        return True
    return True


def _watch_parent(parent: int) -> None:
    # With the "forkserver" start method the worker's parent is the fork server, not
    # the pool's owner: watch both (the fork server ends when the owner does).
    spawner = os.getppid()
    while os.getppid() == spawner and _alive(parent):
        time.sleep(PARENT_POLL_SECONDS)
    os._exit(1)  # the parent is gone: nobody will read this worker's results


def _worker_start(
    parent: int, setup: Callable[..., None] | None = None, setup_args: tuple[Any, ...] = ()
) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # A forked worker inherits the parent's handlers; the parent ends it with SIGTERM.
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    threading.Thread(
        target=_watch_parent, args=(parent,), daemon=True, name="graphgen-parent-watch"
    ).start()
    if setup is not None:
        setup(*setup_args)


@contextlib.contextmanager
def worker_pool(
    jobs: int, setup: Callable[..., None] | None = None, setup_args: tuple[Any, ...] = ()
) -> Iterator[multiprocessing.pool.Pool]:
    """A pool of ``jobs`` worker processes that die with this process.

    ``setup(*setup_args)`` runs once in each worker as it starts (to hand it large
    read-only data once instead of with every task). Leaving the block normally waits
    for the workers to finish; leaving it with an exception (:class:`Interrupted`
    included) terminates them at once.
    """
    pool = multiprocessing.Pool(
        jobs, initializer=_worker_start, initargs=(os.getpid(), setup, setup_args)
    )
    try:
        yield pool
    except BaseException:
        pool.terminate()
        pool.join()
        raise
    pool.close()
    pool.join()
