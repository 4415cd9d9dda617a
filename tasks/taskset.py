"""Generate task sets and read/write them as JSONL files.

File layout: the first line is the :class:`~graphgen.tasks.model.Manifest`, each further line
one :class:`~graphgen.tasks.model.Task`, in id order, with canonical JSON (sorted keys), so the
same domain + seed + options give byte-identical files. The compact layout and gzip
(:mod:`graphgen.tasks.fileformat`) store the same tasks in fewer bytes.
"""

from __future__ import annotations

import contextlib
import functools
import random
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from graphgen import __version__
from graphgen.domain import Domain
from graphgen.files import write_atomic
from graphgen.interp import call_tool
from graphgen.journal import Journal
from graphgen.processes import worker_pool
from graphgen.state import State
from graphgen.stategen import generate_state
from graphgen.tasks.dryrun import check_candidate
from graphgen.tasks.expand import Candidate, Expander, GenOptions, NoCandidate
from graphgen.tasks.fileformat import dumps, encode, taskset_lines
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
        ordered=c.ordered,
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


def _check_one(domain: Domain, checks: list[TaskCheck], task: Task) -> Task | str:
    return _run_checks(domain, task, checks)


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
    journal: Journal | None = None,
    done: Sequence[dict[str, Any]] = (),
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

    With a ``journal``, the outcome of every checked candidate (the accepted task, or
    the rejection reason) is appended as it is known, and the generator's state after
    each batch as a checkpoint. ``done`` holds the records of an interrupted run's
    journal: the run restarts from its last checkpoint, re-expands the batch that was in
    flight (cheap and seeded) and takes the outcomes already recorded for it instead of
    checking those candidates again, so the result is the same as an uninterrupted run's.
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
    # Fingerprints of the tasks accepted, and of the batch being proven. A candidate the
    # proofs rejected leaves the set when its batch ends, so the set depends only on the
    # accepted tasks, which a resumed run reads back from its journal.
    taken: set[str] = set()
    attempts = 0
    # Outcomes already recorded for the batch that was in flight when a run stopped.
    replay: list[dict[str, Any]] = []
    if done:
        attempts, replay = _restore(done, exp, tasks, rejected, kinds, planned, rewrites)
        taken = {_candidate_key(t) for t in tasks}
        if progress and tasks:
            progress(len(tasks), attempts)
    limit = max_attempts if max_attempts is not None else max(50, n * 6)

    def accept(task: Task, outcome: str) -> None:
        taken.add(_candidate_key(task))
        tasks.append(task)
        kinds[task.kind] += 1
        if paraphraser is not None:
            rewrites[outcome] += 1
        if progress:
            progress(len(tasks), attempts)

    with contextlib.ExitStack() as stack:
        pool = stack.enter_context(worker_pool(jobs)) if jobs > 1 and checks else None
        while len(tasks) < n and attempts < limit:
            block = len(tasks) // opts.tasks_per_state
            if block not in states:
                states[block] = generate_state(domain, seed * 7919 + block, opts.sizes)
            initial = states[block]
            bodies = set(taken)
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
                    ordered=cand.ordered,
                )
                if not res.ok:
                    rejected[res.reason] += 1
                    continue
                task = candidate_to_task(domain, cand, "pending", seed)
                # Two draws can plan the very same task (small tables leave few choices);
                # a set holds each once. Checked before the proofs, which would only
                # repeat themselves: the same task gets the same verdict.
                body = _candidate_key(task)
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
            if len(replay) > len(batch):
                raise TaskSetError(
                    f"the journal holds {len(replay)} outcomes for a batch of {len(batch)} "
                    "candidates: it does not come from this generator"
                )
            fresh = batch[len(replay) :]
            checked: Iterator[Task | str]
            if pool is not None:  # lazily, in order: each outcome is recorded as it comes
                checked = pool.imap(functools.partial(_check_one, domain, checks), fresh)
            else:
                checked = (_run_checks(domain, t, checks) for t in fresh)
            for j, (original, outcome) in enumerate(originals):
                if j < len(replay):
                    rec = replay[j]
                    if "task" in rec:
                        accept(Task.model_validate(rec["task"]), str(rec.get("outcome", "")))
                    else:
                        rejected[str(rec["reason"])] += 1
                    continue
                got = next(checked)
                if isinstance(got, str) and original is not None:
                    # The proofs refused the rewritten text: the original may still pass.
                    again = _run_checks(domain, original, checks)
                    if not isinstance(again, str):
                        outcome = got
                        got = again
                if isinstance(got, str):
                    rejected[got] += 1
                    if journal is not None:
                        journal.append({"reason": got})
                    continue
                if len(tasks) >= n:
                    break
                if got.certificate is not None and not record_times:
                    cert = got.certificate.model_copy(
                        update={
                            "proofs": [
                                p.model_copy(update={"ms": 0.0}) for p in got.certificate.proofs
                            ]
                        }
                    )
                    got = got.model_copy(update={"certificate": cert})
                got = got.model_copy(update={"id": f"{domain.name}-{seed}-{len(tasks):05d}"})
                if journal is not None:
                    journal.append({"task": got.model_dump(mode="json"), "outcome": outcome})
                accept(got, outcome)
            replay = []
            if journal is not None:
                journal.append(
                    {
                        "checkpoint": {
                            "accepted": len(tasks),
                            "attempts": attempts,
                            "kinds": dict(kinds),
                            "planned": dict(planned),
                            "rejected": dict(rejected),
                            "rewrites": dict(rewrites),
                            "usage": dict(exp.usage),
                        }
                    }
                )
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


