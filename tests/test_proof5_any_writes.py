"""Proof 5 where its ``W`` is out of reach: the stronger claim that needs none.

Proof 5 lists ``W``, every write some minimal solution makes, and shows that the chains
making only those writes end in the reference's state. When the list runs past
``MAX_MINIMAL_WRITES`` (or z3 gives up making it) the task used to be rejected. It now
asks whether *every* chain of at most ``L`` calls that makes no more writes than the
reference, whichever, and reaches the goal ends in that state: a claim about more
chains, so where it holds proof 5 does. Where a chain ends elsewhere it fails, and the
task stays rejected."""

from __future__ import annotations

import pytest

from graphgen.domains import load_builtin
from graphgen.tasks.model import ProofStatus, Task
from graphgen.tasks.taskset import GenOptions, generate
from graphgen.verify import proofs as proofs_module
from graphgen.verify.proofs import Prover

RETAIL = load_builtin("retail")


def _candidate(tid: str, n: int) -> Task:
    got = [t for t in generate(RETAIL, n, 0, GenOptions()).tasks if t.id == tid]
    assert got, tid
    return got[0]


def _prover(task: Task) -> Prover:
    p = Prover(RETAIL, task)
    m = p.find_min_calls(len(task.chain))
    assert isinstance(m, int)
    p.task = task.model_copy(update={"min_calls": m})
    return p


@pytest.mark.parametrize(("tid", "holds"), [("retail-0-00037", False), ("retail-0-00003", True)])
def test_the_stronger_claim_still_rejects_a_chain_that_ends_elsewhere(
    tid: str, holds: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With no room for ``W`` at all, every task takes the stronger claim: one whose
    proof 5 finds a solution ending elsewhere (retail-0-00037) stays rejected, as too
    open; one whose solutions all end alike (retail-0-00003) is proven by it."""
    task = _candidate(tid, 80)
    before = _prover(task).unique_final_state()
    assert (before.status is ProofStatus.PROVED) is holds, before.detail
    monkeypatch.setattr(proofs_module, "MAX_MINIMAL_WRITES", 0)
    got = _prover(task).unique_final_state()
    if holds:
        assert got.status is ProofStatus.PROVED, got.detail
        assert "whichever they are" in got.detail and "more than 0" in got.detail
    else:
        assert got.status is ProofStatus.REFUTED and "too open" in got.detail
