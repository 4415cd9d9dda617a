"""Proof 1's one-shot solver for pinned chains (``Bmc.check(..., fixed=True)``), also on
the unrolling of the chain's own tools, answers as the incremental solver does: the
same verdict, the same final state, and unsat on a chain the agent cannot make."""

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
    """(status, final state) from the incremental and the one-shot solver, from the
    one-shot solver on the unrolling of the chain's own tools (``Bmc.only``), and on
    the one whose every step encodes only the tool the chain calls there (what proof 1
    uses past the depth the other proofs unrolled), for the task's chain pinned without
    its first ``chain_cut`` calls."""
    p = Prover(domain, task)
    out: list[tuple[str, object]] = []
    with p.z3:
        bmc = p.build()
        assert bmc is not None, p.build_error
        chain = task.chain[chain_cut:]
        n = len(chain)
        h = max(n, p.horizon)
        own = bmc.only({c.tool for c in chain}, h)
        assert len(own.tools) < len(bmc.tools)
        step = bmc.only({c.tool for c in chain}, h, per_step=[c.tool for c in chain])
        for b, fixed in ((bmc, False), (bmc, True), (own, True), (step, True)):
            pin = b.pinned(chain)
            assert pin is not None
            query = [pin, p._goal_lit(h, b), *b.length_is(n)]
            status, model, _ = b.check(query, 20_000, fixed=fixed)
            out.append((status, None if model is None else b.final_state(model, h)))
    return out


@pytest.mark.parametrize("name", ["airline", "retail"])
def test_one_shot_and_incremental_agree_on_pinned_reference_chains(name: str) -> None:
    domain, tasks = _tasks(name)
    assert tasks, "no task of the wanted length"
    for t in tasks:
        inc, one, own, step = _both(domain, t)
        assert inc[0] == one[0] == own[0] == step[0] == "sat", (t.id, inc, one, own, step)
        assert inc[1] == one[1] == own[1] == step[1], t.id


@pytest.mark.parametrize("name", ["airline", "retail"])
def test_one_shot_solver_rejects_a_chain_missing_its_first_call(name: str) -> None:
    """Without its first call (the lookup that reveals an id the rest passes on), the
    chain passes an argument the agent cannot know: every solver finds it impossible."""
    domain, tasks = _tasks(name)
    for t in tasks:
        inc, one, own, step = _both(domain, t, chain_cut=1)
        assert inc[0] == one[0] == own[0] == step[0] == "unsat", (t.id, inc, one, own, step)


@pytest.mark.parametrize("name", ["airline", "retail"])
def test_a_per_step_unrolling_admits_only_its_own_chain(name: str) -> None:
    """The unrolling whose steps each encode one tool of the chain admits that chain
    and not the same calls in another order: pinned there, the chain with two adjacent
    calls of different tools swapped is unsat."""
    domain, tasks = _tasks(name)
    tried = 0
    for t in tasks:
        chain = list(t.chain)
        i = next((i for i in range(len(chain) - 1) if chain[i].tool != chain[i + 1].tool), None)
        if i is None:
            continue
        swapped = [*chain[:i], chain[i + 1], chain[i], *chain[i + 2 :]]
        p = Prover(domain, t)
        with p.z3:
            bmc = p.build()
            assert bmc is not None, p.build_error
            h = max(len(chain), p.horizon)
            step = bmc.only({c.tool for c in chain}, h, per_step=[c.tool for c in chain])
            for pinned, want in ((chain, "sat"), (swapped, "unsat")):
                pin = step.pinned(pinned)
                assert pin is not None
                status, _, _ = step.check([pin, *step.length_is(len(pinned))], 20_000, fixed=True)
                assert status == want, (t.id, i, want)
        tried += 1
    assert tried


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


def test_proof_1_past_the_other_proofs_depth_pins_the_chain_on_its_own_tools() -> None:
    """A retail task z3 proves whose minimum is below its reference's length and whose
    proof 5 the write sequences settle: the other proofs unroll only to the minimum, so
    proof 1 pins the chain on an unrolling of its own tools (over the same universe)
    and z3 agrees with the dry-run there."""
    domain = load_builtin("retail")
    for t in generate(domain, 60, 0).tasks:
        if t.kind == "refusal":
            continue
        p = Prover(domain, t)
        m = p.find_min_calls(len(t.chain))
        if not isinstance(m, int) or m >= len(t.chain):
            continue
        p.task = t.model_copy(update={"min_calls": m})
        if p.by_search:
            continue  # no encoding at all
        results = p.all()
        assert all(r.ok for r in results), [(r.name, r.detail) for r in results]
        assert p.bmc is not None
        if len(p.bmc.steps) == len(t.chain):
            continue  # a proof unrolled the whole length: proof 1 pins the chain there
        assert p._pinning is not None and len(p._pinning.steps) == len(t.chain)
        assert len(p._pinning.tools) < len(p.bmc.tools)
        assert p._pinning._per_step == [c.tool for c in t.chain]
        assert "z3 agrees" in results[0].detail
        return
    raise AssertionError("no task whose proofs stop short of its chain's length")
