"""The value constructs of the domain language (``let``, ``old``, and the ones built on
them) in every backend: the interpreter, the compiled package and the z3 encoding agree
on random call sequences over a small domain that uses each construct, and a domain file
that misuses one is rejected with a located, plain-words error."""

from __future__ import annotations

from decimal import Decimal
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from graphgen.decimals import dec_text
from graphgen.domain import Domain
from graphgen.errors import DomainError, ToolError
from graphgen.interp import call_tool
from graphgen.load import load_domain, loads_domain
from graphgen.state import State
from graphgen.stategen import generate_state
from graphgen.unparse import to_source
from graphgen.verify.concrete import run_concrete
from tests.test_codegen import Compiled, Tally, _import_package, run_differential
from tests.test_z3_encoding import assert_agree, draw_chain, interpret

DATA = Path(__file__).parent / "data" / "lang"
NAMES = ["till", "wallet", "desk"]


@cache
def domain(name: str) -> Domain:
    return load_domain(DATA / f"{name}.yaml")


def state(name: str, seed: int) -> State:
    return generate_state(domain(name), seed)


# ------------------------------------------------------------------ semantics


def test_let_and_old_read_the_state_before_the_call() -> None:
    d = domain("till")
    s = state("till", 1)
    s.set_field("Account", "A001", "balance", 100)
    got = call_tool(d, s, "withdraw", {"account_id": "A001", "amount": 30})
    assert got == {"was": 100, "now": 70, "old": 200}
    s.set_field("Account", "A002", "balance", 5)
    got = call_tool(d, s, "sweep", {"account_id": "A001", "other": "A002"})
    assert s.tables["Account"]["A002"]["balance"] == 75
    assert got == [71]  # old(a.balance + 1) of the rows at 0 after the call
    with pytest.raises(ToolError, match="insufficient funds"):
        call_tool(d, s, "withdraw", {"account_id": "A001", "amount": 1})


# ------------------------------------------------------------------ backends agree


@pytest.fixture(scope="module")
def compiled_pkgs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Compiled]:
    from graphgen.envs.codegen import write_package

    root = tmp_path_factory.mktemp("lang")
    out = {}
    for name in NAMES:
        path = root / f"{name}_env"
        write_package(domain(name), path)
        out[name] = Compiled(domain(name), path, _import_package(path))
    return out


@pytest.mark.parametrize("name", NAMES)
def test_compiled_package_agrees_with_interpreter(
    name: str, compiled_pkgs: dict[str, Compiled]
) -> None:
    tally = Tally()
    run_differential(compiled_pkgs[name], range(60), 20, tally)
    assert not tally.mismatches, "\n".join(tally.mismatches[:3])
    assert tally.writes_ok > 0


@pytest.mark.parametrize("name", NAMES)
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_z3_encoding_agrees_with_interpreter(name: str, data: Any) -> None:
    d = domain(name)
    s = state(name, data.draw(st.integers(0, 3), label="seed"))
    chain = draw_chain(data, d, s, 6)
    for via_template in (False, True):
        assert_agree(d, s, chain, via_template)


def test_an_int_stored_in_a_decimal_field_is_scaled_once_on_every_row() -> None:
    # The template's key is symbolic, so the write is built for every row it may name;
    # the int must be brought to the field's scale once, not once per row before it
    # (which made z3 refuse a valid call on every row but the first).
    d = domain("wallet")
    s = state("wallet", 0)
    keys = sorted(s.tables["Account"])
    assert len(keys) >= 3
    for key in keys:
        chain = [("top_up", {"account_id": key, "units": 7})]
        want_oks, want = interpret(d, s, chain)
        assert want_oks == [True]
        got_oks, got = run_concrete(d, s, chain, via_template=True)
        assert (got_oks, got) == (want_oks, want), key


