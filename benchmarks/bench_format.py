"""Sizes of one task set in the plain layout, the compact layout and gzip (a script).

Generates ``--n`` tasks of a built-in domain with the dry-run gate only (the proofs add a
certificate per task but do not change how many states are shared), writes them in each
layout, checks that every file reads back to the same tasks, and prints the bytes and
the ratio to the plain file.

Usage::

    .venv/bin/python benchmarks/bench_format.py [--domain retail] [--n 500] [--seed 0]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from graphgen.domains import load_builtin
from graphgen.tasks.fileformat import distinct_states
from graphgen.tasks.taskset import generate, read_taskset, write_taskset


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--domain", default="retail")
    ap.add_argument("--n", type=int, default=500)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    res = generate(load_builtin(args.domain), args.n, seed=args.seed)
    print(f"== {args.domain}: {len(res.tasks)} tasks, {distinct_states(res.tasks)} distinct states")
    with tempfile.TemporaryDirectory() as tmp:
        sizes: dict[str, int] = {}
        for name, compact in (
            ("plain.jsonl", False),
            ("compact.jsonl", True),
            ("plain.jsonl.gz", False),
            ("compact.jsonl.gz", True),
        ):
            path = Path(tmp) / name
            t0 = time.perf_counter()
            write_taskset(path, res.manifest, res.tasks, compact=compact)
            t1 = time.perf_counter()
            _, back = read_taskset(path)
            t2 = time.perf_counter()
            assert back == res.tasks, f"{name} did not read back to the same tasks"
            sizes[name] = path.stat().st_size
            print(
                f"  {name:18} {sizes[name]:>12,} bytes  {sizes['plain.jsonl'] / sizes[name]:6.1f}x"
                f" smaller  write {t1 - t0:.2f} s  read {t2 - t1:.2f} s"
            )


if __name__ == "__main__":
    main()
