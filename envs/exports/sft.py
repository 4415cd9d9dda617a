"""Oracle trajectories as supervised fine-tuning data, in two conversation formats.

Each trajectory is *run*, not written from the chain: the oracle agent plays the task
in the domain's compiled environment (:func:`graphgen.envs.agent.run_episode`), and the
export keeps what the environment answered to every call. A task whose oracle episode
fails is an error, never a silent row. The final ``respond`` action becomes what a chat
model writes at the end of a conversation: a plain assistant message with the answer
(the agent loop reads a plain reply as the final answer too), so the tool list leaves
``respond`` out.

``messages.jsonl`` — one ``{"messages": [...], "tools": [...]}`` per line: the
conversational format of TRL's SFT trainer and of ``transformers`` chat templates.
Assistant turns carry ``tool_calls`` (``{"id", "type": "function", "function": {"name",
"arguments"}}`` with the arguments as an object, as chat templates expect), tool turns
carry ``tool_call_id``, ``name`` and the observation text; ``tools`` holds the strict
OpenAI function schemas.

``sharegpt.jsonl`` — one ``{"conversations": [...], "system": ..., "tools": ...}`` per
line, the ShareGPT layout with tool turns: ``from`` is ``human``, ``gpt``,
``function_call`` (``value``: ``{"name", "arguments"}`` as JSON text) or
``observation``; ``tools`` is the schema list as JSON text.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from graphgen.domain import Domain
from graphgen.envs.agent import EnvLike, OracleAgent, run_episode
from graphgen.envs.exports import ExportError, TaskSet
from graphgen.envs.load import load_env_module
from graphgen.envs.schemas import FINISH_NAME
from graphgen.tasks.model import Task

__all__ = ["SYSTEM_SUFFIX", "export_sft", "oracle_conversation", "to_sharegpt"]

SYSTEM_SUFFIX = (
    "\n\nUse the tools to help the user. When you are done, reply to the user with your "
    "final answer (include any values they asked for, or the reason you cannot help)."
)


def _dumps(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def oracle_conversation(env: EnvLike, task: Task, max_steps: int = 100) -> dict[str, Any]:
    """The oracle's episode of ``task`` in ``env`` as ``{"messages", "tools"}``.

    Raises :class:`~graphgen.envs.exports.ExportError` if the episode does not succeed.

    >>> from graphgen.domains import load_builtin
    >>> from graphgen.envs.load import load_env_module
    >>> from graphgen.tasks.taskset import generate
    >>> d = load_builtin("mock")
    >>> conv = oracle_conversation(load_env_module(d).Environment(), generate(d, 1, 0).tasks[0])
    >>> [m["role"] for m in conv["messages"]]
    ['system', 'user', 'assistant', 'tool', 'assistant', 'tool', 'assistant']
    """
    ep = run_episode(env, task, OracleAgent(), max_steps)
    if not ep.success:
        failed = [i.get("check") for i in ep.grade.get("items", []) if not i.get("ok")]
        raise ExportError(
            f"task {task.id}: the oracle's episode fails in the compiled {task.domain} "
            f"environment ({ep.error or '; '.join(str(f) for f in failed)})"
        )
    raw = ep.messages
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": env.policy + SYSTEM_SUFFIX},
        {"role": "user", "content": raw[1]["content"]},
    ]
    names: dict[str, str] = {}
    answer = ""
    for m in raw[2:]:
        if m["role"] == "assistant":
            if not m.get("tool_calls") and m.get("content"):
                answer = str(m["content"])  # the oracle ends in a plain message
            calls = []
            for c in m.get("tool_calls") or []:
                fn = c["function"]
                args = json.loads(fn["arguments"]) if fn["arguments"] else {}
                if fn["name"] == FINISH_NAME:
                    answer = str(args.get("answer", ""))
                    continue
                names[c["id"]] = fn["name"]
                calls.append(
                    {
                        "id": c["id"],
                        "type": "function",
                        "function": {"name": fn["name"], "arguments": args},
                    }
                )
            if calls:
                messages.append({"role": "assistant", "content": "", "tool_calls": calls})
        elif m["role"] == "tool" and m["tool_call_id"] in names:
            messages.append(
                {
                    "role": "tool",
                    "tool_call_id": m["tool_call_id"],
                    "name": names[m["tool_call_id"]],
                    "content": m["content"],
                }
            )
    messages.append({"role": "assistant", "content": answer})
    tools = [t for t in env.tools if t["function"]["name"] != FINISH_NAME]
    return {"messages": messages, "tools": tools}


def to_sharegpt(conversation: dict[str, Any]) -> dict[str, Any]:
    """A ``{"messages", "tools"}`` conversation in the ShareGPT layout.

    >>> c = {"messages": [{"role": "system", "content": "S"}, {"role": "user", "content": "Hi"},
    ...      {"role": "assistant", "content": "Hello"}], "tools": []}
    >>> to_sharegpt(c)["conversations"]
    [{'from': 'human', 'value': 'Hi'}, {'from': 'gpt', 'value': 'Hello'}]
    """
    turns: list[dict[str, str]] = []
    system = ""
    for m in conversation["messages"]:
        role = m["role"]
        if role == "system":
            system = m["content"]
        elif role == "user":
            turns.append({"from": "human", "value": m["content"]})
        elif role == "tool":
            turns.append({"from": "observation", "value": m["content"]})
        elif m.get("tool_calls"):
            for c in m["tool_calls"]:
                fn = c["function"]
                value = _dumps({"name": fn["name"], "arguments": fn["arguments"]})
                turns.append({"from": "function_call", "value": value})
        else:
            turns.append({"from": "gpt", "value": m["content"]})
    return {"conversations": turns, "system": system, "tools": _dumps(conversation["tools"])}


def export_sft(
    sets: Sequence[TaskSet], domains: dict[str, Domain], output: str | Path
) -> list[Path]:
    """Run the oracle on every task and write ``messages.jsonl`` and ``sharegpt.jsonl``.

    ``domains`` maps each task set's domain name to the loaded domain, whose compiled
    environment runs the episodes.

    >>> import tempfile
    >>> from graphgen.domains import load_builtin
    >>> from graphgen.tasks.taskset import generate
    >>> d = load_builtin("mock")
    >>> res = generate(d, 2, 0)
    >>> out = Path(tempfile.mkdtemp())
    >>> [p.name for p in export_sft([(res.manifest, res.tasks)], {"mock": d}, out)]
    ['messages.jsonl', 'sharegpt.jsonl']
    """
    out = Path(output)
    out.mkdir(parents=True, exist_ok=True)
    envs: dict[str, EnvLike] = {}
    chats, shared = [], []
    for m, tasks in sets:
        if m.domain not in domains:
            raise ExportError(f"no domain {m.domain!r} loaded for its task set")
        if m.domain not in envs:
            envs[m.domain] = load_env_module(domains[m.domain]).Environment(max_steps=1000)
        for t in tasks:
            conv = oracle_conversation(envs[m.domain], t)
            chats.append(_dumps({"id": t.id, "domain": t.domain, "kind": t.kind, **conv}))
            shared.append(_dumps({"id": t.id, **to_sharegpt(conv)}))
    files = [out / "messages.jsonl", out / "sharegpt.jsonl"]
    for path, lines in zip(files, (chats, shared), strict=True):
        path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return files
