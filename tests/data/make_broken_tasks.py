"""Build the corpus of deliberately broken tasks that the acceptance checks must reject.

Run from the repository root (deterministic: the same code gives the same bytes)::

    .venv/bin/python tests/data/make_broken_tasks.py [--out FOLDER]

It writes, next to this file unless ``--out`` names another folder (``OUTPUTS``; a test
builds into a temporary folder and compares the bytes with the committed files):

* ``broken_<domain>.jsonl`` (mock, retail, airline): task-set files (manifest line, then
  tasks) readable by :func:`graphgen.tasks.taskset.read_taskset` and ``graphgen verify``. Every
  task in them is broken in exactly one way;
* ``broken_tasks_expected.json``: task id -> what each entry point must say about it
  (see *Entry points* below), the issue's category, and the corruption in words;
* ``good_<domain>.jsonl``: some of the untouched originals, which must pass.

How a case is made: good tasks are generated with :func:`graphgen.tasks.taskset.generate` on the
built-in domains (fixed seeds, no proofs), one is picked by a predicate, certified with
:func:`graphgen.verify.certify.certify` (so its ``min_calls`` is the proven minimum), and one
targeted corruption is applied. The script asserts, for every case, that the original passes
:func:`graphgen.verify.certify.recheck` and that the corrupted task fails with exactly the expected
reason, so only the intended check fails. A few cases are *natural*: candidates the
generator itself produced that the z3 gate rejects (recorded with their proven minimum);
they have no good twin.

If the generator changes so that a case finds no fitting original (or its corruption no
longer fails for the expected reason), the script exits 1 naming every such case and
writes nothing; widen ``POOLS`` (the generator's output for a seed is a prefix of that
for a larger ``n``, so a longer pool keeps the earlier picks) or adapt the case's pick.

Categories (the issue's words): goal already true; shortcut below the stated minimum;
ambiguous target; two minimal solutions with different end states; refusal that is
possible; wrong reference chain; argument the agent could not know; plus metadata (a
file whose bookkeeping lies: difficulty, domain version).

Entry points (``reason`` and ``gate`` in the expected file):

* ``reason`` -- :func:`graphgen.verify.certify.recheck`, i.e. what ``graphgen verify`` counts: the
  dry-run gate (``dry_run_<reason>``), the metadata checks (``bad_metadata``,
  ``domain_changed``), then the z3 proofs against the task's own claims
  (``proof_<name>``). Every case has one.
* ``gate`` -- the generator's acceptance gate, as :func:`graphgen.tasks.taskset.generate` applies
  it to a candidate: :func:`graphgen.tasks.dryrun.check_candidate` (its reason, unprefixed, as the
  manifest counts it), then :func:`graphgen.verify.certify.certify` (``proof_<name>``).
  ``null`` where the category is not the generator's to judge, because the generator *computes* that
  field instead of trusting it: certify recomputes ``min_calls`` (a claimed minimum
  above or below the true one is simply replaced), the generator sets ``difficulty``
  and ``domain_hash`` itself. For those cases the script asserts the gate accepts.
"""

from __future__ import annotations

import argparse
import copy
import json
import re
import sys
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from graphgen import __version__
from graphgen.domain import Domain
from graphgen.domains import load_builtin
from graphgen.state import State
from graphgen.tasks.dryrun import check_task, policy_problem
from graphgen.tasks.model import Call, Certificate, Change, Given, Goal, Manifest, Target, Task
from graphgen.tasks.taskset import generate, write_taskset
from graphgen.verify.certify import certify, proof_check, recheck
from graphgen.verify.proofs import Prover

HERE = Path(__file__).resolve().parent
EXPECTED = HERE / "broken_tasks_expected.json"
DOMAINS = ("mock", "retail", "airline")
OUTPUTS = (EXPECTED.name, *(f"{kind}_{name}.jsonl" for kind in ("broken", "good")
                            for name in DOMAINS))
# (seed, n, with proofs) of the generated pools the originals are picked from. Without
# proofs the pool also holds candidates the z3 gate rejects (the natural cases); with
# them, the mock pool holds chains longer than their minimum (the planner's detours).
# Retail seeds 13 and 58 each add one rare natural shape the z3 gate rejects: an order
# re-addressed right after it is placed (retail-13-00008), and a return refunded to
# PayPal (retail-58-00014); they come last so that no earlier pick moves. (Seeds 1, 6
# and 73 gave shapes the generator no longer makes; no retail case picks from them now.)
# Since write arguments are drawn through their preconditions, seed 13's re-addressed
# order is accepted; seed 2 gives the rejected one (retail-2-00037).
POOLS: dict[str, list[tuple[int, int, bool]]] = {
    "mock": [(1, 40, True), (2, 40, True), (3, 40, True)],
    "retail": [(0, 30, False), (1, 60, False), (6, 13, False), (73, 50, False),
               (13, 9, False), (58, 15, False), (76, 22, False), (2, 38, False)],
    "airline": [(0, 20, False)],
}

