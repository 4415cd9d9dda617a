"""Compiled environments end to end: freshness, isolation, equivalence on task chains,
the agent loop against a real local HTTP server, and the baselines."""

from __future__ import annotations

import json
import shutil
import subprocess
import venv
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from graphgen.cli import app
from graphgen.domains import builtin_names, load_builtin
from graphgen.envs.agent import NoopAgent, OracleAgent, RandomAgent, env_task, run_episode
from graphgen.envs.load import BUILTIN_DIR, builtin_is_fresh, load_env_module
from graphgen.envs.schemas import FINISH_NAME
from graphgen.errors import ToolError
from graphgen.interp import call_tool
from graphgen.state import State
from graphgen.tasks.model import Task
from graphgen.tasks.taskset import generate, write_taskset
from tests.openai_stub import StubServer

BUILTINS = builtin_names()


def _answer_values(task: Task) -> list[Any]:
    """What a truthful answer says: the answer values, or a refusal's first reason."""
    return [*task.goal.answer, *(task.goal.answer_any[0] if task.goal.answer_any else [])]


@pytest.fixture(scope="module")
def tasksets() -> dict[str, list[Task]]:
    return {name: generate(load_builtin(name), 40, 11).tasks for name in BUILTINS}


@pytest.mark.parametrize("name", BUILTINS)
def test_committed_builtin_package_is_fresh(name: str) -> None:
    """envs/builtin/<name> must be what the compiler emits now (regenerate with
    `graphgen compile <name> -o envs/builtin/<name>`)."""
    assert builtin_is_fresh(load_builtin(name)), f"envs/builtin/{name} is stale"


