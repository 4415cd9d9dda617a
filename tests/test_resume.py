"""Journaled, resumable ``generate`` and ``verify``: a stopped run continues from its
journal without redoing finished work and ends with the bytes of an uninterrupted run;
no worker outlives a killed parent (graphgen/journal.py, graphgen/processes.py)."""

from __future__ import annotations

import hashlib
import os
import random
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, SerializerFunctionWrapHandler, model_serializer
from pydantic_core import PydanticSerializationError

from graphgen import pipeline as pl
from graphgen.domain import Domain
from graphgen.domains import load_builtin
from graphgen.files import OutputError
from graphgen.journal import Journal, JournalMismatch, journal_path
from graphgen.processes import Interrupted, as_interrupted, stop_on_signals
from graphgen.tasks.model import Task
from graphgen.tasks.taskset import generate as generate_tasks
from graphgen.tasks.taskset import taskset_text

# ------------------------------------------------------------------ the journal file


def test_a_cut_short_last_line_is_dropped_on_resume(tmp_path: Path) -> None:
    path = tmp_path / "r.partial"
    j = Journal.create(path, {"seed": 1})
    j.append({"item": 0})
    j.append({"item": 1})
    j.close()
    with path.open("ab") as fh:  # a crash in the middle of the third line
        fh.write(b'{"item": 2, "na')
    j, done = Journal.resume(path, {"seed": 1})
    assert done == [{"item": 0}, {"item": 1}]
    j.append({"item": 2})
    j.close()
    assert path.read_bytes().endswith(b'{"item":1}\n{"item":2}\n')


def test_a_journal_in_use_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "r.partial"
    first = Journal.create(path, {"seed": 1})
    with pytest.raises(OutputError, match="another graphgen run is writing"):
        Journal.resume(path, {"seed": 1})
    with pytest.raises(OutputError, match="another graphgen run is writing"):
        Journal.create(path, {"seed": 1})
    first.append({"item": 0})
    first.close()
    assert Journal.resume(path, {"seed": 1})[1] == [{"item": 0}]


def test_a_journal_of_another_run_is_refused_naming_the_difference(tmp_path: Path) -> None:
    path = tmp_path / "r.partial"
    Journal.create(path, {"seed": 1, "n": 5}).close()
    with pytest.raises(JournalMismatch, match=r"seed: 1 there, 2 now") as info:
        Journal.resume(path, {"seed": 2, "n": 5})
    assert "n:" not in str(info.value) and "--force" in str(info.value)
    path.write_text("not json\n", encoding="utf-8")
    with pytest.raises(JournalMismatch, match="not a graphgen journal"):
        Journal.resume(path, {"seed": 1})


# ------------------------------------------------------------------ the generator


class _Stop(Exception):
    pass


def _counting_check(calls: list[str], stop_at: int | None = None) -> Callable[..., Task | str]:
    """An acceptance check without z3: rejects a third of the tasks (by instruction
    hash, so the outcome is a function of the task), counts its calls, and raises on
    call ``stop_at`` as a kill would stop the run there."""

    def check(domain: Domain, task: Task) -> Task | str:
        calls.append(task.instruction)
        if stop_at is not None and len(calls) == stop_at:
            raise _Stop
        digest = hashlib.sha256(task.instruction.encode("utf-8")).digest()
        return "not_liked" if digest[0] % 3 == 0 else task

    return check


@pytest.mark.parametrize("stop_at", [6, 19])  # inside the first batch; after a checkpoint
def test_generator_resumes_without_rechecking_finished_candidates(
    tmp_path: Path, stop_at: int
) -> None:
    mock = load_builtin("mock")
    calls: list[str] = []
    # (a third rejected, and mock's few rows repeat requests: room past 6 draws a task)
    whole = generate_tasks(mock, 20, 4, task_checks=[_counting_check(calls)], max_attempts=200)
    assert len(whole.tasks) == 20 and whole.rejected["not_liked"] > 0
    header = {"run": "test"}
    journal = Journal.create(tmp_path / "t.partial", header)
    first: list[str] = []
    with pytest.raises(_Stop):
        generate_tasks(
            mock,
            20,
            4,
            task_checks=[_counting_check(first, stop_at)],
            journal=journal,
            max_attempts=200,
        )
    journal.close()
    journal, done = Journal.resume(tmp_path / "t.partial", header)
    second: list[str] = []
    again = generate_tasks(
        mock,
        20,
        4,
        task_checks=[_counting_check(second)],
        journal=journal,
        done=done,
        max_attempts=200,
    )
    assert taskset_text(again.manifest, again.tasks) == taskset_text(whole.manifest, whole.tasks)
    # Only the candidates not checked before the stop are checked again.
    assert first[:-1] + second == calls


