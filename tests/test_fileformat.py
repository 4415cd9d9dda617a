"""The compact task-set layout and gzip: same tasks back, fewer bytes, bad files refused."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from graphgen.cli import app
from graphgen.domains import load_builtin
from graphgen.tasks import fileformat
from graphgen.tasks.fileformat import STATE_REF, distinct_states, state_id
from graphgen.tasks.taskset import (
    GenResult,
    TaskSetError,
    generate,
    read_taskset,
    scan_taskset_file,
    write_taskset,
)


@pytest.fixture(scope="module")
def result() -> GenResult:
    return generate(load_builtin("mock"), 12, seed=3)


def _lines(path: Path) -> list[dict[str, object]]:
    return [json.loads(x) for x in path.read_text().splitlines()]


def test_compact_round_trips_and_is_smaller(result: GenResult, tmp_path: Path) -> None:
    plain, compact = tmp_path / "plain.jsonl", tmp_path / "compact.jsonl"
    write_taskset(plain, result.manifest, result.tasks)
    write_taskset(compact, result.manifest, result.tasks, compact=True)
    m1, t1 = read_taskset(plain)
    m2, t2 = read_taskset(compact)
    assert (m1, t1) == (m2, t2) == (result.manifest, result.tasks)
    rows = _lines(compact)
    states = [r for r in rows if set(r) == {"state"}]
    assert len(states) == distinct_states(result.tasks) < len(result.tasks)
    for r in rows[1:]:
        if "id" in r:
            ref = r["initial_state"]
            assert isinstance(ref, dict) and set(ref) == {STATE_REF}
    assert compact.stat().st_size < plain.stat().st_size


def test_each_state_is_written_before_its_first_task(result: GenResult, tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    write_taskset(path, result.manifest, result.tasks, compact=True)
    defined: set[str] = set()
    for r in _lines(path)[1:]:
        if "state" in r:
            entry = r["state"]
            assert isinstance(entry, dict)
            assert entry["id"] == state_id(entry["data"])
            defined.add(entry["id"])
        else:
            ref = r["initial_state"]
            assert isinstance(ref, dict)
            assert ref[STATE_REF] in defined


def test_gzip_is_deterministic_and_read_back(result: GenResult, tmp_path: Path) -> None:
    a, b = tmp_path / "a.jsonl.gz", tmp_path / "sub" / "b.jsonl.gz"
    write_taskset(a, result.manifest, result.tasks, compact=True)
    write_taskset(b, result.manifest, result.tasks, compact=True)
    assert a.read_bytes() == b.read_bytes()  # no name or time in the gzip header
    assert a.read_bytes()[:2] == b"\x1f\x8b"
    assert read_taskset(a)[1] == result.tasks
    # recognised by content, not by name
    c = tmp_path / "c.jsonl"
    c.write_bytes(a.read_bytes())
    assert read_taskset(c)[1] == result.tasks


def test_a_tampered_state_line_is_refused(result: GenResult, tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    write_taskset(path, result.manifest, result.tasks, compact=True)
    rows = path.read_text().splitlines()
    i = next(i for i, r in enumerate(rows) if r.startswith('{"state"'))
    obj = json.loads(rows[i])
    table = next(iter(obj["state"]["data"]["tables"]))
    obj["state"]["data"]["tables"][table] = {}
    rows[i] = json.dumps(obj)
    path.write_text("\n".join(rows) + "\n")
    got = scan_taskset_file(path)
    assert any("does not match its data" in p.message for p in got.problems)
    # the tasks that referred to the refused state are refused too, not run on nothing
    assert any("no earlier line defines" in p.message for p in got.problems)
    assert len(got.tasks) < len(result.tasks)


def test_a_reference_to_an_undefined_state_is_refused(result: GenResult, tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    write_taskset(path, result.manifest, result.tasks, compact=True)
    rows = [r for r in path.read_text().splitlines() if not r.startswith('{"state"')]
    path.write_text("\n".join(rows) + "\n")
    with pytest.raises(TaskSetError, match="no earlier line defines"):
        read_taskset(path)


def test_a_gzip_bomb_and_cut_gzip_are_refused(
    result: GenResult, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "a.jsonl.gz"
    write_taskset(path, result.manifest, result.tasks)
    monkeypatch.setattr(fileformat, "MAX_EXPANDED_BYTES", 1000)
    with pytest.raises(TaskSetError, match="expands past 1000 bytes"):
        read_taskset(path)
    monkeypatch.undo()
    cut = tmp_path / "cut.jsonl.gz"
    cut.write_bytes(path.read_bytes()[:-20])
    with pytest.raises(TaskSetError, match=r"cut short|not valid gzip"):
        read_taskset(cut)
    junk = tmp_path / "junk.jsonl"
    junk.write_bytes(b"\x1f\x8b" + b"garbage" * 10)
    with pytest.raises(TaskSetError, match="not valid gzip"):
        read_taskset(junk)


def test_cli_generate_compact_gzip_then_verify(tmp_path: Path) -> None:
    out = tmp_path / "t.jsonl.gz"
    r = CliRunner().invoke(app, ["generate", "mock", "-n", "4", "--compact", "-o", str(out)])
    assert r.exit_code == 0, r.output
    text = gzip.decompress(out.read_bytes()).decode()
    assert '"$state"' in text
    r = CliRunner().invoke(app, ["verify", str(out)])
    assert r.exit_code == 0, r.output
    assert "ok" in r.output
