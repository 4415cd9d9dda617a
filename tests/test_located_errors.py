"""Domain-file errors in our own words, at the line and column of the offending node."""

from __future__ import annotations

import pytest

from graphgen.analysis import report
from graphgen.domains import builtin_path
from graphgen.errors import DomainError, Located
from graphgen.load import domain_from_dict, loads_domain

MOCK = builtin_path("mock").read_text(encoding="utf-8")


def _problems(text: str) -> list[Located]:
    with pytest.raises(DomainError) as info:
        loads_domain(text, source="my.yaml")
    return info.value.problems


def _break(old: str, new: str) -> str:
    assert MOCK.count(old) == 1, old
    return MOCK.replace(old, new)


def _pos(text: str, needle: str) -> tuple[int, int]:
    """1-based line and column of the first ``needle`` in ``text``."""
    before = text[: text.index(needle)]
    return before.count("\n") + 1, len(before) - before.rfind("\n")


def test_unknown_key_in_a_parameter_is_named_with_its_place_and_the_known_keys() -> None:
    text = _break(
        'amount: {type: int, min: 1, max: 5000, description: "Whole units to add."}',
        "amount: {type: int, unit: 3}",
    )
    (p,) = _problems(text)
    assert p.message.startswith("unknown key 'unit' in parameter 'amount' of tool 'deposit'")
    assert "known keys: default, description, enum, max, min, " in p.message
    assert "Extra inputs" not in str(p)
    assert (p.line, p.column) == _pos(text, "unit: 3")
    assert str(p).startswith(f"my.yaml:{p.line}:{p.column}: ")


def test_a_misspelt_key_gets_the_closest_one() -> None:
    text = _break('message: "insufficient funds"}', 'mesage: "insufficient funds"}')
    (p,) = _problems(text)
    assert "unknown key 'mesage' in requires[1] of tool 'pay'; did you mean 'message'?" in str(p)
    assert (p.line, p.column) == _pos(text, "mesage")


def test_a_value_of_the_wrong_kind_says_what_it_must_be() -> None:
    (p,) = _problems(_break("size: 6", "size: many"))
    assert "size of entity 'Account' must be a whole number, not 'many'" in p.message
    (p,) = _problems(_break("size: 6", "size: 100000000"))
    assert "must be at most" in p.message


def test_an_expression_error_points_at_its_own_line_and_column_not_the_tools() -> None:
    text = _break('"Account[account_id].balance -= amount"', '"Account[account_id].balance -= amt"')
    (p,) = _problems(text)
    assert p.message == "unknown name 'amt'; did you mean 'amount'?"
    assert (p.line, p.column) == _pos(text, 'amt"')  # the culprit itself
    assert p.line != _pos(text, "  pay:")[0]


def test_misspelt_fields_and_types_get_the_closest_name() -> None:
    (p,) = _problems(
        _break("Account[account_id].balance -= amount", "Account[account_id].balanse -= amount")
    )
    assert "Account has no field 'balanse'; did you mean 'balance'?" in p.message
    got = _problems(_break("      account_id: Account\n", "      account_id: Acount\n"))
    assert any("unknown type 'Acount'; did you mean 'Account'?" in p.message for p in got)


def test_an_assignment_to_a_plain_name_points_at_let() -> None:
    (p,) = _problems(_break('"Account[account_id].balance += amount"', '"was = amount"'))
    assert "an effect assigns a table field" in p.message and "let:" in p.message
    assert "an effect writes a field" not in p.message


def test_unsupported_syntax_is_named_in_plain_words() -> None:
    (p,) = _problems(_break('returns: "p"', 'returns: "len({a for a in Account})"'))
    assert p.message == "set comprehensions are not supported in domain expressions"
    assert "SetComp" not in str(p)


def test_an_unknown_vocabulary_is_an_error_with_the_closest_name() -> None:
    text = _break("vocab: person_name", "vocab: person_nmae")
    (p,) = _problems(text)
    assert "unknown vocabulary 'person_nmae'; did you mean 'person_name'?" in p.message
    assert p.line == _pos(text, "person_nmae")[0]


def test_a_domain_built_in_python_gets_the_same_words() -> None:
    with pytest.raises(DomainError, match="unknown key 'colour' in the domain file"):
        domain_from_dict({"name": "x", "entities": {}, "tools": {}, "colour": "red"})


def test_fields_written_through_a_literal_key_are_not_reported_unwritten() -> None:
    d = loads_domain(
        """
name: sess
entities:
  User:
    key: {name: user_id, prefix: U}
    fields: {name: str}
  Session:
    key: {name: session_id, prefix: S}
    fields: {user_id: User}
tools:
  login:
    params: {user_id: User}
    effects: ["Session['S1'].user_id = user_id"]
    returns: "user_id"
  whoami:
    params: {}
    returns: "Session['S1'].user_id"
"""
    )
    r = report(d)
    assert r.unwritten_fields == ["User.name"]
    assert r.fixed_tables == ["Session", "User"]
    assert not any(f.startswith("Session") for f in r.unwritten_fields)


# ------------------------------------------------------------ multi-line expressions

FIND = '    returns: "[a.account_id for a in Account if a.email == email]"'
FUNDS = '- {check: "Account[account_id].balance >= amount", message: "insufficient funds"}'


