"""A corpus of deliberately broken tasks, each rejected with the right reason.

The corpus (``tests/data/broken_<domain>.jsonl``, made by
``tests/data/make_broken_tasks.py``) breaks good generated tasks in the ways the issue
lists -- goal already true, a shortcut below the stated minimum, an ambiguous target, two
minimal solutions with different end states, a refusal that is possible, a wrong
reference chain, an argument the agent could not know -- plus lying metadata. Every
entry point must reject each task, for the reason ``broken_tasks_expected.json`` gives:

* ``graphgen.verify.certify.recheck`` (what ``graphgen verify`` runs) -- every task;
* ``graphgen verify`` on each file -- exit 1, and the result table counts each reason;
* the generator's gate (``graphgen.tasks.dryrun.check_candidate``, then
  ``graphgen.verify.certify.certify``) -- every task whose flaw is the generator's to
  judge; the rest (a claimed ``min_calls``, ``difficulty``, ``domain_hash``: fields the
  generator computes rather than trusts) it accepts, which is checked too.

The untouched originals (``good_<domain>.jsonl``) pass ``graphgen verify``, so each
rejection is due to the corruption and not to the task it started from.
"""

from __future__ import annotations

import importlib.util
import json
import re
import sys
from collections import Counter
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from graphgen.cli import app
from graphgen.domain import Domain
from graphgen.domains import builtin_path, load_builtin
from graphgen.interp import call_tool, failed_check
from graphgen.load import loads_domain
from graphgen.state import State
from graphgen.tasks.dryrun import REASONS, check_task
from graphgen.tasks.model import Given, Task
from graphgen.tasks.taskset import generate, read_taskset
from graphgen.verify import proofs
from graphgen.verify.certify import certify, recheck
from graphgen.verify.proofs import Engine

DATA = Path(__file__).parent / "data"
DOMAINS = ("mock", "retail", "airline")
EXPECTED: dict[str, dict[str, Any]] = json.loads(
    (DATA / "broken_tasks_expected.json").read_text(encoding="utf-8")
)
IDS = sorted(EXPECTED)
CATEGORIES = {
    "goal already true",
    "shortcut below the stated minimum",
    "ambiguous target",
    "two minimal solutions with different end states",
    "refusal that is possible",
    "wrong reference chain",
    "argument the agent could not know",
    "metadata",
}
PROOFS = {
    "reference_chain",
    "goal_not_initial",
    "min_calls",
    "unique_targets",
    "unique_final_state",
    "refusal_impossible",
}
runner = CliRunner()


@cache
def domain(name: str) -> Domain:
    return load_builtin(name)


@cache
def corpus(name: str) -> dict[str, Task]:
    _, tasks = read_taskset(DATA / f"broken_{name}.jsonl")
    return {t.id: t for t in tasks}


def broken(tid: str) -> tuple[Domain, Task]:
    name = EXPECTED[tid]["domain"]
    return domain(name), corpus(name)[tid]


def dry_run(d: Domain, t: Task) -> str:
    res = check_task(d, t)
    return "" if res.ok else res.reason


def generator_gate(d: Domain, t: Task) -> str:
    """What the generator says about ``t`` as a candidate ("" = accepted)."""
    why = dry_run(d, t)
    if why:
        return why
    got = certify(d, t)
    return got if isinstance(got, str) else ""


def _verify(path: Path) -> tuple[int, Counter[str], str]:
    res = runner.invoke(app, ["verify", str(path), "--jobs", "1"])
    counts: Counter[str] = Counter()
    for line in res.output.splitlines():
        m = re.match(r"^\W*([a-z_]+)\s*│\s*(\d+)\s*│\s*$", line)
        if m:
            counts[m.group(1)] += int(m.group(2))
    return res.exit_code, counts, res.output


# ------------------------------------------------------------------ the corpus itself


