"""``graphgen check --strict``: each finding on a domain made to trigger it, and none on
the same domain without the fault."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from graphgen.cli import app
from graphgen.domain import Domain
from graphgen.domains import builtin_names, load_builtin
from graphgen.load import load_domain
from graphgen.quality import (
    Finding,
    missing_search_tools,
    strict_findings,
    task_unreachable_tools,
    ungraded_parameters,
    unmentioned_fields,
    unreachable_enum_members,
    writes_without_refusal,
)

runner = CliRunner()

# A small clean domain: members own cards; a card is active, frozen or closed, and has a
# bounded limit. Each test below breaks one thing.
BASE = """
name: cards
description: Members and their cards.
policy: Identify the member by email; act only on their own cards.
enums:
  CardStatus: [active, frozen, closed]
entities:
  Member:
    key: {name: member_id, prefix: "M", width: 3}
    display: email
    size: 6
    fields:
      email: {type: str, unique: true, givable: true, vocab: email}
  Card:
    key: {name: card_id, prefix: "C", width: 3}
    display: nickname
    size: 12
    fields:
      member_id: Member
      nickname: {type: str, givable: true, vocab: word}
      status: {enum: CardStatus}
      limit: {type: int, min: 100, max: 900}
tools:
  find_member:
    description: Find a member by email.
    params:
      email: {type: Member.email}
    returns: "[m.member_id for m in Member if m.email == email]"
    intents: ["My email is {email}."]
  list_cards:
    description: List a member's cards.
    params:
      member_id: {type: Member}
    returns: "[c.card_id for c in Card if c.member_id == member_id]"
    intents: ["Which cards do I have?"]
  get_card:
    description: Show a card.
    params:
      card_id: {type: Card}
    returns: "Card[card_id]"
    intents: ["What is the limit of {card_id}?"]
  freeze_card:
    description: Freeze an active card.
    params:
      member_id: {type: Member}
      card_id: {type: Card}
    requires:
      - {check: "Card[card_id].member_id == member_id", message: "not your card"}
      - {check: "Card[card_id].status == 'active'", message: "card {card_id} is not active"}
    effects: ["Card[card_id].status = 'frozen'"]
    returns: "Card[card_id]"
    intents: ["Please freeze {card_id}."]
  close_card:
    description: Close a frozen card.
    params:
      member_id: {type: Member}
      card_id: {type: Card}
    requires:
      - {check: "Card[card_id].member_id == member_id", message: "not your card"}
      - {check: "Card[card_id].status == 'frozen'", message: "card {card_id} is not frozen"}
    effects: ["Card[card_id].status = 'closed'"]
    returns: "Card[card_id]"
    intents: ["Please close {card_id}."]
  raise_limit:
    description: Raise a card's limit by an amount.
    params:
      member_id: {type: Member}
      card_id: {type: Card}
      amount: {type: int, min: 1, max: 500}
    requires:
      - {check: "Card[card_id].member_id == member_id", message: "not your card"}
      - {check: "Card[card_id].limit + amount <= 900", message: "the limit would pass 900"}
    effects: ["Card[card_id].limit += amount"]
    returns: "Card[card_id]"
    intents: ["Please raise the limit of {card_id} by {amount}."]
