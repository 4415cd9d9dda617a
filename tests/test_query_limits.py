"""The resource limit of a z3 query shrinks over a big universe (``query_rlimit``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from graphgen.domains import load_builtin
from graphgen.tasks.model import Inconclusive, ProofStatus
from graphgen.tasks.taskset import read_taskset
from graphgen.verify import bmc
from graphgen.verify.bmc import QUERY_ROWS, RLIMIT_PER_MS, query_rlimit
from graphgen.verify.proofs import Prover

DATA = Path(__file__).parent / "data"


def test_small_universes_keep_their_limit_and_big_ones_shrink_in_proportion() -> None:
    full = 4000 * RLIMIT_PER_MS
    assert [query_rlimit(4000, r) for r in (0, 1, 60, QUERY_ROWS)] == [full] * 4
    assert query_rlimit(4000, 2 * QUERY_ROWS) == full // 2
    assert query_rlimit(4000, 10 * QUERY_ROWS) == full // 10
    # never more units for more rows
    got = [query_rlimit(4000, r) for r in range(QUERY_ROWS, 50 * QUERY_ROWS, 97)]
    assert got == sorted(got, reverse=True)


def test_a_query_over_more_rows_than_the_threshold_gets_fewer_units(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The unrolling's rows decide its queries' limit: the same proofs that pass with
    the universe under the threshold time out once the threshold is below it."""
    # its 54-row universe is far below the threshold, and one of its queries needs about
    # 6 million units of the 20 million a 4 s limit grants
    _, tasks = read_taskset(DATA / "good_retail.jsonl")
    task = max(tasks, key=lambda t: len(t.chain))
    domain = load_builtin("retail")
    before = Prover(domain, task, None, engine="z3").all()
    assert all(r.ok for r in before), before
    monkeypatch.setattr(bmc, "QUERY_ROWS", 5)  # 20 M * 5 / 54: 1.9 M units
    after = Prover(domain, task, None, engine="z3").all()
    stuck = [r for r in after if r.status is ProofStatus.INCONCLUSIVE]
    assert stuck, after
    assert all(r.cause is Inconclusive.TIMEOUT for r in stuck)
