"""The built-in airline domain: it loads, has the promised shape, and its capacity
preconditions (aggregates over reservations) accept and reject the right bookings."""

from __future__ import annotations

import string
from typing import Any

import pytest

from graphgen import ir
from graphgen.domain import Domain
from graphgen.domains import builtin_names, load_builtin
from graphgen.errors import ToolError
from graphgen.interp import call_tool
from graphgen.state import State


@pytest.fixture(scope="module")
def dom() -> Domain:
    return load_builtin("airline")


def _flight(number: str, date: str, status: str, **kw: Any) -> dict[str, Any]:
    row: dict[str, Any] = dict(
        flight_number=number,
        origin="AP01",
        destination="AP02",
        date=date,
        departure_time="08:00",
        status=status,
        economy_capacity=4,
        business_capacity=2,
        baggage_capacity=10,
        economy_price=200,
        business_price=600,
    )
    row.update(kw)
    return row


@pytest.fixture
def st(dom: Domain) -> State:
    """Two travellers, one route with three flights, economy on FL001 has 1 seat left."""
    s = State.empty(dom)
    s.tables["User"] = {
        "U001": dict(
            email="ana@example.com", name="Ana Ruiz", membership="silver", travel_credit=0
        ),
        "U002": dict(email="bo@example.com", name="Bo Li", membership="regular", travel_credit=250),
    }
    s.tables["PaymentMethod"] = {
        "PM001": dict(user_id="U001", kind="credit_card", label="falcon", available=5000),
        "PM002": dict(user_id="U002", kind="credit_card", label="amber", available=3000),
    }
    s.tables["Airport"] = {
        "AP01": dict(code="DEN", city="Denver"),
        "AP02": dict(code="BOS", city="Boston"),
    }
    s.tables["Flight"] = {
        "FL001": _flight("HA101", "2024-06-01", "scheduled"),
        "FL002": _flight("HA102", "2024-06-02", "scheduled", economy_price=150),
        "FL003": _flight("HA103", "2024-06-02", "cancelled"),
    }
    s.tables["Reservation"] = {
        "R0001": dict(
            user_id="U002",
            flight_id="FL001",
            cabin="economy",
            passengers=3,
            bags=2,
            status="booked",
            insurance=False,
            payment_id="PM002",
            amount_paid=600,
        ),
        "R0002": dict(
            user_id="U001",
            flight_id="FL003",
            cabin="economy",
            passengers=1,
            bags=1,
            status="booked",
            insurance=False,
            payment_id="PM001",
            amount_paid=200,
        ),
    }
    s.counters.update(User=3, PaymentMethod=3, Airport=3, Flight=4, Reservation=7)
    return s


def _book(**over: Any) -> dict[str, Any]:
    args: dict[str, Any] = dict(
        user_id="U001",
        flight_id="FL001",
        cabin="economy",
        passengers=1,
        bags=3,
        insurance=True,
        payment_id="PM001",
    )
    args.update(over)
    return args


def test_is_builtin_and_has_the_promised_shape(dom: Domain) -> None:
    assert "airline" in builtin_names()
    assert len(dom.tools) >= 14
    guarded = [
        t.name
        for t in dom.write_tools
        if any(isinstance(n, ir.Agg) for c in t.requires for n in ir.walk(c.expr))
    ]
    assert len(guarded) >= 6, guarded
    assert {
        "book_reservation",
        "change_flight",
        "change_cabin",
        "add_passengers",
        "update_baggage",
    } <= set(guarded)
    for e in dom.entities.values():
        assert e.display is not None and e.size > 0, e.name
    assert not dom.entities["User"].key_givable
    assert not dom.entities["Reservation"].key_givable
    assert dom.entities["Flight"].fields["flight_number"].givable
    assert dom.policy.strip()


