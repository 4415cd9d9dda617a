"""Proof 5 where its ``W`` is out of reach: the stronger claim that needs none.

Proof 5 lists ``W``, every write some minimal solution makes, and shows that the chains
making only those writes end in the reference's state. When the list runs past
``MAX_MINIMAL_WRITES`` (or z3 gives up making it) the task used to be rejected. It now
asks whether *every* chain of at most ``L`` calls that makes no more writes than the
reference, whichever, and reaches the goal ends in that state: a claim about more
chains, so where it holds proof 5 does. Where a chain ends elsewhere it fails, and the
task stays rejected."""

from __future__ import annotations

from pathlib import Path

import pytest

from graphgen.domain import Domain
from graphgen.domains import load_builtin
from graphgen.tasks.model import ProofStatus, Task
from graphgen.tasks.taskset import GenOptions, generate, read_taskset
from graphgen.verify import proofs as proofs_module
from graphgen.verify.proofs import Engine, Prover

RETAIL = load_builtin("retail")
MOCK = load_builtin("mock")
DATA = Path(__file__).parent / "data"


def _candidate(tid: str, n: int) -> Task:
    got = [t for t in generate(RETAIL, n, 0, GenOptions()).tasks if t.id == tid]
    assert got, tid
    return got[0]


def _prover(task: Task, domain: Domain = RETAIL, engine: Engine = "auto") -> Prover:
    """A prover of ``task`` whose claimed minimum is the proven one, as certify's."""
    p = Prover(domain, task, engine=engine)
    m = p.find_min_calls(len(task.chain))
    assert isinstance(m, int)
    p.task = task.model_copy(update={"min_calls": m})
    return p


@pytest.mark.parametrize(("tid", "holds"), [("retail-0-00106", False), ("retail-0-00003", True)])
def test_the_stronger_claim_still_rejects_a_chain_that_ends_elsewhere(
    tid: str, holds: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With no room for ``W`` at all, every task takes the stronger claim: one whose
    proof 5 finds a solution ending elsewhere (retail-0-00106) stays rejected, as too
    open; one whose solutions all end alike (retail-0-00003) is proven by it."""
    task = _candidate(tid, 107)
    before = _prover(task).unique_final_state()
    assert (before.status is ProofStatus.PROVED) is holds, before.detail
    monkeypatch.setattr(proofs_module, "MAX_MINIMAL_WRITES", 0)
    got = _prover(task).unique_final_state()
    if holds:
        assert got.status is ProofStatus.PROVED, got.detail
        assert "whichever they are" in got.detail and "more than 0" in got.detail
    else:
        assert got.status is ProofStatus.REFUTED and "too open" in got.detail


@pytest.mark.parametrize("gave_up", [False, True])
def test_the_stronger_claim_gets_a_share_of_the_limit_after_z3_gave_up(
    gave_up: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """After z3 gave up on proof 5's own queries the stronger claim, which is harder, is
    asked within a share of the time limit; when ``W`` was only too long, within all of
    it. The claim's answer on retail-0-00003 (it holds) is the same either way."""
    task = _candidate("retail-0-00003", 107)
    p = _prover(task)
    assert p.build() is not None and p.bmc is not None
    limits: list[int] = []
    check = type(p.bmc).check

    def recorded(self: object, assumptions: object, timeout_ms: int = 0, **kw: object) -> object:
        limits.append(timeout_ms)
        return check(self, assumptions, timeout_ms, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(type(p.bmc), "check", recorded)
    with p.z3:  # the prover's own z3 context, which its public proofs enter
        got = p._any_writes_end_alike(p.horizon, "why", gave_up=gave_up)
    assert got is not None and got.status is ProofStatus.PROVED, got
    want = p.timeout_ms // proofs_module.AFTER_GIVE_UP if gave_up else p.timeout_ms
    assert limits and limits[-1] == want, limits


def test_certify_stops_at_the_first_failed_proof() -> None:
    """A task whose proof 5 fails (retail-0-00106: a solution ends elsewhere) is rejected
    for it without running the proofs after it; ``graphgen verify``'s full run reports
    every proof and the same first failure."""
    task = _candidate("retail-0-00106", 107)
    stopped = _prover(task).all(stop_on_failure=True)
    full = _prover(task).all()
    names = [r.name for r in stopped]
    assert names[-1] == "unique_final_state" and stopped[-1].status is ProofStatus.REFUTED
    assert "reference_chain" not in names  # proof 1 runs last
    assert len(full) > len(stopped) and full[0].name == "reference_chain"
    failed = [r.name for r in full if r.status is not ProofStatus.PROVED]
    assert failed[0] == "unique_final_state", failed


def _proof5(task: Task, engine: Engine) -> tuple[ProofStatus, str]:
    got = _prover(task, MOCK, engine).unique_final_state()
    return got.status, got.detail


def test_a_minimal_reference_asks_the_claim_without_w_first(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Where the reference is as short as the minimum, every chain proof 5 speaks of is
    a minimal solution, so z3 is asked the claim that needs no ``W`` before ``W`` is
    listed. With the explicit search off, a good mock task whose reference is minimal
    is proven by that claim; broken-mock-14, whose two minimal solutions end in
    different states, fails it and is still rejected by the query over ``W``. Engine
    "z3", which lists ``W``, reaches the same verdicts."""
    monkeypatch.setattr(proofs_module, "EXPLICIT_CALLS", 0)
    monkeypatch.setattr(proofs_module, "LONG_EXPLICIT_CALLS", 0)
    good = next(
        t
        for t in read_taskset(DATA / "good_mock.jsonl")[1]
        if t.kind == "action" and len(t.chain) == t.min_calls
    )
    status, detail = _proof5(good, "auto")
    assert status is ProofStatus.PROVED and "that length is minimal" in detail, detail
    status, detail = _proof5(good, "z3")
    assert status is ProofStatus.PROVED and "whose writes are among" in detail, detail
    broken = next(
        t for t in read_taskset(DATA / "broken_mock.jsonl")[1] if t.id == "broken-mock-14"
    )
    assert len(broken.chain) == broken.min_calls
    engines: list[Engine] = ["auto", "z3"]
    for engine in engines:
        status, detail = _proof5(broken, engine)
        assert status is ProofStatus.REFUTED and "ends elsewhere" in detail, (engine, detail)
