"""graphgen check reports write tools whose precondition no state satisfies (z3)."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from graphgen.cli import app
from graphgen.domains import builtin_names, builtin_path, load_builtin
from graphgen.load import loads_domain
from graphgen.verify.satcheck import unsatisfiable_writes

MOCK = builtin_path("mock").read_text(encoding="utf-8")
LOCK_REQUIRES = "requires: \"Account[account_id].status == 'active'\""


@pytest.mark.parametrize("cond", [
    "Account[account_id].balance < 0",  # balance has min 0
    "Account[account_id].status == 'active' and Account[account_id].status == 'locked'",
    "Account[account_id].balance > 100000",  # above max
    "not (Account[account_id].status == 'active' or Account[account_id].status == 'locked')",
])
def test_impossible_preconditions_are_reported(cond: str) -> None:
    d = loads_domain(MOCK.replace(LOCK_REQUIRES, f'requires: "{cond}"'), "variant.yaml")
    assert unsatisfiable_writes(d) == ["lock_account"]


@pytest.mark.parametrize("cond", [
    "Account[account_id].balance < 5",
    "Account[account_id].status != 'active'",
    "count(p for p in Payment if p.account_id == account_id) > 3",  # not modelled: free
    "Account[account_id].email == 'x@y.z' and Account[account_id].balance >= 100000",
])
def test_possible_preconditions_are_not_reported(cond: str) -> None:
    d = loads_domain(MOCK.replace(LOCK_REQUIRES, f'requires: "{cond}"'), "variant.yaml")
    assert unsatisfiable_writes(d) == []


@pytest.mark.parametrize("name", builtin_names())
def test_builtins_have_no_impossible_write(name: str) -> None:
    assert unsatisfiable_writes(load_builtin(name)) == []


def test_check_command_shows_the_report(tmp_path: Path) -> None:
    bad = tmp_path / "variant.yaml"
    bad.write_text(MOCK.replace(LOCK_REQUIRES, 'requires: "Account[account_id].balance < 0"'),
                   encoding="utf-8")
    res = CliRunner().invoke(app, ["check", str(bad)])
    assert res.exit_code == 0, res.output
    row = next(line for line in res.output.splitlines() if "unsatisfiable" in line)
    assert "lock_account" in row
    good = CliRunner().invoke(app, ["check", str(builtin_path("mock"))])
    row = next(line for line in good.output.splitlines() if "unsatisfiable" in line)
    assert "none" in row
