"""Answers are graded as a person means them (issue 9, defects 3 and 4).

* A refusal with several true reasons accepts any of them, and never one the request
  itself states ("pay with my gift card" is not refused *because* it is a gift card).
* What a careful agent says around its reason never fails: the policy rule it quotes
  ("only a pending order can be cancelled"), the user's own words, other rows it was
  shown ("your other gift card has $20"), denials ("it hasn't been cancelled").
* An information question is asked openly: "Has my flight been cancelled?" is not a
  question whose answer is the word "scheduled".

The careful answers below are built from each task's truth, independently of how the
generator derives its goal: every field whose value alone makes a failing precondition
fail (changing it would make the check pass) is a reason, said in natural words.
"""

from __future__ import annotations

import re
from dataclasses import replace
from functools import cache
from typing import Any

import pytest

from graphgen import ir
from graphgen.domain import Domain, Intent, ToolDef
from graphgen.domains import load_builtin
from graphgen.errors import ToolError
from graphgen.grading import grade, mention_pattern
from graphgen.interp import call_tool, check_args, evaluate
from graphgen.state import State
from graphgen.stategen import generate_state
from graphgen.tasks.dryrun import replay
from graphgen.tasks.expand import (
    _aggregate_reasons,
    _blocking_values,
    _open_questions,
    _uncitable,
    principal_entity,
)
from graphgen.tasks.model import Task
from graphgen.tasks.plan import Knowledge
from graphgen.tasks.shortcuts import (
    chain_rows,
    contradicting,
    earlier_values,
    echo_answer,
    hedge_answer,
    policy_rules,
    reason_words,
    rule_words,
    said,
)
from graphgen.tasks.taskset import generate
from graphgen.types import BOOL, INT, EnumT, RefT

RETAIL = load_builtin("retail")
AIRLINE = load_builtin("airline")
DOMAINS = {"retail": RETAIL, "airline": AIRLINE}
EMPTY: dict[str, Any] = {"tables": {}, "counters": {}}

# What a careful agent quotes when it refuses, verbatim from each domain's policy.
_PENDING = (
    "Only a pending order can be cancelled or have its shipping address, payment method or "
    "items changed. A processed order can no longer be changed or cancelled."
)
_DELIVERED = (
    "Only a delivered order can be returned or have an item exchanged, and only once: after "
    "a return or exchange the order is closed."
)
_GIFT = (
    "A gift card can never go below a zero balance: a charge it cannot cover (a new order, "
    "an order's total moved onto it, a price difference) is not possible with that card."
)
_OPEN = (
    "Bookings, cabin changes, extra passengers and extra bags are only possible on a "
    "scheduled or delayed flight."
)
QUOTES: dict[str, list[str]] = {
    "cancel_pending_order": [_PENDING],
    "modify_pending_order_address": [_PENDING],
    "modify_pending_order_payment": [_PENDING, _GIFT],
    "modify_pending_order_item": [_PENDING, _GIFT],
    "place_order": [_GIFT],
    "return_delivered_order": [
        _DELIVERED,
        "A return refunds the order total either to the original payment method or to one "
        "of the customer's own gift cards, as the customer chooses.",
    ],
    "exchange_delivered_order_item": [_DELIVERED, _GIFT],
    "add_gift_card": [
        "Gift cards are bought with one of the customer's credit cards or PayPal accounts, "
        "never with another gift card, and a customer holds at most three gift cards."
    ],
    "cancel_reservation": [
        "Only booked reservations on flights that have not departed can be cancelled."
    ],
    "change_flight": [
        "A booking can be moved only from a flight that has not departed to another flight "
        "on the same route (same origin and destination) that is open for booking and has "
        "room in the same cabin and in the hold.",
        _OPEN,
    ],
    "change_cabin": [_OPEN],
    "add_passengers": [_OPEN, "Cabin changes and added passengers (at most 9 per booking)."],
    "update_baggage": [
        _OPEN,
        "Free checked bags per passenger: regular 1, silver 2, gold 3. Each bag beyond the "
        "allowance costs 50.",
    ],
    "remove_insurance": [_OPEN],
    "book_reservation": [_OPEN],
    "update_membership": [
        "Silver needs at least 2 flown reservations, gold at least 4; moving down to "
        "regular is always allowed."
    ],
    "issue_travel_certificate": [
        "Travel credit can be turned into a travel certificate (a payment method) of any "
        "amount up to the credit; a traveller holds at most three certificates with value "
        "left."
    ],
}
# Suggestions a helpful agent adds, by the status that blocks.
SUGGESTIONS = {
    "delivered": "If you no longer want it, it can be returned or exchanged instead.",
    "pending": "It can still be cancelled, though.",
    "scheduled": "It is scheduled to depart as planned.",
}
_MONTHS = "January February March April May June July August September October November December"


