"""Benchmark task generation on the built-in domains (a script, not a test).

For each domain: generate N tasks with the dry-run gate only (``--no-prove`` semantics:
``graphgen.tasks.taskset.generate`` without ``task_checks``) and print throughput, attempts,
acceptance rate, rejection reasons, kinds, the chain-length histogram, and tool coverage
(tools reachable from givable values that no reference chain uses).

Usage::

    .venv/bin/python benchmarks/bench_tasks.py [--n 500] [--seed 0] [--domain retail ...]
"""

from __future__ import annotations

import argparse
import json
import time
from collections import Counter
from typing import Any

from graphgen.domain import Domain
from graphgen.domains import builtin_names, load_builtin
from graphgen.knowledge import param_sort
from graphgen.tasks.taskset import generate


def reachable_tools(domain: Domain) -> set[str]:
    """Tools whose arguments an agent can come to know, starting from givable values."""
    try:
        from graphgen.analysis import unreachable_tools
        from graphgen.graph import build_graph
    except ImportError:  # analysis not available: the same fixpoint over knowledge sorts
        from graphgen.tasks.plan import sort_distances

        known = set(sort_distances(domain))
        return {
            t.name
            for t in domain.tools.values()
            if all(
                param_sort(p).kind in ("enum", "free") or param_sort(p) in known
                for p in t.params.values()
            )
        }
    return set(domain.tools) - set(unreachable_tools(domain, build_graph(domain)))


def bench(name: str, n: int, seed: int) -> dict[str, Any]:
    """Generate ``n`` tasks for built-in domain ``name`` and collect the measures."""
    domain = load_builtin(name)
    t0 = time.perf_counter()
    res = generate(domain, n, seed)
    secs = time.perf_counter() - t0
    accepted = len(res.tasks)
    attempts = accepted + sum(res.rejected.values())  # each attempt is one or the other
    in_chains = {c.tool for t in res.tasks for c in t.chain}
    refused = {t.refused_call.tool for t in res.tasks if t.refused_call}
    reachable = reachable_tools(domain)
    lengths = Counter(t.difficulty for t in res.tasks)
    return {
        "domain": name,
        "n": n,
        "seed": seed,
        "accepted": accepted,
        "seconds": round(secs, 2),
        "tasks_per_second": round(accepted / secs, 1) if secs else None,
        "attempts": attempts,
        "acceptance_rate": round(accepted / attempts, 3) if attempts else None,
        "rejected": dict(sorted(res.rejected.items())),
        "kinds": dict(sorted(Counter(t.kind for t in res.tasks).items())),
        "lengths": {str(k): lengths[k] for k in sorted(lengths)},
        "max_length": max(lengths) if lengths else 0,
        "tools": len(domain.tools),
        "reachable": len(reachable),
        "unreachable": sorted(set(domain.tools) - reachable),
        "reachable_never_in_chain": sorted(reachable - in_chains),
        "only_as_refused_call": sorted((reachable - in_chains) & refused),
    }


def _print(r: dict[str, Any]) -> None:
    print(f"== {r['domain']}  (n={r['n']}, seed={r['seed']})")
    print(
        f"  accepted             {r['accepted']} in {r['seconds']} s "
        f"= {r['tasks_per_second']} tasks/s (generated + dry-run checked)"
    )
    print(f"  attempts             {r['attempts']}  (acceptance rate {r['acceptance_rate']})")
    rej = ", ".join(f"{k} {v}" for k, v in r["rejected"].items()) or "none"
    print(f"  rejected             {rej}")
    print("  kinds                " + ", ".join(f"{k} {v}" for k, v in r["kinds"].items()))
    print(
        "  chain lengths        "
        + ", ".join(f"{k}:{v}" for k, v in r["lengths"].items())
        + f"  (max {r['max_length']})"
    )
    print(
        f"  tools                {r['tools']} ({r['reachable']} reachable from givable values;"
        f" unreachable: {', '.join(r['unreachable']) or 'none'})"
    )
    print(
        "  reachable, never in a chain: "
        + (", ".join(r["reachable_never_in_chain"]) or "none")
        + (
            f"  (only refused: {', '.join(r['only_as_refused_call'])})"
            if r["only_as_refused_call"]
            else ""
        )
    )


def main(argv: list[str] | None = None) -> None:
    """Parse options, run every requested domain, print a report (or JSON lines)."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--n", type=int, default=500, help="tasks per domain (default 500)")
    ap.add_argument("--seed", type=int, default=0, help="generation seed (default 0)")
    ap.add_argument(
        "--domain",
        action="append",
        choices=builtin_names(),
        help="a built-in domain (repeatable; default: all)",
    )
    ap.add_argument("--json", action="store_true", help="one JSON object per domain")
    args = ap.parse_args(argv)
    for name in args.domain or builtin_names():
        r = bench(name, args.n, args.seed)
        if args.json:
            print(json.dumps(r, sort_keys=True))
        else:
            _print(r)


if __name__ == "__main__":
    main()
