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
    # the tool cut's figure: mock's tasks keep some of its tools, never more than all
    kept, tools = r["tools_kept_mean"], r["tools"]
    assert isinstance(kept, float) and isinstance(tools, int)
    assert tools == 5 and 0 < kept <= tools


def test_gen_scales_measure_generation_alone_against_x1() -> None:
    """``--gen-scales 3`` generates ``--scale-n`` tasks on a state three times the size
    and reports the CPU per task beside x1's and their ratio; no proof runs there. It
    does it again for as many tasks of another seed on the first state, once used: that
    run generates no state."""
    r = _run("--gen-scales", "3", "--scale-n", "6")
    got = r["generation_scaling"]
    assert isinstance(got, dict) and set(got) == {"3"}
    row = got["3"]
    assert row["tasks"] == 6
    gen, x1 = row["gen_ms_per_task"], row["x1_gen_ms_per_task"]
    assert gen > 0 and x1 > 0
    assert abs(row["vs_x1"] - gen / x1) < 0.1  # the figures are rounded to 0.1 ms
    warm, warm_x1 = row["warm_ms_per_task"], row["x1_warm_ms_per_task"]
    assert warm > 0 and warm_x1 > 0
    assert abs(row["warm_vs_x1"] - warm / warm_x1) < 0.1
    # the first use's cost per state: the two per-task figures apart, times the tasks
    # (one state holds all six), give or take the rounding
    assert abs(row["first_use_ms_per_state"] - (gen - warm) * 6) < 2
    assert r["scaling"] == {}  # --scales '': no proofs at other sizes
    assert _run()["generation_scaling"] == {}


def test_phases_split_certify_cpu_into_its_parts() -> None:
    """``--phases`` splits the certify CPU of all tasks into its parts, which add up to
    it. Mock's small tasks are answered by the explicit search with no z3 at all; with
    ``--engine z3`` the same tasks go to unrollings and z3 checks instead. A second
    split, by proof, adds up to the accepted tasks' wall time."""
    auto = _run("--phases")
    parts = auto["phases_ms"]
    assert isinstance(parts, dict)
    assert set(parts) == {
        "explicit search, answered",
        "explicit search, gave up",
        "unrolling steps",
        "z3 check",
        "value-flow slice",
        "other",
    }
    cpu_s = auto["cpu_s"]
    assert isinstance(cpu_s, float)
    assert abs(sum(parts.values()) / 1000 - cpu_s) < 0.01
    assert parts["explicit search, answered"] > 0
    assert parts["explicit search, gave up"] == 0
    assert parts["unrolling steps"] == 0 and parts["z3 check"] == 0
    z3_only = _run("--phases", "--engine", "z3")["phases_ms"]
    assert isinstance(z3_only, dict)
    assert z3_only["explicit search, answered"] == 0
    assert z3_only["unrolling steps"] > 0 and z3_only["z3 check"] > 0
    assert _run()["phases_ms"] == {}
    # the accepted tasks' wall by proof (their certificates' times), the minimum's
    # search first: the parts add up to the tasks' wall time
    proofs = auto["proofs_ms"]
    assert isinstance(proofs, dict)
    assert {"the minimum's search", "reference_chain", "unique_final_state"} <= set(proofs)
    mean_ms = auto["mean_ms"]
    assert isinstance(mean_ms, float)
    assert abs(sum(proofs.values()) - mean_ms * 4) < 1.0  # four accepted, rounded to 0.1 ms
    assert all(v >= 0 for v in proofs.values())
