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
from graphgen.tasks.model import Call, Change, Given, Goal, Inconclusive, Target
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


def test_downward_search_finds_the_minimum_below_a_long_witness() -> None:
    """A reference chain that cannot be shortened call by call to a shortest one: it
    learns the account's id from a listing by status and reads the account to recognise
    it by its email, two calls that each need the other, while a search by the email
    gives the id and recognises the account at once (a call the reference does not
    make). The minimum is found below the witness, as z3's upward search finds it."""
    from graphgen.load import loads_domain
    from tests.test_fair_proofs import (
        DEPOSIT,
        DEPOSIT_GOAL,
        EMAIL,
        EMAIL_GIVEN,
        GIVEN_100,
        WALLET_YAML,
        _task,
    )

    d = loads_domain(WALLET_YAML, source="<wallet>")
    by_email = Target(
        entity="Account", key="A001", phrase="my account", description=f"x.email == {EMAIL!r}"
    )
    chain = [
        Call(tool="find_accounts_by_status", args={"status": "active"}),
        Call(tool="get_account", args={"account_id": "A001"}),
        DEPOSIT,
    ]
    givens = [EMAIL_GIVEN, GIVEN_100, Given(sort="enum:Status", value="active")]
    t = _task(d, chain, DEPOSIT_GOAL, givens, [by_email])
    p = Prover(d, t)
    witness = p.witness()
    assert witness == chain  # neither lookup can be left out of this chain
    m, shortest, why = p.shortest(len(chain))
    z3_only = Prover(d, t, engine="z3")
    assert z3_only.witness() is None  # engine "z3" takes nothing from the interpreter
    zm, _, _ = z3_only.shortest(len(chain))
    assert m == zm == 2, (m, zm, why)
    assert shortest is not None and [c.tool for c in shortest] == ["find_account", "deposit"]
    # proof 3 with the true minimum holds, and one below it is refuted
    exact = Prover(d, t.model_copy(update={"min_calls": m}))
    assert exact.min_calls().status.value == "proved"
    below = Prover(d, t.model_copy(update={"min_calls": m - 1}))
    assert below.min_calls().status.value == "refuted"


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
        if any(not isinstance(w, list) and w.cause is Inconclusive.TIMEOUT for w in (got, want)):
            continue  # a side ran out of its limit (a 12-call retail task): nothing to compare
        assert isinstance(got, list) and isinstance(want, list), (t.id, got, want)
        key = lambda c: (c.tool, sorted(c.args.items()))  # noqa: E731
        assert sorted(got, key=key) == sorted(want, key=key), t.id
        compared += 1
    assert compared >= n // 2
