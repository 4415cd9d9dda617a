"""The built-in retail domain: it loads, has the promised shape, and its tools behave."""

from __future__ import annotations

import string
from typing import Any

import pytest

from graphgen.domain import Domain
from graphgen.domains import builtin_names, builtin_path
from graphgen.errors import ToolError
from graphgen.interp import call_tool
from graphgen.load import load_domain
from graphgen.state import State, diff
from graphgen.types import RefT


@pytest.fixture(scope="module")
def dom() -> Domain:
    return load_domain(builtin_path("retail"))


def _order(
    user: str, status: str, items: list[str], total: int, pm: str, placed_on: str
) -> dict[str, Any]:
    return {
        "user_id": user,
        "status": status,
        "items": items,
        "total": total,
        "payment_method_id": pm,
        "street": "1 Elm St",
        "city": "Oslo",
        "zip": "10001",
        "placed_on": placed_on,
    }


def _state() -> State:
    """Two customers; Ana has a pending gift-card order and a delivered card order."""
    return State(
        {
            "User": {
                "U0001": {
                    "email": "ana@x.org",
                    "first_name": "Ana",
                    "last_name": "Ruiz",
                    "street": "1 Elm St",
                    "city": "Oslo",
                    "zip": "10001",
                },
                "U0002": {
                    "email": "bo@x.org",
                    "first_name": "Bo",
                    "last_name": "Li",
                    "street": "2 Oak St",
                    "city": "Rome",
                    "zip": "20002",
                },
            },
            "PaymentMethod": {
                "PM0001": {
                    "user_id": "U0001",
                    "kind": "gift_card",
                    "balance": 50,
                    "funded_by": None,
                },
                "PM0002": {
                    "user_id": "U0001",
                    "kind": "credit_card",
                    "balance": 0,
                    "funded_by": None,
                },
                "PM0003": {
                    "user_id": "U0002",
                    "kind": "gift_card",
                    "balance": 500,
                    "funded_by": None,
                },
            },
            "Product": {"PR001": {"name": "Trail Shoe"}, "PR002": {"name": "Desk Lamp"}},
            "Item": {
                "IT0001": {
                    "product_id": "PR001",
                    "color": "red",
                    "size": "M",
                    "price": 80,
                    "available": True,
                },
                "IT0002": {
                    "product_id": "PR001",
                    "color": "blue",
                    "size": "M",
                    "price": 95,
                    "available": True,
                },
                "IT0003": {
                    "product_id": "PR001",
                    "color": "green",
                    "size": "M",
                    "price": 70,
                    "available": False,
                },
                "IT0004": {
                    "product_id": "PR002",
                    "color": "black",
                    "size": "one",
                    "price": 40,
                    "available": True,
                },
            },
            "Order": {
                "O0001": _order(
                    "U0001", "pending", ["IT0001", "IT0004"], 120, "PM0001", "2024-05-01"
                ),
                "O0002": _order("U0001", "delivered", ["IT0001"], 80, "PM0002", "2024-04-01"),
                "O0003": _order("U0002", "processed", ["IT0004"], 40, "PM0003", "2024-04-10"),
            },
        },
        {"User": 3, "PaymentMethod": 4, "Product": 3, "Item": 5, "Order": 4},
    )


def test_retail_is_builtin_and_loads(dom: Domain) -> None:
    assert "retail" in builtin_names()
    assert dom.name == "retail"
    assert set(dom.entities) == {"User", "PaymentMethod", "Product", "Item", "Order"}
    assert len(dom.tools) >= 14
    assert len(dom.write_tools) >= 6
    assert dom.policy.strip()
    # Customers never know internal ids, but they know their email.
    assert not any(e.key_givable for e in dom.entities.values())
    assert dom.entities["User"].fields["email"].givable
    assert dom.entities["User"].fields["email"].unique


def test_every_tool_is_documented(dom: Domain) -> None:
    for t in dom.tools.values():
        assert t.description, t.name
        assert t.intents, t.name
        assert all(p.description for p in t.params.values()), t.name
        named = {f for it in t.intents for _, f, _, _ in string.Formatter().parse(it.text) if f}
        # Every value the customer supplies appears in some intent (today's date is said
        # once, by the opener); a user id never does: customers are identified by lookups.
        today = {p for p in t.params if (ph := dom.phrases.get(f"{t.name}.{p}")) and ph.now}
        supplied = {n for n, p in t.params.items() if p.ty != RefT("User")} - today
        assert supplied <= named, (t.name, supplied - named)
        assert "user_id" not in named, t.name


