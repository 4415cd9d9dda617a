"""Tasks travel to workers without their initial state's tables (tasks/parcels.py): each
state's tables are sent once, the tasks a worker opens share them, and what comes back
is the task that went, with its own tables."""

from __future__ import annotations

import pickle
from pathlib import Path

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
