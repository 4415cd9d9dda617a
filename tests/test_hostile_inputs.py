"""Hostile inputs outside the corpus: command-line options, task ids that look like
markup, the generator's duplicate gate, domain-file limits built in memory, and the
task validator's per-line behaviour (good lines kept, one problem per bad line)."""

from __future__ import annotations

import json
import time
from collections import Counter
from pathlib import Path

import pytest
from typer.testing import CliRunner

from graphgen import pipeline as pl
from graphgen.cli import app
from graphgen.domains import builtin_path, load_builtin
from graphgen.errors import DomainError
from graphgen.limits import (
    MAX_DOMAIN_BYTES,
    MAX_EXPR_COST,
    WARN_EXPR_COST,
    domain_costs,
    expression_cost,
)
from graphgen.load import loads_domain
from graphgen.tasks.taskset import generate, read_taskset, write_taskset
from graphgen.tasks.validate import MAX_DEPTH, task_fingerprint

runner = CliRunner()
DATA = Path(__file__).parent / "data"
MOCK = builtin_path("mock").read_text(encoding="utf-8")


# ------------------------------------------------------------------ command-line options


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["generate", "mock", "-n", "-5"], "'-n'"),
        (["generate", "mock", "-n", "0"], "'-n'"),
        (["generate", "mock", "--max-intents", "0"], "'--max-intents'"),
        (["generate", "mock", "--max-intents", "7"], "'--max-intents'"),
        (["generate", "mock", "--walk-ratio", "nan"], "nan is not a share from 0 to 1"),
        (["generate", "mock", "--walk-ratio", "1.5"], "1.5 is not a share from 0 to 1"),
        (["generate", "mock", "-j", "0"], "'--jobs'"),
        (["state", "mock", "--size", "Account=0"], "N from 1 to 10000"),
        (["state", "mock", "--size", "Account=100000000"], "N from 1 to 10000"),
        (["eval", "tasks.jsonl", "--limit", "-1"], "'--limit'"),
        (["eval", "tasks.jsonl", "--max-steps", "0"], "'--max-steps'"),
        (["verify", "tasks.jsonl", "--timeout-ms", "0"], "'--timeout-ms'"),
        (["show", "tasks.jsonl", "--limit", "0"], "'--limit'"),
        (["run", "mock", "-n", "-1"], "'-n'"),
    ],
)
def test_bad_option_values_stop_before_any_work(
    tmp_path: Path, args: list[str], words: str
) -> None:
    out = tmp_path / "out.jsonl"
    res = runner.invoke(app, [*args, "-o", str(out)] if args[0] == "generate" else args)
    assert res.exit_code == 2, res.output
    assert words in " ".join(res.output.split()), res.output
    assert res.exception is None or isinstance(res.exception, SystemExit)
    assert not out.exists()


def test_markup_in_a_task_id_is_printed_as_text(tmp_path: Path) -> None:
    manifest, tasks = read_taskset(DATA / "good_mock.jsonl")
    odd = [tasks[0].model_copy(update={"id": "[/]x"}), tasks[1].model_copy(update={"id": "[b]y"})]
    path = tmp_path / "markup.jsonl"
    write_taskset(path, manifest.model_copy(update={"accepted": 2}), odd)
    listed = runner.invoke(app, ["show", str(path)])
    assert listed.exit_code == 0, listed.output
    assert "[/]x" in listed.output and "[b]y" in listed.output
    one = runner.invoke(app, ["show", str(path), "--task", "[/]x"])
    assert one.exit_code == 0, one.output
    assert "[/]x" in one.output


def test_show_lists_good_tasks_and_reports_bad_lines(tmp_path: Path) -> None:
    lines = (DATA / "good_mock.jsonl").read_text(encoding="utf-8").splitlines()
    bad = json.loads(lines[2])
    bad["seed"] = "1"
    path = tmp_path / "mixed.jsonl"
    path.write_text("\n".join([lines[0], lines[1], json.dumps(bad), *lines[3:]]) + "\n", "utf-8")
    res = runner.invoke(app, ["show", str(path)])
    assert res.exit_code == 1
    assert f"{path}:3: task '{bad['id']}': seed:" in " ".join(res.output.split())
    assert f"of {len(lines) - 2} tasks" in res.output  # the good ones are listed


# ------------------------------------------------------------------ task validation


def test_good_sets_of_every_builtin_pass_validation() -> None:
    for name in ("mock", "retail", "airline"):
        got, d = pl.read_tasks(DATA / f"good_{name}.jsonl")
        assert d is not None and d.name == name
        assert not got.problems and got.tasks


def test_one_problem_per_bad_line_and_good_lines_kept(tmp_path: Path) -> None:
    lines = (DATA / "good_mock.jsonl").read_text(encoding="utf-8").splitlines()
    a, b = json.loads(lines[1]), json.loads(lines[2])
    a["seed"], a["kind"] = "x", "chat"  # two faults, one line: one problem
    b["refused_call"] = b["chain"][0] if b["kind"] != "refusal" else None
    path = tmp_path / "t.jsonl"
    path.write_text("\n".join([lines[0], json.dumps(a), json.dumps(b), *lines[3:]]) + "\n")
    got, _ = pl.read_tasks(path)
    assert [p.line for p in got.problems] == [2, 3]
    assert len(got.tasks) == len(lines) - 3
    assert got.lines == list(range(4, len(lines) + 1))


