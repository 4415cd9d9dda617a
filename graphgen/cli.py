"""The ``graphgen`` command line: parse arguments, call :mod:`graphgen.pipeline`, print.

Every default comes from :data:`graphgen.pipeline.DEFAULTS`; the work is done by the
library. typer gives typed options and help text from annotations; rich gives tables and
progress bars.
"""

from __future__ import annotations

import json
import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.panel import Panel
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn
from rich.table import Table

from graphgen import __version__
from graphgen import pipeline as pl
from graphgen.analysis import Report
from graphgen.domain import Domain
from graphgen.domains import builtin_names, load_builtin
from graphgen.envs.agent import GREEDY_MAX_ORDERS, Episode
from graphgen.envs.play import Outcome, PlayError, Session, render_grade
from graphgen.envs.trials import request_stop_on_signals
from graphgen.errors import DomainError, GraphgenError, StateGenError
from graphgen.files import OutputError
from graphgen.limits import MAX_TABLE_SIZE
from graphgen.pipeline import DEFAULTS, EVAL_DEFAULTS, Evaluation, Options, Verification
from graphgen.processes import Interrupted
from graphgen.synth import SynthOptions
from graphgen.tasks.expand import MAX_INTENTS
from graphgen.tasks.shards import parse_shard, shard_size
from graphgen.tasks.taskset import GenResult
from graphgen.tasks.validate import TaskSetError

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    help="Synthesize provably solvable tool-use tasks and environments from typed domains.",
)
out = Console()
err = Console(stderr=True)


def _version(value: bool) -> None:
    if value:
        out.print(f"graphgen {__version__}", highlight=False)
        raise typer.Exit()


@app.callback()
def _main(
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_version, is_eager=True, help="Print the version and exit."
        ),
    ] = False,
) -> None:
    """Synthesize provably solvable tool-use tasks and environments from typed domains."""


DomainArg = Annotated[str, typer.Argument(help="A built-in domain name or a domain YAML file.")]
Jobs = Annotated[int, typer.Option("--jobs", "-j", min=1, help="Processes for the proofs.")]
Paraphrase = Annotated[
    str | None,
    typer.Option(
        "--paraphrase",
        metavar="MODEL",
        help="Rewrite each instruction with this model (at --base-url); a rewrite is kept "
        "only if it states the same values and passes the gate again.",
    ),
]
BaseUrl = Annotated[str | None, typer.Option("--base-url", help="OpenAI-compatible endpoint URL.")]
ApiKeyEnv = Annotated[str, typer.Option(help="Environment variable with the API key.")]
ParaphraseCache = Annotated[
    Path | None,
    typer.Option(help="Folder of cached paraphrase replies (a rerun makes no request)."),
]


def _share(value: float) -> float:
    """A share from 0 to 1; NaN is no share (typer's own range check lets NaN pass)."""
    if not 0.0 <= value <= 1.0:
        raise typer.BadParameter(f"{value} is not a share from 0 to 1")
    return value


def _shard(value: str | None) -> str | None:
    """``PART/PARTS`` checked here, so a bad one is a usage error before any work."""
    if value is not None:
        try:
            parse_shard(value)
        except ValueError as exc:
            raise typer.BadParameter(str(exc)) from None
    return value


def _fail(message: str, code: int = 1) -> typer.Exit:
    err.print(f"[red]error:[/red] {escape(message)}", highlight=False)
    return typer.Exit(code)


Force = Annotated[bool, typer.Option("--force", help="Replace an existing output (or start over).")]
TableSize = Annotated[
    list[str] | None,
    typer.Option("--size", help="Rows of one table, e.g. --size Order=50 (repeatable)."),
]
TableScale = Annotated[
    int,
    typer.Option(
        "--scale", min=1, help="Every table this many times its size (a --size for a table wins)."
    ),
]
Resume = Annotated[
    bool,
    typer.Option(
        "--resume",
        help="Continue a stopped run from OUTPUT.partial (same options): finished items "
        "are not redone and the output is the same as an uninterrupted run's.",
    ),
]


@contextmanager
def _errors_exit() -> Iterator[None]:
    """Errors a user can fix (bad file, unknown domain) end the command with exit 1; an
    output path that cannot be used, found before any work, with exit 2; SIGINT or
    SIGTERM with 128 + the signal number, after saying how to resume."""
    try:
        yield
    except OutputError as exc:
        raise _fail(str(exc), 2) from None
    except (OSError, TaskSetError, GraphgenError) as exc:
        raise _fail(str(exc)) from None
    except Interrupted as exc:
        name = exc.args[0] if exc.args else "a signal"
        what = exc.detail or "nothing was kept"
        err.print(f"[yellow]stopped by {name}:[/yellow] {escape(what)}", highlight=False)
        raise typer.Exit(128 + exc.signum) from None


def _options(**values: Any) -> Options:
    with _errors_exit():
        return Options(**values)


def _load(name: str) -> Domain:
    with _errors_exit():
        return pl.load_domain_ref(name)


# ------------------------------------------------------------------ printing


