"""The proofs range over what a real agent knows and may do (issue 9).

Each test builds a small hand-made task on a tiny domain that shows one defect the
proofs must now catch — an enum member used though the user never gave it, a target
named by a write before the agent could recognise it, writes whose order changes the
outcome — and the fair variant that must be accepted (the member stated, the row read,
rows created in another order compared up to renaming their ids).
"""

from __future__ import annotations

from typing import Any

import pytest

from graphgen.domain import Domain
from graphgen.grading import state_diff
from graphgen.load import loads_domain
from graphgen.state import State
from graphgen.tasks.dryrun import replay
from graphgen.tasks.model import Call, Change, Given, Goal, Target, Task
from graphgen.verify.certify import certify
from graphgen.verify.proofs import Prover, prove_task, renamed_states, shortest_solution

WALLET_YAML = """
name: wallet
description: Accounts with a status, looked up by email, that can buy prepaid cards.
policy: Help account holders with their own account.
enums:
  Status: [active, frozen, closed]
entities:
  Account:
    key: {name: account_id, prefix: "A", width: 3}
    display: email
    size: 4
    fields:
      email: {type: str, unique: true, givable: true, vocab: email}
      owner: {type: str, vocab: person_name}
      balance: {type: int, min: 0, max: 100000}
      status: {enum: Status}
  Card:
    key: {name: card_id, prefix: "C", width: 3}
    size: 1
    fields:
      account_id: Account
      amount: {type: int, min: 0, max: 100000}
tools:
  find_account:
    description: The id of the account with an email address.
    params:
      email: {type: Account.email, description: "The email."}
    returns: "[a.account_id for a in Account if a.email == email]"
  find_accounts_by_status:
    description: The ids of the accounts with a status.
    params:
      status: {enum: Status, description: "The status."}
    returns: "[a.account_id for a in Account if a.status == status]"
  get_account:
    description: An account's details.
    params:
      account_id: {type: Account, description: "The account id."}
    returns: "Account[account_id]"
  set_status:
    description: Set an account's status.
    params:
      account_id: {type: Account, description: "The account id."}
      status: {enum: Status, description: "The new status."}
    effects: "Account[account_id].status = status"
  deposit:
    description: Add money to an account.
    params:
      account_id: {type: Account, description: "The account id."}
      amount: {type: int, min: 1, max: 5000, description: "Whole units."}
    effects: "Account[account_id].balance += amount"
  lock:
    description: Freeze an account.
    params:
      account_id: {type: Account, description: "The account id."}
    effects: "Account[account_id].status = 'frozen'"
  buy_card:
    description: Buy a prepaid card from an account's balance.
    params:
      account_id: {type: Account, description: "The account id."}
      amount: {type: int, min: 1, max: 5000, description: "Whole units."}
    requires:
      - {check: "Account[account_id].balance >= amount", message: "insufficient funds"}
    effects:
      - "Account[account_id].balance -= amount"
      - "c = Card.create(account_id=account_id, amount=amount)"
    returns: "c"
  sweep:
    description: Move an account's whole balance onto a new prepaid card.
    params:
      account_id: {type: Account, description: "The account id."}
    requires:
      - {check: "Account[account_id].balance >= 1", message: "nothing to sweep"}
    effects:
      - "c = Card.create(account_id=account_id, amount=Account[account_id].balance)"
      - "Account[account_id].balance = 0"
    returns: "c"
"""

EMAIL = "ann@example.org"


@pytest.fixture(scope="module")
def wallet() -> Domain:
    return loads_domain(WALLET_YAML, source="<wallet>")


def _state() -> State:
    rows = {
        "A001": {"email": EMAIL, "owner": "Ann Lee", "balance": 500, "status": "active"},
        "A002": {"email": "bo@example.org", "owner": "Bo Park", "balance": 80, "status": "active"},
        "A003": {"email": "cy@example.org", "owner": "Cy Diaz", "balance": 0, "status": "closed"},
    }
    return State({"Account": rows, "Card": {}}, {"Account": 4, "Card": 1})


