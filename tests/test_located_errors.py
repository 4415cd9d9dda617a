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