def _spoken(v: Any, turn: int = 0) -> str:
    """``v`` as a person writes it (the form varies with ``turn``)."""
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, int):
        return (f"${v}", f"{v}.00", f"${v:,}.00")[turn % 3]
    m = re.fullmatch(r"(\d{4})-(\d{2})-(\d{2})", str(v))
    if m:
        return f"{_MONTHS.split()[int(m[2]) - 1]} {int(m[3])}, {m[1]}"
    return str(v).replace("_", " ")


def _truth(e: ir.Expr, st: State, env: dict[str, Any], d: Domain) -> bool | None:
    try:
        return bool(evaluate(e, st, env, d))
    except (ToolError, KeyError):
        return None


def _alternatives(st: State, node: ir.FieldOf, v: Any) -> list[Any]:
    if isinstance(node.ty, EnumT):
        return [m for m in node.ty.values if m != v]
    if node.ty == BOOL:
        return [not v]
    if node.ty == INT:
        return [v - 1, v + 1, 0, 10**7, -(10**7)]
    if isinstance(node.ty, RefT):
        return [k for k in sorted(st.tables[node.ty.entity]) if k != v]
    return sorted({r[node.field] for r in st.tables[node.entity].values()} - {v}, key=str)


def _conjuncts(e: ir.Expr) -> list[ir.Expr]:
    """The conditions an ``and`` needs, each of which must hold."""
    if isinstance(e, ir.BoolOp) and e.op == "and":
        return [c for v in e.values for c in _conjuncts(v)]
    return [e]


def true_reasons(d: Domain, st: State, tool: ToolDef, args: dict[str, Any]) -> list[Any]:
    """(entity, key, field, value to cite) for every single-row field that, changed alone,
    makes a failing condition hold: a precondition, or one of the conditions a failing
    ``and`` needs ("flies from DFW, not BOI"); ids are cited by what they name."""
    env = check_args(tool, args, st)
    out: list[Any] = []
    for chk in tool.requires:
        if _truth(chk.expr, st, env, d) is not False:
            continue
        for cond in _conjuncts(chk.expr):
            if _truth(cond, st, env, d) is not False:
                continue
            for node in ir.walk(cond):
                if not isinstance(node, ir.FieldOf):
                    continue
                try:
                    key = evaluate(node.key, st, env, d)
                    v = evaluate(node, st, env, d)
                except (ToolError, KeyError):
                    continue  # a comprehension's row: not one fact
                if isinstance(v, list | dict) or v is None:
                    continue
                for alt in _alternatives(st, node, v):
                    s2 = st.copy()
                    s2.set_field(node.entity, key, node.field, alt)
                    if _truth(cond, s2, check_args(tool, args, s2), d):
                        cite = v
                        if isinstance(node.ty, RefT):
                            disp = d.entities[node.ty.entity].display
                            if disp is None:
                                break
                            cite = st.tables[node.ty.entity][v][disp]
                        if (node.entity, key, node.field, cite) not in out:
                            out.append((node.entity, key, node.field, cite))
                        break
    return out


