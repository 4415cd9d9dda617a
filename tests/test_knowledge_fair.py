"""Knowledge that matches the tools (issue 9, defect 7).

An agent knows only what the instruction states and what outputs showed it: no enum
member for free (a status to filter on), no target picked out of a list of ids without
reading the candidates, no description by a value no call showed for that row. Each
defect is a small hand-built retail task that the gate rejects for its reason, next to
a twin that does the work and passes; then the knowledge model itself, and generated
task sets.
"""

from __future__ import annotations

import random
from functools import cache
from typing import Any

import pytest

from graphgen.domains import load_builtin
from graphgen.knowledge import (
    Sort,
    facts_of_result,
    listed_keys,
    shown_cells,
    visible_fields,
)
from graphgen.load import loads_domain
from graphgen.state import State
from graphgen.tasks.dryrun import GateResult, check_candidate, recognition_problem, replay
from graphgen.tasks.expand import Expander
from graphgen.tasks.model import Call, Change, Given, Goal, Target
from graphgen.tasks.plan import Knowledge, Planner
from graphgen.tasks.referring import MAX_CANDIDATES, candidates_of, describe
from graphgen.tasks.render import spoken_forms, stated
from graphgen.tasks.taskset import GenResult, generate

RETAIL = load_builtin("retail")
EMAIL = "ana@example.com"
DAY = "2026-11-02"


def _order(user: str, status: str, day: str, pm: str = "PM0001") -> dict[str, Any]:
    return {
        "user_id": user,
        "status": status,
        "items": ["IT0001"],
        "total": 464,
        "payment_method_id": pm,
        "street": "1 Main St",
        "city": "Oslo",
        "zip": "01234",
        "placed_on": day,
    }


def _state(extra_orders: int = 0) -> State:
    """Ana (U0001) has three orders, two pending; Bo (U0002) has one; ``extra_orders``
    more delivered orders of Ana's make her list long."""
    user = {"street": "1 Main St", "city": "Oslo", "zip": "01234", "last_name": "Berg"}
    orders = {
        "O0001": _order("U0001", "pending", DAY),
        "O0002": _order("U0001", "delivered", "2026-10-01"),
        "O0003": _order("U0001", "pending", "2026-09-15"),
        "O0004": _order("U0002", "pending", "2026-08-08", "PM0002"),
    }
    for i in range(extra_orders):
        orders[f"O{5 + i:04d}"] = _order("U0001", "delivered", f"2025-01-{10 + i:02d}")
    items = {
        "IT0001": {"product_id": "PR001", "color": "black", "size": "M", "price": 464},
        "IT0002": {"product_id": "PR001", "color": "white", "size": "M", "price": 300},
        "IT0003": {"product_id": "PR001", "color": "red", "size": "S", "price": 120},
    }
    return State.from_dict(
        {
            "tables": {
                "User": {
                    "U0001": {**user, "email": EMAIL, "first_name": "Ana"},
                    "U0002": {**user, "email": "bo@example.com", "first_name": "Bo"},
                },
                "PaymentMethod": {
                    "PM0001": {
                        "user_id": "U0001",
                        "kind": "paypal",
                        "balance": 0,
                        "funded_by": None,
                    },
                    "PM0002": {
                        "user_id": "U0002",
                        "kind": "paypal",
                        "balance": 0,
                        "funded_by": None,
                    },
                },
                "Product": {"PR001": {"name": "Wireless Earbuds"}},
                "Item": {k: {**v, "available": True} for k, v in items.items()},
                "Order": orders,
            },
            "counters": {"User": 3, "PaymentMethod": 3, "Product": 2, "Item": 4, "Order": 99},
        }
    )


def _lookup(user: str = "U0001") -> list[Call]:
    email = EMAIL if user == "U0001" else "bo@example.com"
    return [Call(tool="find_user_id_by_email", args={"email": email})]


def _read(order: str) -> Call:
    return Call(tool="get_order_details", args={"order_id": order})


