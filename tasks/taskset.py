"""Generate task sets and read/write them as JSONL files.

File layout: the first line is the :class:`~graphgen.tasks.model.Manifest`, each further line
one :class:`~graphgen.tasks.model.Task`, in id order, with canonical JSON (sorted keys), so the
same domain + seed + options give byte-identical files. The compact layout and gzip
(:mod:`graphgen.tasks.fileformat`) store the same tasks in fewer bytes.
"""

from __future__ import annotations

import hashlib
import random
from collections import Counter, deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from graphgen import __version__
from graphgen.domain import Domain
from graphgen.files import write_atomic
from graphgen.heap import FrozenHeap
from graphgen.interp import call_or_fail
from graphgen.journal import Journal
from graphgen.state import State
from graphgen.stategen import generate_state
from graphgen.tasks.backends import Backend, Checker, Pending, checker
from graphgen.tasks.backends import TaskCheck as TaskCheck
from graphgen.tasks.dryrun import check_candidate
from graphgen.tasks.expand import Candidate, Expander, GenOptions, NoCandidate
from graphgen.tasks.fileformat import dumps, encode, state_id, taskset_lines
from graphgen.tasks.model import Manifest, Task
from graphgen.tasks.paraphrase import Paraphraser, counts_for
from graphgen.tasks.plan import Executor
from graphgen.tasks.utilisation import Utilisation
from graphgen.tasks.validate import DomainOf, TaskFile, scan_taskset
from graphgen.tasks.validate import TaskSetError as TaskSetError

Progress = Callable[[int, int], None]  # (accepted, attempts)


@dataclass
class GenResult:
    tasks: list[Task]
    manifest: Manifest
    rejected: Counter[str] = field(default_factory=Counter)
    utilisation: Utilisation | None = None
    """How busy the workers and the drawing loop were (not part of the task set)."""


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
        initial_state=c.initial.json_form(),
        chain=c.chain,
        goal=c.goal,
        min_calls=len(c.chain),
        difficulty=len(c.chain),
        tools_used=sorted({x.tool for x in c.chain}),
        targets=c.targets,
        ordered=c.ordered,
        refused_call=c.refused_call,
    )


# Candidates in flight per worker. Outcomes are taken in draw order, so while the oldest
# candidate is a slow proof the other workers go on through the candidates behind it; 64
# per worker keep them busy through a proof about 64 times the mean one (retail's
# slowest take 30 times its mean). Capped because an outcome waiting to be taken holds
# ~100 KB (a retail task with its certificate); one loop feeds no more than ~40 workers
# on retail anyway (docs/scale.md).
WINDOW_PER_JOB = 64
MAX_WINDOW = 4096


def window(jobs: int) -> int:
    """How many candidates may be in flight with ``jobs`` workers.

    >>> window(1), window(2), window(64), window(100)
    (64, 128, 4096, 4096)
    """
    return min(MAX_WINDOW, WINDOW_PER_JOB * max(1, jobs))


def spare_candidates(jobs: int) -> int:
    """Candidates drawn past the tasks still wanted, with ``jobs`` workers.

    At the end of a run fewer candidates are wanted than there are workers; a spare
    one keeps an idle worker on the next candidate of the stream, in case one still in
    flight is refused (a slow proof is the likeliest to end in a timeout). It is taken
    only then; otherwise the run ends without waiting for it. With one worker there is
    no idle worker to use.

    >>> spare_candidates(1), spare_candidates(4)
    (0, 3)
    """
    return max(0, jobs - 1)