GOAL_TRUE = "goal already true"
SHORTCUT = "shortcut below the stated minimum"
AMBIGUOUS = "ambiguous target"
TWO_SOLUTIONS = "two minimal solutions with different end states"
REFUSAL = "refusal that is possible"
WRONG_CHAIN = "wrong reference chain"
UNKNOWABLE = "argument the agent could not know"
METADATA = "metadata"

Corrupt = Callable[[Domain, Task], Task]
Pred = Callable[[Task], bool]


@dataclass(frozen=True)
class Case:
    """One broken task: where its original comes from and what is done to it."""

    domain: str
    category: str
    what: str  # the corruption, in words
    reason: str  # verify.certify.recheck (graphgen verify)
    gate: str | None  # the generator's gate; None = not its to judge (it accepts)
    pick: Pred  # on the generated (uncertified) candidate
    corrupt: Corrupt
    post: Pred = lambda t: True  # on the certified original
    skip: int = 0  # take the skip-th fitting original, for variety
    natural: bool = False  # a generator candidate the z3 gate rejects, as produced
    good: bool = False  # also save the original in good_<domain>.jsonl


# ------------------------------------------------------------------ helpers


def tools(t: Task) -> list[str]:
    return [c.tool for c in t.chain]


def arg(t: Task, name: str) -> Any:
    """The first value of argument ``name`` in the chain (or the refused call)."""
    for c in [*t.chain, *([t.refused_call] if t.refused_call else [])]:
        if name in c.args:
            return c.args[name]
    raise KeyError(name)


def given(t: Task, sort: str) -> Any:
    return next(g.value for g in t.givens if g.sort == sort)


def rows(t: Task, entity: str) -> dict[str, dict[str, Any]]:
    table: dict[str, dict[str, Any]] = t.initial_state["tables"][entity]
    return table


def edit(t: Task, **update: Any) -> Task:
    return t.model_copy(update=update, deep=True)


def edit_state(t: Task, fn: Callable[[dict[str, Any]], None]) -> Task:
    st = copy.deepcopy(t.initial_state)
    fn(st["tables"])
    return edit(t, initial_state=st)


def set_chain(t: Task, i: int, call: Call) -> Task:
    chain = [c.model_copy(deep=True) for c in t.chain]
    chain[i] = call
    return edit(t, chain=chain)


def keeps(t: Task) -> list[Change]:
    """Goal entries that pin a written cell to the value it already had."""
    return [c for c in t.goal.changes if c.field != "*" and c.before == c.after]


# ------------------------------------------------------------------ mock cases


def _mock_goal_says_unchanged(d: Domain, t: Task) -> Task:
    return edit(t, goal=Goal(changes=[c.model_copy(update={"after": c.before})
                                      for c in t.goal.changes]))


def _no_answer(d: Domain, t: Task) -> Task:
    return edit(t, goal=Goal(changes=[], answer=[]))


def _answer_is_the_email(d: Domain, t: Task) -> Task:
    return edit(t, goal=Goal(answer=[given(t, "field:Account.email")]))


def _claim_chain_length_as_min(d: Domain, t: Task) -> Task:
    return edit(t, min_calls=len(t.chain))


def _detour(d: Domain, t: Task) -> Task:
    read = Call(tool="get_account", args={"account_id": arg(t, "account_id")})
    chain = [t.chain[0], read, *t.chain[1:]]
    return edit(t, chain=chain, min_calls=len(chain), difficulty=len(chain),
                tools_used=sorted({c.tool for c in chain}))


def _claim_min_one_less(d: Domain, t: Task) -> Task:
    return edit(t, min_calls=t.min_calls - 1)


def _claim_min_above_chain(d: Domain, t: Task) -> Task:
    return edit(t, min_calls=len(t.chain) + 1)


def _difficulty_off(d: Domain, t: Task) -> Task:
    return edit(t, difficulty=t.difficulty + 2)


def _vague_account_target(d: Domain, t: Task) -> Task:
    acc = arg(t, "account_id")
    status = rows(t, "Account")[acc]["status"]
    return edit(t, targets=[Target(entity="Account", key=acc, phrase=f"my {status} account",
                                   description=f"x.status == {status!r}")])


