"""States share rows between copies and answer lookups from indexes built once
(graphgen/state.py, graphgen/tablebase.py): after any sequence of writes, copies and
undos, every answer is the one a plain scan of plain dicts gives, and no copy, and no
state read from a dict, can be changed through another."""

from __future__ import annotations

import copy
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from decimal import Decimal
from typing import Any
from unittest import mock

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from graphgen import interp, ir, state, tablebase
from graphgen.domains import load_builtin
from graphgen.grading import state_diff
from graphgen.interp import call_tool, evaluate
from graphgen.parse import Elaborator
from graphgen.state import SharedRow, State, changed_views, diff
from graphgen.types import STR, RefT

KEYS = [f"k{i}" for i in range(8)]
A_VALUES = [None, 0, 1, 2]
B_VALUES = [None, "x", "y", "z"]
D_VALUES = ["0.50", "1.00", "1.50"]


L_VALUES = [[], ["p"], ["p", "q"], ["q", "r"]]


def _row(a: Any, b: Any, d: str, items: list[str] | None = None) -> dict[str, Any]:
    return {"a": a, "b": b, "d": d, "l": list(items or [])}


rows = st.builds(
    _row,
    st.sampled_from(A_VALUES),
    st.sampled_from(B_VALUES),
    st.sampled_from(D_VALUES),
    st.sampled_from(L_VALUES),
)
tables = st.dictionaries(st.sampled_from(KEYS), rows, max_size=len(KEYS))
# (op, which state, key, field, value / row)
ops = st.lists(
    st.one_of(
        st.sampled_from(KEYS).flatmap(
            lambda k: st.one_of(
                st.tuples(st.just("a"), st.sampled_from(A_VALUES)),
                st.tuples(st.just("b"), st.sampled_from(B_VALUES)),
                st.tuples(st.just("d"), st.sampled_from(D_VALUES)),
                st.tuples(st.just("l"), st.sampled_from(L_VALUES)),
            ).flatmap(
                lambda fv: st.tuples(
                    st.just("set"), st.integers(0, 3), st.just(k), *map(st.just, fv)
                )
            )
        ),
        st.tuples(st.just("put"), st.integers(0, 3), st.sampled_from(KEYS), st.just(""), rows),
        st.tuples(st.just("del"), st.integers(0, 3), st.sampled_from(KEYS), st.just(""), st.none()),
        st.tuples(st.just("copy"), st.integers(0, 3), st.just(""), st.just(""), st.none()),
        st.tuples(
            st.just("assign"), st.integers(0, 3), st.just(""), st.just(""), st.integers(0, 3)
        ),
        st.tuples(st.just("replace"), st.integers(0, 3), st.just(""), st.just(""), tables),
    ),
    max_size=40,
)


@contextmanager
def _rebase_at(n: int) -> Iterator[None]:
    with mock.patch.object(state, "_REBASE_AT", n):
        yield


def _same_keys(got: Sequence[Any], want: list[Any]) -> None:
    """A lookup's answer is ``want`` however it is read: iterated, by index, by
    membership (an answer amended by writes is a view over the base's keys)."""
    assert list(got) == want and len(got) == len(want)
    assert [got[i] for i in range(len(want))] == want
    assert [k for k in KEYS if k in got] == [k for k in KEYS if k in want]


def _check(s: State, model: dict[str, dict[str, Any]]) -> None:
    """Every read of ``s`` agrees with a plain scan of ``model``."""
    assert s.tables["T"] == model
    order = sorted(model)
    view = s.sorted_keys("T")
    assert list(view) == order and len(view) == len(order)
    assert [view[i] for i in range(len(order))] == order
    assert [view[i] for i in range(-len(order), 0)] == order
    assert view[1:3] == order[1:3]
    for k in KEYS:
        assert (k in view) == (k in model)
        assert view.rank(k) == (order.index(k) if k in model else None)  # type: ignore[attr-defined]
    for f, values in (("a", A_VALUES), ("b", B_VALUES)):
        for v in [*values, "absent"]:
            _same_keys(s.keys_where("T", f, v), [k for k in order if model[k][f] == v])
        want = sorted({r[f] for r in model.values()} - {None}, key=repr)
        assert list(s.field_values("T", f)) == want
    for item in ["p", "q", "r", "s"]:
        want_l = [k for k in order if item in model[k]["l"]]
        _same_keys(s.keys_holding("T", "l", item), want_l)
    for x in ["0.5", "1.5", "1.50", "2"]:
        got = s.keys_where("T", "d", Decimal(x), decimal=True)
        _same_keys(got, [k for k in order if Decimal(model[k]["d"]) == Decimal(x)])
    assert s.to_dict()["tables"]["T"] == {k: model[k] for k in order}
    assert s.json_form() == s.to_dict()


