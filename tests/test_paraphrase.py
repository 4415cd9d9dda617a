"""The paraphrase step, against a real chat-completions server on 127.0.0.1.

The ``openai`` client talks HTTP to :class:`tests.openai_stub.StubServer`; the stub's
script plays the model, rewriting the MESSAGE line of the request the way a good or a
careless model would. Every refused rewrite must leave the template text in the task.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from graphgen.cli import app
from graphgen.domain import Domain
from graphgen.domains import load_builtin
from graphgen.pipeline import Options, PipelineError, verify_tasks
from graphgen.tasks.dryrun import check_task
from graphgen.tasks.model import Task
from graphgen.tasks.paraphrase import (
    PARAPHRASE_SEED,
    Paraphraser,
    lexicon,
    rewrite_problem,
    values_in,
)
from graphgen.tasks.taskset import GenResult, generate, read_taskset, write_taskset
from tests.openai_stub import StubServer, dead_base_url

runner = CliRunner()


def _message(body: dict[str, Any]) -> str:
    user = body["messages"][-1]["content"]
    m = re.match(r"MESSAGE: (.*)", user)
    assert m, user
    return m.group(1)


def _polite(body: dict[str, Any]) -> str:
    """A careful model: reorders nothing, adds only words without values."""
    text = _message(body)
    for opener in ("Hi! ", "Hello. ", "Hi there. ", "Good day. "):
        text = text.removeprefix(opener)
    return f"Hello, I hope you can help me. {text} Thank you so much!"


@pytest.fixture(scope="module")
def retail() -> Domain:
    return load_builtin("retail")


@pytest.fixture(scope="module")
def plain(retail: Domain) -> GenResult:
    """Template-only tasks (no proofs: the step under test does not depend on them)."""
    return generate(retail, 8, 11)


def _para(url: str, cache: Path, **kw: Any) -> Paraphraser:
    return Paraphraser("stub-model", url, "k", cache, backoff_s=0.0, **kw)


def _with_givens(plain: GenResult) -> Task:
    return next(t for t in plain.tasks if t.givens and t.kind == "action")


def test_an_accepted_rewrite_replaces_the_text_and_still_passes_the_gate(
    retail: Domain, plain: GenResult, tmp_path: Path
) -> None:
    task = _with_givens(plain)
    with StubServer(_polite) as srv:
        new, why = _para(srv.base_url, tmp_path).apply(retail, task)
    assert why == "" and new.instruction != task.instruction
    assert new.instruction.startswith("Hello, I hope you can help me.")
    gate = check_task(retail, new)
    assert gate.ok, gate
    # The request carries the givens to keep, temperature 0 and the fixed seed.
    body = srv.requests[0]
    assert body["temperature"] == 0 and body["seed"] == PARAPHRASE_SEED
    keep = body["messages"][-1]["content"].split("KEEP:")[1]
    assert all(f"- {g.value}" in keep for g in task.givens)


def test_the_gate_is_rerun_on_the_new_text(
    retail: Domain, plain: GenResult, tmp_path: Path
) -> None:
    """A rewrite the text checks pass still has to pass the whole dry-run gate: here the
    task itself is broken (its answer is one no call reveals), so even a good rewrite is
    refused with the gate's reason and the original kept."""
    task = next(t for t in plain.tasks if t.kind == "information")
    broken = task.model_copy(update={"goal": task.goal.model_copy(update={"answer": ["nowhere"]})})
    with StubServer(_polite) as srv:
        new, why = _para(srv.base_url, tmp_path).apply(retail, broken)
    assert why == "answer_not_revealed" and new is broken


def test_a_rewrite_that_drops_a_given_is_refused(
    retail: Domain, plain: GenResult, tmp_path: Path
) -> None:
    task = _with_givens(plain)
    given = str(task.givens[0].value)

    def drop(body: dict[str, Any]) -> str:
        return _message(body).replace(given, "my usual one")

    with StubServer(drop) as srv:
        new, why = _para(srv.base_url, tmp_path).apply(retail, task)
    assert why == "given_not_stated"
    assert new is task and new.instruction == task.instruction