def _others(d: Domain, st: State, ent: str, key: Any, fname: str) -> list[Any]:
    """The same field of the owner's other rows of ``ent`` (truthful about another row)."""
    p = principal_entity(d)
    row = st.tables[ent][key]
    owners = [
        f
        for f, fd in d.entities[ent].fields.items()
        if isinstance(fd.ty, RefT) and fd.ty.entity == p
    ]
    return [
        r[fname]
        for k, r in sorted(st.tables[ent].items())
        if k != key and owners and all(r[o] == row[o] for o in owners) and r[fname] != row[fname]
    ]


def careful_refusals(d: Domain, t: Task) -> list[tuple[Any, str]]:
    """(reason, answer) for every true reason of a refusal, in several careful phrasings."""
    assert t.refused_call is not None
    st = State.from_dict(t.initial_state)
    tool = d.tools[t.refused_call.tool]
    out: list[tuple[Any, str]] = []
    reasons = [(e, k, f, v) for e, k, f, v in true_reasons(d, st, tool, t.refused_call.args)]
    counted = [
        ("count", None, "number", v)
        for group in _aggregate_reasons(d, st, tool, t.refused_call.args)
        for v in group
    ]
    for turn, (ent, key, fname, v) in enumerate([*reasons, *counted]):
        if said(t.instruction, v):
            continue  # the user said it: not a reason (checked by the generator)
        what, val = fname.replace("_", " "), _spoken(v, turn)
        fd = d.entities[ent].fields.get(fname) if ent in d.entities else None
        others = [m for m in fd.ty.values if m != v] if fd and isinstance(fd.ty, EnumT) else []
        texts = [f"I'm sorry, I can't do that: the {what} is {val}."]
        texts += [
            f'Unfortunately not. Our policy says: "{q}" Here it is {val}.'
            for q in QUOTES.get(tool.name, [])
        ]
        if others:
            denied = " and ".join(f"it hasn't been {m.replace('_', ' ')}" for m in others)
            texts.append(f"It is {val}, so I can't: {denied}.")
            texts.append(f"It is {val}; it is not {_spoken(others[-1])}. No change was made.")
        if key is not None:
            for o in _others(d, st, ent, key, fname)[:2]:
                texts.append(
                    f"The {what} is {val}. Your other one has {_spoken(o, turn + 1)}, "
                    "which does not help either."
                )
        texts.append(f'You asked: "{t.instruction}" I can\'t, because the {what} is {val}.')
        # what the reason means, in the policy's words: the rule that names it
        if isinstance(v, str):
            texts += [
                f'It is {val}. Our policy says: "{rule}"'
                for rule in policy_rules(d)
                if re.search(mention_pattern(v), rule)
            ]
        if str(v) in SUGGESTIONS:
            texts.append(f"It is {val}, so no. {SUGGESTIONS[str(v)]}")
        texts.append(" ".join(texts))  # all of it at once
        out += [((ent, fname, v), a) for a in texts]
    return out


def careful_information(d: Domain, t: Task) -> list[tuple[Any, str]]:
    """Truthful answers: the value, the whole row it belongs to, denials of other members."""
    st = State.from_dict(t.initial_state)
    out: list[tuple[Any, str]] = []
    for v in t.goal.answer:
        texts = [f"It is {_spoken(v)}.", f'You asked: "{t.instruction}" It is {_spoken(v, 1)}.']
        for ent, key in chain_rows(d, t.chain):
            row = st.tables.get(ent, {}).get(key)
            if row is None or v not in row.values():
                continue
            fields = "; ".join(
                f"{f.replace('_', ' ')} {_spoken(x, i)}"
                for i, (f, x) in enumerate(row.items())
                if not isinstance(x, list) and not (isinstance(x, str) and x == key)
            )
            texts.append(f"It is {_spoken(v)}. The whole record: {fields}.")
            for f, fd in d.entities[ent].fields.items():
                if isinstance(fd.ty, EnumT) and row[f] == v:
                    others = [m for m in fd.ty.values if m != v]
                    texts.append(f"It is {_spoken(v)}, not {', not '.join(map(_spoken, others))}.")
        out += [(v, a) for a in texts]
    return out