def test_cancel_chain_refunds_gift_card(dom: Domain) -> None:
    st = _state()
    before = st.copy()
    users = call_tool(dom, st, "find_user_id_by_email", {"email": "ana@x.org"})
    assert users == ["U0001"]
    pending = call_tool(
        dom, st, "find_user_orders_by_status", {"user_id": users[0], "status": "pending"}
    )
    assert pending == ["O0001"]
    out = call_tool(dom, st, "cancel_pending_order", {"user_id": users[0], "order_id": pending[0]})
    assert out["status"] == "cancelled"
    assert diff(before, st) == [
        ("Order", "O0001", "status", "pending", "cancelled"),
        ("PaymentMethod", "PM0001", "balance", 50, 170),
    ]


def test_exchange_chain_of_five_calls(dom: Domain) -> None:
    st = _state()
    [uid] = call_tool(
        dom,
        st,
        "find_user_id_by_name_zip",
        {"first_name": "Ana", "last_name": "Ruiz", "zip": "10001"},
    )
    delivered = call_tool(
        dom, st, "find_user_orders_by_status", {"user_id": uid, "status": "delivered"}
    )
    order = call_tool(dom, st, "get_order_details", {"order_id": delivered[0]})
    alternatives = call_tool(dom, st, "list_available_variants", {"item_id": order["items"][0]})
    assert alternatives == ["IT0002"]  # IT0003 is out of stock, IT0004 another product
    call_tool(
        dom,
        st,
        "exchange_delivered_order_item",
        {"user_id": uid, "order_id": "O0002", "item_id": "IT0001", "new_item_id": alternatives[0]},
    )
    row = st.tables["Order"]["O0002"]
    assert (row["items"], row["total"], row["status"]) == (["IT0002"], 95, "exchanged")


def test_precondition_failure_is_readable(dom: Domain) -> None:
    st = _state()
    with pytest.raises(ToolError) as err:
        call_tool(dom, st, "cancel_pending_order", {"user_id": "U0002", "order_id": "O0003"})
    assert err.value.kind == "precondition"
    assert err.value.message == (
        "cancel_pending_order: order O0003 is not pending, so it can no longer be cancelled"
    )
    # The condition and the values it read are for developers only.
    assert "processed" in err.value.detail and "requires Order[order_id]" in err.value.detail
    with pytest.raises(ToolError, match="does not belong to user U0001"):
        call_tool(
            dom,
            st,
            "modify_pending_order_payment",
            {"user_id": "U0001", "order_id": "O0001", "payment_method_id": "PM0003"},
        )
    with pytest.raises(ToolError, match="not a variant of the same product"):
        call_tool(
            dom,
            st,
            "exchange_delivered_order_item",
            {"user_id": "U0001", "order_id": "O0002", "item_id": "IT0001", "new_item_id": "IT0004"},
        )


def test_order_writes_refuse_another_customers_order(dom: Domain) -> None:
    # Ana (U0001) names Bo's order O0003: every order write refuses it, in plain words,
    # before looking at anything else of Bo's, and nothing changes.
    st = _state()
    before = st.copy()
    calls: list[tuple[str, dict[str, Any]]] = [
        ("cancel_pending_order", {}),
        ("modify_pending_order_address", {"street": "9 Pine", "city": "Oslo", "zip": "1"}),
        ("modify_pending_order_payment", {"payment_method_id": "PM0002"}),
        ("modify_pending_order_item", {"item_id": "IT0004", "new_item_id": "IT0002"}),
        ("return_delivered_order", {"payment_method_id": "PM0002"}),
        ("exchange_delivered_order_item", {"item_id": "IT0004", "new_item_id": "IT0002"}),
    ]
    for tool, extra in calls:
        with pytest.raises(ToolError) as err:
            call_tool(dom, st, tool, {"user_id": "U0001", "order_id": "O0003", **extra})
        assert err.value.message == f"{tool}: order O0003 does not belong to user U0001"
        assert "U0002" not in err.value.message and "processed" not in err.value.message
        assert "U0002" in err.value.detail  # the owner is shown to developers only
    assert st == before


def test_catalogue_can_be_listed_and_searched(dom: Domain) -> None:
    st = _state()
    products = call_tool(dom, st, "list_products", {})
    assert products == [
        {"product_id": "PR001", "name": "Trail Shoe"},
        {"product_id": "PR002", "name": "Desk Lamp"},
    ]
    red = call_tool(dom, st, "find_product_items_by_color", {"product_id": "PR001", "color": "red"})
    assert [i["item_id"] for i in red] == ["IT0001"] and red[0]["size"] == "M"
    medium = call_tool(dom, st, "find_product_items_by_size", {"product_id": "PR001", "size": "M"})
    assert [(i["item_id"], i["color"]) for i in medium] == [
        ("IT0001", "red"),
        ("IT0002", "blue"),
        ("IT0003", "green"),
    ]
    assert call_tool(dom, st, "find_product_by_name", {"name": "trail shoe"}) == []


