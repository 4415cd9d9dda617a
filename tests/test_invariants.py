"""Domain invariants (the policy's rules about states) and one customer per task.

Invariants are declared per entity (``invariants:``), enforced by the state generator,
checked by the dry-run gate on the initial state and after the reference chain
(``policy_violation``), and reported by ``graphgen check`` as
located errors when they do not type-check. The gate also rejects a task whose givens
identify two customers (``several_customers``) or whose chain or goal touches rows of a
customer the instruction does not identify (``unidentified_owner``).

The hand-built tasks run on ``TINY``: users, their cards, and orders paid with a card.
Each defect has a twin that passes the gate, so the rejection is due to the defect.
"""

from __future__ import annotations

from typing import Any

import pytest

from graphgen.domains import load_builtin
from graphgen.errors import DomainError, StateGenError
from graphgen.load import loads_domain
from graphgen.state import State
from graphgen.stategen import generate_state
from graphgen.staterules import invariant_violations
from graphgen.tasks.dryrun import REASONS, GateResult, check_candidate
from graphgen.tasks.identity import identified_principals, principal_entity
from graphgen.tasks.model import Call, Change, Given, Goal

TINY_YAML = """
name: tiny
policy: Identify the customer by email; act only on their own orders and cards.
entities:
  User:
    key: {name: user_id, prefix: U, width: 2}
    display: email
    size: 6
    fields:
      email: {type: str, unique: true, givable: true, vocab: email}
  Card:
    key: {name: card_id, prefix: C, width: 2}
    size: 3
    fields:
      user_id: User
      label: {type: str, givable: true, vocab: word}
  Order:
    key: {name: order_id, prefix: O, width: 2}
    display: number
    size: 8
    fields:
      user_id: User
      card_id: Card
      number: {type: str, unique: true, givable: true, vocab: word}
      note: {type: str, vocab: word}
    invariants:
      - name: paid_by_owner
        policy: Pay only with the customer's own cards.
        check: "Card[x.card_id].user_id == x.user_id"
tools:
  find_user:
    params: {email: User.email}
    returns: "[u.user_id for u in User if u.email == email]"
  list_cards:
    params: {user_id: User}
    returns: "[c.card_id for c in Card if c.user_id == user_id]"
  find_order:
    params: {number: Order.number}
    returns: "[o.order_id for o in Order if o.number == number]"
  set_card:
    params: {order_id: Order, card_id: Card}
    effects: ["Order[order_id].card_id = card_id"]
  set_note:
    params: {order_id: Order, note: str}
    effects: ["Order[order_id].note = note"]
"""
TINY = loads_domain(TINY_YAML, source="tiny.yaml")


def _state(o1_card: str = "C01") -> State:
    """U01 (a@x.org) holds C01, C02 and order n1; U02 (b@x.org) holds C03 and order n2."""
    return State(
        {
            "User": {"U01": {"email": "a@x.org"}, "U02": {"email": "b@x.org"}},
            "Card": {
                "C01": {"user_id": "U01", "label": "blue"},
                "C02": {"user_id": "U01", "label": "red"},
                "C03": {"user_id": "U02", "label": "green"},
            },
            "Order": {
                "O01": {"user_id": "U01", "card_id": o1_card, "number": "n1", "note": "x"},
                "O02": {"user_id": "U02", "card_id": "C03", "number": "n2", "note": "x"},
            },
        },
        {"User": 3, "Card": 4, "Order": 3},
    )


def _email(v: str) -> Given:
    return Given(sort="field:User.email", value=v)


def _number(v: str) -> Given:
    return Given(sort="field:Order.number", value=v)


_GIFT = Given(sort="free:str", value="gift")


def _gate(
    state: State, givens: list[Given], chain: list[Call], text: str, changes: list[Change]
) -> GateResult:
    return check_candidate(TINY, "action", state, chain, givens, [], text, Goal(changes=changes))


def _c(tool: str, **args: Any) -> Call:
    return Call(tool=tool, args=args)


def _card_change(before: str, after: str) -> list[Change]:
    return [Change(entity="Order", key="O01", field="card_id", before=before, after=after)]


_OWN_CARD = [
    _c("find_user", email="a@x.org"),
    _c("list_cards", user_id="U01"),
    _c("find_order", number="n1"),
    _c("set_card", order_id="O01", card_id="C02"),
]


# ------------------------------------------------------------------ the domain language


def test_invariants_load_with_names_and_policy_text() -> None:
    inv = TINY.entities["Order"].invariants
    assert [(i.name, i.policy) for i in inv] == [
        ("paid_by_owner", "Pay only with the customer's own cards.")
    ]
    assert TINY.entities["User"].invariants == ()