def test_an_optional_decimal_means_the_same_in_every_backend(
    compiled_pkgs: dict[str, Compiled],
) -> None:
    # ``decimal | None``: read as a number or None, compared across scales (2 with 3),
    # and stored from an int, a None, a rounded value and an argument at its scale
    d = domain("wallet")
    s = state("wallet", 0)
    acc = sorted(s.tables["Account"])[0]
    s.set_field("Account", acc, "rate", "1.250")
    s.set_field("Account", acc, "discount", "1.25")
    c = compiled_pkgs["wallet"]
    chains: list[tuple[list[tuple[str, dict[str, Any]]], list[Any]]] = [
        ([("set_discount", {"account_id": acc, "discount": "1.25"})], ["err"]),
        ([("match_rate", {"account_id": acc})], ["err"]),  # 1.25 == 1.250
        (
            [
                ("set_discount", {"account_id": acc, "discount": "2.5"}),
                ("show_discount", {"account_id": acc}),
                ("set_discount", {"account_id": acc}),
                ("show_discount", {"account_id": acc}),
            ],
            [{"discount": "2.50"}, "discount 2.50", {"discount": None}, "discount None"],
        ),
        (
            [("set_discount", {"account_id": acc}), ("match_rate", {"account_id": acc})],
            [{"discount": None}, "1.25"],
        ),
        (
            [
                ("flat_discount", {"account_id": acc, "flat": True}),
                ("price", {"account_id": acc, "amount": "12.00"}),
                ("set_discount", {"account_id": acc, "discount": "5"}),
            ],
            ["ok", "7.00", "err"],
        ),
        (
            [
                ("flat_discount", {"account_id": acc, "flat": False}),
                ("price", {"account_id": acc, "amount": "12.00"}),
                ("discounted", {}),
            ],
            [
                "ok",
                "12.00",
                [
                    k
                    for k, r in s.tables["Account"].items()
                    if k != acc and r["discount"] and Decimal(r["discount"]) > Decimal("1.5")
                ],
            ],
        ),
    ]
    for chain, want in chains:
        cur = s.copy()
        db = c.models.Db.from_state(s.to_dict())
        got = []
        for name, args in chain:
            try:
                out = call_tool(d, cur, name, dict(args))
            except ToolError:
                got.append("err")
                with pytest.raises(c.pkg.ToolError):
                    c.tools.call_tool(db, name, dict(args))
                continue
            assert c.tools.call_tool(db, name, dict(args)) == out, (chain, name)
            got.append({"discount": out["discount"]} if isinstance(out, dict) else out)
        assert got == want, chain
        assert db.to_state() == cur.to_dict(), chain
        want_oks, want_state = interpret(d, s, chain)
        assert want_oks == [x != "err" for x in want]
        for via_template in (False, True):
            assert run_concrete(d, s, chain, via_template=via_template) == (
                want_oks,
                want_state,
            ), (chain, via_template)


def test_decimals_in_a_result_keyed_by_id_are_json_text(
    compiled_pkgs: dict[str, Compiled],
) -> None:
    # A dict comprehension's decimal values are results like any other: JSON text at
    # their scale (the interpreter once returned Decimal objects, and the compiled
    # package undid the call because its result was not JSON data).
    d = domain("wallet")
    s = state("wallet", 0)
    for key in s.tables["Account"]:
        s.set_field("Account", key, "currency", "EUR")
    s.set_field("Account", key, "balance", "0.05")
    want = {k: dec_text(Decimal(r["balance"]) * 2, 2) for k, r in s.tables["Account"].items()}
    assert call_tool(d, s, "doubled", {}) == want
    pkg = compiled_pkgs["wallet"]
    db = pkg.models.Db.from_state(s.to_dict())
    assert pkg.tools.call_tool(db, "doubled", {}) == want


# ------------------------------------------------------------------ broken files

BASE = """
name: broken
entities:
  Account:
    key: {name: account_id, prefix: "A"}
    fields:
      balance: {type: int, min: 0}
tools:
"""


def _problems(tools: str) -> str:
    with pytest.raises(DomainError) as info:
        loads_domain(BASE + tools, source="broken.yaml")
    return str(info.value)


def test_let_that_shadows_a_parameter_is_located() -> None:
    msg = _problems(
        """
  t:
    params: {account_id: Account}
    let: {account_id: "1"}
    returns: "account_id"
"""
    )
    assert "broken.yaml" in msg and "tool 't'" in msg and "let.account_id" in msg
    assert "already a parameter" in msg


