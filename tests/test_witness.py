"""The interpreter's witness chain (:meth:`Prover.witness`): the reference chain with the
calls it can do without left out, run under the agent's rules
(:meth:`graphgen.verify.explicit.Space.follow`). It is an upper bound on the minimum,
so the z3 search goes downward from it; the minimum must come out the same as z3's
own upward search, also where the witness is longer than the minimum, and proof 3 must
still refute a claimed minimum below the true one."""

from __future__ import annotations

import pytest

from graphgen.domains import load_builtin
from graphgen.stategen import generate_state
from graphgen.tasks.expand import GenOptions
from graphgen.tasks.model import Call, Change, Given, Goal, Task
from graphgen.tasks.taskset import generate
from graphgen.verify.bmc import Recognition
from graphgen.verify.explicit import Space, shortened
from graphgen.verify.proofs import Prover


def _mock_space(
    tools: list[str] | None = None, recognize: tuple[Recognition, ...] = ()
) -> tuple[Space, str, str, int]:
    """A space on mock's state of seed 0 whose goal locks an active account known by
    its email; with the account's id, email and balance."""
    d = load_builtin("mock")
    s = generate_state(d, 0)
    key = next(
        k for k in sorted(s.tables["Account"]) if s.tables["Account"][k]["status"] == "active"
    )
    row = s.tables["Account"][key]
    goal = Goal(
        changes=[Change(entity="Account", key=key, field="status", before="active", after="locked")]
    )
    givens = [Given(sort="field:Account.email", value=row["email"])]
    return Space(d, s, givens, goal, tools, list(recognize)), key, row["email"], row["balance"]


def test_follow_runs_what_the_agent_can_do_and_nothing_else() -> None:
    space, key, email, _ = _mock_space()
    find = Call(tool="find_account", args={"email": email})
    lock = Call(tool="lock_account", args={"account_id": key})
    node = space.follow([find, lock])
    assert node is not None and space.goal(node)
    assert space.calls_run == 0  # following is no search: the budget is untouched
    # the id is neither given nor shown yet
    assert space.follow([lock]) is None
    # the second lock fails: the account is locked by then
    assert space.follow([find, lock, lock]) is None
    # an argument the tool does not take, and a required one left out
    assert space.follow([find, Call(tool="lock_account", args={**lock.args, "x": 1})]) is None
    assert space.follow([find, Call(tool="lock_account", args={})]) is None
    # a tool the space leaves out
    narrow, *_ = _mock_space(tools=["find_account", "get_account"])
    assert narrow.follow([find, lock]) is None


def test_follow_asks_for_a_target_to_be_recognised_first() -> None:
    probe, key, email, balance = _mock_space()
    target = Recognition(entity="Account", key=key, atoms=(("Account", "balance", balance),))
    space, *_ = _mock_space(recognize=(target,))
    find = Call(tool="find_account", args={"email": email})
    show = Call(tool="get_account", args={"account_id": key})
    lock = Call(tool="lock_account", args={"account_id": key})
    assert probe.follow([find, lock]) is not None
    assert space.follow([find, lock]) is None  # the balance was never shown
    node = space.follow([find, show, lock])
    assert node is not None and space.goal(node)


def test_shortened_leaves_out_what_the_chain_can_do_without() -> None:
    space, key, email, _ = _mock_space()
    find = Call(tool="find_account", args={"email": email})
    show = Call(tool="get_account", args={"account_id": key})
    lock = Call(tool="lock_account", args={"account_id": key})
    assert shortened(space, [find, show, show, lock]) == [find, lock]
    # a chain that misses the goal, or that the agent cannot make, is no witness
    assert shortened(space, [find, show]) is None
    assert shortened(space, [lock]) is None


def _retail_tasks(ids: set[str]) -> list[Task]:
    d = load_builtin("retail")
    return [t for t in generate(d, 115, 0, GenOptions()).tasks if t.id in ids]


def test_downward_search_finds_the_minimum_below_a_long_witness() -> None:
    """Retail tasks of seed 0 whose reference chain cannot be shortened call by call to
    a shortest one (the minimum needs a call the reference does not make)."""
    d = load_builtin("retail")
    tasks = _retail_tasks({"retail-0-00042", "retail-0-00062", "retail-0-00099", "retail-0-00114"})
    assert len(tasks) == 4
    for t in tasks:
        p = Prover(d, t)
        witness = p.witness()
        assert witness is not None and len(witness) <= len(t.chain)
        m, chain, why = p.shortest(len(t.chain))
        z3_only = Prover(d, t, engine="z3")
        assert z3_only.witness() is None  # engine "z3" takes nothing from the interpreter
        zm, _, _ = z3_only.shortest(len(t.chain))
        assert m == zm and m is not None, (t.id, m, zm, why)
        assert len(witness) > m, t.id  # the case this test is for
        assert chain is not None and len(chain) == m
        # proof 3 with the true minimum holds, and one below it is refuted
        exact = Prover(d, t.model_copy(update={"min_calls": m}))
        assert exact.min_calls().status.value == "proved", t.id
        below = Prover(d, t.model_copy(update={"min_calls": m - 1}))
        assert below.min_calls().status.value == "refuted", t.id


def test_refusals_have_no_witness() -> None:
    d = load_builtin("retail")
    refusal = next(t for t in generate(d, 12, 0, GenOptions()).tasks if t.kind == "refusal")
    assert Prover(d, refusal).witness() is None


@pytest.mark.slow
@pytest.mark.parametrize(("name", "n"), [("retail", 40), ("airline", 30)])
def test_downward_and_upward_searches_agree(name: str, n: int) -> None:
    """On the first candidates of seed 0, the minimum found downward from the witness
    equals z3's upward search, and the minimal solutions' writes proof 5 finds are the
    same set whether or not the witness's writes seed them."""
    d = load_builtin(name)
    tasks = [t for t in generate(d, n, 0, GenOptions()).tasks if t.kind != "refusal"]
    compared = 0
    for t in tasks:
        auto, z3_only = Prover(d, t), Prover(d, t, engine="z3")
        m, _, why = auto.shortest(len(t.chain))
        zm, _, zwhy = z3_only.shortest(len(t.chain))
        assert m == zm, (t.id, m, zm, why, zwhy)
        if m is None:
            continue
        for p in (auto, z3_only):
            p.task = t.model_copy(update={"min_calls": m})
        got, want = auto.minimal_writes(), z3_only.minimal_writes()
        assert isinstance(got, list) and isinstance(want, list), (t.id, got, want)
        key = lambda c: (c.tool, sorted(c.args.items()))  # noqa: E731
        assert sorted(got, key=key) == sorted(want, key=key), t.id
        compared += 1
    assert compared >= n // 2
