"""Scheduling, shards and backends of the generator: the same tasks however the work is
spread (graphgen/tasks/backends.py, graphgen/tasks/shards.py)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from graphgen import pipeline as pl
from graphgen.cli import app
from graphgen.domains import load_builtin
from graphgen.tasks import taskset
from graphgen.tasks.shards import merge, parse_shard, shard_size
from graphgen.tasks.taskset import TaskSetError, generate, read_taskset, write_taskset
from graphgen.tasks.validate import task_fingerprint

OPTS = pl.Options(jobs=1, seed=9)


def _parts(tmp_path: Path, n: int, k: int) -> list[Path]:
    files = []
    for i in range(k):
        f = tmp_path / f"part{i}.jsonl"
        pl.generate("mock", n, OPTS, output=f, shard=(i, k))
        files.append(f)
    return files


def test_parts_merge_into_one_valid_set(tmp_path: Path) -> None:
    files = _parts(tmp_path, 20, 3)
    sizes = [len(read_taskset(f)[1]) for f in files]
    assert sizes == [shard_size(20, i, 3) for i in range(3)] == [7, 7, 6]
    # the parts draw on states of their own: no state is shared between two parts
    states = [
        {json.dumps(t.initial_state, sort_keys=True) for t in read_taskset(f)[1]} for f in files
    ]
    assert not (states[0] & states[1]) and not (states[1] & states[2])
    out = tmp_path / "all.jsonl"
    manifest, tasks = pl.merge(files, out)
    assert [t.id for t in tasks] == [f"mock-9-{i:05d}" for i in range(20)]
    assert manifest.accepted == 20 and sum(manifest.by_kind.values()) == 20
    assert manifest.options["n"] == 20 and manifest.options["shards"] == 3
    assert "shard" not in manifest.options
    assert len({task_fingerprint(t) for t in tasks}) == 20
    # every task passes the checks against its domain once merged
    got = pl.read_tasks(out)[0]
    assert not got.problems and len(got.tasks) == 20
    again = tmp_path / "again.jsonl"
    pl.merge(list(reversed(files)), again)  # the order of the files does not matter
    assert again.read_bytes() == out.read_bytes()


def test_merge_refuses_what_is_not_the_parts_of_one_run(tmp_path: Path) -> None:
    files = _parts(tmp_path, 6, 2)
    parts = [(str(f), *read_taskset(f)) for f in files]
    with pytest.raises(TaskSetError, match=r"part\(s\) \[1\] of 2 are missing"):
        merge(parts[:1])
    with pytest.raises(TaskSetError, match="part 0 is given twice"):
        merge([parts[0], parts[0], parts[1]])
    other = tmp_path / "other.jsonl"
    pl.generate("mock", 3, pl.Options(jobs=1, seed=10), output=other, shard=(1, 2))
    with pytest.raises(TaskSetError, match="seed 10 differs"):
        merge([parts[0], (str(other), *read_taskset(other))])
    whole = tmp_path / "whole.jsonl"
    pl.generate("mock", 3, OPTS, output=whole)
    with pytest.raises(TaskSetError, match="not a part of a sharded run"):
        merge([(str(whole), *read_taskset(whole))])
    three = tmp_path / "three.jsonl"
    pl.generate("mock", 3, OPTS, output=three, shard=(2, 3))
    with pytest.raises(TaskSetError, match="part of a run in 3 parts"):
        merge([parts[0], (str(three), *read_taskset(three))])


def test_shard_text_is_checked() -> None:
    assert parse_shard(" 1 / 4 ") == (1, 4)
    for bad, why in (("4/4", "0 to 3"), ("1", "PART/PARTS"), ("0/0", "1 to 10000")):
        with pytest.raises(ValueError, match=why):
            parse_shard(bad)
    r = CliRunner().invoke(app, ["generate", "mock", "-n", "3", "--shard", "3/3"])
    assert r.exit_code == 2 and "0 to 2" in r.output


def test_cli_generate_parts_and_merge(tmp_path: Path) -> None:
    run = CliRunner()
    for i in range(2):
        r = run.invoke(
            app,
            [
                "generate",
                "mock",
                "-n",
                "5",
                "-s",
                "4",
                "--shard",
                f"{i}/2",
                "-j",
                "1",
                "-o",
                str(tmp_path / f"p{i}.jsonl"),
            ],
        )
        assert r.exit_code == 0, r.output
    r = run.invoke(
        app,
        [
            "merge",
            str(tmp_path / "p0.jsonl"),
            str(tmp_path / "p1.jsonl"),
            "--compact",
            "-o",
            str(tmp_path / "m.jsonl.gz"),
        ],
    )
    assert r.exit_code == 0, r.output
    assert "wrote 5 tasks from 2 parts" in r.output
    assert len(read_taskset(tmp_path / "m.jsonl.gz")[1]) == 5


def test_unknown_backend_is_refused() -> None:
    with pytest.raises(pl.PipelineError, match="one of local, ray"):
        pl.Options(backend="spark")  # type: ignore[arg-type]


def _slow_check(domain, task):  # type: ignore[no-untyped-def]
    """A check whose time varies a lot by task: outcomes must still come in draw order."""
    import time

    time.sleep(0.2 if len(task.instruction) % 3 == 0 else 0.0)
    return task if len(task.instruction) % 4 else "odd_length"


def test_a_slow_check_does_not_change_the_set(tmp_path: Path) -> None:
    mock = load_builtin("mock")
    one = generate(mock, 12, 2, task_checks=[_slow_check], jobs=1)
    two = generate(mock, 12, 2, task_checks=[_slow_check], jobs=3)
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    write_taskset(a, one.manifest, one.tasks)
    write_taskset(b, two.manifest, two.tasks)
    assert a.read_bytes() == b.read_bytes()
    assert one.rejected["odd_length"] >= 1  # the check did reject some


@pytest.mark.slow
def test_ray_backend_gives_the_local_bytes(tmp_path: Path) -> None:
    pytest.importorskip("ray")
    local, ray = tmp_path / "local.jsonl", tmp_path / "ray.jsonl"
    pl.generate("mock", 200, pl.Options(jobs=2, seed=5), output=local)
    pl.generate("mock", 200, pl.Options(jobs=2, seed=5, backend="ray"), output=ray)
    assert len(read_taskset(local)[1]) == 200
    assert ray.read_bytes() == local.read_bytes()


def _napping_check(domain, task):  # type: ignore[no-untyped-def]
    """A check that holds its worker without using CPU, and rejects some tasks."""
    import time

    time.sleep(0.02)
    return task if len(task.instruction) % 4 else "odd_length"


@pytest.mark.parametrize("jobs", [1, 2])
def test_utilisation_counts_every_check_and_adds_up(jobs: int) -> None:
    res = generate(load_builtin("mock"), 12, 2, task_checks=[_napping_check], jobs=jobs)
    use = res.utilisation
    assert use is not None and use.jobs == jobs
    # every candidate checked is counted once, by the process that checked it
    checked = len(res.tasks) + res.rejected["odd_length"]
    assert use.tasks == checked + use.unused and use.draws >= checked
    assert len(use.workers) <= jobs
    assert (set(use.workers) == {os.getpid()}) == (jobs == 1)  # one job: checks run here
    end = use.start + use.wall
    for w in use.workers.values():
        # the nap is held (busy) but uses no CPU
        assert w.busy >= 0.02 * w.tasks and w.cpu < w.busy / 2
        assert use.start <= w.first < w.last <= end and w.busy <= w.last - w.first
    assert 0 < use.cpu_share < use.busy_share <= 1
    assert use.ramp >= 0 and use.tail >= 0
    # CPU and wall clocks tick differently: equal times may read a few µs apart
    assert 0 < use.draw_cpu <= use.draw_wall + 0.001 and use.draw_wall < use.wall
    assert use.wait <= use.wall


def test_the_window_does_not_change_the_set(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What is drawn depends on the place in the draw order, not on the outcomes taken so
    far, so drawing further ahead gives the same set even when checks reject (60 tasks:
    three states of 25, the later ones drawn after rejections)."""
    mock = load_builtin("mock")
    files = []
    for per_job in (1, 64):
        monkeypatch.setattr(taskset, "WINDOW_PER_JOB", per_job)
        got = generate(mock, 60, 2, task_checks=[_napping_check], jobs=1)
        files.append(tmp_path / f"w{per_job}.jsonl")
        write_taskset(files[-1], got.manifest, got.tasks)
    assert got.rejected["odd_length"] >= 1
    assert files[0].read_bytes() == files[1].read_bytes()