class _Bar:
    """One rich progress bar on stderr at a time, started by the first tick."""

    def __init__(self) -> None:
        self.progress: Progress | None = None
        self.job: TaskID | None = None

    def tick(self, description: str, done: int, total: int, detail: str = "") -> None:
        if self.progress is None:
            self.progress = Progress(
                TextColumn("[bold]{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("{task.fields[detail]}"),
                console=err,
            )
            self.progress.start()
            self.job = self.progress.add_task(description, total=total, detail=detail)
        assert self.job is not None
        self.progress.update(
            self.job, description=description, completed=done, total=total, detail=detail
        )

    def close(self) -> None:
        if self.progress is not None:
            self.progress.stop()
        self.progress = self.job = None


class _Printer(pl.RunEvents):
    """Prints what each stage did; ``graphgen run`` and the single commands share it."""

    def __init__(self, domain: str = "", n: int = 0, tasks_name: str = "tasks.jsonl") -> None:
        self.bar = _Bar()
        self.domain = domain
        self.n = n
        self.tasks_name = tasks_name

    def stage(self, step: int, total: int, title: str) -> None:
        self.bar.close()
        out.rule(escape(f"{step}/{total} {title}"))

    def note(self, message: str) -> None:
        err.print(f"[yellow]note:[/yellow] {escape(message)}", highlight=False)

    def checked(self, domain: Domain, result: Report) -> None:
        s = domain.summary()
        out.print(
            f"[green]ok[/green] {escape(domain.source)}: domain {domain.name!r}, "
            f"{s['entities']} entities, {s['tools']} tools ({s['write_tools']} write, "
            f"{s['read_tools']} read)"
        )
        t = Table(title="analyses", show_lines=False)
        t.add_column("check")
        t.add_column("result")
        for name, items in result.findings().items():
            t.add_row(name, ", ".join(items) if items else "none")
        out.print(t)

    def graph_written(self, path: Path, graph: Any) -> None:
        out.print(
            f"wrote {path} ({graph.number_of_nodes()} nodes, {graph.number_of_edges()} edges)"
        )

    def generating(self, accepted: int, attempts: int) -> None:
        self.bar.tick(f"generating {self.domain}", accepted, self.n, f"{attempts} attempts")

    def generated(self, result: GenResult, path: Path) -> None:
        self.bar.close()
        _summary(result.manifest.model_dump())
        out.print(f"wrote {len(result.tasks)} tasks to {path}")
        if len(result.tasks) < self.n:
            err.print(
                f"[yellow]warning:[/yellow] only {len(result.tasks)} of {self.n} tasks accepted"
            )

    def verifying(self, done: int, total: int) -> None:
        self.bar.tick(f"verifying {self.tasks_name}", done, total)

    def verified(self, result: Verification) -> None:
        self.bar.close()
        table = Table(title=f"verify {self.tasks_name}: {result.total} tasks")
        table.add_column("result")
        table.add_column("tasks", justify="right")
        for k, v in sorted(result.outcomes.items(), key=lambda kv: (kv[0] != "ok", kv[0])):
            table.add_row(k, str(v))
        out.print(table)
        for tid, why in result.failures[:20]:
            out.print(f"  {escape(tid)}: {escape(why)}")

    def compiled(self, files: list[Path], package: Path) -> None:
        out.print(f"wrote {len(files)} files to {package} (import it, then Environment())")

    def evaluating(self, agent: str, done: int, total: int) -> None:
        self.bar.tick(f"{agent} on {self.tasks_name}", done, total)

    def evaluated(self, result: Evaluation) -> None:
        self.bar.close()
        for note in result.notes:
            err.print(f"[yellow]warning:[/yellow] {escape(note)}", highlight=False)
        trials = f" x {result.trials} trials" if result.trials > 1 else ""
        tasks = len({e.task_id for e in result.episodes})
        table = Table(title=f"{escape(result.agent)}: {tasks} tasks{trials}")
        for col in ("domain", "kind", "tasks", "success", "mean calls", "invalid calls", "errors"):
            table.add_column(col, justify="right" if col not in ("domain", "kind") else "left")
        for r in result.summary():
            table.add_row(
                r["domain"],
                r["kind"],
                str(r["tasks"]),
                f"{r['success']:.1%}",
                f"{r['mean_calls']:.2f}",
                f"{r['invalid_rate']:.1%}",
                str(r["errors"]),
            )
        out.print(table)
        if result.trials > 1:
            passes = "  ".join(f"pass^{k} {v:.3f}" for k, v in result.pass_hat_k().items())
            out.print(passes, highlight=False)
        _usage_report(result)
        _greedy_report(result)


def _usage_report(result: Evaluation) -> None:
    """Requests and tokens (and their cost when priced), for the agent and a model user."""
    cost = result.cost() or {}
    for side, u in result.usage().items():
        if not u["requests"]:
            continue
        line = (
            f"{side}: {u['requests']} requests, {u['prompt_tokens']} prompt + "
            f"{u['completion_tokens']} completion tokens"
        )
        if side in cost:
            line += f", cost {cost[side]:.4f}"
        out.print(line, highlight=False)


def _greedy_report(result: Evaluation) -> None:
    """For ``greedy``: the tasks whose writes can run in several orders, and up to ten
    whose grade depends on the order."""
    several = [e for e in result.episodes if len(e.orders) > 1]
    if not several:
        return
    failing = [e for e in several if not e.success]
    out.print(
        f"greedy: {len(several)} tasks allow more than one write order; "
        f"{len(failing)} fail in some order"
    )
    for e in failing[:10]:
        bad = next(o for o in e.orders if not o["success"])
        checks = "; ".join(str(i.get("check", "")) for i in bad["failed"][:2])
        out.print(f"  {escape(e.task_id)}: fails with {escape(bad['order'])} ({escape(checks)})")


def _summary(m: dict[str, Any]) -> None:
    # A manifest read from a file is data, not markup: every text in it is escaped.
    t = Table(title=escape(f"task set: {m['domain']} (seed {m['seed']})"))
    t.add_column("measure")
    t.add_column("value", justify="right")
    rows = [("accepted", m["accepted"])]
    rows += [(f"kind {k}", v) for k, v in m["by_kind"].items()]
    rows += [(f"chain length {k}", v) for k, v in m["by_length"].items()]
    rows += [(f"rejected: {k}", v) for k, v in m["rejected"].items()]
    para = m.get("paraphrase")
    if para:
        rows += [
            (f"paraphrased by {para['model']}", para["paraphrased"]),
            ("paraphrase unchanged", para["unchanged"]),
        ]
        rows += [(f"paraphrase rejected: {k}", v) for k, v in para["rejected"].items()]
    for name, value in rows:
        t.add_row(escape(name), escape(str(value)))
    out.print(t)


# ------------------------------------------------------------------ commands


@app.command()
def domains() -> None:
    """List the built-in domains with their entity and tool counts."""
    t = Table(title="built-in domains")
    for col in ("domain", "entities", "tools", "write tools", "read tools", "description"):
        t.add_column(col)
    for name in builtin_names():
        d = load_builtin(name)
        s = d.summary()
        t.add_row(
            name,
            str(s["entities"]),
            str(s["tools"]),
            str(s["write_tools"]),
            str(s["read_tools"]),
            d.description,
        )
    out.print(t)


@app.command()
def check(
    file: DomainArg,
    strict: Annotated[
        bool,
        typer.Option(
            "--strict",
            help="Also report what will hurt task quality (tools no task can reach, unused "
            "fields, writes that can never be refused, unreachable enum members, entities "
            "without a search tool, write parameters no effect records), each with a fix; "
            "exit 1 if there is any.",
        ),
    ] = False,
) -> None:
    """Load and type-check a domain (a built-in name or a YAML file), run the graph
    analyses, print a report.

    Exits 1 with every located error when the file is bad (and, with --strict, when
    there is any finding).
    """
    try:
        d = pl.load_domain_ref(file)
        report = pl.check(d)  # also refuses names the compiled package could not use
    except pl.UnknownDomainError as exc:
        raise _fail(str(exc)) from None
    except DomainError as exc:
        for p in exc.problems:
            err.print(f"[red]error:[/red] {escape(str(p))}", highlight=False)
        err.print(f"{len(exc.problems)} error(s) in {file}")
        raise typer.Exit(1) from None
    _Printer().checked(d, report)
    if strict:
        with _errors_exit():
            findings = pl.strict_check(d)
        for f in findings:
            out.print(f"[yellow]finding:[/yellow] {escape(str(f))}", highlight=False)
        if findings:
            err.print(f"{len(findings)} finding(s) in {file} (--strict)")
            raise typer.Exit(1)
        out.print("[green]strict: no findings[/green]")


@app.command()
def new(
    name: Annotated[str, typer.Argument(help="Domain name: lowercase letters, digits and _.")],
    output: Annotated[
        Path, typer.Option("-o", "--output", help="Folder to write NAME.yaml and test_NAME.py in.")
    ] = Path("."),
    force: Force = False,
) -> None:
    """Write a commented starter domain NAME.yaml and test_NAME.py, a test that runs
    check, generate, verify, compile and the oracle on it (run it with pytest)."""
    with _errors_exit():
        paths = pl.new_domain(name, output, force=force)
    for p in paths:
        out.print(f"wrote {escape(str(p))}", highlight=False)
    out.print(
        escape(f"next: graphgen check --strict {paths[0]}; python -m pytest {paths[1]}"),
        highlight=False,
    )


@app.command("synth")
def synth_cmd(
    seed: Annotated[int, typer.Option("--seed", "-s", help="Seed of the (first) domain.")],
    output: Annotated[Path, typer.Option("-o", "--output", help="Folder to write into.")],
    entities: Annotated[
        int, typer.Option(min=2, max=12, help="Entities: one owner and N-1 resources.")
    ] = 3,
    tools: Annotated[
        int | None,
        typer.Option(min=1, help="At most this many tools (writes are dropped to fit)."),
    ] = None,
    rows: Annotated[
        int, typer.Option(min=4, max=40, help="Rows per resource table in generated states.")
    ] = 8,
    count: Annotated[
        int, typer.Option(min=1, max=10_000, help="Write seeds SEED..SEED+COUNT-1.")
    ] = 1,
    force: Force = False,
) -> None:
    """Write random but plausible, valid domains (synth_SEED.yaml): an owner and its
    resources with references, status enums driving life cycles, bounded amounts,
    search, read and write tools with matching preconditions, intents and a policy.
    Same seed and options, same bytes."""
    with _errors_exit():
        opts = SynthOptions(entities=entities, tools=tools, rows=rows)
        paths = pl.synth(seed, output, opts, count=count, force=force)
    for p in paths:
        out.print(f"wrote {escape(str(p))}", highlight=False)


@app.command()
def schema() -> None:
    """Print the JSON Schema of a domain file (for editor completion):
    `graphgen schema > domain.schema.json`."""
    from graphgen.schema import domain_json_schema_text

    sys.stdout.write(domain_json_schema_text())


@app.command()
def graph(
    domain: DomainArg,
    output: Annotated[Path, typer.Option("-o", "--output", help="Where to write.")],
    fmt: Annotated[
        str, typer.Option("--format", "-f", help="json | dot | graphml | png | svg")
    ] = "json",
    view: Annotated[
        str, typer.Option(help="all, or enables: only the tools and the enables edges.")
    ] = "all",
    tool: Annotated[
        str | None, typer.Option(help="Only this tool and the nodes one edge away.")
    ] = None,
    force: Force = False,
) -> None:
    """Export the typed dependency graph of a domain (whole or filtered) as JSON, DOT,
    GraphML, PNG or SVG."""
    d = _load(domain)
    if fmt not in pl.GRAPH_FORMATS:
        raise _fail(f"unknown format {fmt!r}; use {', '.join(pl.GRAPH_FORMATS)}", 2)
    if view not in pl.GRAPH_VIEWS:
        raise _fail(f"unknown view {view!r}; use {', '.join(pl.GRAPH_VIEWS)}", 2)
    with _errors_exit():
        g = pl.export_graph(d, output, fmt, view=view, tool=tool, force=force)
    _Printer().graph_written(output, g)


@app.command()
def state(
    domain: DomainArg,
    file: Annotated[
        str | None, typer.Argument(help="With 'import': the state JSON file to import.")
    ] = None,
    seed: Annotated[int, typer.Option("--seed", "-s", help="Random seed.")] = DEFAULTS.seed,
    size: TableSize = None,
    scale: TableScale = 1,
    of: Annotated[
        str | None,
        typer.Option("--domain", help="With 'import': the domain (built-in name or file)."),
    ] = None,
    output: Annotated[
        Path | None, typer.Option("-o", "--output", help="With 'import': write the state here.")
    ] = None,
    force: Force = False,
) -> None:
    """Print a seeded initial state of a domain as JSON (same seed, same bytes).

    `graphgen state import FILE.json --domain D [-o OUT]` checks an external state
    against domain D instead and prints it in canonical form, or lists every problem
    (table, row key, field) and exits 1.
    """
    if domain == "import":
        _state_import(file, of, output, force)
        return
    if file is not None or of is not None or output is not None:
        raise _fail("FILE, --domain and -o go with `graphgen state import`", 2)
    from graphgen.stategen import generate_state

    d = _load(domain)
    sizes = _table_sizes(d, size, scale)
    with _errors_exit():
        st = generate_state(d, seed, sizes)
    sys.stdout.write(st.to_json() + "\n")


def _changed_sizes(d: Domain, sizes: dict[str, int]) -> dict[str, int]:
    """Only the tables whose size differs from the domain's (what the manifest keeps:
    a run at the default sizes records none, as before there was a choice)."""
    return {e: n for e, n in sizes.items() if n != d.entities[e].size}


def _table_sizes(d: Domain, size: list[str] | None, scale: int) -> dict[str, int]:
    """The rows per table ``--scale`` and ``--size Entity=N`` ask for (exit 2 if bad)."""
    from graphgen.stategen import table_sizes

    sizes: dict[str, int] = {}
    for item in size or []:
        ent, _, n = item.partition("=")
        if ent not in d.entities or not n.isdigit() or not 1 <= int(n) <= MAX_TABLE_SIZE:
            raise _fail(
                f"bad --size {item!r}: use Entity=N with N from 1 to {MAX_TABLE_SIZE} and "
                f"Entity one of {', '.join(d.entities)}",
                2,
            )
        sizes[ent] = int(n)
    try:
        return table_sizes(d, scale, sizes)
    except StateGenError as exc:  # a scale that makes some table too big
        raise _fail(f"bad --scale {scale}: {str(exc).removeprefix(f'{d.source}: ')}", 2) from None


def _state_import(file: str | None, of: str | None, output: Path | None, force: bool) -> None:
    from graphgen.files import check_output_file, write_atomic
    from graphgen.stateimport import StateImportError, import_state_file

    if file is None or of is None:
        raise _fail("usage: graphgen state import FILE.json --domain DOMAIN [-o OUT]", 2)
    d = _load(of)
    try:
        st = import_state_file(d, file)
    except StateImportError as exc:
        for p in exc.problems:
            err.print(f"[red]error:[/red] {escape(file)}: {escape(str(p))}", highlight=False)
        err.print(f"{len(exc.problems)} problem(s) in {file}; nothing was imported")
        raise typer.Exit(1) from None
    text = st.to_json() + "\n"
    if output is None:
        sys.stdout.write(text)
        return
    with _errors_exit():
        check_output_file(output, force=force)
        write_atomic(output, text)
    n = sum(len(t) for t in st.tables.values())
    err.print(f"[green]ok[/green] {n} rows of domain {d.name!r} written to {escape(str(output))}")


@app.command()
def generate(
    domain: DomainArg,
    n: Annotated[int, typer.Option("-n", min=1, help="How many accepted tasks to produce.")] = 100,
    seed: Annotated[int, typer.Option("--seed", "-s", help="Random seed.")] = DEFAULTS.seed,
    output: Annotated[Path, typer.Option("-o", "--output", help="Task-set JSONL file.")] = Path(
        "tasks.jsonl"
    ),
    max_intents: Annotated[
        int,
        typer.Option(min=1, max=MAX_INTENTS, help="Most writes in one action task."),
    ] = DEFAULTS.max_intents,
    walk_ratio: Annotated[
        float,
        typer.Option(callback=_share, help="Share of action tasks by forward walk (0 to 1)."),
    ] = DEFAULTS.walk_ratio,
    prove: Annotated[
        bool, typer.Option("--prove/--no-prove", help="Also require the z3 proofs (verify gate).")
    ] = DEFAULTS.prove,
    jobs: Jobs = DEFAULTS.jobs,
    record_times: Annotated[
        bool,
        typer.Option(help="Keep proof times in certificates (they vary, so the bytes do too)."),
    ] = DEFAULTS.record_times,
    paraphrase: Paraphrase = DEFAULTS.paraphrase,
    base_url: BaseUrl = DEFAULTS.base_url,
    api_key_env: ApiKeyEnv = DEFAULTS.api_key_env,
    paraphrase_cache: ParaphraseCache = None,
    force: Force = False,
    resume: Resume = False,
    compact: Annotated[
        bool,
        typer.Option(
            "--compact/--plain",
            help="Write each distinct initial state once (tasks refer to it by hash).",
        ),
    ] = False,
    shard: Annotated[
        str | None,
        typer.Option(
            metavar="PART/PARTS",
            callback=_shard,
            help="Make only part PART (from 0) of PARTS of the set; join parts with merge.",
        ),
    ] = None,
    backend: Annotated[
        str,
        typer.Option(help="Where the proofs run: local processes or ray (a Ray cluster)."),
    ] = DEFAULTS.backend,
    ray_address: Annotated[
        str | None,
        typer.Option(help="Ray cluster to join with --backend ray (default: start a local one)."),
    ] = None,
    size: TableSize = None,
    scale: TableScale = 1,
) -> None:
    """Generate a task set: expand the graph, gate every candidate, write JSONL.

    Finished tasks go to OUTPUT.partial as they come; OUTPUT is written at the end.
    After a stop (Ctrl-C, SIGTERM, a crash) run the same command with --resume.
    An OUTPUT ending in .gz is gzip-compressed; every reader takes either layout."""
    d = _load(domain)
    opts = _options(
        seed=seed,
        max_intents=max_intents,
        walk_ratio=walk_ratio,
        prove=prove,
        jobs=jobs,
        record_times=record_times,
        paraphrase=paraphrase,
        base_url=base_url,
        api_key_env=api_key_env,
        paraphrase_cache=str(paraphrase_cache) if paraphrase_cache is not None else None,
        backend=backend,
        ray_address=ray_address,
        sizes=tuple(_changed_sizes(d, _table_sizes(d, size, scale)).items()),
    )
    part = parse_shard(shard) if shard is not None else None
    p = _Printer(d.name, shard_size(n, *part) if part is not None else n)
    with _errors_exit():
        try:
            res = pl.generate(
                d,
                n,
                opts,
                output=output,
                progress=p.generating,
                resume=resume,
                force=force,
                compact=compact,
                shard=part,
            )
        finally:
            p.bar.close()  # before any message
    p.generated(res, output)


@app.command()
def merge(
    parts: Annotated[list[Path], typer.Argument(help="The task files of every part.")],
    output: Annotated[Path, typer.Option("-o", "--output", help="The joined task set.")] = Path(
        "tasks.jsonl"
    ),
    compact: Annotated[
        bool,
        typer.Option("--compact/--plain", help="Write each distinct initial state once."),
    ] = False,
    force: Force = False,
) -> None:
    """Join the parts of a set made with generate --shard into one task set."""
    with _errors_exit():
        manifest, tasks = pl.merge(parts, output, compact=compact, force=force)
    _summary(manifest.model_dump())
    out.print(f"wrote {len(tasks)} tasks from {len(parts)} parts to {output}")


@app.command()
def show(
    file: Annotated[Path, typer.Argument(help="Task-set JSONL file.")],
    task: Annotated[str | None, typer.Option("--task", "-t", help="Show one task by id.")] = None,
    limit: Annotated[int, typer.Option(min=1, help="Tasks to list without --task.")] = 20,
    domain: Annotated[
        str | None, typer.Option(help="Domain file to check the tasks against, if not built in.")
    ] = None,
) -> None:
    """Pretty-print a task set's manifest and tasks, or one task in full.

    Every task is checked against its domain first; bad lines are listed on stderr, the
    good tasks are shown, and the exit code is 1 if there was any bad line.
    """
    with _errors_exit():
        got, _ = pl.read_tasks(file, domain, need_domain=False)
    manifest, tasks = got.manifest, got.tasks
    for bad in got.problems:
        err.print(f"[red]error:[/red] {escape(str(bad))}", highlight=False)
    if task is None:
        _summary(manifest.model_dump())
        t = Table(title=f"first {min(limit, len(tasks))} of {len(tasks)} tasks")
        for col in ("id", "kind", "calls", "instruction"):
            t.add_column(col)
        for tk in tasks[:limit]:
            t.add_row(escape(tk.id), tk.kind, str(tk.difficulty), escape(tk.instruction))
        out.print(t)
        if got.problems:
            raise typer.Exit(1)
        return
    found = [tk for tk in tasks if tk.id == task]
    if not found:
        err.print(f"[red]error:[/red] no task {escape(repr(task))} in {escape(str(file))}")
        raise typer.Exit(1)
    tk = found[0]
    lines = [
        "",
        f"kind {tk.kind}; {tk.difficulty} calls; proven minimum {tk.min_calls}",
        "",
        "reference chain:",
    ]
    lines += [
        f"  {i + 1}. {c.tool}({', '.join(f'{k}={v!r}' for k, v in c.args.items())})"
        for i, c in enumerate(tk.chain)
    ]
    if tk.refused_call:
        lines.append(f"refused: {tk.refused_call.tool}({tk.refused_call.args})")
    lines.append("goal:")
    lines += [
        f"  {c.entity} {c.key} {c.field}: {c.before!r} -> {c.after!r}" for c in tk.goal.changes
    ]
    if tk.goal.answer:
        lines.append(f"  answer must mention: {tk.goal.answer}")
    if tk.goal.answer_any:
        lines.append(f"  answer must mention one of: {tk.goal.answer_any}")
    if tk.goal.answer_not:
        lines.append(f"  answer must not state: {tk.goal.answer_not}")
    for tg in tk.targets:
        lines.append(f"target {tg.entity} {tg.key}: {tg.phrase!r}  [{tg.description}]")
    if tk.certificate:
        lines.append(
            "certificate: "
            + ", ".join(f"{p.name}={'ok' if p.ok else 'FAIL'}" for p in tk.certificate.proofs)
        )
    # Task text is data, not markup: unescaped, "[x.user_id == ...]" would vanish.
    body = f"[bold]{escape(tk.instruction)}[/bold]\n" + escape("\n".join(lines))
    out.print(Panel(body, title=escape(tk.id)), highlight=False)
    if got.problems:
        raise typer.Exit(1)


@app.command("verify")
def verify_cmd(
    file: Annotated[Path, typer.Argument(help="Task-set JSONL file to re-check.")],
    domain: Annotated[str | None, typer.Option(help="Domain file, if not a built-in.")] = None,
    jobs: Annotated[int, typer.Option("--jobs", "-j", min=1, help="Processes.")] = DEFAULTS.jobs,
    timeout_ms: Annotated[
        int, typer.Option(min=1, help="z3 time limit per query.")
    ] = DEFAULTS.timeout_ms,
    output: Annotated[
        Path | None,
        typer.Option("-o", "--output", help="Write a report (JSONL: summary, one line per task)."),
    ] = None,
    force: Force = False,
    resume: Resume = False,
) -> None:
    """Re-check a task set from scratch (dry-run and every z3 proof), trusting nothing
    the file claims to have proven. Exits 1 if any task fails.

    With -o, each task's result goes to OUTPUT.partial as it is known and the report is
    written at the end; after a stop run the same command with --resume."""
    if resume and output is None:
        raise _fail("--resume continues a report: give its file with -o", 2)
    d = _load(domain) if domain is not None else None
    p = _Printer(tasks_name=file.name)
    with _errors_exit():
        try:
            res = pl.verify_tasks(
                file,
                d,
                _options(jobs=jobs, timeout_ms=timeout_ms),
                progress=p.verifying,
                output=output,
                resume=resume,
                force=force,
            )
        finally:
            p.bar.close()  # before any message
    p.verified(res)
    if not res.ok:
        raise typer.Exit(1)


@app.command("export")
def export_cmd(
    files: Annotated[list[Path], typer.Argument(help="Task-set JSONL file(s).")],
    to: Annotated[str, typer.Option("--to", help="hf | tau2 | sft | mcp | pddl")],
    output: Annotated[Path, typer.Option("-o", "--output", help="Output folder.")],
    domain: Annotated[str | None, typer.Option(help="Domain file, if not a built-in.")] = None,
) -> None:
    """Export task sets for other tools: a Hugging Face dataset (hf), τ²-bench files
    (tau2), oracle conversations for fine-tuning (sft), MCP tool lists (mcp), planning
    problems of the integer-free fragment (pddl; the tasks left out are printed)."""
    if to not in pl.EXPORT_FORMATS:
        raise _fail(f"unknown export format {to!r}; use {', '.join(pl.EXPORT_FORMATS)}", 2)
    d = _load(domain) if domain is not None else None
    with _errors_exit():
        written = pl.export_tasks(files, to, output, domain=d)
    # One plain line per file (no wrapping): scripts read these.
    sys.stdout.write("".join(f"wrote {path}\n" for path in written))
    for path in written:
        if path.name == "skipped.tsv":
            rows = [r.split("\t", 1) for r in path.read_text("utf-8").splitlines() if r]
            for task_id, why in rows:
                sys.stdout.write(f"skipped {task_id}: {why}\n")
            sys.stdout.write(f"{len(rows)} task(s) outside the PDDL fragment skipped\n")


@app.command("coverage")
def coverage_cmd(
    file: Annotated[Path, typer.Argument(help="Task-set JSONL file.")],
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of tables.")] = False,
    domain: Annotated[str | None, typer.Option(help="Domain file, if not a built-in.")] = None,
) -> None:
    """What a task set exercises in its domain: tools, precondition branches (which
    condition each refusal fails), enables edges, enum members, distinct initial states,
    chain length and proven minimum; every uncovered item is listed."""
    d = _load(domain) if domain is not None else None
    with _errors_exit():
        rep = pl.coverage(file, d)
    if as_json:
        sys.stdout.write(json.dumps(rep.to_dict(), indent=1, ensure_ascii=False) + "\n")
        return
    t = Table(title=f"coverage of {escape(file.name)}: {rep.tasks} {rep.domain} tasks")
    for col in ("measure", "covered", "ratio"):
        t.add_column(col)
    for cov in (rep.tools, rep.branches, rep.enables, rep.enums):
        t.add_row(cov.name, f"{len(cov.covered)}/{len(cov.counts)}", f"{cov.ratio:.0%}")
    out.print(t)
    for cov in (rep.tools, rep.branches, rep.enables, rep.enums):
        if cov.uncovered:
            out.print(f"{cov.name} never exercised:", highlight=False)
            for k in cov.uncovered:
                note = f"  ({cov.notes[k]})" if k in cov.notes else ""
                out.print(f"  {escape(k)}{escape(note)}", highlight=False)
    out.print(
        f"distinct initial states: {len(rep.states)} "
        f"(tasks per state: {', '.join(str(n) for n in rep.states.values())})"
    )
    for measure, title in (("length", "chain length"), ("min_calls", "proven minimum")):
        per = rep.lengths[measure]
        lt = Table(title=title)
        lt.add_column("kind")
        lengths = sorted({n for d in per.values() for n in d})
        for n in lengths:
            lt.add_column(str(n), justify="right")
        for kind, dist in per.items():
            lt.add_row(kind, *(str(dist.get(n, "")) for n in lengths))
        out.print(lt)
    for tid, branches in rep.refusals.items():
        out.print(f"  refusal {tid}: fails {', '.join(branches) or 'no precondition'}")


@app.command("compile")
def compile_cmd(
    domain: DomainArg,
    output: Annotated[Path, typer.Option("-o", "--output", help="Package directory.")],
    force: Annotated[
        bool,
        typer.Option(
            "--force", help="Replace a non-empty folder that is not a build of this package."
        ),
    ] = False,
) -> None:
    """Compile a domain into a standalone Python environment package.

    An earlier build of the same package in OUTPUT is replaced as a whole; a folder
    holding anything else is refused unless --force."""
    d = _load(domain)
    with _errors_exit():
        files = pl.compile(d, output, force=force)
    _Printer().compiled(files, output)


@app.command("eval")
def eval_cmd(
    tasks_file: Annotated[Path, typer.Argument(help="Task-set JSONL file.")],
    model: Annotated[
        str,
        typer.Option(
            help="Model name, or a baseline: oracle (the reference chain), noop (gives up), "
            "random (random calls), echo (answers with the instruction), hedger (every read "
            "it can fill, then names every enum member and value seen), greedy (the "
            "reference writes in every order the data allow, at most "
            f"{GREEDY_MAX_ORDERS}; a task passes only if every order does)."
        ),
    ] = "oracle",
    base_url: Annotated[str | None, typer.Option(help="OpenAI-compatible endpoint URL.")] = None,
    api_key_env: Annotated[
        str, typer.Option(help="Environment variable with the API key.")
    ] = pl.API_KEY_ENV,
    max_steps: Annotated[
        int, typer.Option(min=1, help="Most model turns per task.")
    ] = DEFAULTS.max_steps,
    domain: Annotated[str | None, typer.Option(help="Domain file, if not a built-in.")] = None,
    limit: Annotated[int | None, typer.Option(min=1, help="Only the first N tasks.")] = None,
    trajectories: Annotated[
        Path | None,
        typer.Option(
            help="Write each finished episode here as one JSON line (the results go next "
            "to it, NAME.results.json)."
        ),
    ] = None,
    seed: Annotated[int, typer.Option(help="Seed of the random baseline.")] = DEFAULTS.seed,
    trials: Annotated[
        int, typer.Option(min=1, help="Episodes per task; reports pass^1..pass^TRIALS.")
    ] = EVAL_DEFAULTS.trials,
    concurrency: Annotated[
        int, typer.Option("--concurrency", "-c", min=1, help="Episodes run at once.")
    ] = EVAL_DEFAULTS.concurrency,
    temperature: Annotated[
        float, typer.Option(min=0.0, help="Sampling temperature.")
    ] = EVAL_DEFAULTS.temperature,
    extra_body: Annotated[
        str | None,
        typer.Option(metavar="JSON", help="A JSON object merged into every request body."),
    ] = None,
    timeout: Annotated[
        float, typer.Option(min=0.001, help="Seconds one request may take.")
    ] = EVAL_DEFAULTS.timeout,
    retries: Annotated[
        int, typer.Option(min=0, help="Retries of a failed request.")
    ] = EVAL_DEFAULTS.retries,
    task_timeout: Annotated[
        float | None,
        typer.Option(min=0.001, help="Seconds one episode may take (then it is graded as is)."),
    ] = None,
    user: Annotated[
        str | None,
        typer.Option(
            help="Simulate the user: 'scripted' reveals the instruction's identifying "
            "details when asked (multi-turn episodes)."
        ),
    ] = None,
    user_model: Annotated[
        str | None,
        typer.Option(help="Simulate the user with this model at --base-url instead."),
    ] = None,
    price_in: Annotated[
        float | None, typer.Option(min=0.0, help="Price per million prompt tokens.")
    ] = None,
    price_out: Annotated[
        float | None, typer.Option(min=0.0, help="Price per million completion tokens.")
    ] = None,
    resume: Annotated[
        bool,
        typer.Option(help="Keep the finished episodes in --trajectories; run only the rest."),
    ] = False,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print the results as JSON on stdout.")
    ] = False,
) -> None:
    """Run a model (or a baseline) on a task set in the compiled environment; report.

    SIGINT or SIGTERM stops the run cleanly: no new episode starts, the finished ones are
    in --trajectories, and --resume carries on. Exits 1 when every episode failed with an
    error (e.g. the server is unreachable).
    """
    if model not in pl.BASELINES and not base_url:
        raise _fail("--base-url is required for a model", 2)
    if resume and trajectories is None:
        raise _fail("--resume needs --trajectories (the file to resume from)", 2)
    if user is not None and user_model is not None:
        raise _fail("give --user or --user-model, not both", 2)
    if user is not None and user != "scripted":
        raise _fail(f"--user is 'scripted' (or use --user-model), not {user!r}", 2)
    if user_model is not None and not base_url:
        raise _fail("--user-model needs --base-url", 2)
    body: dict[str, Any] | None = None
    if extra_body is not None:
        try:
            body = json.loads(extra_body)
        except ValueError as exc:
            raise _fail(f"--extra-body is not valid JSON: {exc}", 2) from None
        if not isinstance(body, dict):
            raise _fail("--extra-body must be a JSON object ({...})", 2)
    with _errors_exit():
        run = pl.EvalOptions(
            trials=trials,
            concurrency=concurrency,
            temperature=temperature,
            extra_body=body,
            timeout=timeout,
            retries=retries,
            task_timeout=task_timeout,
            user=f"model:{user_model}" if user_model else user,
            price_in=price_in,
            price_out=price_out,
            resume=resume,
        )
    d = _load(domain) if domain is not None else None
    p = _Printer(tasks_name=tasks_file.name)
    stop = threading.Event()
    try:
        with _errors_exit(), request_stop_on_signals(stop) as signals:
            res = pl.evaluate(
                tasks_file,
                model,
                _options(seed=seed, max_steps=max_steps),
                domain=d,
                base_url=base_url,
                api_key_env=api_key_env,
                limit=limit,
                trajectories=trajectories,
                progress=lambda done, total: p.evaluating(model, done, total),
                run=run,
                stop=stop,
            )
    finally:
        p.bar.close()
    if as_json:
        sys.stdout.write(json.dumps(res.results(), indent=2, sort_keys=True) + "\n")
    else:
        p.evaluated(res)
    if res.interrupted:
        where = f"; rerun with --resume --trajectories {trajectories}" if trajectories else ""
        err.print(
            escape(f"interrupted: {len(res.episodes)} of {res.planned} episodes done{where}"),
            highlight=False,
        )
        raise typer.Exit(128 + (signals[0] if signals else signal.SIGINT))
    if res.all_errored:
        first = res.episodes[0].error or ""
        raise _fail(f"every episode failed with an error (the first: {first})")


