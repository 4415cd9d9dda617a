"""Tasks sent to worker processes without their initial state's tables.

The tasks drawn on one initial state share its tables (:meth:`State.json_form`), tens of
thousands of rows when tables are large. Sent whole, each task would copy them (pickled
here, read again in the worker), which costs more than its proofs. A :class:`StatePost`
sends each state's tables once (to a file of the run, or into Ray's object store), and
a task travels as a :class:`Parcel`: the task without its tables, and where they are.
In the worker, :func:`opened` puts the tables back, read once per worker and shared by
its tasks of that state, so the state :meth:`State.from_dict` reads from them is read
once too. A task that comes back unchanged in its tables travels back without them
(:func:`returned`, :meth:`StatePost.unpack`).
"""

from __future__ import annotations

import pickle
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from graphgen.heap import LARGE_STATE_ROWS, refreeze
from graphgen.state import State
from graphgen.tasks.model import Task

# States whose tables a worker keeps (the window of tasks in flight spans two or three).
KEEP = 4


@dataclass(frozen=True)
class Parcel:
    """A task whose initial state's ``tables`` travel apart: ``where`` is the handle of
    the tables (None: the task is whole)."""

    task: Task
    where: Any = None


def _without_tables(task: Task) -> Task:
    state = {k: ({} if k == "tables" else v) for k, v in task.initial_state.items()}
    return task.model_copy(update={"initial_state": state})


def _with_tables(task: Task, tables: dict[str, Any]) -> Task:
    state = {k: (tables if k == "tables" else v) for k, v in task.initial_state.items()}
    return task.model_copy(update={"initial_state": state})


class StatePost:
    """Sends the tables of each distinct initial state once: ``put(n, tables)`` stores
    the ``n``-th and returns its handle. Keeps the tables it sent (the tasks hold them
    anyway) so that a state is known by the identity of its tables."""

    def __init__(self, put: Callable[[int, dict[str, Any]], Any]) -> None:
        self._put = put
        self._sent: dict[int, tuple[dict[str, Any], Any]] = {}

    def pack(self, task: Task) -> Parcel:
        tables = task.initial_state.get("tables")
        if not isinstance(tables, dict):
            return Parcel(task)
        hit = self._sent.get(id(tables))
        if hit is None or hit[0] is not tables:
            hit = self._sent[id(tables)] = (tables, self._put(len(self._sent), tables))
        return Parcel(_without_tables(task), hit[1])

    def unpack(self, sent: Task, got: Task | str | Parcel) -> Task | str:
        """A worker's outcome for task ``sent``, with ``sent``'s tables put back when it
        came without them."""
        if not isinstance(got, Parcel):
            return got
        return _with_tables(got.task, sent.initial_state["tables"])


def files(folder: Path) -> Callable[[int, dict[str, Any]], Any]:
    """A ``put`` for :class:`StatePost` that writes each state's tables to a file in
    ``folder`` (the workers' handle is its path)."""

    def put(n: int, tables: dict[str, Any]) -> str:
        path = folder / f"state-{n}.pickle"
        with path.open("wb") as f:
            pickle.dump(tables, f, protocol=pickle.HIGHEST_PROTOCOL)
        return str(path)

    return put


def read_file(path: str) -> dict[str, Any]:
    """The tables :func:`files` wrote to ``path`` (written by this run's own process)."""
    with open(path, "rb") as f:
        tables: dict[str, Any] = pickle.load(f)
    return tables


# In a worker: the tables fetched so far, most recently used last.
_OPENED: OrderedDict[Any, dict[str, Any]] = OrderedDict()


def opened(parcel: Parcel, fetch: Callable[[Any], dict[str, Any]]) -> Task:
    """The task of ``parcel``, its tables fetched (``fetch(handle)``) once per worker."""
    if parcel.where is None:
        return parcel.task
    tables = _OPENED.get(parcel.where)
    if tables is not None:
        _OPENED.move_to_end(parcel.where)
        return _with_tables(parcel.task, tables)
    tables = _OPENED[parcel.where] = fetch(parcel.where)
    if len(_OPENED) > KEEP:
        _OPENED.popitem(last=False)
    task = _with_tables(parcel.task, tables)
    if sum(len(t) for t in tables.values()) >= LARGE_STATE_ROWS:
        # Read it now (the checks' own reads are then copies) and keep it out of full
        # collections, which would walk every row each time (graphgen/heap.py).
        try:
            State.from_dict(task.initial_state)
        except ValueError:
            return task  # a malformed state: the checks say so
        refreeze()
    return task


def returned(task: Task, got: Task | str) -> Task | str | Parcel:
    """A worker's outcome for ``task`` (as :func:`opened` gave it) to send back: a task
    whose tables are still the ones it came with goes without them."""
    tables = task.initial_state.get("tables")
    if (
        isinstance(got, Task)
        and isinstance(tables, dict)
        and got.initial_state.get("tables") is tables
    ):
        return Parcel(_without_tables(got))
    return got
