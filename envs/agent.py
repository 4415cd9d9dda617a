"""The agent loop: run a chat model (or a baseline) on tasks inside a compiled environment.

Any OpenAI-compatible endpoint works (vLLM, SGLang, Ollama, a hosted API): the model
sees the domain policy as the system prompt, the instruction as the user message and the
environment's strict tool schemas. Tool calls are executed by the compiled environment;
malformed calls (bad JSON, unknown tool, wrong types, missing arguments) come back as
tool errors and never end the run. Baselines (``oracle``, ``noop``, ``random``) use the
same loop without a model, so their numbers are comparable.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Protocol

from graphgen.envs.schemas import FINISH_NAME
from graphgen.grading import expected_final
from graphgen.tasks.model import Task

SYSTEM_SUFFIX = (
    f"\n\nUse the tools to help the user. When you are done, call `{FINISH_NAME}` with your "
    "final answer to the user (include any values they asked for, or the reason you cannot "
    "help)."
)


@dataclass
class ToolCall:
    id: str
    name: str
    arguments: str  # raw JSON text, exactly as the model produced it


@dataclass
class Reply:
    """One model turn: tool calls, or a final text."""

    tool_calls: list[ToolCall] = field(default_factory=list)
    text: str | None = None


class Agent(Protocol):
    name: str

    def start(self, task: Task) -> None: ...

    def act(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Reply: ...


class EnvLike(Protocol):
    """What the loop needs from a compiled environment (its Gymnasium-shaped interface)."""

    @property
    def tools(self) -> list[dict[str, Any]]: ...

    @property
    def policy(self) -> str: ...

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[str, dict[str, Any]]: ...

    def step(self, action: dict[str, Any]) -> tuple[str, float, bool, bool, dict[str, Any]]: ...


def env_task(task: Task) -> dict[str, Any]:
    """The plain-dict form of a task that compiled environments take in
    ``reset(options={"task": ...})``."""
    goal = task.goal.model_dump(mode="json")
    return {
        "id": task.id,
        "instruction": task.instruction,
        "initial_state": task.initial_state,
        "goal": goal,
        "expected_state": expected_final(task.initial_state, goal),
        "answer": list(task.goal.answer),
    }


# ------------------------------------------------------------------ agents


class OpenAIAgent:
    """A chat model behind an OpenAI-compatible ``/chat/completions`` endpoint."""

    def __init__(
        self,
        model: str,
        base_url: str,
        api_key: str,
        temperature: float = 0.0,
        timeout: float = 120.0,
        max_retries: int = 2,
    ) -> None:
        try:
            from openai import OpenAI
        except ImportError as exc:  # the model client is an optional extra
            raise ImportError(
                "OpenAIAgent needs the openai package: install graphgen-envs "
                "with the `eval` extra (pip install 'graphgen-envs[eval]')"
            ) from exc

        self.name = model
        self.model = model
        self.temperature = temperature
        self.client = OpenAI(
            base_url=base_url, api_key=api_key, timeout=timeout, max_retries=max_retries
        )

    def start(self, task: Task) -> None:
        return None

    def act(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Reply:
        resp = self.client.chat.completions.create(
            model=self.model,
            messages=messages,  # type: ignore[arg-type]
            tools=tools,  # type: ignore[arg-type]
            temperature=self.temperature,
        )
        msg = resp.choices[0].message
        calls = []
        for c in msg.tool_calls or []:
            fn = getattr(c, "function", None)  # custom (non-function) tool calls are skipped
            if fn is not None:
                calls.append(ToolCall(c.id, fn.name, fn.arguments or ""))
        return Reply(calls, msg.content)


def _answer_text(task: Task) -> str:
    # One true reason is enough: the first of the goal's alternatives.
    said = [*task.goal.answer, *(task.goal.answer_any[0] if task.goal.answer_any else [])]
    vals = ", ".join(str(v) for v in said)
    if task.kind == "refusal":
        return f"I'm sorry, I can't do that: the record shows {vals}."
    if task.kind == "information":
        return f"Here is what you asked for: {vals}."
    return "Done: everything you asked for is taken care of."


class OracleAgent:
    """Follows the task's reference chain, then answers with the goal's values."""

    name = "oracle"

    def __init__(self) -> None:
        self.plan: list[ToolCall] = []
        self.final = ""

    def start(self, task: Task) -> None:
        self.plan = [
            ToolCall(f"oracle_{i}", c.tool, json.dumps(c.args)) for i, c in enumerate(task.chain)
        ]
        self.final = _answer_text(task)

    def act(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Reply:
        if self.plan:
            return Reply([self.plan.pop(0)])
        return Reply([ToolCall("oracle_end", FINISH_NAME, json.dumps({"answer": self.final}))])


class NoopAgent:
    """Does nothing and gives up: the floor every task must fail."""

    name = "noop"

    def start(self, task: Task) -> None:
        return None

    def act(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Reply:
        return Reply(text="Sorry, I cannot help with that.")


class RandomAgent:
    """Random valid-looking calls: a tool from the schema, arguments of the right JSON
    types drawn from words of the instruction, enum members and small ints."""

    name = "random"

    def __init__(self, seed: int = 0, calls: int = 6) -> None:
        self.seed = seed
        self.calls = calls
        self.rng = random.Random(seed)
        self.words: list[str] = []
        self.left = 0

    def start(self, task: Task) -> None:
        self.rng = random.Random(f"{self.seed}:{task.id}")
        self.words = [w.strip(".,;:!?()") for w in task.instruction.split()] or ["x"]
        self.left = self.calls

    def _value(self, schema: dict[str, Any]) -> Any:
        if "enum" in schema:
            return self.rng.choice(schema["enum"])
        t = schema.get("type")
        if t == "integer":
            lo = int(schema.get("minimum", 0))
            hi = int(schema.get("maximum", lo + 500))
            return self.rng.randint(lo, min(hi, lo + 500))
        if t == "boolean":
            return self.rng.random() < 0.5
        return self.rng.choice(self.words)

    def act(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Reply:
        usable = [t for t in tools if t["function"]["name"] != FINISH_NAME]
        if self.left <= 0 or not usable:
            return Reply([ToolCall("random_end", FINISH_NAME, json.dumps({"answer": "done"}))])
        self.left -= 1
        fn = self.rng.choice(usable)["function"]
        props = fn.get("parameters", {}).get("properties", {})
        args = {k: self._value(v) for k, v in props.items()}
        return Reply([ToolCall(f"random_{self.left}", fn["name"], json.dumps(args))])


# ------------------------------------------------------------------ the loop


@dataclass
class Episode:
    task_id: str
    domain: str
    kind: str
    agent: str
    success: bool
    reward: float
    calls: int
    invalid_calls: int
    steps: int
    grade: dict[str, Any]
    messages: list[dict[str, Any]]
    error: str | None = None


def run_episode(env: EnvLike, task: Task, agent: Agent, max_steps: int = 30) -> Episode:
    """Run one task to the end; every failure of the model call is recorded, not raised."""
    first, _ = env.reset(options={"task": env_task(task)})
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": env.policy + SYSTEM_SUFFIX},
        {"role": "user", "content": first},
    ]
    agent.start(task)
    calls = invalid = turns = 0
    done = False  # terminated or truncated
    reward = 0.0
    info: dict[str, Any] = {}
    error: str | None = None
    while not done and turns < max_steps:
        turns += 1
        try:
            reply = agent.act(messages, env.tools)
        except Exception as exc:  # a model or API failure ends this episode only
            error = f"{type(exc).__name__}: {exc}"
            break
        if not reply.tool_calls:
            # A plain text reply is the final answer to the user.
            messages.append({"role": "assistant", "content": reply.text or ""})
            _, reward, terminated, truncated, info = env.step(
                {"name": FINISH_NAME, "arguments": {"answer": reply.text or ""}}
            )
            done = terminated or truncated
            break
        messages.append(
            {
                "role": "assistant",
                "content": reply.text,
                "tool_calls": [
                    {
                        "id": c.id,
                        "type": "function",
                        "function": {"name": c.name, "arguments": c.arguments},
                    }
                    for c in reply.tool_calls
                ],
            }
        )
        for c in reply.tool_calls:
            obs, reward, terminated, truncated, info = env.step(
                {"name": c.name, "arguments": c.arguments}
            )
            done = terminated or truncated
            if c.name != FINISH_NAME:
                calls += 1
                if info.get("error"):
                    invalid += 1
            messages.append({"role": "tool", "tool_call_id": c.id, "content": obs})
            if done:
                break
    if not done:
        # Out of turns (or the model failed): close the episode so it is graded.
        _, reward, _, _, info = env.step({"name": FINISH_NAME, "arguments": {"answer": ""}})
    grade = info.get("grade", {})
    return Episode(
        task.id,
        task.domain,
        task.kind,
        agent.name,
        reward >= 1.0,
        reward,
        calls,
        invalid,
        turns,
        grade,
        messages,
        error,
    )


def summarize(episodes: Iterable[Episode]) -> list[dict[str, Any]]:
    """Per (domain, kind): success rate, mean calls, invalid-call rate, count."""
    groups: dict[tuple[str, str], list[Episode]] = {}
    for e in episodes:
        groups.setdefault((e.domain, e.kind), []).append(e)
        groups.setdefault((e.domain, "all"), []).append(e)
    rows = []
    for (dom, kind), eps in sorted(
        groups.items(), key=lambda kv: (kv[0][0], kv[0][1] == "all", kv[0][1])
    ):
        n = len(eps)
        total_calls = sum(e.calls for e in eps)
        rows.append(
            {
                "domain": dom,
                "kind": kind,
                "tasks": n,
                "success": sum(e.success for e in eps) / n,
                "mean_calls": total_calls / n,
                "invalid_rate": (sum(e.invalid_calls for e in eps) / total_calls)
                if total_calls
                else 0.0,
                "errors": sum(1 for e in eps if e.error),
            }
        )
    return rows
