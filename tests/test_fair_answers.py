"""Answers are graded as a person means them (the "Fairness" defects).

* A refusal with several true reasons accepts any of them, and never one the request
  itself states ("pay with my gift card" is not refused *because* it is a gift card).
* An information question is asked openly: "Has my flight been cancelled?" is not a
  question whose answer is the word "scheduled".
"""

from __future__ import annotations

from graphgen.domains import load_builtin
from graphgen.grading import grade
from graphgen.stategen import generate_state
from graphgen.tasks.expand import _blocking_values, _open_questions
from graphgen.tasks.shortcuts import said

RETAIL = load_builtin("retail")
AIRLINE = load_builtin("airline")
EMPTY = {"tables": {}, "counters": {}}


def test_a_failed_disjunction_cites_every_field_that_makes_it_fail() -> None:
    """``kind != 'gift_card' or balance >= price`` fails on a $50 gift card and a $324
    item: the balance and the price are reasons, not only the (stated) kind."""
    st = generate_state(RETAIL, 3)
    pm_key, pm = next(
        (k, r) for k, r in sorted(st.tables["PaymentMethod"].items()) if r["kind"] == "gift_card"
    )
    item_key = next(k for k, r in sorted(st.tables["Item"].items()) if r["available"])
    pm["balance"], st.tables["Item"][item_key]["price"] = 50, 324
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
    # The request names the gift card, so that is no reason; the others are.
    request = f"I'd like to buy {item_key} with my gift card."
    assert [v for *_, v in facts if not said(request, v)] == [50, 324]
    goal = {"changes": [], "answer_any": [[50], [324]], "answer_not": []}
    for said in (
        "Sorry: your gift card only has $50 left.",
        "That item costs $324.00, more than the card holds.",
    ):
        assert grade(EMPTY, EMPTY, goal, said)["success"], said
    assert not grade(EMPTY, EMPTY, goal, "Sorry, you can't pay with a gift card.")["success"]


def test_reasons_the_instruction_states_are_recognised_in_any_form() -> None:
    assert said("Pay with my gift card, please.", "gift_card")
    assert said("My flight was cancelled, rebook me.", "cancelled")
    assert said("It cost $1,324.00.", 1324)
    assert not said("It cost $1,325.", 1324)


def test_yes_no_templates_are_not_asked() -> None:
    """'Has my flight been cancelled?' expected 'scheduled'; the question is now asked
    openly, so the status word is the answer a person gives."""
    asked = _open_questions(AIRLINE.tools["get_flight_status"])
    assert asked is not None
    assert asked.intents == ("What is the status of {flight_id}?",)
    by_number = _open_questions(AIRLINE.tools["check_flight_status"])
    assert by_number is not None
    assert by_number.intents == ("What's the status of flight {flight_number}?",)