def _run(start: dict[str, dict[str, Any]], program: list[tuple[Any, ...]]) -> None:
    states = [State({"T": copy.deepcopy(start)}, {"T": 9})]
    models = [copy.deepcopy(start)]
    for op, i, key, field, value in program:
        i %= len(states)
        s, m = states[i], models[i]
        if op == "set" and key in m:
            s.set_field("T", key, field, list(value) if field == "l" else value)
            m[key][field] = list(value) if field == "l" else value
        elif op == "put":
            s.put_row("T", key, dict(value))
            m[key] = dict(value)
        elif op == "del" and key in m:
            s.delete_row("T", key)
            del m[key]
        elif op == "copy":
            states.append(s.copy())
            models.append(copy.deepcopy(m))
        elif op == "assign":
            j = value % len(states)
            s.assign(states[j])
            models[i] = copy.deepcopy(models[j])
        elif op == "replace":
            s.tables["T"] = copy.deepcopy(value)  # a whole table put in from outside
            models[i] = copy.deepcopy(value)
        for s2, m2 in zip(states, models, strict=True):
            _check(s2, m2)
    for a, ma in zip(states, models, strict=True):
        for b, mb in zip(states, models, strict=True):
            assert (a == b) == (ma == mb)
            full = state_diff({"tables": {"T": ma}}, {"tables": {"T": mb}})
            assert diff(a, b) == full
            va, vb = changed_views(a, b)
            assert state_diff(va, vb) == full


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(start=tables, program=ops)
def test_lookups_match_plain_scans_after_any_writes(
    start: dict[str, dict[str, Any]], program: list[tuple[Any, ...]]
) -> None:
    _run(start, program)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(start=tables, program=ops)
def test_lookups_match_plain_scans_when_bases_move(
    start: dict[str, dict[str, Any]], program: list[tuple[Any, ...]]
) -> None:
    # A table written often takes its rows as a new base: the same answers after.
    with _rebase_at(1):
        _run(start, program)


# ---------------------------------------------------------------- the interpreter

MOCK = load_builtin("mock")
EL = Elaborator(MOCK.entities)
COMPS = [
    "[a.account_id for a in Account if a.email == email]",
    "[a.balance for a in Account if a.status == 'active' and a.balance > 10]",
    "count(p for p in Payment if p.account_id == account_id)",
    "sum(p.amount for p in Payment if p.account_id == account_id and p.amount > 0)",
    "[a.owner for a in Account if a.account_id == account_id]",
    "[a.balance for a in Account if a.account_id in [account_id, 'A002', 'A404']]",
    # the probe itself raises on a missing row: only where a row is visited
    "[p.amount for p in Payment if p.account_id == Payment[payment_id].account_id]",
    # through a reference
    "[p.payment_id for p in Payment if Account[p.account_id].status == 'active']",
    "count(p for p in Payment if Account[p.account_id].email == email and p.amount > 5)",
    # a row some other row names (a related question's description)
    "[a.owner for a in Account if any(p.account_id == a.account_id for p in Payment "
    "if p.amount > 100) and a.balance > 0]",
    "[a.owner for a in Account if any(a.account_id == p.account_id for p in Payment "
    "if Payment[payment_id].amount > 0)]",
]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 50),
    writes=st.lists(st.tuples(st.integers(0, 20), st.integers(1, 900)), max_size=8),
    email_pick=st.integers(0, 40),
)
def test_comprehensions_read_the_index_as_a_scan_would(
    seed: int, writes: list[tuple[int, int]], email_pick: int
) -> None:
    from graphgen.stategen import generate_state

    st0 = generate_state(MOCK, seed, {"Account": 6, "Payment": 5})
    s = st0.copy()
    accounts = sorted(s.tables["Account"])
    for i, amount in writes:  # real tool calls: deposits, payments, locks
        acc = accounts[i % len(accounts)]
        name = ("deposit", "pay", "lock_account")[i % 3]
        args: dict[str, Any] = {"account_id": acc}
        if name != "lock_account":
            args["amount"] = amount
        with suppress(interp.ToolError):
            call_tool(MOCK, s, name, args)
    emails = [r["email"] for r in s.tables["Account"].values()]
    env = {
        "email": emails[email_pick % len(emails)] if email_pick < 30 else "nobody@x.org",
        "account_id": accounts[email_pick % len(accounts)] if email_pick < 35 else "A999",
        "payment_id": "P001" if email_pick % 2 else "P404",
    }
    scope = {"email": STR, "account_id": RefT("Account"), "payment_id": RefT("Payment")}
    for text in COMPS:
        e = EL.expr(text, scope)

        def run(e: ir.Expr = e) -> Any:
            try:
                return ("ok", evaluate(e, s, env, MOCK))
            except interp.ToolError as exc:
                return ("error", exc.kind, exc.message)

        fast = run()
        with mock.patch.object(interp, "probe", lambda c: None):
            plain = run()
        assert fast == plain, text