@app.command()
def view(
    file: Annotated[Path, typer.Argument(help="Trajectories JSONL file (from eval).")],
    task: Annotated[
        str | None, typer.Option("--task", "-t", help="Show this task's episodes in full.")
    ] = None,
    trial: Annotated[int | None, typer.Option(min=0, help="Only this trial.")] = None,
) -> None:
    """Print the episodes of a trajectories file: a list, or one task's conversation."""
    with _errors_exit():
        episodes, bad = pl.read_trajectories(file)
    if bad:
        err.print(f"[yellow]warning:[/yellow] {bad} unreadable line(s) skipped", highlight=False)
    if task is None:
        t = Table(title=escape(f"{file.name}: {len(episodes)} episodes"))
        for col in ("task", "trial", "agent", "success", "calls", "turns", "error"):
            t.add_column(col)
        for e in episodes:
            t.add_row(
                escape(e.task_id),
                str(e.trial),
                escape(e.agent),
                "yes" if e.success else "no",
                str(e.calls),
                str(e.steps),
                escape(e.error or ""),
            )
        out.print(t)
        return
    chosen = [e for e in episodes if e.task_id == task and (trial is None or e.trial == trial)]
    if not chosen:
        raise _fail(f"no episode of task {task!r} in {file}")
    for e in chosen:
        _episode_view(e)