def generate(
    domain: Domain,
    n: int,
    seed: int,
    options: GenOptions | None = None,
    *,
    progress: Progress | None = None,
    execute: Executor = call_or_fail,
    task_checks: Sequence[TaskCheck] = (),
    max_attempts: int | None = None,
    jobs: int = 1,
    record_times: bool = False,
    paraphraser: Paraphraser | None = None,
    journal: Journal | None = None,
    done: Sequence[dict[str, Any]] = (),
    backend: Backend = "local",
    address: str | None = None,
    shard: tuple[int, int] | None = None,
) -> GenResult:
    """Generate up to ``n`` accepted tasks; every rejection is counted by reason.

    This is the generator alone: it runs the dry-run gate and only the ``task_checks``
    it is given, so without them no proof is run. :func:`graphgen.pipeline.generate` is
    the entry point that proves by default.

    Deterministic in (domain, n, seed, options), whatever ``jobs`` is. Candidates are
    drawn one after another and each that passes the dry-run gate goes to a worker for the
    ``task_checks`` (the z3 proofs plug in here) as soon as it is drawn; up to
    :func:`window` are in flight, so a slow proof holds one worker, not the others.
    What is drawn depends only on the place in the draw order (never on an outcome), and
    the outcomes are taken in that order until ``n`` are accepted, so the accepted tasks
    are the same with 1 or 16 workers, whatever the window and the timing.
    ``result.utilisation`` says how busy the workers and the drawing loop were.
    Proof times in certificates are wall-clock, so they are zeroed unless
    ``record_times``: by default the same inputs give the same bytes.

    With a ``paraphraser``, each candidate that passed the gate gets its instruction
    rewritten (:meth:`~graphgen.tasks.paraphrase.Paraphraser.apply`, which re-runs the
    gate on the new text) before the ``task_checks`` run on it; a rewritten task they
    reject is checked again with its original text, which is kept if it passes (the
    reason counts as the paraphrase's). The manifest counts the outcomes over the
    accepted tasks.

    ``backend`` and ``address`` say where the checks run (:mod:`graphgen.tasks.backends`);
    the tasks are the same bytes with either. ``shard=(i, k)`` makes part ``i`` of a set
    split in ``k`` (:mod:`graphgen.tasks.shards`): it draws on states of its own and its
    own random stream, so ``k`` machines can make the parts apart and ``graphgen merge``
    joins them.

    With a ``journal``, the outcome of every checked candidate (the accepted task, or
    the rejection reason) is appended as it is taken. ``done`` holds the records of an
    interrupted run's journal: the run draws its candidates again (cheap and seeded) and
    takes the recorded outcomes for the first of them instead of checking them again,
    so the result is the same as an uninterrupted run's.
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
    # Fingerprints of every candidate drawn so far, with the states they were drawn on:
    # two draws can plan the very same task (small tables leave few choices), and a set
    # holds each once. A candidate the proofs refused stays: the same task would get the
    # same verdict.
    bodies: dict[str, list[dict[str, Any]]] = {}
    asks: dict[str, list[dict[str, Any]]] = {}
    attempts = 0
    limit = max_attempts if max_attempts is not None else max(50, n * 6)
    # The outcomes an interrupted run recorded, in the order they were taken; the first
    # len(replay) candidates take them instead of being checked again.
    replay = _replayed(done)
    committed = 0  # outcomes taken so far (accepted or rejected)
    stream = "" if shard is None else f"{shard[0]}/{shard[1]}:"  # a part's own draws
    prefix = f"{domain.name}-{seed}-" + ("" if shard is None else f"{shard[0]}of{shard[1]}-")
    inflight: deque[_InFlight] = deque()
    # Draws the dry-run gate refused since the last candidate handed out: counted when
    # that candidate's outcome is taken, so the counts cover the same draws however far
    # ahead the loop has drawn.
    skipped: Counter[str] = Counter()

    def draw() -> _InFlight | None:
        """The next candidate that passes the dry-run gate (None: attempts used up)."""
        nonlocal attempts
        while attempts < limit:
            # The state comes from this candidate's place in the draw order, never from
            # the outcomes taken so far: the stream of candidates is then one fixed
            # sequence, whatever the window, the number of workers or the timing.
            block = (committed + len(inflight)) // opts.tasks_per_state
            if shard is not None:  # the parts of a sharded set never share a state
                block = block * shard[1] + shard[0]
            if block not in states:
                states[block] = generate_state(domain, seed * 7919 + block, opts.sizes)
                # it lives as long as the run: full collections need not walk its rows
                heap.settle()
            initial = states[block]
            rng = random.Random(f"{seed}:{stream}{attempts}")
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
                skipped[nc.reason] += 1
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
                skipped[res.reason] += 1
                continue
            task = candidate_to_task(domain, cand, "pending", seed)
            # Checked before the proofs, which would only repeat themselves.
            body = _candidate_key(task)
            # the same body on the same state (the candidates of one state share its
            # tables, so this compares them by identity; others only on a clash)
            if any(s == task.initial_state for s in bodies.get(body, ())):
                skipped["duplicate"] += 1
                continue
            # The same request worded another way ("Hi!" for "Hello.", the order named
            # by its date or its total) is the same task, counted twice in a score. It
            # is recorded when drawn, not when accepted: whether a draw is a duplicate
            # must not depend on how far the checks of earlier ones have got.
            asked = _request_key(task)
            if asked is not None and any(s == task.initial_state for s in asks.get(asked, ())):
                skipped["duplicate"] += 1
                continue
            bodies.setdefault(body, []).append(task.initial_state)
            if asked is not None:
                asks.setdefault(asked, []).append(task.initial_state)
            original: Task | None = None
            outcome = ""
            if paraphraser is not None:
                new, outcome = paraphraser.apply(domain, task, execute)
                if new is not task:
                    original, task = task, new
                outcome = outcome or ("paraphrased" if original else "unchanged")
            planned[cand.kind] += 1
            item = _InFlight(task, original, outcome, body, skipped.copy())
            skipped.clear()
            return item
        return None

    def take(run: Checker, item: _InFlight, got: Task | str, recorded: bool) -> None:
        """Take one candidate's outcome, in draw order."""
        nonlocal committed
        committed += 1
        rejected.update(item.skipped)
        if (
            recorded
            and not isinstance(got, str)
            and (
                _candidate_key(got) != item.body
                or state_id(got.initial_state) != state_id(item.task.initial_state)
            )
        ):
            raise TaskSetError(
                f"the journal's task {committed} is not the candidate this generator draws "
                "there: the journal does not come from this run"
            )
        if isinstance(got, str) and item.original is not None and not recorded:
            # The proofs refused the rewritten text: the original may still pass.
            with use.waiting():
                again = run.submit(item.original).get()
            if not isinstance(again, str):
                item.outcome = got
                got = again
        if isinstance(got, str):
            rejected[got] += 1
            if journal is not None and not recorded:
                journal.append({"reason": got})
            return
        if not recorded:
            if got.certificate is not None and not record_times:
                cert = got.certificate.model_copy(
                    update={
                        "proofs": [p.model_copy(update={"ms": 0.0}) for p in got.certificate.proofs]
                    }
                )
                got = got.model_copy(update={"certificate": cert})
            got = got.model_copy(update={"id": f"{prefix}{len(tasks):05d}"})
            if journal is not None:
                journal.append({"task": got.model_dump(mode="json"), "outcome": item.outcome})
        tasks.append(got)
        kinds[got.kind] += 1
        if paraphraser is not None:
            rewrites[item.outcome] += 1
        if progress:
            progress(len(tasks), attempts)

    use = Utilisation(jobs)
    ahead = window(jobs) if checks else 1
    spare = spare_candidates(jobs) if checks else 0
    exhausted = False  # the attempts are used up: nothing more to draw
    with checker(domain, checks, jobs, backend, address, use) as run, FrozenHeap() as heap:
        while len(tasks) < n:
            # Draw while the window has room, up to the tasks still wanted and a few
            # spare candidates (see spare_candidates).
            while (
                not exhausted and len(inflight) < ahead and len(tasks) + len(inflight) < n + spare
            ):
                with use.drawing():
                    item = draw()
                if item is None:
                    exhausted = True
                    break
                use.draws += 1
                index = committed + len(inflight)
                if index < len(replay):
                    item.recorded = replay[index]
                else:
                    item.handle = run.submit(item.task)
                inflight.append(item)
            if not inflight:
                break
            item = inflight.popleft()
            if item.recorded is not None:
                take(run, item, _recorded_outcome(item.recorded), recorded=True)
            else:
                assert item.handle is not None
                with use.waiting():
                    got = item.handle.get()
                take(run, item, got, recorded=False)
    if len(tasks) < n:  # every draw was taken: the gate's last refusals count too
        rejected.update(skipped)
    use.stop()
    manifest = Manifest(
        generator_version=__version__,
        domain=domain.name,
        domain_hash=domain.content_hash,
        seed=seed,
        options={"n": n, **opts.model_dump()}
        | ({} if shard is None else {"shard": f"{shard[0]}/{shard[1]}"}),
        accepted=len(tasks),
        by_kind=dict(sorted(kinds.items())),
        by_length=dict(
            sorted(Counter(str(t.difficulty) for t in tasks).items(), key=lambda kv: int(kv[0]))
        ),
        rejected=dict(sorted(rejected.items())),
        paraphrase=counts_for(paraphraser.model, rewrites) if paraphraser is not None else None,
    )
    return GenResult(tasks, manifest, rejected, use)


