"""The built-in delivery domain: its shape, its tools on a small hand-made state (the order
status machine, cancelling only before the kitchen starts, promo codes with their usage
limits and a soft failure, refund caps and the refund window, courier capacity), and a
generated task set that baselines cannot game."""

from __future__ import annotations

import string
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from graphgen import pipeline as pl
from graphgen.domain import Domain
from graphgen.domains import builtin_names, load_builtin
from graphgen.errors import ToolError
from graphgen.interp import call_tool, run_call
from graphgen.state import State, diff
from graphgen.stategen import generate_state
from graphgen.tasks.taskset import read_taskset
from graphgen.types import EnumT, RefT, strip_opt

TODAY = "2026-11-20"


@pytest.fixture(scope="module")
def dom() -> Domain:
    return load_builtin("delivery")


def _order(customer: str, restaurant: str, status: str, **kw: Any) -> dict[str, Any]:
    row: dict[str, Any] = {
        "customer_id": customer,
        "restaurant_id": restaurant,
        "status": status,
        "placed_on": TODAY,
        "food": "24.00",
        "discount": "0.00",
        "delivery_fee": "1.99",
        "total": "25.99",
        "courier_id": 1 if status in ("out_for_delivery", "delivered") else None,
        "promo_id": None,
    }
    row.update(kw)
    return row


def _state() -> State:
    """Ana has a placed, a preparing, an out-for-delivery and two delivered orders (one
    of them old) at Golden Wok; Bo has one placed order at Napoli Slice (closed)."""
    return State(
        {
            "Customer": {
                "CU001": {
                    "email": "ana@mail.example.com",
                    "phone": "415-555-0101",
                    "full_name": "Ana Ruiz",
                    "address": "12 Bay Street, Lyon 52793",
                    "credit": "5.00",
                },
                "CU002": {
                    "email": "bo@mail.example.com",
                    "phone": "415-555-0102",
                    "full_name": "Bo Li",
                    "address": "4 Green Street, Oakland 80307",
                    "credit": "0.00",
                },
            },
            "Restaurant": {
                "R001": {
                    "name": "Golden Wok",
                    "cuisine": "thai",
                    "is_open": True,
                    "delivery_fee": "1.99",
                },
                "R002": {
                    "name": "Napoli Slice",
                    "cuisine": "pizza",
                    "is_open": False,
                    "delivery_fee": "0.00",
                },
            },
            "MenuItem": {
                "M001": {
                    "restaurant_id": "R001",
                    "name": "Pad Thai",
                    "price": "12.00",
                    "available": True,
                },
                "M002": {
                    "restaurant_id": "R001",
                    "name": "Green Curry",
                    "price": "13.50",
                    "available": False,
                },
                "M003": {
                    "restaurant_id": "R002",
                    "name": "Margherita Pizza",
                    "price": "11.00",
                    "available": True,
                },
            },
            "Courier": {
                1: {"name": "Maya Scott", "vehicle": "bike", "on_shift": True, "capacity": 1},
                2: {"name": "Leo Park", "vehicle": "car", "on_shift": True, "capacity": 2},
                3: {"name": "Ines Roy", "vehicle": "scooter", "on_shift": False, "capacity": 3},
            },
            "Promo": {
                "P001": {
                    "code": "SAVE20",
                    "percent_off": 20,
                    "min_food": "20.00",
                    "max_uses": 2,
                    "active": True,
                },
                "P002": {
                    "code": "BIG25",
                    "percent_off": 25,
                    "min_food": "40.00",
                    "max_uses": 5,
                    "active": True,
                },
                "P003": {
                    "code": "OLD10",
                    "percent_off": 10,
                    "min_food": "10.00",
                    "max_uses": 5,
                    "active": False,
                },
            },
            "Order": {
                "O0001": _order("CU001", "R001", "placed"),
                "O0002": _order("CU001", "R001", "preparing"),
                "O0003": _order("CU001", "R001", "out_for_delivery"),
                "O0004": _order("CU001", "R001", "delivered", placed_on="2026-11-15"),
                "O0005": _order("CU001", "R001", "delivered", placed_on="2026-10-01"),
                "O0006": _order(
                    "CU002",
                    "R002",
                    "placed",
                    food="22.00",
                    delivery_fee="0.00",
                    total="17.60",
                    discount="4.40",
                    promo_id="P001",
                ),
            },
            "OrderLine": {
                "L0001": {
                    "order_id": "O0001",
                    "item_id": "M001",
                    "quantity": 2,
                    "unit_price": "12.00",
                },
                "L0002": {
                    "order_id": "O0002",
                    "item_id": "M001",
                    "quantity": 2,
                    "unit_price": "12.00",
                },
                "L0003": {
                    "order_id": "O0003",
                    "item_id": "M001",
                    "quantity": 2,
                    "unit_price": "12.00",
                },
                "L0004": {
                    "order_id": "O0004",
                    "item_id": "M001",
                    "quantity": 2,
                    "unit_price": "12.00",
                },
                "L0005": {
                    "order_id": "O0005",
                    "item_id": "M001",
                    "quantity": 2,
                    "unit_price": "12.00",
                },
                "L0006": {
                    "order_id": "O0006",
                    "item_id": "M003",
                    "quantity": 2,
                    "unit_price": "11.00",
                },
            },
            "Refund": {
                "RF001": {
                    "customer_id": "CU001",
                    "order_id": "O0004",
                    "amount": "10.00",
                    "method": "card",
                    "issued_on": "2026-11-16",
                },
            },
        },
        {
            "Customer": 3,
            "Restaurant": 3,
            "MenuItem": 4,
            "Courier": 4,
            "Promo": 4,
            "Order": 7,
            "OrderLine": 7,
            "Refund": 2,
        },
        today=TODAY,
    )


