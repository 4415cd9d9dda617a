"""The values a row's enum field can ever hold (graphgen.verify.reachable) and proof 6
settled by them: terminal statuses stay terminal, a status a tool can set back is not
claimed impossible, a computed write is any value, and every refusal the values decide
is one z3 decides the same way."""

from __future__ import annotations

from functools import cache

import pytest

from graphgen.domain import Domain
from graphgen.domains import load_builtin
from graphgen.load import loads_domain
from graphgen.state import State
from graphgen.tasks.model import Call, Given, Goal, Task
from graphgen.tasks.taskset import generate
from graphgen.verify.certify import certify
from graphgen.verify.proofs import Engine, Prover, prove_task
from graphgen.verify.reachable import Reach
from tests.test_fair_proofs import WALLET_YAML
from tests.test_fair_proofs import _state as wallet_state
from tests.test_fair_proofs import _task as fair_task


@cache
def _banking() -> tuple[Domain, list[Task]]:
    d = load_builtin("banking")
    return d, generate(d, 18, 0).tasks  # the 18th is its first unfreeze_card refusal


def _card(st: State, status: str) -> str:
    return str(next(k for k, c in sorted(st.tables["Card"].items()) if c["status"] == status))


def test_guarded_writes_reach_what_their_checks_allow() -> None:
    """Banking's cards: an active card can be frozen (and back) or cancelled; a
    cancelled card stays cancelled, since every write of a card's status needs it
    active, frozen or not cancelled."""
    d, tasks = _banking()
    st = State.from_dict(tasks[0].initial_state)
    reach = Reach(d, st)
    active, cancelled = _card(st, "active"), _card(st, "cancelled")
    assert reach.values("Card", active, "status") == frozenset({"active", "frozen", "cancelled"})
    assert reach.values("Card", cancelled, "status") == frozenset({"cancelled"})
    assert reach.values("Card", active, "limit") is None  # not an enum: not followed
    unfreeze = d.tools["unfreeze_card"]
    customer = st.tables["Card"][cancelled]["customer_id"]
    why = reach.never(unfreeze, {"customer_id": customer, "card_id": cancelled})
    assert why is not None and "can only ever be 'cancelled'" in why
    assert "`Card[card_id].status == 'frozen'`" in why
    # an active card is not frozen now, but freezing it first makes the call valid
    assert reach.never(unfreeze, {"customer_id": customer, "card_id": active}) is None
    assert reach.unreachable("Card", cancelled, "status", "active") is not None
    assert reach.unreachable("Card", active, "status", "frozen") is None


def test_a_bool_field_checked_alone_stays_what_no_call_sets() -> None:
    """Retail's ``Item.available``, checked bare (``Item[item_id].available``) by
    ``place_order``, is written by no tool: an out-of-stock item stays out of stock, so
    ordering it never succeeds; an in-stock one is not claimed."""
    d = load_builtin("retail")
    st = State.from_dict(generate(d, 1, 0).tasks[0].initial_state)
    items = sorted(st.tables["Item"].items())
    out = next(k for k, i in items if not i["available"])
    stocked = next(k for k, i in items if i["available"])
    reach = Reach(d, st)
    assert reach.values("Item", out, "available") == frozenset({False})
    args = {"user_id": "U0001", "payment_method_id": "PM0001", "placed_on": "2026-12-01"}
    why = reach.never(d.tools["place_order"], {**args, "item_id": out})
    assert why is not None and why.startswith("`Item[item_id].available` never holds")
    assert reach.never(d.tools["place_order"], {**args, "item_id": stocked}) is None


def test_a_computed_write_is_any_value_only_where_its_checks_can_hold() -> None:
    """Retail writes an order's street from a parameter, only on a pending order: a
    pending order's street may become anything, a delivered one's stays its own."""
    d = load_builtin("retail")
    st = State.from_dict(generate(d, 1, 0).tasks[0].initial_state)
    orders = sorted(st.tables["Order"].items())
    pending = next(k for k, o in orders if o["status"] == "pending")
    delivered = next(k for k, o in orders if o["status"] == "delivered")
    reach = Reach(d, st)
    assert reach.values("Order", pending, "street") is None
    street = st.tables["Order"][delivered]["street"]
    assert reach.values("Order", delivered, "street") == frozenset({street})
    assert reach.unreachable("Order", delivered, "street", "1 Elsewhere Road") is not None


def test_a_status_set_from_a_parameter_is_any_value() -> None:
    """The wallet's ``set_status`` writes the status it is given: a closed account may
    become anything, so nothing about it is claimed."""
    d = loads_domain(WALLET_YAML)
    reach = Reach(d, wallet_state())
    assert reach.values("Account", "A003", "status") is None
    assert reach.unreachable("Account", "A003", "status", "active") is None


def _proof_6(domain: Domain, task: Task, engine: Engine = "auto") -> tuple[bool, str]:
    proofs = prove_task(domain, task, engine=engine).proofs
    got = next(p for p in proofs if p.name == "refusal_impossible")
    return got.ok, got.detail