def test_every_tool_is_documented_and_intents_only_name_givable_params(dom: Domain) -> None:
    for t in dom.tools.values():
        assert t.description, t.name
        assert 1 <= len(t.intents) <= 3, t.name
        assert all(c.message for c in t.requires), t.name
        for p in t.params.values():
            assert p.description, (t.name, p.name)
        named = {f for it in t.intents for _, f, _, _ in string.Formatter().parse(it.text) if f}
        # An id placeholder is said as a noun phrase ("my reservation on flight GG123"),
        # never as the id; the traveller's own user id is never a placeholder ("me").
        assert "user_id" not in named, t.name
        # Every argument of a request but the traveller is named, so nothing is implicit.
        if t.is_write:
            assert {n for n in t.params if n != "user_id"} <= named, t.name


def test_booking_that_fits_charges_the_total(dom: Domain, st: State) -> None:
    # silver, 1 passenger: 2 free bags, so 1 extra bag (50) + fare 200 + insurance 30
    rid = call_tool(dom, st, "book_reservation", _book())
    row = st.tables["Reservation"][rid]
    assert row["amount_paid"] == 280
    assert row["status"] == "booked" and row["flight_id"] == "FL001"
    assert st.tables["PaymentMethod"]["PM001"]["available"] == 5000 - 280
    assert (
        call_tool(dom, st, "count_available_seats", {"flight_id": "FL001", "cabin": "economy"}) == 0
    )


def test_booking_over_capacity_is_rejected_and_state_unchanged(dom: Domain, st: State) -> None:
    before = st.copy()
    with pytest.raises(ToolError) as exc:
        call_tool(dom, st, "book_reservation", _book(passengers=2))
    assert exc.value.kind == "precondition"
    assert "not enough economy seats" in exc.value.message
    assert "2 passenger(s)" in exc.value.message
    assert st == before
    # business has its own capacity, so the same party fits there
    call_tool(dom, st, "book_reservation", _book(passengers=2, cabin="business"))
    assert st != before


def test_hold_capacity_and_ownership_are_checked(dom: Domain, st: State) -> None:
    before = st.copy()
    with pytest.raises(ToolError, match="hold has no room"):
        call_tool(dom, st, "book_reservation", _book(bags=9))
    with pytest.raises(ToolError, match="does not belong"):
        call_tool(dom, st, "book_reservation", _book(payment_id="PM002"))
    assert st == before


def test_created_reservation_gets_the_next_deterministic_id(dom: Domain, st: State) -> None:
    rid = call_tool(dom, st, "book_reservation", _book())
    assert rid == "R0007"
    assert st.counters["Reservation"] == 8
    cert = call_tool(dom, st, "issue_travel_certificate", {"user_id": "U002", "amount": 100})
    assert cert == "PM003"
    assert st.tables["PaymentMethod"][cert]["available"] == 100
    assert st.tables["User"]["U002"]["travel_credit"] == 150


def test_rebooking_chain_after_airline_cancellation(dom: Domain, st: State) -> None:
    """email -> user -> reservations -> details -> flight -> search -> change_flight."""
    [uid] = call_tool(dom, st, "find_user_by_email", {"email": "ana@example.com"})
    [rid] = call_tool(dom, st, "list_user_reservations", {"user_id": uid})
    res = call_tool(dom, st, "get_reservation_details", {"reservation_id": rid})
    fl = call_tool(dom, st, "get_flight_details", {"flight_id": res["flight_id"]})
    assert fl["status"] == "cancelled"
    alts = call_tool(
        dom,
        st,
        "search_direct_flights",
        {"origin": fl["origin"], "destination": fl["destination"], "date": fl["date"]},
    )
    assert alts == ["FL002"]  # the cancelled flight itself is not offered
    out = call_tool(
        dom, st, "change_flight", {"user_id": uid, "reservation_id": rid, "new_flight_id": alts[0]}
    )
    row = st.tables["Reservation"][rid]
    assert out == {"reservation_id": rid, **row}  # the write shows what it changed
    assert row["flight_id"] == "FL002"
    # the airline cancelled the original flight, so no fare difference either way
    assert row["amount_paid"] == 200
    assert st.tables["PaymentMethod"]["PM001"]["available"] == 5000