@pytest.mark.parametrize("added", ["It was 2025-12-24.", "I paid $37 for it.", "Two of them."])
def test_a_rewrite_that_adds_a_number_or_a_date_is_refused(
    retail: Domain, plain: GenResult, tmp_path: Path, added: str
) -> None:
    task = _with_givens(plain)
    assert "37" not in task.instruction and "2025-12-24" not in task.instruction

    def invent(body: dict[str, Any]) -> str:
        return f"{_message(body)} {added}"

    with StubServer(invent) as srv:
        new, why = _para(srv.base_url, tmp_path).apply(retail, task)
    assert why == "new_value" and new.instruction == task.instruction


def test_a_rewrite_that_leaks_an_internal_id_is_refused(
    retail: Domain, plain: GenResult, tmp_path: Path
) -> None:
    task = _with_givens(plain)
    assert not retail.entities["Order"].key_givable
    order_id = sorted(task.initial_state["tables"]["Order"])[0]
    assert order_id not in task.instruction

    def leak(body: dict[str, Any]) -> str:
        return f"{_message(body)} (That is order {order_id}.)"

    with StubServer(leak) as srv:
        new, why = _para(srv.base_url, tmp_path).apply(retail, task)
    assert why == "id_leak" and new.instruction == task.instruction


def test_a_rewrite_that_adds_a_status_or_drops_a_described_value_is_refused(
    retail: Domain, plain: GenResult, tmp_path: Path
) -> None:
    """A new enum member is a new claim ("my cancelled order"); a dropped value of a
    referring phrase changes which row is meant."""
    # (the first such phrase of seed 11 is its 54th task)
    task = next(t for t in generate(retail, 54, 11).tasks if "item priced at $" in t.instruction)
    price = re.search(r" priced at \$(\d+)", task.instruction)
    assert price is not None  # a referring atom, not a given: only value_dropped sees it
    assert not any(str(g.value) == price.group(1) for g in task.givens)
    assert "cancelled" not in task.instruction.lower()
    assert rewrite_problem(retail, task, task.instruction + " It was cancelled.") == "new_value"
    dropped = task.instruction.replace(price.group(), "")
    assert rewrite_problem(retail, task, dropped) == "value_dropped"
    assert rewrite_problem(retail, task, "") == "empty_reply"
    # (four times a short instruction: three would fit in twice it plus the slack)
    assert rewrite_problem(retail, task, task.instruction * 4) == "too_long"
    meta = "Sure! Here is a more natural version: " + task.instruction
    assert rewrite_problem(retail, task, meta) == "meta_reply"
    assert rewrite_problem(retail, task, "Please: " + task.instruction) == ""
    # A stated order must stay stated ("First, ... Then ...": a request needs another's
    # result; the eight plain tasks have none, so a longer run is searched).
    two = next(
        t
        for t in generate(retail, 41, 11).tasks
        if "First, " in t.instruction and re.search(r"\. (Then|After that,) ", t.instruction)
    )
    later = re.search(r"\. (Then|After that,) ", two.instruction)
    assert later is not None
    unordered = re.sub(r"First, (\w)", lambda m: m.group(1).upper(), two.instruction)
    unordered = unordered.replace(later.group(), ". Also, ")
    assert rewrite_problem(retail, two, unordered) == "order_dropped"
    reworded = two.instruction.replace(later.group(), ". Once that's done, ")
    assert rewrite_problem(retail, two, reworded) == ""


def test_values_are_tokens_emails_number_words_and_named_values(retail: Domain) -> None:
    lex = lexicon(retail, {"tables": {}})
    found = values_in(
        "Hi, I'm a.b@x.org. Refund $1,200.50 to my Gift Card for the Air Fryer; it's "
        "gray, size XS, from Warsaw, since yesterday — two of them, order O0035's.",
        lex,
    )
    assert found == {
        ("email", "a.b@x.org"),
        ("token", "1"),
        ("token", "200.50"),
        ("named", "gift_card"),
        ("named", "Air Fryer"),
        ("named", "gray"),
        ("named", "XS"),
        ("named", "Warsaw"),
        ("word", "yesterday"),
        ("word", "two"),
        ("token", "O0035"),
    }
    # Capitalised entries match as written, lower-case ones in any case; the size "M"
    # is not read into "I'm".
    assert values_in("i'm fine, air fryer", lex) == set()
    assert values_in("GRAY", lex) == {("named", "gray")}