def _target_names_other_account(d: Domain, t: Task) -> Task:
    acc = arg(t, "account_id")
    other = next(r["email"] for k, r in sorted(rows(t, "Account").items()) if k != acc)
    return edit(t, targets=[Target(entity="Account", key=acc, phrase="my account",
                                   description=f"x.email == {other!r}")])


def _fund_account(d: Domain, t: Task) -> Task:
    acc, amount = arg(t, "account_id"), arg(t, "amount")
    return edit_state(t, lambda tb: tb["Account"][acc].update(balance=amount))


def _lock_before_paying(d: Domain, t: Task) -> Task:
    chain = list(t.chain)
    return edit(t, chain=[chain[0], chain[2], chain[1]])


def _read_instead_of_write(d: Domain, t: Task) -> Task:
    return set_chain(t, len(t.chain) - 1,
                     Call(tool="get_account", args={"account_id": arg(t, "account_id")}))


def _misnamed_tool(d: Domain, t: Task) -> Task:
    return set_chain(t, len(t.chain) - 1, t.chain[-1].model_copy(update={"tool": "lock"}))


def _information_locks(d: Domain, t: Task) -> Task:
    return set_chain(t, 1, Call(tool="lock_account",
                                args={"account_id": arg(t, "account_id")}))


def _lookup_twice(d: Domain, t: Task) -> Task:
    return set_chain(t, 1, t.chain[0].model_copy(deep=True))


def _goal_off_by_one(d: Domain, t: Task) -> Task:
    changes = [c.model_copy(update={"after": c.after + 1}) if c.field == "balance" else c
               for c in t.goal.changes]
    return edit(t, goal=Goal(changes=changes))


def _id_without_lookup(d: Domain, t: Task) -> Task:
    return set_chain(t, 0, Call(tool="get_account", args={"account_id": arg(t, "account_id")}))


def _unstated_amount(d: Domain, t: Task) -> Task:
    amount = arg(t, "amount")
    call = t.chain[-1].model_copy(update={"args": {**t.chain[-1].args, "amount": amount + 1}})
    changes = [c.model_copy(update={"after": c.after + 1}) for c in t.goal.changes]
    return edit(set_chain(t, len(t.chain) - 1, call), goal=Goal(changes=changes))


def _amount_not_in_text(d: Domain, t: Task) -> Task:
    amount = arg(t, "amount")
    text, n = re.subn(rf"(?<![\w-]){amount}(?![\w-])", "some money", t.instruction)
    assert n == 1, t.instruction
    return edit(t, instruction=text)


def _account_id_in_text(d: Domain, t: Task) -> Task:
    return edit(t, instruction=t.instruction + f" (That is account {arg(t, 'account_id')}.)")


def _other_domain_version(d: Domain, t: Task) -> Task:
    return edit(t, domain_hash=t.domain_hash[::-1])


def _chain_is(names: list[str]) -> Pred:
    return lambda t: tools(t) == names


FIND = "find_account"

