"""Fuzzing domain files and task files (mutators and oracles: ``tests/fuzz_inputs.py``).

Each case ends in a clear error (our own exception type, located) or a correct result
(the input is usable downstream), never a traceback and never an invalid task file
accepted. Small budgets here; ``benchmarks/bench_fuzz.py`` runs ten thousand of each.
"""

from __future__ import annotations

import json
import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from graphgen.tasks.validate import scan_taskset
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


def test_a_created_rows_id_of_the_wrong_type_is_rejected() -> None:
    """Found by the larger fuzz budget: a goal change that creates a row was checked for
    its fields but not its id, so a mock Payment (string ids) created as id 7 or -1 was
    accepted. Every change's id now has its entity's key type, and the problem names
    the change."""
    head = GOOD_LINES[0]
    task = json.loads(next(x for x in GOOD_LINES[1:] if '"field":"*"' in x))
    changes = task["goal"]["changes"]
    at = next(i for i, c in enumerate(changes) if c["field"] == "*" and c["before"] is None)
    assert changes[at]["entity"] == "Payment"
    for bad in (7, -1):
        changes[at]["key"] = bad
        data = (head + "\n" + json.dumps(task) + "\n").encode()
        assert run_task_case(data, True, mock_domain(), f"id {bad}") == "error"
        got = scan_taskset(data, "fuzz.jsonl", lambda m: mock_domain())
        want = f"goal.changes[{at}].key: Payment ids are non-empty strings, got {bad!r}"
        assert len(got.problems) == 1 and want in str(got.problems[0]), got.problems
