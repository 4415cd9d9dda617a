"""Broken domain files are rejected with located, specific errors.

Each file in ``tests/data/broken/`` is the mock domain with one thing broken. For every
file we check that loading raises :class:`DomainError` and that the message names the
file, the tool and the offending expression, and says *why* (a per-file fragment), so a
file rejected for the wrong reason fails the test.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from graphgen.domains import builtin_names, builtin_path
from graphgen.errors import DomainError, Located
from graphgen.load import load_domain, loads_domain

BROKEN = Path(__file__).parent / "data" / "broken"
MOCK_TEXT = builtin_path("mock").read_text(encoding="utf-8")


# file stem -> (message fragment, tool named in the location or None, offending text or None)
EXPECTED: dict[str, tuple[str, str | None, str | None]] = {
    "syntax_error": ("syntax error", "pay", "Account[account_id].balance >="),
    "yaml_syntax": ("YAML syntax error", None, None),
    "unknown_field": ("has no field 'balanse'", "deposit", "Account[account_id].balanse += amount"),
    "type_mismatch_compare": (
        "cannot compare str with int",
        "find_account",
        "[a.account_id for a in Account if a.email == 42]",
    ),
    "effect_wrong_type": (
        "expected int, got str",
        "lock_account",
        "Account[account_id].balance = 'locked'",
    ),
    "enum_member": (
        "'frozen' is not a member of enum Account.status",
        "deposit",
        "Account[account_id].status == 'frozen'",
    ),
    "effect_enum_member": (
        "'closed' is not a member of enum Account.status",
        "lock_account",
        "Account[account_id].status = 'closed'",
    ),
    "dunder_import": ("calls are not allowed: __import__", "get_account", "__import__('os')"),
    "dunder_class": (
        "forbidden attribute '__class__'",
        "get_account",
        "Account[account_id].__class__",
    ),
    "lambda": ("lambda is not allowed", "get_account", "lambda: Account[account_id]"),
    "call_not_allowed": ("calls are not allowed: open", "lock_account", "open('x') == 'active'"),
    "missing_entity_ref": ("unknown type 'Acount'", None, None),
    "duplicate_tool": ("duplicate tool 'deposit'", None, None),
    "effect_on_key": (
        "cannot write the key Account.account_id",
        "lock_account",
        "Account[account_id].account_id = 'A999'",
    ),
    "unknown_param": ("unknown name 'amt'", "pay", "Account[account_id].balance -= amt"),
    "create_missing_field": (
        "missing field 'amount'",
        "pay",
        "p = Payment.create(account_id=account_id)",
    ),
    "placeholder_unknown": (
        "placeholder {amt} is not a parameter",
        "pay",
        "Pay {amt} from my account.",
    ),
    "requires_not_bool": (
        "a condition must be bool",
        "lock_account",
        "Account[account_id].balance",
    ),
    "augassign_on_str": (
        "+= needs an int or decimal field",
        "deposit",
        "Account[account_id].owner += 'x'",
    ),
    "bad_param_type": ("unknown type 'integer'", "deposit", None),
    "tool_without_effects_or_returns": ("needs effects or a return value", "lock_account", None),
    "attribute_escape": (
        "attribute .real needs a row",
        "get_account",
        "Account[account_id].balance.real",
    ),
    "unknown_tool_key": ("unknown key", "lock_account", None),
    "walrus": (
        "assignment expressions are not allowed",
        "pay",
        "(b := Account[account_id].balance) >= amount",
    ),
    "import_effect": ("imports are not allowed", "lock_account", "import os"),
    "wrong_id_type": (
        "needs a Account id, got Payment id",
        "get_account",
        "Account[Payment['P001'].payment_id]",
    ),
}

# Where the location names something other than a tool, what it must name instead.
OTHER_LOCATION = {
    "yaml_syntax": "line 24",
    "missing_entity_ref": "entity 'Payment'",
    "duplicate_tool": "line 60",
}

# Intent templates are not expressions: their problems carry the text but no column.
NO_COLUMN = {"placeholder_unknown"}


def _tool_line(path: Path, tool: str) -> int:
    """Line of the (first) ``  tool:`` key under ``tools:`` in a corpus file."""
    lines = path.read_text(encoding="utf-8").splitlines()
    start = lines.index("tools:")
    for i, line in enumerate(lines[start:], start=start + 1):
        if line == f"  {tool}:":
            return i
    raise AssertionError(f"tool {tool} not in {path}")


def _load_error(path: Path) -> DomainError:
    with pytest.raises(DomainError) as info:
        load_domain(path)
    return info.value


def test_corpus_and_table_agree() -> None:
    stems = {p.stem for p in BROKEN.glob("*.yaml")}
    assert stems == set(EXPECTED)
    assert len(stems) >= 18


@pytest.mark.parametrize("stem", sorted(EXPECTED))
def test_file_starts_with_fault_comment(stem: str) -> None:
    first = (BROKEN / f"{stem}.yaml").read_text(encoding="utf-8").splitlines()[0]
    assert first.startswith("# expected fault: ") and len(first) > 25


@pytest.mark.parametrize("stem", sorted(EXPECTED))
def test_broken_file_is_rejected_with_location(stem: str) -> None:
    path = BROKEN / f"{stem}.yaml"
    err = _load_error(path)
    text = str(err)
    fragment, tool, expr = EXPECTED[stem]
    assert str(path) in text
    assert fragment in text, text
    # The problem that carries the reason is itself fully located.
    hits = [p for p in err.problems if fragment in p.message]
    assert hits, text
    prob: Located = hits[0]
    assert prob.file == str(path)
    assert all(p.file == str(path) for p in err.problems)
    if tool is not None:
        assert f"tool {tool!r} (line {_tool_line(path, tool)})" in prob.where, prob.where
        assert f"tool {tool!r}" in text
    else:
        assert OTHER_LOCATION[stem] in str(prob), str(prob)
    if expr is not None:
        assert prob.expr.strip() == expr
        assert f"in: {expr}" in text
        if stem not in NO_COLUMN:
            assert prob.col is not None
            # Columns are 1-based and point inside (or just past the end of) the text.
            assert 1 <= prob.col <= len(prob.expr) + 1, (prob.col, prob.expr)


def test_column_points_at_the_culprit() -> None:
    err = _load_error(BROKEN / "unknown_param.yaml")
    (prob,) = err.problems
    assert prob.col is not None
    assert prob.expr[prob.col - 1 :].startswith("amt")
    err = _load_error(BROKEN / "dunder_class.yaml")
    (prob,) = err.problems
    assert prob.col is not None
    assert prob.expr[prob.col - 1 :].startswith("__class__")


def _break(text: str, old: str, new: str) -> str:
    assert text.count(old) == 1, old
    return text.replace(old, new)


def test_two_independent_problems_are_both_reported() -> None:
    text = _break(
        MOCK_TEXT,
        '"Account[account_id].balance += amount"',
        '"Account[account_id].balanse += amount"',
    )
    text = _break(
        text,
        'intents: ["Pay {amount} from my account."]',
        'intents: ["Pay {amt} from my account."]',
    )
    with pytest.raises(DomainError) as info:
        loads_domain(text, source="two_faults.yaml")
    err = info.value
    assert len(err.problems) == 2
    msg = str(err)
    assert msg.startswith("2 problems in domain")
    # each problem leads with the file, line and column of its own node
    assert re.search(r"two_faults\.yaml:\d+:\d+: tool 'deposit'", msg), msg
    assert re.search(r"two_faults\.yaml:\d+:\d+: tool 'pay'", msg), msg
    assert "has no field 'balanse'" in msg and "placeholder {amt}" in msg


def test_two_problems_in_one_tool_are_both_reported() -> None:
    text = _break(
        MOCK_TEXT,
        '{check: "Account[account_id].balance >= amount", message: "insufficient funds"}',
        '{check: "Account[account_id].balance >= \'x\'", message: "insufficient funds"}',
    )
    text = _break(
        text, '"Account[account_id].balance -= amount"', '"Account[account_id].email -= amount"'
    )
    with pytest.raises(DomainError) as info:
        loads_domain(text, source="one_tool.yaml")
    wheres = [p.where for p in info.value.problems]
    assert len(wheres) == 2
    assert wheres[0].endswith("requires[1]") and wheres[1].endswith("effects[0]")
    assert all(w.startswith("tool 'pay'") for w in wheres)


def test_mock_text_itself_loads() -> None:
    # Guards the corpus: the unbroken original must load, so every failure above is
    # caused by the one edit.
    assert loads_domain(MOCK_TEXT, source="mock.yaml").name == "mock"


@pytest.mark.parametrize("name", builtin_names())
def test_builtin_domain_loads_cleanly(name: str) -> None:
    d = load_domain(builtin_path(name))
    assert d.name == name
    assert d.tools and d.entities
    assert re.fullmatch(r"[0-9a-f]{16}", d.content_hash)


# ------------------------------------------------------------------ `graphgen check`

CLI_CASES = sorted(EXPECTED)  # every broken file of the corpus


def _flat(s: str) -> str:
    # Rich wraps long lines at the terminal width; wrapping is cosmetic, so compare with
    # all whitespace runs collapsed.
    return " ".join(s.split())


@pytest.fixture(scope="module")
def cli_app():  # type: ignore[no-untyped-def]
    from graphgen.cli import app

    return app


@pytest.mark.parametrize("stem", CLI_CASES)
def test_cli_check_reports_located_error(cli_app, stem: str) -> None:  # type: ignore[no-untyped-def]
    from typer.testing import CliRunner

    path = BROKEN / f"{stem}.yaml"
    res = CliRunner().invoke(cli_app, ["check", str(path)])
    assert res.exit_code == 1, res.output
    assert res.exception is None or isinstance(res.exception, SystemExit), res.exception
    fragment, tool, expr = EXPECTED[stem]
    out = _flat(res.output)
    assert _flat(str(path)) in out
    assert _flat(fragment) in out
    if tool is not None:  # a YAML syntax error, say, has no tool to name
        assert f"tool {tool!r}" in out
    if expr is not None:
        assert _flat(expr) in out, res.output


def test_cli_check_accepts_mock(cli_app) -> None:  # type: ignore[no-untyped-def]
    from typer.testing import CliRunner

    res = CliRunner().invoke(cli_app, ["check", str(builtin_path("mock"))])
    assert res.exit_code == 0, res.output
    assert "error" not in res.output.lower()
    assert "mock" in res.output