def test_invariant_with_an_unknown_field_is_a_located_error() -> None:
    bad = TINY_YAML.replace("Card[x.card_id].user_id", "Card[x.card].user_id")
    with pytest.raises(DomainError) as info:
        loads_domain(bad, source="tiny.yaml")
    (p,) = info.value.problems
    assert p.file == "tiny.yaml"
    assert "entity 'Order'" in p.where and "invariants[0] (paid_by_owner)" in p.where
    assert "no field 'card'" in p.message
    assert p.expr == "Card[x.card].user_id == x.user_id"


def test_invariant_must_be_a_condition_and_names_must_not_repeat() -> None:
    bad = TINY_YAML.replace(
        '        check: "Card[x.card_id].user_id == x.user_id"\n',
        '        check: "Card[x.card_id].user_id == x.user_id"\n'
        '      - {name: paid_by_owner, check: "x.note"}\n',
    )
    with pytest.raises(DomainError) as info:
        loads_domain(bad, source="tiny.yaml")
    msgs = [str(p) for p in info.value.problems]
    assert any("repeats" in m for m in msgs), msgs
    assert any("x.note" in m and "invariants[1]" in m for m in msgs), msgs


def test_domains_without_invariants_keep_their_hash() -> None:
    """An empty ``invariants`` list is left out of the hashed spec (as a missing
    ``generate`` block is), so files that never used the section keep their hash."""
    head, tail = (
        TINY_YAML[: TINY_YAML.index("    invariants:")],
        TINY_YAML[TINY_YAML.index("tools:") :],
    )
    plain, with_empty = head + tail, head + "    invariants: []\n" + tail
    a = loads_domain(plain)
    b = loads_domain(with_empty)
    assert a.content_hash == b.content_hash != TINY.content_hash


# ------------------------------------------------------------------ checking a state


def test_violations_name_the_row_and_the_rule() -> None:
    assert invariant_violations(TINY, _state()) == []
    (v,) = invariant_violations(TINY, _state(o1_card="C03"))
    assert (v.entity, v.key, v.invariant) == ("Order", "O01", "paid_by_owner")
    assert "Order 'O01' breaks invariant paid_by_owner" in v.describe()
    assert v.policy == "Pay only with the customer's own cards."


def test_a_condition_that_raises_counts_as_broken() -> None:
    st = _state(o1_card="C99")  # names no card: the lookup raises
    (v,) = invariant_violations(TINY, st)
    assert v.key == "O01" and v.error


# ------------------------------------------------------------------ the generator


@pytest.mark.parametrize("seed", range(25))
def test_generator_repairs_ownership_when_users_hold_no_card(seed: int) -> None:
    """6 users, 3 cards: at least 3 users own no card, so their orders cannot be paid
    by their own card; the generator moves those orders to users who can pay."""
    st = generate_state(TINY, seed)
    assert invariant_violations(TINY, st) == []
    cards = st.tables["Card"]
    for o in st.tables["Order"].values():
        assert cards[o["card_id"]]["user_id"] == o["user_id"]


def test_an_invariant_no_redraw_can_meet_names_itself() -> None:
    bad = TINY_YAML.replace('"Card[x.card_id].user_id == x.user_id"', '"x.user_id != x.user_id"')
    with pytest.raises(StateGenError, match=r"cannot satisfy invariant paid_by_owner"):
        generate_state(loads_domain(bad, source="tiny.yaml"), 0)


def _no_violations(name: str, seeds: range) -> None:
    d = load_builtin(name)
    assert sum(len(e.invariants) for e in d.entities.values()) >= 2
    for seed in seeds:
        bad = invariant_violations(d, generate_state(d, seed), limit=1)
        assert bad == [], (name, seed, bad[0].describe())


@pytest.mark.parametrize("name", ["retail", "airline"])
def test_generated_states_obey_every_invariant(name: str) -> None:
    _no_violations(name, range(40))


@pytest.mark.slow
@pytest.mark.parametrize("name", ["retail", "airline"])
def test_a_thousand_generated_states_obey_every_invariant(name: str) -> None:
    """State generation only (about 1 min for airline): seeds 0..999."""
    _no_violations(name, range(1000))


# ------------------------------------------------------------------ the gate: policy


def test_every_new_reason_is_a_gate_reason() -> None:
    assert {"policy_violation", "several_customers", "unidentified_owner"} <= set(REASONS)


def test_paying_with_ones_own_card_passes() -> None:
    res = _gate(
        _state(),
        [_email("a@x.org"), _number("n1")],
        _OWN_CARD,
        "My email is a@x.org. Please pay my order n1 with my red card instead.",
        _card_change("C01", "C02"),
    )
    assert res.ok, res


def test_goal_that_pays_with_another_persons_card_is_rejected() -> None:
    """Defect 8: the goal charges another person's card (the tool lets it)."""
    chain = [
        _c("find_user", email="a@x.org"),
        _c("find_user", email="b@x.org"),
        _c("list_cards", user_id="U02"),
        _c("find_order", number="n1"),
        _c("set_card", order_id="O01", card_id="C03"),
    ]
    res = _gate(
        _state(),
        [_email("a@x.org"), _email("b@x.org"), _number("n1")],
        chain,
        "My email is a@x.org; my friend's is b@x.org. Pay my order n1 with their card.",
        _card_change("C01", "C03"),
    )
    assert (res.ok, res.reason) == (False, "policy_violation"), res
    assert res.detail.startswith("after the chain: Order 'O01' breaks invariant paid_by_owner")


