"""The agent loop: run a chat model (or a baseline) on tasks inside a compiled environment.

Any OpenAI-compatible endpoint works (vLLM, SGLang, Ollama, a hosted API): the model
sees the domain policy as the system prompt, the instruction as the user message and the
environment's strict tool schemas. Tool calls are executed by the compiled environment;
malformed calls (bad JSON, unknown tool, wrong types, missing arguments) come back as
tool errors and never end the run. Baselines (``oracle``, ``noop``, ``random``) use the
same loop without a model, so their numbers are comparable.

The adversarial baselines probe the grader rather than solve tasks; a fair task set keeps
them at (or near) zero:

- ``echo`` makes no call and answers with the instruction verbatim (does restating the
  request pass?);
- ``hedger`` calls every read tool it can fill from what it knows, then answers with every
  enum member of the domain and every scalar it saw (does naming everything pass?);
- ``greedy`` replays the reference chain with its writes in every order the data allow
  (see :func:`run_greedy`): a task passes only if every order does (does the task
  silently depend on one order the instruction does not state?).
"""

from __future__ import annotations

import itertools
import json
import random
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol

from graphgen.domain import Domain, ParamDef, domain_enum_members
from graphgen.envs.schemas import FINISH_NAME
from graphgen.grading import expected_final
from graphgen.llm import openai_client
from graphgen.state import State
from graphgen.tasks.dryrun import permitted_orders
from graphgen.tasks.model import Task
from graphgen.types import BOOL, DATE, INT, EnumT, RefT

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
        self.name = model
        self.model = model
        self.temperature = temperature
        self.client = openai_client(
            base_url, api_key, timeout=timeout, max_retries=max_retries, feature="OpenAIAgent"
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


def _key(value: Any) -> tuple[str, Any]:
    """A value with its JSON type, so ``1``, ``True`` and ``"1"`` stay apart."""
    return (type(value).__name__, value)


def _leaves(data: Any, key: str | None = None) -> Iterator[tuple[str | None, Any]]:
    """(enclosing key, value) of every scalar in JSON data, depth first."""
    if isinstance(data, dict):
        for k, v in data.items():
            yield from _leaves(v, str(k))
    elif isinstance(data, list):
        for v in data:
            yield from _leaves(v, key)
    elif data is not None:
        yield key, data


def _observed(observation: str) -> Any:
    """The JSON data of a tool observation; None for an error, a plain string as is."""
    if observation.startswith("Error:"):
        return None
    try:
        return json.loads(observation)
    except json.JSONDecodeError:
        return observation


def _tool_observations(messages: list[dict[str, Any]]) -> list[str]:
    return [str(m.get("content", "")) for m in messages if m.get("role") == "tool"]


class EchoAgent:
    """Makes no call and answers with the instruction verbatim."""

    name = "echo"

    def __init__(self) -> None:
        self.text = ""

    def start(self, task: Task) -> None:
        self.text = task.instruction

    def act(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Reply:
        return Reply(text=self.text)


_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")


class HedgerAgent:
    """Calls every read tool it can fill with values it knows, then names everything.

    Known values are the instruction's stated values (the task's givens) and what earlier
    results revealed: ids (strings shaped like an entity's ids) and values found under a
    field's name. Each read tool is tried with each combination of known values of the
    right type, round-robin over the tools, at most ``calls`` calls in all. The answer
    joins every enum member of the domain and every scalar seen in a result.
    """

    name = "hedger"

    def __init__(self, domain: Domain, calls: int = 30) -> None:
        self.domain = domain
        self.calls = calls
        self.givens: list[tuple[str, Any]] = []
        self.seen: list[tuple[str | None, Any]] = []
        self.tried: set[str] = set()
        self.absorbed = 0
        self.next_tool = 0
        self.left = calls
        self.id_shapes = {
            name: re.compile(rf"^{re.escape(e.prefix)}\d{{{e.width}}}$")
            for name, e in domain.entities.items()
        }

    def start(self, task: Task) -> None:
        self.givens = [(g.sort, g.value) for g in task.givens]
        self.seen = []
        self.tried = set()
        self.absorbed = 0
        self.next_tool = 0
        self.left = self.calls

    def _candidates(self, p: ParamDef) -> list[Any]:
        found: list[Any] = []
        keys: set[tuple[str, Any]] = set()

        def add(v: Any) -> None:
            if _key(v) not in keys:
                keys.add(_key(v))
                found.append(v)

        stated = [v for _, v in self.givens]
        if p.source is not None:
            ent, fld = p.source
            for sort, v in self.givens:
                if sort == f"field:{ent}.{fld}":
                    add(v)
            for k, v in self.seen:
                if k == fld and not isinstance(v, bool):
                    add(v)
        elif isinstance(p.ty, RefT):
            shape = self.id_shapes[p.ty.entity]
            for v in [*stated, *(v for _, v in self.seen)]:
                if isinstance(v, str) and shape.match(v):
                    add(v)
        elif p.ty == BOOL:
            add(True)
            add(False)
        elif p.ty == INT:
            for v in stated:
                if isinstance(v, int) and not isinstance(v, bool):
                    add(v)
        elif isinstance(p.ty, EnumT):
            for v in [*(v for v in stated if v in p.ty.values), *p.ty.values]:
                add(v)
        elif p.ty == DATE:
            for v in stated:
                if isinstance(v, str) and _DATE.match(v):
                    add(v)
        else:
            for v in stated:
                if isinstance(v, str):
                    add(v)
        return found

    def _absorb(self, messages: list[dict[str, Any]]) -> None:
        observations = _tool_observations(messages)
        have = {_key(v) for _, v in self.seen}
        for obs in observations[self.absorbed :]:
            for k, v in _leaves(_observed(obs)):
                if _key(v) not in have:
                    have.add(_key(v))
                    self.seen.append((k, v))
        self.absorbed = len(observations)

    def _next_call(self, offered: set[str]) -> tuple[str, dict[str, Any]] | None:
        tools = [t for t in self.domain.read_tools if t.name in offered]
        for turn in range(len(tools)):
            tool = tools[(self.next_tool + turn) % len(tools)]
            names = list(tool.params)
            pools = [self._candidates(tool.params[n]) for n in names]
            for combo in itertools.islice(itertools.product(*pools), 256):
                args = dict(zip(names, combo, strict=True))
                sig = json.dumps([tool.name, args], sort_keys=True)
                if sig not in self.tried:
                    self.tried.add(sig)
                    self.next_tool = (self.next_tool + turn + 1) % len(tools)
                    return tool.name, args
        return None

    def answer(self) -> str:
        """Every enum member of the domain and every scalar seen, in one text."""
        parts = domain_enum_members(self.domain)
        for _, v in self.seen:
            text = str(v).lower() if isinstance(v, bool) else str(v)
            if text not in parts:
                parts.append(text)
        return ", ".join(parts)

    def act(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Reply:
        self._absorb(messages)
        call = None
        if self.left > 0:
            call = self._next_call({t["function"]["name"] for t in tools})
        if call is None:
            return Reply(
                [ToolCall("hedger_end", FINISH_NAME, json.dumps({"answer": self.answer()}))]
            )
        self.left -= 1
        name, args = call
        return Reply([ToolCall(f"hedger_{self.left}", name, json.dumps(args))])


#: The most write orders :func:`run_greedy` tries on one task.
GREEDY_MAX_ORDERS = 24


def greedy_orders(
    domain: Domain, task: Task, cap: int = GREEDY_MAX_ORDERS
) -> tuple[list[list[int]], bool]:
    """One call sequence per write order the data dependencies permit (the orders of
    :func:`graphgen.tasks.dryrun.permitted_orders`, the same ones the generator's gate
    grades), the reference order first, at most ``cap``; and whether more exist."""
    is_write = [c.tool in domain.tools and domain.tools[c.tool].is_write for c in task.chain]
    # permitted_orders lists every write order once before it repeats one with the reads
    # placed differently, so the first cap + 1 distinct write orders come first.
    orders = permitted_orders(
        domain,
        State.from_dict(task.initial_state),
        task.givens,
        task.chain,
        limit=cap + 1,
        ordered=task.ordered,
    )
    seen: set[tuple[int, ...]] = set()
    out: list[list[int]] = []
    for order in orders:
        writes = tuple(i for i in order if is_write[i])
        if writes not in seen:
            seen.add(writes)
            out.append(order)
    return out[:cap], len(out) > cap


def revealed_by_writes(task: Task, results: list[Any], writes: set[int]) -> set[tuple[str, Any]]:
    """Values (by :func:`_key`) a write's result revealed first in the reference run:
    another order may reveal others in their place (the id a create returns depends on
    how many creates came before)."""
    revealed: dict[tuple[str, Any], int] = {}
    stated = {_key(g.value) for g in task.givens}
    for i, result in enumerate(results):
        for _, v in _leaves(result):
            if _key(v) not in stated:
                revealed.setdefault(_key(v), i)
    return {k for k, i in revealed.items() if i in writes}


def _pairs(ref: Any, got: Any) -> Iterator[tuple[Any, Any]]:
    """(reference scalar, actual scalar) at the same place of two results."""
    if isinstance(ref, dict) and isinstance(got, dict):
        for k in ref:
            if k in got:
                yield from _pairs(ref[k], got[k])
    elif isinstance(ref, list) and isinstance(got, list):
        for a, b in zip(ref, got, strict=False):
            yield from _pairs(a, b)
    elif not isinstance(ref, dict | list) and not isinstance(got, dict | list):
        yield ref, got


class GreedyAgent:
    """Makes the chain's calls in one given sequence, then answers as the oracle does.

    Values a write revealed in the reference run are rewritten to what the same write
    revealed in this run, as an agent reading its results would.
    """

    name = "greedy"

    def __init__(
        self, sequence: list[int], results: list[Any], from_writes: set[tuple[str, Any]]
    ) -> None:
        self.from_writes = from_writes
        self.sequence = sequence
        self.results = results
        self.task: Task | None = None
        self.final = ""
        self.made = 0
        self.absorbed = 0
        self.rewrite: dict[tuple[str, Any], Any] = {}

    def start(self, task: Task) -> None:
        self.task = task
        self.final = _answer_text(task)
        self.made = self.absorbed = 0
        self.rewrite = {}

    def act(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Reply:
        assert self.task is not None, "start() first"
        observations = _tool_observations(messages)
        for n in range(self.absorbed, len(observations)):
            i = self.sequence[n]
            for ref, got in _pairs(self.results[i], _observed(observations[n])):
                if _key(ref) in self.from_writes and ref != got:
                    self.rewrite[_key(ref)] = got
        self.absorbed = len(observations)
        if self.made >= len(self.sequence):
            return Reply([ToolCall("greedy_end", FINISH_NAME, json.dumps({"answer": self.final}))])
        call = self.task.chain[self.sequence[self.made]]
        self.made += 1
        args = {k: self.rewrite.get(_key(v), v) for k, v in call.args.items()}
        return Reply([ToolCall(f"greedy_{self.made}", call.tool, json.dumps(args))])


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
    orders: list[dict[str, Any]] = field(default_factory=list)
    """``greedy`` only: one entry per write order tried (``order``, ``success``,
    ``failed`` grade checks); ``orders_capped`` says more orders existed."""
    orders_capped: bool = False


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


def reference_results(env: EnvLike, task: Task) -> list[Any]:
    """Each reference-chain call's result (JSON data; None for an error), run in order
    from the task's initial state. Leaves the environment mid-episode: reset it next."""
    env.reset(options={"task": env_task(task)})
    results = []
    for call in task.chain:
        obs, *_ = env.step({"name": call.tool, "arguments": call.args})
        results.append(_observed(obs))
    return results


def run_greedy(
    env: EnvLike,
    task: Task,
    domain: Domain,
    max_steps: int = 30,
    cap: int = GREEDY_MAX_ORDERS,
) -> Episode:
    """The ``greedy`` baseline on one task: the chain's reads, then its writes in every
    order the data dependencies allow (a write that passes a value an earlier write's
    result revealed must come after it), at most ``cap`` orders, one episode each.

    Returns one episode for the task: a success only if every order succeeded; its
    messages and grade are those of the first failing order (else the reference order);
    ``orders`` lists every order's outcome.
    """
    results = reference_results(env, task)
    orders, capped = greedy_orders(domain, task, cap)
    writes = {i for i, c in enumerate(task.chain) if domain.tools[c.tool].is_write}
    from_writes = revealed_by_writes(task, results, writes)
    runs: list[tuple[list[int], Episode]] = []
    for order in orders:
        agent = GreedyAgent(order, results, from_writes)
        runs.append((order, run_episode(env, task, agent, max_steps)))
    shown = next((e for _, e in runs if not e.success), runs[0][1])
    shown.success = all(e.success for _, e in runs)
    shown.reward = min(e.reward for _, e in runs)
    shown.orders = [
        {
            "order": " > ".join(f"{task.chain[w].tool}#{w + 1}" for w in order if w in writes),
            "success": e.success,
            "failed": [i for i in e.grade.get("items", []) if not i.get("ok")],
        }
        for order, e in runs
    ]
    shown.orders_capped = capped
    return shown


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