def _tasks_bytes(path: Path) -> bytes:
    return b"".join(path.read_bytes().splitlines(keepends=True)[1:])


def test_generation_paraphrases_then_reruns_from_the_cache_with_no_request(
    retail: Domain, tmp_path: Path
) -> None:
    cache = tmp_path / "cache"
    with StubServer(_polite) as srv:
        first = generate(retail, 8, 11, paraphraser=_para(srv.base_url, cache))
        asked = len(srv.requests)
        write_taskset(tmp_path / "a.jsonl", first.manifest, first.tasks)
        again_para = _para(srv.base_url, cache)
        again = generate(retail, 8, 11, paraphraser=again_para)
        write_taskset(tmp_path / "b.jsonl", again.manifest, again.tasks)
        assert len(srv.requests) == asked and again_para.requests == 0
    assert asked >= len(first.tasks) and len(list(cache.glob("*.json"))) == asked
    assert (tmp_path / "a.jsonl").read_bytes() == (tmp_path / "b.jsonl").read_bytes()
    # With the server gone, the cache alone still gives the same bytes.
    offline = generate(retail, 8, 11, paraphraser=_para(dead_base_url(), cache))
    write_taskset(tmp_path / "c.jsonl", offline.manifest, offline.tasks)
    assert (tmp_path / "c.jsonl").read_bytes() == (tmp_path / "a.jsonl").read_bytes()
    counts = first.manifest.paraphrase
    assert counts is not None and counts.model == "stub-model"
    assert counts.paraphrased == len(first.tasks) and counts.rejected == {}
    assert all(t.instruction.startswith("Hello, I hope") for t in first.tasks)
    # The rewritten file passes the gate again, and the tasks are the template ones
    # but for the text.
    plain = generate(retail, 8, 11)
    for p, t in zip(plain.tasks, first.tasks, strict=True):
        assert p.model_copy(update={"instruction": t.instruction}) == t
    _, read = read_taskset(tmp_path / "a.jsonl")
    assert [t.instruction for t in read] == [t.instruction for t in first.tasks]


def test_a_server_that_is_down_keeps_every_original_and_is_counted(
    retail: Domain, tmp_path: Path
) -> None:
    para = _para(dead_base_url(), tmp_path / "cache", retries=1, give_up_after=2)
    res = generate(retail, 8, 11, paraphraser=para)
    plain = generate(retail, 8, 11)
    assert [t.instruction for t in res.tasks] == [t.instruction for t in plain.tasks]
    assert res.manifest.paraphrase is not None
    assert res.manifest.paraphrase.rejected == {"request_failed": len(res.tasks)}
    assert res.manifest.paraphrase.paraphrased == 0
    # Two tasks in a row failed (two attempts each), then no further request was sent.
    assert para.requests == 4
    assert not (tmp_path / "cache").exists()


def test_a_server_error_is_retried_then_the_original_kept(
    retail: Domain, plain: GenResult, tmp_path: Path
) -> None:
    def broken(body: dict[str, Any]) -> str:
        raise RuntimeError("overloaded")

    task = plain.tasks[0]
    with StubServer(broken) as srv:
        new, why = _para(srv.base_url, tmp_path, retries=2).apply(retail, task)
        assert len(srv.requests) == 3
    assert why == "request_failed" and new is task