def _stop_after(k: int) -> Callable[[int, int], None]:
    def tick(done: int, total: int) -> None:
        if done >= k:
            raise Interrupted(signal.SIGINT)

    return tick


def test_pipeline_generate_stops_keeps_the_journal_and_resumes(tmp_path: Path) -> None:
    opts = pl.Options(jobs=1, prove=False, seed=2)
    whole = tmp_path / "whole.jsonl"
    pl.generate("mock", 8, opts, output=whole)
    part = tmp_path / "part.jsonl"
    with pytest.raises(Interrupted) as info:
        pl.generate("mock", 8, opts, output=part, progress=_stop_after(3))
    assert "3 finished task(s)" in info.value.detail and "--resume" in info.value.detail
    assert not part.exists() and journal_path(part).exists()
    with pytest.raises(JournalMismatch, match="seed"):
        pl.generate("mock", 8, pl.Options(jobs=1, prove=False, seed=5), output=part, resume=True)
    pl.generate("mock", 8, opts, output=part, resume=True)
    assert part.read_bytes() == whole.read_bytes()
    assert not journal_path(part).exists()


class _SignalsWhileSerialized(BaseModel):
    """Sends SIGINT to this process from inside pydantic's serializer, where the
    signal's exception is wrapped in a ``PydanticSerializationError``."""

    n: int

    @model_serializer(mode="wrap")
    def _send(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        os.kill(os.getpid(), signal.SIGINT)
        data: dict[str, Any] = handler(self)
        return data


def test_a_signal_inside_a_serializer_callback_still_stops_as_interrupted() -> None:
    with stop_on_signals():
        with pytest.raises(PydanticSerializationError) as info:
            _SignalsWhileSerialized(n=1).model_dump()
        stop = as_interrupted(info.value)
    assert stop is not None and stop.signum == signal.SIGINT
    assert stop.__cause__ is info.value
    with stop_on_signals():  # a new block starts with no signal received
        assert as_interrupted(ValueError("x")) is None


def test_generate_stopped_inside_a_serializer_keeps_the_journal_and_resumes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    opts = pl.Options(jobs=1, prove=False, seed=2)
    whole = tmp_path / "whole.jsonl"
    pl.generate("mock", 6, opts, output=whole)
    append = Journal.append
    calls = [0]

    def append_then_signal(self: Journal, record: dict[str, Any]) -> None:
        calls[0] += 1
        if calls[0] == 4:  # the header and three tasks are on disk
            _SignalsWhileSerialized(n=calls[0]).model_dump()
        append(self, record)

    part = tmp_path / "part.jsonl"
    with monkeypatch.context() as m:
        m.setattr(Journal, "append", append_then_signal)
        with pytest.raises(Interrupted) as info:
            pl.generate("mock", 6, opts, output=part)
    assert isinstance(info.value.__cause__, PydanticSerializationError)
    assert "finished task(s) kept in" in info.value.detail
    assert not part.exists() and journal_path(part).exists()
    pl.generate("mock", 6, opts, output=part, resume=True)
    assert part.read_bytes() == whole.read_bytes()


def test_verify_report_resumes_without_rechecking(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tasks = tmp_path / "t.jsonl"
    pl.generate("mock", 4, pl.Options(jobs=1), output=tasks)
    opts = pl.Options(jobs=1)
    whole = tmp_path / "whole.report"
    assert pl.verify_tasks(tasks, options=opts, output=whole).ok
    part = tmp_path / "part.report"
    with pytest.raises(Interrupted):
        pl.verify_tasks(tasks, options=opts, output=part, progress=_stop_after(2))
    seen: list[str] = []
    recheck = pl._recheck_one

    def counting(domain: Domain, timeout_ms: int, task: Task) -> str:
        seen.append(task.id)
        return recheck(domain, timeout_ms, task)

    monkeypatch.setattr(pl, "_recheck_one", counting)
    res = pl.verify_tasks(tasks, options=opts, output=part, resume=True)
    assert res.ok and seen == ["mock-0-00002", "mock-0-00003"]
    assert part.read_bytes() == whole.read_bytes()
    # Another task file behind the same report is refused.
    with pytest.raises(Interrupted):
        pl.verify_tasks(tasks, options=opts, output=part, progress=_stop_after(1), force=True)
    other = tmp_path / "other.jsonl"
    pl.generate("mock", 4, pl.Options(jobs=1, seed=1), output=other)
    with pytest.raises(JournalMismatch, match="tasks_sha256"):
        pl.verify_tasks(other, options=opts, output=part, resume=True)


# ------------------------------------------------------------------ kill tests


def _children(pid: int) -> list[int]:
    """Processes whose parent is ``pid`` (from /proc)."""
    kids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
            kids.append(int(entry.name))
    return kids


def _alive(pid: int) -> bool:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    return "\nState:\tZ" not in status


def _lines(path: Path) -> int:
    try:
        return path.read_bytes().count(b"\n")
    except OSError:
        return 0


def _graphgen(args: list[str], cwd: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "graphgen", *args],
        cwd=cwd,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )


def _kill_and_resume(
    tmp_path: Path, args: list[str], output: Path, sig: int, kill_at: int, jobs: int
) -> dict[str, Any]:
    """Run ``graphgen *args -o output``, send ``sig`` once its journal has ``kill_at``
    lines, check that the exit is clean and no worker is left, then resume."""
    proc = _graphgen([*args, "-o", str(output)], tmp_path)
    journal = journal_path(output)
    deadline = time.monotonic() + 240
    while _lines(journal) < kill_at:
        assert proc.poll() is None, f"finished before line {kill_at}: {proc.stderr}"
        assert time.monotonic() < deadline, "no progress"
        time.sleep(0.005)
    workers = _children(proc.pid)
    if jobs > 1:
        assert len(workers) >= jobs, workers
    proc.send_signal(sig)
    _, errors = proc.communicate(timeout=120)
    deadline = time.monotonic() + 15
    while any(_alive(w) for w in workers) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not [w for w in workers if _alive(w)], "workers outlived their parent"
    assert not output.exists() and journal.exists()
    if sig == signal.SIGKILL:
        assert proc.returncode == -signal.SIGKILL
    else:
        assert proc.returncode == 128 + sig, errors
        assert "--resume" in errors and str(journal.name) in errors.replace("\n", "")
    kept = _lines(journal)
    again = _graphgen([*args, "-o", str(output), "--resume"], tmp_path)
    _, errors = again.communicate(timeout=600)
    assert again.returncode == 0, errors
    assert not journal.exists()
    return {"kept": kept}


@pytest.fixture(scope="module")
def mock100(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A 100-task mock set (proven, 2 workers), made in one uninterrupted run."""
    folder = tmp_path_factory.mktemp("mock100")
    tasks = folder / "tasks.jsonl"
    proc = _graphgen(["generate", "mock", "-n", "100", "-j", "2", "-o", str(tasks)], folder)
    errors = proc.communicate(timeout=600)[1]
    assert proc.returncode == 0, errors
    return tasks


@pytest.fixture(scope="module")
def mock100_report(mock100: Path) -> Path:
    """The verification report of :func:`mock100`, made in one uninterrupted run."""
    report = mock100.parent / "report.jsonl"
    proc = _graphgen(["verify", str(mock100), "-j", "2", "-o", str(report)], mock100.parent)
    errors = proc.communicate(timeout=600)[1]
    assert proc.returncode == 0, errors
    return report


SIGNALS = [signal.SIGINT, signal.SIGTERM, signal.SIGKILL]


@pytest.mark.slow
@pytest.mark.parametrize("sig", SIGNALS, ids=lambda s: signal.Signals(s).name)
def test_generate_killed_and_resumed_equals_an_uninterrupted_run(
    tmp_path: Path, mock100: Path, sig: int
) -> None:
    kill_at = random.Random(f"generate-{sig}").randint(3, 30)
    out = tmp_path / "tasks.jsonl"
    # 100 tasks, so that well over a window of outcomes (32) is still to be proven when
    # the journal reaches kill_at: on a fast machine the run cannot finish between polls.
    args = ["generate", "mock", "-n", "100", "-j", "2"]
    _kill_and_resume(tmp_path, args, out, sig, kill_at, jobs=2)
    assert out.read_bytes() == mock100.read_bytes()


@pytest.mark.slow
@pytest.mark.parametrize("sig", SIGNALS, ids=lambda s: signal.Signals(s).name)
def test_verify_killed_and_resumed_equals_an_uninterrupted_run(
    tmp_path: Path, mock100: Path, mock100_report: Path, sig: int
) -> None:
    # Proofs of mock tasks take a few milliseconds: with at least 80 of the 100 still to
    # check when the journal reaches kill_at, the run cannot end between two polls.
    kill_at = random.Random(f"verify-{sig}").randint(3, 20)
    out = tmp_path / "report.jsonl"
    args = ["verify", str(mock100), "-j", "2"]
    _kill_and_resume(tmp_path, args, out, sig, kill_at, jobs=2)
    assert out.read_bytes() == mock100_report.read_bytes()


@pytest.mark.slow
def test_retail_generate_killed_twice_then_resumed(tmp_path: Path) -> None:
    """A larger domain, stopped twice (the second time while resuming)."""
    args = ["generate", "retail", "-n", "20", "--no-prove", "--seed", "5"]
    whole = tmp_path / "whole.jsonl"
    proc = _graphgen([*args, "-o", str(whole)], tmp_path)
    errors = proc.communicate(timeout=600)[1]
    assert proc.returncode == 0, errors
    out = tmp_path / "tasks.jsonl"
    first = _graphgen([*args, "-o", str(out)], tmp_path)
    journal = journal_path(out)
    # The journal holds one line per outcome (after its header): kill after 7 of the 20
    # tasks, then stop the resumed run after 14.
    while _lines(journal) < 8:
        assert first.poll() is None
        time.sleep(0.02)
    first.kill()
    first.wait(timeout=60)
    _kill_and_resume(tmp_path, [*args, "--resume"], out, signal.SIGTERM, 15, jobs=1)
    assert out.read_bytes() == whole.read_bytes()


def _descendants(pid: int) -> list[int]:
    found = []
    todo = [pid]
    while todo:
        kids = _children(todo.pop())
        found += kids
        todo += kids
    return found


@pytest.mark.parametrize(
    "method",
    ["fork", *(pytest.param(m, marks=pytest.mark.slow) for m in ("forkserver", "spawn"))],
)
def test_no_worker_outlives_a_killed_parent(tmp_path: Path, method: str) -> None:
    """The pool's watchdog, directly: a parent killed with SIGKILL takes its workers,
    whatever the start method (with a fork server the workers' parent is the server)."""
    code = (
        "import multiprocessing, sys, time\n"
        "from graphgen.processes import worker_pool\n"
        "if __name__ == '__main__':\n"
        "    multiprocessing.set_start_method(sys.argv[1])\n"
        "    with worker_pool(2) as pool:\n"
        "        pool.submit(time.sleep, 60), pool.submit(time.sleep, 60)\n"
        "        print('ready', flush=True)\n"
        "        time.sleep(60)\n"
    )
    script = tmp_path / "pool.py"
    script.write_text(code, encoding="utf-8")
    proc = subprocess.Popen(
        [sys.executable, str(script), method], stdout=subprocess.PIPE, text=True, cwd=tmp_path
    )
    assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
    workers = _descendants(proc.pid)
    assert len(workers) >= 2
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    deadline = time.monotonic() + 10
    while any(_alive(w) for w in workers) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not [w for w in workers if _alive(w)]