@pytest.mark.parametrize("edited", ["tools.py", "environment.py", "runtime.py"])
def test_staleness_is_detected(
    edited: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A hand edit to a generated file or to a verbatim copy is caught."""
    stale = tmp_path / "builtin"
    shutil.copytree(BUILTIN_DIR, stale)
    (stale / "mock" / edited).write_text("# edited by hand\n", encoding="utf-8")
    monkeypatch.setattr("graphgen.envs.load.BUILTIN_DIR", stale)
    assert not builtin_is_fresh(load_builtin("mock"))


@pytest.mark.slow
def test_imports_in_a_fresh_venv_with_only_pydantic(tmp_path: Path) -> None:
    """A new virtual environment whose only third-party packages are pydantic and what
    pydantic itself needs can import and run every built-in package."""
    import annotated_types
    import pydantic
    import pydantic_core
    import typing_extensions
    import typing_inspection

    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=False).create(env_dir)
    site = tmp_path / "site"
    site.mkdir()
    for mod in (pydantic, pydantic_core, annotated_types, typing_inspection):
        src = Path(mod.__file__ or "").parent
        shutil.copytree(src, site / src.name)
    shutil.copy(typing_extensions.__file__ or "", site)
    pkgs = tmp_path / "pkgs"
    shutil.copytree(BUILTIN_DIR, pkgs, ignore=shutil.ignore_patterns("__pycache__"))
    code = (
        "import importlib, json, sys\n"
        "for name in sys.argv[1:]:\n"
        "    pkg = importlib.import_module(name)\n"
        "    env = pkg.Environment()\n"
        "    task = {'initial_state': pkg.Db().to_state(), 'instruction': 'hi'}\n"
        "    env.reset(options={'task': task})\n"
        "    finish = pkg.FINISH_TOOL['function']['name']\n"
        "    obs, r, done, _, info = env.step({'name': finish, 'arguments': {'answer': 'x'}})\n"
        "    print(name, len(pkg.TOOLS), done, r)\n"
        "assert 'graphgen' not in sys.modules and 'z3' not in sys.modules\n"
    )
    py = env_dir / "bin" / "python"
    res = subprocess.run(
        [str(py), "-c", code, *BUILTINS],
        capture_output=True,
        text=True,
        env={"PYTHONPATH": f"{pkgs}:{site}"},
        timeout=120,
        check=False,
    )
    assert res.returncode == 0, res.stderr
    lines = res.stdout.splitlines()
    assert [ln.split()[0] for ln in lines] == BUILTINS
    assert all(ln.endswith("True 1.0") for ln in lines)  # nothing to do, nothing done


def _run_interp(task: Task, st: State) -> list[str]:
    dom = load_builtin(task.domain)
    out = []
    for c in task.chain:
        try:
            res = call_tool(dom, st, c.tool, dict(c.args))
        except ToolError as exc:
            out.append(f"Error: {exc.message}")
        else:
            out.append(res if isinstance(res, str) else json.dumps(res, ensure_ascii=False))
    return out


@pytest.mark.parametrize("name", BUILTINS)
def test_reference_chains_agree_with_interpreter(
    name: str, tasksets: dict[str, list[Task]]
) -> None:
    """Every reference chain gives the same observations and final state in the compiled
    environment as in the interpreter, and the environment grades it a success."""
    env = load_env_module(load_builtin(name)).Environment()
    for task in tasksets[name]:
        st = State.from_dict(task.initial_state)
        expected = _run_interp(task, st)
        env.reset(options={"task": env_task(task)})
        got = [env.step({"name": c.tool, "arguments": json.dumps(c.args)})[0] for c in task.chain]
        assert got == expected, task.id
        assert env.db.to_state()["tables"] == st.to_dict()["tables"], task.id
        answer = " ".join(str(v) for v in _answer_values(task))
        _, reward, terminated, _, info = env.step(
            {"name": FINISH_NAME, "arguments": {"answer": answer}}
        )
        assert terminated and reward == 1.0, (task.id, info["grade"])


@pytest.mark.parametrize("name", BUILTINS)
def test_baselines(name: str, tasksets: dict[str, list[Task]]) -> None:
    """oracle solves everything; noop and random solve nothing (refusals need a reason)."""
    env = load_env_module(load_builtin(name)).Environment(max_steps=60)
    tasks = tasksets[name]
    # Mock builds no refusal: each one a hedge would pass (tests/test_taskgen.py).
    kinds = {"action", "information"} | (set() if name == "mock" else {"refusal"})
    assert {t.kind for t in tasks} == kinds
    oracle = [run_episode(env, t, OracleAgent()).success for t in tasks]
    noop = [run_episode(env, t, NoopAgent()).success for t in tasks]
    rand = [run_episode(env, t, RandomAgent(seed=1)).success for t in tasks]
    assert all(oracle)
    assert not any(noop)
    assert sum(rand) <= len(tasks) // 20  # "approximately zero": at most 5 %


def _script_for(tasks: list[Task]) -> Any:
    """Follow the reference chain, then make four malformed calls, then answer."""
    by_instruction = {t.instruction: t for t in tasks}

    def script(body: dict[str, Any]) -> Any:
        msgs = body["messages"]
        assert msgs[0]["role"] == "system" and FINISH_NAME in json.dumps(body["tools"])
        task = by_instruction[msgs[1]["content"]]
        done = sum(1 for m in msgs if m["role"] == "tool")
        chain = [(c.tool, json.dumps(c.args)) for c in task.chain]
        first_tool = task.chain[0].tool if task.chain else FINISH_NAME
        bad = [
            ("nope_tool", "{}"),
            (first_tool, "{not json"),
            (first_tool, json.dumps({"zzz": 1})),
            (first_tool, "{}"),
        ]
        plan = chain + bad
        if done < len(plan):
            return [plan[done]]
        return "The values: " + ", ".join(str(v) for v in _answer_values(task))

    return script


def test_eval_command_against_local_openai_server(tmp_path: Path) -> None:
    """`graphgen eval` through the real openai client and HTTP on 127.0.0.1."""
    res = generate(load_builtin("mock"), 12, 5)
    path = tmp_path / "mock.jsonl"
    write_taskset(path, res.manifest, res.tasks)
    traj = tmp_path / "traj.jsonl"
    with StubServer(_script_for(res.tasks)) as srv:
        out = CliRunner().invoke(
            app,
            [
                "eval",
                str(path),
                "--model",
                "stub-model",
                "--base-url",
                srv.base_url,
                "--api-key-env",
                "GRAPHGEN_TEST_KEY",
                "--trajectories",
                str(traj),
            ],
        )
        assert out.exit_code == 0, out.output
        assert len(srv.requests) >= sum(len(t.chain) + 5 for t in res.tasks)
        assert all(r["model"] == "stub-model" for r in srv.requests)
    eps = [json.loads(line) for line in traj.read_text().splitlines()]
    assert len(eps) == len(res.tasks)
    for ep, task in zip(eps, res.tasks, strict=True):
        assert ep["success"], (task.id, ep["grade"])
        assert ep["invalid_calls"] == 4 and ep["calls"] == len(task.chain) + 4
        tool_obs = [m["content"] for m in ep["messages"] if m["role"] == "tool"]
        assert not any(o.startswith("Error") for o in tool_obs[: len(task.chain)])
        bad = tool_obs[len(task.chain) :]
        assert bad[0].startswith("Error: unknown tool 'nope_tool'")
        assert "not valid JSON" in bad[1]
        assert "unknown argument" in bad[2]
        assert "missing argument" in bad[3] or not task.chain
    assert "100.0%" in out.output


def test_model_failure_is_recorded_not_raised(tmp_path: Path) -> None:
    """A server error for every request ends each episode as a failure with the error."""
    res = generate(load_builtin("mock"), 3, 9)

    def broken(body: dict[str, Any]) -> Any:
        raise RuntimeError("model exploded")

    env = load_env_module(load_builtin("mock")).Environment()
    from graphgen.envs.agent import OpenAIAgent

    with StubServer(broken) as srv:
        agent = OpenAIAgent("m", srv.base_url, "k", max_retries=0)
        eps = [run_episode(env, t, agent) for t in res.tasks]
    assert all(not e.success and e.error and "500" in e.error for e in eps)
