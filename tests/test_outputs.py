"""Output files: atomic writes, ``-o`` checked before any work, ``--force``, and the
compile folder rules (graphgen/files.py, graphgen/envs/codegen.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from graphgen import pipeline as pl
from graphgen.cli import app
from graphgen.envs.codegen import BUILD_MARKER
from graphgen.files import OutputError, check_output_file, write_atomic
from graphgen.journal import journal_path

runner = CliRunner()


def _said(res: Result) -> str:
    """The command's output with rich's line wrapping undone."""
    return " ".join(res.output.split())


def _leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(".tmp"))


def test_write_atomic_keeps_the_old_file_when_the_writer_fails(tmp_path: Path) -> None:
    target = tmp_path / "t.jsonl"
    target.write_text("old\n", encoding="utf-8")

    class Boom(Exception):
        pass

    with pytest.raises(Boom):
        from graphgen.files import atomic_path

        with atomic_path(target) as tmp:
            tmp.write_text("half", encoding="utf-8")
            raise Boom
    assert target.read_text(encoding="utf-8") == "old\n"
    assert _leftovers(tmp_path) == []


def test_a_file_size_limit_leaves_the_previous_task_set_intact(tmp_path: Path) -> None:
    """The kernel stops the write half-way (RLIMIT_FSIZE, as ``ulimit -f`` does): the
    command fails and the earlier task set is the same bytes, with no temporary left."""
    target = tmp_path / "tasks.jsonl"
    res = runner.invoke(app, ["generate", "mock", "-n", "12", "--no-prove", "-o", str(target)])
    assert res.exit_code == 0, res.output
    before = target.read_bytes()
    assert len(before) > 8000
    code = (
        "import resource, signal, sys\n"
        "signal.signal(signal.SIGXFSZ, signal.SIG_IGN)\n"  # EFBIG instead of a kill
        "resource.setrlimit(resource.RLIMIT_FSIZE, (4000, 4000))\n"
        "from graphgen.tasks.taskset import read_taskset, write_taskset\n"
        "m, tasks = read_taskset(sys.argv[1])\n"
        "write_taskset(sys.argv[1], m, tasks[:1] + tasks)\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code, str(target)], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode != 0 and "File too large" in proc.stderr
    assert target.read_bytes() == before
    assert _leftovers(tmp_path) == []


def test_generate_refuses_an_existing_file_without_force(tmp_path: Path) -> None:
    target = tmp_path / "t.jsonl"
    target.write_text("mine\n", encoding="utf-8")
    res = runner.invoke(app, ["generate", "mock", "-n", "2", "--no-prove", "-o", str(target)])
    assert res.exit_code == 2
    assert "already exists" in _said(res) and "--force" in _said(res)
    assert target.read_text(encoding="utf-8") == "mine\n"
    res = runner.invoke(
        app, ["generate", "mock", "-n", "2", "--no-prove", "-o", str(target), "--force"]
    )
    assert res.exit_code == 0, res.output
    assert json.loads(target.read_text(encoding="utf-8").splitlines()[0])["manifest"]


def test_output_is_checked_before_anything_is_computed(tmp_path: Path) -> None:
    """The path is refused before the domain is even looked up: a bad domain name
    behind a bad -o reports the -o."""
    existing = tmp_path / "t.jsonl"
    existing.write_text("x\n", encoding="utf-8")
    with pytest.raises(OutputError, match="already exists"):
        pl.generate("no-such-domain", 5, output=existing)
    with pytest.raises(OutputError, match="is a folder"):
        pl.generate("no-such-domain", 5, output=tmp_path)
    res = runner.invoke(app, ["generate", "mock", "-n", "2", "-o", str(tmp_path)])
    assert res.exit_code == 2 and "is a folder" in _said(res)


def test_output_under_a_file_or_an_unwritable_folder_is_refused(tmp_path: Path) -> None:
    blocker = tmp_path / "f"
    blocker.write_text("", encoding="utf-8")
    with pytest.raises(OutputError, match="is a file, not a folder"):
        check_output_file(blocker / "sub" / "t.jsonl")
    if os.geteuid() != 0:  # root may write anywhere
        locked = tmp_path / "locked"
        locked.mkdir(mode=0o500)
        with pytest.raises(OutputError, match="no permission"):
            check_output_file(locked / "t.jsonl")


def test_graph_refuses_to_overwrite_without_force(tmp_path: Path) -> None:
    target = tmp_path / "g.json"
    assert runner.invoke(app, ["graph", "mock", "-o", str(target)]).exit_code == 0
    first = target.read_bytes()
    write_atomic(target, "hand-made")
    res = runner.invoke(app, ["graph", "mock", "-o", str(target)])
    assert res.exit_code == 2 and "--force" in _said(res)
    assert target.read_text(encoding="utf-8") == "hand-made"
    assert runner.invoke(app, ["graph", "mock", "-o", str(target), "--force"]).exit_code == 0
    assert target.read_bytes() == first


def test_a_leftover_journal_needs_resume_or_force(tmp_path: Path) -> None:
    target = tmp_path / "t.jsonl"
    journal_path(target).write_text('{"journal":{}}\n', encoding="utf-8")
    res = runner.invoke(app, ["generate", "mock", "-n", "2", "--no-prove", "-o", str(target)])
    assert res.exit_code == 2 and "--resume" in _said(res)
    res = runner.invoke(
        app, ["generate", "mock", "-n", "2", "--no-prove", "-o", str(target), "--force"]
    )
    assert res.exit_code == 0, res.output
    assert target.exists() and not journal_path(target).exists()


def test_generate_rejects_a_count_below_one(tmp_path: Path) -> None:
    for n in ("0", "-5"):
        res = runner.invoke(app, ["generate", "mock", "-n", n, "-o", str(tmp_path / "t.jsonl")])
        assert res.exit_code == 2 and "-n" in _said(res)
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(pl.PipelineError, match="at least 1"):
        pl.generate("mock", 0)


# ------------------------------------------------------------------ compile -o DIR


def _compile(out: Path, *extra: str, domain: str = "mock") -> tuple[int, str]:
    res = runner.invoke(app, ["compile", domain, "-o", str(out), *extra])
    return res.exit_code, _said(res)


def test_compile_refuses_a_foreign_non_empty_folder(tmp_path: Path) -> None:
    out = tmp_path / "pkg"
    out.mkdir()
    (out / "notes.md").write_text("mine", encoding="utf-8")
    code, text = _compile(out)
    assert code == 2 and "notes.md" in text and "--force" in text
    assert sorted(p.name for p in out.iterdir()) == ["notes.md"]
    code, text = _compile(out, "--force")
    assert code == 0, text
    assert not (out / "notes.md").exists() and (out / "tools.py").is_file()


def test_compile_replaces_its_own_build_whole(tmp_path: Path) -> None:
    """A file an earlier build wrote and this one does not is gone afterwards."""
    out = tmp_path / "pkg"
    assert _compile(out)[0] == 0
    marker = json.loads((out / BUILD_MARKER).read_text(encoding="utf-8"))
    assert marker["package"] == "mock" and "tools.py" in marker["files"]
    # As if an older compiler had written one more file.
    (out / "legacy.py").write_text("x = 1\n", encoding="utf-8")
    import hashlib

    marker["files"]["legacy.py"] = hashlib.sha256(b"x = 1\n").hexdigest()
    (out / BUILD_MARKER).write_text(json.dumps(marker), encoding="utf-8")
    (out / "__pycache__").mkdir()  # byte code of an import does not make it foreign
    (out / "__pycache__" / "tools.cpython.pyc").write_bytes(b"\0")
    code, text = _compile(out)
    assert code == 0, text
    assert not (out / "legacy.py").exists() and not (out / "__pycache__").exists()
    assert sorted(json.loads((out / BUILD_MARKER).read_text(encoding="utf-8"))["files"]) == sorted(
        p.name for p in out.iterdir() if p.name != BUILD_MARKER
    )
    assert [p.name for p in tmp_path.iterdir()] == ["pkg"]  # no temporary folder left


def test_compile_refuses_an_edited_build_and_another_package(tmp_path: Path) -> None:
    out = tmp_path / "pkg"
    assert _compile(out)[0] == 0
    tools = out / "tools.py"
    tools.write_text(tools.read_text(encoding="utf-8") + "# my fix\n", encoding="utf-8")
    code, text = _compile(out)
    assert code == 2 and "tools.py" in text
    assert tools.read_text(encoding="utf-8").endswith("# my fix\n")
    other = tmp_path / "other"
    assert _compile(other, domain="retail")[0] == 0
    code, text = _compile(other)
    assert code == 2 and "'mock'" in text
    assert "retail" in (other / "__init__.py").read_text(encoding="utf-8")


def test_compile_force_never_replaces_the_current_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "keep.txt").write_text("x", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    code, text = _compile(Path("."), "--force")
    assert code == 2 and "current folder" in text
    assert (tmp_path / "keep.txt").exists()


def test_run_refuses_to_overwrite_an_earlier_run(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "tasks.jsonl").write_text("mine\n", encoding="utf-8")
    res = runner.invoke(app, ["run", "mock", "-n", "2", "-o", str(out), "-j", "1"])
    assert res.exit_code == 2 and "tasks.jsonl" in _said(res)
    assert sorted(p.name for p in out.iterdir()) == ["tasks.jsonl"]


def test_verify_report_never_replaces_the_task_set(tmp_path: Path) -> None:
    tasks = tmp_path / "t.jsonl"
    res = runner.invoke(app, ["generate", "mock", "-n", "2", "--no-prove", "-o", str(tasks)])
    assert res.exit_code == 0, res.output
    before = tasks.read_bytes()
    res = runner.invoke(app, ["verify", str(tasks), "-o", str(tasks), "--force"])
    assert res.exit_code == 2 and "would replace the task set" in _said(res)
    assert tasks.read_bytes() == before
    res = runner.invoke(app, ["verify", str(tasks), "--resume"])
    assert res.exit_code == 2 and "-o" in _said(res)