def _money(st: State, table: str, key: Any, field: str) -> Decimal:
    return Decimal(st.tables[table][key][field])


def test_is_builtin_and_has_the_promised_shape(dom: Domain) -> None:
    assert "delivery" in builtin_names()
    assert len(dom.tools) >= 15
    assert len(dom.write_tools) >= 6
    refs = {
        (e.name, strip_opt(f.ty).entity)
        for e in dom.entities.values()
        for f in e.fields.values()
        if isinstance(strip_opt(f.ty), RefT)
    }
    assert {
        ("Order", "Customer"),
        ("Order", "Restaurant"),
        ("Order", "Courier"),
        ("Order", "Promo"),
        ("OrderLine", "Order"),
        ("OrderLine", "MenuItem"),
        ("MenuItem", "Restaurant"),
        ("Refund", "Order"),
    } <= refs
    status = dom.entities["Order"].fields["status"].ty
    assert isinstance(status, EnumT)
    assert set(status.values) == {
        "placed",
        "preparing",
        "out_for_delivery",
        "delivered",
        "cancelled",
    }
    assert dom.policy.strip()


def test_every_tool_is_documented_and_intents_name_what_users_supply(dom: Domain) -> None:
    for t in dom.tools.values():
        assert t.description, t.name
        assert t.intents, t.name
        assert all(p.description for p in t.params.values()), t.name
        named = {f for it in t.intents for _, f, _, _ in string.Formatter().parse(it.text) if f}
        supplied = {n for n, p in t.params.items() if strip_opt(p.ty) != RefT("Customer")}
        assert supplied <= named, (t.name, supplied - named)
        assert "customer_id" not in named, t.name


def test_place_order_prices_it_and_checks_the_restaurant_and_the_dish(dom: Domain) -> None:
    st = _state()
    out = call_tool(
        dom, st, "place_order", {"customer_id": "CU002", "item_id": "M001", "quantity": 3}
    )
    assert out["order_id"] == "O0007" and out["total"] == "37.99"
    row = st.tables["Order"]["O0007"]
    assert (row["status"], row["placed_on"], row["food"], row["delivery_fee"]) == (
        "placed",
        TODAY,
        "36.00",
        "1.99",
    )
    assert st.tables["OrderLine"]["L0007"] == {
        "order_id": "O0007",
        "item_id": "M001",
        "quantity": 3,
        "unit_price": "12.00",
    }
    with pytest.raises(ToolError, match="is closed"):
        call_tool(dom, st, "place_order", {"customer_id": "CU002", "item_id": "M003"})
    with pytest.raises(ToolError, match="sold out"):
        call_tool(dom, st, "place_order", {"customer_id": "CU002", "item_id": "M002"})