def _episode_view(e: Episode) -> None:
    """One episode as a conversation: every text escaped, tool calls as name(arguments)."""
    verdict = "[green]success[/green]" if e.success else "[red]failure[/red]"
    head = (
        f"{escape(e.task_id)} trial {e.trial} | {escape(e.agent)} | {verdict} | "
        f"{e.calls} calls, {e.invalid_calls} invalid, {e.steps} turns"
    )
    if e.user:
        head += f" | user {escape(e.user)}"
    out.print(Panel(head, expand=False))
    if e.error:
        out.print(f"[red]error:[/red] {escape(e.error)}", highlight=False)
    colours = {"system": "dim", "user": "cyan", "assistant": "green", "tool": "yellow"}
    for m in e.messages:
        role = str(m.get("role", "?"))
        style = colours.get(role, "white")
        text = m.get("content")
        if role == "system":
            text = (str(text or "").splitlines() or [""])[0] + " ..."
        if text:
            out.print(f"[{style}]{escape(role)}:[/{style}] {escape(str(text))}", highlight=False)
        for c in m.get("tool_calls") or []:
            fn = c.get("function", {}) if isinstance(c, dict) else {}
            call = f"{fn.get('name', '?')}({fn.get('arguments', '')})"
            out.print(f"[{style}]{escape(role)} calls:[/{style}] {escape(call)}", highlight=False)
    failed = [i for i in e.grade.get("items", []) if not i.get("ok")]
    for item in failed:
        detail = f"{item.get('check', '')}: {item.get('detail', '')}"
        out.print(f"[red]failed check:[/red] {escape(detail)}", highlight=False)
    out.print()


