"""`graphgen eval` as a long run: trials and pass^k, concurrency, usage and cost, a
trajectories file that survives a stop or a kill and resumes, errors recorded per
episode, user simulators, and `graphgen view`.

Every model here is :class:`tests.openai_stub.StubServer` on 127.0.0.1, reached through
the real ``openai`` client.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from math import comb
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console
from typer.testing import CliRunner

from graphgen import cli
from graphgen import pipeline as pl
from graphgen.domains import load_builtin
from graphgen.envs.agent import Episode, run_episode
from graphgen.envs.load import load_env_module
from graphgen.envs.trials import episode_line, pass_hat_k
from graphgen.envs.user import STOP, ScriptedUser
from graphgen.tasks.model import Task
from graphgen.tasks.taskset import generate, write_taskset
from tests.openai_stub import Scripted, StubServer, dead_base_url, hostile_reply

ROOT = Path(__file__).resolve().parents[1]
runner = CliRunner()


def _answer_values(task: Task) -> list[Any]:
    return [*task.goal.answer, *(task.goal.answer_any[0] if task.goal.answer_any else [])]


@pytest.fixture(scope="module")
def mock_tasks(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[Task]]:
    res = generate(load_builtin("mock"), 5, 5)
    path = tmp_path_factory.mktemp("evalruns") / "mock.jsonl"
    write_taskset(path, res.manifest, res.tasks)
    return path, res.tasks


def _task_of(body: dict[str, Any], tasks: list[Task]) -> Task:
    return next(t for t in tasks if t.instruction == body["messages"][1]["content"])


def _solver(tasks: list[Task], delay: float = 0.0) -> Any:
    """A model that follows the reference chain, then says the answer values."""

    def script(body: dict[str, Any]) -> Any:
        task = _task_of(body, tasks)
        done = sum(1 for m in body["messages"] if m["role"] == "tool")
        if done < len(task.chain):
            c = task.chain[done]
            return Scripted([(c.tool, json.dumps(c.args))], delay=delay)
        return Scripted("Here: " + ", ".join(str(v) for v in _answer_values(task)), delay=delay)

    return script


def _eval(path: Path, srv: StubServer, *args: str) -> Any:
    return runner.invoke(
        cli.app,
        ["eval", str(path), "--model", "m", "--base-url", srv.base_url, "--retries", "0", *args],
    )


# ------------------------------------------------------------------ pass^k


def test_pass_hat_k_matches_the_definition() -> None:
    """C(c,k)/C(n,k) averaged over tasks; fewer than k trials leave a task out."""
    runs = {"a": [True, False, True], "b": [False] * 3, "c": [True] * 3}
    assert pass_hat_k(runs, 1) == pytest.approx((2 / 3 + 0 + 1) / 3)
    assert pass_hat_k(runs, 2) == pytest.approx((1 / 3 + 0 + 1) / 3)
    assert pass_hat_k(runs, 3) == pytest.approx((0 + 0 + 1) / 3)
    assert pass_hat_k({"a": [True], "b": [True, True]}, 2) == 1.0
    with pytest.raises(ValueError, match="k >= 1"):
        pass_hat_k(runs, 0)


def test_concurrent_trials_report_hand_computed_pass_hat_k(
    mock_tasks: tuple[Path, list[Task]], tmp_path: Path
) -> None:
    """Task i (of 5) succeeds in exactly i of its 4 trials, in whatever order the 8
    concurrent episodes reach the server. By hand: pass^1 = mean(c/4) = 0.5,
    pass^2 = mean(C(c,2)/6) = (0+0+1+3+6)/30 = 1/3, pass^3 = (0+0+0+1+4)/20 = 1/4,
    pass^4 = 1/5."""
    path, tasks = mock_tasks
    wins = {t.instruction: i for i, t in enumerate(tasks)}
    started: Counter[str] = Counter()
    lock = threading.Lock()
    solve = _solver(tasks)

    def script(body: dict[str, Any]) -> Any:
        msgs = body["messages"]
        instruction = msgs[1]["content"]
        if len(msgs) == 2:  # an episode's first request decides it: win or give up
            with lock:
                started[instruction] += 1
                win = started[instruction] <= wins[instruction]
            if not win:
                return Scripted("Sorry, I cannot help.", delay=0.01)
        return solve(body)

    traj = tmp_path / "t.jsonl"
    with StubServer(script) as srv:
        out = _eval(path, srv, "--concurrency", "8", "--trials", "4", "--trajectories", str(traj))
    assert out.exit_code == 0, out.output
    for k, want in {1: 0.5, 2: 1 / 3, 3: 0.25, 4: 0.2}.items():
        assert f"pass^{k} {want:.3f}" in out.output
    results = json.loads(traj.with_name("t.results.json").read_text())
    assert results["pass_hat_k"] == pytest.approx({"1": 0.5, "2": 1 / 3, "3": 0.25, "4": 0.2})
    assert results["episodes"] == 20 and results["trials"] == 4
    eps = [json.loads(line) for line in traj.read_text().splitlines()]
    # The file is in task order, then trial order, whatever order episodes finished in.
    assert [(e["task_id"], e["trial"]) for e in eps] == [(t.id, k) for t in tasks for k in range(4)]
    for i, t in enumerate(tasks):
        assert sum(e["success"] for e in eps if e["task_id"] == t.id) == i
    # The formula's value for this case, from the per-task counts themselves.
    assert sum(comb(i, 2) / comb(4, 2) for i in range(5)) / 5 == pytest.approx(1 / 3)


def test_usage_cost_temperature_and_extra_body(
    mock_tasks: tuple[Path, list[Task]], tmp_path: Path
) -> None:
    """Tokens are the sum of what the server reported; the cost is priced per million;
    the temperature and the extra body reach every request; --json prints the results."""
    path, tasks = mock_tasks
    with StubServer(_solver(tasks)) as srv:
        out = _eval(
            path,
            srv,
            *("--temperature", "0.7", "--extra-body", '{"top_k": 20, "seed": 3}', "--json"),
            *("--price-in", "2", "--price-out", "8"),
        )
        usages, requests = srv.usages, srv.requests
    assert out.exit_code == 0, out.output
    res = json.loads(out.stdout)
    prompt = sum(u["prompt_tokens"] for u in usages)
    completion = sum(u["completion_tokens"] for u in usages)
    assert prompt > 0 and completion > 0
    assert res["usage"]["agent"] == {
        "requests": len(requests),
        "prompt_tokens": prompt,
        "completion_tokens": completion,
    }
    assert res["cost"]["agent"] == pytest.approx((prompt * 2 + completion * 8) / 1e6)
    assert all(r["temperature"] == 0.7 and r["top_k"] == 20 and r["seed"] == 3 for r in requests)
    assert res["success_rate"] == 1.0


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--extra-body", "[1]"], "JSON object"),
        (["--extra-body", "{x"], "not valid JSON"),
        (["--user", "robot"], "scripted"),
        (["--resume"], "--trajectories"),
        (["--limit", "-1"], "greater than or equal"),
        (["--trials", "0"], "greater than or equal"),
    ],
)
def test_bad_options_are_refused(
    mock_tasks: tuple[Path, list[Task]], args: list[str], message: str
) -> None:
    out = runner.invoke(
        cli.app, ["eval", str(mock_tasks[0]), "--model", "m", "--base-url", "http://x", *args]
    )
    assert out.exit_code == 2
    assert message in " ".join(out.output.replace("│", " ").split())


# ------------------------------------------------------------------ errors


def test_unreachable_server_exits_non_zero(mock_tasks: tuple[Path, list[Task]]) -> None:
    out = runner.invoke(
        cli.app,
        [
            "eval",
            str(mock_tasks[0]),
            "--model",
            "m",
            "--base-url",
            dead_base_url(),
            "--retries",
            "0",
        ],
    )
    assert out.exit_code == 1
    assert "every episode failed" in out.output and "Connection" in out.output


def test_task_timeout_and_request_timeout_end_an_episode_not_the_run(
    mock_tasks: tuple[Path, list[Task]],
) -> None:
    """A hung server costs one request timeout (no retry) or the task's time budget."""
    path, tasks = mock_tasks
    slow = {tasks[0].instruction}

    def script(body: dict[str, Any]) -> Any:
        if body["messages"][1]["content"] in slow:
            return Scripted("late", delay=1.5)
        return _solver(tasks)(body)

    with StubServer(script) as srv:
        began = time.monotonic()
        res = pl.evaluate(
            path,
            "m",
            base_url=srv.base_url,
            run=pl.EvalOptions(timeout=0.3, retries=0, concurrency=2),
        )
        by_request = time.monotonic() - began
        res2 = pl.evaluate(
            path,
            "m",
            base_url=srv.base_url,
            run=pl.EvalOptions(task_timeout=0.4, retries=1, concurrency=2),
        )
    first = res.episodes[0]
    assert not first.success and first.error and "model:" in first.error
    assert "Timeout" in first.error
    assert all(e.success for e in res.episodes[1:])
    assert by_request < 1.4  # the 1.5 s reply was not waited for
    slow_ep = res2.episodes[0]
    assert not slow_ep.success and slow_ep.error
    assert "Timeout" in slow_ep.error or "time budget" in slow_ep.error
    assert all(e.success for e in res2.episodes[1:])