def _cancel(
    chain: list[Call],
    text: str,
    *,
    order: str = "O0001",
    user: str = "U0001",
    status_given: bool = False,
    state: State | None = None,
) -> GateResult:
    """Gate a cancel-my-order task: ``chain`` before the cancel, the order described by
    its owner and day (and its status, when the user states it)."""
    st = state or _state()
    row = st.tables["Order"][order]
    desc = f"x.user_id == {user!r} and x.placed_on == {row['placed_on']!r}"
    givens = [
        Given(sort="field:User.email", value=EMAIL if user == "U0001" else "bo@example.com"),
        Given(sort="field:Order.placed_on", value=row["placed_on"]),
    ]
    if status_given:
        desc += " and x.status == 'pending'"
        givens.append(Given(sort="enum:OrderStatus", value="pending"))
    target = Target(entity="Order", key=order, phrase="my order", description=desc)
    return check_candidate(
        RETAIL,
        "action",
        st,
        [*chain, Call(tool="cancel_pending_order", args={"user_id": user, "order_id": order})],
        givens,
        [target],
        text,
        Goal(
            changes=[
                Change(
                    entity="Order", key=order, field="status", before="pending", after="cancelled"
                )
            ]
        ),
    )


PLAIN = (
    f"Hi, my email is {EMAIL}. I don't need my order placed on {DAY} anymore, can you cancel it?"
)
PENDING = f"Hi, my email is {EMAIL}. Please cancel my pending order placed on {DAY}."


# ----------------------------------------------------------------- enum values


def test_a_status_the_user_never_states_is_not_known() -> None:
    # The seed-21 example: filtering by "pending" that the instruction never says.
    by_status = Call(
        tool="find_user_orders_by_status", args={"user_id": "U0001", "status": "pending"}
    )
    res = _cancel([*_lookup(), by_status, _read("O0001"), _read("O0003")], PLAIN)
    assert (res.ok, res.reason) == (False, "unknown_argument")
    assert "enum:OrderStatus" in res.detail and "pending" in res.detail


def test_a_status_the_user_states_may_be_filtered_on() -> None:
    by_status = Call(
        tool="find_user_orders_by_status", args={"user_id": "U0001", "status": "pending"}
    )
    chain = [*_lookup(), by_status, _read("O0001"), _read("O0003")]
    assert _cancel(chain, PENDING, status_given=True).ok
    # A given must be said: the same givens with the plain text fail.
    res = _cancel(chain, PLAIN, status_given=True)
    assert (res.ok, res.reason) == (False, "given_not_stated")


def test_a_status_an_earlier_output_showed_is_known() -> None:
    # The agent read O0001 (pending) first: filtering by "pending" is then fair.
    by_status = Call(
        tool="find_user_orders_by_status", args={"user_id": "U0001", "status": "pending"}
    )
    listed = Call(tool="list_user_orders", args={"user_id": "U0001"})
    reads = [_read("O0001"), _read("O0002"), _read("O0003")]
    assert _cancel([*_lookup(), listed, *reads, by_status], PLAIN).ok


def test_knowledge_knows_no_enum_member_for_free() -> None:
    s = Sort("enum", "OrderStatus")
    assert not Knowledge().knows(s, "pending")
    know = Knowledge.from_givens([Given(sort="enum:OrderStatus", value="pending")])
    assert know.knows(s, "pending") and not know.knows(s, "delivered")
    row = RETAIL.tools["get_order_details"]
    facts = facts_of_result(RETAIL, row, {"order_id": "O0001", **_order("U0001", "delivered", DAY)})
    assert (s, "delivered") in facts and (Sort("field", "Order.status"), "delivered") in facts
    run = replay(RETAIL, _state(), [], [Call(tool="get_order_details", args={"order_id": "O0002"})])
    assert run.knowledge.knows(s, "delivered") and run.knowledge.origin(s, "delivered") == 0


