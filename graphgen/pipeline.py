"""The library API: every stage of graphgen, composed, with one set of defaults.

This is what the ``graphgen`` command runs; the command line only parses arguments and
prints. Each function takes a domain as a built-in name, a YAML path or a loaded
:class:`~graphgen.domain.Domain`, and an :class:`Options` (the defaults live there and
nowhere else). Long stages take an optional ``progress`` callback so a caller can draw a
progress bar.

* :func:`load_domain_ref` — a domain by built-in name or path;
* :func:`check` — the static analyses, with the z3 satisfiability check;
* :func:`export_graph` — the dependency graph as JSON, DOT, GraphML, PNG or SVG, whole or
  filtered (the enables edges, one tool's neighbourhood);
* :func:`generate` — tasks that passed the dry-run gate *and* the z3 proofs (by default);
* :func:`verify_tasks` — re-check a task-set file from scratch;
* :func:`compile` — a domain as a standalone Python package;
* :func:`make_env` — the compiled environment of a domain, ready to ``reset``;
* :func:`evaluate` — an agent (a baseline or a model) on a task set in that environment;
* :func:`export_tasks` — task sets as a Hugging Face dataset, τ²-bench files, SFT
  conversations or MCP tool lists;
* :func:`coverage` — what a task set exercises in its domain;
* :func:`run` — all of the above into one folder.

>>> import tempfile
>>> from pathlib import Path
>>> out = Path(tempfile.mkdtemp())
>>> res = run("mock", 4, out, Options(jobs=1))
>>> res.verification.ok, res.evaluations["oracle"].success_rate
(True, 1.0)
"""

from __future__ import annotations

import contextlib
import difflib
import functools
import hashlib
import json
import math
import os
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import networkx as nx
from pydantic import ValidationError

from graphgen import __version__
from graphgen.analysis import Report, report
from graphgen.domain import Domain
from graphgen.domains import builtin_names, load_builtin
from graphgen.envs.agent import (
    GREEDY_MAX_ORDERS,
    Agent,
    EchoAgent,
    EnvLike,
    Episode,
    HedgerAgent,
    NoopAgent,
    OpenAIAgent,
    OracleAgent,
    RandomAgent,
    StopRequested,
    run_episode,
    run_greedy,
    summarize,
)
from graphgen.envs.codegen import CodegenError, check_names, check_package_dir, install_package
from graphgen.envs.exports import ExportError, TaskSet
from graphgen.envs.exports.hf import export_hf
from graphgen.envs.exports.mcp import export_mcp
from graphgen.envs.exports.pddl import export_pddl
from graphgen.envs.exports.sft import export_sft
from graphgen.envs.exports.tau2 import export_tau2
from graphgen.envs.load import load_env_module
from graphgen.envs.play import Outcome, Play, PlayError, Session
from graphgen.envs.trials import (
    Slot,
    TrajectoryLog,
    outcomes_by_task,
    pass_hat_k,
    read_episodes,
    run_slots,
)
from graphgen.envs.user import ModelUser, ScriptedUser, User
from graphgen.errors import DomainError, GraphgenError, Located
from graphgen.export import draw, enables_view, to_dot, to_graphml, to_json, tool_view
from graphgen.extras import MissingExtraError, require
from graphgen.files import (
    OutputError,
    atomic_path,
    check_output_dir,
    check_output_file,
    write_atomic,
)
from graphgen.graph import build_graph
from graphgen.journal import Journal, JournalMismatch, journal_path
from graphgen.llm import API_KEY_ENV, Usage, api_key, openai_client
from graphgen.load import load_domain
from graphgen.newdomain import write_starter
from graphgen.processes import Interrupted, as_interrupted, stop_on_signals, worker_pool
from graphgen.quality import Finding, strict_findings
from graphgen.stategen import table_sizes
from graphgen.synth import SynthOptions, synth_yaml
from graphgen.tasks.backends import BACKENDS, Backend
from graphgen.tasks.coverage import CoverageReport
from graphgen.tasks.coverage import coverage as task_coverage
from graphgen.tasks.domainfile import DomainFileError, manifest_domain, with_domain_file
from graphgen.tasks.expand import GenOptions
from graphgen.tasks.fileformat import encode
from graphgen.tasks.model import Manifest, Task
from graphgen.tasks.paraphrase import Paraphraser
from graphgen.tasks.shards import merge_files, shard_size
from graphgen.tasks.taskset import (
    GenResult,
    read_taskset,
    scan_taskset_file,
    taskset_text,
)
from graphgen.tasks.taskset import generate as generate_tasks
from graphgen.tasks.validate import TaskFile, TaskProblem, TaskSetError
from graphgen.verify.certify import proof_check, recheck
from graphgen.verify.proofs import DEFAULT_TIMEOUT_MS
from graphgen.verify.satcheck import unsatisfiable_writes

if TYPE_CHECKING:
    from openai import OpenAI

__all__ = [
    "API_KEY_ENV",
    "BASELINES",
    "DEFAULTS",
    "EVAL_DEFAULTS",
    "EXPORT_FORMATS",
    "GRAPH_FORMATS",
    "GRAPH_VIEWS",
    "EvalOptions",
    "Evaluation",
    "Options",
    "PipelineError",
    "RunEvents",
    "RunResult",
    "UnknownDomainError",
    "Verification",
    "check",
    "compile",
    "coverage",
    "evaluate",
    "export_graph",
    "export_tasks",
    "generate",
    "load_domain_ref",
    "make_env",
    "merge",
    "play_answer",
    "play_call",
    "play_start",
    "read_tasks",
    "read_trajectories",
    "run",
    "verify_tasks",
]

DomainRef = str | Path | Domain
"""A built-in domain name, a path to a domain YAML file, or a loaded domain."""

Tick = Callable[[int, int], None]
"""A progress callback: ``(accepted, attempts)`` for :func:`generate`, ``(done, total)``
for :func:`verify_tasks` and :func:`evaluate`."""

BASELINES = ("oracle", "noop", "random", "echo", "hedger", "greedy")
"""Agents that need no model: the reference chain, doing nothing, random calls, and the
adversarial ones (see :mod:`graphgen.envs.agent`): answering with the instruction,
naming every value seen, and the reference writes in every permitted order."""

GRAPH_FORMATS = ("json", "dot", "graphml", "png", "svg")
GRAPH_VIEWS = ("all", "enables")
EXPORT_FORMATS = ("hf", "tau2", "sft", "mcp", "pddl")


def _default_jobs() -> int:
    return max(1, min(os.cpu_count() or 1, 8))


_GEN = GenOptions()


class PipelineError(GraphgenError):
    """A stage could not do what was asked (bad argument, failed verification)."""


class UnknownDomainError(PipelineError, LookupError):
    """Neither a built-in domain name nor an existing file."""