def _env_breaking_script(tasks: list[Task]) -> Any:
    """The replies issue 13 found crashing `eval`, one per task."""
    first = tasks[0].chain[0].tool
    deep = "[" * 5000 + "]" * 5000
    hostile = [
        [(first, '{"email": ' + "9" * 5000 + "}")],  # ValueError in int()
        [(first, '{"email": ' + deep + "}")],  # RecursionError in json
        [(first, json.dumps({"email": ["a", {"b": None}]}))],
        [("", "")],
        [(first, "null")],  # arguments that are not a mapping
    ]

    def script(body: dict[str, Any]) -> Any:
        i = tasks.index(_task_of(body, tasks))
        if len(body["messages"]) == 2:
            return hostile[i % len(hostile)]
        return "I am done."

    return script


def test_replies_that_crashed_eval_are_recorded_per_episode(
    mock_tasks: tuple[Path, list[Task]], tmp_path: Path
) -> None:
    """A 5,000-digit integer, 5,000-deep nesting, a non-mapping action: each episode
    ends (with an error if the environment raised) and the run finishes."""
    path, tasks = mock_tasks
    traj = tmp_path / "t.jsonl"
    with StubServer(_env_breaking_script(tasks)) as srv:
        out = _eval(path, srv, "--trajectories", str(traj))
    assert out.exit_code == 0, out.output
    eps = [json.loads(line) for line in traj.read_text().splitlines()]
    assert len(eps) == len(tasks)
    assert not any(e["success"] for e in eps)
    for e in eps:  # each call was answered, by the environment or by the loop
        ids = [c["id"] for m in e["messages"] for c in m.get("tool_calls") or []]
        answered = [m["tool_call_id"] for m in e["messages"] if m["role"] == "tool"]
        assert ids == answered


