"""Reference episodes for the integration tests: built-in task sets and the oracle's calls
(the reference chain, then the finishing action with the goal's values), taken from
:class:`graphgen.envs.agent.OracleAgent` so every adapter is driven by the same plan."""

from __future__ import annotations

import importlib
import json
from functools import cache
from types import ModuleType
from typing import Any

from graphgen.domains import load_builtin
from graphgen.envs.agent import OracleAgent, env_task
from graphgen.envs.load import load_env_module
from graphgen.tasks.model import Task
from graphgen.tasks.taskset import generate


@cache
def tasks(domain: str, n: int, seed: int = 1) -> tuple[Task, ...]:
    """``n`` generated tasks of a built-in domain (cached: generation takes a while)."""
    return tuple(generate(load_builtin(domain), n, seed).tasks)


def task_json(task: Task) -> str:
    """The task as the JSON text the adapters take."""
    return json.dumps(env_task(task))


def oracle_calls(task: Task) -> list[tuple[str, dict[str, Any]]]:
    """The oracle's calls for ``task``, the finishing ``respond`` last."""
    agent = OracleAgent()
    agent.start(task)
    calls: list[tuple[str, dict[str, Any]]] = []
    while not calls or calls[-1][0] != "respond":
        reply = agent.act([], [])
        if not reply.tool_calls:  # the oracle ends in a plain message: its answer
            calls.append(("respond", {"answer": reply.text}))
            break
        (call,) = reply.tool_calls
        calls.append((call.name, json.loads(call.arguments)))
    return calls


def package(domain: str, module: str = "") -> ModuleType:
    """The compiled package of a built-in domain, or one of its modules."""
    pkg = load_env_module(load_builtin(domain))
    return importlib.import_module(f"{pkg.__name__}.{module}") if module else pkg
