"""The built-in domain library in figures (a script, not a test).

For each built-in domain, :func:`graphgen.pipeline.run` makes ``--n`` proven tasks in a
temporary folder (check, graph, generate with proofs, verify, compile, baselines) and
the script prints one Markdown table row per domain:

* size: tools, write tools, entity types;
* speed: proven tasks per minute of generation (wall clock, ``--jobs`` workers), and per
  minute of CPU time (this process and its workers): the figure to compare between
  machines and runs, as it does not move with what else the machine is doing;
* the set: tasks by kind, reference chain lengths and proven minimum lengths
  (min-median-max), and its coverage (:func:`graphgen.tasks.coverage.coverage`): the
  share of tools, precondition branches and enum members the tasks exercise, with the
  tools no task uses listed under the table;
* the baselines' success rates: oracle (should be 1.0), noop, echo, random (should be
  near 0: a task a do-nothing agent passes teaches nothing).

Usage::

    .venv/bin/python benchmarks/bench_library.py [--n 40] [--seed 0] [--jobs 2] \\
        [--domain retail ...] [--json]
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from graphgen import pipeline as pl
from graphgen.domains import builtin_names
from graphgen.tasks.coverage import coverage

KINDS = ("action", "information", "refusal")
SCORES = ("oracle", "noop", "echo", "random")


def _spread(xs: list[int]) -> str:
    """``min-median-max`` of ``xs`` ('-' when empty)."""
    if not xs:
        return "-"
    return f"{min(xs)}-{statistics.median(xs):g}-{max(xs)}"


class _Clock(pl.RunEvents):
    """Times the generation stage (from its stage event to its written task set)."""

    def __init__(self) -> None:
        self.start = 0.0
        self.cpu0 = 0.0
        self.generate_s = 0.0
        self.generate_cpu_s = 0.0

    def stage(self, step: int, total: int, title: str) -> None:
        self.start = time.perf_counter()
        self.cpu0 = _cpu()

    def generated(self, result: Any, path: Path) -> None:
        self.generate_s = time.perf_counter() - self.start
        self.generate_cpu_s = _cpu() - self.cpu0


def _cpu() -> float:
    """CPU seconds of this process and its finished workers (the generation's worker
    pool is joined before its task set is written)."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def bench(name: str, n: int, seed: int, jobs: int) -> dict[str, Any]:
    """Run the whole pipeline on built-in ``name`` and return its figures."""
    events = _Clock()
    with tempfile.TemporaryDirectory(prefix=f"bench-{name}-") as tmp:
        res = pl.run(name, n, Path(tmp) / "out", pl.Options(seed=seed, jobs=jobs), events=events)
    tasks = res.generation.tasks
    d = res.domain
    cov = coverage(d, tasks)
    gen_s, cpu_s = events.generate_s, events.generate_cpu_s
    return {
        "domain": name,
        "tools": len(d.tools),
        "writes": len(d.write_tools),
        "entities": len(d.entities),
        "tasks": len(tasks),
        "tasks_per_min": round(60 * len(tasks) / gen_s, 1) if gen_s else None,
        "tasks_per_cpu_min": round(60 * len(tasks) / cpu_s, 1) if cpu_s else None,
        "kinds": {k: Counter(str(t.kind) for t in tasks)[k] for k in KINDS},
        "chain": _spread([len(t.chain) for t in tasks]),
        "min_calls": _spread([t.min_calls for t in tasks]),
        "scores": {
            a: round(res.evaluations[a].success_rate, 2) for a in SCORES if a in res.evaluations
        },
        "coverage": {
            "tools": round(cov.tools.ratio, 2),
            "branches": round(cov.branches.ratio, 2),
            "enums": round(cov.enums.ratio, 2),
        },
        "uncovered_tools": cov.tools.uncovered,
        "rejected": dict(sorted(res.generation.rejected.items())),
    }


HEADER = (
    "| domain | tools | writes | entities | tasks/min | tasks/CPU-min "
    "| action / info / refusal | chain len | proven min "
    "| tools / branches / enums covered | oracle | noop | echo | random |\n"
    "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
)


def row(r: dict[str, Any]) -> str:
    """One Markdown table row of the figures of :func:`bench`."""
    k, s = r["kinds"], r["scores"]
    cells = [
        r["domain"],
        r["tools"],
        r["writes"],
        r["entities"],
        r["tasks_per_min"],
        r["tasks_per_cpu_min"],
        f"{k['action']} / {k['information']} / {k['refusal']}",
        r["chain"],
        r["min_calls"],
        " / ".join(f"{r['coverage'][m]:.0%}" for m in ("tools", "branches", "enums")),
        *(s.get(a, "-") for a in SCORES),
    ]
    return "| " + " | ".join(str(c) for c in cells) + " |"


def main(argv: list[str] | None = None) -> None:
    """Parse options, run every requested domain, print the table (or JSON lines)."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--n", type=int, default=40, help="tasks per domain (default 40)")
    ap.add_argument("--seed", type=int, default=0, help="generation seed (default 0)")
    ap.add_argument("--jobs", type=int, default=2, help="proof workers (default 2)")
    ap.add_argument(
        "--domain", action="append", choices=builtin_names(), help="a built-in (repeatable)"
    )
    ap.add_argument("--json", action="store_true", help="one JSON object per domain")
    args = ap.parse_args(argv)
    if not args.json:
        print(HEADER, flush=True)
    unused: list[str] = []
    for name in args.domain or builtin_names():
        r = bench(name, args.n, args.seed, args.jobs)
        print(json.dumps(r, sort_keys=True) if args.json else row(r), flush=True)
        if r["uncovered_tools"]:
            unused.append(f"- {name}: {', '.join(r['uncovered_tools'])}")
    if unused and not args.json:
        print(f"\nTools no task of the {args.n} uses:")
        print("\n".join(unused))


if __name__ == "__main__":
    main()
