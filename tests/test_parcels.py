"""Tasks travel to workers without their initial state's tables (tasks/parcels.py): each
state's tables are sent once, the tasks a worker opens share them, and what comes back
is the task that went, with its own tables."""

from __future__ import annotations

import gc
import pickle
import weakref
from pathlib import Path

import pytest

from graphgen.domains import load_builtin
from graphgen.state import State
from graphgen.tasks import parcels
from graphgen.tasks.expand import GenOptions
from graphgen.tasks.parcels import StatePost, files, opened, read_file, returned
from graphgen.tasks.taskset import generate

MOCK = load_builtin("mock")


def test_each_state_goes_once_and_comes_back_whole(tmp_path: Path) -> None:
    tasks = generate(MOCK, 30, 0, GenOptions(tasks_per_state=12)).tasks
    post = StatePost(files(tmp_path))
    sent = [post.pack(t) for t in tasks]
    assert len(list(tmp_path.iterdir())) == 3  # three states, one file each
    assert all(p.task.initial_state["tables"] == {} for p in sent)
    # across a process boundary, as a pool sends them
    arrived = [pickle.loads(pickle.dumps(p)) for p in sent]
    parcels._OPENED.clear()
    opened_tasks = [opened(p, read_file) for p in arrived]
    assert opened_tasks == tasks
    # the tasks of one state share its tables in the worker: read once
    firsts = {id(t.initial_state["tables"]) for t in opened_tasks}
    assert len(firsts) == 3
    assert State.from_dict(opened_tasks[0].initial_state) == State.from_dict(tasks[0].initial_state)
    # back: a task whose tables did not change travels without them
    for t, o in zip(tasks, opened_tasks, strict=True):
        back = pickle.loads(pickle.dumps(returned(o, o)))
        assert post.unpack(t, back) == t
        assert post.unpack(t, "timeout") == "timeout"
    changed = opened_tasks[0].model_copy(update={"initial_state": {"tables": {}, "counters": {}}})
    assert post.unpack(tasks[0], returned(opened_tasks[0], changed)) == changed


def test_a_worker_keeps_a_large_state_out_of_full_collections(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a small threshold stands for a large state: a mock state holds about ten rows
    monkeypatch.setattr(parcels, "LARGE_STATE_ROWS", 5)
    tasks = generate(MOCK, 4, 0, GenOptions(tasks_per_state=2)).tasks
    post = StatePost(files(tmp_path))
    sent = [post.pack(t) for t in tasks]
    freezes = _count_refreezes(monkeypatch)
    parcels._OPENED.clear()
    try:
        first = opened(sent[0], read_file)
        assert gc.get_freeze_count() > 0
        assert len(freezes) == 1
        # the state the checks read is a copy of the one read (and frozen) already
        kept = State.from_dict(first.initial_state)
        assert kept == State.from_dict(tasks[0].initial_state)
        opened(sent[1], read_file)  # the same state: nothing is read or frozen again
        assert len(freezes) == 1
        # A new state frozen anew: what the worker dropped before is collected first,
        # even in a reference cycle (it would never be while frozen).
        ring: list[object] = []
        ring.append(ring)
        gone = weakref.ref(_Ring(ring))
        opened(sent[2], read_file)
        assert len(freezes) == 2
        assert gone() is None
    finally:
        gc.unfreeze()
        parcels._OPENED.clear()


def test_a_small_state_is_not_frozen(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tasks = generate(MOCK, 1, 0).tasks
    post = StatePost(files(tmp_path))
    freezes = _count_refreezes(monkeypatch)
    parcels._OPENED.clear()
    task = opened(post.pack(tasks[0]), read_file)
    assert task == tasks[0]
    assert freezes == []
    parcels._OPENED.clear()


def _count_refreezes(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """A list that grows by one each time a worker refreezes (the refreeze still runs).

    Refreezes are counted rather than freeze counts compared: a frozen object that loses
    its last reference is freed, so the count may fall between two reads."""
    freezes: list[int] = []
    real = parcels.refreeze

    def counted() -> None:
        freezes.append(1)
        real()

    monkeypatch.setattr(parcels, "refreeze", counted)
    return freezes


class _Ring:
    """An object in a reference cycle: only the cyclic collector frees it."""

    def __init__(self, ring: list[object]) -> None:
        self.me = self
        self.ring = ring