def test_bag_fees_follow_membership_and_bags_never_decrease(dom: Domain, st: State) -> None:
    with pytest.raises(ToolError, match="not removed"):
        call_tool(
            dom, st, "update_baggage", {"user_id": "U002", "reservation_id": "R0001", "bags": 2}
        )
    # regular, 3 passengers: 3 free bags; 2 -> 5 makes 2 chargeable bags
    out = call_tool(
        dom, st, "update_baggage", {"user_id": "U002", "reservation_id": "R0001", "bags": 5}
    )
    assert out["bags"] == 5 and out["amount_paid"] == 700
    assert st.tables["PaymentMethod"]["PM002"]["available"] == 3000 - 100
    assert st.tables["Reservation"]["R0001"]["amount_paid"] == 700


def test_cancellation_refund_depends_on_insurance(dom: Domain, st: State) -> None:
    out = call_tool(dom, st, "cancel_reservation", {"user_id": "U002", "reservation_id": "R0001"})
    assert out == {"refunded_to_payment_method": 0, "travel_credit_added": 500}
    assert st.tables["User"]["U002"]["travel_credit"] == 750
    rid = call_tool(dom, st, "book_reservation", _book())
    out = call_tool(dom, st, "cancel_reservation", {"user_id": "U001", "reservation_id": rid})
    assert out == {"refunded_to_payment_method": 280, "travel_credit_added": 0}
    assert st.tables["PaymentMethod"]["PM001"]["available"] == 5000


def test_reservation_writes_refuse_another_travellers_booking(dom: Domain, st: State) -> None:
    # Ana (U001) names Bo's booking R0001: every reservation write refuses it in plain
    # words, without showing Bo's id or booking, and nothing changes.
    before = st.copy()
    calls: list[tuple[str, dict[str, Any]]] = [
        ("cancel_reservation", {}),
        ("change_cabin", {"cabin": "business"}),
        ("change_flight", {"new_flight_id": "FL002"}),
        ("add_passengers", {"count": 1}),
        ("update_baggage", {"bags": 4}),
        ("remove_insurance", {}),
    ]
    for tool, extra in calls:
        with pytest.raises(ToolError) as err:
            call_tool(dom, st, tool, {"user_id": "U001", "reservation_id": "R0001", **extra})
        assert err.value.message == f"{tool}: reservation R0001 does not belong to user U001"
        assert "U002" in err.value.detail and "U002" not in err.value.message
    assert st == before


def test_writes_return_the_rows_they_change(dom: Domain, st: State) -> None:
    rid = call_tool(dom, st, "book_reservation", _book(insurance=True, bags=0))
    ana = {"user_id": "U001", "reservation_id": rid}
    for tool, extra, field, value in [
        ("change_cabin", {"cabin": "business"}, "cabin", "business"),
        ("add_passengers", {"count": 1}, "passengers", 2),
        ("update_baggage", {"bags": 2}, "bags", 2),
        ("remove_insurance", {}, "insurance", False),
        ("change_flight", {"new_flight_id": "FL002"}, "flight_id", "FL002"),
    ]:
        out = call_tool(dom, st, tool, {**ana, **extra})
        assert out == {"reservation_id": rid, **st.tables["Reservation"][rid]}, tool
        assert out[field] == value, tool
    user = call_tool(dom, st, "update_membership", {"user_id": "U001", "membership": "regular"})
    assert user == {"user_id": "U001", **st.tables["User"]["U001"]}
    assert user["membership"] == "regular"


def test_hold_room_left_is_readable(dom: Domain, st: State) -> None:
    # FL001 takes 10 bags; Bo's booked reservation holds 2 of them.
    assert call_tool(dom, st, "count_available_bag_space", {"flight_id": "FL001"}) == 8
    call_tool(dom, st, "book_reservation", _book(bags=3))
    assert call_tool(dom, st, "count_available_bag_space", {"flight_id": "FL001"}) == 5
