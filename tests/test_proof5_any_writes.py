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
from graphgen.tasks.model import Call, Inconclusive, ProofResult, ProofStatus, Task
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


def _gave_up_listing(self: Prover) -> ProofResult:
    """``minimal_writes`` as when z3 gave up on one of its queries."""
    return ProofResult.inconclusive("unique_final_state", Inconclusive.TIMEOUT, "z3 gave up (test)")


def test_the_stronger_claim_gets_the_whole_limit_after_z3_gave_up_listing_w(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """When z3 gives up listing ``W``, proof 5 asks the stronger claim within the whole
    time limit, not a share of it: on retail-0-00092 and -00293 it held after such a
    give-up only past a quarter of the limit. On retail-0-00003 (reference longer than
    its minimum, explicit search off) the claim holds and proves proof 5."""
    monkeypatch.setattr(proofs_module, "EXPLICIT_CALLS", 0)
    monkeypatch.setattr(proofs_module, "LONG_EXPLICIT_CALLS", 0)
    p = _prover(_candidate("retail-0-00003", 107))
    assert p.horizon > p.task.min_calls
    assert p.build() is not None and p.bmc is not None
    limits: list[int] = []
    check = type(p.bmc).check

    def recorded(self: object, assumptions: object, timeout_ms: int = 0, **kw: object) -> object:
        limits.append(timeout_ms)
        return check(self, assumptions, timeout_ms, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(type(p.bmc), "check", recorded)
    monkeypatch.setattr(Prover, "minimal_writes", _gave_up_listing)
    got = p.unique_final_state()
    assert got.status is ProofStatus.PROVED, got.detail
    assert "whichever they are" in got.detail and "z3 gave up listing them" in got.detail
    assert limits and all(ms == p.timeout_ms for ms in limits), limits


def test_a_claim_asked_first_is_not_asked_again_after_a_give_up(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Where the reference is minimal the stronger claim is asked before ``W`` is
    listed. When it is not proven (broken-mock-14: two minimal solutions end in
    different states) and z3 then gives up listing ``W``, the same query is not asked a
    second time: the task is rejected as undecided after one try."""
    monkeypatch.setattr(proofs_module, "EXPLICIT_CALLS", 0)
    monkeypatch.setattr(proofs_module, "LONG_EXPLICIT_CALLS", 0)
    broken = next(
        t for t in read_taskset(DATA / "broken_mock.jsonl")[1] if t.id == "broken-mock-14"
    )
    p = _prover(broken, MOCK)
    assert p.horizon == p.task.min_calls
    asked: list[str] = []
    claim = Prover._any_writes_end_alike

    def counted(self: Prover, h: int, why: str) -> ProofResult | None:
        asked.append(why)
        return claim(self, h, why)

    monkeypatch.setattr(Prover, "_any_writes_end_alike", counted)
    monkeypatch.setattr(Prover, "minimal_writes", _gave_up_listing)
    got = p.unique_final_state()
    assert got.status is ProofStatus.INCONCLUSIVE and "gave up (test)" in got.detail, got
    assert asked == ["every chain of that length is minimal"], asked


@pytest.mark.parametrize(
    ("first_from", "within", "claim_first"), [(9, 7, True), (11, 7, False), (9, 0, False)]
)
def test_a_long_minimum_just_below_the_reference_asks_the_claim_without_w_first(
    first_from: int, within: int, claim_first: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """retail-0-00014 (minimum 10, reference 11 calls), with the explicit search given
    no budget, reaches z3's proof 5 (with the budget, the search answers it). Its
    minimum is long and the reference is one call longer, so z3 is asked the claim
    without ``W`` first, and ``W`` is never listed (1.3 s of proof 5 became 0.4 s). With
    the rule's minimum above 10, or no room above the minimum, ``W`` is listed as
    before. Proof 5 holds either way."""
    monkeypatch.setattr(proofs_module, "EXPLICIT_CALLS", 0)
    monkeypatch.setattr(proofs_module, "LONG_EXPLICIT_CALLS", 0)
    monkeypatch.setattr(proofs_module, "CLAIM_FIRST_FROM", first_from)
    monkeypatch.setattr(proofs_module, "CLAIM_FIRST_WITHIN", within)
    p = _prover(_candidate("retail-0-00014", 15))
    assert (p.task.min_calls, p.horizon) == (10, 11)
    listed: list[int] = []
    list_w = Prover.minimal_writes

    def counted(self: Prover) -> list[Call] | ProofResult:
        listed.append(1)
        return list_w(self)

    monkeypatch.setattr(Prover, "minimal_writes", counted)
    got = p.unique_final_state()
    assert got.status is ProofStatus.PROVED, got.detail
    if claim_first:
        assert "costs less than listing them at a minimum of 10" in got.detail, got.detail
        assert not listed
    else:
        assert "whose writes are among" in got.detail and listed, got.detail


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
