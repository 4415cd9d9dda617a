"""Benchmark and stress ``graphgen eval`` against a loopback model server (a script, not
a test).

The model is the scripted OpenAI-compatible server of the test suite on 127.0.0.1,
talked to through the real ``openai`` client. The script prints

* concurrency: wall clock of the same run (a mock task set, ``--trials`` each, a model
  that follows the reference chain with ``--latency`` seconds per reply) at
  concurrency 1 and at ``--concurrency``, and pass^1..pass^k of both (they must agree);
* hostile replies: ``--hostile`` replies drawn from the seeded generator (broken HTTP
  and JSON, huge and deep values, wrong shapes) served to 4 concurrent episodes: how many
  episodes ran, how many recorded an error, and that the run finished (any traceback
  here is a bug).

Usage::

    .venv/bin/python benchmarks/bench_eval.py [--tasks 20] [--trials 2] [--latency 0.2] \\
        [--concurrency 8] [--hostile 1000] [--seed 0]
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # the loopback server lives with the tests

from graphgen import pipeline as pl  # noqa: E402
from graphgen.tasks.taskset import read_taskset  # noqa: E402
from tests.openai_stub import Scripted, StubServer, hostile_reply  # noqa: E402


def _solver(path: Path, latency: float) -> Any:
    _, tasks = read_taskset(path)
    by_text = {t.instruction: t for t in tasks}

    def script(body: dict[str, Any]) -> Scripted:
        task = by_text[body["messages"][1]["content"]]
        done = sum(1 for m in body["messages"] if m["role"] == "tool")
        if done < len(task.chain):
            c = task.chain[done]
            return Scripted([(c.tool, json.dumps(c.args))], delay=latency)
        return Scripted("Here: " + ", ".join(map(str, task.goal.answer)), delay=latency)

    return script


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tasks", type=int, default=20)
    ap.add_argument("--trials", type=int, default=2)
    ap.add_argument("--latency", type=float, default=0.2)
    ap.add_argument("--concurrency", type=int, default=8)
    ap.add_argument("--hostile", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()

    path = Path(tempfile.mkdtemp()) / "mock.jsonl"
    pl.generate("mock", args.tasks, pl.Options(seed=args.seed, prove=False), output=path)

    with StubServer(_solver(path, args.latency)) as srv:
        for conc in (1, args.concurrency):
            began = time.perf_counter()
            res = pl.evaluate(
                path,
                "model",
                base_url=srv.base_url,
                run=pl.EvalOptions(trials=args.trials, concurrency=conc),
            )
            took = time.perf_counter() - began
            passes = " ".join(f"pass^{k}={v:.3f}" for k, v in res.pass_hat_k().items())
            print(
                f"concurrency {conc:2d}: {len(res.episodes)} episodes in {took:.1f} s "
                f"({res.usage()['agent']['requests']} requests); {passes}"
            )

    rng = random.Random(args.seed)
    lock = threading.Lock()

    def hostile(body: dict[str, Any]) -> Scripted:
        with lock:
            return hostile_reply(rng)

    _, tasks = read_taskset(path)
    with StubServer(hostile) as srv:
        began = time.perf_counter()
        res = pl.evaluate(
            path,
            "model",
            pl.Options(max_steps=4),
            base_url=srv.base_url,
            run=pl.EvalOptions(
                trials=max(1, args.hostile // len(tasks)), retries=0, timeout=10, concurrency=4
            ),
        )
        served = len(srv.requests)
    print(
        f"hostile replies: {served} served to {len(res.episodes)} episodes in "
        f"{time.perf_counter() - began:.1f} s; {res.errors} episodes recorded an error, "
        f"{sum(e.invalid_calls for e in res.episodes)} malformed calls answered; run finished"
    )


if __name__ == "__main__":
    main()
