"""Built-in domains written in language v2, end to end with proofs: a small task set
generated with every z3 proof, re-verified from scratch, and scored by the baselines.

The per-domain test files check their task sets without proofs (fast); this runs the
whole pipeline as a user does (generate, verify, evaluate), so a proof that wrongly
rejects good tasks of these domains shows as missing kinds or a short set, and one that
accepts tasks a trivial agent solves shows in the baselines.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from graphgen import pipeline as pl
from graphgen.tasks.taskset import read_taskset

N = 15


@pytest.mark.slow
@pytest.mark.parametrize("name", ["banking", "helpdesk"])
def test_proved_task_set_verifies_and_only_the_oracle_solves_it(name: str, tmp_path: Path) -> None:
    """About 5 s for banking and 50 s for helpdesk on two cores."""
    path = tmp_path / f"{name}.jsonl"
    pl.generate(name, N, pl.Options(seed=3, jobs=2), output=path)
    tasks = read_taskset(path)[1]
    assert len(tasks) == N
    assert {t.kind for t in tasks} == {"action", "information", "refusal"}
    assert all(t.certificate is not None for t in tasks)
    check = pl.verify_tasks(path, options=pl.Options(jobs=2))
    assert check.ok, check.failures
    assert check.outcomes == {"ok": N}
    assert pl.evaluate(path, "oracle").success_rate == 1.0
    for agent in ("noop", "random"):
        assert pl.evaluate(path, agent, pl.Options(seed=1)).success_rate <= 0.1, agent
