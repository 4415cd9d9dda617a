"""The task format: pydantic models at the file boundary.

A :class:`Task` holds everything needed to replay, grade and re-verify it: the initial
state, what the instruction gives the agent (``givens``), the reference chain, the goal
as the exact set of changes, the required answer values, and (after ``verify``) a
certificate of what was proven.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

TaskKind = Literal["action", "information", "refusal"]


class _M(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Call(_M):
    """One tool call of a chain."""

    tool: str
    args: dict[str, Any] = Field(default_factory=dict)


class Given(_M):
    """A value the instruction states, at its knowledge sort (e.g. ``field:User.email``)."""

    sort: str
    value: Any


class Change(_M):
    """One expected difference between the initial and final state.

    ``field`` is ``'*'`` for a whole row: ``before`` None = created, ``after`` None =
    deleted. Everything not listed must stay unchanged.
    """

    entity: str
    key: str
    field: str
    before: Any = None
    after: Any = None


class Target(_M):
    """An entity the instruction refers to, and how (the referring expression)."""

    entity: str
    key: str
    phrase: str
    description: str = Field(description="the expression (IR source) that picks it out")


class Goal(_M):
    """What success means: exact state changes, plus answer values for information."""

    changes: list[Change] = Field(default_factory=list)
    answer: list[Any] = Field(default_factory=list)


class ProofResult(_M):
    """One proof obligation's outcome."""

    name: str
    ok: bool
    ms: float = 0.0
    detail: str = ""


class Certificate(_M):
    """What ``verify`` proved about a task, within bound ``k``."""

    k: int
    proofs: list[ProofResult]
    z3_version: str
    checker_version: str


class Task(_M):
    """A provably solvable (or provably refusable) tool-use task."""

    id: str
    domain: str
    domain_hash: str
    seed: int
    kind: TaskKind
    instruction: str
    givens: list[Given]
    initial_state: dict[str, Any]
    chain: list[Call]
    goal: Goal
    min_calls: int = Field(description="proven lower bound on calls (chain length until proven)")
    difficulty: int
    tools_used: list[str]
    targets: list[Target] = Field(default_factory=list)
    refused_call: Call | None = Field(
        default=None, description="refusal tasks: the write the user asks for, which must fail"
    )
    certificate: Certificate | None = None


class Manifest(_M):
    """First line of a task-set file: how it was made and what it holds."""

    format: Literal["graphgen-taskset"] = "graphgen-taskset"
    generator_version: str
    domain: str
    domain_hash: str
    seed: int
    options: dict[str, Any]
    accepted: int
    by_kind: dict[str, int]
    by_length: dict[str, int]
    rejected: dict[str, int]