def test_name_that_is_a_list_and_other_shapes_survive(mock_tasks: tuple[Path, list[Task]]) -> None:
    """Fields of the wrong JSON type in the reply itself (not only in the arguments)."""
    path, tasks = mock_tasks
    shapes: list[Any] = [
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": 1, "function": {"name": ["x"], "arguments": {"a": 1}}}],
        },
        {"role": "assistant", "content": {"nested": [1, 2]}},
        {"role": "assistant", "tool_calls": "not a list"},
        {"role": "assistant", "content": None, "tool_calls": [{"type": "custom", "custom": {}}]},
        "a message that is a string",
    ]

    def script(body: dict[str, Any]) -> Any:
        i = tasks.index(_task_of(body, tasks))
        return Scripted(message=shapes[i])

    with StubServer(script) as srv:
        res = pl.evaluate(
            path, "m", pl.Options(max_steps=3), base_url=srv.base_url, run=pl.EvalOptions(retries=0)
        )
    assert len(res.episodes) == len(tasks)
    assert not any(e.success for e in res.episodes)
    listed = res.episodes[0].messages[2]["tool_calls"][0]["function"]
    assert listed["name"] == '["x"]' and json.loads(listed["arguments"]) == {"a": 1}
    assert res.episodes[1].messages[2]["content"] == '{"nested": [1, 2]}'


