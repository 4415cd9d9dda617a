"""Domain lemmas (``lemmas:``) and the refusals they settle (graphgen.verify.lemmas):
a lemma is used only once proven by induction on the task's unrolling; a lemma that a
tool breaks, or that is false initially, is not used and proof 6 keeps its answer; a
refusal a chain makes possible is still rejected whatever the lemma claims; and on
retail's gift-card refusals the lemma's verdict is z3's."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import z3

from graphgen.domain import Domain
from graphgen.domains import load_builtin
from graphgen.errors import DomainError
from graphgen.load import loads_domain
from graphgen.tasks.model import Call, Change, Given, Goal, Task
from graphgen.tasks.taskset import generate
from graphgen.verify import lemmas, proofs
from graphgen.verify.bmc import Bmc, query_rlimit
from graphgen.verify.lemmas import LemmaArgument, refusal_by_lemmas
from graphgen.verify.proofs import Engine, Prover, prove_task
from tests.test_fair_proofs import WALLET_YAML
from tests.test_fair_proofs import _task as fair_task

DEPOSIT = """  deposit:
    description: Add money to an account.
    params:
      account_id: {type: Account, description: "The account id."}
      amount: {type: int, min: 1, max: 5000, description: "Whole units."}
    effects: "Account[account_id].balance += amount"
