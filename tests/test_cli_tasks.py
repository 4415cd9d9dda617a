"""The ``generate`` and ``show`` commands, through typer's test runner."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

import graphgen.cli as cli
from graphgen.domains import load_builtin
from graphgen.tasks.taskset import generate, read_taskset, write_taskset

runner = CliRunner()
pytestmark = pytest.mark.usefixtures("wide_console")


@pytest.fixture(scope="module")
def mock_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("cli") / "mock.jsonl"
    res = runner.invoke(
        cli.app, ["generate", "mock", "-n", "30", "--seed", "1", "-o", str(out), "--no-prove"]
    )
    assert res.exit_code == 0, res.output
    return out


def test_generate_writes_manifest_and_tasks(mock_file: Path) -> None:
    lines = mock_file.read_text(encoding="utf-8").splitlines()
    assert len(lines) == 31
    head = json.loads(lines[0])["manifest"]
    assert head["accepted"] == 30 and head["seed"] == 1 and head["domain"] == "mock"
    manifest, tasks = read_taskset(mock_file)
    assert [t.id for t in tasks] == [f"mock-1-{i:05d}" for i in range(30)]
    assert manifest.options["max_intents"] == 3


def test_generate_prints_the_summary(tmp_path: Path) -> None:
    out = tmp_path / "m.jsonl"
    res = runner.invoke(
        cli.app,
        [
            "generate",
            "mock",
            "-n",
            "12",
            "--seed",
            "4",
            "-o",
            str(out),
            "--no-prove",
            "--max-intents",
            "1",
        ],
    )
    assert res.exit_code == 0, res.output
    assert "accepted" in res.stdout and "kind action" in res.stdout
    assert f"wrote 12 tasks to {out}" in res.stdout
    manifest, _ = read_taskset(out)
    assert manifest.options["max_intents"] == 1


def test_generate_is_reproducible_through_the_cli(tmp_path: Path, mock_file: Path) -> None:
    again = tmp_path / "again.jsonl"
    res = runner.invoke(
        cli.app, ["generate", "mock", "-n", "30", "--seed", "1", "-o", str(again), "--no-prove"]
    )
    assert res.exit_code == 0
    assert again.read_bytes() == mock_file.read_bytes()


def test_generate_unknown_domain_exits_1(tmp_path: Path) -> None:
    res = runner.invoke(
        cli.app,
        ["generate", "no_such_domain", "-n", "3", "-o", str(tmp_path / "x.jsonl"), "--no-prove"],
    )
    assert res.exit_code == 1
    assert "no_such_domain" in res.output
    assert not (tmp_path / "x.jsonl").exists()


def test_show_lists_tasks(mock_file: Path) -> None:
    _, tasks = read_taskset(mock_file)
    res = runner.invoke(cli.app, ["show", str(mock_file), "--limit", "5"])
    assert res.exit_code == 0, res.output
    assert tasks[0].id in res.stdout and tasks[0].instruction in res.stdout
    assert tasks[4].instruction in res.stdout
    assert tasks[5].id not in res.stdout  # the limit holds


def test_show_one_task(mock_file: Path) -> None:
    _, tasks = read_taskset(mock_file)
    t = tasks[7]
    res = runner.invoke(cli.app, ["show", str(mock_file), "--task", t.id])
    assert res.exit_code == 0, res.output
    assert t.instruction in res.stdout
    assert f"1. {t.chain[0].tool}(" in res.stdout


def test_show_missing_task_exits_1(mock_file: Path) -> None:
    res = runner.invoke(cli.app, ["show", str(mock_file), "--task", "mock-1-99999"])
    assert res.exit_code == 1
    assert "no task 'mock-1-99999'" in res.output


def test_show_bad_file_exits_1_naming_the_line(tmp_path: Path, mock_file: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    lines = mock_file.read_text(encoding="utf-8").splitlines()
    bad.write_text("\n".join([*lines[:2], "{not json", *lines[3:]]) + "\n", encoding="utf-8")
    res = runner.invoke(cli.app, ["show", str(bad)])
    assert res.exit_code == 1
    assert "bad.jsonl:3:" in res.output
    missing = runner.invoke(cli.app, ["show", str(tmp_path / "nope.jsonl")])
    assert missing.exit_code == 1


def test_show_prints_brackets_literally(tmp_path: Path) -> None:
    """Descriptions look like rich markup ("[x.user_id == ...]"); they must not vanish."""
    res = generate(load_builtin("airline"), 20, 3)
    task = next(t for t in res.tasks if t.targets)
    task = task.model_copy(update={"instruction": "[bold]Hi[/bold] " + task.instruction})
    p = tmp_path / "a.jsonl"
    write_taskset(p, res.manifest, [task])
    out = runner.invoke(cli.app, ["show", str(p), "--task", task.id])
    assert out.exit_code == 0, out.output
    assert task.targets[0].description in out.stdout
    assert "[bold]Hi[/bold]" in out.stdout