def test_let_with_a_bad_expression_is_located() -> None:
    msg = _problems(
        """
  t:
    params: {account_id: Account}
    let: {b: "Account[account_id].nope"}
    returns: "b"
"""
    )
    assert "let.b" in msg and "no field 'nope'" in msg and "(col 21)" in msg


def test_old_with_two_arguments_is_located() -> None:
    msg = _problems(
        """
  t:
    params: {account_id: Account}
    effects: ["Account[account_id].balance = 1"]
    returns: "old(Account[account_id].balance, 2)"
"""
    )
    assert "tool 't'" in msg and "returns" in msg and "old() takes exactly one argument" in msg


def test_constants_and_functions_expand_inline() -> None:
    d = domain("till")
    t = d.tools["pay_with_fee"]
    assert to_source(t.requires[0].expr) == "Account[account_id].balance >= amount + 2"
    s = state("till", 1)
    s.set_field("Account", "A001", "balance", 600)
    assert call_tool(d, s, "pay_with_fee", {"account_id": "A001", "amount": 8}) == 900
    assert s.tables["Account"]["A001"]["balance"] == 590


def _domain_problems(extra: str) -> str:
    with pytest.raises(DomainError) as info:
        loads_domain(BASE + "  t: {returns: '1'}\n" + extra, source="broken.yaml")
    return str(info.value)


def test_function_reading_a_table_is_located() -> None:
    msg = _domain_problems(
        """
functions:
  f:
    params: {a: Account}
    returns: int
    body: "Account[a].balance"
"""
    )
    assert "broken.yaml" in msg and "function 'f', body" in msg
    assert "cannot read tables" in msg


def test_recursive_function_is_located() -> None:
    msg = _domain_problems(
        """
functions:
  f:
    params: {n: int}
    returns: int
    body: "f(n - 1) + 1"
"""
    )
    assert "function 'f', body" in msg and "no recursion" in msg and "(col 1)" in msg


def test_constant_of_the_wrong_type_is_located() -> None:
    msg = _domain_problems(
        """
constants:
  LIMIT: {type: int, value: "five"}
"""
    )
    assert "constant 'LIMIT'" in msg and "'five' is not an integer" in msg


def test_function_call_with_a_wrong_argument_is_located() -> None:
    msg = _problems(
        """
  t:
    params: {account_id: Account}
    returns: "double(account_id)"
functions:
  double:
    params: {n: int}
    returns: int
    body: "n * 2"
"""
    )
    assert "tool 't'" in msg and "double() parameter n: expected int" in msg


DEC_BASE = """
name: broken
entities:
  Account:
    key: {name: account_id, prefix: "A"}
    fields:
      balance: {type: decimal, min: "0.00"}
      name: str
tools:
"""


def _dec_problems(tools: str) -> str:
    with pytest.raises(DomainError) as info:
        loads_domain(DEC_BASE + tools, source="broken.yaml")
    return str(info.value)


def test_storing_too_many_places_says_to_round() -> None:
    msg = _dec_problems(
        """
  t:
    params: {account_id: Account}
    effects: ["Account[account_id].balance = Account[account_id].balance * 1.015"]
"""
    )
    assert "broken.yaml" in msg and "tool 't'" in msg and "effects[0]" in msg
    assert "5 decimal places but decimal keeps 2: round it" in msg and "(col " in msg


def test_division_outside_round_is_located() -> None:
    msg = _dec_problems(
        """
  t:
    params: {account_id: Account}
    returns: "Account[account_id].balance / 3"
"""
    )
    assert "tool 't'" in msg and "returns" in msg
    assert "division is only allowed inside round" in msg and "(col 1)" in msg


def test_decimal_bound_with_too_many_places_is_located() -> None:
    with pytest.raises(DomainError) as info:
        loads_domain(
            DEC_BASE.replace('min: "0.00"', 'min: "0.001"') + "  t: {returns: '1'}\n",
            source="broken.yaml",
        )
    msg = str(info.value)
    assert "entity 'Account'" in msg and "fields.balance" in msg
    assert "min '0.001' is not a decimal with at most 2 places" in msg