MOCK_CASES = [
    Case("mock", GOAL_TRUE, "the goal records the account as already in the state asked for "
         "(after = before)", "dry_run_goal_already_true", "goal_already_true",
         _chain_is([FIND, "lock_account"]), _mock_goal_says_unchanged, good=True),
    Case("mock", GOAL_TRUE, "an information task with nothing to answer",
         "dry_run_goal_already_true", "goal_already_true",
         lambda t: t.kind == "information", _no_answer, good=True),
    Case("mock", GOAL_TRUE, "the answer asked for is the email the user gave",
         "dry_run_answer_in_instruction", "answer_in_instruction",
         lambda t: t.kind == "information", _answer_is_the_email, skip=1),
    Case("mock", SHORTCUT, "min_calls claims the reference chain's length; a shorter chain "
         "(without the redundant read) reaches the goal", "proof_min_calls", None,
         lambda t: t.kind == "action" and "get_account" in tools(t),
         _claim_chain_length_as_min, post=lambda t: t.min_calls < len(t.chain), good=True),
    Case("mock", SHORTCUT, "the reference chain takes a detour (an extra read) and "
         "min_calls and difficulty trust it", "proof_min_calls", None,
         _chain_is([FIND, "deposit"]), _detour, skip=5),
    Case("mock", SHORTCUT, "min_calls claims more than the reference chain itself takes",
         "bad_metadata", None, _chain_is([FIND, "deposit"]), _claim_min_above_chain),
    Case("mock", SHORTCUT, "min_calls claims one call less than the proven minimum "
         "(no chain that short exists)", "proof_min_calls", None,
         _chain_is([FIND, "pay"]), _claim_min_one_less),
    Case("mock", METADATA, "difficulty does not match the reference chain's length",
         "bad_metadata", None, _chain_is([FIND, "lock_account"]), _difficulty_off, skip=1),
    Case("mock", METADATA, "made from another version of the domain (domain_hash differs)",
         "domain_changed", None, _chain_is([FIND, "deposit"]), _other_domain_version,
         skip=1),
    Case("mock", AMBIGUOUS, "the target is named by its status, which several accounts "
         "share", "dry_run_ambiguous_target", "ambiguous_target",
         _chain_is([FIND, "deposit"]), _vague_account_target, good=True),
    Case("mock", AMBIGUOUS, "the target's description picks out another account",
         "dry_run_ambiguous_target", "ambiguous_target",
         _chain_is([FIND, "lock_account"]), _target_names_other_account, skip=2),
    # (The mock builds no refusal any more: 'active' is the rule a careful agent quotes
    # and 'locked' or the balance the reason, so a hedge naming every value passes each
    # one. The refusal cases live in retail and airline.)
    # (An "insufficient funds" refusal is no longer a good original: proof 6 rejects it,
    # since a deposit first lets the payment succeed. tests/test_broken_tasks.py checks
    # that rejection directly.)
    Case("mock", WRONG_CHAIN, "the chain locks the account before paying from it",
         "dry_run_call_failed", "call_failed", _chain_is([FIND, "pay", "lock_account"]),
         _lock_before_paying, good=True),
    Case("mock", WRONG_CHAIN, "the chain reads the account instead of depositing",
         "dry_run_goal_not_reached", "goal_not_reached", _chain_is([FIND, "deposit"]),
         _read_instead_of_write, skip=2),
    Case("mock", WRONG_CHAIN, "the chain's last call names a tool the domain lacks",
         "dry_run_bad_chain", "bad_chain", _chain_is([FIND, "lock_account"]), _misnamed_tool,
         skip=3),
    Case("mock", WRONG_CHAIN, "an information task whose chain locks the account",
         "dry_run_state_changed", "state_changed",
         lambda t: t.kind == "information"
         and rows(t, "Account")[arg(t, "account_id")]["status"] == "active",
         _information_locks, skip=2),
    Case("mock", WRONG_CHAIN, "the chain never shows the value the answer needs",
         "dry_run_answer_not_revealed", "answer_not_revealed",
         lambda t: t.kind == "information", _lookup_twice, skip=3),
    Case("mock", WRONG_CHAIN, "the goal expects one unit more than the chain pays",
         "dry_run_goal_not_reached", "goal_not_reached", _chain_is([FIND, "pay"]),
         _goal_off_by_one, skip=1),
    Case("mock", UNKNOWABLE, "the chain uses the account id without looking it up",
         "dry_run_unknown_argument", "unknown_argument", _chain_is([FIND, "deposit"]),
         _id_without_lookup, skip=3),
    Case("mock", UNKNOWABLE, "the chain (and goal) deposit an amount the user never stated",
         "dry_run_unknown_argument", "unknown_argument", _chain_is([FIND, "deposit"]),
         _unstated_amount, skip=4),
    Case("mock", UNKNOWABLE, "the instruction no longer states the amount",
         "dry_run_given_not_stated", "given_not_stated", _chain_is([FIND, "pay"]),
         _amount_not_in_text, skip=2),
    Case("mock", UNKNOWABLE, "the instruction spells out the internal account id",
         "dry_run_id_leak", "id_leak", _chain_is([FIND, "lock_account"]),
         _account_id_in_text, skip=4),
]

# ------------------------------------------------------------------ retail cases


def _order_target(t: Task) -> Target | None:
    return next((x for x in t.targets if x.entity == "Order" and "placed_on" in x.description),
                None)


def _drop_date_atom(d: Domain, t: Task) -> Task:
    tg = _order_target(t)
    assert tg is not None
    loose = tg.model_copy(update={"description": re.sub(r" and x\.placed_on == '[^']*'", "",
                                                        tg.description)})
    return edit(t, targets=[loose if x is tg else x for x in t.targets])


def _same_day_order(d: Domain, t: Task) -> Task:
    tg = _order_target(t)
    assert tg is not None
    orders = rows(t, "Order")
    mine = orders[tg.key]
    other = next(k for k, r in sorted(orders.items())
                 if k != tg.key and r["user_id"] == mine["user_id"])
    return edit_state(t, lambda tb: tb["Order"][other].update(placed_on=mine["placed_on"]))