def test_corpus_covers_every_category_across_domains() -> None:
    assert len(IDS) >= 30
    by_cat = Counter(e["category"] for e in EXPECTED.values())
    assert set(by_cat) == CATEGORIES
    assert all(n >= 2 for n in by_cat.values()), by_cat
    assert {e["domain"] for e in EXPECTED.values()} == set(DOMAINS)
    files = {tid for name in DOMAINS for tid in corpus(name)}
    assert files == set(IDS)
    for e in EXPECTED.values():
        r = e["reason"]
        assert (
            r in ("bad_metadata", "domain_changed")
            or (r.startswith("dry_run_") and r.removeprefix("dry_run_") in REASONS)
            or (r.startswith("proof_") and r.removeprefix("proof_") in PROOFS)
        ), r


def test_some_cases_only_z3_can_catch() -> None:
    """Each of these proofs has a case the dry-run passes (checked per task below)."""
    z3_only = {e["reason"] for e in EXPECTED.values() if e["reason"].startswith("proof_")}
    # (An answer already stated in the instruction used to get past the dry-run as a
    # yes/no word; the dry-run now matches whole words, so that case moved there.)
    assert z3_only >= {"proof_min_calls", "proof_unique_final_state", "proof_refusal_impossible"}


def _script() -> Any:
    """A fresh copy of ``tests/data/make_broken_tasks.py`` (not a package: loaded by path)."""
    spec = importlib.util.spec_from_file_location(
        "make_broken_tasks", DATA / "make_broken_tasks.py"
    )
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # its dataclasses look their module up while defined
    try:
        spec.loader.exec_module(mod)
    finally:
        del sys.modules[spec.name]
    return mod


def test_files_are_what_the_script_makes() -> None:
    """The script's cases and the committed expectations agree (regenerate if not)."""
    mod = _script()
    made = [(c.domain, c.category, c.what, c.reason, c.gate) for c in mod.CASES]
    committed = [
        (e["domain"], e["category"], e["corruption"], e["reason"], e["gate"])
        for e in (EXPECTED[t] for name in DOMAINS for t in corpus(name))
    ]
    assert made == committed
    for name in DOMAINS:
        manifest, tasks = read_taskset(DATA / f"broken_{name}.jsonl")
        assert manifest.domain == name and manifest.accepted == len(tasks)
        assert manifest.domain_hash == domain(name).content_hash