def test_a_refusal_the_values_settle_is_one_z3_settles() -> None:
    """Unfreezing a cancelled card: proven impossible without a solver under ``auto``
    (no encoding is built, so proof 1 is the dry-run's: there is no encoding for z3 to
    agree with) and by z3 alone under ``z3``, where proof 1 checks the encoding against
    the dry-run."""
    d, tasks = _banking()
    task = next(t for t in tasks if t.refused_call and t.refused_call.tool == "unfreeze_card")
    ok, detail = _proof_6(d, task)
    assert ok and "by the values calls can give a row" in detail, detail
    prover = Prover(d, task)
    by_name = {r.name: r for r in prover.all()}
    assert prover.bmc is None
    first = by_name["reference_chain"]
    assert first.ok and "proof 6 by the values" in first.detail and "z3" not in first.detail
    ok_z3, detail_z3 = _proof_6(d, task, "z3")
    assert ok_z3 and "values" not in detail_z3
    z3_first = next(r for r in prove_task(d, task, engine="z3").proofs)
    assert z3_first.ok and "z3 agrees" in z3_first.detail


# The wallet with a way back: a frozen account can be unfrozen, and only an active one
# renamed (``set_status``, which writes any status, is left out).
UNFREEZE_YAML = WALLET_YAML.replace(
    """  set_status:
    description: Set an account's status.
    params:
      account_id: {type: Account, description: "The account id."}
      status: {enum: Status, description: "The new status."}
    effects: "Account[account_id].status = status"
""",
    """  unfreeze:
    description: Unfreeze a frozen account.
    params:
      account_id: {type: Account, description: "The account id."}
    requires:
      - {check: "Account[account_id].status == 'frozen'", message: "not frozen"}
    effects: "Account[account_id].status = 'active'"
  rename:
    description: Change the owner's name on an active account.
    params:
      account_id: {type: Account, description: "The account id."}
      owner: {type: Account.owner, description: "The new name."}
    requires:
      - {check: "Account[account_id].status == 'active'", message: "not active"}
    effects: "Account[account_id].owner = owner"
""",
)


def test_a_refusal_a_chain_makes_possible_is_still_rejected() -> None:
    """Renaming a closed account: the check fails now, but locking it (any account)
    and unfreezing it makes it active. The values claim nothing, and proof 6 fails
    under both engines, naming the chain."""
    d = loads_domain(UNFREEZE_YAML, source="<unfreeze>")
    assert "set_status" not in d.tools
    reach = Reach(d, wallet_state())
    assert reach.values("Account", "A003", "status") == frozenset({"closed", "frozen", "active"})
    call = Call(tool="rename", args={"account_id": "A003", "owner": "Cy Diaz-Lee"})
    assert reach.never(d.tools["rename"], call.args) is None
    # a lookup first, as a refusal's chain has: proof 6 then covers chains of 3 calls
    task = fair_task(
        d,
        [Call(tool="get_account", args={"account_id": "A003"})],
        Goal(),
        [
            Given(sort="key:Account", value="A003"),
            Given(sort="field:Account.owner", value="Cy Diaz-Lee"),
        ],
    )
    refusal = task.model_copy(update={"kind": "refusal", "refused_call": call, "min_calls": 0})
    engines: tuple[Engine, ...] = ("auto", "z3")
    for engine in engines:
        ok, detail = _proof_6(d, refusal, engine)
        assert not ok and "lock" in detail and "unfreeze" in detail, (engine, detail)


def _agree(sets: tuple[tuple[str, int], ...]) -> tuple[int, int]:
    """Asserts that every refusal of the first ``n`` candidates of each built-in that z3
    alone decides gets the same verdict from ``auto`` (the values and lemmas first); how
    many the values decided wholly, and how many in part (the refused call; the
    requested change z3's)."""
    decided = partly = 0
    for name, n in sets:
        d = load_builtin(name)
        for t in generate(d, n, 0).tasks:
            if t.kind != "refusal":
                continue
            auto, z3_only = certify(d, t), certify(d, t, engine="z3")
            if z3_only == "timeout":
                # z3 alone gave up within its limit, so there is no verdict to compare
                # with: auto may decide it (by a lemma, or by a witness the interpreter
                # replays), as retail-0-00010 and -00102 show
                continue
            assert isinstance(auto, Task) == isinstance(z3_only, Task), t.id
            if isinstance(auto, Task) and isinstance(z3_only, Task):
                assert auto.certificate is not None and z3_only.certificate is not None
                mine = [(p.name, p.status) for p in auto.certificate.proofs]
                assert mine == [(p.name, p.status) for p in z3_only.certificate.proofs], t.id
                detail = auto.certificate.proofs[-1].detail
                decided += "by the values" in detail
                partly += "never succeeds" in detail
            else:
                assert auto == z3_only, t.id
    return decided, partly


def test_values_and_z3_agree_on_every_refusal_of_five_domains() -> None:
    """The first candidates of five built-ins; the values decide some refusals wholly
    and some in part."""
    sets = (("retail", 40), ("airline", 40), ("banking", 20), ("helpdesk", 20), ("delivery", 40))
    decided, partly = _agree(sets)
    assert decided >= 5 and partly >= 3, (decided, partly)


@pytest.mark.slow
def test_values_and_z3_agree_on_a_hundred_refusals_of_seven_domains() -> None:
    """101 refusals from seven built-ins (about a minute)."""
    others = ("banking", "helpdesk", "delivery", "clinic", "hotel")
    sets = (("retail", 250), ("airline", 120), *((name, 80) for name in others))
    decided, partly = _agree(sets)
    assert decided >= 40 and decided + partly >= 60, (decided, partly)