@pytest.mark.parametrize(
    ("tool", "args"),
    [
        (
            "return_delivered_order",
            {"user_id": "U0001", "order_id": "O0002", "payment_method_id": "PM0003"},
        ),
        (
            "place_order",
            {
                "user_id": "U0001",
                "item_id": "IT0002",
                "payment_method_id": "PM0001",
                "placed_on": "2024-06-01",
            },
        ),
        ("add_gift_card", {"user_id": "U0001", "funding_method_id": "PM0001", "amount": 20}),
        (
            "modify_pending_order_item",
            {"user_id": "U0001", "order_id": "O0001", "item_id": "IT0001", "new_item_id": "IT0003"},
        ),
    ],
)
def test_tool_error_leaves_state_unchanged(dom: Domain, tool: str, args: dict[str, Any]) -> None:
    st = _state()
    before = st.copy()
    with pytest.raises(ToolError):
        call_tool(dom, st, tool, args)
    assert st == before


def test_failure_inside_effects_rolls_back(dom: Domain) -> None:
    # The refund would push the gift card past its maximum balance: the status change
    # already applied must be undone too.
    st = _state()
    st.set_field("PaymentMethod", "PM0001", "balance", 99_990)
    before = st.copy()
    with pytest.raises(ToolError, match="above the maximum"):
        call_tool(dom, st, "cancel_pending_order", {"user_id": "U0001", "order_id": "O0001"})
    assert st == before


def test_gift_card_and_new_order_get_deterministic_ids(dom: Domain) -> None:
    st = _state()
    card = call_tool(
        dom, st, "add_gift_card", {"user_id": "U0001", "funding_method_id": "PM0002", "amount": 100}
    )
    assert card == "PM0004"
    order = call_tool(
        dom,
        st,
        "place_order",
        {
            "user_id": "U0001",
            "item_id": "IT0002",
            "payment_method_id": card,
            "placed_on": "2024-06-01",
        },
    )
    assert order == "O0004"
    assert st.tables["PaymentMethod"][card]["balance"] == 5
    assert st.tables["Order"][order]["status"] == "pending"
    assert st.tables["Order"][order]["items"] == ["IT0002"]
    call_tool(
        dom, st, "add_gift_card", {"user_id": "U0001", "funding_method_id": "PM0002", "amount": 10}
    )
    with pytest.raises(ToolError, match="maximum of three gift cards"):
        call_tool(
            dom,
            st,
            "add_gift_card",
            {"user_id": "U0001", "funding_method_id": "PM0002", "amount": 10},
        )


def test_a_gift_card_records_what_paid_for_it_and_grading_checks_it(dom: Domain) -> None:
    """A request for "a gift card paid with my credit card" is graded on the method that
    paid: the new card records it (``funded_by``), so the same card bought with the
    customer's PayPal account instead fails the grade. Another gift card still cannot
    pay for one."""
    from graphgen.grading import grade

    st = _state()
    st.put_row(
        "PaymentMethod",
        "PM0009",
        {"user_id": "U0001", "kind": "paypal", "balance": 0, "funded_by": None},
    )
    by_card, by_paypal = st.copy(), st.copy()
    card = call_tool(
        dom,
        by_card,
        "add_gift_card",
        {"user_id": "U0001", "funding_method_id": "PM0002", "amount": 60},
    )
    assert by_card.tables["PaymentMethod"][card]["funded_by"] == "PM0002"
    call_tool(
        dom,
        by_paypal,
        "add_gift_card",
        {"user_id": "U0001", "funding_method_id": "PM0009", "amount": 60},
    )
    after = by_card.tables["PaymentMethod"][card]
    goal = {
        "changes": [
            {"entity": "PaymentMethod", "key": card, "field": "*", "before": None, "after": after}
        ]
    }
    initial = st.to_dict()
    assert grade(initial, by_card.to_dict(), goal)["success"]
    assert not grade(initial, by_paypal.to_dict(), goal)["success"]
    with pytest.raises(ToolError, match="cannot be bought with another gift card"):
        call_tool(
            dom,
            st,
            "add_gift_card",
            {"user_id": "U0001", "funding_method_id": "PM0001", "amount": 60},
        )