@pytest.mark.slow
def test_script_rebuilds_the_committed_files_byte_for_byte(tmp_path: Path) -> None:
    """The committed corpus is what the script makes on the current generator, so a
    change to the generator or the checks that moves a pick, or leaves a case without a
    fitting original, fails here rather than at the next ``make regen``."""
    mod = _script()
    mod.build(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(mod.OUTPUTS)
    stale = [
        name for name in mod.OUTPUTS if (tmp_path / name).read_bytes() != (DATA / name).read_bytes()
    ]
    assert not stale, f"stale corpus files {stale}: run tests/data/make_broken_tasks.py"


def test_script_names_a_case_it_cannot_build_and_writes_nothing(tmp_path: Path) -> None:
    """A case without a fitting original stops the build, named, before any file is
    written (no silently smaller corpus)."""
    mod = _script()
    case = mod.CASES[0]
    mod.CASES = [case]
    mod.pool = lambda name: ()  # the generator gives no candidate at all
    with pytest.raises(
        mod.CaseError, match=r"(?s)1 of 1 cases.*broken-mock-00 \(goal already true"
    ):
        mod.build(tmp_path)
    assert list(tmp_path.iterdir()) == []
    assert mod.main(["--out", str(tmp_path)]) == 1


# ------------------------------------------------------------------ recheck, per task


# The explicit search alone (no budget) only on mock's tasks: on retail and airline it can
# take minutes; there ``auto`` gives it its budget and z3 the rest.
ENGINES = [(t, e) for t in IDS for e in ("auto", "z3")] + [
    (t, "explicit") for t in IDS if t.startswith("broken-mock")
]


@pytest.mark.parametrize(("tid", "engine"), ENGINES)
def test_recheck_gives_the_expected_reason(tid: str, engine: Engine) -> None:
    """Whichever engine answers the search questions, each task is rejected for its flaw."""
    d, t = broken(tid)
    why, cert = recheck(d, t, engine=engine)
    assert why == EXPECTED[tid]["reason"]
    if why.startswith("proof_"):  # the failing proof is in the certificate, with a reason
        assert cert is not None
        bad = [p for p in cert.proofs if not p.ok]
        assert bad and bad[0].name == why.removeprefix("proof_") and bad[0].detail


@pytest.mark.parametrize("tid", [t for t in IDS if EXPECTED[t]["reason"].startswith("proof_")])
def test_only_the_proofs_catch_these(tid: str) -> None:
    """The executable gate passes these tasks; without z3 they would be accepted."""
    d, t = broken(tid)
    assert dry_run(d, t) == ""
    assert t.difficulty == len(t.chain) and t.min_calls <= len(t.chain)


# ------------------------------------------------------------------ graphgen verify


@pytest.mark.parametrize("name", DOMAINS)
def test_graphgen_verify_counts_each_reason(name: str) -> None:
    code, counts, output = _verify(DATA / f"broken_{name}.jsonl")
    # A chain naming a tool the domain lacks is not a task of the domain at all: the
    # file reader rejects it before any dry-run (the library's recheck still says why).
    d = domain(name)
    unknown_tool = {
        tid for tid, t in corpus(name).items() if any(c.tool not in d.tools for c in t.chain)
    }
    want = Counter(
        "invalid_task" if tid in unknown_tool else e["reason"]
        for tid, e in EXPECTED.items()
        if e["domain"] == name
    )
    assert code == 1, output
    assert counts == want, output
    assert "ok" not in counts


@pytest.mark.parametrize("name", DOMAINS)
def test_good_originals_pass_graphgen_verify(name: str) -> None:
    _, tasks = read_taskset(DATA / f"good_{name}.jsonl")
    assert tasks
    code, counts, output = _verify(DATA / f"good_{name}.jsonl")
    assert code == 0, output
    assert counts == Counter({"ok": len(tasks)}), output


def test_every_good_original_has_broken_children() -> None:
    sources = {e["source"].split(" ")[0] for e in EXPECTED.values()}
    for name in DOMAINS:
        _, tasks = read_taskset(DATA / f"good_{name}.jsonl")
        assert {t.id for t in tasks} <= sources


# ------------------------------------------------------------------ the generator's gate


@pytest.mark.parametrize("tid", [t for t in IDS if EXPECTED[t]["gate"] is not None])
def test_generator_gate_rejects(tid: str) -> None:
    d, t = broken(tid)
    assert generator_gate(d, t) == EXPECTED[tid]["gate"]


@pytest.mark.parametrize("tid", [t for t in IDS if EXPECTED[t]["gate"] is None])
def test_generator_gate_recomputes_what_these_break(tid: str) -> None:
    """certify replaces a wrong claimed minimum with the proven one; difficulty and
    domain_hash are the generator's own output, so it has nothing to check there."""
    d, t = broken(tid)
    assert dry_run(d, t) == ""
    got = certify(d, t)
    assert isinstance(got, Task)
    if EXPECTED[tid]["reason"] == "proof_min_calls":
        assert got.min_calls != t.min_calls


# ------------------------------------------------------------------ refusals made possible


@cache
def _mock3() -> Domain:
    """Mock with a third account status: the built-in mock builds no refusal (a hedge
    would pass each one: docs/tasks.md), a status no careful agent mentions lets it."""
    text = builtin_path("mock").read_text(encoding="utf-8")
    old = "status: {enum: [active, locked]}"
    assert old in text
    return loads_domain(text.replace(old, "status: {enum: [active, locked, frozen]}"))


def _refused_payment() -> Task:
    """A mock "insufficient funds" refusal as the generator proposes it (dry-run only)."""
    res = generate(_mock3(), 80, 3)
    return next(
        t
        for t in res.tasks
        if t.refused_call is not None
        and t.refused_call.tool == "pay"
        and failed_check(
            _mock3(), State.from_dict(t.initial_state), "pay", dict(t.refused_call.args)
        ).message
        == "insufficient funds"
    )


def test_a_deposit_first_makes_the_refused_payment() -> None:
    """The payment this refusal refuses can be made by another route, with only values
    the agent knows: deposit the stated amount, then pay it."""
    d, t = _mock3(), _refused_payment()
    assert t.refused_call is not None
    args = dict(t.refused_call.args)
    st = State.from_dict(t.initial_state)
    assert Given(sort="free:int", value=args["amount"]) in t.givens
    for c in t.chain:
        call_tool(d, st, c.tool, dict(c.args))
    call_tool(d, st, "deposit", args)
    pid = call_tool(d, st, "pay", args)
    assert st.tables["Payment"][pid] == {"account_id": args["account_id"], "amount": args["amount"]}


@pytest.mark.parametrize(
    ("one_by_one", "engine"),
    [(4, "z3"), (0, "z3"), (4, "auto")],
    ids=["ladder-then-one", "one-query", "explicit-search"],
)
def test_refusal_possible_after_a_deposit_is_rejected(
    one_by_one: int, engine: proofs.Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Proof 6 asks whether the refused call itself can succeed after other calls: z3
    by lengths one at a time, or (none asked alone) in the single query for the rest;
    under ``auto`` the explicit search first."""
    monkeypatch.setattr(proofs, "REFUSED_ONE_BY_ONE", one_by_one)
    t = _refused_payment()
    why, cert = recheck(_mock3(), t, engine=engine)
    assert why == "proof_refusal_impossible"
    assert cert is not None
    detail = next(p.detail for p in cert.proofs if p.name == "refusal_impossible")
    assert "deposit" in detail and "pay" in detail
    assert ("(explicit search)" in detail) == (engine == "auto"), detail
    assert certify(_mock3(), t, engine=engine) == "proof_refusal_impossible"


# ------------------------------------------------------------------ inconclusive proofs


@pytest.mark.parametrize("name", ["retail", "airline"])
@pytest.mark.parametrize("words", [None, "max. resource limit exceeded"])
def test_a_resource_limited_proof_is_counted_as_timeout(
    name: str, words: str | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A real task certified with a tiny resource limit: its proofs are inconclusive with
    cause timeout, and certify and recheck count it as ``timeout``, not as a refuted
    ``proof_<name>``. z3 words running out of the limit as ``canceled`` on the
    incremental solver the unrolling uses and as ``max. resource limit exceeded`` on
    others (``words``: that wording, substituted for z3's)."""
    import z3

    from graphgen.tasks.model import Inconclusive, ProofStatus
    from graphgen.verify import bmc
    from graphgen.verify.proofs import Prover

    _, tasks = read_taskset(DATA / f"good_{name}.jsonl")
    d = domain(name)
    # a resource limit of one unit per query: z3 runs out of it on the first step (the
    # wall-clock guard is 10 ms)
    monkeypatch.setattr(bmc, "RLIMIT_PER_MS", 1)
    if words is not None:
        monkeypatch.setattr(z3.Solver, "reason_unknown", lambda self: words)
    # z3 answers every query (``auto`` settles some tasks with no query at all)
    t = max(tasks, key=lambda x: len(x.chain))
    results = Prover(d, t, None, 1, engine="z3").all()
    stuck = [r for r in results if r.status is ProofStatus.INCONCLUSIVE]
    assert stuck, results
    assert all(r.cause is Inconclusive.TIMEOUT and not r.ok for r in stuck)
    assert all(r.detail.startswith("timeout") for r in stuck)
    if words is not None:
        assert all(words in r.detail for r in stuck)
    assert certify(d, t, timeout_ms=1, engine="z3") == "timeout"
    why, cert = recheck(d, t, timeout_ms=1, engine="z3")
    assert why == "timeout" and cert is not None


def test_proof_status_is_not_written_and_is_rebuilt_from_ok() -> None:
    """Task files keep their format: a certificate holds ``ok``, the status comes back
    from it."""
    from graphgen.tasks.model import Inconclusive, ProofResult, ProofStatus

    stuck = ProofResult.inconclusive("min_calls", Inconclusive.TIMEOUT, "timeout")
    assert stuck.model_dump() == {"name": "min_calls", "ok": False, "ms": 0.0, "detail": "timeout"}
    back = ProofResult.model_validate(ProofResult.proved("min_calls", "x").model_dump())
    assert back.status is ProofStatus.PROVED
    with pytest.raises(ValueError, match="ok=True"):
        ProofResult(name="x", ok=True, status=ProofStatus.REFUTED)