def test_the_planner_does_not_guess_a_status() -> None:
    """Acquiring a value never makes up an enum member; an intent's members are stated."""
    st = _state()
    planner = Planner(RETAIL, st, random.Random(0))
    assert not planner.acquire(Sort("enum", "OrderStatus"), "pending")
    assert planner.givens == [] and planner.chain == []
    tool = RETAIL.tools["find_user_orders_by_status"]
    planner.state_args(tool, {"user_id": "U0001", "status": "pending"})
    assert planner.givens == [Given(sort="enum:OrderStatus", value="pending")]


# ----------------------------------------------------------------- candidates


def test_a_target_picked_from_a_list_without_reading_the_rest_is_rejected() -> None:
    listed = Call(tool="list_user_orders", args={"user_id": "U0001"})
    res = _cancel([*_lookup(), listed, _read("O0001")], PLAIN)
    assert (res.ok, res.reason) == (False, "candidates_not_read")
    assert "'O0002'" in res.detail and "placed_on" in res.detail


def test_reading_every_listed_candidate_passes() -> None:
    listed = Call(tool="list_user_orders", args={"user_id": "U0001"})
    reads = [_read("O0001"), _read("O0002"), _read("O0003")]
    assert _cancel([*_lookup(), listed, *reads], PLAIN).ok
    # Without the last candidate's read the agent cannot know O0003 was not placed that day.
    res = _cancel([*_lookup(), listed, *reads[:2]], PLAIN)
    assert (res.ok, res.reason) == (False, "candidates_not_read")


def test_a_description_no_call_shows_for_the_row_is_rejected() -> None:
    # Bo has one order: no rival, but nothing shows the day it was placed.
    listed = Call(tool="list_user_orders", args={"user_id": "U0002"})
    text = "Hi, my email is bo@example.com. Please cancel my order placed on 2026-08-08."
    res = _cancel([*_lookup("U0002"), listed], text, order="O0004", user="U0002")
    assert (res.ok, res.reason) == (False, "description_not_seen")
    assert "placed_on" in res.detail
    assert _cancel(
        [*_lookup("U0002"), listed, _read("O0004")], text, order="O0004", user="U0002"
    ).ok


def _price_order(reads: list[Call]) -> GateResult:
    """retail-11-00043: "the item with price 464" among a product's items. No tool
    searches by price, so the agent must read the items to single it out. (Asked as a
    question, "the colour of the item with price 464" is open to a hedge that names
    every colour it read, and the gate rejects it as hedge_passes; ordering the item is
    graded on the state.)"""
    today = "2026-11-03"  # the day after Ana's latest order
    chain = [
        *_lookup(),
        Call(tool="list_payment_methods", args={"user_id": "U0001"}),
        Call(tool="get_payment_method_details", args={"payment_method_id": "PM0001"}),
        Call(tool="find_product_by_name", args={"name": "Wireless Earbuds"}),
        Call(tool="list_product_items", args={"product_id": "PR001"}),
        *reads,
        Call(
            tool="place_order",
            args={
                "user_id": "U0001",
                "item_id": "IT0001",
                "payment_method_id": "PM0001",
                "placed_on": today,
            },
        ),
    ]
    order = {**_order("U0001", "pending", today), "items": ["IT0001"], "total": 464}
    return check_candidate(
        RETAIL,
        "action",
        _state(),
        chain,
        [
            Given(sort="field:User.email", value=EMAIL),
            Given(sort="field:Product.name", value="Wireless Earbuds"),
            Given(sort="field:Item.price", value=464),
            Given(sort="enum:PaymentKind", value="paypal"),
            Given(sort="free:date", value=today),
        ],
        [
            Target(
                entity="Item",
                key="IT0001",
                phrase="the Wireless Earbuds priced at $464",
                description="x.price == 464",
            ),
            Target(
                entity="PaymentMethod",
                key="PM0001",
                phrase="my PayPal account",
                description="x.user_id == 'U0001' and x.kind == 'paypal'",
            ),
        ],
        f"Today is {today}. My email is {EMAIL}. Please order the Wireless Earbuds priced at"
        " $464 for me, paid with my PayPal account.",
        Goal(changes=[Change(entity="Order", key="O0099", field="*", before=None, after=order)]),
    )


