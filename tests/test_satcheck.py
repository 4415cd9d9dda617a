"""graphgen check reports write tools whose precondition no state satisfies (z3)."""

from __future__ import annotations

from pathlib import Path

import pytest
import z3
from typer.testing import CliRunner

from graphgen.cli import app
from graphgen.domain import Domain
from graphgen.domains import builtin_names, builtin_path, load_builtin
from graphgen.load import loads_domain
from graphgen.state import State
from graphgen.types import DATE
from graphgen.verify.calls import encode_call
from graphgen.verify.satcheck import unsatisfiable_writes
from graphgen.verify.symstate import SymState
from graphgen.verify.universe import Universe, date_ordinal

MOCK = builtin_path("mock").read_text(encoding="utf-8")
LOCK_REQUIRES = "requires: \"Account[account_id].status == 'active'\""


@pytest.mark.parametrize(
    "cond",
    [
        "Account[account_id].balance < 0",  # balance has min 0
        "Account[account_id].status == 'active' and Account[account_id].status == 'locked'",
        "Account[account_id].balance > 100000",  # above max
        "not (Account[account_id].status == 'active' or Account[account_id].status == 'locked')",
    ],
)
def test_impossible_preconditions_are_reported(cond: str) -> None:
    d = loads_domain(MOCK.replace(LOCK_REQUIRES, f'requires: "{cond}"'), "variant.yaml")
    assert unsatisfiable_writes(d) == ["lock_account"]


@pytest.mark.parametrize(
    "cond",
    [
        "Account[account_id].balance < 5",
        "Account[account_id].status != 'active'",
        "count(p for p in Payment if p.account_id == account_id) > 3",  # not modelled: free
        "Account[account_id].email == 'x@y.z' and Account[account_id].balance >= 100000",
    ],
)
def test_possible_preconditions_are_not_reported(cond: str) -> None:
    d = loads_domain(MOCK.replace(LOCK_REQUIRES, f'requires: "{cond}"'), "variant.yaml")
    assert unsatisfiable_writes(d) == []


@pytest.mark.parametrize("name", builtin_names())
def test_builtins_have_no_impossible_write(name: str) -> None:
    assert unsatisfiable_writes(load_builtin(name)) == []


def test_check_command_shows_the_report(tmp_path: Path) -> None:
    bad = tmp_path / "variant.yaml"
    bad.write_text(
        MOCK.replace(LOCK_REQUIRES, 'requires: "Account[account_id].balance < 0"'), encoding="utf-8"
    )
    res = CliRunner().invoke(app, ["check", str(bad)])
    assert res.exit_code == 0, res.output
    row = next(line for line in res.output.splitlines() if "unsatisfiable" in line)
    assert "lock_account" in row
    good = CliRunner().invoke(app, ["check", str(builtin_path("mock"))])
    row = next(line for line in good.output.splitlines() if "unsatisfiable" in line)
    assert "none" in row


# ------------------------------------------------------------------ dates, one encoding

DATED = MOCK.replace(
    "      status: {enum: [active, locked]}\n",
    "      status: {enum: [active, locked]}\n      opened: date\n",
)
# Day windows across a month and a year boundary: exactly one day, or no day at all. As
# YYYYMMDD numbers the empty windows would still hold integers (20240132 .. 20240200).
WINDOWS = [
    (
        "Account[account_id].opened > '2024-01-31' and Account[account_id].opened < '2024-02-02'",
        True,
    ),
    (
        "Account[account_id].opened > '2024-01-31' and Account[account_id].opened < '2024-02-01'",
        False,
    ),
    (
        "Account[account_id].opened > '2023-12-31' and Account[account_id].opened < '2024-01-01'",
        False,
    ),
    (
        "Account[account_id].opened >= '2023-12-31' and Account[account_id].opened < '2024-01-01'",
        True,
    ),
]


def _dated(cond: str) -> Domain:
    return loads_domain(DATED.replace(LOCK_REQUIRES, f'requires: "{cond}"'), "dated.yaml")


def _encoder_can_call(domain: Domain, tool: str) -> bool:
    """Whether some state makes ``tool`` succeed, per the symbolic encoding (every cell
    of a one-row universe free)."""
    state = State(
        {
            "Account": {
                "A001": {
                    "email": "a@b.c",
                    "owner": "Ann",
                    "balance": 0,
                    "status": "active",
                    "opened": "2024-01-01",
                }
            },
            "Payment": {},
        },
        {},
    )
    uni = Universe.build(domain, state)
    st = SymState.fresh(uni, "pre")
    tdef = domain.tools[tool]
    args = {p.name: uni.z3_var(p.ty, p.name) for p in tdef.params.values()}
    solver = z3.Solver()
    solver.add(encode_call(uni, st, tdef, args).ok)
    return bool(solver.check() == z3.sat)


@pytest.mark.parametrize(("cond", "possible"), WINDOWS)
def test_satcheck_and_encoder_agree_on_date_windows(cond: str, possible: bool) -> None:
    d = _dated(cond)
    assert unsatisfiable_writes(d) == ([] if possible else ["lock_account"])
    assert _encoder_can_call(d, "lock_account") is possible


def test_dates_are_day_numbers_everywhere() -> None:
    uni = Universe.build(_dated("Account[account_id].status == 'active'"), State({}, {}))
    for iso in ("2023-12-31", "2024-01-01", "2024-01-31", "2024-02-01", "2024-02-29"):
        assert uni.encode_value(DATE, iso).eq(z3.IntVal(date_ordinal(iso)))
        assert uni.decode_value(DATE, uni.encode_value(DATE, iso)) == iso
    assert date_ordinal("2024-02-01") - date_ordinal("2024-01-31") == 1
