"""End-to-end generation with proofs: throughput and worker utilisation (a script).

Runs :func:`graphgen.pipeline.generate` (dry-run gate + every proof) for each ``--jobs``
value and prints the wall time, accepted tasks per second, and the utilisation of the
workers: their CPU time over (wall time x jobs). With one job the checks run in the main
process, whose own CPU time is used instead. The figures from 1, 2 and 4 workers are the
basis of the projection in docs/scale.md.

Usage::

    .venv/bin/python benchmarks/bench_generate.py [--domain retail] [--n 500] \\
        [--jobs 1,2] [--seed 0] [--backend local]
"""

from __future__ import annotations

import argparse
import resource
import time

from graphgen import pipeline as pl


def _cpu(who: int) -> float:
    r = resource.getrusage(who)
    return r.ru_utime + r.ru_stime


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
        self0, kids0 = _cpu(resource.RUSAGE_SELF), _cpu(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        res = pl.generate(args.domain, args.n, opts)
        wall = time.perf_counter() - t0
        main_cpu = _cpu(resource.RUSAGE_SELF) - self0
        workers = _cpu(resource.RUSAGE_CHILDREN) - kids0
        busy = main_cpu if jobs == 1 or args.backend != "local" else workers
        print(
            f"== {args.domain} n={args.n} jobs={jobs} ({args.backend}): "
            f"{len(res.tasks)} tasks in {wall:.1f} s = {len(res.tasks) / wall:.2f} tasks/s"
        )
        print(
            f"   worker CPU {busy:.1f} s, utilisation {busy / (wall * jobs):.0%}; "
            f"main process CPU {main_cpu:.1f} s (drawing candidates, dry-runs)"
        )


if __name__ == "__main__":
    main()