@pytest.mark.parametrize(
    ("old", "new", "culprit"),
    [
        # folded: the lines are joined with spaces (a more-indented one keeps its break)
        (
            FIND,
            "    returns: >-\n      [a.account_id for a in Account\n      if a.emial == email]",
            "emial",
        ),
        (
            FIND,
            "    returns: >-\n      [a.account_id for a in Account\n         if a.emial == email]",
            "emial",
        ),
        # literal: the breaks are kept
        (
            FIND,
            "    returns: |\n      [a.account_id for a in Account\n          if a.emial == email]",
            "emial",
        ),
        # a folded check of a requires item, the culprit on its third line
        (
            FUNDS,
            "- check: >-\n          Account[account_id].status == 'active'\n"
            "          and Account[account_id].balance\n          >= amont\n"
            '        message: "insufficient funds"',
            "amont",
        ),
        # plain: a scalar without quotes that goes on over the next lines
        (
            FUNDS,
            "- check: Account[account_id].status == 'active' and\n"
            "          Account[account_id].balance >= amont\n"
            '        message: "insufficient funds"',
            "amont",
        ),
        # single-quoted over two lines, a doubled quote before the culprit
        (
            FUNDS,
            "- check: 'Account[account_id].status == ''active'' and\n"
            "          Account[account_id].balance >= amont'\n"
            '        message: "insufficient funds"',
            "amont",
        ),
        # a character that takes two bytes in UTF-8 before the culprit, on one line
        (
            '"Account[account_id].balance -= amount"',
            "\"Account[account_id].balance -= len('\u00e9t\u00e9') + amt\"",
            "amt",
        ),
    ],
    ids=["folded", "folded-more-indented", "literal", "requires-folded", "plain", "quoted", "utf8"],
)
def test_an_error_inside_a_multi_line_expression_is_at_the_culprits_line_and_column(
    old: str, new: str, culprit: str
) -> None:
    text = _break(old, new)
    (p,) = _problems(text)
    assert culprit in p.message
    assert text.count(culprit) == 1
    assert (p.line, p.column) == _pos(text, culprit)


def test_a_multi_line_expression_shows_the_line_inside_it() -> None:
    text = _break(
        FIND, "    returns: |\n      [a.account_id for a in Account\n          if a.emial == email]"
    )
    (p,) = _problems(text)
    assert p.expr_line == 2 and p.col == 10
    shown = str(p)
    assert shown.startswith(f"my.yaml:{p.line}:{p.column}: tool 'find_account'")
    # the expression's lines stay under one another, the place names its line
    assert "    in: [a.account_id for a in Account\n            if a.emial" in shown
    assert shown.endswith("(line 2, col 10)")


def test_a_syntax_error_at_the_end_of_a_multi_line_expression_points_past_its_last_line() -> None:
    text = _break(
        FIND, "    returns: >-\n      [a.account_id for a in Account\n      if a.email ==]"
    )
    (p,) = _problems(text)
    assert p.message.startswith("syntax error")
    assert (p.line, p.column) == _pos(text, "]\n    intents")


# ------------------------------------------------------------ misuses, in a file

PAY_RETURNS = 'returns: "p"'


@pytest.mark.parametrize(
    ("new", "culprit", "message"),
    [
        (
            "returns: \"{'id': p, 1: amount}\"",
            "1: amount",
            "a record's keys are quoted names, like {'total': ...}, not 1",
        ),
        (
            "returns: \"{'id': p, 'amount': amount, 'id': account_id}\"",
            "'id': account_id",
            "the key 'id' is given twice in this record",
        ),
        (
            'returns: "{**Account[account_id]}"',
            "{**",
            "a record lists its keys one by one; '**' is not allowed",
        ),
        (
            'returns: "Account[account_id].balance[0]"',
            "Account[account_id].balance[0]",
            "only a table or a list can be indexed: Entity[id] or xs[0], got int",
        ),
        (
            "returns: \"[a.balance for a in Account]['first']\"",
            "'first'",
            "a list index is an int position, got str",
        ),
        (
            "returns: \"round(amount, 2, 'up')\"",
            "'up'",
            "round's mode is 'half_up' or 'half_even' (the default), not 'up'",
        ),
    ],
    ids=[
        "record-int-key",
        "record-key-twice",
        "record-unpacked",
        "index-an-int",
        "str-index",
        "round-mode",
    ],
)
def test_a_misused_expression_in_a_file_is_named_at_its_culprit(
    new: str, culprit: str, message: str
) -> None:
    text = _break(PAY_RETURNS, new)
    (p,) = _problems(text)
    assert p.message == message
    assert p.where.startswith("tool 'pay'") and p.where.endswith("returns")
    assert (p.line, p.column) == _pos(text, culprit)
    assert str(p).startswith(f"my.yaml:{p.line}:{p.column}: tool 'pay'")


def test_a_string_method_on_an_optional_str_says_to_test_it_first() -> None:
    text = _break("owner: {type: str, vocab: person_name}", 'owner: "str | None"')
    got = text.replace(
        'returns: "Account[account_id]"', 'returns: "Account[account_id].owner.lower()"'
    )
    (p,) = _problems(got)
    assert p.message.startswith(".lower() needs a str, got str | None (it may be None: test ")
    assert "is not None" in p.message and "str(x)" not in p.message
    assert (p.line, p.column) == _pos(got, "Account[account_id].owner.lower")
    # the advice works: a test that shows the value present lets .lower() read it
    fixed = text.replace(
        'returns: "Account[account_id]"',
        'returns: "Account[account_id].owner is not None and '
        "Account[account_id].owner.lower() == 'ann'\"",
    )
    assert loads_domain(fixed, source="my.yaml").tools["get_account"].returns is not None
