"""A task set in τ²-bench's files: a domain folder with ``tasks.json``, the policy, the
tool descriptions and the database.

τ²-bench grades a task by replaying its reference actions on a fresh environment and
comparing end states (reward basis ``DB``), and by looking for strings in the agent's
messages (``COMMUNICATE``); graphgen's tasks map onto that directly:

==========================================  ==========================================
graphgen task                               τ²-bench task
==========================================  ==========================================
``id``                                      ``id``
``instruction``, ``givens``                 ``user_scenario.instructions``
                                            (``reason_for_call``, ``known_info``)
``initial_state``                           ``initial_state.initialization_data``
                                            ``.agent_data``
``chain``                                   ``evaluation_criteria.actions``
                                            (``name``, ``arguments``)
``goal.answer`` and one group of            ``evaluation_criteria.communicate_info``
``goal.answer_any``
==========================================  ==========================================

``reward_basis`` is ``["DB", "COMMUNICATE"]``. What τ²-bench cannot say is written in
``description.notes``: a refusal may cite any one of several reasons (the first is in
``communicate_info``), and values the answer must not state.

Each domain gets a folder ``<domain>/`` with ``tasks.json``, ``policy.md``,
``tools.json`` (the strict OpenAI tool schemas the compiled environment offers) and
``db.json``: the database with every table empty and every id counter at zero. τ²-bench
applies a task's ``initialization_data.agent_data`` to the database as an update (a
deep merge), so merging each task's whole initial state onto empty tables gives exactly
that state; a populated default database would leave its own rows behind.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from graphgen.domain import Domain
from graphgen.envs.exports import ExportError, TaskSet
from graphgen.envs.schemas import openai_tools
from graphgen.tasks.model import Task

__all__ = ["REWARD_BASIS", "empty_db", "export_tau2", "tau2_task"]

REWARD_BASIS = ["DB", "COMMUNICATE"]

USER_GUIDE = (
    "Ask for exactly what the reason for the call says, in your own words. State only the "
    "values listed as known, and only when the agent needs them."
)


def _text(value: Any) -> str:
    return json.dumps(value) if isinstance(value, bool) or value is None else str(value)


def tau2_task(task: Task) -> dict[str, Any]:
    """One task as a τ²-bench ``Task`` (plain JSON data).

    >>> from graphgen.domains import load_builtin
    >>> from graphgen.tasks.taskset import generate
    >>> t = tau2_task(generate(load_builtin("mock"), 1, 0).tasks[0])
    >>> [a["name"] for a in t["evaluation_criteria"]["actions"]]
    ['find_account', 'lock_account']
    """
    said = [*task.goal.answer, *(task.goal.answer_any[0] if task.goal.answer_any else [])]
    notes = [f"graphgen {task.kind} task; proven minimum {task.min_calls} calls."]
    if task.refused_call is not None:
        notes.append(
            f"The request {task.refused_call.tool}({json.dumps(task.refused_call.args)}) must "
            "be refused and nothing changed."
        )
    if len(task.goal.answer_any) > 1:
        groups = "; ".join(", ".join(_text(v) for v in g) for g in task.goal.answer_any)
        notes.append(f"Any one of these reasons will do: {groups}.")
    if task.goal.answer_not:
        notes.append(
            "The answer must not state: " + ", ".join(_text(v) for v in task.goal.answer_not) + "."
        )
    known = "\n".join(f"{g.sort}: {_text(g.value)}" for g in task.givens)
    return {
        "id": task.id,
        "description": {
            "purpose": f"{task.kind} task on the {task.domain} domain",
            "relevant_policies": None,
            "notes": " ".join(notes),
        },
        "user_scenario": {
            "persona": None,
            "instructions": {
                "domain": task.domain,
                "reason_for_call": task.instruction,
                "known_info": known or None,
                "unknown_info": None,
                "task_instructions": USER_GUIDE,
            },
        },
        "ticket": task.instruction,
        "initial_state": {
            "initialization_data": {"agent_data": task.initial_state, "user_data": None},
            "initialization_actions": None,
            "message_history": None,
        },
        "evaluation_criteria": {
            "actions": [
                {
                    "action_id": f"{task.id}_{i}",
                    "requestor": "assistant",
                    "name": c.tool,
                    "arguments": c.args,
                    "info": None,
                    "compare_args": None,
                }
                for i, c in enumerate(task.chain)
            ],
            "env_assertions": None,
            "communicate_info": [_text(v) for v in said],
            "nl_assertions": None,
            "reward_basis": list(REWARD_BASIS),
        },
    }


def empty_db(domain: Domain) -> dict[str, Any]:
    """The database of ``domain`` with no rows: what a task's initial state merges onto.

    >>> from graphgen.domains import load_builtin
    >>> empty_db(load_builtin("mock"))
    {'counters': {'Account': 0, 'Payment': 0}, 'tables': {'Account': {}, 'Payment': {}}}
    """
    names = sorted(domain.entities)
    return {"counters": dict.fromkeys(names, 0), "tables": {n: {} for n in names}}


def _dump(path: Path, data: Any) -> Path:
    path.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return path


def export_tau2(
    sets: Sequence[TaskSet], domains: dict[str, Domain], output: str | Path
) -> list[Path]:
    """Write one τ²-bench domain folder per domain under ``output``; the files written.

    ``domains`` maps each task set's domain name to the loaded domain (its policy and
    tools go in the folder).

    >>> import tempfile
    >>> from graphgen.domains import load_builtin
    >>> from graphgen.tasks.taskset import generate
    >>> d = load_builtin("mock")
    >>> res = generate(d, 2, 0)
    >>> out = Path(tempfile.mkdtemp())
    >>> files = export_tau2([(res.manifest, res.tasks)], {"mock": d}, out)
    >>> [p.relative_to(out).as_posix() for p in files]
    ['mock/tasks.json', 'mock/policy.md', 'mock/tools.json', 'mock/db.json']
    """
    per_domain: dict[str, list[Task]] = {}
    for m, tasks in sets:
        if m.domain not in domains:
            raise ExportError(f"no domain {m.domain!r} loaded for its task set")
        per_domain.setdefault(m.domain, []).extend(tasks)
    written: list[Path] = []
    for name, tasks in per_domain.items():
        d = domains[name]
        ids = [t.id for t in tasks]
        if len(set(ids)) != len(ids):
            dup = next(i for i in ids if ids.count(i) > 1)
            raise ExportError(f"task id {dup!r} appears twice in the {name} task sets")
        folder = Path(output) / name
        folder.mkdir(parents=True, exist_ok=True)
        written.append(_dump(folder / "tasks.json", [tau2_task(t) for t in tasks]))
        policy = folder / "policy.md"
        policy.write_text(f"# {name} policy\n\n{d.policy.strip()}\n", encoding="utf-8")
        written.append(policy)
        written.append(_dump(folder / "tools.json", openai_tools(d)))
        written.append(_dump(folder / "db.json", empty_db(d)))
    return written