@dataclass(frozen=True)
class Options:
    """Every knob of the pipeline, with its one default.

    >>> Options().prove, Options(seed=3).seed
    (True, 3)
    """

    seed: int = 0
    """Seed of the states, the tasks and the random baseline."""
    max_intents: int = _GEN.max_intents
    """Most writes in one action task."""
    walk_ratio: float = _GEN.walk_ratio
    """Share of action tasks made by a forward walk."""
    prove: bool = True
    """Accept a task only with its z3 proofs (on by default; off = dry-run gate only)."""
    jobs: int = field(default_factory=_default_jobs)
    """Processes for the proofs and for :func:`verify_tasks`."""
    record_times: bool = False
    """Keep proof times in certificates (they vary, so the file's bytes do too)."""
    timeout_ms: int = DEFAULT_TIMEOUT_MS
    """z3 time limit per query when re-checking."""
    max_steps: int = 30
    """Most agent turns per task in :func:`evaluate`."""
    paraphrase: str | None = None
    """A model that rewrites each instruction (served at ``base_url``); a rewrite is kept
    only if it states the same values and passes the gate again
    (:mod:`graphgen.tasks.paraphrase`). None: the template text as it is."""
    base_url: str | None = None
    """The OpenAI-compatible endpoint of the ``paraphrase`` model."""
    api_key_env: str = API_KEY_ENV
    """Environment variable holding the endpoint's API key."""
    paraphrase_cache: str | None = None
    """Folder of cached paraphrase replies (default: ``graphgen-paraphrase`` in the
    temporary directory); a rerun with the cache makes no request."""
    backend: Backend = "local"
    """Where the proofs of :func:`generate` run: ``local`` worker processes or ``ray``
    (actors on a Ray cluster); the tasks are the same bytes either way."""
    ray_address: str | None = None
    """The Ray cluster to join (None: a local one started for the run)."""
    sizes: tuple[tuple[str, int], ...] = ()
    """Rows per table of every generated state, ``(entity, rows)`` pairs; the other
    tables keep their ``size:`` (:func:`graphgen.stategen.table_sizes` makes them from a
    scale factor)."""

    def __post_init__(self) -> None:
        for name in ("jobs", "timeout_ms", "max_steps"):
            if getattr(self, name) < 1:
                raise PipelineError(f"Options.{name} must be at least 1, not {getattr(self, name)}")
        if self.backend not in BACKENDS:
            raise PipelineError(f"Options.backend={self.backend!r}: one of {', '.join(BACKENDS)}")
        if self.paraphrase is not None and not self.base_url:
            raise PipelineError(
                f"Options.paraphrase={self.paraphrase!r} needs base_url (the model's "
                "OpenAI-compatible endpoint)"
            )
        try:  # max_intents and walk_ratio: the generator's own model has the bounds
            self.gen_options()
        except ValidationError as exc:
            bad = "; ".join(f"{e['loc'][0]}: {e['msg']}" for e in exc.errors())
            raise PipelineError(f"bad Options: {bad}") from None

    def gen_options(self) -> GenOptions:
        """The generator's own options (recorded in the task-set manifest)."""
        return GenOptions(
            max_intents=self.max_intents, walk_ratio=self.walk_ratio, sizes=dict(self.sizes)
        )

    def paraphraser(self) -> Paraphraser | None:
        """The paraphrase step these options ask for (None without ``paraphrase``)."""
        if self.paraphrase is None or not self.base_url:
            return None
        require("openai", "eval", f"paraphrasing with the model {self.paraphrase!r}")
        cache = self.paraphrase_cache or Path(tempfile.gettempdir()) / "graphgen-paraphrase"
        return Paraphraser(self.paraphrase, self.base_url, api_key(self.api_key_env), Path(cache))


DEFAULTS = Options()


# ------------------------------------------------------------------ domains


def load_domain_ref(ref: DomainRef) -> Domain:
    """A domain from a built-in name (``"retail"``), a YAML path, or a Domain (as is).

    An unknown name raises :class:`UnknownDomainError` listing the built-ins and the
    closest one; a bad file raises :class:`~graphgen.errors.DomainError` with every
    located problem.

    >>> load_domain_ref("mock").name
    'mock'
    >>> try:
    ...     load_domain_ref("mokc")
    ... except UnknownDomainError as exc:
    ...     print(exc)  # doctest: +ELLIPSIS
    no built-in domain or file 'mokc'; did you mean 'mock'? (built-ins: airline, ...)
    """
    if isinstance(ref, Domain):
        return ref
    text = str(ref)
    names = builtin_names()
    if isinstance(ref, str) and text in names:
        return load_builtin(text)
    path = Path(ref)
    if (
        isinstance(ref, Path)
        or path.exists()
        or path.suffix in (".yaml", ".yml")
        or len(path.parts) > 1
    ):
        return load_domain(path)  # a missing file is a located DomainError
    close = difflib.get_close_matches(text, names, n=1)
    hint = f"; did you mean {close[0]!r}?" if close else ""
    raise UnknownDomainError(
        f"no built-in domain or file {text!r}{hint} (built-ins: {', '.join(names)})"
    )


# ------------------------------------------------------------------ analyses and graph


def check(domain: DomainRef) -> Report:
    """Run every static analysis on a domain, including the z3 check for write tools no
    state allows (:func:`graphgen.verify.satcheck.unsatisfiable_writes`).

    >>> r = check("mock")
    >>> r.ok, r.sat_checked
    (True, True)
    """
    dom = load_domain_ref(domain)
    try:
        check_names(dom)
    except CodegenError as exc:
        # A domain whose compiled package could not use its names fails check, not compile.
        message = str(exc).removeprefix(f"{dom.source}: ")
        raise DomainError([Located(message, file=dom.source)]) from None
    return report(dom, sat_checker=unsatisfiable_writes)


def strict_check(domain: DomainRef) -> list[Finding]:
    """What will hurt task quality (``graphgen check --strict``): the findings of
    :func:`graphgen.quality.strict_findings`, each located with a fix.

    >>> strict_check("mock")
    []
    """
    return strict_findings(load_domain_ref(domain))


def new_domain(name: str, folder: str | Path = ".", *, force: bool = False) -> list[Path]:
    """Write the starter domain ``NAME.yaml`` and its end-to-end test ``test_NAME.py``
    into ``folder`` (``graphgen new``, :mod:`graphgen.newdomain`); the paths written."""
    return write_starter(name, folder, force=force)


def synth(
    seed: int,
    folder: str | Path,
    options: SynthOptions | None = None,
    *,
    count: int = 1,
    force: bool = False,
) -> list[Path]:
    """Write the synthesized domains of seeds ``seed .. seed + count - 1`` into ``folder``
    as ``synth_<seed>.yaml`` (:mod:`graphgen.synth`; same seed and options, same bytes);
    the paths written. Every path is checked before any is written: an existing file is
    replaced only with ``force``.

    >>> import tempfile
    >>> [p.name for p in synth(4, tempfile.mkdtemp(), count=2)]
    ['synth_4.yaml', 'synth_5.yaml']
    """
    if count < 1:
        raise PipelineError(f"count must be at least 1, not {count}")
    out = check_output_dir(folder)
    seeds = range(seed, seed + count)
    paths = [check_output_file(out / f"synth_{s}.yaml", force=force) for s in seeds]
    return [write_atomic(p, synth_yaml(s, options)) for p, s in zip(paths, seeds, strict=True)]