def _task(
    domain: Domain,
    chain: list[Call],
    goal: Goal,
    givens: list[Given],
    targets: list[Target] | None = None,
) -> Task:
    return Task(
        id="wallet-0",
        domain=domain.name,
        domain_hash=domain.content_hash,
        seed=0,
        kind="action",
        instruction="",
        givens=givens,
        initial_state=_state().to_dict(),
        chain=chain,
        goal=goal,
        min_calls=len(chain),
        difficulty=len(chain),
        tools_used=sorted({c.tool for c in chain}),
        targets=targets or [],
    )


def _proofs(domain: Domain, task: Task) -> dict[str, Any]:
    return {p.name: p for p in prove_task(domain, task).proofs}


def _pinned_status(domain: Domain, task: Task) -> str:
    """z3's verdict ("sat"/"unsat") on ``task``'s own chain pinned in the unrolling,
    reaching the goal in exactly that many calls: the encoding's side, apart from the
    dry-run that :meth:`Prover.reference_chain` runs first."""
    p = Prover(domain, task)
    with p.z3:  # the terms built here go with the prover's
        bmc = p.build()
        assert bmc is not None, p.build_error
        pin = bmc.pinned(task.chain)
        assert pin is not None
        n = len(task.chain)
        return p._check([pin, p._goal_lit(n), *bmc.length_is(n)])[0]


EMAIL_GIVEN = Given(sort="field:Account.email", value=EMAIL)
FIND = Call(tool="find_account", args={"email": EMAIL})


# ------------------------------------------------------------------ enum members


def test_enum_member_never_given_is_not_known(wallet: Domain) -> None:
    """ "Please update my account" with the status 'frozen' nowhere in the instruction:
    the schema lists the members, but which one the user wants is not known."""
    chain = [FIND, Call(tool="set_status", args={"account_id": "A001", "status": "frozen"})]
    goal = Goal(
        changes=[
            Change(entity="Account", key="A001", field="status", before="active", after="frozen")
        ]
    )
    task = _task(wallet, chain, goal, [EMAIL_GIVEN])
    ref = _proofs(wallet, task)["reference_chain"]
    # The dry-run's knowledge (graphgen.tasks.dryrun.replay) names the call first.
    assert not ref.ok and ref.detail.startswith("dry-run: call 1 (set_status)")
    assert "status='frozen' is not known at enum:Status" in ref.detail
    # z3 refuses the same chain pinned in the unrolling on its own: its agent knows no
    # member it was not given or shown; once the user states 'frozen' it is accepted.
    assert _pinned_status(wallet, task) == "unsat"
    stated = _task(wallet, chain, goal, [EMAIL_GIVEN, Given(sort="enum:Status", value="frozen")])
    assert _pinned_status(wallet, stated) == "sat"
    # the shortest solution z3 finds freezes the account with the tool made for it, not
    # with a member no output ever showed
    m, witness, _ = shortest_solution(wallet, task)
    assert m == 2 and witness is not None and [c.tool for c in witness] == ["find_account", "lock"]


def test_enum_member_the_user_states_is_known(wallet: Domain) -> None:
    chain = [FIND, Call(tool="set_status", args={"account_id": "A001", "status": "frozen"})]
    goal = Goal(
        changes=[
            Change(entity="Account", key="A001", field="status", before="active", after="frozen")
        ]
    )
    givens = [EMAIL_GIVEN, Given(sort="enum:Status", value="frozen")]
    got = certify(wallet, _task(wallet, chain, goal, givens))
    assert not isinstance(got, str), got
    assert got.min_calls == 2


def test_enum_filter_needs_a_shown_member(wallet: Domain) -> None:
    """A search filtered on an enum ('closed') the user never mentions is a shortcut the
    agent does not have; once an output showed the member (the account's own status),
    filtering on it is fair."""
    find_closed = Call(tool="find_accounts_by_status", args={"status": "closed"})
    goal = Goal(
        changes=[Change(entity="Account", key="A003", field="balance", before=0, after=100)]
    )
    gv = [Given(sort="free:int", value=100)]
    deposit = Call(tool="deposit", args={"account_id": "A003", "amount": 100})
    bad = _proofs(wallet, _task(wallet, [find_closed, deposit], goal, gv))["reference_chain"]
    assert not bad.ok and "'closed'" in bad.detail
    cy = Given(sort="field:Account.email", value="cy@example.org")
    look = [
        Call(tool="find_account", args={"email": "cy@example.org"}),
        Call(tool="get_account", args={"account_id": "A003"}),
        find_closed,
        deposit,
    ]
    proofs = _proofs(wallet, _task(wallet, look, goal, [cy, *gv]))
    assert proofs["reference_chain"].ok, proofs["reference_chain"].detail