# ---------------------------------------------------------------- sharing


def test_a_state_read_from_a_dict_cannot_be_changed_through_another_reader() -> None:
    data = State({"T": {"k1": _row(1, "x", "1.00"), "k2": _row(2, "y", "0.50")}}, {"T": 3})
    data_json = data.to_dict()
    first = State.from_dict(data_json)
    second = State.from_dict(data_json)
    assert first == second and first is not second
    assert isinstance(first.tables["T"]["k1"], SharedRow)
    first.set_field("T", "k1", "a", 7)
    first.delete_row("T", "k2")
    first.counters["T"] = 99
    assert State.from_dict(data_json) == second == data
    with pytest.raises(TypeError, match="read-only"):
        second.tables["T"]["k1"]["a"] = 8
    with pytest.raises(TypeError, match="read-only"):
        second.tables["T"]["k1"].update(a=8)
    assert State.from_dict(data_json).tables["T"]["k1"]["a"] == 1
    # a new dict with the same contents is read on its own, to an equal state
    assert State.from_dict(copy.deepcopy(data_json)) == data


def test_json_form_keeps_its_content_when_its_own_state_writes_on() -> None:
    """The form shares the state's rows: a row the state had written itself (its own, so
    far changed in place) is copied by the next write, and the form does not change."""
    s = State({"T": {"k1": {"a": 1}, "k2": {"a": 2}}}, {"T": 3})
    s.set_field("T", "k1", "a", 5)  # k1 is now this state's own row
    frozen = s.json_form()
    before = copy.deepcopy(frozen)
    s.set_field("T", "k1", "a", 6)
    s.set_field("T", "k2", "a", 7)
    s.put_row("T", "k3", {"a": 9})
    assert frozen == before and frozen["tables"]["T"]["k1"] == {"a": 5}
    assert s.json_form()["tables"]["T"] == {"k1": {"a": 6}, "k2": {"a": 7}, "k3": {"a": 9}}


def test_a_deep_copy_of_the_json_form_may_be_edited() -> None:
    """The form's rows are the state's (read-only); a deep copy of it is the caller's,
    as a task's initial state copied to be edited into another task."""
    s = State.from_dict({"tables": {"T": {"k1": {"a": 1}}}, "counters": {"T": 2}})
    form = s.json_form()
    with pytest.raises(TypeError, match="read-only"):
        form["tables"]["T"]["k1"]["a"] = 2
    mine = copy.deepcopy(form)
    mine["tables"]["T"]["k1"]["a"] = 2
    assert form["tables"]["T"]["k1"] == {"a": 1} and s.tables["T"]["k1"]["a"] == 1


