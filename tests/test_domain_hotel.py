"""The built-in hotel domain: its shape, its tools on a small hand-made state (tier
discounts in decimals, the overlap capacity rule, the reservation state machine, refunds
by days before arrival, soft failures for early check-in and tier upgrades, add-ons and
loyalty points), and a generated task set that baselines cannot game. Decimals are read
and written as their text ('537.30')."""

from __future__ import annotations

import string
from pathlib import Path
from typing import Any

import pytest

from graphgen import pipeline as pl
from graphgen.domain import Domain
from graphgen.domains import builtin_names, load_builtin
from graphgen.errors import ToolError
from graphgen.interp import call_tool, run_call
from graphgen.state import State, diff
from graphgen.tasks.taskset import read_taskset
from graphgen.types import EnumT, RefT, strip_opt

TODAY = "2026-06-10"


@pytest.fixture(scope="module")
def dom() -> Domain:
    return load_builtin("hotel")


def _res(
    guest: str, rt: str, check_in: str, nights: int, status: str, total: str
) -> dict[str, Any]:
    return {
        "guest_id": guest,
        "room_type_id": rt,
        "check_in": check_in,
        "nights": nights,
        "guests": 2,
        "status": status,
        "total": total,
        "refunded": "0.00",
        "special_request": None,
    }


def _state() -> State:
    """Two guests, one hotel with two room types; RT001 has 2 rooms, RT002 has 1.

    Ana (gold) holds a booked stay in 10 days, a booked stay arriving in 3 days, a stay
    arriving today and one she is in; Bo (platinum) has a booked stay tomorrow."""
    return State(
        {
            "Guest": {
                "G0001": {
                    "email": "ana@mail.example.com",
                    "phone": "415-555-0101",
                    "full_name": "Ana Ruiz",
                    "tier": "gold",
                    "points": 29500,
                },
                "G0002": {
                    "email": "bo@mail.example.com",
                    "phone": "415-555-0102",
                    "full_name": "Bo Li",
                    "tier": "platinum",
                    "points": 70000,
                },
            },
            "Hotel": {
                "H01": {"name": "Harbor View Hotel", "city": "Lisbon", "stars": 4},
                "H02": {"name": "Old Town Inn", "city": "Porto", "stars": 3},
            },
            "RoomType": {
                "RT001": {
                    "hotel_id": "H01",
                    "name": "Deluxe King",
                    "nightly_rate": "199.00",
                    "rooms": 2,
                    "max_guests": 2,
                },
                "RT002": {
                    "hotel_id": "H01",
                    "name": "Family Room",
                    "nightly_rate": "249.00",
                    "rooms": 1,
                    "max_guests": 4,
                },
                "RT003": {
                    "hotel_id": "H02",
                    "name": "Standard Twin",
                    "nightly_rate": "99.00",
                    "rooms": 3,
                    "max_guests": 2,
                },
            },
            "Reservation": {
                # 3 nights at 199.00 less 10% = 537.30
                "R00001": _res("G0001", "RT001", "2026-06-20", 3, "booked", "537.30"),
                "R00002": _res("G0001", "RT002", "2026-06-13", 2, "booked", "448.20"),
                "R00003": _res("G0001", "RT001", "2026-06-10", 2, "cancelled", "358.20"),
                "R00004": _res("G0001", "RT003", "2026-06-08", 4, "checked_in", "356.40"),
                "R00005": _res("G0002", "RT001", "2026-06-11", 2, "booked", "338.30"),
            },
            "AddOn": {
                "AD0001": {"reservation_id": "R00001", "kind": "breakfast", "price": "45.00"},
            },
        },
        {"Guest": 3, "Hotel": 3, "RoomType": 4, "Reservation": 6, "AddOn": 2},
        TODAY,
    )


def test_is_builtin_and_has_the_promised_shape(dom: Domain) -> None:
    assert "hotel" in builtin_names()
    assert len(dom.tools) >= 15
    assert len(dom.write_tools) >= 6
    assert len(dom.entities) >= 4
    refs = {
        (e.name, strip_opt(f.ty).entity)
        for e in dom.entities.values()
        for f in e.fields.values()
        if isinstance(strip_opt(f.ty), RefT)
    }
    assert {
        ("RoomType", "Hotel"),
        ("Reservation", "Guest"),
        ("Reservation", "RoomType"),
        ("AddOn", "Reservation"),
    } <= refs
    status = dom.entities["Reservation"].fields["status"].ty
    assert isinstance(status, EnumT) and len(status.values) == 4
    assert dom.policy.strip()


