"""Play a task blind, one tool call per command: see what an agent sees, nothing more.

A person (or a model driven from a shell) plays one task of a task set in its compiled
environment. The first screen holds only what an agent is given: the domain policy, the
task instruction and the tool schemas the environment offers (the finishing action
included). Each later command makes one call and prints only its observation; the answer
ends the episode and only then is the grade shown. The reference chain and the goal are
never printed.

Between commands the episode lives in a small JSON session file: the task set, the task
id and the calls made so far. Each command rebuilds the episode by replaying those calls
from the task's initial state, which is deterministic, so the file holds no state of its
own to go stale.

A call is written either as JSON (``{"name": tool, "arguments": {...}}``) or in the short
form ``tool(arg=value, ...)``, whose values must be Python literals (strings, numbers,
booleans, None, lists, dicts): it is parsed with :mod:`ast`, never evaluated.
"""

from __future__ import annotations

import ast
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from graphgen.envs.agent import SYSTEM_SUFFIX, EnvLike, env_task
from graphgen.envs.environment import parse_action
from graphgen.errors import GraphgenError
from graphgen.files import write_atomic
from graphgen.suggest import did_you_mean
from graphgen.tasks.model import Task

SESSION_FORMAT = "graphgen-play"


class PlayError(GraphgenError):
    """A play command that cannot go on: bad call text, unknown task or tool, episode over."""


_JSON_WORDS: dict[str, Any] = {"true": True, "false": False, "null": None}


def parse_call(text: str) -> tuple[str, dict[str, Any]]:
    """``(tool, arguments)`` of a call written as JSON or as ``tool(arg=value, ...)``.

    >>> parse_call('find_account(email="a@b.c")')
    ('find_account', {'email': 'a@b.c'})
    >>> parse_call('{"name": "get_account", "arguments": {"account_id": "A001"}}')
    ('get_account', {'account_id': 'A001'})
    >>> parse_call('book(insurance=true, note=null)')  # JSON's words are welcome too
    ('book', {'insurance': True, 'note': None})
    """
    text = text.strip()
    if not text:
        raise PlayError("empty call: write tool(arg=value, ...) or a JSON object")
    if text.startswith("{"):
        return _parse_json_call(text)
    try:
        node = ast.parse(text, mode="eval").body
    except SyntaxError as exc:
        raise PlayError(f"malformed call {text!r}: {exc.msg}") from None
    if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Name):
        raise PlayError(f"malformed call {text!r}: write tool(arg=value, ...)")
    if node.args:
        raise PlayError(f"malformed call {text!r}: name every argument (arg=value)")
    args: dict[str, Any] = {}
    for kw in node.keywords:
        if kw.arg is None:
            raise PlayError(f"malformed call {text!r}: **arguments are not allowed")
        value = kw.value
        if isinstance(value, ast.Name) and value.id in _JSON_WORDS:
            # a player used to JSON writes true/false/null (a blind player lost a call)
            args[kw.arg] = _JSON_WORDS[value.id]
            continue
        try:
            args[kw.arg] = ast.literal_eval(value)
        except (ValueError, TypeError, SyntaxError, RecursionError):
            raise PlayError(
                f"malformed call {text!r}: the value of {kw.arg!r} is not a literal "
                "(use strings, numbers, True/False, None, lists or dicts)"
            ) from None
    return node.func.id, args


def _parse_json_call(text: str) -> tuple[str, dict[str, Any]]:
    # The environment's own action parser: the same shapes and limits as for any agent.
    name, arguments, error = parse_action(text)
    if error is not None:
        raise PlayError(f"malformed call: {error[1]}")
    if not name:
        raise PlayError('malformed call: a JSON call is {"name": tool, "arguments": {...}}')
    return name, arguments


