"""``graphgen play``: a blind, step-by-step episode driven from separate commands."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

import graphgen.cli as cli
from graphgen import pipeline as pl
from graphgen.envs.agent import _answer_text
from graphgen.envs.play import PlayError, Session, parse_call
from graphgen.tasks.model import Task
from graphgen.tasks.taskset import read_taskset

runner = CliRunner()
pytestmark = pytest.mark.usefixtures("wide_console")


@pytest.fixture(scope="module")
def mock_set(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[Task]]:
    path = tmp_path_factory.mktemp("play") / "mock.jsonl"
    pl.generate("mock", 12, pl.Options(seed=5, prove=False), output=path)
    return path, read_taskset(path)[1]


def _pick(tasks: list[Task], kind: str, min_len: int = 2) -> Task:
    return next(t for t in tasks if t.kind == kind and len(t.chain) >= min_len)


def _play(*args: str) -> tuple[int, str]:
    res = runner.invoke(cli.app, ["play", *args])
    return res.exit_code, res.output


def _short(tool: str, args: dict[str, object]) -> str:
    return f"{tool}({', '.join(f'{k}={v!r}' for k, v in args.items())})"


@pytest.mark.parametrize("kind", ["action", "information"])
def test_scripted_session_replays_the_reference_chain(
    mock_set: tuple[Path, list[Task]], tmp_path: Path, kind: str
) -> None:
    path, tasks = mock_set
    task = _pick(tasks, kind)
    session = str(tmp_path / "s.json")
    code, _ = _play(str(path), "--task", task.id, "--session", session)
    assert code == 0
    for i, call in enumerate(task.chain):
        # Alternate the two call forms: the short one and JSON.
        text = (
            _short(call.tool, call.args)
            if i % 2 == 0
            else json.dumps({"name": call.tool, "arguments": call.args})
        )
        code, output = _play("--session", session, "--call", text)
        assert code == 0, output
        assert not output.startswith("Error"), output
        assert "success" not in output  # no grade before the end
    code, output = _play("--session", session, "--answer", _answer_text(task))
    assert code == 0
    assert "success: yes" in output
    assert len(Session.load(Path(session)).calls) == len(task.chain) + 1


def test_wrong_answer_fails(mock_set: tuple[Path, list[Task]], tmp_path: Path) -> None:
    path, tasks = mock_set
    task = _pick(tasks, "information")
    session = str(tmp_path / "s.json")
    _play(str(path), "--task", task.id, "--session", session)
    for call in task.chain:
        _play("--session", session, "--call", _short(call.tool, call.args))
    code, output = _play("--session", session, "--answer", "I do not know.")
    assert code == 0
    assert "success: no" in output and "FAIL" in output


def test_first_screen_shows_only_what_an_agent_sees(
    mock_set: tuple[Path, list[Task]], tmp_path: Path
) -> None:
    path, tasks = mock_set
    env = pl.make_env("mock")
    for task in [_pick(tasks, "action"), _pick(tasks, "information")]:
        code, screen = _play(str(path), "--task", task.id, "--session", str(tmp_path / "s.json"))
        assert code == 0
        assert env.policy.strip() in screen
        assert task.instruction in screen
        for tool in env.tools:
            assert f'"name": "{tool["function"]["name"]}"' in screen
        # The tool schemas and the policy are the domain's, the same for every task; the
        # screen must hold no value of the reference chain or goal that neither they nor
        # the instruction state.
        head, tools = screen.split("# Tools", 1)
        assert json.loads(tools) == env.tools
        secrets = [v for c in task.chain for v in c.args.values()]
        secrets += [c.after for c in task.goal.changes] + list(task.goal.answer)
        hidden = [
            str(v) for v in secrets if str(v) not in task.instruction and str(v) not in env.policy
        ]
        assert hidden, "the task should have some value the instruction does not state"
        for value in hidden:
            assert value not in head, value
        assert "reference" not in screen.lower() and "goal" not in screen.lower()


def test_bad_calls_give_clear_errors_and_do_not_advance(
    mock_set: tuple[Path, list[Task]], tmp_path: Path
) -> None:
    path, tasks = mock_set
    task = _pick(tasks, "action")
    session = tmp_path / "s.json"
    _play(str(path), "--task", task.id, "--session", str(session))
    first = task.chain[0]
    code, _ = _play("--session", str(session), "--call", _short(first.tool, first.args))
    assert code == 0
    before = session.read_text(encoding="utf-8")
    for text, message in [
        ("find_account(email=", "malformed call"),
        ("find_account('a@b.c')", "name every argument"),
        ("find_account(email=__import__('os'))", "not a literal"),
        ('{"name": "find_account", "arguments": [1]}', "must be a JSON object"),
        ("{not json", "not valid JSON"),
        ("no_such_tool(x=1)", "unknown tool 'no_such_tool'"),
    ]:
        code, output = _play("--session", str(session), "--call", text)
        assert code == 1, text
        assert message in output, (text, output)
        assert session.read_text(encoding="utf-8") == before
    # A call the environment rejects is an observation, as for any agent, and counts.
    code, output = _play("--session", str(session), "--call", "get_account(account_id='A999')")
    assert code == 0 and output.startswith("Error:")
    _play("--session", str(session), "--answer", "done")
    code, output = _play("--session", str(session), "--call", _short(first.tool, first.args))
    assert code == 1 and "episode is over" in output


def test_unknown_task_and_bad_session(mock_set: tuple[Path, list[Task]], tmp_path: Path) -> None:
    path, _ = mock_set
    code, output = _play(str(path), "--task", "mock-5-999", "--session", str(tmp_path / "s"))
    assert code == 1 and "no task 'mock-5-999'" in output
    (tmp_path / "junk.json").write_text("{}", encoding="utf-8")
    code, output = _play("--session", str(tmp_path / "junk.json"), "--answer", "x")
    assert code == 1 and "not a play session" in output
    code, output = _play("--session", str(tmp_path / "junk.json"))
    assert code == 2


def test_replay_is_deterministic(mock_set: tuple[Path, list[Task]], tmp_path: Path) -> None:
    path, tasks = mock_set
    task = _pick(tasks, "action")
    outputs = []
    for name in ("a.json", "b.json"):
        session = tmp_path / name
        pl.play_start(path, task.id, session)
        outputs.append(
            [pl.play_call(session, _short(c.tool, c.args)).observation for c in task.chain]
        )
    assert outputs[0] == outputs[1]


@pytest.mark.parametrize(
    "text",
    [
        "__import__('os').system('true')",
        "find_account(email=__import__('os'))",
        "find_account(email=open('/etc/passwd').read())",
        "find_account(email=x)",
        "find_account(email='a' + 'b')",
        "find_account(**{'email': 'a'})",
        "os.system(cmd='true')",
        "find_account(email=(lambda: 1)())",
        "[find_account(email='a')]",
    ],
)
def test_call_parser_rejects_non_literals(text: str) -> None:
    with pytest.raises(PlayError, match="malformed call"):
        parse_call(text)


def test_call_parser_reads_literals() -> None:
    assert parse_call("t(a='x', b=3, c=True, d=None, e=[1, 2], f={'k': -1.5})") == (
        "t",
        {"a": "x", "b": 3, "c": True, "d": None, "e": [1, 2], "f": {"k": -1.5}},
    )
    assert parse_call("t()") == ("t", {})
    call = {"type": "function", "function": {"name": "t", "arguments": '{"a": 1}'}}
    assert parse_call(json.dumps(call)) == ("t", {"a": 1})


def test_file_and_task_may_be_repeated_with_each_call(
    mock_set: tuple[Path, list[Task]], tmp_path: Path
) -> None:
    """FILE --task ID (or --task ID alone) given again with --call and --answer
    continues that task's session; naming another task, or a session not started, is
    refused and changes nothing."""
    path, tasks = mock_set
    task, other = _pick(tasks, "action"), next(t for t in tasks if t.kind == "information")
    session = tmp_path / "s.json"
    code, output = _play(str(path), "--task", task.id, "--session", str(session), "--call", "x()")
    assert code == 1 and "no session" in output and not session.exists()
    assert _play(str(path), "--task", task.id, "--session", str(session))[0] == 0
    first = task.chain[0]
    code, output = _play(
        str(path),
        "--task",
        task.id,
        "--session",
        str(session),
        "--call",
        _short(first.tool, first.args),
    )
    assert code == 0 and not output.startswith("Error"), output
    assert len(Session.load(session).calls) == 1
    code, output = _play(
        str(path),
        "--task",
        other.id,
        "--session",
        str(session),
        "--call",
        _short(first.tool, first.args),
    )
    assert code == 1 and f"plays {task.id}" in output, output
    assert len(Session.load(session).calls) == 1
    code, output = _play("--session", str(session), "--task", other.id, "--answer", "x")
    assert code == 1 and f"plays {task.id}" in output, output
    assert not Session.load(session).over
    code, output = _play("--session", str(session), "--task", task.id, "--answer", "x")
    assert code == 0 and "success" in output, output
    assert Session.load(session).over