def test_the_item_with_a_price_must_be_found_by_reading_the_items() -> None:
    item = [Call(tool="get_item_details", args={"item_id": f"IT000{i}"}) for i in (1, 2, 3)]
    res = _price_order(item[:1])
    assert (res.ok, res.reason) == (False, "candidates_not_read")
    assert "'IT0002'" in res.detail and "price" in res.detail
    assert _price_order(item).ok


def test_more_candidates_than_an_agent_reads_need_a_search() -> None:
    st = _state(extra_orders=MAX_CANDIDATES)  # Ana now has 3 + 6 orders
    listed = Call(tool="list_user_orders", args={"user_id": "U0001"})
    keys = sorted(k for k, r in st.tables["Order"].items() if r["user_id"] == "U0001")
    reads = [_read(k) for k in keys]
    res = _cancel([*_lookup(), listed, *reads], PLAIN, state=st)
    assert (res.ok, res.reason) == (False, "too_many_candidates")
    assert f"lists {len(keys)} Order ids" in res.detail
    by_status = Call(
        tool="find_user_orders_by_status", args={"user_id": "U0001", "status": "pending"}
    )
    narrowed = [*_lookup(), by_status, _read("O0001"), _read("O0003")]
    assert _cancel(narrowed, PENDING, status_given=True, state=st).ok


def test_the_planner_narrows_a_long_list_with_a_stated_status() -> None:
    st = _state(extra_orders=MAX_CANDIDATES)
    target = Target(
        entity="Order",
        key="O0001",
        phrase="my order with status pending and placed on 2026-11-02",
        description=(
            "x.user_id == 'U0001' and x.status == 'pending' and x.placed_on == '2026-11-02'"
        ),
    )
    for seed in range(5):
        planner = Planner(RETAIL, st.copy(), random.Random(seed))
        planner.give(Sort("field", "User.email"), EMAIL)
        planner.give(Sort("enum", "OrderStatus"), "pending")
        planner.give(Sort("field", "Order.placed_on"), DAY)
        assert Expander(RETAIL)._recognise(planner, st, target), seed
        tools = [c.tool for c in planner.chain]
        assert "find_user_orders_by_status" in tools and "list_user_orders" not in tools
        assert tools.count("get_order_details") == 2  # the two pending orders, in list order
        assert [c.args["order_id"] for c in planner.chain if c.tool == "get_order_details"] == [
            "O0001",
            "O0003",
        ]


# ----------------------------------------------------------------- what outputs show


def test_shown_cells_name_the_rows_an_output_shows() -> None:
    st = _state()
    row = RETAIL.tools["get_order_details"]
    value = {"order_id": "O0002", **st.tables["Order"]["O0002"]}
    assert ("Order", "O0002", "placed_on") in shown_cells(RETAIL, row, {"order_id": "O0002"}, value)
    listed = RETAIL.tools["list_user_orders"]
    cells = shown_cells(RETAIL, listed, {"user_id": "U0001"}, ["O0001", "O0002"])
    assert cells == {("Order", "O0001", "user_id"), ("Order", "O0002", "user_id")}
    # A price list by name, colour and size shows prices, not whose they are.
    price = RETAIL.tools["check_item_price"]
    args = {"name": "Wireless Earbuds", "color": "black", "size": "M"}
    assert shown_cells(RETAIL, price, args, [464]) == set()
    assert listed_keys(RETAIL, row, value, "Item") == ["IT0001"]
    assert listed_keys(RETAIL, listed, ["O0003", "O0001", "O0003"], "Order") == ["O0003", "O0001"]


