"""The library API: every stage of graphgen, composed, with one set of defaults.

This is what the ``graphgen`` command runs; the command line only parses arguments and
prints. Each function takes a domain as a built-in name, a YAML path or a loaded
:class:`~graphgen.domain.Domain`, and an :class:`Options` (the defaults live there and
nowhere else). Long stages take an optional ``progress`` callback so a caller can draw a
progress bar.

* :func:`load_domain_ref` — a domain by built-in name or path;
* :func:`check` — the static analyses, with the z3 satisfiability check;
* :func:`export_graph` — the dependency graph as JSON, DOT or PNG;
* :func:`generate` — tasks that passed the dry-run gate *and* the z3 proofs (by default);
* :func:`verify_tasks` — re-check a task-set file from scratch;
* :func:`compile` — a domain as a standalone Python package;
* :func:`make_env` — the compiled environment of a domain, ready to ``reset``;
* :func:`evaluate` — an agent (a baseline or a model) on a task set in that environment;
* :func:`run` — all of the above into one folder.

>>> import tempfile
>>> from pathlib import Path
>>> out = Path(tempfile.mkdtemp())
>>> res = run("mock", 4, out, Options(jobs=1))
>>> res.verification.ok, res.evaluations["oracle"].success_rate
(True, 1.0)
"""

from __future__ import annotations

import dataclasses
import difflib
import json
import os
import tempfile
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import networkx as nx
from pydantic import ValidationError

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
    run_episode,
    run_greedy,
    summarize,
)
from graphgen.envs.codegen import write_package
from graphgen.envs.load import load_env_module
from graphgen.envs.play import Outcome, Play, PlayError, Session
from graphgen.errors import GraphgenError
from graphgen.export import to_dot, to_json, to_png
from graphgen.extras import MissingExtraError, require
from graphgen.graph import build_graph
from graphgen.llm import API_KEY_ENV, api_key
from graphgen.load import load_domain
from graphgen.tasks.expand import GenOptions
from graphgen.tasks.model import Manifest, Task
from graphgen.tasks.paraphrase import Paraphraser
from graphgen.tasks.taskset import GenResult, scan_taskset_file, write_taskset
from graphgen.tasks.taskset import generate as generate_tasks
from graphgen.tasks.validate import TaskFile, TaskSetError
from graphgen.verify.certify import proof_check, recheck
from graphgen.verify.proofs import DEFAULT_TIMEOUT_MS
from graphgen.verify.satcheck import unsatisfiable_writes