@cache
def _tasks(name: str, seed: int) -> tuple[Task, ...]:
    return tuple(generate(DOMAINS[name], 100, seed).tasks)


def _failures(t: Task, answers: list[tuple[Any, str]]) -> list[tuple[str, Any, str, str]]:
    g, s0 = t.goal.model_dump(), t.initial_state
    out = []
    for why, a in answers:
        res = grade(s0, s0, g, a)
        if not res["success"]:
            bad = "; ".join(f"{i['check']} {i['detail']}" for i in res["items"] if not i["ok"])
            out.append((t.id, why, a, bad))
    return out


@pytest.mark.parametrize(("name", "seed"), [("retail", 11), ("airline", 12)])
def test_every_true_reason_said_carefully_passes(name: str, seed: int) -> None:
    """Defect 3: each true reason (every field that alone makes a failing precondition
    fail), said with policy quotes, denials, the user's words and other rows, passes;
    echoing the request and naming every value seen do not."""
    d = DOMAINS[name]
    refusals = [t for t in _tasks(name, seed) if t.kind == "refusal"]
    assert len(refusals) >= 5
    failures, cited = [], 0
    for t in refusals:
        answers = careful_refusals(d, t)
        cited += len(answers)
        assert answers, (t.id, "no true reason a careful agent could give")
        failures += _failures(t, answers)
        s0, g = t.initial_state, t.goal.model_dump()
        run = replay(d, State.from_dict(s0), t.givens, t.chain, call_tool)
        assert not grade(s0, s0, g, echo_answer(t.instruction))["success"], t.id
        assert not grade(s0, s0, g, hedge_answer(d, run.results))["success"], t.id
    assert cited > 5 * len(refusals)
    assert not failures, failures[:5]


@pytest.mark.parametrize(("name", "seed"), [("retail", 11), ("airline", 12)])
def test_careful_information_answers_pass(name: str, seed: int) -> None:
    """A truthful answer passes however much of the record it restates."""
    d = DOMAINS[name]
    infos = [t for t in _tasks(name, seed) if t.kind == "information"]
    assert len(infos) >= 5
    failures = [f for t in infos for f in _failures(t, careful_information(d, t))]
    assert not failures, failures[:5]


# ----------------------------------------------------------------- small tasks, by hand


def _delivered_order(st: State) -> tuple[str, dict[str, Any]]:
    return next((k, r) for k, r in sorted(st.tables["Order"].items()) if r["status"] == "delivered")


def test_the_quotes_are_the_policies_words() -> None:
    """Every rule the careful agent quotes is in its domain's policy, word for word (so
    a policy edit that leaves a quote behind fails here, not in a blind check)."""
    for tool, quotes in QUOTES.items():
        domain = next(d for d in DOMAINS.values() if tool in d.tools)
        policy = " ".join(domain.policy.split())
        for q in quotes:
            assert q.rstrip(".") in policy, (tool, q)  # a quote may end a clause early


def test_a_quoted_rule_is_no_false_claim() -> None:
    """The reverted attempt failed "only a pending order can be cancelled" with `states
    'pending'` on a delivered order's cancel refusal: a rule's words are not claims."""
    st = generate_state(RETAIL, 3)
    _, order = _delivered_order(st)
    user = ("User", order["user_id"])
    text = "Hi, my email is x@example.com. Please cancel my order placed on 2026-01-02."
    wrong = contradicting(
        RETAIL, st, Knowledge(), ["delivered"], text, user, [RETAIL.tools["cancel_pending_order"]]
    )
    assert not {"pending", "processed", "cancelled", "delivered"} & set(wrong)
    goal = {"changes": [], "answer_any": [["delivered"]], "answer_not": wrong}
    for careful in (
        "Your order was delivered, and only a pending order can be cancelled.",
        "It has been delivered. A processed order can no longer be changed or cancelled either.",
        "It's delivered, so it can't be cancelled; if you like, it can be returned instead.",
        f"{_PENDING} Yours is delivered.",
    ):
        assert grade(EMPTY, EMPTY, goal, careful)["success"], (careful, wrong)
    if wrong:  # a hedge naming every status fails
        hedge = "pending, processed, delivered, cancelled, returned, exchanged"
        assert not grade(EMPTY, EMPTY, goal, hedge)["success"]