def _fuzz_replies(mock_tasks: tuple[Path, list[Task]], n: int, seed: int) -> None:
    import random

    path, tasks = mock_tasks
    rng = random.Random(seed)
    lock = threading.Lock()

    def script(body: dict[str, Any]) -> Any:
        with lock:
            return hostile_reply(rng)

    steps = 4
    trials = max(1, n // len(tasks))  # every episode makes at least one request
    with StubServer(script) as srv:
        res = pl.evaluate(
            path,
            "m",
            pl.Options(max_steps=steps),
            base_url=srv.base_url,
            run=pl.EvalOptions(trials=trials, retries=0, timeout=10, concurrency=4),
        )
        served = len(srv.requests)
    assert len(res.episodes) == len(tasks) * trials
    assert served >= n
    # Both kinds happened: replies the loop survived as errors, and ones it carried on from.
    assert any(e.error for e in res.episodes) and any(not e.error for e in res.episodes)
    assert any(e.invalid_calls for e in res.episodes)
    for e in res.episodes:
        line = episode_line(e)  # every record can be written and read back
        assert json.loads(line)["task_id"] == e.task_id
        assert e.success is False or e.error is None


def test_hostile_model_replies_never_abort_the_run(mock_tasks: tuple[Path, list[Task]]) -> None:
    _fuzz_replies(mock_tasks, 100, seed=1)


@pytest.mark.slow
def test_hostile_model_replies_never_abort_the_run_full_budget(
    mock_tasks: tuple[Path, list[Task]],
) -> None:
    _fuzz_replies(mock_tasks, 1200, seed=2)


# ------------------------------------------------------------------ stop and resume


def test_stop_then_resume_equals_an_uninterrupted_run(
    mock_tasks: tuple[Path, list[Task]], tmp_path: Path
) -> None:
    """Stopped after a few episodes, then resumed: the finished episodes make no request
    again, and the trajectories and results equal those of a run never stopped."""
    path, tasks = mock_tasks
    run = pl.EvalOptions(trials=2, concurrency=3)
    whole = tmp_path / "whole.jsonl"
    with StubServer(_solver(tasks)) as srv:
        pl.evaluate(path, "m", base_url=srv.base_url, trajectories=whole, run=run)
        per_episode = {t.id: len(t.chain) + 1 for t in tasks}
        assert len(srv.requests) == 2 * sum(per_episode.values())

    part = tmp_path / "part.jsonl"
    stop = threading.Event()

    def tick(done: int, total: int) -> None:
        if done >= 4:
            stop.set()

    with StubServer(_solver(tasks, delay=0.01)) as srv:
        first = pl.evaluate(
            path, "m", base_url=srv.base_url, trajectories=part, run=run, progress=tick, stop=stop
        )
    assert first.interrupted and 4 <= len(first.episodes) < 10
    assert not part.with_name("part.results.json").exists()
    kept = [json.loads(line) for line in part.read_text().splitlines()]
    assert len(kept) == len(first.episodes)
    with StubServer(_solver(tasks)) as srv:
        resumed = pl.evaluate(
            path,
            "m",
            base_url=srv.base_url,
            trajectories=part,
            run=pl.EvalOptions(trials=2, concurrency=3, resume=True),
        )
        asked = Counter(_task_of(b, tasks).id for b in srv.requests)
    left = Counter(t.id for t in tasks for _ in range(2))
    left.subtract(Counter(e["task_id"] for e in kept))
    assert asked == Counter({tid: n * per_episode[tid] for tid, n in left.items() if n})
    assert not resumed.interrupted
    assert part.read_bytes() == whole.read_bytes()
    a = json.loads(part.with_name("part.results.json").read_text())
    b = json.loads(whole.with_name("whole.results.json").read_text())
    for r in (a, b):
        r.pop("tasks_file")
        r.pop("notes")
    assert a == b


def test_resume_drops_a_cut_line_and_refuses_another_agent(
    mock_tasks: tuple[Path, list[Task]], tmp_path: Path
) -> None:
    path, _tasks = mock_tasks
    traj = tmp_path / "t.jsonl"
    pl.evaluate(path, "oracle", trajectories=traj)
    whole = traj.read_bytes()
    lines = whole.splitlines(keepends=True)
    traj.write_bytes(b"".join(lines[:2]) + lines[2][:40])  # killed mid-write
    res = pl.evaluate(path, "oracle", trajectories=traj, run=pl.EvalOptions(resume=True))
    assert traj.read_bytes() == whole
    assert any("unreadable" in n for n in res.notes)
    with pytest.raises(ValueError, match="oracle, not noop"):
        pl.evaluate(path, "noop", trajectories=traj, run=pl.EvalOptions(resume=True))
    out = runner.invoke(
        cli.app, ["eval", str(path), "--model", "noop", "--resume", "--trajectories", str(traj)]
    )
    assert out.exit_code == 1 and "resume a run with the agent that made it" in out.output
    assert traj.read_bytes() == whole  # refused before anything was written


def test_errored_episodes_are_run_again_on_resume(
    mock_tasks: tuple[Path, list[Task]], tmp_path: Path
) -> None:
    """A run against a server that was down resumes into a full run once it is up."""
    path, tasks = mock_tasks
    traj = tmp_path / "t.jsonl"
    down = pl.evaluate(
        path, "m", base_url=dead_base_url(), trajectories=traj, run=pl.EvalOptions(retries=0)
    )
    assert down.all_errored and len(traj.read_text().splitlines()) == len(tasks)
    with StubServer(_solver(tasks)) as srv:
        up = pl.evaluate(
            path, "m", base_url=srv.base_url, trajectories=traj, run=pl.EvalOptions(resume=True)
        )
    assert up.success_rate == 1.0 and not up.errors


def _spawn_eval(path: Path, base_url: str, traj: Path) -> subprocess.Popen[str]:
    args = ["eval", str(path), "--model", "m", "--base-url", base_url, "--trials", "3"]
    args += ["--concurrency", "2", "--trajectories", str(traj)]
    return subprocess.Popen(
        [sys.executable, "-m", "graphgen", *args],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONHASHSEED": "0"},
    )


def _wait_lines(traj: Path, n: int, proc: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and proc.poll() is None:
        if traj.exists() and traj.read_text().count("\n") >= n:
            return
        time.sleep(0.05)
    raise AssertionError(f"the run wrote fewer than {n} lines (exit {proc.poll()})")


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL, signal.SIGINT])
def test_killed_run_resumes_without_repeating_episodes(
    mock_tasks: tuple[Path, list[Task]], tmp_path: Path, sig: signal.Signals
) -> None:
    """A real `graphgen eval` process is signalled part-way; `--resume` then asks the
    server only for the episodes not in the file, and the file and results equal those
    of a run never interrupted. SIGTERM and SIGINT end the process cleanly (exit 128 +
    the signal, with a message)."""
    path, tasks = mock_tasks
    per_episode = {t.id: len(t.chain) + 1 for t in tasks}
    whole = tmp_path / "whole.jsonl"
    with StubServer(_solver(tasks)) as srv:
        assert _eval(path, srv, "--trials", "3", "--trajectories", str(whole)).exit_code == 0
    traj = tmp_path / "t.jsonl"
    with StubServer(_solver(tasks, delay=0.1)) as srv:
        proc = _spawn_eval(path, srv.base_url, traj)
        _wait_lines(traj, 3, proc)
        proc.send_signal(sig)
        _, stderr = proc.communicate(timeout=60)
    if sig == signal.SIGKILL:
        assert proc.returncode == -signal.SIGKILL
    else:
        assert proc.returncode == 128 + sig, stderr
        assert "interrupted" in stderr and "--resume" in stderr
    kept = [json.loads(line) for line in traj.read_text().splitlines() if line.endswith("}")]
    assert 3 <= len(kept) < 15
    with StubServer(_solver(tasks)) as srv:
        out = _eval(path, srv, "--trials", "3", "--trajectories", str(traj), "--resume")
        asked = Counter(_task_of(b, tasks).id for b in srv.requests)
    assert out.exit_code == 0, out.output
    left = Counter(t.id for t in tasks for _ in range(3))
    left.subtract(Counter(e["task_id"] for e in kept))
    assert asked == Counter({tid: n * per_episode[tid] for tid, n in left.items() if n})
    assert traj.read_bytes() == whole.read_bytes()
    a = json.loads(traj.with_name("t.results.json").read_text())
    b = json.loads(whole.with_name("whole.results.json").read_text())
    for r in (a, b):
        r.pop("tasks_file")
        r.pop("notes")
    assert a == b


