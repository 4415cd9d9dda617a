"""The task format: pydantic models at the file boundary.

A :class:`Task` holds everything needed to replay, grade and re-verify it: the initial
state, what the instruction gives the agent (``givens``), the reference chain, the goal
as the exact set of changes, the required answer values, and (after ``verify``) a
certificate of what was proven.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    model_serializer,
    model_validator,
)

TaskKind = Literal["action", "information", "refusal"]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Call(_Strict):
    """One tool call of a chain."""

    tool: str
    args: dict[str, Any] = Field(default_factory=dict)


class Given(_Strict):
    """A value the instruction states, at its knowledge sort (e.g. ``field:User.email``)."""

    sort: str
    value: Any


class Change(_Strict):
    """One expected difference between the initial and final state.

    ``field`` is ``'*'`` for a whole row: ``before`` None = created, ``after`` None =
    deleted. Everything not listed must stay unchanged.
    """

    entity: str
    key: str | int  # int for a table with ``type: int`` keys
    field: str
    before: Any = None
    after: Any = None


class Target(_Strict):
    """An entity the instruction refers to, and how (the referring expression)."""

    entity: str
    key: str | int  # int for a table with ``type: int`` keys
    phrase: str
    description: str = Field(description="the expression (IR source) that picks it out")


class Goal(_Strict):
    """What success means: exact state changes, plus what the answer must say.

    ``answer``: values the answer must all mention (an information task's answer).
    ``answer_any``: groups of values, one group of which the answer must mention (a
    refusal's true reasons: any one of them will do). ``answer_not``: values that
    contradict the right answer (another member of the same status, another row's value
    of the same field); an answer stating one fails, so listing every candidate does
    not pass. Empty lists are left out of the file, so older task files read and grade
    as before.
    """

    changes: list[Change] = Field(default_factory=list)
    answer: list[Any] = Field(default_factory=list)
    answer_any: list[list[Any]] = Field(default_factory=list)
    answer_not: list[Any] = Field(default_factory=list)

    @model_serializer(mode="wrap")
    def _drop_empty(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        for name in ("answer_any", "answer_not"):
            if not data.get(name):
                data.pop(name, None)
        return data

    @property
    def has_answer(self) -> bool:
        """Does the goal ask the agent to say anything?"""
        return bool(self.answer or self.answer_any)


class ProofStatus(StrEnum):
    """How a proof obligation ended."""

    PROVED = "proved"
    REFUTED = "refuted"  # z3 (or the interpreter) showed the claim false
    INCONCLUSIVE = "inconclusive"  # the solver gave up: see :class:`Inconclusive`


class Inconclusive(StrEnum):
    """Why the solver gave up on a query."""

    TIMEOUT = "timeout"  # out of time or of its resource limit (the same thing here)
    UNKNOWN = "unknown"  # any other reason z3 reports (an incomplete theory, ...)


class ProofResult(_Strict):
    """One proof obligation's outcome.

    ``status`` (and ``cause`` when inconclusive) is what every tally reads. Only ``ok``
    is written to files: a certificate is written only for a task whose proofs all
    passed, so the status adds nothing there, and leaving it out keeps task files as they
    were. A result read back from a file gets its status from ``ok`` (a failed proof read
    back counts as refuted; nothing re-reads failures, :func:`recheck` proves again).
    Build results with :meth:`proved`, :meth:`refuted` and :meth:`inconclusive`.
    """

    name: str
    ok: bool
    ms: float = 0.0
    detail: str = ""
    status: ProofStatus = Field(default=ProofStatus.REFUTED, exclude=True)
    cause: Inconclusive | None = Field(default=None, exclude=True)

    @model_validator(mode="before")
    @classmethod
    def _status_from_ok(cls, data: Any) -> Any:
        if isinstance(data, dict) and "status" not in data and "ok" in data:
            data = {**data, "status": ProofStatus.PROVED if data["ok"] else ProofStatus.REFUTED}
        return data

    @model_validator(mode="after")
    def _consistent(self) -> ProofResult:
        if self.ok != (self.status is ProofStatus.PROVED):
            raise ValueError(f"proof {self.name}: ok={self.ok} but status {self.status}")
        if (self.cause is not None) != (self.status is ProofStatus.INCONCLUSIVE):
            raise ValueError(f"proof {self.name}: a cause goes with an inconclusive status only")
        return self

    @classmethod
    def proved(cls, name: str, detail: str) -> ProofResult:
        """The obligation holds."""
        return cls(name=name, ok=True, detail=detail, status=ProofStatus.PROVED)

    @classmethod
    def refuted(cls, name: str, detail: str) -> ProofResult:
        """The obligation is shown false (``detail`` says how)."""
        return cls(name=name, ok=False, detail=detail, status=ProofStatus.REFUTED)

    @classmethod
    def inconclusive(cls, name: str, cause: Inconclusive, detail: str) -> ProofResult:
        """The solver could not decide the obligation."""
        return cls(name=name, ok=False, detail=detail, status=ProofStatus.INCONCLUSIVE, cause=cause)


class Certificate(_Strict):
    """What ``verify`` proved about a task, within bound ``k``."""

    k: int
    proofs: list[ProofResult]
    z3_version: str
    checker_version: str


class Task(_Strict):
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
    ordered: bool = Field(
        default=False,
        description="the instruction states the order of its requests: the writes are to be "
        "made in the chain's order (otherwise in any order their data dependencies allow)",
    )
    refused_call: Call | None = Field(
        default=None, description="refusal tasks: the write the user asks for, which must fail"
    )
    certificate: Certificate | None = None


class ParaphraseCounts(_Strict):
    """What the paraphrase step did to a task set's accepted tasks (one count each)."""

    model: str
    paraphrased: int = Field(description="tasks whose instruction is the model's rewrite")
    unchanged: int = Field(description="the model returned the instruction as it was")
    rejected: dict[str, int] = Field(
        default_factory=dict, description="rewrites refused (original kept), by reason"
    )


class DomainFile(_Strict):
    """The domain file a task set of a domain that is not built in was made from."""

    path: str = Field(description="relative to the task-set file's folder (or absolute)")
    sha256: str = Field(description="sha256 of the file's bytes when the set was made")


class Manifest(_Strict):
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
    paraphrase: ParaphraseCounts | None = Field(
        default=None, description="only in sets made with a paraphrase model"
    )
    domain_file: DomainFile | None = Field(
        default=None, description="only in sets of a domain that is not built in"
    )