@app.command()
def play(
    tasks_file: Annotated[
        Path | None, typer.Argument(help="Task-set JSONL file (to start a session).")
    ] = None,
    task: Annotated[str | None, typer.Option("--task", "-t", help="Task id to play.")] = None,
    session: Annotated[
        Path, typer.Option("--session", "-s", help="Session file holding the episode.")
    ] = Path("play-session.json"),
    call: Annotated[
        str | None,
        typer.Option(help="One tool call: 'tool(arg=value, ...)' (literals only) or JSON."),
    ] = None,
    answer: Annotated[
        str | None, typer.Option(help="Final answer: ends the episode and prints the grade.")
    ] = None,
    domain: Annotated[str | None, typer.Option(help="Domain file, if not a built-in.")] = None,
) -> None:
    """Play one task blind, one command per step, as an agent sees it.

    Start with FILE --task ID: prints the policy, the instruction and the tool schemas
    (nothing else) and writes the session file. Then --call makes one call and prints only
    its observation; --answer ends the episode and prints the grade. The episode is
    replayed from the session's calls each time, so it is deterministic. FILE --task ID
    may be repeated with --call and --answer: the session must then be of that task.
    """
    if tasks_file is not None and task is None:
        raise _fail("start a session with FILE --task ID (then --call / --answer)", 2)
    if tasks_file is not None and task is not None and call is None and answer is None:
        with _errors_exit():
            screen = pl.play_start(tasks_file, task, session, domain)
        sys.stdout.write(screen)
        return
    if (call is None) == (answer is None):
        raise _fail("give one of --call or --answer (or FILE --task ID to start)", 2)
    if task is not None:
        with _errors_exit():
            _same_session(session, tasks_file, task)
    with _errors_exit():
        res = (
            pl.play_call(session, call)
            if call is not None
            else pl.play_answer(session, answer or "")
        )
    _print_outcome(res)