def test_the_reverted_attempt_would_fail_the_quote() -> None:
    """The old answer_not (every other status) fails the quote; the grader is not what
    changed, the goal is."""
    old = {"changes": [], "answer_any": [["delivered"]], "answer_not": ["pending", "processed"]}
    assert not grade(EMPTY, EMPTY, old, "It was delivered; only a pending order can be cancelled.")[
        "success"
    ]


def test_rule_words_of_a_refused_tool() -> None:
    assert {"pending", "processed", "cancelled"} <= rule_words(
        RETAIL, RETAIL.tools["cancel_pending_order"]
    )
    ret = rule_words(RETAIL, RETAIL.tools["return_delivered_order"])
    assert {"delivered", "returned", "exchanged"} <= ret and "pending" not in ret
    assert {"booked", "departed", "cancelled"} <= rule_words(
        AIRLINE, AIRLINE.tools["cancel_reservation"]
    )
    assert {"regular", "silver", "gold", "flown"} <= rule_words(
        AIRLINE, AIRLINE.tools["update_membership"]
    )


def test_a_reason_is_explained_with_the_rule_it_comes_from() -> None:
    """A blind agent refused to cancel an exchanged order with "an order that
    has been delivered and then exchanged is closed, and it can no longer be cancelled,
    returned or exchanged again" and was failed for stating 'returned'. The rule about
    exchanged orders names 'returned', so a refusal whose reason is 'exchanged' never
    counts it as a contradiction, and that answer passes; naming a payment kind no row
    shown has still fails."""
    assert {"returned", "delivered"} <= reason_words(RETAIL, ["exchanged"])
    assert reason_words(RETAIL, [5, True]) == set()
    refusals = [
        t
        for t in _tasks("retail", 13)
        if t.kind == "refusal" and ["exchanged"] in t.goal.answer_any
    ]
    assert refusals
    for t in refusals:
        assert "returned" not in t.goal.answer_not, t.id
        s0, g = t.initial_state, t.goal.model_dump()
        said_so = (
            "I'm sorry, but I can't do that: the order has the status exchanged. An order "
            "that has been delivered and then exchanged is closed, and it can no longer be "
            "cancelled, returned or exchanged again. No changes have been made."
        )
        assert grade(s0, s0, g, said_so)["success"], (t.id, grade(s0, s0, g, said_so))
        for wrong in t.goal.answer_not:
            hedge = f"{said_so} It was paid by {wrong.replace('_', ' ')}."
            assert not grade(s0, s0, g, hedge)["success"], (t.id, wrong)


def test_a_row_was_what_it_passed_through() -> None:
    """A returned order was delivered: saying so is true, so it never contradicts."""
    assert earlier_values(RETAIL)["returned"] == {"delivered"}
    assert earlier_values(AIRLINE)["cancelled"] == {"booked"}


def test_the_hedge_names_each_value_once_in_first_seen_order() -> None:
    """The hedging answer lists every enum member, then each scalar the reads showed, each
    once, where it was first seen; a true flag reads "yes"; nulls say nothing."""
    from graphgen.tasks.shortcuts import domain_enum_members

    members = [str(m) for m in domain_enum_members(RETAIL)]
    results = [{"id": "o1", "status": "pending", "gift": True}, ["o1", None, 3, "x", 3]]
    words = hedge_answer(RETAIL, results).split(", ")
    assert words[: len(members)] == list(dict.fromkeys(members))
    assert words[len(members) :] == ["o1", "yes", "3", "x"]
    assert len(words) == len(set(words))
    # A 10,000-row listing: linear, so this returns at once (a list search took seconds).
    many = [{"id": f"p{i}", "price": i % 7} for i in range(10_000)]
    listed = hedge_answer(RETAIL, [many]).split(", ")[len(members) :]
    assert listed[:4] == ["p0", "0", "p1", "1"] and len(listed) == 10_000 + 7


