"""``benchmarks/bench_verify.py`` is a script; its ``--repeat`` option changes what its
figures mean, so one small run checks them."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parent.parent / "benchmarks" / "bench_verify.py"
SMALL = ["--domain", "mock", "--n", "4", "--jobs", "1", "--scales", "", "--json"]


def _run(*args: str) -> dict[str, object]:
    out = subprocess.run(
        [sys.executable, str(SCRIPT), *SMALL, *args],
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
    )
    got: dict[str, object] = json.loads(out.stdout.strip().splitlines()[-1])
    return got


def test_repeat_counts_each_tasks_least_time() -> None:
    """With ``--repeat 3`` every task is certified three times (the same verdict each
    time) and the wall figure is the least times' sum: the mean least time times the
    tasks, over one job."""
    r = _run("--repeat", "3")
    assert r["repeat"] == 3 and r["n"] == 4
    assert r["outcomes"] == {"accepted": 4}
    mean_ms, wall_s = r["mean_ms"], r["wall_s"]
    assert isinstance(mean_ms, float) and isinstance(wall_s, float)
    assert abs(wall_s - mean_ms * 4 / 1000) < 0.002
    once = _run()
    assert once["repeat"] == 1 and once["outcomes"] == r["outcomes"]
