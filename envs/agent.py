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
import threading
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from graphgen.domain import Domain, ParamDef, domain_enum_members
from graphgen.envs.schemas import FINISH_NAME
from graphgen.envs.user import STOP, ModelUser, User
from graphgen.grading import expected_final
from graphgen.llm import Usage, openai_client
from graphgen.state import State
from graphgen.tasks.dryrun import permitted_orders
from graphgen.tasks.model import Task
from graphgen.types import BOOL, DATE, INT, EnumT, RefT

if TYPE_CHECKING:
    from openai import OpenAI

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
    """A chat model behind an OpenAI-compatible ``/chat/completions`` endpoint.

    Give a ready ``client`` to share one connection pool between episodes run at once
    (one agent per episode: agents hold the episode's state), or ``base_url`` and
    ``api_key`` to make one. ``extra_body`` is merged into every request body (e.g.
    ``{"top_k": 20}`` or a reasoning switch a server understands). ``usage`` counts the
    requests and the tokens each response reports. With a ``deadline`` (a
    :func:`time.monotonic` instant, set by :func:`run_episode`) each request gets at most
    the time left, shared among its retries.
    """

    def __init__(
        self,
        model: str,
        base_url: str | None = None,
        api_key: str = "EMPTY",
        temperature: float = 0.0,
        timeout: float = 120.0,
        max_retries: int = 2,
        *,
        client: OpenAI | None = None,
        extra_body: dict[str, Any] | None = None,
    ) -> None:
        self.name = model
        self.model = model
        self.temperature = temperature
        self.timeout = timeout
        self.max_retries = max_retries
        self.extra_body = extra_body
        self.usage = Usage()
        self.deadline: float | None = None
        if client is None:
            if base_url is None:
                raise ValueError(f"OpenAIAgent({model!r}) needs a client or a base_url")
            client = openai_client(
                base_url, api_key, timeout=timeout, max_retries=max_retries, feature="OpenAIAgent"
            )
        self.client = client

    def start(self, task: Task) -> None:
        return None

    def act(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Reply:
        timeout = self.timeout
        if self.deadline is not None:
            left = self.deadline - time.monotonic()
            if left <= 0:
                raise TaskTimeout("the task's time budget ran out before the request")
            timeout = min(timeout, left / (self.max_retries + 1))
        resp = self.client.chat.completions.create(
            model=self.model,
            messages=messages,  # type: ignore[arg-type]
            tools=tools,  # type: ignore[arg-type]
            temperature=self.temperature,
            extra_body=self.extra_body,
            timeout=timeout,
        )
        self.usage.add_response(resp)
        return reply_from_message(resp.choices[0].message)


class TaskTimeout(Exception):
    """An episode ran out of its time budget."""


def _field(obj: Any, name: str) -> Any:
    """A field of a client object or of a plain mapping (the client keeps fields it
    could not validate as plain JSON, so a hostile reply may hold either)."""
    if isinstance(obj, dict):
        return obj.get(name)
    return getattr(obj, name, None)


def _text(value: Any) -> str:
    """Model output as text fit to send back and to write: strings as they are (lone
    surrogates replaced), anything else as its JSON text (or its type name when even
    that fails, e.g. a 5,000-digit integer)."""
    text: str
    if isinstance(value, str):
        text = value
    else:
        try:
            text = json.dumps(value, ensure_ascii=False)
        except (TypeError, ValueError, RecursionError):
            text = f"<{type(value).__name__}>"
    return text.encode("utf-8", "replace").decode("utf-8")


def reply_from_message(message: Any) -> Reply:
    """The :class:`Reply` in a chat-completion message, whatever its shape: a field of the
    wrong type becomes text (a name that is a list is the list's JSON, which no tool
    has), a call without a ``function`` (a custom tool call) is skipped."""
    calls = []
    raw_calls = _field(message, "tool_calls")
    for i, c in enumerate(raw_calls if isinstance(raw_calls, list) else []):
        fn = _field(c, "function")
        if fn is None:
            continue
        raw_id = _field(c, "id")
        args = _field(fn, "arguments")
        calls.append(
            ToolCall(
                _text(raw_id) if raw_id is not None else f"call_{i}",
                _text(_field(fn, "name") or ""),
                "" if args is None else _text(args),
            )
        )
    content = _field(message, "content")
    return Reply(calls, None if content is None else _text(content))


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
    """Follows the task's reference chain, then answers with the goal's values in a plain
    assistant message."""

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
        # A plain assistant message, not a finishing call: the trajectory is then a
        # conversation a model can be fine-tuned on as it is.
        return Reply(text=self.final)


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

    def __init__(self, seed: int = 0, calls: int = 6, trial: int = 0) -> None:
        self.seed = seed
        self.calls = calls
        self.trial = trial
        self.rng = random.Random(seed)
        self.words: list[str] = []
        self.left = 0

    def start(self, task: Task) -> None:
        # Trial 0 keeps the seed string it always had, so earlier numbers still hold.
        trial = f":{self.trial}" if self.trial else ""
        self.rng = random.Random(f"{self.seed}:{task.id}{trial}")
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
    """Why the episode stopped early: the model, the user simulator or the environment
    raised, or the time budget ran out (the episode is still graded; it counts as an
    errored episode in the results)."""
    orders: list[dict[str, Any]] = field(default_factory=list)
    """``greedy`` only: one entry per write order tried (``order``, ``success``,
    ``failed`` grade checks); ``orders_capped`` says more orders existed."""
    orders_capped: bool = False
    trial: int = 0
    """Which of the task's trials this is (0-based)."""
    tools: list[dict[str, Any]] = field(default_factory=list)
    """The tool schemas the agent was offered: with ``messages``, a record a model can
    be fine-tuned on as it is."""
    usage: dict[str, int] = field(default_factory=dict)
    """The agent's requests and tokens (model agents only)."""
    user: str | None = None
    """The user simulator, when the episode had one."""
    user_usage: dict[str, int] = field(default_factory=dict)
    """The model user's requests and tokens."""


class _UserFailed(Exception):
    """The user simulator could not open the conversation."""


class StopRequested(Exception):
    """The run was asked to stop: the episode in flight is dropped (a resumed run does it
    again), never written half done."""


def _describe(exc: BaseException) -> str:
    """An exception as one bounded line (a message may quote a huge model reply)."""
    try:
        text = f"{type(exc).__name__}: {exc}"
    except Exception:  # str() of an exception can fail too (e.g. a huge int inside)
        text = type(exc).__name__
    return _text(text if len(text) <= 500 else text[:500] + " ...")


def system_prompt(env: EnvLike, user: User | None) -> str:
    """The policy and how to answer: to the user in a message when one is simulated,
    else through the finishing tool."""
    if user is None:
        return env.policy + SYSTEM_SUFFIX
    return env.policy + USER_SUFFIX


USER_SUFFIX = (
    "\n\nUse the tools to help the user. Talk to the user in plain messages: ask for any "
    "detail you need, and give your final answer (any values they asked for, or the reason "
    f"you cannot help) in a message. You may also call `{FINISH_NAME}` with the final "
    "answer to end the conversation."
)


def _conversation(messages: list[dict[str, Any]]) -> list[dict[str, str]]:
    """What a user sees: the plain-text user and assistant messages."""
    return [
        {"role": m["role"], "content": str(m.get("content") or "")}
        for m in messages[1:]
        if m["role"] in ("user", "assistant") and not m.get("tool_calls")
    ]


def run_episode(
    env: EnvLike,
    task: Task,
    agent: Agent,
    max_steps: int = 30,
    *,
    user: User | None = None,
    trial: int = 0,
    deadline: float | None = None,
    stop: threading.Event | None = None,
) -> Episode:
    """Run one task to the end, and grade it.

    Nothing an agent, a model, a user simulator or the environment raises ends the run:
    the exception is recorded in ``Episode.error``, the episode ends there and is graded
    as it stands (a failure when the environment itself broke). Malformed calls are the
    environment's to answer with an ``Error:`` observation, and the episode goes on.

    Without ``user`` the instruction is the only user message and the agent's first
    plain-text reply is its final answer. With one, plain-text replies go to the user
    until it says :data:`~graphgen.envs.user.STOP`; the answer graded is everything the
    agent said to the user. ``deadline`` (a :func:`time.monotonic` instant) is the
    episode's time budget; when ``stop`` is set the episode raises :class:`StopRequested`
    at its next turn.
    """
    messages: list[dict[str, Any]] = []
    tools: list[dict[str, Any]] = []
    said: list[str] = []
    calls = invalid = turns = 0
    reward = 0.0
    info: dict[str, Any] = {}
    error: str | None = None
    done = False  # terminated or truncated
    broken = False  # the environment raised: its state is not to be trusted

    def finish(answer: str) -> None:
        nonlocal reward, info, done, error, broken
        try:
            _, reward, _, _, info = env.step({"name": FINISH_NAME, "arguments": {"answer": answer}})
        except Exception as exc:
            error = error or f"environment: {_describe(exc)}"
            broken = True
        done = True

    if isinstance(agent, OpenAIAgent):
        agent.deadline = deadline
    try:
        first, _ = env.reset(options={"task": env_task(task)})
        tools = env.tools
        agent.start(task)
        opening = first
        if user is not None:
            try:
                opening = user.start(task)
            except Exception as exc:
                raise _UserFailed(f"user: {_describe(exc)}") from exc
        messages = [
            {"role": "system", "content": system_prompt(env, user)},
            {"role": "user", "content": _text(opening)},
        ]
        while not done and turns < max_steps:
            if stop is not None and stop.is_set():
                raise StopRequested
            if deadline is not None and time.monotonic() >= deadline:
                raise TaskTimeout("the task's time budget ran out")
            turns += 1
            try:
                reply = agent.act(messages, tools)
            except (StopRequested, TaskTimeout):
                raise
            except Exception as exc:  # a model or API failure ends this episode only
                error = f"model: {_describe(exc)}"
                break
            if not reply.tool_calls:
                text = reply.text or ""
                messages.append({"role": "assistant", "content": text})
                said.append(text)
                if user is None:
                    finish(text)  # a plain text reply is the final answer to the user
                    break
                try:
                    answer = _text(user.reply(_conversation(messages)))
                except Exception as exc:
                    error = f"user: {_describe(exc)}"
                    break
                if STOP in answer:
                    finish("\n".join(said))
                    break
                messages.append({"role": "user", "content": answer})
                continue
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
                try:
                    obs, reward, terminated, truncated, info = env.step(
                        {"name": c.name, "arguments": c.arguments}
                    )
                except Exception as exc:
                    broken = done = True
                    error = f"environment: {_describe(exc)}"
                    # Answer the call anyway, so the record stays a well-formed chat.
                    messages.append(
                        {"role": "tool", "tool_call_id": c.id, "content": f"Error: {error}"}
                    )
                    break
                done = terminated or truncated
                if c.name != FINISH_NAME:
                    calls += 1
                    if info.get("error"):
                        invalid += 1
                messages.append({"role": "tool", "tool_call_id": c.id, "content": obs})
                if done:
                    break
    except StopRequested:
        raise
    except TaskTimeout as exc:
        error = f"time budget: {exc}"
    except _UserFailed as exc:
        error = str(exc)
    except Exception as exc:  # reset, start or the user's opening failed: this episode only
        error = f"episode: {_describe(exc)}"
    if not done and not broken and messages:
        # Out of turns (or stopped early): close the episode so it is graded.
        finish("\n".join(said) if user is not None else "")
    grade = info.get("grade", {}) if not broken else {}
    return Episode(
        task.id,
        task.domain,
        task.kind,
        agent.name,
        reward >= 1.0 and not broken,
        reward if not broken else 0.0,
        calls,
        invalid,
        turns,
        grade,
        messages,
        error,
        trial=trial,
        tools=tools,
        usage=agent.usage.as_dict() if isinstance(agent, OpenAIAgent) else {},
        user=user.name if user is not None else None,
        user_usage=user.usage.as_dict() if isinstance(user, ModelUser) else {},
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