def test_rejections_add_up_to_the_attempts_when_they_run_out() -> None:
    """Every attempt is counted once: a dry-run refusal, a check's rejection or a task,
    with the gate's refusals after the last candidate too."""
    mock = load_builtin("mock")
    for jobs in (1, 3):
        got = generate(mock, 50, 2, task_checks=[_slow_check], jobs=jobs, max_attempts=30)
        assert len(got.tasks) < 50
        assert len(got.tasks) + sum(got.manifest.rejected.values()) == 30


_ROLES = "GRAPHGEN_TEST_ROLES"  # candidate fingerprint -> what its check does


def _role_check(domain, task):  # type: ignore[no-untyped-def]
    """``hang``: 30 s; ``spare``: at once, then marks itself done; ``wait``: until the
    spare is done, and a second more: the spare's outcome still has to travel back to
    the run after its mark (on a loaded machine the waiting one could return first)."""
    import time

    roles = json.loads(os.environ[_ROLES])
    done = Path(roles["dir"]) / "spare-done"
    role = roles.get(task_fingerprint(task.model_copy(update={"min_calls": len(task.chain)})))
    if role == "hang":
        time.sleep(30)
    elif role == "wait":
        for _ in range(600):
            if done.exists():
                time.sleep(1.0)
                break
            time.sleep(0.05)
    elif role == "spare":
        done.touch()
    return task