"""


@pytest.fixture(autouse=True)
def _no_refusal_search(monkeypatch: pytest.MonkeyPatch) -> None:
    """Proof 6 without the explicit search's answers: the lemmas settle what the values
    leave open on refusals a small search could settle first (these wallets), as they
    do where the search gives up (retail's gift cards)."""
    monkeypatch.setattr(proofs, "REFUSAL_CALLS", 0)


def _wallet(potential: str, *, deposit: bool) -> Domain:
    """The wallet with a lemma on Account (``x.balance <= potential``), with or without
    the tool that raises a balance."""
    text = WALLET_YAML.replace(
        "      status: {enum: Status}\n",
        "      status: {enum: Status}\n"
        "    lemmas:\n"
        "      - name: no_more_money\n"
        '        value: "x.balance"\n'
        f'        potential: "{potential}"\n',
        1,
    )
    if not deposit:
        text = text.replace(DEPOSIT, "")
    d = loads_domain(text, source="<wallet>")
    assert ("deposit" in d.tools) == deposit
    return d


def _refusal(d: Domain, amount: int) -> Task:
    """Bo (A002, balance 80) asks for a card of ``amount``."""
    call = Call(tool="buy_card", args={"account_id": "A002", "amount": amount})
    task = fair_task(
        d,
        [Call(tool="get_account", args={"account_id": "A002"})],
        Goal(),
        [Given(sort="key:Account", value="A002"), Given(sort="free:int", value=amount)],
    )
    return task.model_copy(update={"kind": "refusal", "refused_call": call, "min_calls": 0})


def _proof_6(domain: Domain, task: Task, engine: Engine = "auto") -> tuple[bool, str]:
    proofs = prove_task(domain, task, engine=engine).proofs
    got = next(p for p in proofs if p.name == "refusal_impossible")
    return got.ok, got.detail


@contextmanager
def _unrolled(domain: Domain, task: Task) -> Iterator[tuple[Prover, Bmc, Call, list[Change]]]:
    """The refusal's prover, its unrolling, the refused call and the requested changes,
    inside the prover's z3 context."""
    prover = Prover(domain, task)
    with prover.z3:
        bmc = prover.build()
        assert bmc is not None and task.refused_call is not None
        req = prover.requested
        assert isinstance(req, list)
        yield prover, bmc, task.refused_call, req


def _argument(domain: Domain, task: Task) -> LemmaArgument:
    with _unrolled(domain, task) as (prover, bmc, call, req):
        got = refusal_by_lemmas(bmc, call, req, prover.timeout_ms)
    assert got is not None
    return got


def test_a_lemma_no_call_breaks_settles_the_refusal() -> None:
    """Without deposits no call raises a balance: Bo's 80 never covers 100 after any
    chain of up to k calls, and z3's bounded answer is the same."""
    d = _wallet("x.balance", deposit=False)
    task = _refusal(d, 100)
    got = _argument(d, task)
    assert got.never is not None and "Account A002: x.balance <= 80 in every state" in got.never
    # the requested change (a balance of -20) is out of the field's bounds too
    assert got.unreachable is not None and "never -20" in got.unreachable, got
    ok, detail = _proof_6(d, task)
    # the induction covers the unrolling's universe: the chains of up to k calls
    k = Prover(d, task).k
    assert ok and f"no chain of <= {k} calls lets the refused call succeed" in detail, detail
    assert "any length" not in detail and "no_more_money" in detail, detail
    assert "balance is never -20: below its minimum 0" in detail, detail
    ok_z3, detail_z3 = _proof_6(d, task, "z3")
    assert ok_z3 and "lemma" not in detail_z3, detail_z3


def test_a_lemma_a_tool_breaks_is_not_used() -> None:
    """With deposits the same lemma is false: the induction fails at ``deposit``, the
    lemma is not used, and proof 6 finds the way round (deposit, then buy)."""
    d = _wallet("x.balance", deposit=True)
    task = _refusal(d, 100)
    got = _argument(d, task)
    assert got.never is None and got.unreachable is None and "'deposit'" in got.detail, got
    engines: tuple[Engine, ...] = ("auto", "z3")
    for engine in engines:
        ok, detail = _proof_6(d, task, engine)
        assert not ok and "deposit → buy_card" in detail, (engine, detail)
        # the certificate says why the lemma was left out, for the domain's author
        said = "lemmas were not used: not shown kept by tool 'deposit'" in detail
        assert said == (engine == "auto"), (engine, detail)


def test_a_lemma_false_initially_is_not_used() -> None:
    """``balance <= balance - 1`` fails in the initial state: no argument, and proof 6
    is z3's (the refusal is still sound: no deposits)."""
    d = _wallet("x.balance - 1", deposit=False)
    task = _refusal(d, 100)
    got = _argument(d, task)
    assert got.never is None and "initial state" in got.detail, got
    ok, detail = _proof_6(d, task)
    assert ok and "no chain of < " in detail, detail
    assert detail.endswith("(the domain's lemmas were not used: not true in the initial state)")


def test_a_bound_too_weak_does_not_settle_the_refusal() -> None:
    """A true lemma too weak to bound the call (a balance is at most 100,000) proves
    nothing about it, and z3 answers."""
    d = _wallet("100000", deposit=False)
    task = _refusal(d, 100)
    got = _argument(d, task)
    assert got.never is None and got.detail == "the bounds they prove allow the refused call"
    # the requested balance (-20) is below the field's minimum: the bounds part of the
    # invariant says so, whatever the lemma's own bound
    assert got.unreachable is not None and "never -20" in got.unreachable, got
    ok, detail = _proof_6(d, task)
    assert ok and "no chain of < " in detail, detail
    assert detail.endswith(
        "(the domain's lemmas were not used: the bounds they prove allow the refused call)"
    )


@cache
def _retail_gift_card_refusal(tid: str = "retail-0-00274") -> tuple[Domain, Task]:
    """A place_order refusal of seed 0 paid by gift card that the lemma settles (00145
    and 00274; the other of the first 300 is possible)."""
    d = load_builtin("retail")
    n = int(tid.rsplit("-", 1)[1]) + 1
    task = next(t for t in generate(d, n, 0).tasks if t.id == tid)
    assert task.refused_call is not None and task.refused_call.tool == "place_order"
    return d, task


def test_retail_gift_card_refusal_settled_by_its_lemma() -> None:
    """retail-0-00274: a $203 gift card and a $310 item. The lemma (balance plus what
    could be refunded to the card) bounds the card at 203, so no chain makes the
    order go through; z3 alone gives the same verdict for chains within k."""
    d, task = _retail_gift_card_refusal()
    ok, detail = _proof_6(d, task)
    assert ok and "by lemma gift_card_funds" in detail, detail
    assert "PaymentMethod PM0007: x.balance <= 203" in detail, detail
    ok_z3, detail_z3 = _proof_6(d, task, "z3")
    assert ok_z3 and "lemma" not in detail_z3, detail_z3


def test_after_a_whole_try_misses_the_induction_goes_to_row_cases(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """On retail-0-00145 (a $463 gift card, 10 calls) no tool's induction query is
    decided whole within its share of the limit: the first tool's try misses, the others
    go straight to their row cases, and the argument is the one that trying each tool
    whole first gives."""
    d, task = _retail_gift_card_refusal("retail-0-00145")
    real_check, real_cases = lemmas._check, lemmas._unsat_by_cases
    share = query_rlimit(Prover(d, task).timeout_ms, 0) // lemmas.TRY_SHARE
    per_tool: list[list[Any]] = []  # per tool query: the answer of its own whole try
    depth = [0]  # calls of _unsat_by_cases open: 1 inside a tool query, more in its cases

    def check(facts: list[Any], rlimit: int) -> Any:
        got = real_check(facts, rlimit)
        if depth[0] == 1 and rlimit == share:
            per_tool[-1].append(got)
        return got

    def by_cases(
        facts: list[Any], splits: list[Any], uni: Any, rlimit: int, tries: Any = None
    ) -> bool:
        if tries is not None:
            per_tool.append([])
        depth[0] += 1
        try:
            return real_cases(facts, splits, uni, rlimit, tries)
        finally:
            depth[0] -= 1

    monkeypatch.setattr(lemmas, "_check", check)
    monkeypatch.setattr(lemmas, "_unsat_by_cases", by_cases)
    got = _argument(d, task)
    assert len(per_tool) >= 4, per_tool
    assert per_tool[0] == [z3.unknown], per_tool
    assert all(tries == [] for tries in per_tool[1:]), per_tool
    # the same argument when every tool query tries whole first
    monkeypatch.setattr(
        lemmas,
        "_unsat_by_cases",
        lambda facts, splits, uni, rlimit, tries=None: real_cases(facts, splits, uni, rlimit),
    )
    assert _argument(d, task) == got
    assert got.never is not None and "PaymentMethod PM0013: x.balance <= 463" in got.never


def test_a_lemma_without_refunds_to_delivered_orders_is_refuted() -> None:
    """Leave the delivered orders out of retail's potential and a return (refunded to
    the card) raises the balance past it: the induction names that tool."""
    d, task = _retail_gift_card_refusal()
    text = Path(d.source).read_text(encoding="utf-8")
    weak = text.replace(
        """
                       + sum(o.total for o in Order
                             if o.user_id == x.user_id and o.status == 'delivered')""",
        "",
    )
    assert weak != text
    d2 = loads_domain(weak, source="<retail without returns>")
    task2 = task.model_copy(update={"domain_hash": d2.content_hash})
    got = _argument(d2, task2)
    assert got.never is None and "return_delivered_order" in got.detail, got


def test_lemma_errors_name_the_entity_and_expression() -> None:
    bad = WALLET_YAML.replace(
        "      status: {enum: Status}\n",
        "      status: {enum: Status}\n"
        "    lemmas:\n"
        "      - {name: a, value: x.balance, potential: \"x.status == 'active'\"}\n"
        "      - {name: a, value: x.balance, potential: x.balance}\n",
        1,
    )
    with pytest.raises(DomainError) as info:
        loads_domain(bad, source="<bad>")
    text = str(info.value)
    assert "lemma's potential must be a number, this is bool" in text, text
    assert "entity 'Account'" in text and "lemmas[0].potential" in text, text
    assert "x.status == 'active'" in text, text
    assert "lemma name 'a' repeats" in text, text


def test_a_lemma_without_its_potential_is_named() -> None:
    bad = WALLET_YAML.replace(
        "      status: {enum: Status}\n",
        "      status: {enum: Status}\n    lemmas:\n      - {name: a, value: x.balance}\n",
        1,
    )
    with pytest.raises(DomainError) as info:
        loads_domain(bad, source="<bad>")
    assert "missing key 'potential' in lemmas[0] of entity 'Account'" in str(info.value)


def test_domains_without_lemmas_keep_their_hash() -> None:
    """An empty ``lemmas:`` is left out of the content hash, as other late keys are."""
    plain = loads_domain(WALLET_YAML, source="<wallet>")
    empty = loads_domain(
        WALLET_YAML.replace(
            "      status: {enum: Status}\n", "      status: {enum: Status}\n    lemmas: []\n", 1
        ),
        source="<wallet>",
    )
    assert plain.content_hash == empty.content_hash
    assert _wallet("x.balance", deposit=True).content_hash != plain.content_hash


def test_each_argument_of_proof_6_says_the_chains_it_covers() -> None:
    """The values' argument covers chains of any length, the lemmas' chains of up to
    k calls; when the refused call is settled by the first and the requested change by
    the second, the text says each (it once said "none makes the requested change",
    which read as any length)."""
    d = _wallet("x.balance", deposit=False)
    with _unrolled(d, _refusal(d, 100)) as (prover, bmc, call, req):
        k = prover.k
        by_values = prover._refusal_rest(bmc, call, req, "V", "L", "any length")
        by_lemmas = prover._refusal_rest(bmc, call, req, "L1", "L2", f"<= {k} calls")
    assert by_values.ok and by_values.detail == (
        "no chain of any length lets the refused call succeed (V), and no chain of "
        f"<= {k} calls makes the requested change (L)"
    )
    assert by_lemmas.ok and by_lemmas.detail == (
        f"no chain of <= {k} calls lets the refused call succeed (L1), and none makes "
        "the requested change (L2)"
    )
