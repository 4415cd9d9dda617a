"""The adversarial baselines: echo, hedger and greedy (and noop as the floor)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console
from typer.testing import CliRunner

import graphgen.cli as cli
from graphgen import pipeline as pl
from graphgen.domains import load_builtin
from graphgen.envs.agent import greedy_orders
from graphgen.tasks.model import Task
from graphgen.tasks.taskset import read_taskset

runner = CliRunner()


@pytest.fixture(scope="module")
def mock_set(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[Task]]:
    path = tmp_path_factory.mktemp("baselines") / "mock.jsonl"
    pl.generate("mock", 30, pl.Options(seed=5, prove=False), output=path)
    return path, read_taskset(path)[1]


@pytest.mark.parametrize("agent", ["echo", "noop"])
def test_echo_and_noop_solve_nothing(mock_set: tuple[Path, list[Task]], agent: str) -> None:
    res = pl.evaluate(mock_set[0], agent)
    assert len(res.episodes) == 30 and res.success_rate == 0.0
    assert all(e.calls == 0 for e in res.episodes)


def test_echo_answers_with_the_instruction(mock_set: tuple[Path, list[Task]]) -> None:
    path, tasks = mock_set
    res = pl.evaluate(path, "echo", limit=3)
    for episode, task in zip(res.episodes, tasks, strict=False):
        assert episode.messages[-1] == {"role": "assistant", "content": task.instruction}


def _two_independent_writes(tasks: list[Task]) -> Task:
    return next(t for t in tasks if {"deposit", "lock_account"} <= {c.tool for c in t.chain})


def test_writes_that_work_out_in_one_order_are_asked_in_that_order(
    mock_set: tuple[Path, list[Task]],
) -> None:
    """Locking the account first makes the deposit fail, so the instruction states the
    order ("First, ... Then ...") and the task is marked ``ordered``."""
    task = _two_independent_writes(mock_set[1])
    tools = [c.tool for c in task.chain if c.tool in ("deposit", "lock_account")]
    assert tools == ["deposit", "lock_account"] and task.ordered
    assert task.instruction.count("First, ") == 1
    assert any(w in task.instruction for w in ("Then ", "After that, "))


def _loose_file(path: Path, task: Task, tmp: Path) -> Path:
    """A one-task file holding ``task`` with its stated order taken away (a task the
    gate would reject as ``order_dependent``)."""
    out = tmp / "loose.jsonl"
    header = path.read_text().splitlines()[0]
    out.write_text(header + "\n" + task.model_copy(update={"ordered": False}).model_dump_json())
    return out


def test_greedy_runs_every_permitted_order(
    mock_set: tuple[Path, list[Task]], tmp_path: Path
) -> None:
    path, tasks = mock_set
    task = _two_independent_writes(tasks)
    res = pl.evaluate(path, "greedy")
    episode = next(e for e in res.episodes if e.task_id == task.id)
    # As generated, the order is stated: greedy plays it and passes.
    assert len(episode.orders) == 1 and episode.success
    assert all(e.success for e in res.episodes)
    # Without the stated order both orders are permitted, and locking first fails.
    episode = pl.evaluate(_loose_file(path, task, tmp_path), "greedy").episodes[0]
    orders = {o["order"].replace("#", " ").split(" ")[0]: o for o in episode.orders}
    assert len(episode.orders) == 2 and set(orders) == {"deposit", "lock_account"}
    assert orders["deposit"]["success"] and not orders["lock_account"]["success"]
    assert orders["lock_account"]["failed"]
    assert not episode.success  # a task passes only if every order does


def test_greedy_plays_the_gates_permitted_orders_and_caps_them(
    mock_set: tuple[Path, list[Task]],
) -> None:
    task = _two_independent_writes(mock_set[1])
    domain = load_builtin("mock")
    stated, capped = greedy_orders(domain, task)
    assert stated == [list(range(len(task.chain)))] and not capped
    loose = task.model_copy(update={"ordered": False})
    orders, capped = greedy_orders(domain, loose)
    assert len(orders) == 2 and not capped
    assert orders[0] == list(range(len(task.chain)))  # the reference order first
    writes = [
        [task.chain[i].tool for i in o if domain.tools[task.chain[i].tool].is_write] for o in orders
    ]
    assert sorted(map(tuple, writes)) == [("deposit", "lock_account"), ("lock_account", "deposit")]
    one, capped = greedy_orders(domain, loose, cap=1)
    assert one == orders[:1] and capped


def _valid_for(schema: dict[str, Any], args: dict[str, Any]) -> bool:
    params = schema["function"]["parameters"]
    if set(args) != set(params["required"]):
        return False
    for name, value in args.items():
        prop = params["properties"][name]
        kind = {"string": str, "integer": int, "boolean": bool}[prop["type"]]
        if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            return False
        if "enum" in prop and value not in prop["enum"]:
            return False
    return True


def test_hedger_makes_well_formed_reads_and_names_every_enum_member(
    mock_set: tuple[Path, list[Task]],
) -> None:
    path, _ = mock_set
    env = pl.make_env("mock")
    schemas = {t["function"]["name"]: t for t in env.tools}
    reads = {t.name for t in pl.load_domain_ref("mock").read_tools}
    res = pl.evaluate(path, "hedger")
    assert all(e.calls <= 30 for e in res.episodes)
    assert any(e.calls > 1 for e in res.episodes)
    for episode in res.episodes:
        calls = [c for m in episode.messages for c in m.get("tool_calls") or []]
        *made, last = calls
        for c in made:
            name, args = c["function"]["name"], json.loads(c["function"]["arguments"])
            assert name in reads and _valid_for(schemas[name], args), (name, args)
        # Every observation is a result or an error the environment reports.
        for m in episode.messages:
            if m["role"] == "tool" and m["content"] != "Episode finished.":
                assert m["content"].startswith("Error:") or json.loads(m["content"]) is not None
        answer = json.loads(last["function"]["arguments"])["answer"]
        assert last["function"]["name"] == "respond"
        assert "active" in answer and "locked" in answer
    # Naming everything it saw solves no action task.
    assert not any(e.success for e in res.episodes if e.kind == "action")


def test_eval_command_reports_greedy_orders(
    mock_set: tuple[Path, list[Task]], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(cli, "out", Console(width=2000))
    loose = _loose_file(mock_set[0], _two_independent_writes(mock_set[1]), tmp_path)
    res = runner.invoke(cli.app, ["eval", str(loose), "--model", "greedy"])
    assert res.exit_code == 0, res.output
    assert "allow more than one write order" in res.output
    assert "fails with lock_account" in res.output
    help_text = runner.invoke(cli.app, ["eval", "--help"]).output
    for name in ("echo", "hedger", "greedy"):
        assert name in help_text