def test_the_proofs_run_on_the_paraphrased_text_and_verify_accepts_it(tmp_path: Path) -> None:
    from graphgen.pipeline import generate as pipeline_generate

    with StubServer(_polite) as srv:
        opts = Options(
            jobs=1,
            seed=3,
            paraphrase="stub-model",
            base_url=srv.base_url,
            paraphrase_cache=str(tmp_path / "cache"),
        )
        res = pipeline_generate("mock", 4, opts, output=tmp_path / "t.jsonl")
    assert res.tasks and all(t.certificate is not None for t in res.tasks)
    assert res.manifest.paraphrase is not None
    assert res.manifest.paraphrase.paraphrased == len(res.tasks)
    assert verify_tasks(tmp_path / "t.jsonl", options=Options(jobs=1)).ok
    with pytest.raises(PipelineError, match="needs base_url"):
        Options(paraphrase="m")


def test_cli_generate_with_paraphrase_writes_the_counts(tmp_path: Path) -> None:
    task_file = tmp_path / "t.jsonl"

    def careless(body: dict[str, Any]) -> str:  # every other reply invents a number
        return _message(body) + (" I have 3 of them." if len(srv.requests) % 2 else "")

    with StubServer(careless) as srv:
        res = runner.invoke(
            app,
            [
                "generate",
                "retail",
                "-n",
                "4",
                "--seed",
                "11",
                "--no-prove",
                "-o",
                str(task_file),
                "--paraphrase",
                "stub-model",
                "--base-url",
                srv.base_url,
                "--paraphrase-cache",
                str(tmp_path / "cache"),
            ],
        )
    assert res.exit_code == 0, res.output
    manifest = json.loads(task_file.read_text().splitlines()[0])["manifest"]
    para = manifest["paraphrase"]
    assert para["model"] == "stub-model"
    assert para["rejected"].get("new_value", 0) >= 1
    assert para["paraphrased"] + para["unchanged"] + sum(para["rejected"].values()) == 4
    assert "paraphrase rejected: new_value" in res.output
    # Without --paraphrase the manifest has no such entry (files stay as they were).
    plain = tmp_path / "p.jsonl"
    res = runner.invoke(app, ["generate", "mock", "-n", "2", "--no-prove", "-o", str(plain)])
    assert res.exit_code == 0 and "paraphrase" not in plain.read_text().splitlines()[0]
    assert _tasks_bytes(plain)


def test_a_rewrite_the_later_checks_refuse_falls_back_to_the_original(
    retail: Domain, tmp_path: Path
) -> None:
    """The acceptance checks after the gate (the proofs) see the rewritten text; when
    they refuse it the original text is checked, kept, and the reason counted."""

    def refuse_rewrites(domain: Domain, task: Task) -> Task | str:
        return "proof_text_sensitive" if task.instruction.startswith("Hello, I hope") else task

    with StubServer(_polite) as srv:
        res = generate(
            retail, 4, 11, task_checks=[refuse_rewrites], paraphraser=_para(srv.base_url, tmp_path)
        )
    plain = generate(retail, 4, 11)
    assert [t.instruction for t in res.tasks] == [t.instruction for t in plain.tasks]
    assert res.manifest.paraphrase is not None
    assert res.manifest.paraphrase.rejected == {"proof_text_sensitive": 4}
    assert res.manifest.rejected == {}


def test_cli_run_passes_the_paraphrase_options_through(tmp_path: Path) -> None:
    out = tmp_path / "out"
    with StubServer(_polite) as srv:
        res = runner.invoke(
            app,
            [
                "run",
                "mock",
                "-n",
                "2",
                "-j",
                "1",
                "-o",
                str(out),
                "--paraphrase",
                "stub-model",
                "--base-url",
                srv.base_url,
                "--paraphrase-cache",
                str(tmp_path / "cache"),
            ],
        )
        assert srv.requests
    assert res.exit_code == 0, res.output
    manifest, tasks = read_taskset(out / "tasks.jsonl")
    assert manifest.paraphrase is not None and manifest.paraphrase.paraphrased == len(tasks)
    assert all(t.instruction.startswith("Hello, I hope") for t in tasks)
    # Asking for a paraphrase without an endpoint is a usage error, not a crash.
    res = runner.invoke(app, ["generate", "mock", "-n", "1", "--paraphrase", "m"])
    assert res.exit_code == 1 and "needs base_url" in res.output