@dataclass
class Session:
    """One blind episode between commands: which task, and the calls made so far."""

    tasks_file: str
    task_id: str
    domain: str | None = None
    calls: list[dict[str, Any]] = field(default_factory=list)
    answer: str | None = None
    over: bool = False

    def to_json(self) -> str:
        """The session file's text."""
        data = {
            "format": SESSION_FORMAT,
            "tasks_file": self.tasks_file,
            "task": self.task_id,
            "domain": self.domain,
            "calls": self.calls,
            "answer": self.answer,
            "over": self.over,
        }
        return json.dumps(data, indent=2, ensure_ascii=False) + "\n"

    def save(self, path: Path) -> None:
        """Write the session file (atomically: a failed write keeps the previous one)."""
        write_atomic(path, self.to_json())

    @classmethod
    def load(cls, path: Path) -> Session:
        """Read a session file (a clear error if it is not one)."""
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except OSError as exc:
            raise PlayError(f"cannot read session {path}: {exc.strerror or exc}") from None
        except json.JSONDecodeError as exc:
            raise PlayError(f"{path} is not a play session (bad JSON: {exc.msg})") from None
        if not isinstance(data, dict) or data.get("format") != SESSION_FORMAT:
            raise PlayError(f"{path} is not a play session (no format {SESSION_FORMAT!r})")
        if not isinstance(data.get("tasks_file"), str) or not isinstance(data.get("task"), str):
            raise PlayError(f"{path} is not a play session (no tasks_file or task)")
        return cls(
            tasks_file=str(data["tasks_file"]),
            task_id=str(data["task"]),
            domain=data.get("domain"),
            calls=list(data.get("calls", [])),
            answer=data.get("answer"),
            over=bool(data.get("over", False)),
        )


@dataclass(frozen=True)
class Outcome:
    """What one play command shows: the observation, and the grade once the episode ends."""

    observation: str
    over: bool = False
    grade: dict[str, Any] | None = None


class Play:
    """A session bound to its task and a compiled environment, replayed to its last call."""

    def __init__(self, env: EnvLike, task: Task, session: Session) -> None:
        self.env = env
        self.task = task
        self.session = session
        self.finish = str(env.tools[-1]["function"]["name"])
        self.tool_names = [str(t["function"]["name"]) for t in env.tools]
        self.first, _ = env.reset(options={"task": env_task(task)})
        self.last = Outcome(self.first)
        for call in session.calls:
            self.last = self._step(call)

    def _step(self, action: dict[str, Any]) -> Outcome:
        obs, _, terminated, truncated, info = self.env.step(action)
        over = terminated or truncated
        return Outcome(obs, over, info.get("grade") if over else None)

    def screen(self) -> str:
        """The first screen: policy, instruction and tool schemas, as an agent gets them."""
        tools = json.dumps(self.env.tools, indent=2, ensure_ascii=False)
        return (
            f"# Policy (system prompt)\n\n{self.env.policy}{SYSTEM_SUFFIX}\n\n"
            f"# Instruction (user)\n\n{self.first}\n\n"
            f"# Tools\n\n{tools}\n"
        )

    def _check_open(self) -> None:
        if self.session.over:
            raise PlayError("the episode is over; start a new session with FILE --task ID")

    def call(self, text: str) -> Outcome:
        """Make one call (its text as :func:`parse_call` reads it); the finishing action
        ends the episode. Malformed calls and unknown tools raise and change nothing."""
        self._check_open()
        name, args = parse_call(text)
        if name not in self.tool_names:
            near = did_you_mean(name, self.tool_names)
            raise PlayError(
                f"unknown tool {name!r}{near}; the tools are: {', '.join(self.tool_names)}"
            )
        if name == self.finish:
            return self.respond(str(args.get("answer", "")))
        return self._record({"name": name, "arguments": args})

    def respond(self, answer: str) -> Outcome:
        """End the episode with ``answer``; the outcome carries the grade."""
        self._check_open()
        self.session.answer = answer
        return self._record({"name": self.finish, "arguments": {"answer": answer}})

    def _record(self, action: dict[str, Any]) -> Outcome:
        self.session.calls.append(action)
        self.last = self._step(action)
        self.session.over = self.last.over
        return self.last


def render_grade(grade: dict[str, Any]) -> str:
    """The grade as lines of text: the verdict, then each check."""
    lines = [f"success: {'yes' if grade.get('success') else 'no'}"]
    for item in grade.get("items", []):
        mark = "ok  " if item.get("ok") else "FAIL"
        lines.append(f"  {mark} {item.get('check', '')}: {item.get('detail', '')}")
    return "\n".join(lines)