def test_initial_state_that_breaks_the_policy_is_rejected() -> None:
    """Defect 8: the order is already paid with another person's card."""
    res = _gate(
        _state(o1_card="C03"),
        [_email("a@x.org"), _number("n1")],
        _OWN_CARD,
        "My email is a@x.org. Please pay my order n1 with my red card instead.",
        _card_change("C03", "C02"),
    )
    assert (res.ok, res.reason) == (False, "policy_violation"), res
    assert res.detail.startswith("initial state: Order 'O01'")


# ------------------------------------------------------------------ the gate: identity


def test_principal_and_identification() -> None:
    assert principal_entity(TINY) == "User"
    st = _state()
    assert identified_principals(TINY, st, [_email("a@x.org")]) == ["U01"]
    assert identified_principals(TINY, st, [_email("a@x.org"), _email("b@x.org")]) == [
        "U01",
        "U02",
    ]
    assert identified_principals(TINY, st, [_number("n1")]) == []


def test_one_customer_acting_on_their_own_order_passes() -> None:
    res = _gate(
        _state(),
        [_email("b@x.org"), _number("n2"), _GIFT],
        [
            _c("find_user", email="b@x.org"),
            _c("find_order", number="n2"),
            _c("set_note", order_id="O02", note="gift"),
        ],
        "My email is b@x.org. Please add the note gift to my order n2.",
        [Change(entity="Order", key="O02", field="note", before="x", after="gift")],
    )
    assert res.ok, res


def test_two_identities_in_one_instruction_are_rejected() -> None:
    """Defect 6: "My email is A; my email is B"."""
    res = _gate(
        _state(),
        [_email("a@x.org"), _email("b@x.org"), _number("n2"), _GIFT],
        [
            _c("find_user", email="a@x.org"),
            _c("find_user", email="b@x.org"),
            _c("find_order", number="n2"),
            _c("set_note", order_id="O02", note="gift"),
        ],
        "My email is a@x.org; my email is b@x.org. Please add the note gift to my order n2.",
        [Change(entity="Order", key="O02", field="note", before="x", after="gift")],
    )
    assert (res.ok, res.reason) == (False, "several_customers"), res
    assert "U01, U02" in res.detail


def test_acting_on_a_stranger_s_order_is_rejected() -> None:
    """Defect 6: the chain acts for a user it never looked up (order n2 is U02's)."""
    res = _gate(
        _state(),
        [_email("a@x.org"), _number("n2"), _GIFT],
        [
            _c("find_user", email="a@x.org"),
            _c("find_order", number="n2"),
            _c("set_note", order_id="O02", note="gift"),
        ],
        "My email is a@x.org. Please add the note gift to order n2.",
        [Change(entity="Order", key="O02", field="note", before="x", after="gift")],
    )
    assert (res.ok, res.reason) == (False, "unidentified_owner"), res
    assert "call 2 (set_note) uses Order 'O02' of user U02" in res.detail


@pytest.mark.parametrize("name", ["retail", "airline", "tiny"])
def test_rows_reached_by_writes_are_the_only_ones_that_can_break(name: str) -> None:
    """After writes to a state that breaks no invariant, checking only the rows the
    writes can reach (rows_reached: the written rows, and those whose invariants read
    one) finds every violation a check of every row finds."""
    import random

    from graphgen.staterules import rows_reached

    d = TINY if name == "tiny" else load_builtin(name)
    rng = random.Random(name)
    broken = 0
    for seed in range(25):
        before = generate_state(d, seed)
        assert invariant_violations(d, before) == []
        after = before.copy()
        for _ in range(rng.randint(1, 6)):
            ent = rng.choice([e for e in d.entities if before.tables[e]])
            keys = sorted(after.tables[ent])
            key = rng.choice(keys)
            roll = rng.random()
            if roll < 0.6:  # a field takes a value another row of the table holds
                f = rng.choice(list(d.entities[ent].fields))
                other = after.tables[ent][rng.choice(keys)]
                after.set_field(ent, key, f, other[f])
            elif roll < 0.85:  # a new row like an existing one
                after.put_row(ent, f"{key}-copy{rng.randint(0, 99)}", dict(after.tables[ent][key]))
            else:
                after.delete_row(ent, key)
        reached = rows_reached(d, before, after)
        assert reached is not None
        every = invariant_violations(d, after)
        assert invariant_violations(d, after, rows=reached) == every
        broken += bool(every)
    assert broken >= 2  # the writes did break invariants: the check is not vacuous
