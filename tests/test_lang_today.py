"""``today()``: the state's date, in every backend (tests/data/lang/clinic.yaml)."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from graphgen.domain import Domain
from graphgen.domains import load_builtin
from graphgen.errors import DomainError, ToolError
from graphgen.grading import grade
from graphgen.interp import call_tool
from graphgen.load import load_domain, loads_domain
from graphgen.state import State
from graphgen.stategen import generate_state
from graphgen.stateimport import StateImportError, import_state
from graphgen.tasks.dryrun import check_task
from graphgen.tasks.model import Task
from graphgen.tasks.softrefusal import soft_reason
from graphgen.tasks.taskset import generate
from graphgen.today import DEFAULT_TODAY, uses_today
from graphgen.verify.concrete import run_concrete
from graphgen.verify.proofs import prove_task
from tests.test_codegen import Compiled, Tally, _import_package, run_differential
from tests.test_z3_encoding import assert_agree, draw_chain, interpret

DATA = Path(__file__).parent / "data" / "lang"


@cache
def clinic() -> Domain:
    return load_domain(DATA / "clinic.yaml")


# ------------------------------------------------------------------ the state's today


def test_generated_today_is_seeded_and_in_the_domain_range() -> None:
    d = clinic()
    days = [generate_state(d, seed).today for seed in range(8)]
    assert days == [generate_state(d, seed).today for seed in range(8)]  # same seed, same day
    assert all(t is not None and "2026-03-01" <= t <= "2026-09-30" for t in days)
    assert len(set(days)) > 1  # drawn, not fixed
    # drawing today takes a stream of its own: the rows are those of a domain without it
    s = generate_state(d, 3)
    assert json.loads(s.to_json())["today"] == s.today


def test_states_of_domains_without_today_carry_none() -> None:
    d = load_builtin("retail")
    assert not uses_today(d)
    s = generate_state(d, 0)
    assert s.today is None and "today" not in s.to_dict()


def test_today_round_trips_and_is_part_of_state_equality() -> None:
    s = generate_state(clinic(), 1)
    back = State.from_dict(json.loads(s.to_json()))
    assert back == s and back.today == s.today
    other = s.copy()
    other.today = "2026-01-02"
    assert other != s
    with pytest.raises(ValueError, match="YYYY-MM-DD"):
        State.from_dict({**s.to_dict(), "today": "2026-02-30"})


def test_today_reads_the_state() -> None:
    d = clinic()
    s = generate_state(d, 0)
    s.today = "2026-05-10"
    s.set_field("Patient", "P001", "born", "2008-05-10")
    assert call_tool(d, s, "whats_today", {}) == "2026-05-10"
    assert call_tool(d, s, "age_in_days", {"patient_id": "P001"}) == 6574
    assert call_tool(d, s, "book_visit", {"patient_id": "P001", "days_ahead": 2}) == (
        "Visit V005 on 2026-05-12"
    )
    # the adult cutoff (a function of today()) moves with the state's today
    with pytest.raises(ToolError, match="not 18 yet"):
        call_tool(d, s, "register_patient", {"name": "Kim", "born": "2008-05-11"})
    assert call_tool(d, s, "register_patient", {"name": "Kim", "born": "2008-05-09"}) == "P005"
    s.today = None  # a state without a today has the default one
    assert call_tool(d, s, "whats_today", {}) == DEFAULT_TODAY


def test_import_validates_today() -> None:
    d = clinic()
    data = generate_state(d, 0).to_dict()
    assert import_state(d, {**data, "today": "2026-04-01"}).today == "2026-04-01"
    assert import_state(d, {k: v for k, v in data.items() if k != "today"}).today is None
    with pytest.raises(StateImportError, match=r"'today'.*YYYY-MM-DD"):
        import_state(d, {**data, "today": "April 1st"})


# ------------------------------------------------------------------ backends agree


@pytest.fixture(scope="module")
def compiled(tmp_path_factory: pytest.TempPathFactory) -> Compiled:
    from graphgen.envs.codegen import write_package

    path = tmp_path_factory.mktemp("today") / "clinic_env"
    write_package(clinic(), path)
    return Compiled(clinic(), path, _import_package(path))


def test_compiled_package_agrees_with_interpreter(compiled: Compiled) -> None:
    tally = Tally()
    run_differential(compiled, range(60), 20, tally)
    assert not tally.mismatches, "\n".join(tally.mismatches[:3])
    assert tally.writes_ok > 0


def test_compiled_db_carries_today(compiled: Compiled) -> None:
    s = generate_state(clinic(), 2)
    db = compiled.models.Db.from_state(s.to_dict())
    assert db.today == s.today and db.to_state() == s.to_dict()
    plain = {k: v for k, v in s.to_dict().items() if k != "today"}
    assert compiled.models.Db.from_state(plain).to_state() == plain


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_z3_encoding_agrees_with_interpreter(data: Any) -> None:
    d = clinic()
    s = generate_state(d, data.draw(st.integers(0, 5), label="seed"))
    chain = draw_chain(data, d, s, 6)
    for via_template in (False, True):
        assert_agree(d, s, chain, via_template)


def test_z3_reads_the_initial_states_today() -> None:
    """One chain, two todays: the encoding follows the state's date, so a visit that is
    in the future on one day is in the past on another."""
    d = clinic()
    s = generate_state(d, 0)
    s.set_field("Visit", "V001", "day", "2026-06-10")
    s.set_field("Visit", "V001", "status", "booked")
    chain = [("cancel_visit", {"visit_id": "V001"})]
    for today, ok in (("2026-06-09", True), ("2026-06-10", False)):
        s.today = today
        assert interpret(d, s, chain)[0] == [ok]
        assert run_concrete(d, s, chain)[0] == [ok]


# ------------------------------------------------------------------ broken files

BASE = """
name: broken
entities:
  Account:
    key: {name: account_id, prefix: "A"}
    fields:
      opened: date