def test_every_tool_is_documented_and_intents_name_what_users_supply(dom: Domain) -> None:
    for t in dom.tools.values():
        assert t.description, t.name
        assert t.intents, t.name
        assert all(p.description for p in t.params.values()), t.name
        named = {f for it in t.intents for _, f, _, _ in string.Formatter().parse(it.text) if f}
        named = {f.split(":")[0] for f in named}
        supplied = {n for n, p in t.params.items() if strip_opt(p.ty) != RefT("Guest")}
        assert supplied <= named, (t.name, supplied - named)
        assert "guest_id" not in named, t.name


def test_booking_prices_with_the_tier_discount_and_takes_the_next_id(dom: Domain) -> None:
    st = _state()
    # Ana is gold (10% off): 2 nights at 99.00 = 198.00 -> 178.20
    out = call_tool(
        dom,
        st,
        "book_room",
        {
            "guest_id": "G0002",
            "room_type_id": "RT003",
            "check_in": "2026-07-01",
            "nights": 2,
            "guests": 2,
        },
    )
    # Bo is platinum (15% off): 198.00 -> 168.30
    assert out["reservation_id"] == "R00006" and out["total"] == "168.30"
    row = st.tables["Reservation"]["R00006"]
    assert (row["status"], row["refunded"], row["special_request"]) == ("booked", "0.00", None)
    assert (
        call_tool(
            dom, st, "quote_stay", {"guest_id": "G0001", "room_type_id": "RT003", "nights": 2}
        )
        == "178.20"
    )


def test_booking_preconditions(dom: Domain) -> None:
    st = _state()
    base = {
        "guest_id": "G0002",
        "room_type_id": "RT003",
        "check_in": "2026-07-01",
        "nights": 2,
        "guests": 2,
    }
    with pytest.raises(ToolError, match="is in the past"):
        call_tool(dom, st, "book_room", {**base, "check_in": "2026-06-09"})
    with pytest.raises(ToolError, match="takes fewer than 3 guests"):
        call_tool(dom, st, "book_room", {**base, "guests": 3})
    # Ana already holds 3 active reservations (two booked, one checked in)
    with pytest.raises(ToolError, match="already holds 3 active reservations"):
        call_tool(dom, st, "book_room", {**base, "guest_id": "G0001"})


def test_capacity_counts_overlapping_active_stays(dom: Domain) -> None:
    st = _state()
    # RT002 has one room, taken 06-13..06-15 by R00002: an overlapping stay is refused,
    # one starting the morning R00002 leaves is not.
    with pytest.raises(ToolError, match="fully booked"):
        call_tool(
            dom,
            st,
            "book_room",
            {
                "guest_id": "G0002",
                "room_type_id": "RT002",
                "check_in": "2026-06-14",
                "nights": 3,
                "guests": 2,
            },
        )
    assert (
        call_tool(
            dom,
            st,
            "check_availability",
            {"room_type_id": "RT002", "check_in": "2026-06-14", "nights": 3},
        )
        == 0
    )
    assert (
        call_tool(
            dom,
            st,
            "check_availability",
            {"room_type_id": "RT002", "check_in": "2026-06-15", "nights": 3},
        )
        == 1
    )
    call_tool(
        dom,
        st,
        "book_room",
        {
            "guest_id": "G0002",
            "room_type_id": "RT002",
            "check_in": "2026-06-15",
            "nights": 3,
            "guests": 2,
        },
    )
    # RT001 has two rooms; R00005 (06-11..06-13) is active, the cancelled R00003 does not
    # count, so moving Ana's 06-20 stay to 06-11 fits, and then a third stay on 06-12 does not.
    call_tool(
        dom,
        st,
        "change_stay_dates",
        {"guest_id": "G0001", "reservation_id": "R00001", "check_in": "2026-06-11"},
    )
    assert (
        call_tool(
            dom,
            st,
            "check_availability",
            {"room_type_id": "RT001", "check_in": "2026-06-12", "nights": 1},
        )
        == 0
    )
    with pytest.raises(ToolError, match="fully booked"):
        call_tool(
            dom,
            st,
            "book_room",
            {
                "guest_id": "G0002",
                "room_type_id": "RT001",
                "check_in": "2026-06-12",
                "nights": 1,
                "guests": 1,
            },
        )
    # R00002 (06-13..06-15) overlaps only the moved stay, so it may still move to RT001
    call_tool(
        dom,
        st,
        "change_room_type",
        {"guest_id": "G0001", "reservation_id": "R00002", "room_type_id": "RT001"},
    )
    assert st.tables["Reservation"]["R00002"]["total"] == "358.20"


