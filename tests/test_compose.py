"""Composite domains: a composition file merges domains and declares their link; the
result is one ordinary domain, so generation, the gate, the proofs and the compiled
environment are unchanged. The example composes the dental clinic of
``tests/data/propose`` with the built-in ``mock`` bank: fees are paid from, and claims
paid out to, the patient's bank account."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from graphgen import pipeline as pl
from graphgen.cli import app
from graphgen.compose import (
    compose_spec,
    compose_text,
    crosses,
    load_composite,
    part_of_entities,
    tool_parts,
)
from graphgen.domains import builtin_path
from graphgen.errors import DomainError
from graphgen.load import loads_domain
from graphgen.tasks.model import Task

DATA = Path(__file__).parent / "data" / "compose"
EXAMPLE = DATA / "clinic_bank.compose.yaml"
DENTAL = "../propose/good_dental.yaml"
runner = CliRunner()


def _flat(text: str) -> str:
    """Command output without the line breaks rich puts in long messages."""
    return " ".join(text.split())


def test_the_composite_is_one_domain() -> None:
    d = load_composite(EXAMPLE)
    assert d.name == "clinic_bank"
    assert {"Patient", "Appointment", "Account", "Payment", "Payout"} <= set(d.entities)
    assert "account_id" in d.entities["Patient"].fields
    assert {"find_patient", "find_account", "pay_fee", "pay_out_claim"} <= set(d.tools)
    # the written file is the same domain
    assert loads_domain(compose_text(EXAMPLE)).content_hash == d.content_hash
    policy = d.policy
    assert "dental:" in policy and "mock:" in policy and "Between them:" in policy
    assert pl.check(d).ok


def test_tools_know_which_parts_they_touch() -> None:
    d = load_composite(EXAMPLE)
    parts = tool_parts(d, part_of_entities(EXAMPLE))
    assert parts["pay_fee"] == {DENTAL, "mock"}
    assert parts["pay_out_claim"] == {DENTAL, "mock"}
    assert parts["find_patient"] == {DENTAL}
    assert parts["deposit"] == {"mock"}


def _tools(task: Task) -> list[str]:
    calls = [*task.chain, *([task.refused_call] if task.refused_call is not None else [])]
    return [c.tool for c in calls]


def _write(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "c.compose.yaml"
    p.write_text(text, encoding="utf-8")
    return p


def _problems(path: Path) -> str:
    with pytest.raises(DomainError) as exc:
        compose_spec(path)
    return "\n".join(str(p) for p in exc.value.problems)


def test_composition_errors_are_named(tmp_path: Path) -> None:
    mock = builtin_path("mock").read_text(encoding="utf-8")
    (tmp_path / "bank.yaml").write_text(mock.replace("name: mock", "name: bank"), "utf-8")
    clash = _problems(_write(tmp_path, "parts: [mock, bank.yaml]\n"))
    assert "entity 'Account' is defined by both mock and bank.yaml" in clash
    assert "tool 'pay' is defined by both mock and bank.yaml" in clash
    text = _problems(
        _write(
            tmp_path,
            "parts: [mock]\nlinks: {}\nextend: {}\n",
        )
    )
    assert "unknown key(s) links" in text and "'parts' lists two or more domains" in text
    missing = _problems(_write(tmp_path, "parts: [mock, nowhere.yaml]\n"))
    assert "part 'nowhere.yaml' is neither a file" in missing
    (tmp_path / "dental.yaml").write_text(
        (DATA.parent / "propose" / "good_dental.yaml").read_text(encoding="utf-8"), "utf-8"
    )
    ext = _problems(
        _write(
            tmp_path,
            "parts: [dental.yaml, mock]\nextend:\n  Nope: {fields: {x: int}}\n"
            "  Patient: {fields: {email: str}}\n"
            "tools:\n  deposit: {description: again, params: {}}\n",
        )
    )
    assert "extend.Nope: no part defines the entity 'Nope'" in ext
    assert "Patient already has a field 'email'" in ext
    assert "tool 'deposit' is defined by both mock and the composition" in ext


def test_a_bad_part_or_link_tool_is_located(tmp_path: Path) -> None:
    broken = (
        builtin_path("mock")
        .read_text(encoding="utf-8")
        .replace("Account[account_id].balance >= amount", "Account[account_id].balance >= 'x'")
    )
    (tmp_path / "bank.yaml").write_text(broken, "utf-8")
    (tmp_path / "dental.yaml").write_text(
        (DATA.parent / "propose" / "good_dental.yaml").read_text(encoding="utf-8"), "utf-8"
    )
    with pytest.raises(DomainError) as exc:
        compose_spec(_write(tmp_path, "parts: [dental.yaml, bank.yaml]\n"))
    assert str(exc.value.problems[0]).startswith(str(tmp_path / "bank.yaml"))
    link = (
        "parts: [dental.yaml, mock]\ntools:\n  pay_fee:\n    description: Pay.\n"
        "    params: {patient_id: Patient}\n"
        "    requires: [\"Account[patient_id].status == 'active'\"]\n"
        '    effects: ["Account[patient_id].balance -= 1"]\n'
    )
    with pytest.raises(DomainError) as exc:
        load_composite(_write(tmp_path, link))
    assert "tool 'pay_fee'" in str(exc.value) and "(composed)" in str(exc.value)


def test_cli_compose(tmp_path: Path) -> None:
    out = tmp_path / "clinic_bank.yaml"
    res = runner.invoke(app, ["compose", str(EXAMPLE), "-o", str(out)])
    assert res.exit_code == 0, res.output
    assert out.read_text(encoding="utf-8") == compose_text(EXAMPLE)
    again = runner.invoke(app, ["compose", str(EXAMPLE), "-o", str(out)])
    assert again.exit_code == 2 and "already exists" in _flat(again.output)
    bad = _write(tmp_path, "parts: [mock]\n")
    res = runner.invoke(app, ["compose", str(bad), "-o", str(tmp_path / "x.yaml")])
    assert res.exit_code == 1 and "two or more domains" in _flat(res.output)
    assert not (tmp_path / "x.yaml").exists()


@pytest.mark.slow
def test_cross_domain_tasks_are_verified_and_the_oracle_solves_them(tmp_path: Path) -> None:
    """At least 20 tasks whose calls touch both parts, every task re-verified from
    scratch, and the oracle solves every one in the compiled environment."""
    domain = tmp_path / "clinic_bank.yaml"
    domain.write_text(compose_text(EXAMPLE), encoding="utf-8")
    tasks = tmp_path / "tasks.jsonl"
    gen = pl.generate(domain, 80, pl.Options(jobs=2), output=tasks)
    d = load_composite(EXAMPLE)
    parts = tool_parts(d, part_of_entities(EXAMPLE))
    cross = [t for t in gen.tasks if crosses(_tools(t), parts, {DENTAL, "mock"})]
    assert len(cross) >= 20, len(cross)
    assert any(t.chain[-1].tool == "pay_out_claim" for t in cross)
    check = pl.verify_tasks(tasks, domain, pl.Options(jobs=2))
    assert check.ok and check.total == len(gen.tasks)
    oracle = pl.evaluate(tasks, "oracle", domain=domain)
    solved = {e.task_id for e in oracle.episodes if e.success}
    assert oracle.success_rate == 1.0
    assert {t.id for t in cross} <= solved
