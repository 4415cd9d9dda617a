"""The ``graphgen`` command line: the one place where all stages are composed.

typer gives typed options and help text from annotations; rich gives tables and a
progress bar for long runs.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from graphgen.domains import builtin_names, load_builtin, resolve
from graphgen.errors import DomainError

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    help="Synthesize provably solvable tool-use tasks and environments from typed domains.",
)
out = Console()
err = Console(stderr=True)

def _default_jobs() -> int:
    return max(1, min(os.cpu_count() or 1, 8))


DomainArg = Annotated[str, typer.Argument(help="A built-in domain name or a domain YAML file.")]


def _load(name: str):  # type: ignore[no-untyped-def]
    try:
        return resolve(name)
    except DomainError as exc:
        err.print(f"[red]error:[/red] {escape(str(exc))}", highlight=False)
        raise typer.Exit(1) from None
    except FileNotFoundError:
        err.print(f"[red]error:[/red] no built-in domain or file {name!r} "
                  f"(built-ins: {', '.join(builtin_names())})")
        raise typer.Exit(1) from None


@app.command()
def domains() -> None:
    """List the built-in domains with their entity and tool counts."""
    t = Table(title="built-in domains")
    for col in ("domain", "entities", "tools", "write tools", "read tools", "description"):
        t.add_column(col)
    for name in builtin_names():
        d = load_builtin(name)
        s = d.summary()
        t.add_row(name, str(s["entities"]), str(s["tools"]), str(s["write_tools"]),
                  str(s["read_tools"]), d.description)
    out.print(t)


@app.command()
def check(file: Annotated[Path, typer.Argument(help="Domain YAML file to check.")]) -> None:
    """Load and type-check a domain file, run the graph analyses, print a report.

    Exits 1 with every located error when the file is bad.
    """
    from graphgen.analysis import register_sat_checker, report, unregister_sat_checker
    from graphgen.load import load_domain
    from graphgen.verify.satcheck import unsatisfiable_writes

    try:
        d = load_domain(file)
    except DomainError as exc:
        for p in exc.problems:
            err.print(f"[red]error:[/red] {escape(str(p))}", highlight=False)
        err.print(f"{len(exc.problems)} error(s) in {file}")
        raise typer.Exit(1) from None
    # The z3 half of the analyses, for this report only: the registry is process-wide,
    # and a library caller that did not ask for z3 must not get it from a CLI run.
    register_sat_checker(unsatisfiable_writes)
    try:
        r = report(d)
    finally:
        unregister_sat_checker(unsatisfiable_writes)
    s = d.summary()
    out.print(f"[green]ok[/green] {file}: domain {d.name!r}, {s['entities']} entities, "
              f"{s['tools']} tools ({s['write_tools']} write, {s['read_tools']} read)")
    t = Table(title="analyses", show_lines=False)
    t.add_column("check")
    t.add_column("result")
    for name, items in r.findings().items():
        t.add_row(name, ", ".join(items) if items else "none")
    out.print(t)


@app.command()
def graph(
    domain: DomainArg,
    output: Annotated[Path, typer.Option("-o", "--output", help="Where to write.")],
    fmt: Annotated[str, typer.Option("--format", "-f", help="json | dot | png")] = "json",
) -> None:
    """Export the typed dependency graph of a domain as JSON, DOT or PNG."""
    from graphgen.export import to_dot, to_json, to_png
    from graphgen.graph import build_graph

    d = _load(domain)
    g = build_graph(d)
    output.parent.mkdir(parents=True, exist_ok=True)
    if fmt == "json":
        output.write_text(to_json(g), encoding="utf-8")
    elif fmt == "dot":
        output.write_text(to_dot(g), encoding="utf-8")
    elif fmt == "png":
        to_png(g, output)
    else:
        err.print(f"[red]error:[/red] unknown format {fmt!r}; use json, dot or png")
        raise typer.Exit(2)
    out.print(f"wrote {output} ({g.number_of_nodes()} nodes, {g.number_of_edges()} edges)")


@app.command()
def state(
    domain: DomainArg,
    seed: Annotated[int, typer.Option("--seed", "-s", help="Random seed.")] = 0,
    size: Annotated[
        list[str] | None, typer.Option("--size", help="Rows per table, e.g. --size Order=50.")
    ] = None,
) -> None:
    """Print a seeded initial state of a domain as JSON (same seed, same bytes)."""
    from graphgen.stategen import generate_state

    d = _load(domain)
    sizes: dict[str, int] = {}
    for item in size or []:
        ent, _, n = item.partition("=")
        if ent not in d.entities or not n.isdigit():
            err.print(f"[red]error:[/red] bad --size {item!r}: use Entity=N with one of "
                      f"{', '.join(d.entities)}")
            raise typer.Exit(2)
        sizes[ent] = int(n)
    st = generate_state(d, seed, sizes)
    sys.stdout.write(st.to_json() + "\n")


@app.command()
def generate(
    domain: DomainArg,
    n: Annotated[int, typer.Option("-n", help="How many accepted tasks to produce.")] = 100,
    seed: Annotated[int, typer.Option("--seed", "-s", help="Random seed.")] = 0,
    output: Annotated[Path, typer.Option("-o", "--output", help="Task-set JSONL file.")] = Path(
        "tasks.jsonl"),
    max_intents: Annotated[int, typer.Option(help="Most writes in one action task.")] = 3,
    walk_ratio: Annotated[float, typer.Option(help="Share of action tasks by forward walk.")
                          ] = 0.3,
    prove: Annotated[bool, typer.Option("--prove/--no-prove",
                                        help="Also require the z3 proofs (verify gate).")
                     ] = True,
    jobs: Annotated[int, typer.Option("--jobs", "-j", help="Processes for the proofs.")
                    ] = _default_jobs(),
    record_times: Annotated[bool, typer.Option(
        help="Keep proof times in certificates (they vary, so the bytes do too).")] = False,
) -> None:
    """Generate a task set: expand the graph, gate every candidate, write JSONL."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

    from graphgen.tasks.expand import GenOptions
    from graphgen.tasks.taskset import generate as gen
    from graphgen.tasks.taskset import write_taskset
    from graphgen.verify.certify import proof_check

    d = _load(domain)
    opts = GenOptions(max_intents=max_intents, walk_ratio=walk_ratio)
    checks = [proof_check] if prove else []
    with Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                  TextColumn("{task.fields[attempts]} attempts"), console=err,
                  transient=False) as bar:
        job = bar.add_task(f"generating {d.name}", total=n, attempts=0)

        def tick(accepted: int, attempts: int) -> None:
            bar.update(job, completed=accepted, attempts=attempts)

        res = gen(d, n, seed, opts, progress=tick, extra_checks=checks, jobs=jobs,
                  record_times=record_times)
    write_taskset(output, res.manifest, res.tasks)
    _summary(res.manifest.model_dump())
    out.print(f"wrote {len(res.tasks)} tasks to {output}")
    if len(res.tasks) < n:
        err.print(f"[yellow]warning:[/yellow] only {len(res.tasks)} of {n} tasks accepted")