def test_another_rows_value_is_no_contradiction() -> None:
    """ "Your other gift card has $20" is true of another row: numbers are never listed
    as contradicting, and neither is a status another of the user's rows has."""
    st = generate_state(RETAIL, 3)
    _, order = _delivered_order(st)
    user = order["user_id"]
    statuses = {r["status"] for r in st.tables["Order"].values() if r["user_id"] == user}
    wrong = contradicting(RETAIL, st, Knowledge(), ["delivered"], "", ("User", user), [])
    assert all(isinstance(w, str) for w in wrong)
    assert not statuses & set(wrong)


def test_a_failed_disjunction_cites_every_field_that_makes_it_fail() -> None:
    """``kind != 'gift_card' or balance >= price`` fails on a $50 gift card and a $324
    item: the balance and the price are reasons, not only the (stated) kind."""
    st = generate_state(RETAIL, 3)
    pm_key, pm = next(
        (k, r) for k, r in sorted(st.tables["PaymentMethod"].items()) if r["kind"] == "gift_card"
    )
    item_key = next(k for k, r in sorted(st.tables["Item"].items()) if r["available"])
    st.set_field("PaymentMethod", pm_key, "balance", 50)
    st.set_field("Item", item_key, "price", 324)
    args = {
        "user_id": pm["user_id"],
        "item_id": item_key,
        "payment_method_id": pm_key,
        "placed_on": "2026-05-20",
    }
    facts = _blocking_values(RETAIL, st, RETAIL.tools["place_order"], args)
    assert {(e, f, v) for e, _, f, v in facts} == {
        ("PaymentMethod", "kind", "gift_card"),
        ("PaymentMethod", "balance", 50),
        ("Item", "price", 324),
    }
    # The same reasons the counterfactual finds: each alone makes the check fail.
    assert {
        (e, f, v) for e, _, f, v in true_reasons(RETAIL, st, RETAIL.tools["place_order"], args)
    } == {(e, f, v) for e, _, f, v in facts}
    # The request names the gift card, so that is no reason; the others are.
    request = f"I'd like to buy {item_key} with my gift card."
    assert [v for *_, v in facts if not said(request, v)] == [50, 324]
    goal = {"changes": [], "answer_any": [[50], [324]], "answer_not": []}
    for text in (
        "Sorry: your gift card only has $50 left.",
        "That item costs $324.00, more than the card holds.",
    ):
        assert grade(EMPTY, EMPTY, goal, text)["success"], text
    assert not grade(EMPTY, EMPTY, goal, "Sorry, you can't pay with a gift card.")["success"]


def test_a_flag_reason_is_not_generated() -> None:
    """ "That variant is out of stock" cites no value the grader could match, so a refusal
    with that reason is not made at all."""
    st = generate_state(RETAIL, 3)
    pm_key, pm = next(
        (k, r) for k, r in sorted(st.tables["PaymentMethod"].items()) if r["kind"] == "credit_card"
    )
    item_key = next(k for k, r in sorted(st.tables["Item"].items()) if not r["available"])
    args = {
        "user_id": pm["user_id"],
        "item_id": item_key,
        "payment_method_id": pm_key,
        "placed_on": "2026-05-20",
    }
    assert _uncitable(RETAIL, st, RETAIL.tools["place_order"], args)
    st.set_field("Item", item_key, "available", True)
    assert not _uncitable(RETAIL, st, RETAIL.tools["place_order"], args)


