"""The built-in rental domain: its shape, its tools on a small hand-made state (ages from
today(), the rate card, the booking state machine, the cap on active bookings, the
pick-up soft failure, late returns and cancellations), and a generated task set that
baselines cannot game."""

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
    return load_builtin("rental")


def _booking(customer: int, status: str, cls: str, car: str | None, **kw: Any) -> dict[str, Any]:
    row: dict[str, Any] = {
        "customer_id": customer,
        "branch_id": "BR01",
        "vehicle_class": cls,
        "vehicle_id": car,
        "start_date": "2026-06-20",
        "days": 5,
        "end_date": "2026-06-25",
        "insurance": False,
        "status": status,
        "total_price": "245.00",
    }
    row.update(kw)
    return row


def _car(plate: str, cls: str, status: str, branch: str = "BR01") -> dict[str, Any]:
    rate = {"economy": "39.00", "compact": "49.00", "suv": "79.00", "luxury": "129.00"}[cls]
    return {
        "plate": plate,
        "model": "Toyota Yaris",
        "vehicle_class": cls,
        "branch_id": branch,
        "daily_rate": rate,
        "status": status,
    }


def _state() -> State:
    """Ana (40, one reservation and one car out), Bo (23: a young driver), Cy (19)."""
    return State(
        {
            "Customer": {
                1: {
                    "full_name": "Ana Ruiz",
                    "email": "ana@mail.example",
                    "licence_number": "K7PQ2M",
                    "licence_expires": "2028-01-31",
                    "birth_date": "1986-03-02",
                },
                2: {
                    "full_name": "Bo Li",
                    "email": "bo@mail.example",
                    "licence_number": "Z9XW4T",
                    "licence_expires": "2026-06-22",
                    "birth_date": "2003-01-15",
                },
                3: {
                    "full_name": "Cy Dunn",
                    "email": "cy@mail.example",
                    "licence_number": "M4RT8P",
                    "licence_expires": "2030-01-01",
                    "birth_date": "2007-02-01",
                },
            },
            "Branch": {
                "BR01": {"name": "Central Station", "city": "Zurich"},
                "BR02": {"name": "Airport Terminal", "city": "Zurich"},
            },
            "Vehicle": {
                "V001": _car("ZH1001", "economy", "available"),
                "V002": _car("ZH1002", "economy", "available"),
                "V003": _car("ZH1003", "suv", "rented"),
                "V004": _car("ZH1004", "luxury", "maintenance"),
                "V005": _car("ZH1005", "compact", "available", branch="BR02"),
            },
            "Booking": {
                # reserved, started three days ago: ready for pick-up
                1: _booking(1, "reserved", "economy", None, start_date="2026-06-07", days=18),
                # picked up, due back two days ago
                2: _booking(
                    1,
                    "picked_up",
                    "suv",
                    "V003",
                    start_date="2026-06-01",
                    days=7,
                    end_date="2026-06-08",
                    total_price="553.00",
                ),
                3: _booking(2, "cancelled", "compact", None, total_price="0.00"),
                4: _booking(2, "returned", "compact", "V005", branch_id="BR02"),
            },
            "DamageReport": {},
        },
        {"Customer": 4, "Branch": 3, "Vehicle": 6, "Booking": 5, "DamageReport": 1},
        TODAY,
    )


def test_is_builtin_and_has_the_promised_shape(dom: Domain) -> None:
    assert "rental" in builtin_names()
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
        ("Booking", "Customer"),
        ("Booking", "Branch"),
        ("Booking", "Vehicle"),
        ("Vehicle", "Branch"),
        ("DamageReport", "Booking"),
    } <= refs
    status = dom.entities["Booking"].fields["status"].ty
    assert isinstance(status, EnumT)
    assert set(status.values) == {"reserved", "picked_up", "returned", "cancelled"}
    assert dom.policy.strip()


def test_every_tool_is_documented_and_intents_name_what_users_supply(dom: Domain) -> None:
    for t in dom.tools.values():
        assert t.description, t.name
        assert t.intents, t.name
        assert all(p.description for p in t.params.values()), t.name
        named = {f for it in t.intents for _, f, _, _ in string.Formatter().parse(it.text) if f}
        named = {f.split(":")[0] for f in named}
        supplied = {n for n, p in t.params.items() if strip_opt(p.ty) != RefT("Customer")}
        assert supplied <= named, (t.name, supplied - named)
        assert "customer_id" not in named, t.name


def test_quote_follows_the_rate_card_and_the_drivers_age(dom: Domain) -> None:
    st = _state()
    args = {"vehicle_class": "suv", "days": 3, "insurance": True}
    ana = call_tool(dom, st, "get_quote", {"customer_id": 1, **args})
    assert (ana["price_per_day"], ana["total"], ana["young_driver"]) == (
        "97.00",
        "291.00",
        False,
    )
    # Bo is 23 on TODAY: 20.00 a day more
    bo = call_tool(dom, st, "get_quote", {"customer_id": 2, **args})
    assert (bo["total"], bo["young_driver"]) == ("351.00", True)
    # the same birth date counts as 25 once enough days have passed
    st.today = "2028-06-10"
    assert call_tool(dom, st, "get_quote", {"customer_id": 2, **args})["young_driver"] is False


