"""Proof 1's one-shot solver for pinned chains (``Bmc.check(..., fixed=True)``) answers
as the incremental solver does: the same verdict, the same final state, and unsat on a
chain the agent cannot make."""

from __future__ import annotations

from functools import cache

import pytest

from graphgen.domain import Domain
from graphgen.domains import load_builtin
from graphgen.tasks.model import Task
from graphgen.tasks.taskset import GenOptions, generate
from graphgen.verify import proofs
from graphgen.verify.proofs import Prover, prove_task


@cache
def _tasks(name: str) -> tuple[Domain, list[Task]]:
    d = load_builtin(name)
    got = generate(d, 12, 3, GenOptions()).tasks
    # chains long enough for knowledge to matter, short enough to prove quickly
    return d, [t for t in got if 3 <= len(t.chain) <= 8 and t.kind != "refusal"][:4]


def _both(domain: Domain, task: Task, chain_cut: int = 0) -> list[tuple[str, object]]:
    """(status, final state) from the incremental and the one-shot solver, for the
    task's chain pinned without its first ``chain_cut`` calls."""
    p = Prover(domain, task)
    out: list[tuple[str, object]] = []
    with p.z3:
        bmc = p.build()
        assert bmc is not None, p.build_error
        chain = task.chain[chain_cut:]
        pin = bmc.pinned(chain)
        assert pin is not None
        n = len(chain)
        h = max(n, p.horizon)
        query = [pin, p._goal_lit(h), *bmc.length_is(n)]
        for fixed in (False, True):
            status, model, _ = bmc.check(query, 20_000, fixed=fixed)
            out.append((status, None if model is None else bmc.final_state(model, h)))
    return out


@pytest.mark.parametrize("name", ["airline", "retail"])
def test_one_shot_and_incremental_agree_on_pinned_reference_chains(name: str) -> None:
    domain, tasks = _tasks(name)
    assert tasks, "no task of the wanted length"
    for t in tasks:
        inc, one = _both(domain, t)
        assert inc[0] == one[0] == "sat", (t.id, inc[0], one[0])
        assert inc[1] == one[1], t.id


@pytest.mark.parametrize("name", ["airline", "retail"])
def test_one_shot_solver_rejects_a_chain_missing_its_first_call(name: str) -> None:
    """Without its first call (the lookup that reveals an id the rest passes on), the
    chain passes an argument the agent cannot know: both solvers find it impossible."""
    domain, tasks = _tasks(name)
    for t in tasks:
        inc, one = _both(domain, t, chain_cut=1)
        assert inc[0] == one[0] == "unsat", (t.id, inc[0], one[0])


def test_reference_chain_proof_is_the_same_through_either_solver(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    domain, tasks = _tasks("airline")
    # engine z3: the explicit search would decide some of these with no z3 proof 1
    default = [prove_task(domain, t, engine="z3").proofs for t in tasks]
    monkeypatch.setattr(proofs, "PINNED_TRY_MS", 0)  # the one-shot solver for every chain
    forced = [prove_task(domain, t, engine="z3").proofs for t in tasks]
    for a, b in zip(default, forced, strict=True):
        assert [(r.name, r.ok, r.detail) for r in a] == [(r.name, r.ok, r.detail) for r in b]
        assert a[0].name == "reference_chain" and a[0].ok and "z3 agrees" in a[0].detail