def _summary(m: dict) -> None:  # type: ignore[type-arg]
    t = Table(title=f"task set: {m['domain']} (seed {m['seed']})")
    t.add_column("measure")
    t.add_column("value", justify="right")
    t.add_row("accepted", str(m["accepted"]))
    for k, v in m["by_kind"].items():
        t.add_row(f"kind {k}", str(v))
    for k, v in m["by_length"].items():
        t.add_row(f"chain length {k}", str(v))
    for k, v in m["rejected"].items():
        t.add_row(f"rejected: {k}", str(v))
    out.print(t)


@app.command()
def show(
    file: Annotated[Path, typer.Argument(help="Task-set JSONL file.")],
    task: Annotated[str | None, typer.Option("--task", "-t", help="Show one task by id.")
                    ] = None,
    limit: Annotated[int, typer.Option(help="Tasks to list without --task.")] = 20,
) -> None:
    """Pretty-print a task set's manifest and tasks, or one task in full."""
    from rich.panel import Panel

    from graphgen.tasks.taskset import TaskSetError, read_taskset

    try:
        manifest, tasks = read_taskset(file)
    except (OSError, TaskSetError) as exc:
        err.print(f"[red]error:[/red] {escape(str(exc))}", highlight=False)
        raise typer.Exit(1) from None
    if task is None:
        _summary(manifest.model_dump())
        t = Table(title=f"first {min(limit, len(tasks))} of {len(tasks)} tasks")
        for col in ("id", "kind", "calls", "instruction"):
            t.add_column(col)
        for tk in tasks[:limit]:
            t.add_row(tk.id, tk.kind, str(tk.difficulty), escape(tk.instruction))
        out.print(t)
        return
    found = [tk for tk in tasks if tk.id == task]
    if not found:
        err.print(f"[red]error:[/red] no task {escape(repr(task))} in {escape(str(file))}")
        raise typer.Exit(1)
    tk = found[0]
    lines = ["", f"kind {tk.kind}; {tk.difficulty} calls; proven minimum {tk.min_calls}", "",
             "reference chain:"]
    lines += [f"  {i + 1}. {c.tool}({', '.join(f'{k}={v!r}' for k, v in c.args.items())})"
              for i, c in enumerate(tk.chain)]
    if tk.refused_call:
        lines.append(f"refused: {tk.refused_call.tool}({tk.refused_call.args})")
    lines.append("goal:")
    lines += [f"  {c.entity} {c.key} {c.field}: {c.before!r} -> {c.after!r}"
              for c in tk.goal.changes]
    if tk.goal.answer:
        lines.append(f"  answer must mention: {tk.goal.answer}")
    for tg in tk.targets:
        lines.append(f"target {tg.entity} {tg.key}: {tg.phrase!r}  [{tg.description}]")
    if tk.certificate:
        lines.append("certificate: " + ", ".join(
            f"{p.name}={'ok' if p.ok else 'FAIL'}" for p in tk.certificate.proofs))
    # Task text is data, not markup: unescaped, "[x.user_id == ...]" would vanish.
    body = f"[bold]{escape(tk.instruction)}[/bold]\n" + escape("\n".join(lines))
    out.print(Panel(body, title=tk.id), highlight=False)


