"""Where the acceptance checks of candidate tasks run: here, in local worker processes,
or on a Ray cluster.

The generator (:func:`graphgen.tasks.taskset.generate`) draws candidates one after
another and hands each to a :class:`Checker` as soon as it passes the dry-run; it takes
the outcomes back in the order it handed them out. Every checker gives the same
outcome for the same task (the checks are pure functions of the domain and the task),
so the task set is the same bytes whichever one runs them; they differ only in where
the CPU time is spent.

Workers receive the domain and the checks once, when they start, not with every task:
unpickling a domain costs tens of milliseconds, as much as a typical proof. Each
outcome comes back with the :class:`~graphgen.tasks.utilisation.Span` of the worker
that held the task, which the checker adds to the run's
:class:`~graphgen.tasks.utilisation.Utilisation`.
"""

from __future__ import annotations

import contextlib
import tempfile
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future
from pathlib import Path
from typing import Any, Literal, Protocol

from graphgen.domain import Domain
from graphgen.extras import require
from graphgen.processes import WorkerPool, worker_pool
from graphgen.tasks.model import Task
from graphgen.tasks.parcels import Parcel, StatePost, files, opened, read_file, returned
from graphgen.tasks.utilisation import Span, Utilisation, timed

# An acceptance check run after the dry-run gate (the z3 proofs plug in here): it returns
# the (possibly enriched, e.g. certified) task to accept it, or a rejection reason.
# Named apart from ``graphgen.ir.Check``, which is a precondition in the IR.
TaskCheck = Callable[[Domain, Task], Task | str]

Backend = Literal["local", "ray"]
BACKENDS: tuple[Backend, ...] = ("local", "ray")


def run_checks(domain: Domain, task: Task, checks: Sequence[TaskCheck]) -> Task | str:
    """The task as the checks leave it, or the reason of the first that rejects it."""
    for chk in checks:
        got = chk(domain, task)
        if isinstance(got, str):
            return got
        task = got
    return task


class Pending(Protocol):
    """The outcome of one task's checks, when it is ready."""

    def get(self) -> Task | str: ...


class Checker(Protocol):
    """Runs the checks of one generation run on tasks handed to it."""

    def submit(self, task: Task) -> Pending: ...


# A worker's outcome (a task unchanged in its tables comes back without them, as a
# Parcel) and the span of the worker that made it.
_Timed = tuple[Task | str | Parcel, Span]


def _check_parcel(
    domain: Domain, checks: Sequence[TaskCheck], parcel: Parcel, fetch: Callable[[Any], Any]
) -> Task | str | Parcel:
    task = opened(parcel, fetch)
    return returned(task, run_checks(domain, task, checks))


class _Inline:
    """Checks in this process, when their outcome is asked for (in hand-out order)."""

    def __init__(self, domain: Domain, checks: Sequence[TaskCheck], use: Utilisation) -> None:
        self.domain, self.checks, self.use = domain, list(checks), use

    def submit(self, task: Task) -> Pending:
        domain, checks, use = self.domain, self.checks, self.use

        class _Lazy:
            def get(self) -> Task | str:
                got, span = timed(lambda: run_checks(domain, task, checks))
                use.record(span)
                return got

        return _Lazy()


# --------------------------------------------------------------------- local processes

_WORKER: tuple[Domain, list[TaskCheck]] | None = None  # set once in each worker process


def _setup_worker(domain: Domain, checks: list[TaskCheck]) -> None:
    global _WORKER
    _WORKER = (domain, checks)


def _check_in_worker(parcel: Parcel) -> _Timed:
    assert _WORKER is not None, "a check worker runs only after its setup"
    domain, checks = _WORKER
    return timed(lambda: _check_parcel(domain, checks, parcel, read_file))