def test_at_most_three_active_orders(dom: Domain) -> None:
    st = _state()
    # Ana has a placed, a preparing and an out-for-delivery order: a fourth is refused
    before = st.copy()
    with pytest.raises(ToolError, match="already has 3 active orders"):
        call_tool(dom, st, "place_order", {"customer_id": "CU001", "item_id": "M001"})
    assert st == before
    # once one is delivered there is room again
    call_tool(dom, st, "confirm_delivery", {"customer_id": "CU001", "order_id": "O0003"})
    out = call_tool(dom, st, "place_order", {"customer_id": "CU001", "item_id": "M001"})
    assert out["order_id"] == "O0007"


def test_add_item_recomputes_the_discount_and_caps_the_dishes(dom: Domain) -> None:
    st = _state()
    with pytest.raises(ToolError, match="from another restaurant"):
        call_tool(
            dom, st, "add_item", {"customer_id": "CU001", "order_id": "O0001", "item_id": "M003"}
        )
    with pytest.raises(ToolError, match="no longer placed"):
        call_tool(
            dom, st, "add_item", {"customer_id": "CU001", "order_id": "O0002", "item_id": "M001"}
        )
    with pytest.raises(ToolError, match="does not belong to customer CU002"):
        call_tool(
            dom, st, "add_item", {"customer_id": "CU002", "order_id": "O0001", "item_id": "M001"}
        )
    # Bo's order has SAVE20 (20% off): one more pizza makes 33.00 of food, 6.60 off
    call_tool(
        dom,
        st,
        "add_item",
        {"customer_id": "CU002", "order_id": "O0006", "item_id": "M003", "quantity": 1},
    )
    row = st.tables["Order"]["O0006"]
    assert (row["food"], row["discount"], row["total"]) == ("33.00", "6.60", "26.40")
    # 3 pizzas are on it; 8 more would make 11 dishes
    with pytest.raises(ToolError, match="more than 10 dishes"):
        call_tool(
            dom,
            st,
            "add_item",
            {"customer_id": "CU002", "order_id": "O0006", "item_id": "M003", "quantity": 8},
        )
    call_tool(
        dom,
        st,
        "add_item",
        {"customer_id": "CU002", "order_id": "O0006", "item_id": "M003", "quantity": 7},
    )


def test_promo_codes_soft_failure_and_usage_limit(dom: Domain) -> None:
    st = _state()
    assert [
        p["promo_id"] for p in call_tool(dom, st, "find_promo_by_code", {"code": "save20"})
    ] == ["P001"]
    # BIG25 needs 40.00 of food; Ana's order has 24.00: a soft failure, nothing changes
    before = st.copy()
    out = run_call(
        dom, st, "apply_promo", {"customer_id": "CU001", "order_id": "O0001", "promo_id": "P002"}
    )
    assert out.soft_failed and out.value["success"] is False and st == before
    with pytest.raises(ToolError, match="no longer active"):
        call_tool(
            dom,
            st,
            "apply_promo",
            {"customer_id": "CU001", "order_id": "O0001", "promo_id": "P003"},
        )
    out = run_call(
        dom, st, "apply_promo", {"customer_id": "CU001", "order_id": "O0001", "promo_id": "P001"}
    )
    assert not out.soft_failed and out.value["discount"] == "4.80"
    assert diff(before, st) == [
        ("Order", "O0001", "discount", "0.00", "4.80"),
        ("Order", "O0001", "promo_id", None, "P001"),
        ("Order", "O0001", "total", "25.99", "21.19"),
    ]
    with pytest.raises(ToolError, match="already has a promo code"):
        call_tool(
            dom,
            st,
            "apply_promo",
            {"customer_id": "CU001", "order_id": "O0001", "promo_id": "P002"},
        )
    # SAVE20 allows 2 uses and Bo's and Ana's orders hold them both
    out = call_tool(
        dom, st, "place_order", {"customer_id": "CU002", "item_id": "M001", "quantity": 2}
    )
    with pytest.raises(ToolError, match="already used this promo code"):
        call_tool(
            dom,
            st,
            "apply_promo",
            {"customer_id": "CU002", "order_id": out["order_id"], "promo_id": "P001"},
        )
    st.set_field("Order", "O0006", "promo_id", None)
    st.set_field("Promo", "P001", "max_uses", 1)
    with pytest.raises(ToolError, match="reached its usage limit"):
        call_tool(
            dom,
            st,
            "apply_promo",
            {"customer_id": "CU002", "order_id": out["order_id"], "promo_id": "P001"},
        )