def _candidate_key(task: Task) -> str:
    """The fingerprint of a task as a candidate: without the proven minimum the proofs
    set (nor the id and certificate), so an accepted task matches the candidate it was."""
    return task_fingerprint(task.model_copy(update={"min_calls": len(task.chain)}))


def _restore(
    records: Sequence[dict[str, Any]],
    exp: Expander,
    tasks: list[Task],
    rejected: Counter[str],
    kinds: Counter[str],
    planned: Counter[str],
    rewrites: Counter[str],
) -> tuple[int, list[dict[str, Any]]]:
    """Put the generator back where a journal's last checkpoint left it; the attempt
    count there and the records after it (the batch that was in flight)."""
    last = max((i for i, r in enumerate(records) if "checkpoint" in r), default=-1)
    try:
        for rec in records[: last + 1]:
            if "task" in rec:
                tasks.append(Task.model_validate(rec["task"]))
        if last < 0:
            return 0, list(records)
        cp = records[last]["checkpoint"]
        if cp["accepted"] != len(tasks):
            raise TaskSetError(
                f"journal checkpoint {last + 1} counts {cp['accepted']} tasks, "
                f"the journal holds {len(tasks)} before it"
            )
        for counter, name in (
            (rejected, "rejected"),
            (kinds, "kinds"),
            (planned, "planned"),
            (rewrites, "rewrites"),
        ):
            counter.update({str(k): int(v) for k, v in cp[name].items()})
        unknown = set(cp["usage"]) - set(exp.usage)
        if unknown:
            raise TaskSetError(f"journal names tools the domain lacks: {sorted(unknown)}")
        exp.usage.update({str(k): int(v) for k, v in cp["usage"].items()})
        return int(cp["attempts"]), list(records[last + 1 :])
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise TaskSetError(f"damaged journal record: {exc}") from None


def task_json(task: Task) -> str:
    """A task as the canonical JSON text of its line in a plain task-set file."""
    return dumps(task.model_dump(mode="json"))


def taskset_text(manifest: Manifest, tasks: Sequence[Task], *, compact: bool = False) -> str:
    """Manifest + tasks as canonical JSONL text (what :func:`write_taskset` writes);
    ``compact`` writes each distinct initial state once (:mod:`graphgen.tasks.fileformat`)."""
    return "\n".join(taskset_lines(manifest, tasks, compact=compact)) + "\n"


def write_taskset(
    path: str | Path, manifest: Manifest, tasks: Sequence[Task], *, compact: bool = False
) -> None:
    """Write manifest + tasks as canonical JSONL (atomically: a failed write leaves the
    previous file as it was); gzip-compressed when ``path`` ends in ``.gz``."""
    write_atomic(path, encode(taskset_text(manifest, tasks, compact=compact), path))


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