def _keep_city_then_drop_it(d: Domain, t: Task) -> Task:
    """The user moves within the same city; the goal forgets to pin the city."""
    call = t.chain[-1]
    user, city = call.args["user_id"], call.args["city"]
    t = edit_state(t, lambda tb: tb["User"][user].update(city=city))
    pinned = [c.model_copy(update={"before": city}) if c.field == "city" else c
              for c in t.goal.changes]
    # With the city pinned the moved-within-the-city task is good: only the drop breaks it.
    assert recheck(d, edit(t, goal=Goal(changes=pinned)))[0] == ""
    return edit(t, goal=Goal(changes=[c for c in pinned if c.field != "city"]))


def _set_min_to_proven(d: Domain, t: Task) -> Task:
    m, _, why = Prover(d, t).shortest(len(t.chain))
    assert m is not None, why
    return edit(t, min_calls=m)


def _order_still_pending(d: Domain, t: Task) -> Task:
    assert t.refused_call is not None
    order = t.refused_call.args["order_id"]
    return edit_state(t, lambda tb: tb["Order"][order].update(status="pending"))


def _cancel_twice(d: Domain, t: Task) -> Task:
    i = tools(t).index("get_order_details")
    return set_chain(t, i, t.chain[-1].model_copy(deep=True))


def _orders_never_listed(d: Domain, t: Task) -> Task:
    return set_chain(t, 1, Call(tool="get_user_details", args={"user_id": arg(t, "user_id")}))


def _order_id_in_text(d: Domain, t: Task) -> Task:
    return edit(t, instruction=t.instruction + f" It is order {arg(t, 'order_id')}.")


def _stock_flag_given(d: Domain, t: Task) -> Task:
    """Ask whether the item is in stock, after saying so (a flag is said "yes"/"no")."""
    item = t.chain[-1].args["item_id"]
    flag = rows(t, "Item")[item]["available"]
    return edit(t, goal=Goal(answer=[flag]),
                givens=[*t.givens, Given(sort="free:bool", value=flag)],
                instruction=t.instruction + f" The shop page says in stock: "
                f"{'yes' if flag else 'no'}. Is it really?")


R_FIND = "find_user_id_by_email"

RETAIL_CASES = [
    # (The old shape, a cancellation whose order details read is not needed, is gone:
    # the agent now recognises the order only by reading it.)
    Case("retail", SHORTCUT, "min_calls claims the reference chain's length; the profile "
         "read before the address change is not needed (the user states the whole new "
         "address)", "proof_min_calls", None,
         _chain_is([R_FIND, "get_user_details", "modify_user_address"]),
         _claim_chain_length_as_min, post=lambda t: t.min_calls < len(t.chain), good=True),
    Case("retail", AMBIGUOUS, "the order is named only as 'my order' though the user has "
         "several", "dry_run_ambiguous_target", "ambiguous_target",
         lambda t: t.kind == "action" and _order_target(t) is not None
         and tools(t)[-1] == "cancel_pending_order", _drop_date_atom),
    Case("retail", AMBIGUOUS, "another order of the same user was placed on the same day",
         "dry_run_ambiguous_target", "ambiguous_target",
         lambda t: t.kind == "action" and _order_target(t) is not None
         and tools(t)[-1] == "cancel_pending_order", _same_day_order, skip=1),
    Case("retail", TWO_SOLUTIONS, "natural: a refund to the user's PayPal leaves no trace "
         "in the state (only gift cards hold a balance), so another run no longer than the "
         "reference chain reaches the goal and ends elsewhere: refunding to the user's gift "
         "card instead", "proof_unique_final_state",
         "proof_unique_final_state",
         lambda t: t.kind == "action" and tools(t)[-1] == "return_delivered_order"
         and len(keeps(t)) == 1
         and rows(t, "PaymentMethod")[t.chain[-1].args["payment_method_id"]]["kind"] == "paypal"
         and any(
             r["user_id"] == rows(t, "Order")[arg(t, "order_id")]["user_id"]
             and r["kind"] == "gift_card" for r in rows(t, "PaymentMethod").values()),
         _set_min_to_proven, natural=True),
    Case("retail", TWO_SOLUTIONS, "the user moves within their city and the goal does not "
         "pin the city: any known string fits it", "proof_unique_final_state",
         "proof_unique_final_state", _chain_is([R_FIND, "modify_user_address"]),
         _keep_city_then_drop_it),
    Case("retail", TWO_SOLUTIONS, "natural: order an item, then re-address the new order; "
         "changing the default address first gives the same order (and a changed "
         "profile) in as few calls", "proof_unique_final_state", "proof_unique_final_state",
         lambda t: "place_order" in tools(t) and tools(t)[-1] == "modify_pending_order_address",
         _set_min_to_proven, natural=True),
    # (A gift card refused for an order it cannot cover no longer makes a case: the
    # policy rule about gift cards names every payment kind, so no value is left that a
    # careful agent would never say, and such refusals are not built (a hedge passes).)
    Case("retail", GOAL_TRUE, "a refusal with nothing to report (a no-op passes)",
         "dry_run_goal_already_true", "goal_already_true",
         lambda t: t.kind == "refusal", _no_answer, good=True),
    Case("retail", REFUSAL, "refuses to re-address an order that is in fact still pending",
         "dry_run_refusal_succeeds", "refusal_succeeds",
         lambda t: t.refused_call is not None
         and t.refused_call.tool == "modify_pending_order_address"
         and all("status" not in x.description for x in t.targets), _order_still_pending),
    Case("retail", WRONG_CHAIN, "the chain cancels the order twice",
         "dry_run_call_failed", "call_failed",
         lambda t: tools(t)[-2:] == ["get_order_details", "cancel_pending_order"],
         _cancel_twice, skip=1),
    Case("retail", UNKNOWABLE, "the chain opens an order it never listed",
         "dry_run_unknown_argument", "unknown_argument",
         lambda t: tools(t)[:3] == [R_FIND, "list_user_orders", "get_order_details"],
         _orders_never_listed),
    Case("retail", UNKNOWABLE, "the instruction spells out the internal order id",
         "dry_run_id_leak", "id_leak",
         lambda t: t.kind == "action" and tools(t)[-1] == "modify_pending_order_address"
         and "place_order" not in tools(t), _order_id_in_text),
    Case("retail", GOAL_TRUE, "asks whether an item is in stock after stating it "
         "('in stock: no'): the answer is already given, as a word rather than the value",
         "dry_run_answer_in_instruction", "answer_in_instruction",
         lambda t: t.kind == "information" and tools(t)[-1] == "get_item_details",
         _stock_flag_given),
]