def test_status_state_machine(dom: Domain) -> None:
    st = _state()
    # cancel only while placed, never once the kitchen has started
    with pytest.raises(ToolError, match="cannot be cancelled"):
        call_tool(dom, st, "cancel_order", {"customer_id": "CU001", "order_id": "O0002"})
    with pytest.raises(ToolError, match="cannot be cancelled"):
        call_tool(dom, st, "cancel_order", {"customer_id": "CU001", "order_id": "O0004"})
    out = call_tool(dom, st, "cancel_order", {"customer_id": "CU001", "order_id": "O0001"})
    assert st.tables["Order"]["O0001"]["status"] == "cancelled"
    refund = st.tables["Refund"][out["refund_id"]]
    assert (refund["amount"], refund["method"], refund["issued_on"]) == ("25.99", "card", TODAY)
    with pytest.raises(ToolError, match="already cancelled"):
        call_tool(dom, st, "cancel_order", {"customer_id": "CU001", "order_id": "O0001"})
    # only an order out for delivery can be confirmed, and only once
    for order in ("O0001", "O0002"):
        with pytest.raises(ToolError, match="not out for delivery"):
            call_tool(dom, st, "confirm_delivery", {"customer_id": "CU001", "order_id": order})
    with pytest.raises(ToolError, match="does not belong"):
        call_tool(dom, st, "confirm_delivery", {"customer_id": "CU002", "order_id": "O0003"})
    assert call_tool(dom, st, "get_courier", {"courier_id": 1})["carrying"] == 1
    call_tool(dom, st, "confirm_delivery", {"customer_id": "CU001", "order_id": "O0003"})
    assert st.tables["Order"]["O0003"]["status"] == "delivered"
    assert call_tool(dom, st, "get_courier", {"courier_id": 1})["carrying"] == 0
    with pytest.raises(ToolError, match="not out for delivery"):
        call_tool(dom, st, "confirm_delivery", {"customer_id": "CU001", "order_id": "O0003"})


def test_refund_cap_window_and_store_credit(dom: Domain) -> None:
    st = _state()
    args = {"customer_id": "CU001", "order_id": "O0004", "method": "credit"}
    assert call_tool(dom, st, "list_refunds", {"order_id": "O0004"})["refundable"] == "15.99"
    # 10.00 of 25.99 is refunded already: 16.00 more would exceed the total
    before = st.copy()
    with pytest.raises(ToolError, match="would exceed its total"):
        call_tool(dom, st, "refund_order", {**args, "amount": "16.00"})
    assert st == before
    call_tool(dom, st, "refund_order", {**args, "amount": "15.99"})
    assert _money(st, "Customer", "CU001", "credit") == Decimal("20.99")
    assert call_tool(dom, st, "list_refunds", {"order_id": "O0004"})["refundable"] == "0.00"
    # older than 14 days, not delivered yet, or someone else's: refused
    with pytest.raises(ToolError, match="more than 14 days ago"):
        call_tool(dom, st, "refund_order", {**args, "order_id": "O0005", "amount": "1.00"})
    with pytest.raises(ToolError, match="has not been delivered"):
        call_tool(dom, st, "refund_order", {**args, "order_id": "O0003", "amount": "1.00"})
    with pytest.raises(ToolError, match="does not belong"):
        call_tool(dom, st, "refund_order", {**args, "customer_id": "CU002", "amount": "1.00"})