def test_changes_recompute_the_charge_and_keep_add_ons(dom: Domain) -> None:
    st = _state()
    before = st.copy()
    call_tool(
        dom, st, "change_stay_dates", {"guest_id": "G0001", "reservation_id": "R00001", "nights": 4}
    )
    # 4 x 199.00 less 10% = 716.40, plus breakfast 45.00
    assert diff(before, st) == [
        ("Reservation", "R00001", "nights", 3, 4),
        ("Reservation", "R00001", "total", "537.30", "761.40"),
    ]
    with pytest.raises(ToolError, match="nothing to change"):
        call_tool(dom, st, "change_stay_dates", {"guest_id": "G0001", "reservation_id": "R00001"})
    with pytest.raises(ToolError, match="not at the hotel"):
        call_tool(
            dom,
            st,
            "change_room_type",
            {"guest_id": "G0001", "reservation_id": "R00001", "room_type_id": "RT003"},
        )
    with pytest.raises(ToolError, match="does not belong to guest G0002"):
        call_tool(
            dom,
            st,
            "change_stay_dates",
            {"guest_id": "G0002", "reservation_id": "R00001", "nights": 2},
        )


def test_refund_depends_on_days_before_arrival_and_tier(dom: Domain) -> None:
    st = _state()
    # 10 days ahead: 100%
    assert (
        call_tool(
            dom, st, "get_cancellation_refund", {"guest_id": "G0001", "reservation_id": "R00001"}
        )
        == "537.30"
    )
    # 3 days ahead: 50%, rounded to the cent
    out = call_tool(
        dom, st, "cancel_reservation", {"guest_id": "G0001", "reservation_id": "R00002"}
    )
    assert (out["refund_percent"], out["refund"]) == (50, "224.10")
    row = st.tables["Reservation"]["R00002"]
    assert (row["status"], row["refunded"]) == ("cancelled", "224.10")
    # 1 day ahead: nothing for gold, but platinum Bo gets everything back
    out = call_tool(
        dom, st, "cancel_reservation", {"guest_id": "G0002", "reservation_id": "R00005"}
    )
    assert out["refund"] == "338.30"
    # cancelling is a one-way door
    with pytest.raises(ToolError, match="is not booked"):
        call_tool(dom, st, "cancel_reservation", {"guest_id": "G0001", "reservation_id": "R00002"})


def test_state_machine_with_early_check_in_as_soft_failure(dom: Domain) -> None:
    st = _state()
    before = st.copy()
    # R00001 arrives in 10 days: check-in answers success False and changes nothing
    out = run_call(dom, st, "check_in_guest", {"guest_id": "G0001", "reservation_id": "R00001"})
    assert (
        out.soft_failed and out.value["success"] is False and "2026-06-20" in out.value["message"]
    )
    assert st == before
    # a checked-in stay cannot be checked in again or cancelled; it can be checked out
    with pytest.raises(ToolError, match="not booked, so it cannot be checked in"):
        call_tool(dom, st, "check_in_guest", {"guest_id": "G0001", "reservation_id": "R00004"})
    with pytest.raises(ToolError, match="not checked in, so it cannot be checked out"):
        call_tool(dom, st, "check_out_guest", {"guest_id": "G0001", "reservation_id": "R00001"})
    out = call_tool(dom, st, "check_out_guest", {"guest_id": "G0001", "reservation_id": "R00004"})
    # 4 nights at 200 points a night (gold)
    assert out["points_earned"] == 800 and st.tables["Guest"]["G0001"]["points"] == 30300
    assert st.tables["Reservation"]["R00004"]["status"] == "checked_out"
    with pytest.raises(ToolError, match="not checked in"):
        call_tool(dom, st, "check_out_guest", {"guest_id": "G0001", "reservation_id": "R00004"})