def _candidate_key(task: Task) -> str:
    """The fingerprint of a task as a candidate, but for its initial state (compared
    apart: hashing a large state for every candidate would cost more than drawing it):
    without the proven minimum the proofs set (nor the id and certificate), so an
    accepted task matches the candidate it was."""
    body = task.model_dump(mode="json", exclude={"id", "certificate", "initial_state"})
    body["min_calls"] = len(task.chain)
    return hashlib.sha256(dumps(body).encode("utf-8")).hexdigest()


def _request_key(task: Task) -> str | None:
    """What a task asks for, apart from its words and its initial state: an action's
    goal (the changes, and any values the answer must state), a refusal's refused
    call. None for an information task, whose goal (the values an answer states) two
    different questions may share."""
    if task.kind == "information":
        return None
    asked = {
        "kind": task.kind,
        "goal": task.goal.model_dump(mode="json"),
        "refused": None if task.refused_call is None else task.refused_call.model_dump(mode="json"),
    }
    return hashlib.sha256(dumps(asked).encode("utf-8")).hexdigest()


@dataclass
class _InFlight:
    """A candidate that passed the dry-run, waiting for its checks' outcome."""

    task: Task
    original: Task | None  # the text before a paraphrase, to fall back on
    outcome: str  # the paraphrase outcome
    body: str  # its candidate fingerprint (without the initial state)
    skipped: Counter[str]  # the gate's refusals drawn just before it
    handle: Pending | None = None  # the checks, running somewhere
    recorded: dict[str, Any] | None = None  # the outcome an interrupted run recorded


def _replayed(records: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The outcomes a journal recorded, in the order they were taken."""
    out = [r for r in records if "task" in r or "reason" in r]
    for i, r in enumerate(out, 1):
        if "task" in r and not isinstance(r["task"], dict):
            raise TaskSetError(f"damaged journal record {i}: a task is an object")
        if "reason" in r and not isinstance(r["reason"], str):
            raise TaskSetError(f"damaged journal record {i}: a reason is a string")
    return out


def _recorded_outcome(rec: dict[str, Any]) -> Task | str:
    if "task" in rec:
        try:
            return Task.model_validate(rec["task"])
        except ValueError as exc:
            raise TaskSetError(f"damaged journal record: {exc}") from None
    return str(rec["reason"])


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
