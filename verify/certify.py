"""Certification: nothing leaves the pipeline without a dry-run and the z3 proofs.

* :func:`certify` is what the generator runs on each candidate that passed the dry-run
  gate (:mod:`graphgen.tasks.dryrun`): it *finds* the shortest solution length with z3
  (the task's ``min_calls``), then proves every obligation and attaches the certificate.
* :func:`recheck` is what ``graphgen verify`` runs on a task read from a file: it trusts
  nothing the file says it proved — it re-runs the dry-run gate and every proof against
  the task's own claims (its goal, its ``min_calls``, its targets), asking z3 in the
  order certify did, so that each query does the same work.

Rejection reasons are short and countable, read from each proof's
:class:`~graphgen.tasks.model.ProofStatus`: ``proof_<name>`` for a refuted proof,
``timeout`` when z3 ran out of time or of its resource limit, ``inconclusive`` when z3
gave up for another reason, ``dry_run_<reason>`` for the executable checks,
``domain_changed`` when the file was made from another version of the domain.
"""

from __future__ import annotations

from typing import assert_never

import z3

from graphgen.domain import Domain
from graphgen.state import State
from graphgen.tasks.dryrun import check_task
from graphgen.tasks.model import Certificate, Inconclusive, ProofResult, ProofStatus, Task
from graphgen.verify import CHECKER_VERSION
from graphgen.verify.proofs import DEFAULT_TIMEOUT_MS, Engine, Prover
from graphgen.verify.terms import EncodeError


def rejection_reason(results: list[ProofResult]) -> str:
    """The countable reason for the first failed proof ("" when all hold): ``proof_<name>``
    when it was refuted, ``timeout`` when z3 ran out of time or resources on it,
    ``inconclusive`` when z3 gave up on it for another reason."""
    for r in results:
        match r.status:
            case ProofStatus.PROVED:
                continue
            case ProofStatus.REFUTED:
                return f"proof_{r.name}"
            case ProofStatus.INCONCLUSIVE:
                return "timeout" if r.cause is Inconclusive.TIMEOUT else "inconclusive"
            case _:
                assert_never(r.status)
    return ""


def certify(
    domain: Domain, task: Task, timeout_ms: int = DEFAULT_TIMEOUT_MS, engine: Engine = "auto"
) -> Task | str:
    """The task with its proven ``min_calls`` and certificate, or why it is rejected.
    ``engine`` picks who answers the search questions (:data:`~graphgen.verify.proofs.Engine`)."""
    prover = Prover(domain, task, None, timeout_ms, engine=engine)
    if task.kind != "refusal":
        found = prover.find_min_calls(len(task.chain))
        if isinstance(found, ProofResult):
            return rejection_reason([found])
        task = task.model_copy(update={"min_calls": found})
        prover.task = task
    # a failed proof rejects the task: the proofs after it would change nothing
    results = prover.all(stop_on_failure=True)
    why = rejection_reason(results)
    if why:
        return why
    cert = Certificate(
        k=prover.k,
        proofs=results,
        z3_version=z3.get_version_string(),
        checker_version=CHECKER_VERSION,
    )
    return task.model_copy(update={"certificate": cert})


def proof_check(domain: Domain, task: Task) -> Task | str:
    """The generator's extra check (see :func:`graphgen.tasks.taskset.generate`). A task
    whose proofs need a construct the encoding refuses (``EncodeError``, such as a create
    that names its key) is rejected as ``not_encodable``, never accepted unproven."""
    try:
        return certify(domain, task)
    except EncodeError:
        return "not_encodable"


def recheck(
    domain: Domain, task: Task, timeout_ms: int = DEFAULT_TIMEOUT_MS, engine: Engine = "auto"
) -> tuple[str, Certificate | None]:
    """Re-verify a task from scratch, ignoring its certificate: ("" , cert) if it holds."""
    if task.domain != domain.name or task.domain_hash != domain.content_hash:
        return "domain_changed", None
    try:
        initial = State.from_dict(task.initial_state)
    except ValueError:
        return "dry_run_bad_state", None
    gate = check_task(domain, task, initial=initial)
    if not gate.ok:
        return f"dry_run_{gate.reason}", None
    if task.difficulty != len(task.chain) or task.min_calls > len(task.chain):
        return "bad_metadata", None
    prover = Prover(domain, task, None, timeout_ms, engine=engine)
    if task.kind != "refusal":
        # The queries certify asked first, in its order: z3's work on each query depends
        # on what it was asked before, so a task near the limit ends here as it did
        # when it was made. The answer is not used: proof 3 checks the task's claim.
        prover.find_min_calls(len(task.chain))
    results = prover.all()
    cert = Certificate(
        k=prover.k,
        proofs=results,
        z3_version=z3.get_version_string(),
        checker_version=CHECKER_VERSION,
    )
    return rejection_reason(results), cert