# ------------------------------------------------------------------ recognition


OWNER = Target(
    entity="Account",
    key="A001",
    phrase="the account of Ann Lee",
    description="x.owner == 'Ann Lee'",
)
DEPOSIT_GOAL = Goal(
    changes=[Change(entity="Account", key="A001", field="balance", before=500, after=600)]
)
GIVEN_100 = Given(sort="free:int", value=100)
DEPOSIT = Call(tool="deposit", args={"account_id": "A001", "amount": 100})


def test_target_named_before_it_is_recognised_is_rejected(wallet: Domain) -> None:
    """The user describes the account by its owner; knowing an id is not knowing that it
    is that account: no output showed the owner before the deposit names it."""
    task = _task(wallet, [FIND, DEPOSIT], DEPOSIT_GOAL, [EMAIL_GIVEN, GIVEN_100], [OWNER])
    ref = _proofs(wallet, task)["reference_chain"]
    assert not ref.ok and "not recognised" in ref.detail and "owner" in ref.detail


def test_recognised_target_is_accepted_and_min_calls_counts_the_read(wallet: Domain) -> None:
    chain = [FIND, Call(tool="get_account", args={"account_id": "A001"}), DEPOSIT]
    got = certify(wallet, _task(wallet, chain, DEPOSIT_GOAL, [EMAIL_GIVEN, GIVEN_100], [OWNER]))
    assert not isinstance(got, str), got
    # the read that recognises the target is no longer a shortcut to skip
    assert got.min_calls == got.difficulty == 3


def test_search_filtered_on_the_described_value_recognises(wallet: Domain) -> None:
    by_email = Target(
        entity="Account", key="A001", phrase="my account", description=f"x.email == {EMAIL!r}"
    )
    got = certify(
        wallet, _task(wallet, [FIND, DEPOSIT], DEPOSIT_GOAL, [EMAIL_GIVEN, GIVEN_100], [by_email])
    )
    assert not isinstance(got, str), got


# ------------------------------------------------------------------ orders and renaming


def _cards_goal(first: int, second: int) -> Goal:
    return Goal(
        changes=[
            Change(
                entity="Account",
                key="A001",
                field="balance",
                before=500,
                after=500 - first - second,
            ),
            Change(
                entity="Card", key="C001", field="*", after={"account_id": "A001", "amount": first}
            ),
            Change(
                entity="Card", key="C002", field="*", after={"account_id": "A001", "amount": second}
            ),
        ]
    )


def test_rows_created_in_another_order_match_up_to_renaming(wallet: Domain) -> None:
    """Buying the 70 card before the 50 one swaps the new cards' ids: not a failure."""
    gv = [EMAIL_GIVEN, Given(sort="free:int", value=50), Given(sort="free:int", value=70)]
    swapped = [
        FIND,
        Call(tool="buy_card", args={"account_id": "A001", "amount": 70}),
        Call(tool="buy_card", args={"account_id": "A001", "amount": 50}),
    ]
    got = certify(wallet, _task(wallet, swapped, _cards_goal(50, 70), gv))
    assert not isinstance(got, str), got
    assert got.certificate is not None
    proofs = {p.name: p for p in got.certificate.proofs}
    assert "exhaustively" in proofs["write_orders"].detail
    assert "renaming" in proofs["unique_final_state"].detail


def test_renamed_states_swap_new_ids_and_references() -> None:
    initial = _state()
    final = initial.copy()
    final.tables["Card"] = {
        "C001": {"account_id": "A001", "amount": 50},
        "C002": {"account_id": "A001", "amount": 70},
    }
    states = renamed_states(initial, final)
    assert [s.tables["Card"]["C001"]["amount"] for s in states] == [50, 70]