"""


def _spec() -> dict:  # type: ignore[type-arg]
    spec = yaml.safe_load(BASE)
    assert isinstance(spec, dict)
    return spec


def _domain(tmp_path: Path, spec: dict) -> Domain:  # type: ignore[type-arg]
    path = tmp_path / "cards.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False), encoding="utf-8")
    return load_domain(path)


def _where(findings: list[Finding]) -> list[str]:
    return [f.where.split(" (")[0] for f in findings]


def test_the_base_domain_is_clean(tmp_path: Path) -> None:
    assert strict_findings(_domain(tmp_path, _spec())) == []


@pytest.mark.parametrize("name", builtin_names())
def test_builtins_run_clean_or_with_located_findings(name: str) -> None:
    for f in strict_findings(load_builtin(name)):
        assert f.file.endswith(f"{name}.yaml") and f.fix and "line " in f.where


def test_write_without_intents_is_unreachable(tmp_path: Path) -> None:
    spec = _spec()
    del spec["tools"]["close_card"]["intents"]
    got = task_unreachable_tools(_domain(tmp_path, spec))
    assert _where(got) == ["tool 'close_card'"]
    assert "intents" in got[0].fix and got[0].file.endswith("cards.yaml")
    assert "(line " in got[0].where  # located in the file


def test_tool_with_unknowable_argument_is_unreachable(tmp_path: Path) -> None:
    spec = _spec()
    spec["entities"]["Member"]["fields"]["email"]["givable"] = False
    got = task_unreachable_tools(_domain(tmp_path, spec))
    assert "tool 'find_member'" in _where(got)
    assert any("givable" in f.fix for f in got)


def test_dead_read_is_unreachable(tmp_path: Path) -> None:
    spec = _spec()
    spec["tools"]["count_cards"] = {
        "description": "Count a member's cards.",
        "params": {"member_id": {"type": "Member"}},
        "returns": "count(c for c in Card if c.member_id == member_id)",
    }
    assert _where(task_unreachable_tools(_domain(tmp_path, spec))) == ["tool 'count_cards'"]
    spec["tools"]["count_cards"]["intents"] = ["How many cards do I have?"]
    assert task_unreachable_tools(_domain(tmp_path, spec)) == []


def test_unmentioned_field(tmp_path: Path) -> None:
    spec = _spec()
    spec["entities"]["Member"]["fields"]["note"] = {"type": "str"}
    got = unmentioned_fields(_domain(tmp_path, spec))
    assert _where(got) == ["field 'Member.note'"]
    # Shown by a read tool, it is used: a question can ask about it.
    spec["tools"]["get_member"] = {
        "description": "Show a member.",
        "params": {"member_id": {"type": "Member"}},
        "returns": "Member[member_id]",
        "intents": ["What do you have on file for me?"],
    }
    assert unmentioned_fields(_domain(tmp_path, spec)) == []


def test_write_without_precondition_has_no_refusal(tmp_path: Path) -> None:
    spec = _spec()
    spec["tools"]["raise_limit"]["requires"] = []
    spec["tools"]["raise_limit"]["effects"] = ["Card[card_id].limit = 500"]
    spec["tools"]["raise_limit"]["params"].pop("amount")
    spec["tools"]["raise_limit"]["intents"] = ["Please set the limit of {card_id} to 500."]
    got = writes_without_refusal(_domain(tmp_path, spec))
    assert _where(got) == ["tool 'raise_limit'"] and "no precondition" in got[0].message


def test_write_whose_precondition_never_fails_has_no_refusal(tmp_path: Path) -> None:
    spec = _spec()
    # Always true on valid data: the limit is never above its bound.
    spec["tools"]["raise_limit"]["requires"] = [
        {"check": "Card[card_id].limit <= 900", "message": "the limit is too high"}
    ]
    spec["tools"]["raise_limit"]["effects"] = ["Card[card_id].limit = 500"]
    got = writes_without_refusal(_domain(tmp_path, spec))
    assert _where(got) == ["tool 'raise_limit'"] and "plausible calls" in got[0].message


def test_a_decimal_amount_that_can_break_a_check_is_a_refusal_path(tmp_path: Path) -> None:
    spec = _spec()
    # Only the amount can make the call fail: the trial calls must try decimal amounts.
    spec["entities"]["Card"]["fields"]["limit"] = {
        "type": "decimal",
        "min": "100.00",
        "max": "900.00",
    }
    spec["tools"]["raise_limit"]["params"]["amount"] = {
        "type": "decimal",
        "min": "0.01",
        "max": "500.00",
    }
    spec["tools"]["raise_limit"]["requires"] = [
        {"check": "Card[card_id].limit + amount <= 900.00", "message": "the limit would pass 900"}
    ]
    assert writes_without_refusal(_domain(tmp_path, spec)) == []
    # and one whose check the amount cannot break is still found
    spec["tools"]["raise_limit"]["requires"] = [
        {"check": "amount <= 500.00", "message": "at most 500.00 at once"}
    ]
    got = writes_without_refusal(_domain(tmp_path, spec))
    assert _where(got) == ["tool 'raise_limit'"]


def test_enum_member_never_reachable(tmp_path: Path) -> None:
    spec = _spec()
    spec["enums"]["CardStatus"].append("lost")
    spec["entities"]["Card"]["generate"] = {"require": ["x.status != 'lost'"]}
    got = unreachable_enum_members(_domain(tmp_path, spec))
    assert _where(got) == ["field 'Card.status'"] and got[0].message.startswith("lost:")
    # A tool that moves a card into it makes it reachable.
    spec["tools"]["report_lost"] = {
        "description": "Report a card lost.",
        "params": {"member_id": {"type": "Member"}, "card_id": {"type": "Card"}},
        "requires": [{"check": "Card[card_id].status != 'lost'", "message": "already lost"}],
        "effects": ["Card[card_id].status = 'lost'"],
        "returns": "Card[card_id]",
        "intents": ["I lost {card_id}."],
    }
    assert unreachable_enum_members(_domain(tmp_path, spec)) == []


def test_entity_without_search_tool(tmp_path: Path) -> None:
    spec = _spec()
    del spec["tools"]["list_cards"]
    got = missing_search_tools(_domain(tmp_path, spec))
    assert _where(got) == ["entity 'Card'"]
    assert "find_card_by_nickname" in got[0].fix and "Card.nickname" in got[0].fix


def test_cli_strict_exit_codes(tmp_path: Path) -> None:
    clean = tmp_path / "clean"
    clean.mkdir()
    _domain(clean, _spec())
    res = runner.invoke(app, ["check", "--strict", str(clean / "cards.yaml")])
    assert res.exit_code == 0, res.output
    assert "no findings" in res.output
    spec = _spec()
    del spec["tools"]["list_cards"]
    bad = tmp_path / "bad"
    bad.mkdir()
    _domain(bad, spec)
    plain = runner.invoke(app, ["check", str(bad / "cards.yaml")])
    assert plain.exit_code == 0  # advisory without --strict
    res = runner.invoke(app, ["check", "--strict", str(bad / "cards.yaml")])
    assert res.exit_code == 1
    assert "entity without a search tool" in res.output and "fix:" in res.output


def test_a_parameter_only_checks_read_is_ungraded(tmp_path: Path) -> None:
    """Closing a card "and moving its balance to my other card": the other card is
    checked (the member's own) but no effect records it, so any card of the member would
    pass the grade. Recording it in a field clears the finding; an owner's id pinned by
    ``Card[card_id].member_id == member_id`` is never one."""
    spec = _spec()
    close = spec["tools"]["close_card"]
    close["params"]["move_to"] = {"type": "Card"}
    close["requires"].append(
        {"check": "Card[move_to].member_id == member_id", "message": "not your card"}
    )
    got = ungraded_parameters(_domain(tmp_path, spec))
    assert _where(got) == ["tool 'close_card'"]
    assert "'move_to'" in got[0].message and "record it" in got[0].fix
    strict = strict_findings(_domain(tmp_path, spec))
    assert [f for f in strict if f.check == "ungraded parameter"] == got
    spec["entities"]["Card"]["fields"]["moved_to"] = {"type": "Card | None"}
    spec["entities"]["Card"].setdefault("generate", {})["derive"] = {"moved_to": "None"}
    close["effects"].append("Card[card_id].moved_to = move_to")
    assert ungraded_parameters(_domain(tmp_path, spec)) == []