# ------------------------------------------------------------------ users


def test_scripted_user_holds_back_identification_until_asked(
    mock_tasks: tuple[Path, list[Task]],
) -> None:
    """The opening lacks the email; asking for it gets it; the conversation then runs
    to success, and the user's stop ends it. An agent that never asks cannot look the
    account up."""
    _path, tasks = mock_tasks
    task = next(t for t in tasks if any(g.sort.endswith(".email") for g in t.givens))
    email = next(g.value for g in task.givens if g.sort.endswith(".email"))
    opening = ScriptedUser().start(task)
    assert email not in opening and opening in task.instruction.replace(
        f" My email is {email}.", ""
    )

    def script(body: dict[str, Any]) -> Any:
        msgs = body["messages"]
        said = " ".join(str(m["content"]) for m in msgs if m["role"] == "user")
        if email not in said:
            if any(m["role"] == "assistant" for m in msgs):
                return "Sorry, I cannot help without it."
            return "What is your email?"
        done = sum(1 for m in msgs if m["role"] == "tool")
        if done < len(task.chain):
            c = task.chain[done]
            return [(c.tool, json.dumps(c.args))]
        return "All done: " + ", ".join(str(v) for v in _answer_values(task))

    env = load_env_module(load_builtin("mock")).Environment()
    from graphgen.envs.agent import OpenAIAgent

    with StubServer(script) as srv:
        ep = run_episode(env, task, OpenAIAgent("m", srv.base_url), user=ScriptedUser())
    users = [m["content"] for m in ep.messages if m["role"] == "user"]
    assert users[0] == opening and users[1] == f"My email is {email}."
    assert ep.success, ep.grade
    assert ep.messages[-1]["role"] == "assistant" and ep.user == "scripted"

    def never_asks(body: dict[str, Any]) -> Any:
        return "I have cancelled nothing; goodbye."

    with StubServer(never_asks) as srv:
        ep = run_episode(env, task, OpenAIAgent("m", srv.base_url), user=ScriptedUser())
    assert not ep.success and len([m for m in ep.messages if m["role"] == "user"]) == 1