def test_depth_just_inside_the_limit_is_read(tmp_path: Path) -> None:
    lines = (DATA / "good_mock.jsonl").read_text(encoding="utf-8").splitlines()
    t = json.loads(lines[1])
    # A given's value may be any JSON; nest it to the limit, then one level past it.
    for extra, ok in ((MAX_DEPTH - 4, True), (MAX_DEPTH - 2, False)):
        nested: object = 1
        for _ in range(extra):
            nested = [nested]
        t["goal"]["answer"] = [nested]
        path = tmp_path / f"d{extra}.jsonl"
        path.write_text(lines[0] + "\n" + json.dumps(t) + "\n")
        got, _ = pl.read_tasks(path, need_domain=False)
        assert (not got.problems) == ok, got.problems


def test_the_generator_rejects_tasks_equal_but_for_the_id() -> None:
    # Seed 1 of mock used to hold mock-1-00001 and mock-1-00004, identical but the id.
    res = generate(load_builtin("mock"), 40, 1)
    prints = [task_fingerprint(t) for t in res.tasks]
    assert len(set(prints)) == len(prints)
    assert res.rejected["duplicate"] > 0
    assert res.manifest.rejected["duplicate"] == res.rejected["duplicate"]


def test_the_generator_rejects_a_request_made_again_in_other_words() -> None:
    """Airline's seed 0 draws the same request on the same state more than once ("Hi!"
    for "Good day.", the reservation named another way): each is kept once. No two
    action tasks on one state share a goal, nor two refusals a refused call."""
    res = generate(load_builtin("airline"), 60, 0)
    asked = Counter(
        (
            json.dumps(t.initial_state, sort_keys=True),
            t.kind,
            json.dumps(t.goal.model_dump(mode="json"), sort_keys=True),
            None if t.refused_call is None else t.refused_call.model_dump_json(),
        )
        for t in res.tasks
        if t.kind != "information"
    )
    assert max(asked.values()) == 1
    assert res.rejected["duplicate"] > 0


# ------------------------------------------------------------------ domain limits


def test_a_file_over_the_size_limit_is_refused_unread() -> None:
    text = MOCK + "#" + "x" * MAX_DOMAIN_BYTES + "\n"
    with pytest.raises(DomainError, match=f"the limit is {MAX_DOMAIN_BYTES}"):
        loads_domain(text, "big.yaml")


def test_nine_alias_levels_fail_fast() -> None:
    lines = [
        "x-laughs:",
        '  l0: &l0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]',
    ]
    for i in range(1, 10):
        lines.append(f"  l{i}: &l{i} [" + ", ".join([f"*l{i - 1}"] * 9) + "]")
    started = time.perf_counter()
    with pytest.raises(DomainError, match="aliases expand the file past"):
        loads_domain(MOCK + "\n".join(lines) + "\n")
    assert time.perf_counter() - started < 2


def test_aliases_within_the_limit_still_load() -> None:
    text = MOCK.replace(
        'description: "The account id."', 'description: &d "The account id."', 1
    ).replace('description: "The account id."', "description: *d")
    assert loads_domain(text).tools["pay"].params["account_id"].description == "The account id."


def test_expression_cost_multiplies_nested_comprehensions() -> None:
    d = load_builtin("mock")
    rows = {"Account": 6, "Payment": 3}
    pay = d.tools["find_account"].returns
    assert pay is not None
    # [a.account_id for a in Account if a.email == email]: 6 rows x (cond + proj).
    assert expression_cost(pay, rows.__getitem__) > 6
    assert expression_cost(pay, {"Account": 60}.__getitem__) > 10 * 6
    nested = MOCK.replace("size: 6", "size: 12").replace(
        "requires: \"Account[account_id].status == 'active'\"",
        'requires: "any(any(any(c.balance > 0 for c in Account) for b in Account) '
        'for a in Account)"',
    )
    costs = {w: c for w, _, c in domain_costs(loads_domain(nested))}
    assert WARN_EXPR_COST > costs["tool 'lock_account', requires[0]"] > 12**3
    with pytest.raises(DomainError, match="too costly"):
        loads_domain(nested.replace("size: 12", "size: 70"))
    assert max(c for _, _, c in domain_costs(load_builtin("airline"))) < MAX_EXPR_COST


def test_literal_braces_in_a_message_are_written_twice() -> None:
    text = MOCK.replace(
        'message: "the account is locked"', 'message: "status {{locked}}: {account_id}"', 1
    )
    d = loads_domain(text)
    assert d.tools["deposit"].requires[0].message == "status {{locked}}: {account_id}"


def test_check_warns_about_costly_expressions() -> None:
    cheap = pl.check("mock")
    assert cheap.costly_expressions == []
    slow = MOCK.replace("size: 6", "size: 40").replace(
        "requires: \"Account[account_id].status == 'active'\"",
        'requires: "any(any(any(c.balance > 0 for c in Account) for b in Account) '
        'for a in Account)"',
    )
    got = pl.check(loads_domain(slow, "slow.yaml"))
    assert [x.split(":")[0] for x in got.costly_expressions] == ["tool 'lock_account', requires[0]"]


@pytest.mark.parametrize(
    ("message", "words"),
    [
        ("{amount:>6} is too much", None),
        ("{account_id!r} is locked", None),
        ("{account_id:d} is locked", "bad format spec"),
        ("{amount:{account_id}}", "bad format spec"),
        ("{amount:>999999999}", "bad format spec"),
        ("{account_id!x} is locked", "the conversions are"),
        ("{amount[0]} is locked", "is not a parameter"),
        ("{0} is locked", "is not a parameter"),
        ("unclosed {amount", "bad message template"),
    ],
)
def test_message_templates_are_checked(message: str, words: str | None) -> None:
    text = MOCK.replace('message: "insufficient funds"', f"message: '{message}'", 1)
    if words is None:
        assert loads_domain(text).tools["pay"].requires[1].message == message
        return
    with pytest.raises(
        DomainError, match=r"tool 'pay' \(line \d+\), requires\[1\]\.message"
    ) as info:
        loads_domain(text)
    assert words in str(info.value)