def test_decimal_argument_with_too_many_places_is_refused() -> None:
    d = domain("wallet")
    s = state("wallet", 0)
    with pytest.raises(ToolError, match="at most 2 places") as info:
        call_tool(d, s, "deposit", {"account_id": "A001", "amount": "1.005"})
    assert info.value.kind == "bad_args"
    assert (
        call_tool(d, s, "split", {"account_id": "A001", "parts": 1})
        == (s.tables["Account"]["A001"]["balance"])
    )
    got = call_tool(d, s, "convert", {"account_id": "A002", "amount": 10})
    assert got["exact"] == "19.50" and got["fee"] == "0.15"  # JSON text at the scale


def test_fstring_with_a_format_spec_is_located() -> None:
    msg = _dec_problems(
        """
  t:
    params: {account_id: Account}
    returns: "f'{account_id:>5}'"
"""
    )
    assert "tool 't'" in msg and "returns" in msg and "no conversion or format spec" in msg


def test_string_method_on_a_number_is_located() -> None:
    msg = _dec_problems(
        """
  t:
    params: {n: int}
    returns: "n.lower()"
"""
    )
    assert "tool 't'" in msg and ".lower() needs a str, got int" in msg and "(col 1)" in msg


def test_message_reveals_the_values_written_into_it() -> None:
    from graphgen.knowledge import facts_of_result, key_sort

    d = domain("desk")
    s = state("desk", 1)
    tid = next(k for k, r in s.tables["Ticket"].items() if r["status"] == "open")
    msg = call_tool(d, s, "close_ticket", {"ticket_id": tid})
    assert msg.startswith(f"Ticket {tid} has been closed (was open, ")
    facts = facts_of_result(d, d.tools["close_ticket"], msg)
    assert (key_sort("Ticket"), tid) in facts
    got = call_tool(d, s, "rename", {"ticket_id": tid, "title": "Hello World"})
    assert got == f"Renamed {tid} to hello world"
    facts = facts_of_result(d, d.tools["rename"], got)
    assert (key_sort("Ticket"), tid) in facts


def test_date_arithmetic_counts_days() -> None:
    d = domain("desk")
    s = state("desk", 2)
    s.set_field("Ticket", "T001", "due", "2026-12-30")
    got = call_tool(d, s, "postpone", {"ticket_id": "T001", "days": 3})
    assert s.tables["Ticket"]["T001"]["due"] == "2027-01-02"
    assert got == "T001 is due 2027-01-02, 4 days on"


def test_date_arithmetic_of_the_wrong_kind_is_located() -> None:
    msg = _problems(
        """
  t:
    params: {account_id: Account, d: date}
    returns: "d + d"
"""
    )
    assert "tool 't'" in msg and "date arithmetic is date + days" in msg


def test_decimal_parameters_are_free_values_of_their_type() -> None:
    from graphgen.knowledge import Sort, param_sort
    from graphgen.verify.bmc import sort_type

    d = domain("wallet")
    p = d.tools["set_rate"].params["rate"]
    assert param_sort(p) == Sort("free", "decimal(3)")
    assert sort_type(d, param_sort(p)) == p.ty
    assert sort_type(d, param_sort(d.tools["deposit"].params["amount"])) == p.ty.__class__(2)


# ------------------------------------------------------------------ constant tables


def test_constant_tables_look_up_a_row_or_the_default() -> None:
    d = domain("till")
    t = d.tools["bonus"]
    # The lookup is an if chain over the rows: nothing new for any backend to know.
    assert to_source(t.returns) == (
        "(5 if account_id == 'A001' else 7 if account_id == 'A002' else 1) * 10 "
        "+ (0 if amount == 1 else 3 if amount == 500 else 2)"
    )
    s = state("till", 1)
    s.set_field("Account", "A002", "balance", 10)
    assert call_tool(d, s, "bonus", {"account_id": "A002", "amount": 500}) == 73
    assert s.tables["Account"]["A002"]["balance"] == 20
    s.set_field("Account", "A003", "balance", 10)
    assert call_tool(d, s, "bonus", {"account_id": "A003", "amount": 7}) == 12
    assert s.tables["Account"]["A003"]["balance"] == 13