def test_model_user_sees_the_instruction_never_the_goal(
    mock_tasks: tuple[Path, list[Task]], tmp_path: Path
) -> None:
    """Agent and user share the endpoint; the user's requests hold the instruction and
    the agent's words, never the chain's ids, tool results or the tools; its STOP ends
    the episode; its tokens are counted apart."""
    path, tasks = mock_tasks

    def script(body: dict[str, Any]) -> Any:
        if "tools" not in body:  # the user simulator
            agent_said = [m for m in body["messages"] if m["role"] == "user"][1:]
            return STOP if agent_said else "I need help with my account."
        return "How can I help further?"

    traj = tmp_path / "t.jsonl"
    with StubServer(script) as srv:
        out = _eval(path, srv, "--user-model", "u", "--trajectories", str(traj), "--json")
        user_reqs = [b for b in srv.requests if "tools" not in b]
    assert out.exit_code == 0, out.output
    assert user_reqs and all(r["model"] == "u" for r in user_reqs)
    for r in user_reqs:
        text = json.dumps(r)
        task = next(t for t in tasks if t.instruction in r["messages"][0]["content"])
        ids = {str(v) for c in task.chain for v in c.args.values()} - {
            str(g.value) for g in task.givens
        }
        assert not any(i in text for i in ids)
        assert "goal" not in text and "initial_state" not in text
    res = json.loads(out.stdout)
    assert res["usage"]["user"]["requests"] == len(user_reqs)
    eps = [json.loads(line) for line in traj.read_text().splitlines()]
    assert all(e["user"] == "model:u" for e in eps)
    assert all(e["messages"][1]["content"] == "I need help with my account." for e in eps)