def _same_session(session: Path, tasks_file: Path | None, task: str) -> None:
    """Refuse a --call or --answer naming another task (or task set) than ``session``
    plays: the call would land in that other episode."""
    if not session.exists():
        start = f"{tasks_file or 'FILE'} --task {task}"
        raise PlayError(f"no session {session} yet: start it with {start} alone")
    got = Session.load(session)
    if got.task_id != task or (
        tasks_file is not None and Path(got.tasks_file) != tasks_file.resolve()
    ):
        raise PlayError(
            f"session {session} plays {got.task_id} of {got.tasks_file}, not {task}"
            + ("" if tasks_file is None else f" of {tasks_file.resolve()}")
            + f": start a session with {tasks_file or 'FILE'} --task {task}"
        )


def _print_outcome(res: Outcome) -> None:
    sys.stdout.write(res.observation + "\n")
    if res.grade is not None:
        sys.stdout.write(render_grade(res.grade) + "\n")


@app.command()
def run(
    domain: DomainArg,
    n: Annotated[int, typer.Option("-n", min=1, help="How many tasks.")] = 50,
    seed: Annotated[int, typer.Option("--seed", "-s", help="Random seed.")] = DEFAULTS.seed,
    output: Annotated[Path, typer.Option("-o", "--output", help="Output directory.")] = Path("out"),
    jobs: Jobs = DEFAULTS.jobs,
    paraphrase: Paraphrase = DEFAULTS.paraphrase,
    base_url: BaseUrl = DEFAULTS.base_url,
    api_key_env: ApiKeyEnv = DEFAULTS.api_key_env,
    paraphrase_cache: ParaphraseCache = None,
    force: Force = False,
) -> None:
    """The whole pipeline on one domain: check, graph, generate with proofs, verify the
    file from scratch, compile the environment, run the baselines in it."""
    d = _load(domain)
    opts = _options(
        seed=seed,
        jobs=jobs,
        paraphrase=paraphrase,
        base_url=base_url,
        api_key_env=api_key_env,
        paraphrase_cache=str(paraphrase_cache) if paraphrase_cache is not None else None,
    )
    p = _Printer(d.name, n)
    with _errors_exit():
        try:
            pl.run(d, n, output, opts, events=p, force=force)
        finally:
            p.bar.close()  # before any message
    out.print(f"[green]done[/green]: everything is in {output}/")