# ------------------------------------------------------------------ airline cases

A_FIND = "find_user_by_email"


def _reservation_target(t: Task) -> Target | None:
    return next((x for x in t.targets if x.entity == "Reservation"), None)


def _drop_flight_atom(d: Domain, t: Task) -> Task:
    tg = _reservation_target(t)
    assert tg is not None
    loose = tg.model_copy(update={"description": re.sub(r" and x\.flight_id == '[^']*'", "",
                                                        tg.description)})
    return edit(t, targets=[loose if x is tg else x for x in t.targets])


def _reservations_never_listed(d: Domain, t: Task) -> Task:
    return set_chain(t, 1, Call(tool="get_user_details", args={"user_id": arg(t, "user_id")}))


def _email_not_in_text(d: Domain, t: Task) -> Task:
    email = given(t, "field:User.email")
    assert email in t.instruction
    return edit(t, instruction=t.instruction.replace(email, "the address you have on file"))


def _cancel_instead_of_reading(d: Domain, t: Task) -> Task:
    i = tools(t).index("get_flight_details")
    return set_chain(t, i, t.chain[-1].model_copy(deep=True))


def _rebook(res: str, flight: str, paid: int) -> Callable[[dict[str, Any]], None]:
    """Make reservation ``res`` a booked, uninsured trip on ``flight`` that cost ``paid``."""
    return lambda tb: tb["Reservation"][res].update(
        status="booked", flight_id=flight, insurance=False, amount_paid=paid)


def _cancellable_booking(d: Domain, t: Task) -> Task:
    """Make one of the user's reservations a booked, uninsured trip on a scheduled flight,
    paid enough that cancelling it leaves travel credit for the certificate asked for."""
    assert t.refused_call is not None
    user, amount = t.refused_call.args["user_id"], t.refused_call.args["amount"]
    res = next(k for k, r in sorted(rows(t, "Reservation").items()) if r["user_id"] == user)
    paid = max(rows(t, "Reservation")[res]["amount_paid"], amount + 100)
    # The first scheduled flight that takes the booking without breaking the domain's
    # invariants (cabin and hold capacity, one booking per flight), so that only the
    # refusal is wrong, not the state.
    for flight in (k for k, r in sorted(rows(t, "Flight").items()) if r["status"] == "scheduled"):
        moved = edit_state(t, _rebook(res, flight, paid))
        if not policy_problem(d, State.from_dict(moved.initial_state)):
            return moved
    raise ValueError(f"no scheduled flight takes reservation {res} within the invariants")


