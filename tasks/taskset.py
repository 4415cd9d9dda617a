"""Generate task sets and read/write them as JSONL files.

File layout: the first line is the :class:`~graphgen.tasks.model.Manifest`, each further line
one :class:`~graphgen.tasks.model.Task`, in id order, with canonical JSON (sorted keys), so the
same domain + seed + options give byte-identical files.
"""

from __future__ import annotations

import json
import random
from collections import Counter
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from graphgen import __version__
from graphgen.domain import Domain
from graphgen.interp import call_tool
from graphgen.state import State
from graphgen.stategen import generate_state
from graphgen.tasks.dryrun import check_candidate
from graphgen.tasks.expand import Candidate, Expander, GenOptions, NoCandidate
from graphgen.tasks.model import Manifest, Task
from graphgen.tasks.paraphrase import Paraphraser, counts_for
from graphgen.tasks.plan import Executor
from graphgen.tasks.validate import DomainOf, TaskFile, scan_taskset, task_fingerprint
from graphgen.tasks.validate import TaskSetError as TaskSetError

Progress = Callable[[int, int], None]  # (accepted, attempts)
# An acceptance check run after the dry-run gate (the z3 proofs plug in here): it returns
# the (possibly enriched, e.g. certified) task to accept it, or a rejection reason.
# Named apart from ``graphgen.ir.Check``, which is a precondition in the IR.
TaskCheck = Callable[[Domain, Task], Task | str]


@dataclass
class GenResult:
    tasks: list[Task]
    manifest: Manifest
    rejected: Counter[str] = field(default_factory=Counter)


def _pick_kind(rng: random.Random, kinds: dict[str, float], counts: Counter[str]) -> str:
    names = sorted(k for k, w in kinds.items() if w > 0)
    missing = [k for k in names if counts[k] == 0]
    if missing and rng.random() < 0.5:  # make sure every kind shows up early
        return missing[0]
    return rng.choices(names, weights=[kinds[k] for k in names])[0]


def candidate_to_task(domain: Domain, c: Candidate, task_id: str, seed: int) -> Task:
    return Task(
        id=task_id,
        domain=domain.name,
        domain_hash=domain.content_hash,
        seed=seed,
        kind=c.kind,
        instruction=c.instruction,
        givens=c.givens,
        initial_state=c.initial.to_dict(),
        chain=c.chain,
        goal=c.goal,
        min_calls=len(c.chain),
        difficulty=len(c.chain),
        tools_used=sorted({x.tool for x in c.chain}),
        targets=c.targets,
        refused_call=c.refused_call,
    )


BATCH = 16  # candidates proven together; fixed, so results do not depend on ``jobs``


def _run_checks(domain: Domain, task: Task, checks: list[TaskCheck]) -> Task | str:
    for chk in checks:
        got = chk(domain, task)
        if isinstance(got, str):
            return got
        task = got
    return task


