"""Benchmark the pipeline on synthesized domains (a script, not a test).

For each seed: ``graphgen synth`` writes a domain; it must check clean (``check`` and
``check --strict``); generation with the z3 proofs asks for N tasks; the domain is
compiled and the interpreter and the compiled code run the same random call sequences
(results, error messages and kinds, and states compared after every call). Prints, over
all seeds: the share that check clean, the share yielding at least N verified tasks of
at least two kinds, and the number of differences between interpreter and compiled code.
Goals: 100% clean, at least 95% yield, 0 differences.

Usage::

    .venv/bin/python benchmarks/bench_synth.py [--seeds 1000] [--start 0] [--tasks 20]
        [--sequences 100] [--calls 10] [--entities 3] [--json]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # for tests.synth_drive

from graphgen.synth import SynthOptions
from tests.synth_drive import Drive, drive


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", type=int, default=1000, help="How many seeds.")
    ap.add_argument("--start", type=int, default=0, help="First seed.")
    ap.add_argument("--tasks", type=int, default=20, help="Verified tasks asked per domain.")
    ap.add_argument("--sequences", type=int, default=100, help="Random call sequences.")
    ap.add_argument("--calls", type=int, default=10, help="Calls per sequence.")
    ap.add_argument("--entities", type=int, default=3, help="Entities per domain.")
    ap.add_argument("--json", action="store_true", help="Print the figures as JSON.")
    args = ap.parse_args()
    opts = SynthOptions(entities=args.entities)
    results: list[Drive] = []
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="bench-synth-") as tmp:
        for seed in range(args.start, args.start + args.seeds):
            work = Path(tmp) / str(seed)
            work.mkdir()
            r = drive(
                seed,
                work,
                options=opts,
                n_tasks=args.tasks,
                sequences=args.sequences,
                calls=args.calls,
            )
            results.append(r)
            flag = "" if r.clean and r.yields(args.tasks) and not r.mismatches else "  <--"
            print(
                f"seed {seed}: clean {r.clean}, tasks {r.tasks} {r.kinds}, "
                f"{r.calls} calls, {len(r.mismatches)} differences, {r.seconds:.1f}s"
                + (f", error {r.error[:200]}" if r.error else "")
                + flag,
                file=sys.stderr,
                flush=True,
            )
    n = len(results)
    figures = {
        "seeds": n,
        "start": args.start,
        "entities": args.entities,
        "tasks_asked": args.tasks,
        "check_clean": sum(r.clean for r in results) / n,
        "yield": sum(r.yields(args.tasks) for r in results) / n,
        "differences": sum(len(r.mismatches) for r in results),
        "sequences": sum(r.sequences for r in results),
        "calls": sum(r.calls for r in results),
        "errors": sum(bool(r.error) for r in results),
        "kinds": dict(sum((Counter(r.kinds) for r in results), Counter())),
        "rejected": dict(sum((Counter(r.rejected) for r in results), Counter()).most_common()),
        "seconds": round(time.perf_counter() - t0, 1),
        "not_clean": [r.seed for r in results if not r.clean],
        "short": [r.seed for r in results if not r.yields(args.tasks)],
    }
    if args.json:
        print(json.dumps(figures, indent=1))
        return
    print(f"synthesized domains: {n} seeds from {args.start} ({args.entities} entities each)")
    print(f"  check clean (check and --strict): {figures['check_clean']:.1%}  (goal 100%)")
    print(f"  >= {args.tasks} verified tasks of >= 2 kinds: {figures['yield']:.1%}  (goal >= 95%)")
    print(
        f"  interpreter vs compiled code: {figures['differences']} differences on "
        f"{figures['sequences']} sequences, {figures['calls']} calls  (goal 0)"
    )
    print(f"  stage errors: {figures['errors']}; kinds {figures['kinds']}")
    print(f"  rejections: {figures['rejected']}")
    if figures["not_clean"] or figures["short"]:
        print(f"  not clean: {figures['not_clean'][:20]}; short: {figures['short'][:20]}")
    print(f"  {figures['seconds']}s in all, {figures['seconds'] / n:.1f}s per seed")


if __name__ == "__main__":
    main()