AIRLINE_CASES = [
    Case("airline", SHORTCUT, "min_calls claims 2 for a flight-status question the public "
         "status lookup answers in 1", "proof_min_calls", None,
         lambda t: tools(t) == ["find_flight", "get_flight_status"],
         _claim_chain_length_as_min, post=lambda t: t.min_calls < len(t.chain), good=True),
    Case("airline", AMBIGUOUS, "the reservation is named only as 'my reservation' though "
         "the user has several", "dry_run_ambiguous_target", "ambiguous_target",
         lambda t: t.kind == "action" and _reservation_target(t) is not None
         and sum(r["user_id"] == arg(t, "user_id")
                 for r in rows(t, "Reservation").values()) > 1, _drop_flight_atom),
    Case("airline", UNKNOWABLE, "the chain opens a reservation it never listed",
         "dry_run_unknown_argument", "unknown_argument",
         lambda t: tools(t)[:3] == [A_FIND, "list_user_reservations",
                                    "get_reservation_details"], _reservations_never_listed),
    Case("airline", UNKNOWABLE, "the instruction no longer states the email the chain "
         "starts from", "dry_run_given_not_stated", "given_not_stated",
         lambda t: t.kind == "action" and tools(t)[0] == A_FIND, _email_not_in_text, skip=1),
    Case("airline", WRONG_CHAIN, "the chain cancels the reservation before its final "
         "cancellation", "dry_run_call_failed", "call_failed",
         lambda t: tools(t)[-2:] == ["get_flight_details", "cancel_reservation"],
         _cancel_instead_of_reading),
    # (Refusing a membership tier the user already has no longer makes this case: its
    # only true reason is the tier the request itself states, which the gate now rejects
    # as answer_in_instruction before any proof runs.)
    Case("airline", REFUSAL, "refuses a travel certificate for want of travel credit, but "
         "cancelling the user's own booked trip first gives enough credit",
         "proof_refusal_impossible", "proof_refusal_impossible",
         lambda t: t.kind == "refusal" and t.refused_call is not None
         and t.refused_call.tool == "issue_travel_certificate"
         and any(r["user_id"] == t.refused_call.args["user_id"]
                 for r in rows(t, "Reservation").values()),
         _cancellable_booking, good=True),
]

CASES = [*MOCK_CASES, *RETAIL_CASES, *AIRLINE_CASES]


# ------------------------------------------------------------------ building


@cache
def domain_of(name: str) -> Domain:
    return load_builtin(name)


@cache
def pool(name: str) -> tuple[Task, ...]:
    out: list[Task] = []
    for seed, n, prove in POOLS[name]:
        out += generate(domain_of(name), n, seed, task_checks=[proof_check] if prove else ()
                        ).tasks
    return tuple(out)


@cache
def certified(name: str, task_id: str) -> Task | str:
    t = next(x for x in pool(name) if x.id == task_id)
    got = certify(domain_of(name), t)
    return got if isinstance(got, str) else _tidy(got)


def _tidy(t: Task) -> Task:
    """Certificates carry timings; zero them so the files are the same bytes each run."""
    if t.certificate is None:
        return t
    proofs = [p.model_copy(update={"ms": 0.0, "detail": re.sub(
        r" \(includes \d+ ms building the encoding\)", "", p.detail)})
        for p in t.certificate.proofs]
    cert = Certificate(k=t.certificate.k, proofs=proofs, z3_version=t.certificate.z3_version,
                       checker_version=t.certificate.checker_version)
    return t.model_copy(update={"certificate": cert})


class CaseError(Exception):
    """A case the current generator cannot give: no fitting original, or the corruption
    does not fail with (only) the expected reason."""


def original(case: Case) -> Task:
    """The skip-th generated task that fits ``case`` (certified unless natural)."""
    seen = 0
    for t in pool(case.domain):
        try:
            fits = case.pick(t)
        except (KeyError, StopIteration):
            fits = False
        if not fits:
            continue
        if case.natural:
            if certify(domain_of(case.domain), t) != case.gate:
                continue
            got: Task | str = t
        else:
            got = certified(case.domain, t.id)
            if isinstance(got, str) or not case.post(got):
                continue
        if seen == case.skip:
            assert isinstance(got, Task)
            return got
        seen += 1
    raise CaseError(f"only {seen} of the {case.skip + 1} fitting {case.domain} tasks it needs "
                    f"in POOLS[{case.domain!r}]: search more seeds or adapt its pick")


