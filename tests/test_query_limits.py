"""The resource limit of a z3 query shrinks over a big universe (``query_rlimit``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from graphgen.domains import load_builtin
from graphgen.tasks.model import Inconclusive, ProofStatus
from graphgen.tasks.taskset import generate
from graphgen.verify import bmc
from graphgen.verify.bmc import QUERY_ROWS, RLIMIT_PER_MS, query_rlimit
from graphgen.verify.certify import certify
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
    # retail-0-00014 (12 calls: a pending order's payment, item and address changed):
    # its universe is far below the threshold, and its queries need more than the
    # units a universe 100 times the threshold would leave them
    domain = load_builtin("retail")
    candidate = next(t for t in generate(domain, 15, 0).tasks if t.id == "retail-0-00014")
    task = certify(domain, candidate)
    assert not isinstance(task, str), task
    before = Prover(domain, task, None, engine="z3").all()
    assert all(r.ok for r in before), before
    monkeypatch.setattr(bmc, "QUERY_ROWS", 5)
    after = Prover(domain, task, None, engine="z3").all()
    stuck = [r for r in after if r.status is ProofStatus.INCONCLUSIVE]
    assert stuck, after
    assert all(r.cause is Inconclusive.TIMEOUT for r in stuck)
