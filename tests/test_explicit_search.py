"""The explicit-state search (graphgen.verify.explicit) and the z3 minimum search answer
the same question two ways; on random small tasks they must agree, both on the minimum
and on "no chain within the bound" (asked one call below each minimum)."""

from __future__ import annotations

import pytest

from graphgen.domain import Domain
from graphgen.domains import load_builtin
from graphgen.load import loads_domain
from graphgen.stategen import generate_state
from graphgen.synth import synth_yaml
from graphgen.tasks.model import Call, Change, Given, Goal, Task
from graphgen.tasks.taskset import generate
from graphgen.verify.explicit import shortest_chain, task_shortest
from graphgen.verify.proofs import Prover


def _z3_min(domain: Domain, task: Task, upto: int) -> int | None:
    got = Prover(domain, task).find_min_calls(upto)
    return got if isinstance(got, int) else None


def _cross_check(domain: Domain, n: int, seed: int) -> tuple[int, int]:
    """(tasks compared, queries compared); asserts agreement on each."""
    tasks = [t for t in generate(domain, n, seed).tasks if t.kind != "refusal"]
    queries = 0
    for t in tasks:
        ex = task_shortest(domain, t, max_nodes=3000)
        if not ex.complete:
            continue
        z = _z3_min(domain, t, len(t.chain))
        assert z == ex.min_calls, (t.id, z, ex.min_calls, ex.chain)
        queries += 1
        if z:
            below = task_shortest(domain, t, z - 1, max_nodes=3000)
            assert below.complete and below.min_calls is None, (t.id, below)
            assert _z3_min(domain, t, z - 1) is None, t.id
            queries += 1
    return len(tasks), queries


def test_engines_agree_on_mock_and_synthesized_domains() -> None:
    compared = 0
    for domain, n in [
        (load_builtin("mock"), 60),
        (loads_domain(synth_yaml(0), source="synth0.yaml"), 25),
        (loads_domain(synth_yaml(1), source="synth1.yaml"), 25),
    ]:
        _, q = _cross_check(domain, n, 0)
        compared += q
    assert compared >= 150


@pytest.mark.slow
def test_engines_agree_on_a_thousand_small_tasks() -> None:
    """>= 1,000 random small tasks (mock states of many seeds, and synthesized domains):
    every minimum and every "none within the bound" the same."""
    tasks = queries = 0
    for seed in range(8):
        t, q = _cross_check(load_builtin("mock"), 100, seed)
        tasks, queries = tasks + t, queries + q
    for s in range(2, 8):
        t, q = _cross_check(loads_domain(synth_yaml(s), source=f"synth{s}.yaml"), 40, 0)
        tasks, queries = tasks + t, queries + q
    assert tasks >= 1000
    assert queries >= 1500


def test_unreachable_goal_and_node_budget() -> None:
    """No chain reaches a value no call can make; a search out of budget says so
    instead of answering."""
    d = load_builtin("mock")
    s = generate_state(d, 0)
    key = sorted(s.tables["Account"])[0]
    row = s.tables["Account"][key]
    email = Given(sort="field:Account.email", value=row["email"])
    never = Goal(
        changes=[
            Change(entity="Account", key=key, field="status", before=row["status"], after="gone")
        ]
    )
    r = shortest_chain(d, s, [email], never, 3)
    assert r.complete and r.min_calls is None and r.chain is None
    lock = Goal(
        changes=[
            Change(entity="Account", key=key, field="status", before=row["status"], after="locked")
        ]
    )
    assert shortest_chain(d, s, [], lock, 3).min_calls is None  # nothing known: no call
    cut = shortest_chain(d, s, [email], lock, 3, max_nodes=0)
    assert not cut.complete and cut.min_calls is None
    found = shortest_chain(d, s, [email], lock, 3)
    assert found.min_calls == 2
    assert found.chain == [
        Call(tool="find_account", args={"email": row["email"]}),
        Call(tool="lock_account", args={"account_id": key}),
    ]


@pytest.mark.slow
@pytest.mark.parametrize(("name", "n"), [("banking", 40), ("helpdesk", 20), ("hotel", 20)])
def test_engines_agree_on_language_v2_domains(name: str, n: int) -> None:
    """Decimals, optional arguments, soft failures and strings: this comparison found the
    z3 encoding refusing a valid int-into-decimal write on any account but the first
    (banking-0-00034) and refusing every omitted optional argument (helpdesk)."""
    _, q = _cross_check(load_builtin(name), n, 0)
    assert q >= 10
