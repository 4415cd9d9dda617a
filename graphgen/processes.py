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

import collections
import contextlib
import multiprocessing
import os
import pickle
import signal
import sys
import threading
import time
import traceback
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future
from multiprocessing import connection
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from types import FrameType
from typing import Any

__all__ = [
    "PARENT_POLL_SECONDS",
    "Interrupted",
    "RemoteTraceback",
    "WorkerDied",
    "WorkerPool",
    "as_interrupted",
    "stop_on_signals",
    "worker_pool",
]

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


class WorkerDied(RuntimeError):
    """A worker process ended while it held a job (killed, out of memory, a crash in
    native code); the pool is then broken and every job not yet done fails with this."""


class RemoteTraceback(Exception):
    """The traceback of an exception raised in a worker, as text (set as the
    ``__cause__`` of the exception re-raised in the parent)."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


def _outcome(fn: Callable[..., Any], args: tuple[Any, ...]) -> tuple[bool, Any]:
    try:
        return True, fn(*args)
    except Exception as exc:
        text = traceback.format_exc()
        try:
            pickle.dumps(exc)
        except Exception:  # an exception that cannot travel goes back as text only
            exc = RuntimeError(f"{type(exc).__name__}: {exc}")
        return False, (exc, text)


def _serve(
    conn: Connection, parent: int, setup: Callable[..., None] | None, setup_args: tuple[Any, ...]
) -> None:
    _worker_start(parent, setup, setup_args)
    while True:
        try:
            job = conn.recv()
        except (EOFError, OSError):  # the parent closed its end: nothing more to do
            return
        if job is None:
            return
        fn, args = job
        ok, value = _outcome(fn, args)
        try:
            conn.send((ok, value))
        except (BrokenPipeError, ConnectionResetError):
            return
        except Exception as exc:  # the result cannot be pickled
            conn.send((False, (RuntimeError(f"the result could not be sent back: {exc}"), "")))


class _Worker:
    def __init__(self, process: BaseProcess, conn: Connection) -> None:
        self.process, self.conn = process, conn
        self.job: Future[Any] | None = None  # the job it holds, if any
        self.what = ""  # that job's function, to name it if the worker dies


class WorkerPool:
    """``jobs`` worker processes, each with a pipe of its own, fed one job at a time.

    Why not :class:`multiprocessing.pool.Pool`: its workers share one result queue
    guarded by one lock, and ``terminate()`` kills them wherever they are. A worker
    killed while it writes a result keeps that lock forever, and the pool's task thread
    then waits on it during the shutdown: ``terminate()`` never returns. A run that
    stops with spare candidates still being proved ends exactly that way. Here no lock
    is shared with a worker: a killed worker closes only its own pipe. A job goes to an
    idle worker as soon as there is one (a thread of this process hands them out), so a
    slow job holds up no other.

    >>> with worker_pool(2) as pool:
    ...     [f.result() for f in [pool.submit(pow, 2, n) for n in range(4)]]
    [1, 2, 4, 8]
    """

    def __init__(
        self, jobs: int, setup: Callable[..., None] | None = None, setup_args: tuple[Any, ...] = ()
    ) -> None:
        if jobs < 1:
            raise ValueError(f"a worker pool needs at least one process, not {jobs}")
        ctx = multiprocessing.get_context()
        self._queue: collections.deque[tuple[Future[Any], Callable[..., Any], tuple[Any, ...]]]
        self._queue = collections.deque()
        self._lock = threading.Lock()
        self._broken: BaseException | None = None
        self._stopping = False
        self._wake_r, self._wake_w = os.pipe()
        self._workers: list[_Worker] = []
        try:
            for _ in range(jobs):
                mine, theirs = ctx.Pipe(duplex=True)
                proc = ctx.Process(
                    target=_serve,
                    args=(theirs, os.getpid(), setup, setup_args),
                    daemon=True,
                    name="graphgen-worker",
                )
                proc.start()
                theirs.close()
                self._workers.append(_Worker(proc, mine))
        except BaseException:
            self.terminate()
            raise
        self._thread = threading.Thread(target=self._run, daemon=True, name="graphgen-pool")
        self._thread.start()

    def submit(self, fn: Callable[..., Any], *args: Any) -> Future[Any]:
        """Run ``fn(*args)`` in a worker; its result (or exception) comes in the future.
        ``fn`` and ``args`` must pickle."""
        fut: Future[Any] = Future()
        with self._lock:
            if self._broken is not None:
                raise RuntimeError("the worker pool is broken") from self._broken
            if self._stopping:
                raise RuntimeError("the worker pool is shut down")
            self._queue.append((fut, fn, args))
        os.write(self._wake_w, b"x")
        return fut

    def imap(self, fn: Callable[[Any], Any], items: Iterable[Any]) -> Iterator[Any]:
        """``fn(item)`` for each item, in order, computed ahead by the workers (at most
        two jobs per worker wait their turn, so a long input is not held in memory)."""
        ahead: collections.deque[Future[Any]] = collections.deque()
        for item in items:
            ahead.append(self.submit(fn, item))
            if len(ahead) >= 3 * len(self._workers):
                yield ahead.popleft().result()
        while ahead:
            yield ahead.popleft().result()

    # -- the thread that hands out jobs and collects results

    def _run(self) -> None:
        try:
            while self._serve_round():
                pass
        except BaseException as exc:  # never leave a caller waiting on a future
            self._break(exc)

    def _serve_round(self) -> bool:
        busy = [w for w in self._workers if w.job is not None]
        ready = connection.wait([self._wake_r, *(w.conn for w in busy)])
        if self._wake_r in ready:
            os.read(self._wake_r, 4096)
        for w in busy:
            if w.conn in ready:
                self._collect(w)
        if self._stopping or self._broken is not None:
            return False
        for w in self._workers:
            # an idle worker takes jobs until one goes out: a cancelled job, or one that
            # does not pickle, leaves it idle, and no wake-up would come for the next
            while w.job is None:
                with self._lock:
                    if not self._queue:
                        return True
                    fut, fn, args = self._queue.popleft()
                if not fut.set_running_or_notify_cancel():
                    continue
                try:
                    w.conn.send((fn, args))
                except (BrokenPipeError, ConnectionResetError, EOFError):
                    w.job, w.what = fut, _name(fn)
                    self._collect(w)
                    return False
                except Exception as exc:  # the job does not pickle: it fails, not the pool
                    fut.set_exception(exc)
                    continue
                w.job, w.what = fut, _name(fn)
        return True

    def _collect(self, w: _Worker) -> None:
        fut = w.job
        assert fut is not None
        try:
            ok, value = w.conn.recv()
        except (EOFError, OSError):
            w.process.join(timeout=1)
            died = WorkerDied(
                f"worker process {w.process.pid} ended (exit code {w.process.exitcode}) "
                f"while running {w.what}"
            )
            w.job = None
            if not fut.done():
                fut.set_exception(died)
            if not self._stopping:
                self._break(died)
            return
        w.job = None
        if fut.done():  # failed already, when the pool broke
            return
        if ok:
            fut.set_result(value)
        else:
            exc, text = value
            if text:
                exc.__cause__ = RemoteTraceback(text)
            fut.set_exception(exc)

    def _break(self, why: BaseException) -> None:
        with self._lock:
            if self._broken is None:
                self._broken = why
            queued, self._queue = list(self._queue), collections.deque()
        for fut, _, _ in queued:
            if fut.set_running_or_notify_cancel():
                fut.set_exception(why)
        for w in self._workers:
            if w.job is not None and not w.job.done():
                w.job.set_exception(why)

    # -- ending

    def close(self) -> None:
        """Let the jobs handed in finish, then end the workers and the thread."""
        for fut in self._pending():
            with contextlib.suppress(Exception):
                fut.result()
        self._end(kill=False)

    def terminate(self) -> None:
        """End the workers now, whatever they hold; jobs not done are cancelled."""
        self._end(kill=True)

    def _pending(self) -> list[Future[Any]]:
        with self._lock:
            queued = [fut for fut, _, _ in self._queue]
        return [w.job for w in self._workers if w.job is not None] + queued

    def _end(self, kill: bool) -> None:
        with self._lock:
            self._stopping = True
            queued, self._queue = list(self._queue), collections.deque()
        for fut, _, _ in queued:
            fut.cancel()
        for w in self._workers:
            if kill:
                w.process.terminate()
            else:
                with contextlib.suppress(OSError):
                    w.conn.send(None)
        with contextlib.suppress(OSError):
            os.write(self._wake_w, b"x")
        thread = getattr(self, "_thread", None)
        if thread is not None and thread is not threading.current_thread():
            thread.join()
        for w in self._workers:
            w.process.join(timeout=None if not kill else 5)
            if w.process.exitcode is None:  # SIGTERM was not enough
                w.process.kill()
                w.process.join()
            if w.job is not None and not w.job.done():
                w.job.set_exception(RuntimeError("the worker pool was terminated"))
            w.conn.close()
        for fd in (self._wake_r, self._wake_w):
            with contextlib.suppress(OSError):
                os.close(fd)
        self._wake_r = self._wake_w = -1


def _name(fn: Callable[..., Any]) -> str:
    inner = getattr(fn, "func", fn)  # functools.partial
    return getattr(inner, "__qualname__", repr(inner))


@contextlib.contextmanager
def worker_pool(
    jobs: int, setup: Callable[..., None] | None = None, setup_args: tuple[Any, ...] = ()
) -> Iterator[WorkerPool]:
    """A :class:`WorkerPool` of ``jobs`` worker processes that die with this process.

    ``setup(*setup_args)`` runs once in each worker as it starts (to hand it large
    read-only data once instead of with every task). Leaving the block normally waits
    for the jobs handed in to finish; leaving it with an exception (:class:`Interrupted`
    included) terminates the workers at once.
    """
    pool = WorkerPool(jobs, setup, setup_args)
    try:
        yield pool
    except BaseException:
        pool.terminate()
        raise
    pool.close()
