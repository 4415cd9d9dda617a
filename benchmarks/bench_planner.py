"""Our certificate against Fast Downward's optimal planner on the same tasks (a script).

For each domain and table scale, candidate tasks are generated (dry-run gate only, as in
``bench_verify.py``; states regenerated with every table ``scale`` times its size), each is
certified by :func:`graphgen.verify.certify.certify` (the z3-found minimum and every proof)
and, when it is in the integer-free fragment, exported as PDDL
(:mod:`graphgen.envs.exports.pddl`) and solved by Fast Downward with ``astar(lmcut())``
(the search of unified-planning's ``fast-downward-opt`` engine; the driver is called on
the PDDL files directly so FD's time is not inflated by a conversion). Per task it prints
FD's wall time (translate + search), ours, the ratio, FD's plan length and our
``min_calls``; per scale the median ratio and how many plan lengths agree. A plan length
other than ``min_calls`` is a modelling mismatch and is listed. A few tasks of another
seed are certified untimed first: what a process pays once (imports, the domain's
per-spec facts, each tool's compiled expressions and analyses, the first z3 context) is
no part of a task's cost, as FD's reported time leaves out its start-up.

Needs the ``bench`` extra (``pip install -e '.[bench]'``: unified-planning and
up-fast-downward, which ships the Fast Downward binary).

Usage::

    .venv/bin/python benchmarks/bench_planner.py [--domain retail ...] [--n 20] \\
        [--seed 0] [--scales 1,2.5,10] [--time-limit 60] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from graphgen.domain import Domain
from graphgen.domains import load_builtin
from graphgen.envs.exports.pddl import Outside, _build, _domain_text, pddl_problem
from graphgen.tasks.expand import GenOptions
from graphgen.tasks.model import Task
from graphgen.tasks.taskset import generate
from graphgen.verify.certify import certify

#: Tasks of another seed certified untimed first, so that what a process pays once per
#: tool (its expressions compiled, its analyses) is no part of a measured task's time.
WARM_UP = 8


def fd_driver() -> Path:
    """The Fast Downward driver script shipped by up-fast-downward."""
    import up_fast_downward  # type: ignore[import-untyped]

    return Path(up_fast_downward.__file__).parent / "downward" / "fast-downward.py"


def run_fd(domain_file: Path, problem_file: Path, time_limit: float) -> tuple[float, int | None]:
    """(seconds, plan length or None when FD found none in time) for one problem: the
    planner time FD reports (translation and search), else the wall time."""
    with tempfile.TemporaryDirectory() as tmp:
        plan = Path(tmp) / "plan"
        cmd = [
            sys.executable,
            str(fd_driver()),
            "--plan-file",
            str(plan),
            str(domain_file),
            str(problem_file),
            "--search",
            "astar(lmcut())",
        ]
        t0 = time.perf_counter()
        # In a session of its own: on a timeout the driver's children (translate, search)
        # must die with it, or they go on eating the cores the next tasks are timed on.
        proc = subprocess.Popen(
            cmd,
            cwd=tmp,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        try:
            out, _ = proc.communicate(timeout=time_limit)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
            return time.perf_counter() - t0, None
        dt = time.perf_counter() - t0
        # FD's own figure (translate + preprocess + search, without the driver's start-up)
        m = re.search(r"Planner time: ([0-9.]+)s", out)
        if m:
            dt = float(m.group(1))
        if not plan.exists():
            return dt, None
        steps = [ln for ln in plan.read_text().splitlines() if ln.startswith("(")]
        return dt, len(steps)


def candidates(domain: Domain, n: int, seed: int, scale: float) -> list[Task]:
    """``n`` tasks that passed the dry-run gate, every table ``scale`` times its size."""
    sizes = (
        {e: max(1, round(ed.size * scale)) for e, ed in domain.entities.items()}
        if scale != 1
        else {}
    )
    return generate(domain, n, seed, GenOptions(sizes=sizes)).tasks


def bench(name: str, n: int, seed: int, scale: float, time_limit: float) -> dict[str, Any]:
    """One domain at one scale: per-task rows and the summary."""
    domain = load_builtin(name)
    ex = _build(domain)
    rows: list[dict[str, Any]] = []
    skipped: dict[str, int] = {}
    with tempfile.TemporaryDirectory() as tmp:
        dfile = Path(tmp) / "domain.pddl"
        dfile.write_text(_domain_text(ex), "utf-8")
        tasks = candidates(domain, n, seed, scale)
        for warm in candidates(domain, WARM_UP, seed + 1, scale):
            certify(domain, warm)  # the process's one-time costs, untimed
        for task in tasks:
            try:
                text = pddl_problem(domain, task, ex)
            except Outside as exc:
                why = str(exc).split(" (")[0]
                skipped[why] = skipped.get(why, 0) + 1
                continue
            t0 = time.perf_counter()
            got = certify(domain, task)
            ours = time.perf_counter() - t0
            if isinstance(got, str):
                skipped[f"not accepted ({got})"] = skipped.get(f"not accepted ({got})", 0) + 1
                continue
            pfile = Path(tmp) / "problem.pddl"
            pfile.write_text(text, "utf-8")
            fd_s, length = run_fd(dfile, pfile, time_limit)
            rows.append(
                {
                    "task": task.id,
                    "fd_s": fd_s,
                    "ours_s": ours,
                    "ratio": fd_s / ours if ours > 0 else float("inf"),
                    "fd_len": length,
                    "min_calls": got.min_calls,
                }
            )
    solved = [r for r in rows if r["fd_len"] is not None]
    agree = sum(1 for r in solved if r["fd_len"] == r["min_calls"])
    return {
        "domain": name,
        "scale": scale,
        "tasks": rows,
        "skipped": dict(sorted(skipped.items())),
        "median_ratio": statistics.median(r["ratio"] for r in rows) if rows else None,
        "fd_solved": len(solved),
        "fd_timeouts": len(rows) - len(solved),
        "lengths_equal": agree,
        "mismatches": [r["task"] for r in solved if r["fd_len"] != r["min_calls"]],
    }


def _print(r: dict[str, Any]) -> None:
    print(f"\n{r['domain']} x{r['scale']:g}")
    print(f"  {'task':<22} {'FD s':>8} {'ours s':>8} {'ratio':>8} {'FD len':>7} {'min':>4}")
    for t in r["tasks"]:
        flen = "-" if t["fd_len"] is None else str(t["fd_len"])
        mark = "" if t["fd_len"] in (None, t["min_calls"]) else "  MISMATCH"
        print(
            f"  {t['task']:<22} {t['fd_s']:8.3f} {t['ours_s']:8.3f} {t['ratio']:8.2f} "
            f"{flen:>7} {t['min_calls']:>4}{mark}"
        )
    med = r["median_ratio"]
    print(
        f"  median ratio FD/ours: {'n/a' if med is None else f'{med:.2f}x'}; FD solved "
        f"{r['fd_solved']}, timed out {r['fd_timeouts']}; plan length == min_calls on "
        f"{r['lengths_equal']} of {r['fd_solved']}"
    )
    if r["skipped"]:
        print("  skipped: " + "; ".join(f"{k}: {v}" for k, v in r["skipped"].items()))


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--domain", action="append", help="built-in domain (repeatable)")
    ap.add_argument("--n", type=int, default=20, help="candidate tasks per domain and scale")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--scales", default="1,2.5,10", help="table size factors")
    ap.add_argument("--time-limit", type=float, default=60.0, help="seconds per FD run")
    ap.add_argument("--json", action="store_true", help="print JSON instead of tables")
    args = ap.parse_args(argv)
    names = args.domain or ["mock", "airline", "retail"]
    scales = [float(x) for x in args.scales.split(",") if x.strip()]
    out = [bench(d, args.n, args.seed, s, args.time_limit) for d in names for s in scales]
    if args.json:
        print(json.dumps(out, indent=2))
        return
    for r in out:
        _print(r)


if __name__ == "__main__":
    main()