def test_create_booking_prices_it_and_enforces_the_driver_rules(dom: Domain) -> None:
    st = _state()
    base = {
        "branch_id": "BR02",
        "vehicle_class": "compact",
        "start_date": "2026-07-01",
        "insurance": False,
    }
    # Ana already holds 2 active bookings: the cap bites
    with pytest.raises(ToolError, match="already has 2 active bookings"):
        call_tool(dom, st, "create_booking", {"customer_id": 1, **base, "days": 2})
    call_tool(dom, st, "cancel_booking", {"customer_id": 1, "booking_id": 1})
    out = call_tool(
        dom, st, "create_booking", {"customer_id": 1, **base, "days": 4, "insurance": True}
    )
    assert out["booking_id"] == 5 and out["total_price"] == "252.00"
    row = st.tables["Booking"][5]
    assert (row["status"], row["vehicle_id"], row["end_date"]) == ("reserved", None, "2026-07-05")
    with pytest.raises(ToolError, match="in the past"):
        call_tool(
            dom,
            st,
            "create_booking",
            {"customer_id": 3, **base, "start_date": "2026-06-09", "days": 2},
        )
    with pytest.raises(ToolError, match="under 21"):
        call_tool(dom, st, "create_booking", {"customer_id": 3, **base, "days": 2})
    with pytest.raises(ToolError, match="under 25 cannot rent a luxury"):
        call_tool(
            dom,
            st,
            "create_booking",
            {"customer_id": 2, **base, "vehicle_class": "luxury", "days": 1},
        )
    # Bo's licence runs out on 2026-06-22
    with pytest.raises(ToolError, match="expires before the rental ends"):
        call_tool(
            dom,
            st,
            "create_booking",
            {"customer_id": 2, **base, "start_date": "2026-06-21", "days": 3},
        )
    out = call_tool(
        dom, st, "create_booking", {"customer_id": 2, **base, "start_date": "2026-06-21", "days": 1}
    )
    assert out["total_price"] == "69.00"  # 49.00 + the 20.00 young-driver surcharge


def test_booking_state_machine(dom: Domain) -> None:
    st = _state()
    # reserved -> picked_up: the first available economy car at the branch
    out = run_call(dom, st, "pick_up_vehicle", {"customer_id": 1, "booking_id": 1})
    assert not out.soft_failed and "ZH1001" in out.value["message"]
    assert st.tables["Booking"][1]["status"] == "picked_up"
    assert st.tables["Booking"][1]["vehicle_id"] == "V001"
    assert st.tables["Vehicle"]["V001"]["status"] == "rented"
    # a picked-up booking can be neither cancelled, picked up again nor reclassed
    with pytest.raises(ToolError, match="not reserved, so it cannot be cancelled"):
        call_tool(dom, st, "cancel_booking", {"customer_id": 1, "booking_id": 1})
    with pytest.raises(ToolError, match="no car to pick up"):
        call_tool(dom, st, "pick_up_vehicle", {"customer_id": 1, "booking_id": 1})
    with pytest.raises(ToolError, match="car class cannot change"):
        call_tool(
            dom,
            st,
            "change_vehicle_class",
            {"customer_id": 1, "booking_id": 1, "vehicle_class": "suv"},
        )
    # picked_up -> returned, on time; the car is free again; returned is final
    assert call_tool(dom, st, "return_vehicle", {"customer_id": 1, "booking_id": 1}).endswith(
        "returned on time."
    )
    assert st.tables["Vehicle"]["V001"]["status"] == "available"
    for tool in ("return_vehicle", "cancel_booking", "extend_booking"):
        args: dict[str, Any] = {"customer_id": 1, "booking_id": 1}
        if tool == "extend_booking":
            args["extra_days"] = 1
        with pytest.raises(ToolError):
            call_tool(dom, st, tool, args)
    # someone else's booking is refused first
    with pytest.raises(ToolError, match="does not belong to customer 2"):
        call_tool(dom, st, "return_vehicle", {"customer_id": 2, "booking_id": 2})


def test_late_return_and_late_cancellation_are_charged(dom: Domain) -> None:
    st = _state()
    before = st.copy()
    # due back 2026-06-08, returned 2026-06-10: 2 days at 79.00 plus the 50.00 late fee
    call_tool(dom, st, "return_vehicle", {"customer_id": 1, "booking_id": 2})
    assert sorted(diff(before, st)) == sorted(
        [
            ("Booking", 2, "days", 7, 9),
            ("Booking", 2, "end_date", "2026-06-08", TODAY),
            ("Booking", 2, "status", "picked_up", "returned"),
            ("Booking", 2, "total_price", "553.00", "761.00"),
            ("Vehicle", "V003", "status", "rented", "available"),
        ]
    )
    # booking 1 started already: cancelling costs one day of the economy rate
    msg = call_tool(dom, st, "cancel_booking", {"customer_id": 1, "booking_id": 1})
    assert "39.00" in msg and st.tables["Booking"][1]["total_price"] == "39.00"