@app.command()
def verify(
    file: Annotated[Path, typer.Argument(help="Task-set JSONL file to re-check.")],
    domain: Annotated[str | None, typer.Option(help="Domain file, if not a built-in.")
                      ] = None,
    jobs: Annotated[int, typer.Option("--jobs", "-j", help="Processes.")] = _default_jobs(),
    timeout_ms: Annotated[int, typer.Option(help="z3 time limit per query.")] = 4000,
) -> None:
    """Re-check a task set from scratch (dry-run and every z3 proof), trusting nothing
    the file claims to have proven. Exits 1 if any task fails."""
    from concurrent.futures import ProcessPoolExecutor

    from rich.progress import Progress

    from graphgen.tasks.taskset import TaskSetError, read_taskset
    from graphgen.verify.certify import recheck

    try:
        manifest, tasks = read_taskset(file)
    except (OSError, TaskSetError) as exc:
        err.print(f"[red]error:[/red] {escape(str(exc))}")
        raise typer.Exit(1) from None
    d = _load(domain or manifest.domain)
    reasons: dict[str, int] = {}
    failed: list[tuple[str, str]] = []
    with Progress(console=err) as bar, ProcessPoolExecutor(max_workers=max(1, jobs)) as pool:
        job = bar.add_task(f"verifying {file.name}", total=len(tasks))
        outs = pool.map(recheck, [d] * len(tasks), tasks, [timeout_ms] * len(tasks))
        for t, (why, _cert) in zip(tasks, outs, strict=True):
            key = why or "ok"
            reasons[key] = reasons.get(key, 0) + 1
            if why:
                failed.append((t.id, why))
            bar.advance(job)
    if manifest.accepted != len(tasks):
        reasons["manifest_count_mismatch"] = 1
        failed.append(("manifest", f"says {manifest.accepted} tasks, file has {len(tasks)}"))
    table = Table(title=f"verify {file.name}: {len(tasks)} tasks")
    table.add_column("result")
    table.add_column("tasks", justify="right")
    for k, v in sorted(reasons.items(), key=lambda kv: (kv[0] != "ok", kv[0])):
        table.add_row(k, str(v))
    out.print(table)
    for tid, why in failed[:20]:
        out.print(f"  {tid}: {escape(why)}")
    if failed:
        raise typer.Exit(1)


@app.command("compile")
def compile_cmd(
    domain: DomainArg,
    output: Annotated[Path, typer.Option("-o", "--output", help="Package directory.")],
) -> None:
    """Compile a domain into a standalone Python environment package."""
    from graphgen.envs.codegen import write_package

    d = _load(domain)
    paths = write_package(d, output)
    out.print(f"wrote {len(paths)} files to {output} (import it, then Environment())")