def test_writes_whose_order_matters_are_rejected(wallet: Domain) -> None:
    """Deposit, then sweep the balance onto a card: swept first, the card holds less and
    the deposit stays on the account. Both orders run cleanly and nothing in the chain
    orders them, so the task is unfair unless the instruction says "first ... then"."""
    chain = [FIND, DEPOSIT, Call(tool="sweep", args={"account_id": "A001"})]
    goal = Goal(
        changes=[
            Change(entity="Account", key="A001", field="balance", before=500, after=0),
            Change(
                entity="Card", key="C001", field="*", after={"account_id": "A001", "amount": 600}
            ),
        ]
    )
    proofs = _proofs(wallet, _task(wallet, chain, goal, [EMAIL_GIVEN, GIVEN_100]))
    assert proofs["reference_chain"].ok and proofs["unique_final_state"].ok
    orders = proofs["write_orders"]
    assert not orders.ok and "runs cleanly but fails" in orders.detail
    # Stated in words, only the stated order is the agent's to make.
    ordered = _task(wallet, chain, goal, [EMAIL_GIVEN, GIVEN_100]).model_copy(
        update={"ordered": True}
    )
    stated = _proofs(wallet, ordered)["write_orders"]
    assert stated.ok and "stated write order" in stated.detail


def test_an_order_in_which_a_write_fails_is_rejected_unless_stated(wallet: Domain) -> None:
    """Buy a card of 100, then sweep the rest onto another: swept first, the purchase is
    refused (nothing left) and the user's request cannot be made good. Leaving the
    order open is unfair; stating it is fine."""
    chain = [
        FIND,
        Call(tool="buy_card", args={"account_id": "A001", "amount": 100}),
        Call(tool="sweep", args={"account_id": "A001"}),
    ]
    final = replay(wallet, _state(), [EMAIL_GIVEN, GIVEN_100], chain).final
    goal = Goal(
        changes=[
            Change(entity=e, key=k, field=f, before=a, after=b)
            for e, k, f, a, b in state_diff(_state().to_dict(), final.to_dict())
        ]
    )
    task = _task(wallet, chain, goal, [EMAIL_GIVEN, GIVEN_100])
    loose = _proofs(wallet, task)["write_orders"]
    assert not loose.ok and "call 1 (buy_card) fails" in loose.detail
    stated = _proofs(wallet, task.model_copy(update={"ordered": True}))["write_orders"]
    assert stated.ok, stated.detail


def test_longer_chains_with_unrequested_writes_do_not_reject(wallet: Domain) -> None:
    """The reference reads the account first (3 calls, 2 needed). A 3-call chain could
    also freeze the account — something not asked, failed by the grader for that reason:
    no counterexample. A repeated purchase is not either."""
    chain = [
        FIND,
        Call(tool="get_account", args={"account_id": "A001"}),
        Call(tool="buy_card", args={"account_id": "A001", "amount": 50}),
    ]
    goal = Goal(
        changes=[
            Change(entity="Account", key="A001", field="balance", before=500, after=450),
            Change(
                entity="Card", key="C001", field="*", after={"account_id": "A001", "amount": 50}
            ),
        ]
    )
    gv = [EMAIL_GIVEN, Given(sort="free:int", value=50)]
    got = certify(wallet, _task(wallet, chain, goal, gv))
    assert not isinstance(got, str), got
    assert got.min_calls == 2


def test_two_ways_to_make_a_request_that_end_apart_are_rejected(wallet: Domain) -> None:
    """Only the new card is part of the goal; a card of 50 or of 70 both reach it (the
    user stated both amounts), and they leave different balances: not one final state."""
    gv = [EMAIL_GIVEN, Given(sort="free:int", value=50), Given(sort="free:int", value=70)]
    chain = [FIND, Call(tool="buy_card", args={"account_id": "A001", "amount": 50})]
    goal = Goal(changes=[Change(entity="Card", key="C001", field="account_id", after="A001")])
    p = _proofs(wallet, _task(wallet, chain, goal, gv))["unique_final_state"]
    assert not p.ok and "balance" in p.detail