def test_pick_up_without_a_free_car_fails_softly(dom: Domain) -> None:
    st = _state()
    st.set_field("Vehicle", "V001", "status", "maintenance")
    st.set_field("Vehicle", "V002", "status", "rented")
    before = st.copy()
    out = run_call(dom, st, "pick_up_vehicle", {"customer_id": 1, "booking_id": 1})
    assert out.soft_failed and out.value["success"] is False
    assert "No economy car is available at Central Station" in out.value["message"]
    assert st == before
    # a booking that has not started yet cannot be picked up at all
    st.set_field("Booking", 1, "start_date", "2026-06-12")
    with pytest.raises(ToolError, match="has not started yet"):
        call_tool(dom, st, "pick_up_vehicle", {"customer_id": 1, "booking_id": 1})


def test_changes_to_a_reservation(dom: Domain) -> None:
    st = _state()
    out = call_tool(
        dom,
        st,
        "change_vehicle_class",
        {"customer_id": 1, "booking_id": 1, "vehicle_class": "suv"},
    )
    # 2026-06-07 to 2026-06-25 is 18 days at 79.00
    assert out["booking"]["total_price"] == "1422.00"
    with pytest.raises(ToolError, match="already for a suv car"):
        call_tool(
            dom,
            st,
            "change_vehicle_class",
            {"customer_id": 1, "booking_id": 1, "vehicle_class": "suv"},
        )
    call_tool(dom, st, "add_insurance", {"customer_id": 1, "booking_id": 1})
    assert st.tables["Booking"][1]["total_price"] == "1746.00"  # + 18 x 18.00
    with pytest.raises(ToolError, match="already insured"):
        call_tool(dom, st, "add_insurance", {"customer_id": 1, "booking_id": 1})
    # 18 days + 12 is the 30-day maximum; one more is refused
    with pytest.raises(ToolError, match="at most 30 days"):
        call_tool(dom, st, "extend_booking", {"customer_id": 1, "booking_id": 1, "extra_days": 13})
    call_tool(dom, st, "extend_booking", {"customer_id": 1, "booking_id": 1, "extra_days": 12})
    assert st.tables["Booking"][1]["end_date"] == "2026-07-07"


def test_damage_and_licence_updates(dom: Domain) -> None:
    st = _state()
    with pytest.raises(ToolError, match="never picked up"):
        call_tool(
            dom,
            st,
            "report_damage",
            {"customer_id": 1, "booking_id": 1, "severity": "minor", "note": "Chipped windscreen"},
        )
    call_tool(dom, st, "return_vehicle", {"customer_id": 1, "booking_id": 2})
    out = call_tool(
        dom,
        st,
        "report_damage",
        {"customer_id": 1, "booking_id": 2, "severity": "major", "note": "Dent in the boot lid"},
    )
    assert out["report_id"] == 1 and out["charge"] == "900.00"
    assert st.tables["Vehicle"]["V003"]["status"] == "maintenance"
    with pytest.raises(ToolError, match="nothing to change"):
        call_tool(dom, st, "update_licence", {"customer_id": 2})
    with pytest.raises(ToolError, match="already passed"):
        call_tool(dom, st, "update_licence", {"customer_id": 2, "licence_expires": "2026-06-01"})
    before = st.copy()
    call_tool(dom, st, "update_licence", {"customer_id": 2, "licence_expires": "2031-06-22"})
    assert diff(before, st) == [("Customer", 2, "licence_expires", "2026-06-22", "2031-06-22")]


def test_searches_and_lists(dom: Domain) -> None:
    st = _state()
    assert call_tool(dom, st, "find_customer_by_licence", {"licence_number": "z9xw4t"}) == [2]
    assert call_tool(dom, st, "find_vehicle_by_plate", {"plate": "ZH1003"}) == ["V003"]
    cars = call_tool(dom, st, "list_available_vehicles", {"branch_id": "BR01"})
    assert [c["vehicle_id"] for c in cars] == ["V001", "V002"]
    active = call_tool(
        dom, st, "list_bookings_by_status", {"customer_id": 1, "status": "picked_up"}
    )
    assert [b["booking_id"] for b in active] == [2]
    assert [
        b["branch_id"] for b in call_tool(dom, st, "find_branches_by_city", {"city": "zurich"})
    ] == [
        "BR01",
        "BR02",
    ]


@pytest.fixture(scope="module")
def task_set(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("rental") / "rental.jsonl"
    pl.generate("rental", 15, pl.Options(seed=3, prove=False), output=path)
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
    pl.generate("rental", 15, pl.Options(seed=3, prove=False), output=again)
    assert again.read_bytes() == task_set.read_bytes()