def _set_roles(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, roles: dict[int, str]) -> list[str]:
    """Give the i-th candidate of mock seed 2 its role in _role_check; the fingerprints
    of the first three (the same whatever the checks: none rejects)."""
    stream = [
        task_fingerprint(t.model_copy(update={"min_calls": len(t.chain)}))
        for t in generate(load_builtin("mock"), 3, 2).tasks
    ]
    table = {"dir": str(tmp_path)} | {stream[i]: r for i, r in roles.items()}
    monkeypatch.setenv(_ROLES, json.dumps(table))
    return stream


def test_a_spare_candidate_is_not_waited_for(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With two workers one candidate past the tasks wanted is drawn; the run ends as
    soon as the wanted ones are in, without waiting for it."""
    import time

    assert taskset.spare_candidates(2) == 1
    stream = _set_roles(tmp_path, monkeypatch, {2: "hang"})
    start = time.perf_counter()
    got = generate(load_builtin("mock"), 2, 2, task_checks=[_role_check], jobs=2)
    assert time.perf_counter() - start < 25
    assert [task_fingerprint(t) for t in got.tasks] == stream[:2]
    use = got.utilisation
    assert use is not None and use.draws == 3 and use.tasks == 2 and use.unused == 0


def test_a_spare_checked_before_the_end_counts_as_busy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    stream = _set_roles(tmp_path, monkeypatch, {1: "wait", 2: "spare"})
    got = generate(load_builtin("mock"), 2, 2, task_checks=[_role_check], jobs=2)
    assert [task_fingerprint(t) for t in got.tasks] == stream[:2]
    use = got.utilisation
    assert use is not None and use.tasks == 3 and use.unused == 1