def generator_gate(domain: Domain, t: Task) -> str:
    """What the generator says about ``t`` as a candidate ("" = accepted)."""
    res = check_task(domain, t)
    if not res.ok:
        return res.reason
    got = certify(domain, t)
    return got if isinstance(got, str) else ""


def manifest(domain: Domain, tasks: list[Task], note: str) -> Manifest:
    return Manifest(
        generator_version=__version__, domain=domain.name, domain_hash=domain.content_hash,
        seed=0, options={"corpus": note, "script": "tests/data/make_broken_tasks.py"},
        accepted=len(tasks), by_kind=dict(sorted(Counter(t.kind for t in tasks).items())),
        by_length=dict(sorted(Counter(str(t.difficulty) for t in tasks).items(),
                              key=lambda kv: int(kv[0]))),
        rejected={})


def make(case: Case, tid: str) -> tuple[Task, Task]:
    """The original of ``case`` and its corruption (id ``tid``), checked: the original
    passes, the corruption fails for exactly the case's reason, at both entry points."""
    d = domain_of(case.domain)
    orig = original(case)
    if not case.natural:
        why, _ = recheck(d, orig)
        if why != "":
            raise CaseError(f"its original {orig.id} fails recheck: {why}")
    try:
        bad = case.corrupt(d, orig).model_copy(update={"id": tid})
    except (AssertionError, KeyError, StopIteration, ValueError) as exc:
        raise CaseError(f"the corruption does not apply to {orig.id}: {exc!r}") from exc
    why, _ = recheck(d, bad)
    if why != case.reason:
        raise CaseError(f"recheck says {why!r} (from {orig.id}), not {case.reason!r}")
    gate = generator_gate(d, bad)
    if gate != (case.gate or ""):
        raise CaseError(f"the gate says {gate!r} (from {orig.id}), not {case.gate or ''!r}")
    return orig, bad


def build(out: Path = HERE) -> dict[str, dict[str, Any]]:
    """Make every case, check it, write the files into ``out``; return the expected table.

    Writes nothing unless every case is made: a case the generator no longer gives
    raises :class:`CaseError` naming each such case, rather than leaving a smaller corpus.
    """
    expected: dict[str, dict[str, Any]] = {}
    broken: dict[str, list[Task]] = {n: [] for n in DOMAINS}
    good: dict[str, dict[str, Task]] = {n: {} for n in DOMAINS}
    failed: list[str] = []
    numbered: Counter[str] = Counter()
    for case in CASES:
        tid = f"broken-{case.domain}-{numbered[case.domain]:02d}"
        numbered[case.domain] += 1
        try:
            orig, bad = make(case, tid)
        except CaseError as exc:
            failed.append(f"{tid} ({case.category}: {case.what}): {exc}")
            print(f"{tid:18} FAILED: {exc}", flush=True)
            continue
        broken[case.domain].append(bad)
        if case.good:
            good[case.domain][orig.id] = orig
        expected[tid] = {"domain": case.domain, "category": case.category,
                         "reason": case.reason, "gate": case.gate,
                         "source": f"{orig.id} (seed {orig.seed})"
                         + (", as generated" if case.natural else ""),
                         "corruption": case.what}
        print(f"{tid:18} {case.category:48} {case.reason}", flush=True)
    if failed:
        raise CaseError(f"{len(failed)} of {len(CASES)} cases cannot be built; nothing "
                        "written:\n  " + "\n  ".join(failed))
    out.mkdir(parents=True, exist_ok=True)
    for name in DOMAINS:
        d = domain_of(name)
        write_taskset(out / f"broken_{name}.jsonl",
                      manifest(d, broken[name], "deliberately broken tasks"), broken[name])
        kept = [good[name][k] for k in sorted(good[name])]
        write_taskset(out / f"good_{name}.jsonl",
                      manifest(d, kept, "the untouched originals of some broken tasks"), kept)
    (out / EXPECTED.name).write_text(json.dumps(expected, indent=1, sort_keys=True,
                                                ensure_ascii=False) + "\n", encoding="utf-8")
    return expected


def main(argv: list[str] | None = None) -> int:
    """Command line: ``make_broken_tasks.py [--out FOLDER]``; exit 1 naming the cases
    that cannot be built."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--out", type=Path, default=HERE,
                        help="folder to write the corpus into (default: this script's)")
    args = parser.parse_args(argv)
    try:
        table = build(args.out)
    except CaseError as exc:
        print(f"make_broken_tasks: {exc}", file=sys.stderr)
        return 1
    print(f"{len(table)} broken tasks; by category:",
          dict(Counter(v["category"] for v in table.values())))
    return 0


if __name__ == "__main__":
    sys.exit(main())