def export_graph(
    domain: DomainRef,
    output: str | Path,
    fmt: str = "json",
    *,
    view: str = "all",
    tool: str | None = None,
    force: bool = False,
) -> nx.MultiDiGraph:
    """Write the typed dependency graph as ``fmt`` (json, dot, graphml, png or svg);
    returns the graph written.

    ``view="enables"`` keeps only the tools and the enables edges; ``tool`` keeps only
    that tool's neighbourhood (both together: the enables edges into and out of the
    tool). PNG and SVG need the ``viz`` extra (matplotlib). An existing ``output`` is
    replaced only with ``force``; the file is written atomically.

    >>> import tempfile
    >>> g = export_graph("mock", Path(tempfile.mkdtemp()) / "g.dot", "dot")
    >>> g.number_of_nodes() > 0
    True
    >>> sorted(export_graph("mock", Path(tempfile.mkdtemp()) / "e.graphml", "graphml",
    ...                     view="enables", tool="pay").edges())
    [('tool:deposit', 'tool:pay'), ('tool:pay', 'tool:deposit')]
    """
    if fmt not in GRAPH_FORMATS:
        raise PipelineError(f"unknown format {fmt!r}; use {', '.join(GRAPH_FORMATS)}")
    if view not in GRAPH_VIEWS:
        raise PipelineError(f"unknown view {view!r}; use {', '.join(GRAPH_VIEWS)}")
    path = check_output_file(output, force=force)
    d = load_domain_ref(domain)
    g = build_graph(d)
    if view == "enables":
        g = enables_view(g, keep=[tool] if tool in d.tools else [])
    if tool is not None:
        if tool not in d.tools:
            close = difflib.get_close_matches(tool, list(d.tools), n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise PipelineError(f"{d.source}: no tool {tool!r} in domain {d.name!r}{hint}")
        g = tool_view(g, tool)
    if fmt in ("png", "svg"):
        with atomic_path(path) as tmp:
            draw(g, tmp, fmt)
    else:
        write_atomic(path, {"json": to_json, "dot": to_dot, "graphml": to_graphml}[fmt](g))
    return g


# ------------------------------------------------------------------ tasks


def _journal_for(
    output: Path, header: dict[str, Any], resume: bool
) -> tuple[Journal, list[dict[str, Any]]]:
    """The journal of a run writing ``output``: the interrupted one when resuming (and
    there is one), else a new one."""
    path = journal_path(output)
    if resume and path.exists():
        return Journal.resume(path, header)
    return Journal.create(path, header), []


def _check_output(output: Path, resume: bool, force: bool) -> None:
    """Refuse an output path before any work: see :func:`generate`."""
    partial = journal_path(output)
    if resume and partial.exists():
        # The final file may be there already: a run stopped between writing it and
        # deleting its journal is finished again, to the same bytes.
        check_output_file(output, force=True)
        return
    if partial.exists() and not force:
        raise OutputError(
            f"{partial} holds the results of an interrupted run: pass --resume to "
            "continue it, or --force to start over"
        )
    check_output_file(output, force=force)
    check_output_file(partial, force=True)


@contextlib.contextmanager
def _journal_open(journal: Journal, kept: Callable[[], str]) -> Iterator[None]:
    """Close ``journal`` however the block ends; when a signal stopped it, raise the
    :class:`~graphgen.processes.Interrupted` it stands for, saying what was kept and
    how to resume (:func:`~graphgen.processes.as_interrupted`)."""
    try:
        yield
    except BaseException as exc:
        stop = as_interrupted(exc)
        if stop is None:
            raise
        stop.detail = (
            f"{kept()} kept in {journal.path}; run the same command with --resume to continue"
        )
        if stop is exc:
            raise
        raise stop from exc
    finally:
        journal.close()


def generate(
    domain: DomainRef,
    n: int,
    options: Options = DEFAULTS,
    *,
    output: str | Path | None = None,
    progress: Tick | None = None,
    resume: bool = False,
    force: bool = False,
    compact: bool = False,
    shard: tuple[int, int] | None = None,
) -> GenResult:
    """Generate up to ``n`` tasks, each passing the dry-run gate and (unless
    ``options.prove`` is false) the z3 proofs, which attach a certificate.
    With ``options.paraphrase`` each instruction is offered to that model for a rewrite
    (kept only when the checks pass on the new text; counted in the manifest).

    Same domain, ``n`` and options give the same tasks, whatever ``options.jobs`` is.

    With ``output`` the task set is written there as canonical JSONL (``compact``: each
    distinct initial state once; gzip when the name ends in ``.gz``;
    :mod:`graphgen.tasks.fileformat`). ``shard=(i, k)`` makes part ``i`` of ``k`` of a
    set of ``n`` tasks (:mod:`graphgen.tasks.shards`; :func:`merge` joins the parts).
    The path is
    checked before any work: an existing file is replaced only with ``force``
    (:class:`~graphgen.files.OutputError` otherwise). While the run goes, every
    finished task is appended to the journal ``output + ".partial"``
    (:mod:`graphgen.journal`); the task set is written (atomically) at the end and the
    journal deleted. SIGINT and SIGTERM stop the run with
    :class:`~graphgen.processes.Interrupted`, the journal kept; with ``resume`` a
    stopped run continues from its journal and ends with the same bytes as an
    uninterrupted one (a journal made with other options is refused).
    ``progress(accepted, attempts)`` is called after each accepted task.

    >>> res = generate("mock", 3, Options(jobs=1))
    >>> len(res.tasks), all(t.certificate is not None for t in res.tasks)
    (3, True)
    >>> generate("mock", 3, Options(prove=False)).tasks[0].certificate is None
    True
    """
    if n < 1:
        raise PipelineError(f"the number of tasks must be at least 1, not {n}")
    out = Path(output) if output is not None else None
    if out is not None:
        _check_output(out, resume, force)
    d = load_domain_ref(domain)
    gen_options = options.gen_options()
    table_sizes(d, sizes=gen_options.sizes)  # a bad size fails here, before any work
    accepted = [0]  # tasks finished so far, for the message when stopped

    def tick(done: int, attempts: int) -> None:
        accepted[0] = done
        if progress:
            progress(done, attempts)

    def run(journal: Journal | None, done: list[dict[str, Any]]) -> GenResult:
        return generate_tasks(
            d,
            n,
            options.seed,
            gen_options,
            progress=tick,
            task_checks=[proof_check] if options.prove else (),
            jobs=options.jobs,
            record_times=options.record_times,
            paraphraser=options.paraphraser(),
            journal=journal,
            done=done,
            backend=options.backend,
            address=options.ray_address,
            shard=shard,
        )

    if shard is not None:  # this part's share of the n tasks
        total, n = n, shard_size(n, *shard)
        if n < 1:
            raise PipelineError(
                f"part {shard[0]} of {shard[1]} of {total} tasks would be empty: "
                "use fewer parts than tasks"
            )
    if out is None:
        return run(None, [])
    header = {
        "command": "generate",
        "generator_version": __version__,
        "domain": d.name,
        "domain_hash": d.content_hash,
        "seed": options.seed,
        "n": n,
        "options": gen_options.model_dump(mode="json"),
        "prove": options.prove,
        "record_times": options.record_times,
        "paraphrase": options.paraphrase,
    } | ({} if shard is None else {"shard": list(shard)})
    with stop_on_signals():
        journal, done = _journal_for(out, header, resume)
        with _journal_open(journal, lambda: f"{accepted[0]} finished task(s)"):
            res = run(journal, done)
            res.manifest = with_domain_file(res.manifest, d, out)
            text = taskset_text(res.manifest, res.tasks, compact=compact)
            journal.finish(out, encode(text, out))
    return res


def merge(
    parts: Sequence[str | Path], output: str | Path, *, compact: bool = False, force: bool = False
) -> tuple[Manifest, list[Task]]:
    """Join the task files of the parts of a sharded run (``generate(..., shard=(i, k))``)
    into one set written to ``output`` (:func:`graphgen.tasks.shards.merge`).

    The output is checked before any work (an existing file is replaced only with
    ``force``) and written atomically.
    """
    out = Path(output)
    check_output_file(out, force=force)
    manifest, tasks = merge_files(parts)
    write_atomic(out, encode(taskset_text(manifest, tasks, compact=compact), out))
    return manifest, tasks


def read_tasks(
    tasks_file: str | Path, domain: DomainRef | None = None, *, need_domain: bool = True
) -> tuple[TaskFile, Domain | None]:
    """Read a task-set file and check every task against its domain
    (:mod:`graphgen.tasks.validate`): the good tasks, one located problem per bad line,
    and the domain used.

    ``domain`` defaults to the built-in named in the manifest, or the domain file it
    records (:func:`~graphgen.tasks.domainfile.manifest_domain`); a set whose domain cannot be
    found so needs it (:class:`~graphgen.tasks.domainfile.DomainFileError`), unless
    ``need_domain`` is false: then such a set is checked for its shape only and the
    domain returned is None. An unreadable file or a bad manifest raises
    :class:`~graphgen.tasks.validate.TaskSetError`.
    """
    used: list[Domain] = []

    def domain_of(manifest: Manifest) -> Domain | None:
        if domain is not None:
            used.append(load_domain_ref(domain))
            return used[0]
        try:
            used.append(manifest_domain(manifest, tasks_file))
        except DomainFileError:
            if need_domain:
                raise
            return None
        return used[0]

    got = scan_taskset_file(tasks_file, domain_of)
    return got, (used[0] if used else None)


def _read_all(
    tasks_file: str | Path, domain: DomainRef | None
) -> tuple[Manifest, list[Task], Domain]:
    """Every task of a file, checked against its domain; any bad line is an error."""
    got, d = read_tasks(tasks_file, domain)
    if got.problems:
        raise TaskSetError(got.problems)
    assert d is not None  # need_domain
    return got.manifest, got.tasks, d


@dataclass(frozen=True)
class Verification:
    """What :func:`verify_tasks` found: a count per outcome, and each failure."""

    total: int
    outcomes: dict[str, int]
    """``"ok"`` or the rejection reason → number of tasks (a manifest mismatch counts too)."""
    failures: list[tuple[str, str]]
    """(task id or ``"manifest"``, reason), in file order."""
    results: list[tuple[str, str]] = field(default_factory=list)
    """(task id, ``"ok"`` or the rejection reason) for every task, in file order."""

    @property
    def ok(self) -> bool:
        """Every task re-proved and the manifest matches the file."""
        return not self.failures


def _recheck_one(domain: Domain, timeout_ms: int, task: Task) -> str:
    return recheck(domain, task, timeout_ms)[0]


VERIFICATION_FORMAT = "graphgen-verification"


def verification_text(
    result: Verification, tasks_file: Path, tasks_sha256: str, domain: Domain, timeout_ms: int
) -> str:
    """The report ``verify -o`` writes: a summary line, then one line per task in file
    order (``{"id": ..., "result": "ok" or the rejection reason}``)."""
    summary = {
        "verification": {
            "format": VERIFICATION_FORMAT,
            "tasks_file": tasks_file.name,
            "tasks_sha256": tasks_sha256,
            "domain": domain.name,
            "domain_hash": domain.content_hash,
            "timeout_ms": timeout_ms,
            "total": result.total,
            "ok": result.ok,
            "outcomes": dict(sorted(result.outcomes.items())),
            "manifest": next((why for tid, why in result.failures if tid == "manifest"), None),
        }
    }
    lines = [summary, *({"id": tid, "result": why} for tid, why in result.results)]
    return "".join(
        json.dumps(x, sort_keys=True, ensure_ascii=False, separators=(",", ":")) + "\n"
        for x in lines
    )


def verify_tasks(
    tasks_file: str | Path,
    domain: DomainRef | None = None,
    options: Options = DEFAULTS,
    *,
    progress: Tick | None = None,
    output: str | Path | None = None,
    resume: bool = False,
    force: bool = False,
) -> Verification:
    """Re-check a task-set file from scratch: the dry-run and every z3 proof, trusting
    nothing the file claims to have proven, in ``options.jobs`` processes.

    ``domain`` defaults to the built-in named in the file's manifest.
    ``progress(done, total)`` is called after each task.

    With ``output`` a report is written there (:func:`verification_text`), checked
    and journaled like :func:`generate`'s task set: each task's result is appended to
    ``output + ".partial"`` as it is known, ``resume`` continues a stopped run without
    re-checking the tasks done (the journal must come from the same task file, domain
    and time limit), and the report is the same bytes as an uninterrupted run's.

    >>> import tempfile
    >>> path = Path(tempfile.mkdtemp()) / "t.jsonl"
    >>> _ = generate("mock", 2, Options(jobs=1), output=path)
    >>> verify_tasks(path, options=Options(jobs=1)).ok
    True
    """
    out = Path(output) if output is not None else None
    source = Path(tasks_file)
    if out is not None:
        if out.resolve() == source.resolve():
            raise OutputError(f"the report {out} would replace the task set it checks")
        _check_output(out, resume, force)
    got, found = read_tasks(source, domain)
    assert found is not None  # need_domain
    d, manifest, tasks, bad = found, got.manifest, got.tasks, got.problems
    ms = options.timeout_ms
    if out is None:
        return _verify(tasks, bad, manifest, d, options, None, [], progress)
    sha = hashlib.sha256(source.read_bytes()).hexdigest()
    header = {
        "command": "verify",
        "generator_version": __version__,
        "tasks_sha256": sha,
        "domain_hash": d.content_hash,
        "timeout_ms": ms,
    }
    with stop_on_signals():
        journal, done = _journal_for(out, header, resume)
        checked = [len(done)]

        def tick(i: int, total: int) -> None:
            checked[0] = i
            if progress:
                progress(i, total)

        with _journal_open(journal, lambda: f"the results of {checked[0]} task(s)"):
            res = _verify(tasks, bad, manifest, d, options, journal, done, tick)
            journal.finish(out, verification_text(res, source, sha, d, ms))
    return res


def _verify(
    tasks: list[Task],
    bad: Sequence[TaskProblem],
    manifest: Manifest,
    d: Domain,
    options: Options,
    journal: Journal | None,
    done: list[dict[str, Any]],
    progress: Tick | None,
) -> Verification:
    """Re-check ``tasks`` after the ``done`` ones (results of a journal), recording each
    new result in ``journal``; the ``bad`` lines of the file (not valid tasks of the
    domain) and a manifest that does not match count as failures first."""
    if len(done) > len(tasks):
        raise JournalMismatch(f"the journal holds {len(done)} results for {len(tasks)} tasks")
    results: list[tuple[str, str]] = []
    for t, rec in zip(tasks, done, strict=False):
        if rec.get("id") != t.id or not isinstance(rec.get("result"), str):
            raise JournalMismatch(
                f"journal line {len(results) + 2} is not the result of task {t.id!r}"
            )
        results.append((t.id, rec["result"]))
    if progress and results:
        progress(len(results), len(tasks))
    rest = tasks[len(results) :]
    with contextlib.ExitStack() as stack:
        reasons: Iterator[str]
        check = functools.partial(_recheck_one, d, options.timeout_ms)
        if options.jobs > 1 and len(rest) > 1:
            reasons = stack.enter_context(worker_pool(options.jobs)).imap(check, rest)
        else:
            reasons = (check(t) for t in rest)
        for t, why in zip(rest, reasons, strict=True):
            results.append((t.id, why or "ok"))
            if journal is not None:
                journal.append({"id": t.id, "result": why or "ok"})
            if progress:
                progress(len(results), len(tasks))
    outcomes: dict[str, int] = {}
    failures: list[tuple[str, str]] = []
    for problem in bad:  # lines that are not valid tasks of the domain fail first
        outcomes["invalid_task"] = outcomes.get("invalid_task", 0) + 1
        parts = [f"line {problem.line}"] if problem.task_id else []
        parts += [problem.path] if problem.path else []
        where = f" ({', '.join(parts)})" if parts else ""
        failures.append(
            (problem.task_id or f"line {problem.line}", f"invalid task{where}: {problem.message}")
        )
    for tid, why in results:
        outcomes[why] = outcomes.get(why, 0) + 1
        if why != "ok":
            failures.append((tid, why))
    total = len(tasks) + len(bad)
    if manifest.accepted != total:
        outcomes["manifest_count_mismatch"] = 1
        failures.append(("manifest", f"says {manifest.accepted} tasks, file has {total}"))
    if manifest.domain_hash != d.content_hash:
        outcomes["manifest_domain_changed"] = 1
        failures.append(
            (
                "manifest",
                f"domain_hash {manifest.domain_hash!r} is not the hash of domain {d.name!r} "
                f"({d.content_hash!r})",
            )
        )
    return Verification(total, outcomes, failures, results)


# ------------------------------------------------------------------ exports and coverage


def _read_sets(tasks_files: Sequence[str | Path], domain: DomainRef | None) -> list[TaskSet]:
    if not tasks_files:
        raise PipelineError("no task-set file given")
    sets = [read_taskset(f) for f in tasks_files]
    if domain is not None:
        name = load_domain_ref(domain).name
        for f, (m, _) in zip(tasks_files, sets, strict=True):
            if m.domain != name:
                raise PipelineError(f"{f}: a task set of domain {m.domain!r}, not {name!r}")
    return sets


def _domains_of(
    sets: Sequence[TaskSet], domain: DomainRef | None, files: Sequence[str | Path]
) -> dict[str, Domain]:
    found: dict[str, Domain] = {}
    for (m, _), f in zip(sets, files, strict=True):
        if m.domain not in found:
            found[m.domain] = (
                load_domain_ref(domain) if domain is not None else manifest_domain(m, f)
            )
    return found


def export_tasks(
    tasks_files: Sequence[str | Path],
    fmt: str,
    output: str | Path,
    *,
    domain: DomainRef | None = None,
) -> list[Path]:
    """Export task sets (one or more files, of one or several domains) as ``fmt`` into
    the folder ``output``; returns the files written.

    * ``hf``: a Hugging Face dataset folder (``data/train.parquet``, ``manifests.json``,
      the card ``README.md``; needs the ``hf`` extra);
    * ``tau2``: a τ²-bench domain folder per domain (``tasks.json``, ``policy.md``,
      ``tools.json``, ``db.json``);
    * ``sft``: the oracle's episodes, run in the compiled environment, as
      ``messages.jsonl`` (chat messages with tools) and ``sharegpt.jsonl``;
    * ``mcp``: ``<domain>.mcp.json``, the MCP tool list of each domain;
    * ``pddl``: ``domain.pddl`` and ``problem-<task id>.pddl`` per task of the
      integer-free fragment, and ``skipped.tsv`` (each task left out, with the reason).

    ``domain`` is the domain file of task sets whose domain is not built in.

    >>> import tempfile
    >>> d = Path(tempfile.mkdtemp())
    >>> _ = generate("mock", 2, Options(prove=False), output=d / "t.jsonl")
    >>> [p.name for p in export_tasks([d / "t.jsonl"], "mcp", d / "out")]
    ['mock.mcp.json']
    """
    if fmt not in EXPORT_FORMATS:
        raise PipelineError(f"unknown export format {fmt!r}; use {', '.join(EXPORT_FORMATS)}")
    sets = _read_sets(tasks_files, domain)
    domains = _domains_of(sets, domain, tasks_files)
    try:
        if fmt == "hf":
            return export_hf(sets, output)
        if fmt == "tau2":
            return export_tau2(sets, domains, output)
        if fmt == "sft":
            return export_sft(sets, domains, output)
        if fmt == "pddl":
            return export_pddl(sets, domains, output).files
        return export_mcp(list(domains.values()), output)
    except ExportError as exc:
        raise PipelineError(str(exc)) from None


def coverage(tasks_file: str | Path, domain: DomainRef | None = None) -> CoverageReport:
    """What a task set exercises in its domain (:mod:`graphgen.tasks.coverage`): tools,
    precondition branches, enables edges, enum members, distinct states, lengths.

    ``domain`` defaults to the built-in named in the file's manifest.

    >>> import tempfile
    >>> path = Path(tempfile.mkdtemp()) / "t.jsonl"
    >>> _ = generate("mock", 3, Options(prove=False), output=path)
    >>> coverage(path).tasks
    3
    """
    ((manifest, tasks),) = _read_sets([tasks_file], domain)
    d = load_domain_ref(domain) if domain is not None else manifest_domain(manifest, tasks_file)
    return task_coverage(d, tasks)


# ------------------------------------------------------------------ environments


def compile(domain: DomainRef, output: str | Path, *, force: bool = False) -> list[Path]:
    """Compile a domain into a standalone Python package in the folder ``output``; the
    files written (with the build marker, :data:`~graphgen.envs.codegen.BUILD_MARKER`).

    An earlier build of the same package there is replaced as a whole; a non-empty
    folder holding anything else is refused without ``force``
    (:func:`~graphgen.envs.codegen.check_package_dir`).

    >>> import tempfile
    >>> files = compile("mock", Path(tempfile.mkdtemp()) / "mock_env")
    >>> sorted(p.name for p in files if p.suffix != ".py")
    ['.graphgen-build.json', 'README.md', 'py.typed', 'pyproject.toml']
    """
    return install_package(load_domain_ref(domain), Path(output), force=force)


def make_env(domain: DomainRef, max_steps: int | None = None) -> EnvLike:
    """The compiled environment of a domain (built-ins ship compiled; any other domain is
    compiled into a cache keyed by its content hash). ``max_steps`` bounds the tool
    calls of one episode (the environment's own default without it).

    >>> env = make_env("mock")
    >>> "respond" in [t["function"]["name"] for t in env.tools]
    True
    """
    cls = load_env_module(load_domain_ref(domain)).Environment
    env: EnvLike = cls() if max_steps is None else cls(max_steps=max_steps)
    return env


@dataclass(frozen=True)
class EvalOptions:
    """How :func:`evaluate` runs episodes, with the one default of each knob.

    >>> EvalOptions().trials, EvalOptions(trials=4).trials
    (1, 4)
    """

    trials: int = 1
    """Episodes per task; pass^1..pass^trials are reported."""
    concurrency: int = 1
    """Episodes run at once (threads; each has its own environment)."""
    temperature: float = 0.0
    """Sampling temperature of the model (and of a model user)."""
    extra_body: dict[str, Any] | None = None
    """Merged into every request body (server-specific parameters)."""
    timeout: float = 120.0
    """Seconds one request may take before it is retried or fails."""
    retries: int = 2
    """Retries of a failed request (connection errors, 408/409/429/5xx)."""
    task_timeout: float | None = None
    """Seconds one episode may take; then it ends with an error and is graded as is."""
    user: str | None = None
    """A user simulator: ``"scripted"``, or ``"model:NAME"`` for a chat model at the same
    endpoint; None: the instruction is the only user message."""
    price_in: float | None = None
    """Price per million prompt tokens, for the cost in the results."""
    price_out: float | None = None
    """Price per million completion tokens."""
    resume: bool = False
    """Keep the finished episodes already in the trajectories file and run only the rest."""

    def __post_init__(self) -> None:
        for name in ("trials", "concurrency"):
            if getattr(self, name) < 1:
                raise PipelineError(
                    f"EvalOptions.{name} must be at least 1, not {getattr(self, name)}"
                )
        if self.retries < 0:
            raise PipelineError(f"EvalOptions.retries must be at least 0, not {self.retries}")
        for name in ("timeout", "task_timeout"):
            value = getattr(self, name)
            if value is not None and not (value > 0 and math.isfinite(value)):
                raise PipelineError(f"EvalOptions.{name} must be a positive number, not {value}")
        if not (math.isfinite(self.temperature) and self.temperature >= 0):
            raise PipelineError(f"EvalOptions.temperature must be >= 0, not {self.temperature}")
        for name in ("price_in", "price_out"):
            value = getattr(self, name)
            if value is not None and not (math.isfinite(value) and value >= 0):
                raise PipelineError(f"EvalOptions.{name} must be >= 0, not {value}")
        if self.user is not None and self.user != "scripted" and not self.user.startswith("model:"):
            raise PipelineError(
                f"EvalOptions.user is 'scripted' or 'model:NAME', not {self.user!r}"
            )

    def settings(self) -> dict[str, Any]:
        """What changes the outcome of episodes (recorded in the results)."""
        return {
            "trials": self.trials,
            "temperature": self.temperature,
            "extra_body": self.extra_body,
            "user": self.user,
            "task_timeout": self.task_timeout,
        }


EVAL_DEFAULTS = EvalOptions()


@dataclass(frozen=True)
class Evaluation:
    """One agent's episodes on a task set (``trials`` per task, in task order)."""

    agent: str
    episodes: list[Episode]
    notes: list[str] = field(default_factory=list)
    """Warnings worth showing, e.g. the domain changed since the task set was made."""
    trials: int = 1
    domain: str = ""
    tasks_file: str = ""
    settings: dict[str, Any] = field(default_factory=dict)
    prices: tuple[float, float] | None = None
    """Price per million prompt and completion tokens, when given."""
    interrupted: bool = False
    """The run was stopped before every episode ran (resume it to finish)."""
    planned: int = 0
    """Episodes the run was to make (tasks x trials)."""
    results_file: Path | None = None

    def summary(self) -> list[dict[str, Any]]:
        """Per (domain, kind) and overall: success, mean calls, invalid-call rate, errors."""
        return summarize(self.episodes)

    @property
    def success_rate(self) -> float:
        """Share of episodes solved (0.0 when there are none)."""
        return sum(e.success for e in self.episodes) / len(self.episodes) if self.episodes else 0.0

    @property
    def errors(self) -> int:
        """Episodes that ended in an error (of the model, the user or the environment)."""
        return sum(1 for e in self.episodes if e.error)

    @property
    def all_errored(self) -> bool:
        """Every episode ended in an error (e.g. the server is down)."""
        return bool(self.episodes) and self.errors == len(self.episodes)

    def pass_hat_k(self) -> dict[int, float]:
        """pass^k for k = 1..trials (τ²-bench's definition, see
        :func:`~graphgen.envs.trials.pass_hat_k`)."""
        runs = outcomes_by_task(self.episodes)
        return {k: pass_hat_k(runs, k) for k in range(1, self.trials + 1)}

    def usage(self) -> dict[str, dict[str, int]]:
        """Requests and tokens of the agent and of the model user, summed."""
        agent, user = Usage(), Usage()
        for e in self.episodes:
            agent.add(e.usage)
            user.add(e.user_usage)
        return {"agent": agent.as_dict(), "user": user.as_dict()}

    def cost(self) -> dict[str, float] | None:
        """The tokens' cost at ``prices`` (None without prices)."""
        if self.prices is None:
            return None
        totals = {side: Usage(**u) for side, u in self.usage().items()}
        return {side: u.cost(*self.prices) for side, u in totals.items()}

    def results(self) -> dict[str, Any]:
        """The run's results as JSON data (what ``--json`` prints and the results file
        holds): counts, success, pass^k, the summary rows, usage and cost, settings."""
        return {
            "agent": self.agent,
            "domain": self.domain,
            "tasks_file": self.tasks_file,
            "tasks": len({e.task_id for e in self.episodes}),
            "trials": self.trials,
            "episodes": len(self.episodes),
            "errors": self.errors,
            "success_rate": self.success_rate,
            "pass_hat_k": {str(k): v for k, v in self.pass_hat_k().items()},
            "summary": self.summary(),
            "usage": self.usage(),
            "prices_per_million": list(self.prices) if self.prices else None,
            "cost": self.cost(),
            "settings": self.settings,
            "interrupted": self.interrupted,
            "notes": self.notes,
        }


def _agent(
    name: str | Agent,
    options: Options,
    domain: Domain,
    trial: int,
    client: OpenAI | None,
    ev: EvalOptions,
) -> Agent:
    if not isinstance(name, str):
        return name
    if name == "oracle":
        return OracleAgent()
    if name == "noop":
        return NoopAgent()
    if name == "random":
        return RandomAgent(options.seed, trial=trial)
    if name == "echo":
        return EchoAgent()
    if name == "hedger":
        return HedgerAgent(domain)
    assert client is not None, "a model agent needs the client made in evaluate()"
    return OpenAIAgent(
        name,
        temperature=ev.temperature,
        timeout=ev.timeout,
        max_retries=ev.retries,
        client=client,
        extra_body=ev.extra_body,
    )


def _user(ev: EvalOptions, client: OpenAI | None) -> User | None:
    if ev.user is None:
        return None
    if ev.user == "scripted":
        return ScriptedUser()
    assert client is not None, "a model user needs the client made in evaluate()"
    model = ev.user.removeprefix("model:")
    return ModelUser(model, client, temperature=ev.temperature, extra_body=ev.extra_body)


def results_path(trajectories: str | Path) -> Path:
    """Where the results of a run go: next to its trajectories file.

    >>> results_path("out/trajectories.jsonl")
    PosixPath('out/trajectories.results.json')
    """
    p = Path(trajectories)
    return p.with_name(f"{p.stem}.results.json")


def evaluate(
    tasks_file: str | Path,
    agent: str | Agent = "oracle",
    options: Options = DEFAULTS,
    *,
    domain: DomainRef | None = None,
    base_url: str | None = None,
    api_key_env: str = API_KEY_ENV,
    limit: int | None = None,
    trajectories: str | Path | None = None,
    progress: Tick | None = None,
    run: EvalOptions = EVAL_DEFAULTS,
    stop: threading.Event | None = None,
) -> Evaluation:
    """Run an agent on a task set in the compiled environment, ``run.trials`` episodes
    per task, ``run.concurrency`` at once.

    ``agent`` is a baseline name (``oracle``, ``noop``, ``random``, ``echo``, ``hedger``,
    ``greedy``; the random one is seeded by ``options.seed`` and the trial; ``greedy``
    runs up to ``GREEDY_MAX_ORDERS`` episodes per task and yields one, see
    :func:`~graphgen.envs.agent.run_greedy`), an :class:`~graphgen.envs.agent.Agent`
    (one episode at a time), or a model name served at ``base_url`` (an
    OpenAI-compatible endpoint; the key is read from the environment variable
    ``api_key_env``; needs the ``eval`` extra). ``domain`` defaults to the built-in
    named in the manifest. ``progress(done, total)`` follows the episodes.

    With ``trajectories`` each finished episode is appended there as one JSON line at
    once, and the file is rewritten in task order at the end, with the results next to
    it (:func:`results_path`); with ``run.resume`` the finished episodes already there
    are kept and not run again. Setting ``stop`` ends the run early: no new episode
    starts, those in flight are dropped, and the result says ``interrupted``.

    Every episode's failure (the model, the user simulator, the environment, the time
    budget) is recorded in it and the run goes on; :attr:`Evaluation.all_errored` tells
    a run in which nothing worked.

    >>> import tempfile
    >>> path = Path(tempfile.mkdtemp()) / "t.jsonl"
    >>> _ = generate("mock", 3, Options(prove=False), output=path)
    >>> evaluate(path, "oracle").success_rate, evaluate(path, "noop").success_rate
    (1.0, 0.0)
    >>> evaluate(path, "oracle", run=EvalOptions(trials=2)).pass_hat_k()
    {1: 1.0, 2: 1.0}
    """
    manifest, tasks, d = _read_all(tasks_file, domain)
    notes = []
    if d.content_hash != manifest.domain_hash:
        notes.append(
            f"domain {d.name!r} changed since the task set was made "
            f"({d.content_hash} != {manifest.domain_hash})"
        )
    if limit is not None and limit < 0:
        raise PipelineError(f"limit must be at least 0, not {limit}")
    chosen = tasks[:limit] if limit is not None else tasks
    by_id: dict[str, Task] = {}
    for t in chosen:
        if t.id in by_id:
            raise PipelineError(f"{tasks_file}: task id {t.id!r} appears more than once")
        by_id[t.id] = t
    if not isinstance(agent, str) and run.concurrency > 1:
        raise PipelineError("an Agent object runs one episode at a time: use concurrency 1")
    model = isinstance(agent, str) and agent not in BASELINES
    client: OpenAI | None = None
    if model or (run.user or "").startswith("model:"):
        if not base_url:
            raise PipelineError(
                f"agent {agent!r} is not a baseline ({', '.join(BASELINES)}), so it is a model "
                "and needs base_url (an OpenAI-compatible endpoint)"
                if model
                else f"the user {run.user!r} is a model and needs base_url"
            )
        require("openai", "eval", f"evaluating with the model {agent!r}")
        client = openai_client(
            base_url,
            api_key(api_key_env),
            timeout=run.timeout,
            max_retries=run.retries,
            feature="graphgen eval",
        )
    name = agent if isinstance(agent, str) else agent.name
    # One agent turn can make several tool calls; the environment counts calls.
    env_class = load_env_module(d).Environment
    local = threading.local()

    def work(slot: Slot) -> Episode | None:
        task, trial = by_id[slot[0]], slot[1]
        env = getattr(local, "env", None)
        if env is None:
            env = local.env = env_class(max_steps=options.max_steps * 4)
        try:
            if agent == "greedy":
                ep = run_greedy(env, task, d, options.max_steps, GREEDY_MAX_ORDERS)
                ep.trial = trial
            else:
                deadline = time.monotonic() + run.task_timeout if run.task_timeout else None
                ep = run_episode(
                    env,
                    task,
                    _agent(agent, options, d, trial, client, run),
                    options.max_steps,
                    user=_user(run, client),
                    trial=trial,
                    deadline=deadline,
                    stop=stop,
                )
        except StopRequested:
            return None
        except Exception as exc:  # a baseline or the greedy replay broke: this slot only
            ep = Episode(
                task.id, task.domain, task.kind, name, False, 0.0, 0, 0, 0, {}, [],
                f"episode: {type(exc).__name__}: {exc}", trial=trial,
            )  # fmt: skip
        if ep.error and ep.error.startswith("environment"):
            local.env = None  # its state is not to be trusted: the next episode gets a new one
        return ep

    slots: list[Slot] = [(t.id, k) for t in chosen for k in range(run.trials)]
    log = (
        TrajectoryLog(Path(trajectories), resume=run.resume, agent=name, slots=slots)
        if trajectories is not None
        else None
    )
    done: dict[Slot, Episode] = dict(log.done) if log else {}
    if log:
        notes.extend(log.notes)
        if done:
            notes.append(f"resumed: {len(done)} finished episode(s) kept from {trajectories}")

    def finished(ep: Episode) -> None:
        done[(ep.task_id, ep.trial)] = ep
        if log:
            log.append(ep)
        if progress:
            progress(len(done), len(slots))

    try:
        run_slots(
            [s for s in slots if s not in done],
            work,
            finished,
            concurrency=run.concurrency,
            stop=stop,
        )
    finally:
        if log:
            log.close()
    episodes = [done[s] for s in slots if s in done]
    interrupted = len(episodes) < len(slots)
    if any(e.orders_capped for e in episodes):
        notes.append(f"greedy tried at most {GREEDY_MAX_ORDERS} write orders per task")
    prices = (
        (run.price_in or 0.0, run.price_out or 0.0)
        if run.price_in is not None or run.price_out is not None
        else None
    )
    result = Evaluation(
        name,
        episodes,
        notes,
        trials=run.trials,
        domain=d.name,
        tasks_file=str(tasks_file),
        settings={"max_steps": options.max_steps, "seed": options.seed, **run.settings()},
        prices=prices,
        interrupted=interrupted,
        planned=len(slots),
        results_file=results_path(log.path) if log and not interrupted else None,
    )
    if log and not interrupted:
        log.finish(episodes)
        write_atomic(
            results_path(log.path),
            json.dumps(result.results(), indent=2, sort_keys=True, ensure_ascii=False) + "\n",
        )
    return result


def read_trajectories(path: str | Path) -> tuple[list[Episode], int]:
    """The episodes of a trajectories file written by :func:`evaluate`, and how many of
    its lines could not be read."""
    p = Path(path)
    if not p.is_file():
        raise PipelineError(f"no trajectories file {p}")
    return read_episodes(p)


# ------------------------------------------------------------------ playing blind

#: The most calls of one played episode before it is cut off (and graded).
PLAY_MAX_STEPS = 100


def _open_play(session: Session) -> Play:
    """Replay ``session`` in the compiled environment of its task set's domain."""
    _, tasks, d = _read_all(session.tasks_file, session.domain)
    found = [t for t in tasks if t.id == session.task_id]
    if not found:
        near = difflib.get_close_matches(session.task_id, [t.id for t in tasks], n=3)
        hint = f"; did you mean {', '.join(near)}?" if near else ""
        raise PlayError(f"no task {session.task_id!r} in {session.tasks_file}{hint}")
    task = found[0]
    env = make_env(d, max_steps=PLAY_MAX_STEPS)
    return Play(env, task, session)


def play_start(
    tasks_file: str | Path, task_id: str, session: str | Path, domain: str | None = None
) -> str:
    """Start a blind episode of one task: write a new session file at ``session`` and
    return the first screen (policy, instruction, tool schemas; nothing else).

    ``domain`` is a domain file for a task set of a domain that is not built in.

    >>> import tempfile
    >>> d = Path(tempfile.mkdtemp())
    >>> _ = generate("mock", 2, Options(prove=False), output=d / "t.jsonl")
    >>> screen = play_start(d / "t.jsonl", "mock-0-00000", d / "s.json")
    >>> "# Instruction" in screen and '"respond"' in screen
    True
    """
    fresh = Session(str(Path(tasks_file).resolve()), task_id, domain)
    game = _open_play(fresh)
    fresh.save(Path(session))
    return game.screen()


def play_call(session: str | Path, call: str) -> Outcome:
    """Make one call in a played episode (``tool(arg=value)`` or JSON) and save it;
    malformed calls, unknown tools and calls after the end raise :class:`PlayError`."""
    path = Path(session)
    game = _open_play(Session.load(path))
    outcome = game.call(call)
    game.session.save(path)
    return outcome


def play_answer(session: str | Path, answer: str) -> Outcome:
    """End a played episode with ``answer``; the outcome carries the grade."""
    path = Path(session)
    game = _open_play(Session.load(path))
    outcome = game.respond(answer)
    game.session.save(path)
    return outcome


# ------------------------------------------------------------------ the whole pipeline


class RunEvents:
    """What :func:`run` reports as it goes. Every method does nothing here: subclass and
    override the ones to show (the command line prints tables and progress bars)."""

    def stage(self, step: int, total: int, title: str) -> None:
        """Stage ``step`` of ``total`` starts."""

    def note(self, message: str) -> None:
        """Something skipped or worth a warning."""

    def checked(self, domain: Domain, result: Report) -> None:
        """The analyses are done."""

    def graph_written(self, path: Path, graph: nx.MultiDiGraph) -> None:
        """One graph file is written."""

    def generating(self, accepted: int, attempts: int) -> None:
        """Progress of :func:`generate`."""

    def generated(self, result: GenResult, path: Path) -> None:
        """The task set is written to ``path``."""

    def verifying(self, done: int, total: int) -> None:
        """Progress of :func:`verify_tasks`."""

    def verified(self, result: Verification) -> None:
        """The task set is re-checked."""

    def compiled(self, files: list[Path], package: Path) -> None:
        """The environment package is written."""

    def evaluating(self, agent: str, done: int, total: int) -> None:
        """Progress of one baseline's :func:`evaluate`."""

    def evaluated(self, result: Evaluation) -> None:
        """One baseline is done."""


@dataclass(frozen=True)
class RunResult:
    """Everything :func:`run` made, and where it put it."""

    domain: Domain
    output: Path
    report: Report
    generation: GenResult
    verification: Verification
    package: Path
    evaluations: dict[str, Evaluation]


RUN_STAGES = 6


def run(
    domain: DomainRef,
    n: int,
    output: str | Path,
    options: Options = DEFAULTS,
    *,
    events: RunEvents | None = None,
    force: bool = False,
) -> RunResult:
    """The whole pipeline on one domain, into the folder ``output``: check, graph
    (``graph.json``; ``graph.png`` when matplotlib is installed), generate ``n`` tasks
    with proofs (``tasks.jsonl``), verify that file from scratch, compile the
    environment (``<domain>_env/``), run every baseline in it
    (``trajectories_<agent>.jsonl``, with ``trajectories_<agent>.results.json``).

    Raises :class:`PipelineError` (after ``events.verified``) if verification fails.
    Before any work, :class:`~graphgen.files.OutputError` if ``output`` holds a file
    the run would overwrite (unless ``force``) or a package folder
    :func:`compile` would refuse.

    >>> import tempfile
    >>> res = run("mock", 3, tempfile.mkdtemp(), Options(jobs=1))
    >>> sorted(res.evaluations), res.evaluations["noop"].success_rate
    (['echo', 'greedy', 'hedger', 'noop', 'oracle', 'random'], 0.0)
    """
    ev = events or RunEvents()
    out = check_output_dir(output)
    d = load_domain_ref(domain)
    outputs = ["graph.json", "graph.png", "tasks.jsonl"]
    outputs += [f"trajectories_{name}.jsonl" for name in BASELINES]
    for name in outputs:
        check_output_file(out / name, force=force)
        check_output_file(journal_path(out / name), force=True)
    check_package_dir(d, out / f"{d.name}_env", force=force)
    out.mkdir(parents=True, exist_ok=True)
    ev.stage(1, RUN_STAGES, f"check {d.source}")
    rep = check(d)
    ev.checked(d, rep)
    ev.stage(2, RUN_STAGES, "dependency graph")
    # The outputs were checked above: each stage may replace what it writes.
    ev.graph_written(out / "graph.json", export_graph(d, out / "graph.json", "json", force=True))
    try:  # the drawing is optional (the viz extra); the rest of the run is not
        ev.graph_written(out / "graph.png", export_graph(d, out / "graph.png", "png", force=True))
    except MissingExtraError as exc:
        ev.note(f"graph.png skipped: {exc}")
    gate = "dry-run + z3 proofs" if options.prove else "dry-run only"
    ev.stage(3, RUN_STAGES, f"generate {n} tasks ({gate})")
    tasks_file = out / "tasks.jsonl"
    try:
        gen = generate(d, n, options, output=tasks_file, progress=ev.generating, force=True)
    except Interrupted as exc:
        exc.detail = "`graphgen run` does not resume; run it again with --force to start over"
        raise
    ev.generated(gen, tasks_file)
    ev.stage(4, RUN_STAGES, "verify the file from scratch")
    ver = verify_tasks(tasks_file, d, options, progress=ev.verifying)
    ev.verified(ver)
    if not ver.ok:
        raise PipelineError(f"{len(ver.failures)} task(s) of {tasks_file} failed verification")
    ev.stage(5, RUN_STAGES, "compile the environment")
    package = out / f"{d.name}_env"
    ev.compiled(compile(d, package, force=force), package)
    ev.stage(6, RUN_STAGES, "baselines in the compiled environment")
    evals: dict[str, Evaluation] = {}
    for name in BASELINES:

        def tick(done: int, total: int, name: str = name) -> None:
            ev.evaluating(name, done, total)

        evals[name] = evaluate(
            tasks_file,
            name,
            options,
            domain=d,
            trajectories=out / f"trajectories_{name}.jsonl",
            progress=tick,
        )
        ev.evaluated(evals[name])
    return RunResult(d, out, rep, gen, ver, package, evals)