def generate(
    domain: Domain,
    n: int,
    seed: int,
    options: GenOptions | None = None,
    *,
    progress: Progress | None = None,
    execute: Executor = call_tool,
    task_checks: Sequence[TaskCheck] = (),
    max_attempts: int | None = None,
    jobs: int = 1,
    record_times: bool = False,
    paraphraser: Paraphraser | None = None,
) -> GenResult:
    """Generate up to ``n`` accepted tasks; every rejection is counted by reason.

    This is the generator alone: it runs the dry-run gate and only the ``task_checks``
    it is given, so without them no proof is run. :func:`graphgen.pipeline.generate` is
    the entry point that proves by default.

    Deterministic in (domain, n, seed, options), whatever ``jobs`` is. Candidates that pass
    the dry-run gate are collected in batches; ``task_checks`` (the z3 proofs plug in
    here) run on a batch, in ``jobs`` processes, and accepted tasks are kept in order.
    Proof times in certificates are wall-clock, so they are zeroed unless
    ``record_times``: by default the same inputs give the same bytes.

    With a ``paraphraser``, each candidate that passed the gate gets its instruction
    rewritten (:meth:`~graphgen.tasks.paraphrase.Paraphraser.apply`, which re-runs the
    gate on the new text) before the ``task_checks`` run on it; a rewritten task they
    reject is checked again with its original text, which is kept if it passes (the
    reason counts as the paraphrase's). The manifest counts the outcomes over the
    accepted tasks.
    """
    opts = options or GenOptions()
    exp = Expander(domain, opts, execute)
    checks = list(task_checks)
    states: dict[int, State] = {}
    tasks: list[Task] = []
    rejected: Counter[str] = Counter()
    kinds: Counter[str] = Counter()
    planned: Counter[str] = Counter()  # kinds of candidates that passed the dry-run
    rewrites: Counter[str] = Counter()  # paraphrase outcomes of the accepted tasks
    bodies: set[str] = set()  # fingerprints of the tasks accepted or being proven
    attempts = 0
    limit = max_attempts if max_attempts is not None else max(50, n * 6)
    pool = ProcessPoolExecutor(max_workers=jobs) if jobs > 1 and checks else None
    try:
        while len(tasks) < n and attempts < limit:
            block = len(tasks) // opts.tasks_per_state
            if block not in states:
                states[block] = generate_state(domain, seed * 7919 + block, opts.sizes)
            initial = states[block]
            batch: list[Task] = []
            originals: list[tuple[Task | None, str]] = []  # per batch entry: before paraphrase
            want = min(BATCH, n - len(tasks)) if checks else 1
            while len(batch) < want and attempts < limit:
                rng = random.Random(f"{seed}:{attempts}")
                attempts += 1
                kind = _pick_kind(rng, opts.kinds, planned)
                try:
                    if kind == "action":
                        cand = exp.action(initial, rng, walk=rng.random() < opts.walk_ratio)
                    elif kind == "information":
                        cand = exp.information(initial, rng)
                    else:
                        cand = exp.refusal(initial, rng)
                except NoCandidate as nc:
                    rejected[nc.reason] += 1
                    continue
                res = check_candidate(
                    domain,
                    cand.kind,
                    cand.initial,
                    cand.chain,
                    cand.givens,
                    cand.targets,
                    cand.instruction,
                    cand.goal,
                    cand.refused_call,
                    execute,
                )
                if not res.ok:
                    rejected[res.reason] += 1
                    continue
                task = candidate_to_task(domain, cand, "pending", seed)
                # Two draws can plan the very same task (small tables leave few choices);
                # a set holds each once. Checked before the proofs, which would only
                # repeat themselves: the same task gets the same verdict.
                body = task_fingerprint(task)
                if body in bodies:
                    rejected["duplicate"] += 1
                    continue
                bodies.add(body)
                original: Task | None = None
                outcome = ""
                if paraphraser is not None:
                    new, outcome = paraphraser.apply(domain, task, execute)
                    if new is not task:
                        original, task = task, new
                    outcome = outcome or ("paraphrased" if original else "unchanged")
                batch.append(task)
                originals.append((original, outcome))
                planned[cand.kind] += 1
            if pool is not None:
                outcomes = list(
                    pool.map(_run_checks, [domain] * len(batch), batch, [checks] * len(batch))
                )
            else:
                outcomes = [_run_checks(domain, t, checks) for t in batch]
            for got, (original, outcome) in zip(outcomes, originals, strict=True):
                if isinstance(got, str) and original is not None:
                    # The proofs refused the rewritten text: the original may still pass.
                    again = _run_checks(domain, original, checks)
                    if not isinstance(again, str):
                        outcome = got
                        got = again
                if isinstance(got, str):
                    rejected[got] += 1
                    continue
                if len(tasks) >= n:
                    break
                if paraphraser is not None:
                    rewrites[outcome] += 1
                if got.certificate is not None and not record_times:
                    cert = got.certificate.model_copy(
                        update={
                            "proofs": [
                                p.model_copy(update={"ms": 0.0}) for p in got.certificate.proofs
                            ]
                        }
                    )
                    got = got.model_copy(update={"certificate": cert})
                tasks.append(
                    got.model_copy(update={"id": f"{domain.name}-{seed}-{len(tasks):05d}"})
                )
                kinds[got.kind] += 1
                if progress:
                    progress(len(tasks), attempts)
    finally:
        if pool is not None:
            pool.shutdown()
    manifest = Manifest(
        generator_version=__version__,
        domain=domain.name,
        domain_hash=domain.content_hash,
        seed=seed,
        options={"n": n, **opts.model_dump()},
        accepted=len(tasks),
        by_kind=dict(sorted(kinds.items())),
        by_length=dict(
            sorted(Counter(str(t.difficulty) for t in tasks).items(), key=lambda kv: int(kv[0]))
        ),
        rejected=dict(sorted(rejected.items())),
        paraphrase=counts_for(paraphraser.model, rewrites) if paraphraser is not None else None,
    )
    return GenResult(tasks, manifest, rejected)


def _dumps(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def write_taskset(path: str | Path, manifest: Manifest, tasks: list[Task]) -> None:
    """Write manifest + tasks as canonical JSONL."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    # Sets made without a paraphrase model keep the manifest they always had.
    skip = {"paraphrase"} if manifest.paraphrase is None else None
    lines = [_dumps({"manifest": manifest.model_dump(mode="json", exclude=skip)})]
    lines += [_dumps(t.model_dump(mode="json")) for t in tasks]
    p.write_text("\n".join(lines) + "\n", encoding="utf-8")


def read_taskset(
    path: str | Path, domain_of: DomainOf | None = None
) -> tuple[Manifest, list[Task]]:
    """Read a task-set file written by :func:`write_taskset`; every line must be good.

    ``domain_of(manifest)`` is the domain the tasks are checked against
    (:mod:`graphgen.tasks.validate`; without it only their shape is checked). Any bad
    line raises :class:`TaskSetError` listing every bad line (file, line, task id,
    field); :func:`scan_taskset_file` keeps the good tasks of such a file instead.
    """
    got = scan_taskset_file(path, domain_of)
    if got.problems:
        raise TaskSetError(got.problems)
    return got.manifest, got.tasks


def scan_taskset_file(path: str | Path, domain_of: DomainOf | None = None) -> TaskFile:
    """Read a task-set file, keeping its good tasks and one problem per bad line.

    A file that cannot be read or whose manifest is bad raises :class:`TaskSetError`.
    """
    p = Path(path)
    try:
        data = p.read_bytes()
    except OSError as exc:
        raise TaskSetError(f"{p}: cannot read: {exc.strerror or exc}") from None
    return scan_taskset(data, str(p), domain_of)
