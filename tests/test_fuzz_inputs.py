"""Fuzzing domain files and task files (mutators and oracles: ``tests/fuzz_inputs.py``).

Each case ends in a clear error (our own exception type, located) or a correct result
(the input is usable downstream), never a traceback and never an invalid task file
accepted. Small budgets here; ``benchmarks/bench_fuzz.py`` runs ten thousand of each.
"""

from __future__ import annotations

import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.fuzz_inputs import (
    GOOD_LINES,
    Escaped,
    domain_case,
    mock_domain,
    run_domain_case,
    run_task_case,
    task_case,
)

FAST = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
SLOW = settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _domain(rng: random.Random) -> str:
    return run_domain_case(domain_case(rng))


def _task(rng: random.Random) -> str:
    data, must, what = task_case(rng)
    return run_task_case(data, must, mock_domain(), what)


@FAST
@given(st.randoms(use_true_random=False))
def test_fuzzed_domain_files_fail_cleanly_or_work(rng: random.Random) -> None:
    assert _domain(rng) in ("error", "accepted")


@FAST
@given(st.randoms(use_true_random=False))
def test_mutated_task_lines_fail_cleanly_or_work(rng: random.Random) -> None:
    assert _task(rng) in ("error", "accepted")


@pytest.mark.slow
@SLOW
@given(st.randoms(use_true_random=False))
def test_fuzzed_domain_files_larger_budget(rng: random.Random) -> None:
    assert _domain(rng) in ("error", "accepted")


@pytest.mark.slow
@SLOW
@given(st.randoms(use_true_random=False))
def test_mutated_task_lines_larger_budget(rng: random.Random) -> None:
    assert _task(rng) in ("error", "accepted")


def test_the_oracles_catch_what_they_must() -> None:
    """The oracles themselves: an accepted invalid line and a traceback both escape."""
    good = (GOOD_LINES[0] + "\n" + GOOD_LINES[1] + "\n").encode()
    assert run_task_case(good, False, mock_domain()) == "accepted"
    with pytest.raises(Escaped, match="an invalid task was accepted"):
        run_task_case(good, True, mock_domain(), "a good line claimed invalid")
    with pytest.raises(Escaped, match="traceback while loading"):
        run_domain_case(None)  # type: ignore[arg-type]
