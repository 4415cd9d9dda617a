"""Importing an external state: every problem reported at once, with table, row, field."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from graphgen.cli import app
from graphgen.domains import load_builtin
from graphgen.load import loads_domain
from graphgen.statecheck import quick_check, value_problem
from graphgen.stategen import generate_state
from graphgen.stateimport import StateImportError, import_state, import_state_file

runner = CliRunner()

DOMAIN = loads_domain(
    """
name: shop
entities:
  User:
    key: {name: user_id, prefix: U}
    fields:
      email: {type: str, unique: true}
      level: {type: int, min: 1, max: 5}
      tier: {enum: [basic, gold]}
      joined: date
      vip: bool
  Order:
    key: {name: order_id, prefix: O}
    fields:
      user_id: User
      items: list[Item]
      qty: {type: int, min: 1}
  Item:
    key: {name: item_id, prefix: I}
    fields:
      name: str
tools:
  get_user:
    params: {user_id: User}
    returns: "User[user_id]"
""",
    source="shop.yaml",
)

USER = {"email": "a@x.org", "level": 2, "tier": "gold", "joined": "2024-01-02", "vip": False}


def _good() -> dict[str, Any]:
    return {
        "tables": {
            "User": {"U0001": dict(USER), "U0002": {**USER, "email": "b@x.org"}},
            "Order": {"O0001": {"user_id": "U0001", "items": ["I0001", "I0002"], "qty": 1}},
            "Item": {"I0001": {"name": "pen"}, "I0002": {"name": "ink"}},
        },
        "counters": {"User": 3, "Order": 2, "Item": 3},
    }


def _problems(data: Any) -> list[str]:
    with pytest.raises(StateImportError) as info:
        import_state(DOMAIN, data)
    return [str(p) for p in info.value.problems]


def test_a_valid_state_imports_and_round_trips() -> None:
    st = import_state(DOMAIN, _good())
    assert st.counters == {"User": 3, "Order": 2, "Item": 3}
    assert st.tables["Order"]["O0001"]["items"] == ["I0001", "I0002"]
    for name in ("mock", "retail", "airline"):
        d = load_builtin(name)
        gen = generate_state(d, 5)
        assert import_state(d, json.loads(gen.to_json())) == gen


def test_rows_as_a_list_and_counters_computed() -> None:
    data = _good()
    del data["counters"]
    data["tables"]["User"] = [{"user_id": k, **r} for k, r in data["tables"]["User"].items()]
    st = import_state(DOMAIN, data)
    assert sorted(st.tables["User"]) == ["U0001", "U0002"]
    assert st.counters == {"User": 3, "Order": 2, "Item": 3}


def test_every_problem_is_reported_with_table_row_and_field() -> None:
    data = _good()
    users = data["tables"]["User"]
    users["U0001"].update(level=9, tier="platinum", joined="2024-13-01", vip="yes")
    users["U0002"]["email"] = "a@x.org"  # unique
    users["U0002"]["nick"] = "b"  # unknown field
    del users["U0002"]["level"]  # missing field
    users["X9"] = dict(USER, email="c@x.org")  # key of the wrong format
    order = data["tables"]["Order"]["O0001"]
    order.update(user_id="U0404", items=["I0002", "I0001", "I0404"], qty="1")
    data["tables"]["Coupon"] = {}
    data["counters"]["Item"] = 0
    got = _problems(data)
    expected = [
        "Coupon: unknown table",
        "User['U0001'].level: 9 is above the maximum 5",
        "User['U0001'].tier: expected one of 'basic', 'gold', not 'platinum'",
        "User['U0001'].joined: expected a date YYYY-MM-DD",
        "User['U0001'].vip: expected true or false",
        "User['U0002'].nick: unknown field",
        "User['U0002'].level: missing field",
        "User['U0002'].email: 'a@x.org' is already used by 'U0001'",
        "User['X9']: the key 'X9' does not start with 'U'",
        "Order['O0001'].user_id: User 'U0404' does not exist",
        "Order['O0001'].items: the list ['I0002', 'I0001', 'I0404'] is not a sorted set",
        "Order['O0001'].qty: expected an integer, not '1'",
        "Item: the counter must be a whole number >= 1, not 0",
    ]
    for want in expected:
        assert any(want in g for g in got), (want, got)
    # a list in order, with a dangling id, names the id
    data = _good()
    data["tables"]["Order"]["O0001"]["items"] = ["I0001", "I0404"]
    assert _problems(data) == ["Order['O0001'].items: Item 'I0404' does not exist"]


def test_repeated_keys_in_the_file_are_problems(tmp_path: Path) -> None:
    text = json.dumps(_good())
    # the same row twice in one table object, the same field twice in a row
    text = text.replace('"U0002": {', '"U0001": {"level": 3, "level": 4, ', 1)
    path = tmp_path / "s.json"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(StateImportError) as info:
        import_state_file(DOMAIN, path)
    got = [str(p) for p in info.value.problems]
    assert any("User['U0001']: the key appears twice" in g for g in got), got
    assert any("level: the field appears twice" in g for g in got), got
    path.write_text('{"tables": NaN}', encoding="utf-8")
    with pytest.raises(StateImportError, match="NaN is not a number"):
        import_state_file(DOMAIN, path)


def test_invariants_are_checked_on_an_otherwise_valid_state() -> None:
    d = loads_domain(
        DOMAIN_TEXT_WITH_INVARIANT := """