def test_partial_profile_update_and_searches(dom: Domain) -> None:
    st = _state()
    assert call_tool(dom, st, "find_customer_by_email", {"email": "ANA@mail.example.com"}) == [
        "CU001"
    ]
    assert [
        r["restaurant_id"] for r in call_tool(dom, st, "find_restaurant_by_name", {"name": "wok"})
    ] == ["R001"]
    assert [m["item_id"] for m in call_tool(dom, st, "get_menu", {"restaurant_id": "R001"})] == [
        "M001",
        "M002",
    ]
    before = st.copy()
    call_tool(dom, st, "update_customer", {"customer_id": "CU002", "address": "9 Elm Road"})
    assert diff(before, st) == [
        ("Customer", "CU002", "address", "4 Green Street, Oakland 80307", "9 Elm Road")
    ]
    before = st.copy()
    call_tool(dom, st, "update_customer", {"customer_id": "CU002", "full_name": "Bo Lindqvist"})
    assert diff(before, st) == [("Customer", "CU002", "full_name", "Bo Li", "Bo Lindqvist")]
    with pytest.raises(ToolError, match="nothing to change"):
        call_tool(dom, st, "update_customer", {"customer_id": "CU002"})
    with pytest.raises(ToolError, match="already the delivery address"):
        call_tool(dom, st, "update_customer", {"customer_id": "CU002", "address": "9 Elm Road"})


def test_generated_states_keep_the_policy_rules(dom: Domain) -> None:
    for seed in range(5):
        st = generate_state(dom, seed)
        orders = st.tables["Order"]
        for o in orders.values():
            active = [p for p in orders.values() if p["customer_id"] == o["customer_id"]]
            active = [
                p for p in active if p["status"] in ("placed", "preparing", "out_for_delivery")
            ]
            assert len(active) <= 3
            assert Decimal(o["total"]) == Decimal(o["food"]) - Decimal(o["discount"]) + Decimal(
                o["delivery_fee"]
            )
        for r in st.tables["Refund"].values():
            order = orders[r["order_id"]]
            assert order["status"] in ("delivered", "cancelled")
            refunded = sum(
                Decimal(x["amount"])
                for x in st.tables["Refund"].values()
                if x["order_id"] == r["order_id"]
            )
            assert refunded <= Decimal(order["total"])


@pytest.fixture(scope="module")
def task_set(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("delivery") / "delivery.jsonl"
    pl.generate("delivery", 15, pl.Options(seed=3, prove=False), output=path)
    return path


def test_generated_set_has_all_kinds_and_is_not_gamed(task_set: Path) -> None:
    tasks = read_taskset(task_set)[1]
    assert len(tasks) == 15
    assert {t.kind for t in tasks} == {"action", "information", "refusal"}
    assert pl.evaluate(task_set, "oracle").success_rate == 1.0
    for agent in ("noop", "echo"):
        assert pl.evaluate(task_set, agent).success_rate == 0.0


def test_generation_is_deterministic(task_set: Path, tmp_path: Path) -> None:
    again = tmp_path / "again.jsonl"
    pl.generate("delivery", 15, pl.Options(seed=3, prove=False), output=again)
    assert again.read_bytes() == task_set.read_bytes()


def test_a_refusal_cites_the_promo_code_not_its_id(dom: Domain) -> None:
    """Refused because the order already has a promo code: the blocking field is an
    optional reference, so the reason to give is the code the customer knows, never the
    internal id."""
    from graphgen.tasks.expand import _blocking_values

    st = generate_state(dom, 0)
    oid, order = next((k, o) for k, o in sorted(st.tables["Order"].items()))
    pid, promo = sorted(st.tables["Promo"].items())[0]
    st.set_field("Order", oid, "status", "placed")
    st.set_field("Order", oid, "promo_id", pid)
    order = st.tables["Order"][oid]
    other = sorted(st.tables["Promo"])[1]
    args = {"customer_id": order["customer_id"], "order_id": oid, "promo_id": other}
    facts = _blocking_values(dom, st, dom.tools["apply_promo"], args)
    assert ("Promo", pid, "code", promo["code"]) in facts
    assert all(v != pid for *_, v in facts), facts