@app.command()
def propose(
    description: Annotated[
        str, typer.Argument(help="The service to model, in words (may be empty with --from-tools).")
    ] = "",
    model: Annotated[str, typer.Option(help="Model name at --base-url.")] = "",
    base_url: Annotated[str, typer.Option(help="OpenAI-compatible endpoint URL.")] = "",
    output: Annotated[
        Path, typer.Option("-o", "--output", help="Where to write the accepted domain.")
    ] = Path("domain.yaml"),
    rounds: Annotated[int, typer.Option(min=0, help="Repair rounds after the first answer.")] = 3,
    from_tools: Annotated[
        Path | None,
        typer.Option(
            "--from-tools",
            help="OpenAI tool schemas or an MCP tools/list result (JSON) to start from.",
        ),
    ] = None,
    api_key_env: ApiKeyEnv = pl.API_KEY_ENV,
    temperature: Annotated[float, typer.Option(min=0.0, help="Sampling temperature.")] = 0.0,
    seed: Annotated[
        int, typer.Option("--seed", "-s", help="Request seed, and seed of the trial run.")
    ] = DEFAULTS.seed,
    tasks: Annotated[
        int, typer.Option(min=3, help="Tasks the trial generation run asks for.")
    ] = 15,
    keep_rejected: Annotated[
        bool,
        typer.Option(
            "--keep-rejected",
            help="Write a rejected proposal and its transcript as NAME.rejected.yaml and "
            "NAME.rejected.transcript.json.",
        ),
    ] = False,
    force: Force = False,
) -> None:
    """Ask a model for a domain spec (YAML, never code), check it as graphgen check does,
    send the located problems back for repair, and accept it only when it checks clean
    and a trial run yields action, information and refusal tasks."""
    from graphgen import propose as pp
    from graphgen.toolschema import ToolFileError, load_tools

    if not model or not base_url:
        raise _fail("give the model with --model and its endpoint with --base-url", 2)
    seeds = None
    if from_tools is not None:
        try:
            seeds = load_tools(from_tools)
        except ToolFileError as exc:
            for problem in exc.problems:
                err.print(f"[red]error:[/red] {escape(problem)}", highlight=False)
            raise typer.Exit(1) from None
    options = pp.ProposeOptions(
        model=model,
        base_url=base_url,
        api_key_env=api_key_env,
        rounds=rounds,
        temperature=temperature,
        seed=seed,
        tasks=tasks,
    )

    def tick(i: int, r: pp.Round) -> None:
        if not r.problems:
            kinds = ", ".join(f"{v} {k}" for k, v in r.by_kind.items())
            out.print(f"round {i + 1}: [green]accepted[/green] (trial tasks: {kinds})")
        else:
            out.print(f"round {i + 1}: {len(r.problems)} problem(s)", highlight=False)

    with _errors_exit():
        pp.check_outputs(output, keep_rejected=keep_rejected, force=force)
        res = pp.propose(
            description,
            options,
            source=output.name,
            tools=seeds,
            tools_file=from_tools.name if from_tools is not None else None,
            progress=tick,
        )
        written = pp.write_proposal(res, output, keep_rejected=keep_rejected)
    for path in written:
        out.print(f"wrote {escape(str(path))}", highlight=False)
    if not res.accepted:
        err.print(
            f"[red]rejected[/red] after {len(res.rounds)} round(s); the last one found:",
            highlight=False,
        )
        for reason in res.reasons:
            err.print(f"  - {escape(reason)}", highlight=False)
        if not written:
            err.print("nothing written (--keep-rejected keeps the proposal for a look)")
        raise typer.Exit(1)


@app.command()
def compose(
    file: Annotated[Path, typer.Argument(help="Composition file (parts, link fields and tools).")],
    output: Annotated[
        Path, typer.Option("-o", "--output", help="Where to write the merged domain YAML.")
    ],
    force: Force = False,
) -> None:
    """Combine the domains a composition file names into one domain file, checked as
    graphgen check does; every other command then takes that file."""
    from graphgen import compose as cp
    from graphgen.files import check_output_file, write_atomic

    try:
        check_output_file(output, force=force)
        text = cp.compose_text(file)
        d = cp.load_composite(file)
        report = pl.check(d)
    except DomainError as exc:
        for p in exc.problems:
            err.print(f"[red]error:[/red] {escape(str(p))}", highlight=False)
        err.print(f"{len(exc.problems)} error(s) in {file}")
        raise typer.Exit(1) from None
    except OutputError as exc:
        raise _fail(str(exc), 2) from None
    write_atomic(output, text)
    _Printer().checked(d, report)
    out.print(f"wrote {escape(str(output))}", highlight=False)


def main() -> None:  # pragma: no cover - console entry point
    app()