def test_a_failing_model_user_is_an_episode_error(mock_tasks: tuple[Path, list[Task]]) -> None:
    """The user's endpoint fails at the opening or later: "user:" errors, the run goes on."""
    path, tasks = mock_tasks

    def script(body: dict[str, Any]) -> Any:
        if "tools" in body:
            return "What else?"
        if len(body["messages"]) > 2:
            return Scripted(status=500)
        opening_fails = body["messages"][0]["content"].find(tasks[0].instruction) >= 0
        return Scripted(status=500) if opening_fails else "Help me please."

    with StubServer(script) as srv:
        res = pl.evaluate(
            path, "m", base_url=srv.base_url, run=pl.EvalOptions(user="model:u", retries=0)
        )
    assert len(res.episodes) == len(tasks) and res.all_errored
    assert all(e.error and e.error.startswith("user:") and "500" in e.error for e in res.episodes)
    assert (
        res.episodes[0].messages == []
        and res.episodes[1].messages[1]["content"] == "Help me please."
    )


# ------------------------------------------------------------------ records and view


def test_oracle_trajectory_is_ready_for_fine_tuning(
    mock_tasks: tuple[Path, list[Task]], tmp_path: Path
) -> None:
    """The tools are in the record; every call is answered; the last message is the
    assistant's answer in plain text, not a finishing call."""
    path, tasks = mock_tasks
    traj = tmp_path / "t.jsonl"
    pl.evaluate(path, "oracle", trajectories=traj)
    for line, task in zip(traj.read_text().splitlines(), tasks, strict=True):
        e = json.loads(line)
        assert e["success"]
        assert [t["function"]["name"] for t in e["tools"]][:-1] == [
            t["function"]["name"] for t in pl.make_env("mock").tools
        ][:-1]
        last = e["messages"][-1]
        assert last["role"] == "assistant" and "tool_calls" not in last
        assert all(str(v) in last["content"] for v in _answer_values(task))
        names = [c["function"]["name"] for m in e["messages"] for c in m.get("tool_calls") or []]
        assert names == [c.tool for c in task.chain] and "respond" not in names
        ids = [c["id"] for m in e["messages"] for c in m.get("tool_calls") or []]
        assert ids == [m["tool_call_id"] for m in e["messages"] if m["role"] == "tool"]


def test_view_lists_and_shows_episodes_with_markup_escaped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mock_tasks: tuple[Path, list[Task]]
) -> None:
    monkeypatch.setattr(cli, "out", Console(width=200, record=True))
    hostile = "[/]x [red]not red[/red] [link=http://e]"
    ep = Episode(
        "[/]x",
        "mock",
        "action",
        "[bold]m",
        False,
        0.0,
        1,
        1,
        2,
        {"items": []},
        [
            {"role": "system", "content": "policy"},
            {"role": "user", "content": hostile},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [{"id": "1", "function": {"name": "[/]", "arguments": "{[x]}"}}],
            },
            {"role": "tool", "tool_call_id": "1", "content": "Error: [/b]"},
            {"role": "assistant", "content": hostile},
        ],
        "model: [/] broke",
    )
    traj = tmp_path / "t.jsonl"
    traj.write_text(episode_line(ep), encoding="utf-8")
    listed = runner.invoke(cli.app, ["view", str(traj)])
    assert listed.exit_code == 0, listed.output
    shown = runner.invoke(cli.app, ["view", str(traj), "--task", "[/]x"])
    assert shown.exit_code == 0, shown.output
    text = cli.out.export_text()
    assert text.count(hostile) == 2 and "[/]({[x]})" in text and "model: [/] broke" in text
    missing = runner.invoke(cli.app, ["view", str(traj), "--task", "nope"])
    assert missing.exit_code == 1 and "no episode" in missing.output