def test_add_ons_once_each_and_removed_only_while_booked(dom: Domain) -> None:
    st = _state()
    with pytest.raises(ToolError, match="already has breakfast"):
        call_tool(
            dom,
            st,
            "add_addon",
            {"guest_id": "G0001", "reservation_id": "R00001", "kind": "breakfast"},
        )
    out = call_tool(
        dom, st, "add_addon", {"guest_id": "G0001", "reservation_id": "R00004", "kind": "parking"}
    )
    assert out["total"] == "386.40"
    with pytest.raises(ToolError, match="no longer booked"):
        call_tool(
            dom,
            st,
            "remove_addon",
            {"guest_id": "G0001", "reservation_id": "R00004", "kind": "parking"},
        )
    out = call_tool(
        dom,
        st,
        "remove_addon",
        {"guest_id": "G0001", "reservation_id": "R00001", "kind": "breakfast"},
    )
    assert out["total"] == "492.30" and "AD0001" not in st.tables["AddOn"]
    with pytest.raises(ToolError, match="has no breakfast"):
        call_tool(
            dom,
            st,
            "remove_addon",
            {"guest_id": "G0001", "reservation_id": "R00001", "kind": "breakfast"},
        )


def test_tier_upgrade_needs_points_and_fails_softly(dom: Domain) -> None:
    st = _state()
    before = st.copy()
    # gold -> platinum needs 60000; Ana has 29500
    out = run_call(dom, st, "upgrade_tier", {"guest_id": "G0001"})
    assert out.soft_failed and out.value["success"] is False and st == before
    with pytest.raises(ToolError, match="already on the highest tier"):
        call_tool(dom, st, "upgrade_tier", {"guest_id": "G0002"})
    # silver -> gold needs 30000: 500 short fails softly, exactly 30000 is enough
    st.set_field("Guest", "G0001", "tier", "silver")
    assert run_call(dom, st, "upgrade_tier", {"guest_id": "G0001"}).soft_failed
    st.set_field("Guest", "G0001", "points", 30000)
    out = run_call(dom, st, "upgrade_tier", {"guest_id": "G0001"})
    assert not out.soft_failed and st.tables["Guest"]["G0001"]["tier"] == "gold"
    assert st.tables["Guest"]["G0001"]["points"] == 30000  # points are not spent


def test_searches_and_lists(dom: Domain) -> None:
    st = _state()
    assert call_tool(dom, st, "find_guest_by_phone", {"phone": "415-555-0102"}) == ["G0002"]
    assert [
        h["hotel_id"] for h in call_tool(dom, st, "find_hotel_by_name", {"name": "old town inn"})
    ] == ["H02"]
    assert [h["hotel_id"] for h in call_tool(dom, st, "list_hotels", {"city": "lisbon"})] == ["H01"]
    assert [
        r["room_type_id"] for r in call_tool(dom, st, "list_room_types", {"hotel_id": "H01"})
    ] == ["RT001", "RT002"]
    found = call_tool(
        dom, st, "find_reservation_by_arrival", {"guest_id": "G0001", "check_in": "2026-06-13"}
    )
    assert [r["reservation_id"] for r in found] == ["R00002"]
    booked = call_tool(dom, st, "list_reservations", {"guest_id": "G0001", "status": "booked"})
    assert [r["reservation_id"] for r in booked] == ["R00001", "R00002"]


@pytest.fixture(scope="module")
def task_set(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("hotel") / "hotel.jsonl"
    pl.generate("hotel", 15, pl.Options(seed=3, prove=False), output=path)
    return path


def test_generated_set_has_all_kinds_and_is_not_gamed(task_set: Path) -> None:
    tasks = read_taskset(task_set)[1]
    assert len(tasks) == 15
    assert {t.kind for t in tasks} == {"action", "information", "refusal"}
    assert pl.evaluate(task_set, "oracle").success_rate == 1.0
    for agent in ("noop", "echo"):
        assert pl.evaluate(task_set, agent).success_rate == 0.0