class _Pool:
    """Worker processes; each initial state's tables go to them once, in a file of the
    run (:mod:`graphgen.tasks.parcels`)."""

    def __init__(self, pool: WorkerPool, folder: Path, use: Utilisation) -> None:
        self.pool, self.use = pool, use
        self.post = StatePost(files(folder))
        # handed out, outcome not read: by hand-out number
        self.unread: dict[int, Future[_Timed]] = {}
        self.handed = 0

    def submit(self, task: Task) -> Pending:
        handle = self.pool.submit(_check_in_worker, self.post.pack(task))
        owner, index = self, self.handed
        self.handed += 1
        self.unread[index] = handle

        class _Result:
            def get(self) -> Task | str:
                got, span = handle.result()
                del owner.unread[index]
                owner.use.record(span)
                return owner.post.unpack(task, got)

        return _Result()

    def abandon(self) -> None:
        """Stop the workers if outcomes were left unread (spare candidates the run did
        not need), counting the time of those already checked."""
        if not self.unread:
            return
        for handle in self.unread.values():
            if handle.done() and not handle.cancelled() and handle.exception() is None:
                self.use.record(handle.result()[1], taken=False)
        self.pool.terminate()


# --------------------------------------------------------------------- Ray


class _RayPool:
    """A pool of Ray actors, each holding the domain and checks; a task goes to the next
    idle actor, and outcomes are read back in hand-out order."""

    def __init__(
        self, ray: Any, domain: Domain, checks: list[TaskCheck], jobs: int, use: Utilisation
    ) -> None:
        from ray.util import ActorPool

        class _Worker:
            def __init__(self, payload: tuple[Domain, list[TaskCheck]]) -> None:
                # Ray hands an actor its argument already fetched from the object store.
                self.domain, self.checks = payload

            def check(self, parcel: Parcel) -> _Timed:
                return timed(lambda: _check_parcel(self.domain, self.checks, parcel, ray.get))

        actor: Any = ray.remote(num_cpus=1)(_Worker)
        shared = ray.put((domain, checks))
        self.actors = [actor.remote(shared) for _ in range(jobs)]
        self.pool = ActorPool(self.actors)
        # each initial state's tables go to the object store once
        self.post = StatePost(lambda _n, tables: ray.put(tables))
        self.handed = 0  # tasks handed out
        self.taken = 0  # outcomes read back
        self.ready: dict[int, _Timed] = {}
        self.use = use

    def submit(self, task: Task) -> Pending:
        self.pool.submit(lambda a, p: a.check.remote(p), self.post.pack(task))
        index = self.handed
        self.handed += 1
        owner = self

        class _Ticket:
            def get(self) -> Task | str:
                while index not in owner.ready:
                    owner.ready[owner.taken] = owner.pool.get_next()
                    owner.taken += 1
                got, span = owner.ready.pop(index)
                owner.use.record(span)
                return owner.post.unpack(task, got)

        return _Ticket()


@contextlib.contextmanager
def checker(
    domain: Domain,
    checks: Sequence[TaskCheck],
    jobs: int,
    backend: Backend = "local",
    address: str | None = None,
    use: Utilisation | None = None,
) -> Iterator[Checker]:
    """A :class:`Checker` for one run: inline when there is one job (or no check), else
    ``jobs`` local worker processes, or ``jobs`` actors on a Ray cluster (``address``:
    the cluster to join; None starts a local one for the run). The span of every task
    a worker held is added to ``use`` as its outcome is read. Tasks whose outcome was
    not read when the block ends are abandoned (their workers are stopped), not waited
    for; on the local backend the time of those already checked is counted.

    >>> from graphgen.domains import load_builtin
    >>> with checker(load_builtin("mock"), [], jobs=4) as c:
    ...     type(c).__name__
    '_Inline'
    """
    checks = list(checks)
    use = use if use is not None else Utilisation(jobs)
    if backend == "ray":
        require("ray", "ray", "--backend ray")
        import ray

        started = not ray.is_initialized()
        if started:
            ray.init(address=address, include_dashboard=False, log_to_driver=False)
        remote = _RayPool(ray, domain, checks, max(1, jobs), use)
        try:
            yield remote
        finally:
            for a in remote.actors:  # with them the spare candidates the run did not need
                ray.kill(a)
            if started:
                ray.shutdown()
        return
    if backend != "local":
        raise ValueError(f"unknown backend {backend!r}: one of {', '.join(BACKENDS)}")
    if jobs <= 1 or not checks:
        yield _Inline(domain, checks, use)
        return
    with (
        tempfile.TemporaryDirectory(prefix="graphgen-states-") as folder,
        worker_pool(jobs, _setup_worker, (domain, checks)) as pool,
    ):
        local = _Pool(pool, Path(folder), use)
        yield local
        local.abandon()