def test_tool_calls_on_a_copy_leave_the_original_and_its_json_alone() -> None:
    from graphgen.stategen import generate_state

    s = generate_state(MOCK, 1)
    before = copy.deepcopy(s.to_dict())
    frozen = s.json_form()
    c = s.copy()
    acc = next(k for k, r in sorted(c.tables["Account"].items()) if r["status"] == "active")
    call_tool(MOCK, c, "deposit", {"account_id": acc, "amount": 5})
    assert s.to_dict() == before and s.json_form() is frozen
    assert c.json_form() != frozen
    assert diff(s, c) == [
        (
            "Account",
            acc,
            "balance",
            s.tables["Account"][acc]["balance"],
            c.tables["Account"][acc]["balance"],
        )
    ]
    # to_dict hands out a dict of its own
    out = s.to_dict()
    out["tables"]["Account"][acc]["balance"] = -1
    assert s.to_dict() == before


def test_a_comprehension_through_a_reference_that_names_no_row_raises_as_a_scan_does() -> None:
    from graphgen.stategen import generate_state

    s = generate_state(MOCK, 3, {"Account": 5, "Payment": 6}).copy()
    e = EL.expr("[p.payment_id for p in Payment if Account[p.account_id].status == 'active']", {})
    ok = evaluate(e, s, {}, MOCK)
    with mock.patch.object(interp, "probe", lambda c: None):
        assert evaluate(e, s, {}, MOCK) == ok
    last = sorted(s.tables["Payment"])[-1]
    s.set_field("Payment", last, "account_id", "A404")  # names no account
    with pytest.raises(interp.ToolError, match="A404"):
        evaluate(e, s, {}, MOCK)
    with (
        mock.patch.object(interp, "probe", lambda c: None),
        pytest.raises(interp.ToolError, match="A404"),
    ):
        evaluate(e, s, {}, MOCK)


def test_refs_exist_follows_writes_to_both_tables() -> None:
    s = State(
        {"A": {"a1": {}, "a2": {}, "a3": {}}, "P": {"p1": {"a": "a1"}, "p2": {"a": "a2"}}},
        {"A": 4, "P": 3},
    )
    assert s.refs_exist("P", "a", "A")
    c = s.copy()
    c.delete_row("A", "a3")  # nobody names it
    assert c.refs_exist("P", "a", "A")
    c.delete_row("A", "a2")
    assert not c.refs_exist("P", "a", "A") and s.refs_exist("P", "a", "A")
    c.set_field("P", "p2", "a", "a1")
    assert c.refs_exist("P", "a", "A")
    c.put_row("P", "p3", {"a": None})  # None names no row
    assert not c.refs_exist("P", "a", "A")


def test_list_items_are_found_by_a_pass_then_by_an_index() -> None:
    """The first lookups of a list field's items pass over the rows and build nothing;
    a later one builds the index; every answer is the same, and an unhashable item, in
    a row or asked for, raises TypeError either way (callers then scan)."""
    rows = {"a": {"l": ["p", "q"]}, "b": {"l": []}, "c": {"l": ["q", "q", "r"]}}
    base = tablebase.Base(rows)
    asked = ["q", "p", "q", "r", "s"]
    got = [base.holding("l", x) for x in asked]
    assert got == [("a", "c"), ("a",), ("a", "c"), ("c",), ()]
    # two passes, then the index: built once, and it agrees with the passes
    assert list(base.item_index("l")) == ["p", "q", "r"]
    assert tablebase.SCANS_BEFORE_INDEX == 2 and base._scans["l"] == 2
    with pytest.raises(TypeError):
        base.holding("l", ["q"])
    bad = tablebase.Base({"a": {"l": [["x"]]}})
    with pytest.raises(TypeError):
        bad.holding("l", "x")


def test_a_read_state_holds_each_tables_rows_in_key_order() -> None:
    """Rows are kept in the order of their keys, whatever order the form lists them in:
    strings by text, and an int-keyed table's ids (written "10", "9", "100") as
    numbers."""
    form = {
        "tables": {
            "Note": {"b": {"x": 1}, "a": {"x": 2}, "c": {"x": 3}},
            "Ticket": {"10": {"n": 1}, "9": {"n": 2}, "100": {"n": 3}},
        },
        "counters": {},
        "int_keys": ["Ticket"],
    }
    s = State.from_dict(form)
    assert list(s.tables["Note"]) == ["a", "b", "c"]
    assert list(s.tables["Ticket"]) == [9, 10, 100]
    assert s.tables["Ticket"][9] == {"n": 2} and isinstance(s.tables["Ticket"][9], SharedRow)