HIDDEN = """
name: hidden
enums:
  Tier: [basic, gold]
entities:
  Person:
    key: {name: person_id, prefix: "P", width: 2}
    display: email
    size: 3
    fields:
      email: {type: str, unique: true, givable: true, vocab: email}
  Box:
    key: {name: box_id, prefix: "B", width: 2}
    size: 4
    fields:
      owner: {type: Person}
      tier: {enum: Tier}
      secret: {type: int, min: 0, max: 9}
tools:
  find_person:
    params:
      email: {type: Person.email}
    returns: "[p.person_id for p in Person if p.email == email]"
  list_boxes:
    params:
      person_id: {type: Person}
    returns: "[b.box_id for b in Box if b.owner == person_id]"
  box_tier:
    params:
      box_id: {type: Box}
    returns: "Box[box_id].tier"
  open_box:
    params:
      box_id: {type: Box}
    requires:
      - check: "Box[box_id].secret >= 0"
    effects:
      - "Box[box_id].secret = 0"
    intents:
      - "Please open {box_id}."
"""


def test_descriptions_use_only_fields_some_tool_shows() -> None:
    d = loads_domain(HIDDEN)
    assert visible_fields(d)["Box"] == {"owner", "tier"}  # nothing shows a box's secret
    st = State.from_dict(
        {
            "tables": {
                "Person": {"P01": {"email": "a@x.org"}},
                "Box": {
                    "B01": {"owner": "P01", "tier": "gold", "secret": 3},
                    "B02": {"owner": "P01", "tier": "basic", "secret": 4},
                },
            },
            "counters": {"Person": 2, "Box": 3},
        }
    )
    for seed in range(20):
        t = describe(d, st, "Box", "B01", random.Random(seed), ("Person", "P01"))
        assert t is not None and "secret" not in t.description
        assert "x.tier == 'gold'" in t.description
    st.set_field("Box", "B02", "tier", "gold")  # now only the hidden secret tells them apart
    assert describe(d, st, "Box", "B01", random.Random(0), ("Person", "P01")) is None


# ----------------------------------------------------------------- generated sets


@cache
def _gen(name: str, n: int, seed: int) -> GenResult:
    return generate(load_builtin(name), n, seed)


@pytest.mark.parametrize(("name", "n", "seed"), [("retail", 60, 11), ("airline", 80, 12)])
def test_generated_tasks_know_only_stated_or_shown_values(name: str, n: int, seed: int) -> None:
    domain = load_builtin(name)
    res = _gen(name, n, seed)
    assert set(res.manifest.by_kind) == {"action", "information", "refusal"}
    from_lists = 0
    for t in res.tasks:
        st = State.from_dict(t.initial_state)
        run = replay(domain, st, t.givens, t.chain)
        assert not any(s.unknown for s in run.steps), t.id
        for g in t.givens:
            if g.sort.startswith("enum:"):
                forms = spoken_forms(domain, g.sort, g.value)  # "my gift card"
                assert stated(t.instruction, g.value, forms), (t.id, g)
        assert recognition_problem(domain, st, run, t.targets) is None, t.id
        results = [s.result for s in run.steps]
        for tg in t.targets:
            origin = run.knowledge.origin(Sort("key", tg.entity), tg.key)
            cands = candidates_of(domain, t.chain, results, origin, tg.key, tg.entity)
            from_lists += len(cands) > 1
    assert from_lists > 0  # the candidate reads are exercised


def test_generated_filters_by_status_use_a_stated_or_shown_status() -> None:
    """Defect 7's count: a generated call of find_user_orders_by_status filters by a
    status the instruction states or an earlier output showed (37 of 38 did not)."""
    res = _gen("retail", 60, 11)
    for t in res.tasks:
        run = replay(RETAIL, State.from_dict(t.initial_state), t.givens, t.chain)
        for step in run.steps:
            if step.call.tool == "find_user_orders_by_status":
                status = step.call.args["status"]
                origin = run.knowledge.origin(Sort("enum", "OrderStatus"), status)
                assert origin is not None and origin < step.index, t.id
                if origin < 0:
                    assert stated(t.instruction, status), t.id