@app.command("eval")
def eval_cmd(
    tasks_file: Annotated[Path, typer.Argument(help="Task-set JSONL file.")],
    model: Annotated[str, typer.Option(help="Model name, or a baseline: oracle, noop, random."
                                       )] = "oracle",
    base_url: Annotated[str | None, typer.Option(help="OpenAI-compatible endpoint URL.")
                        ] = None,
    api_key_env: Annotated[str, typer.Option(help="Environment variable with the API key.")
                           ] = "OPENAI_API_KEY",
    max_steps: Annotated[int, typer.Option(help="Most model turns per task.")] = 30,
    domain: Annotated[str | None, typer.Option(help="Domain file, if not a built-in.")
                      ] = None,
    limit: Annotated[int | None, typer.Option(help="Only the first N tasks.")] = None,
    trajectories: Annotated[Path | None, typer.Option(help="Write trajectories JSONL here.")
                            ] = None,
    seed: Annotated[int, typer.Option(help="Seed of the random baseline.")] = 0,
) -> None:
    """Run a model (or a baseline) on a task set in the compiled environment; report."""
    import dataclasses
    import json
    import os

    from rich.progress import Progress

    from graphgen.envs.agent import (
        Agent,
        NoopAgent,
        OpenAIAgent,
        OracleAgent,
        RandomAgent,
        run_episode,
        summarize,
    )
    from graphgen.envs.load import load_env_module
    from graphgen.tasks.taskset import TaskSetError, read_taskset

    try:
        manifest, tasks = read_taskset(tasks_file)
    except (OSError, TaskSetError) as exc:
        err.print(f"[red]error:[/red] {escape(str(exc))}")
        raise typer.Exit(1) from None
    d = _load(domain or manifest.domain)
    if d.content_hash != manifest.domain_hash:
        err.print(f"[yellow]warning:[/yellow] domain {d.name!r} changed since the task set "
                  f"was made ({d.content_hash} != {manifest.domain_hash})")
    agent: Agent
    if model == "oracle":
        agent = OracleAgent()
    elif model == "noop":
        agent = NoopAgent()
    elif model == "random":
        agent = RandomAgent(seed)
    else:
        if not base_url:
            err.print("[red]error:[/red] --base-url is required for a model")
            raise typer.Exit(2)
        agent = OpenAIAgent(model, base_url, os.environ.get(api_key_env, "EMPTY"))
    env = load_env_module(d).Environment(max_steps=max_steps * 4)
    episodes = []
    chosen = tasks[:limit] if limit is not None else tasks
    with Progress(console=err) as bar:
        job = bar.add_task(f"{agent.name} on {tasks_file.name}", total=len(chosen))
        for t in chosen:
            episodes.append(run_episode(env, t, agent, max_steps))
            bar.advance(job)
    if trajectories is not None:
        trajectories.parent.mkdir(parents=True, exist_ok=True)
        with trajectories.open("w", encoding="utf-8") as fh:
            for e in episodes:
                fh.write(json.dumps(dataclasses.asdict(e), sort_keys=True,
                                    ensure_ascii=False) + "\n")
    table = Table(title=f"{agent.name}: {len(episodes)} tasks")
    for col in ("domain", "kind", "tasks", "success", "mean calls", "invalid calls", "errors"):
        table.add_column(col, justify="right" if col not in ("domain", "kind") else "left")
    for r in summarize(episodes):
        table.add_row(r["domain"], r["kind"], str(r["tasks"]), f"{r['success']:.1%}",
                      f"{r['mean_calls']:.2f}", f"{r['invalid_rate']:.1%}", str(r["errors"]))
    out.print(table)


@app.command()
def run(
    domain: DomainArg,
    n: Annotated[int, typer.Option("-n", help="How many tasks.")] = 50,
    seed: Annotated[int, typer.Option("--seed", "-s", help="Random seed.")] = 0,
    output: Annotated[Path, typer.Option("-o", "--output", help="Output directory.")] = Path(
        "out"),
    jobs: Annotated[int, typer.Option("--jobs", "-j", help="Processes for the proofs.")
                    ] = _default_jobs(),
) -> None:
    """The whole pipeline on one domain: check, graph, generate with proofs, verify the
    file from scratch, compile the environment, run the baselines in it."""
    from graphgen.domains import builtin_names, builtin_path

    output.mkdir(parents=True, exist_ok=True)
    d = _load(domain)
    src = builtin_path(domain) if domain in builtin_names() else Path(domain)
    out.rule(f"1/6 check {src}")
    check(src)
    out.rule("2/6 dependency graph")
    graph(domain, output=output / "graph.json", fmt="json")
    graph(domain, output=output / "graph.png", fmt="png")
    out.rule(f"3/6 generate {n} tasks (dry-run + z3 proofs)")
    tasks_file = output / "tasks.jsonl"
    generate(domain, n=n, seed=seed, output=tasks_file, max_intents=3, walk_ratio=0.3,
             prove=True, jobs=jobs, record_times=False)
    out.rule("4/6 verify the file from scratch")
    verify(tasks_file, domain=None, jobs=jobs, timeout_ms=4000)
    out.rule("5/6 compile the environment")
    compile_cmd(domain, output=output / f"{d.name}_env")
    out.rule("6/6 baselines in the compiled environment")
    for agent in ("oracle", "noop", "random"):
        eval_cmd(tasks_file, model=agent, base_url=None, api_key_env="OPENAI_API_KEY",
                 max_steps=30, domain=None, limit=None,
                 trajectories=output / f"trajectories_{agent}.jsonl", seed=seed)
    out.print(f"[green]done[/green]: everything is in {output}/")


def main() -> None:  # pragma: no cover - console entry point
    app()
