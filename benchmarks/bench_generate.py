"""End-to-end generation with proofs: throughput, worker utilisation, the drawing loop
(a script).

Runs :func:`graphgen.pipeline.generate` (dry-run gate + every proof) for each ``--jobs``
value and prints, from the run's :class:`~graphgen.tasks.utilisation.Utilisation`:

* wall time and accepted tasks per second (end to end: domain load, pool start-up and
  shut-down included);
* the workers' utilisation two ways: the wall time they held a task (*busy in hand*)
  and their CPU time, each over (wall x jobs). On a shared machine the CPU figure
  under-reports: a worker that holds a task but waits for a core is fed but not run;
  busy in hand says whether the scheduler kept it fed;
* the CPU-equivalent rate: accepted tasks per worker CPU-second, times ``jobs`` (what
  ``jobs`` cores of their own would give if kept busy);
* where the idle worker time went: before each worker's first task (start-up), after
  its last (the tail) and between tasks;
* the drawing loop (the main process drawing candidates: expander, dry-run gate):
  its wall and CPU time, its share of the run, and the accepted tasks per CPU-second
  it can feed (the ceiling of one loop however many workers it has);
* pickling: the bytes and the dumps+loads time of a candidate and of an outcome.

With one job the checks run in the main process between draws. A Markdown table row per
run closes the output (the table of docs/scale.md): domain, jobs, tasks/s, CPU-equivalent
tasks/s, busy in hand, CPU, the drawing loop's share of the wall time, and the tasks/s
one drawing loop can feed.

Usage::

    .venv/bin/python benchmarks/bench_generate.py [--domain retail] [--n 500] \\
        [--jobs 1,2,4] [--seed 0] [--backend local]
"""

from __future__ import annotations

import argparse
import pickle
import resource
import time

from graphgen import pipeline as pl
from graphgen.tasks.model import Task
from graphgen.tasks.taskset import GenResult


def _cpu(who: int) -> float:
    r = resource.getrusage(who)
    return r.ru_utime + r.ru_stime


def _pickling(tasks: list[Task]) -> str:
    """Mean size and dumps+loads time of the candidates and outcomes shipped to and from
    workers (a candidate is the task without its certificate)."""
    sample = tasks[:50]
    if not sample:
        return "no task"
    out = []
    for what, objs in (
        ("candidate", [t.model_copy(update={"certificate": None}) for t in sample]),
        ("outcome", sample),
    ):
        size, t0 = 0, time.process_time()
        for o in objs:
            data = pickle.dumps(o)
            pickle.loads(data)
            size += len(data)
        ms = (time.process_time() - t0) * 1000 / len(objs)
        out.append(f"{what} {size / len(objs) / 1024:.1f} KB {ms:.2f} ms")
    return ", ".join(out)


def report(domain: str, n: int, jobs: int, backend: str, res: GenResult, wall: float) -> str:
    """The figures of one run, and its Markdown row last."""
    use = res.utilisation
    assert use is not None
    accepted = len(res.tasks)
    idle = use.wall * jobs - use.busy
    between = idle - use.ramp - use.tail - use.wall * (jobs - len(use.workers))
    per_cpu = accepted / use.cpu if use.cpu else 0.0
    feed = accepted / use.draw_cpu if use.draw_cpu else 0.0
    lines = [
        f"== {domain} n={n} jobs={jobs} ({backend}): {accepted} tasks in {wall:.1f} s "
        f"= {accepted / wall:.2f} tasks/s end to end",
        f"   workers ({len(use.workers)} used, {use.tasks} candidates checked, {use.unused} "
        f"of them spares not needed): busy in hand "
        f"{use.busy:.1f} s = {use.busy_share:.0%} of wall x jobs, CPU {use.cpu:.1f} s = "
        f"{use.cpu_share:.0%}; {per_cpu:.2f} tasks per worker CPU-s = "
        f"{per_cpu * jobs:.2f} tasks/s CPU-equivalent",
        f"   idle worker time {idle:.1f} s: start-up {use.ramp:.1f} s, tail {use.tail:.1f} s, "
        f"between tasks {between:.1f} s",
        f"   drawing loop: {use.draws} candidates in {use.draw_wall:.1f} s wall "
        f"({use.draw_wall / use.wall:.0%} of the run), {use.draw_cpu:.1f} s CPU "
        f"= {1000 * use.draw_cpu / max(1, use.draws):.1f} ms each, feeds up to "
        f"{feed:.0f} tasks/s; waited {use.wait:.1f} s for outcomes",
        f"   pickling: {_pickling(res.tasks)}",
        f"| {domain} | {jobs} | {accepted / wall:.2f} | {per_cpu * jobs:.2f} | "
        f"{use.busy_share:.0%} | {use.cpu_share:.0%} | {use.draw_wall / use.wall:.0%} | "
        f"{feed:.0f} |",
    ]
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--domain", default="retail")
    ap.add_argument("--n", type=int, default=500)
    ap.add_argument("--jobs", default="1,2")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--backend", default="local", choices=["local", "ray"])
    args = ap.parse_args()
    for jobs in (int(j) for j in args.jobs.split(",")):
        opts = pl.Options(jobs=jobs, seed=args.seed, backend=args.backend)
        main0 = _cpu(resource.RUSAGE_SELF)
        t0 = time.perf_counter()
        res = pl.generate(args.domain, args.n, opts)
        wall = time.perf_counter() - t0
        print(report(args.domain, args.n, jobs, args.backend, res, wall))
        print(f"   main process CPU {_cpu(resource.RUSAGE_SELF) - main0:.1f} s", flush=True)


if __name__ == "__main__":
    main()