name: inv
entities:
  Account:
    key: {name: account_id, prefix: A}
    fields: {balance: int, limit: int}
    invariants: ["x.balance <= x.limit"]
tools:
  get: {params: {account_id: Account}, returns: "Account[account_id]"}
"""
    )
    assert DOMAIN_TEXT_WITH_INVARIANT
    data = {"tables": {"Account": {"A1": {"balance": 9, "limit": 5}}}}
    with pytest.raises(StateImportError, match=r"Account\['A1'\]: breaks invariant"):
        import_state(d, data)


def test_the_command_imports_or_lists_every_problem(tmp_path: Path) -> None:
    good = tmp_path / "good.json"
    good.write_text(generate_state(load_builtin("mock"), 2).to_json(), encoding="utf-8")
    out = tmp_path / "out.json"
    res = runner.invoke(app, ["state", "import", str(good), "--domain", "mock", "-o", str(out)])
    assert res.exit_code == 0, res.output
    assert json.loads(out.read_text()) == json.loads(good.read_text())
    data = json.loads(good.read_text())
    first = sorted(data["tables"]["Account"])[0]
    data["tables"]["Account"][first]["balance"] = -3
    data["tables"]["Account"][first]["status"] = "frozen"
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(data), encoding="utf-8")
    res = runner.invoke(app, ["state", "import", str(bad), "--domain", "mock"])
    assert res.exit_code == 1
    assert "balance: -3 is below the minimum 0" in res.output
    assert "status: expected one of" in res.output
    assert "2 problem(s)" in res.output
    res = runner.invoke(app, ["state", "import", str(bad)])
    assert res.exit_code == 2 and "--domain" in res.output


_ANY_VALUE = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(10**6), 10**6),
    st.floats(allow_nan=False),
    st.sampled_from(["", "a", "U0001", "basic", "gold", "2026-02-30", "2026-12-04", "1.50"]),
    st.text(max_size=12),
    st.lists(st.sampled_from(["a", "b", 1]), max_size=3),
    st.dates().map(lambda d: d.isoformat()),
)


@pytest.mark.parametrize("name", ["retail", "airline", "banking", "helpdesk"])
@given(data=st.data())
@settings(max_examples=60, deadline=None)
def test_the_quick_field_test_accepts_only_valid_values(name: str, data: st.DataObject) -> None:
    # the state check's fast path (statecheck.quick_check) may only skip the full
    # check for values the full check accepts
    domain = load_builtin(name)
    ent = data.draw(st.sampled_from(sorted(domain.entities)))
    fdef = data.draw(st.sampled_from(list(domain.entities[ent].fields.values())))
    quick = quick_check(fdef, domain.int_keys)
    v = data.draw(_ANY_VALUE)
    if quick(v):
        assert value_problem(fdef, v, domain.int_keys) is None


def test_the_quick_test_passes_the_cells_of_generated_states() -> None:
    # and it is the fast path in practice: every cell of a generated state passes it but
    # those of the types it leaves to the full check (decimals, lists)
    domain = load_builtin("retail")
    state = generate_state(domain, 0)
    for ent, table in state.tables.items():
        for fname, fdef in domain.entities[ent].fields.items():
            quick = quick_check(fdef, domain.int_keys)
            kind = type(fdef.ty.inner if hasattr(fdef.ty, "inner") else fdef.ty).__name__
            if kind in ("ListT", "DecT"):
                continue
            assert all(quick(row[fname]) for row in table.values()), (ent, fname)