def test_seats_left_is_a_reason() -> None:
    """Adding passengers to a nearly full cabin: "only 1 seat is left" (what the seat
    tool shows) is a true reason, as is the number of seats already booked."""
    st = generate_state(AIRLINE, 5)
    rid, res = next(
        (k, r)
        for k, r in sorted(st.tables["Reservation"].items())
        if r["status"] == "booked" and r["passengers"] <= 7
    )
    st.set_field("Flight", res["flight_id"], "status", "scheduled")
    flight = st.tables["Flight"][res["flight_id"]]
    seats = f"{res['cabin']}_capacity"
    probe = {"flight_id": res["flight_id"], "cabin": res["cabin"]}
    booked = flight[seats] - call_tool(AIRLINE, st.copy(), "count_available_seats", probe)
    flight[seats] = booked + 1
    assert call_tool(AIRLINE, st.copy(), "count_available_seats", probe) == 1
    args = {"user_id": res["user_id"], "reservation_id": rid, "count": 2}
    groups = _aggregate_reasons(AIRLINE, st, AIRLINE.tools["add_passengers"], args)
    assert any({1, booked} <= set(g) for g in groups), (booked, groups)


def test_said_recognises_reasons_in_any_form() -> None:
    assert said("Pay with my gift card, please.", "gift_card")
    assert said("My flight was cancelled, rebook me.", "cancelled")
    assert said("It cost $1,324.00.", 1324)
    assert not said("It cost $1,325.", 1324)


def test_yes_no_templates_are_not_asked() -> None:
    """Defect 4: 'Has my flight been cancelled?' expected 'scheduled'; the question is now
    asked openly, so the status word is the answer a person gives."""
    # The built-in templates are open questions now, kept as they are; the yes/no ones
    # they replaced are filtered out, and a one-field read left without an open template
    # is asked as "What is the <field> of ...?".
    for name in ("get_flight_status", "check_flight_status"):
        assert _open_questions(AIRLINE.tools[name]) == AIRLINE.tools[name]
    by_id = replace(
        AIRLINE.tools["get_flight_status"],
        intents=(Intent("Is my flight on time?"), Intent("Has my flight been cancelled?")),
    )
    asked = _open_questions(by_id)
    assert asked is not None
    assert [i.text for i in asked.intents] == ["What is the status of {flight_id}?"]
    open_ = Intent("What's the status of flight {flight_number}?")
    by_number = replace(
        AIRLINE.tools["check_flight_status"],
        intents=(open_, Intent("Is flight {flight_number} on time?")),
    )
    asked = _open_questions(by_number)
    assert asked is not None
    assert asked.intents == (open_,)
    for t in _tasks("airline", 12):
        assert not re.search(r"\b(?:Has|Is) (?:my )?flight\b[^?]*\?", t.instruction), t.id


def test_a_yes_no_reply_is_graded_as_meant() -> None:
    """A status answer said the way people answer "has it been cancelled?" passes; the
    status it denies is not claimed, and a bare yes or a hedge is not enough."""
    goal = {"changes": [], "answer": ["scheduled"], "answer_not": ["cancelled", "departed"]}
    for text in (
        "No, it hasn't been cancelled: it is scheduled.",
        "It's scheduled. It is not cancelled and it has not departed yet.",
        "No - it isn't cancelled or departed; it's scheduled to depart at 10:05.",
    ):
        assert grade(EMPTY, EMPTY, goal, text)["success"], text
    delayed = {"changes": [], "answer": ["delayed"], "answer_not": ["scheduled", "cancelled"]}
    for text in (
        "It's delayed; it was scheduled for 10:05.",
        "Delayed - originally scheduled for May 20, 2026, and not cancelled.",
    ):
        assert grade(EMPTY, EMPTY, delayed, text)["success"], text
    for text in ("It is scheduled.", "delayed, scheduled, cancelled"):
        assert not grade(EMPTY, EMPTY, delayed, text)["success"], text
    for text in ("Yes.", "No.", "scheduled, delayed, cancelled, departed", "It was cancelled."):
        assert not grade(EMPTY, EMPTY, goal, text)["success"], text