tools:
"""


def _problems(text: str) -> str:
    with pytest.raises(DomainError) as info:
        loads_domain(BASE + text, source="broken.yaml")
    return str(info.value)


def test_today_with_an_argument_is_located() -> None:
    msg = _problems(
        """
  t:
    params: {account_id: Account}
    returns: "today(1) - Account[account_id].opened"
"""
    )
    assert "broken.yaml:" in msg and "tool 't'" in msg
    assert "today() takes no arguments" in msg


def test_today_without_a_call_is_located() -> None:
    msg = _problems(
        """
  t:
    returns: "today"
"""
    )
    assert "tool 't'" in msg and "'today' must be called" in msg


def test_bad_today_range_is_located() -> None:
    msg = _problems(
        """
  t:
    returns: "today()"
today: {from: "2026-05-01", to: "2026-04-01"}
"""
    )
    assert "broken.yaml" in msg and "later than" in msg


# ------------------------------------------------------------------ tasks


@cache
def clinic_tasks() -> list[Task]:
    return generate(clinic(), 8, 0).tasks


def test_instructions_say_the_states_today() -> None:
    tasks = clinic_tasks()
    booking = [t for t in tasks if any(c.tool == "book_visit" for c in t.chain)]
    assert booking, "no task books a visit"
    for t in booking:
        today = t.initial_state["today"]
        assert f"Today is {today}." in t.instruction, t.instruction
        assert check_task(clinic(), t).ok
        assert all(p.ok for p in prove_task(clinic(), t).proofs)


def test_gate_and_proofs_reject_a_task_on_another_today() -> None:
    """The expected visit day is today + n: on a state whose today moved, the reference
    chain books another day, so the expected changes no longer follow."""
    t = next(t for t in clinic_tasks() if any(c.tool == "book_visit" for c in t.chain))
    moved = dict(t.initial_state)
    moved["today"] = "2026-02-01"
    bad = t.model_copy(update={"initial_state": moved})
    assert not check_task(clinic(), bad).ok
    assert not all(p.ok for p in prove_task(clinic(), bad).proofs)


# ------------------------------------------------------------------ soft-failure refusals


@cache
def soft_refusals() -> list[Task]:
    tasks = generate(clinic(), 24, 0).tasks
    return [t for t in tasks if t.kind == "refusal" and t.refused_call is not None]


def test_a_soft_failure_is_a_refusal_reason() -> None:
    """cancel_visit of a visit that is today or past passes its requires and soft-fails:
    the refusal's reasons are the message the tool returns, or the visit's day (what the
    failing guard ``day > today()`` reads), so an agent may say it in its own words."""
    tasks = soft_refusals()
    assert tasks, "no refusal generated"
    msg = "The visit is today or past."
    for t in tasks:
        assert t.refused_call is not None and t.refused_call.tool == "cancel_visit"
        day = t.initial_state["tables"]["Visit"][t.refused_call.args["visit_id"]]["day"]
        assert t.goal.answer_any == [[msg], [day]]
        assert check_task(clinic(), t).ok
        assert all(p.ok for p in prove_task(clinic(), t).proofs)
        s0 = t.initial_state
        g = t.goal.model_dump()
        assert grade(s0, s0, g, f"Sorry, I could not cancel it: {msg}")["success"]
        own_words = f"Your visit on {day} is not ahead of us any more, so it cannot be cancelled."
        assert grade(s0, s0, g, own_words)["success"]
        assert not grade(s0, s0, g, "Sorry, I cannot cancel that visit.")["success"]
        assert not grade(s0, s0, g, "")["success"]  # a do-nothing agent fails


def test_soft_reasons_come_from_the_guard_not_the_message() -> None:
    d = clinic()
    s = generate_state(d, 0)
    s.set_field("Visit", "V001", "day", "2026-06-10")
    s.set_field("Visit", "V001", "status", "booked")
    s.today = "2026-06-12"
    why = soft_reason(d, s, "cancel_visit", {"visit_id": "V001"})
    assert why is not None and why.message == "The visit is today or past."
    assert why.values == ("2026-06-10",)  # the failed guard's operand; today() is no reason
    s.today = "2026-06-01"
    assert soft_reason(d, s, "cancel_visit", {"visit_id": "V001"}) is None  # it succeeds


def test_gate_rejects_a_soft_refusal_with_a_wrong_reason() -> None:
    t = soft_refusals()[0]
    msg, day = t.goal.answer_any[0], t.goal.answer_any[1]
    for wrong in (
        [["The visit is fully booked."]],
        [msg, ["booked"]],
        [msg, ["2020-01-01"]],
        [day],
    ):
        bad = t.model_copy(update={"goal": t.goal.model_copy(update={"answer_any": wrong})})
        verdict = check_task(clinic(), bad)
        assert not verdict.ok and verdict.reason == "refusal_reason_wrong", (wrong, verdict)


def test_gate_rejects_a_soft_refusal_graded_on_the_message_alone() -> None:
    """Only the message word for word: an agent that says it in its own words fails."""
    t = soft_refusals()[0]
    bad = t.model_copy(
        update={"goal": t.goal.model_copy(update={"answer_any": [t.goal.answer_any[0]]})}
    )
    verdict = check_task(clinic(), bad)
    assert not verdict.ok and verdict.reason == "refusal_reason_uncitable", verdict


def test_gate_rejects_a_soft_refusal_that_would_succeed() -> None:
    """On a state where the visit is still ahead, cancelling succeeds: nothing to refuse."""
    t = soft_refusals()[0]
    assert t.refused_call is not None
    moved = dict(t.initial_state)
    moved["today"] = "2020-01-01"
    verdict = check_task(clinic(), t.model_copy(update={"initial_state": moved}))
    assert not verdict.ok and verdict.reason == "refusal_succeeds", verdict