__all__ = [
    "API_KEY_ENV",
    "BASELINES",
    "DEFAULTS",
    "GRAPH_FORMATS",
    "Evaluation",
    "Options",
    "PipelineError",
    "RunEvents",
    "RunResult",
    "UnknownDomainError",
    "Verification",
    "check",
    "compile",
    "evaluate",
    "export_graph",
    "generate",
    "load_domain_ref",
    "make_env",
    "play_answer",
    "play_call",
    "play_start",
    "read_tasks",
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

GRAPH_FORMATS = ("json", "dot", "png")


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

    def __post_init__(self) -> None:
        for name in ("jobs", "timeout_ms", "max_steps"):
            if getattr(self, name) < 1:
                raise PipelineError(f"Options.{name} must be at least 1, not {getattr(self, name)}")
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
        return GenOptions(max_intents=self.max_intents, walk_ratio=self.walk_ratio)

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
    ...     print(exc)
    no built-in domain or file 'mokc'; did you mean 'mock'? (built-ins: airline, mock, retail)
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
    return report(load_domain_ref(domain), sat_checker=unsatisfiable_writes)


def export_graph(domain: DomainRef, output: str | Path, fmt: str = "json") -> nx.MultiDiGraph:
    """Write the typed dependency graph as ``fmt`` (json, dot or png); returns the graph.

    PNG needs the ``viz`` extra (matplotlib).

    >>> import tempfile
    >>> g = export_graph("mock", Path(tempfile.mkdtemp()) / "g.dot", "dot")
    >>> g.number_of_nodes() > 0
    True
    """
    if fmt not in GRAPH_FORMATS:
        raise PipelineError(f"unknown format {fmt!r}; use {', '.join(GRAPH_FORMATS)}")
    g = build_graph(load_domain_ref(domain))
    path = Path(output)
    path.parent.mkdir(parents=True, exist_ok=True)
    if fmt == "png":
        to_png(g, path)
    else:
        path.write_text(to_json(g) if fmt == "json" else to_dot(g), encoding="utf-8")
    return g


# ------------------------------------------------------------------ tasks


def generate(
    domain: DomainRef,
    n: int,
    options: Options = DEFAULTS,
    *,
    output: str | Path | None = None,
    progress: Tick | None = None,
) -> GenResult:
    """Generate up to ``n`` tasks, each passing the dry-run gate and (unless
    ``options.prove`` is false) the z3 proofs, which attach a certificate.
    With ``options.paraphrase`` each instruction is offered to that model for a rewrite
    (kept only when the checks pass on the new text; counted in the manifest).

    Same domain, ``n`` and options give the same tasks, whatever ``options.jobs`` is.
    With ``output`` the task set is also written there as canonical JSONL.
    ``progress(accepted, attempts)`` is called after each accepted task.

    >>> res = generate("mock", 3, Options(jobs=1))
    >>> len(res.tasks), all(t.certificate is not None for t in res.tasks)
    (3, True)
    >>> generate("mock", 3, Options(prove=False)).tasks[0].certificate is None
    True
    """
    d = load_domain_ref(domain)
    res = generate_tasks(
        d,
        n,
        options.seed,
        options.gen_options(),
        progress=progress,
        task_checks=[proof_check] if options.prove else (),
        jobs=options.jobs,
        record_times=options.record_times,
        paraphraser=options.paraphraser(),
    )
    if output is not None:
        write_taskset(output, res.manifest, res.tasks)
    return res


def read_tasks(
    tasks_file: str | Path, domain: DomainRef | None = None, *, need_domain: bool = True
) -> tuple[TaskFile, Domain | None]:
    """Read a task-set file and check every task against its domain
    (:mod:`graphgen.tasks.validate`): the good tasks, one located problem per bad line,
    and the domain used.

    ``domain`` defaults to the built-in named in the manifest; a set of another domain
    needs it (:class:`UnknownDomainError`), unless ``need_domain`` is false: then such a
    set is checked for its shape only and the domain returned is None. An unreadable file
    or a bad manifest raises :class:`~graphgen.tasks.validate.TaskSetError`.
    """
    used: list[Domain] = []

    def domain_of(manifest: Manifest) -> Domain | None:
        if domain is None and not need_domain and manifest.domain not in builtin_names():
            return None
        used.append(load_domain_ref(domain if domain is not None else manifest.domain))
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

    @property
    def ok(self) -> bool:
        """Every task re-proved and the manifest matches the file."""
        return not self.failures


def _recheck_one(domain: Domain, task: Task, timeout_ms: int) -> str:
    return recheck(domain, task, timeout_ms)[0]


def verify_tasks(
    tasks_file: str | Path,
    domain: DomainRef | None = None,
    options: Options = DEFAULTS,
    *,
    progress: Tick | None = None,
) -> Verification:
    """Re-check a task-set file from scratch: the dry-run and every z3 proof, trusting
    nothing the file claims to have proven, in ``options.jobs`` processes.

    ``domain`` defaults to the built-in named in the file's manifest.
    ``progress(done, total)`` is called after each task.

    >>> import tempfile
    >>> path = Path(tempfile.mkdtemp()) / "t.jsonl"
    >>> _ = generate("mock", 2, Options(jobs=1), output=path)
    >>> verify_tasks(path, options=Options(jobs=1)).ok
    True
    """
    got, d = read_tasks(tasks_file, domain)
    assert d is not None  # need_domain
    manifest, tasks = got.manifest, got.tasks
    outcomes: dict[str, int] = {}
    failures: list[tuple[str, str]] = []
    for bad in got.problems:  # lines that are not valid tasks of the domain fail first
        outcomes["invalid_task"] = outcomes.get("invalid_task", 0) + 1
        parts = ([f"line {bad.line}"] if bad.task_id else []) + ([bad.path] if bad.path else [])
        where = f" ({', '.join(parts)})" if parts else ""
        failures.append((bad.task_id or f"line {bad.line}", f"invalid task{where}: {bad.message}"))
    ms = options.timeout_ms
    pool = ProcessPoolExecutor(max_workers=options.jobs) if options.jobs > 1 else None
    if pool is not None:
        reasons: Iterator[str] = pool.map(_recheck_one, [d] * len(tasks), tasks, [ms] * len(tasks))
    else:
        reasons = (_recheck_one(d, t, ms) for t in tasks)
    try:
        for i, (t, why) in enumerate(zip(tasks, reasons, strict=True), 1):
            outcomes[why or "ok"] = outcomes.get(why or "ok", 0) + 1
            if why:
                failures.append((t.id, why))
            if progress:
                progress(i, len(tasks))
    finally:
        if pool is not None:
            pool.shutdown()
    total = len(tasks) + len(got.problems)
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
    return Verification(total, outcomes, failures)


# ------------------------------------------------------------------ environments


def compile(domain: DomainRef, output: str | Path) -> list[Path]:
    """Compile a domain into a standalone Python package in ``output``; the files written.

    >>> import tempfile
    >>> files = compile("mock", Path(tempfile.mkdtemp()) / "mock_env")
    >>> sorted(p.name for p in files)[:2]
    ['__init__.py', 'env.py']
    """
    return write_package(load_domain_ref(domain), Path(output))


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
class Evaluation:
    """One agent's episodes on a task set."""

    agent: str
    episodes: list[Episode]
    notes: list[str] = field(default_factory=list)
    """Warnings worth showing, e.g. the domain changed since the task set was made."""

    def summary(self) -> list[dict[str, Any]]:
        """Per (domain, kind) and overall: success, mean calls, invalid-call rate, errors."""
        return summarize(self.episodes)

    @property
    def success_rate(self) -> float:
        """Share of episodes solved (0.0 when there are none)."""
        return sum(e.success for e in self.episodes) / len(self.episodes) if self.episodes else 0.0


def _agent(
    name: str | Agent, options: Options, base_url: str | None, api_key_env: str, domain: Domain
) -> Agent:
    if not isinstance(name, str):
        return name
    if name == "oracle":
        return OracleAgent()
    if name == "noop":
        return NoopAgent()
    if name == "random":
        return RandomAgent(options.seed)
    if name == "echo":
        return EchoAgent()
    if name == "hedger":
        return HedgerAgent(domain)
    if not base_url:
        raise PipelineError(
            f"agent {name!r} is not a baseline ({', '.join(BASELINES)}), so it is a model "
            "and needs base_url (an OpenAI-compatible endpoint)"
        )
    require("openai", "eval", f"evaluating the model {name!r}")
    return OpenAIAgent(name, base_url, api_key(api_key_env))


def _write_trajectories(path: Path, episodes: Sequence[Episode]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as fh:
        for e in episodes:
            fh.write(json.dumps(dataclasses.asdict(e), sort_keys=True, ensure_ascii=False) + "\n")


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
) -> Evaluation:
    """Run an agent on a task set in the compiled environment, one episode per task.

    ``agent`` is a baseline name (``oracle``, ``noop``, ``random``, ``echo``, ``hedger``,
    ``greedy``; the random one is seeded by ``options.seed``; ``greedy`` runs up to
    ``GREEDY_MAX_ORDERS`` episodes per task and yields one, see
    :func:`~graphgen.envs.agent.run_greedy`), an :class:`~graphgen.envs.agent.Agent`,
    or a model name served at ``base_url`` (an OpenAI-compatible endpoint; the key is read from the
    environment variable ``api_key_env``; needs the ``eval`` extra). ``domain``
    defaults to the built-in named in the manifest. With ``trajectories`` every episode
    is written there as one JSON line. ``progress(done, total)`` follows the episodes.

    >>> import tempfile
    >>> path = Path(tempfile.mkdtemp()) / "t.jsonl"
    >>> _ = generate("mock", 3, Options(prove=False), output=path)
    >>> evaluate(path, "oracle").success_rate, evaluate(path, "noop").success_rate
    (1.0, 0.0)
    """
    manifest, tasks, d = _read_all(tasks_file, domain)
    notes = []
    if d.content_hash != manifest.domain_hash:
        notes.append(
            f"domain {d.name!r} changed since the task set was made "
            f"({d.content_hash} != {manifest.domain_hash})"
        )
    # One agent turn can make several tool calls; the environment counts calls.
    env = make_env(d, max_steps=options.max_steps * 4)
    chosen = tasks[:limit] if limit is not None else tasks
    episodes = []
    if agent == "greedy":
        for i, t in enumerate(chosen, 1):
            episodes.append(run_greedy(env, t, d, options.max_steps, GREEDY_MAX_ORDERS))
            if progress:
                progress(i, len(chosen))
        if any(e.orders_capped for e in episodes):
            notes.append(f"greedy tried at most {GREEDY_MAX_ORDERS} write orders per task")
        name = "greedy"
    else:
        who = _agent(agent, options, base_url, api_key_env, d)
        for i, t in enumerate(chosen, 1):
            episodes.append(run_episode(env, t, who, options.max_steps))
            if progress:
                progress(i, len(chosen))
        name = who.name
    if trajectories is not None:
        _write_trajectories(Path(trajectories), episodes)
    return Evaluation(name, episodes, notes)


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
) -> RunResult:
    """The whole pipeline on one domain, into the folder ``output``: check, graph
    (``graph.json``; ``graph.png`` when matplotlib is installed), generate ``n`` tasks
    with proofs (``tasks.jsonl``), verify that file from scratch, compile the
    environment (``<domain>_env/``), run every baseline in it
    (``trajectories_<agent>.jsonl``).

    Raises :class:`PipelineError` (after ``events.verified``) if verification fails.

    >>> import tempfile
    >>> res = run("mock", 3, tempfile.mkdtemp(), Options(jobs=1))
    >>> sorted(res.evaluations), res.evaluations["noop"].success_rate
    (['echo', 'greedy', 'hedger', 'noop', 'oracle', 'random'], 0.0)
    """
    ev = events or RunEvents()
    out = Path(output)
    out.mkdir(parents=True, exist_ok=True)
    d = load_domain_ref(domain)
    ev.stage(1, RUN_STAGES, f"check {d.source}")
    rep = check(d)
    ev.checked(d, rep)
    ev.stage(2, RUN_STAGES, "dependency graph")
    ev.graph_written(out / "graph.json", export_graph(d, out / "graph.json", "json"))
    try:  # the drawing is optional (the viz extra); the rest of the run is not
        ev.graph_written(out / "graph.png", export_graph(d, out / "graph.png", "png"))
    except MissingExtraError as exc:
        ev.note(f"graph.png skipped: {exc}")
    gate = "dry-run + z3 proofs" if options.prove else "dry-run only"
    ev.stage(3, RUN_STAGES, f"generate {n} tasks ({gate})")
    tasks_file = out / "tasks.jsonl"
    gen = generate(d, n, options, output=tasks_file, progress=ev.generating)
    ev.generated(gen, tasks_file)
    ev.stage(4, RUN_STAGES, "verify the file from scratch")
    ver = verify_tasks(tasks_file, d, options, progress=ev.verifying)
    ev.verified(ver)
    if not ver.ok:
        raise PipelineError(f"{len(ver.failures)} task(s) of {tasks_file} failed verification")
    ev.stage(5, RUN_STAGES, "compile the environment")
    package = out / f"{d.name}_env"
    ev.compiled(compile(d, package), package)
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
