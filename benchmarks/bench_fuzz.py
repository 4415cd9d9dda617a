"""Fuzz domain files and task files with large budgets, in bounded time; print counts.

    python benchmarks/bench_fuzz.py [--domains 10000] [--tasks 10000] [--seed 0]
                                    [--max-seconds 900]

Each case is seeded (``seed``, case number), so a run is reproducible. The mutators and
oracles are those of the test suite (``tests/fuzz_inputs.py``). Prints, per kind: cases
run, clean errors, accepted (and usable), tracebacks, invalid inputs accepted; exits 1
if either of the last two is not zero. Stops early, saying so, at ``--max-seconds``.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.fuzz_inputs import (
    Escaped,
    domain_case,
    mock_domain,
    run_domain_case,
    run_task_case,
    task_case,
)


def _run(kind: str, n: int, seed: int, deadline: float) -> Counter[str]:
    counts: Counter[str] = Counter()
    domain = mock_domain()
    started = time.perf_counter()
    for i in range(n):
        if time.perf_counter() > deadline:
            counts["stopped_at_time_limit"] = 1
            break
        rng = random.Random(f"{seed}:{kind}:{i}")
        counts["cases"] += 1
        try:
            if kind == "domains":
                counts[run_domain_case(domain_case(rng))] += 1
            else:
                data, must, what = task_case(rng)
                counts[run_task_case(data, must, domain, what)] += 1
        except Escaped as exc:
            bad = "accepted_invalid" if "accepted" in str(exc) else "tracebacks"
            counts[bad] += 1
            if counts[bad] <= 5:
                print(f"  {kind} case {i}: {exc}", file=sys.stderr)
    counts["seconds"] = round(time.perf_counter() - started)
    return counts


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--domains", type=int, default=10_000)
    ap.add_argument("--tasks", type=int, default=10_000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--max-seconds", type=float, default=900.0)
    args = ap.parse_args(argv)
    deadline = time.perf_counter() + args.max_seconds
    failed = False
    for kind, n in (("tasks", args.tasks), ("domains", args.domains)):
        c = _run(kind, n, args.seed, deadline)
        print(
            f"{kind}: cases={c['cases']} clean_errors={c['error']} accepted={c['accepted']} "
            f"tracebacks={c['tracebacks']} accepted_invalid={c['accepted_invalid']} "
            f"seconds={c['seconds']}"
            + (" (stopped at the time limit)" if c["stopped_at_time_limit"] else "")
        )
        failed = failed or bool(c["tracebacks"] or c["accepted_invalid"])
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