def test_an_enum_table_is_total_without_a_default() -> None:
    from graphgen.domains import load_builtin

    d = load_builtin("banking")
    s = generate_state(d, 0)
    got = call_tool(d, s, "get_exchange_rate", {"from_currency": "CAD", "to_currency": "EUR"})
    assert str(got) == "0.6728"  # 0.7300 / 1.0850, the last row is the chain's else


CONST_BASE = """
name: broken
enums:
  Cur: [USD, EUR]
entities:
  Account:
    key: {name: account_id, prefix: "A"}
    fields:
      balance: {type: int, min: 0}
      cur: {enum: Cur}
tools:
  t: {params: {a: Account}, returns: "RATE[Account[a].cur]"}
constants:
"""


@pytest.mark.parametrize(
    ("table", "line", "fragment"),
    [
        (
            "RATE: {type: int, key: Cur, values: {USD: 1}}",
            14,
            "constant 'RATE': the table lists no value for 'EUR'; list every member",
        ),
        (
            "RATE: {type: int, key: Cur, values: {USD: 1, EUR: 2, GBP: 3}}",
            14,
            "constant 'RATE', values.GBP: key 'GBP' is not one of USD, EUR",
        ),
        (
            "RATE: {type: int, key: Cur, values: {USD: 1, EUR: two}}",
            14,
            "values.EUR: value 'two' is not an integer",
        ),
        (
            "RATE: {type: int, key: str, values: {a: 1}}",
            14,
            "a table keyed by str needs a 'default:'",
        ),
        (
            "RATE: {type: int, value: 3, key: Cur, values: {USD: 1, EUR: 2}}",
            14,
            "either 'value:' or a table's 'key:' and 'values:'",
        ),
        (
            "RATE: {type: int, key: bool, values: {true: 1}, default: 0}",
            14,
            "a table key is a shared enum, int, str or an entity's id, not bool",
        ),
    ],
)
def test_broken_constant_table_is_located(table: str, line: int, fragment: str) -> None:
    with pytest.raises(DomainError) as info:
        loads_domain(CONST_BASE + "  " + table + "\n", source="broken.yaml")
    msg = str(info.value)
    assert fragment in msg
    assert any(
        ln.strip().startswith(f"- broken.yaml:{line}:") and fragment in ln
        for ln in msg.splitlines()
    ), msg


def test_constant_table_used_as_a_value_or_with_a_wrong_key_is_located() -> None:
    ok = "  RATE: {type: int, key: Cur, values: {USD: 1, EUR: 2}}\n"
    for returns, fragment in [
        ("RATE + 1", "constant table 'RATE' is not a value; look a row up: RATE[key]"),
        ("RATE[Account[a].balance]", "expected enum Cur{USD, EUR}, got int"),
        ("RATE['GBP']", "GBP"),
    ]:
        src = CONST_BASE.replace('"RATE[Account[a].cur]"', repr(returns)) + ok
        with pytest.raises(DomainError) as info:
            loads_domain(src, source="broken.yaml")
        assert "tool 't'" in str(info.value) and fragment in str(info.value), str(info.value)


def test_a_table_with_too_many_rows_is_refused() -> None:
    from graphgen.functions import MAX_TABLE_ROWS

    rows = ", ".join(f"{i}: {i}" for i in range(MAX_TABLE_ROWS + 1))
    with pytest.raises(DomainError) as info:
        loads_domain(
            CONST_BASE + f"  BIG: {{type: int, key: int, values: {{{rows}}}, default: 0}}\n"
            "  RATE: {type: int, key: Cur, values: {USD: 1, EUR: 2}}\n",
            source="broken.yaml",
        )
    assert f"at most {MAX_TABLE_ROWS} rows, not {MAX_TABLE_ROWS + 1}" in str(info.value)


def test_a_use_of_a_broken_table_says_it_is_broken() -> None:
    with pytest.raises(DomainError) as info:
        loads_domain(CONST_BASE + "  RATE: {type: int, key: Cur, values: {USD: 1}}\n")
    msg = str(info.value)
    assert "constant table 'RATE' is broken (see its problems)" in msg
    assert "unknown name" not in msg
