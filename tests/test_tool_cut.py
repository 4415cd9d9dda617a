"""The tool cut (:meth:`graphgen.verify.proofs.Prover.tool_set`, from
:func:`graphgen.verify.bmc.relevant_tools`) against no cut: every proof quantifies over
chains of the tools the cut keeps, which is sound only if deleting the calls of the
other tools from any chain leaves it valid and its outcome the same. So certifying a
task with the cut and with every tool of the domain must give the same verdict.

Both engines prune with the same cut, so the explicit/z3 cross-checks cannot see a cut
that is too sharp; this comparison can, and a deliberately unsound cut (the reference
chain's tools only) shows that it does."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from graphgen.domain import Domain
from graphgen.domains import load_builtin
from graphgen.load import loads_domain
from graphgen.synth import synth_yaml
from graphgen.tasks.model import Task
from graphgen.tasks.taskset import generate
from graphgen.verify.certify import certify
from graphgen.verify.proofs import Prover

CUT = Prover.tool_set


def _every_tool(prover: Prover) -> list[str]:
    return list(prover.domain.tools)


def _chain_tools_only(prover: Prover) -> list[str]:
    """Unsound on purpose: a shortest solution may call a tool the reference does not."""
    task = prover.task
    names = {c.tool for c in task.chain}
    if task.refused_call is not None:
        names.add(task.refused_call.tool)
    return [n for n in CUT(prover) if n in names]


@contextmanager
def _cut(monkeypatch: pytest.MonkeyPatch, tools: Callable[[Prover], list[str]]) -> Iterator[None]:
    with monkeypatch.context() as m:
        m.setattr(Prover, "tool_set", tools)
        yield


def _verdict(got: Task | str) -> tuple[Any, ...]:
    """The rejection reason, or the minimum and each proof's outcome."""
    if isinstance(got, str):
        return (got,)
    assert got.certificate is not None
    return got.min_calls, [(p.name, p.status) for p in got.certificate.proofs]


def _compare(
    monkeypatch: pytest.MonkeyPatch,
    domain: Domain,
    n: int,
    other: Callable[[Prover], list[str]],
    *,
    longest: int = 99,
) -> Counter[str]:
    """Certify each of ``n`` generated tasks whose cut leaves a tool out (chains of at
    most ``longest`` calls) with the cut and with ``other``; count the tasks compared
    and those whose verdicts differ."""
    out: Counter[str] = Counter()
    for t in generate(domain, n, 0).tasks:
        if len(t.chain) > longest or len(CUT(Prover(domain, t))) == len(domain.tools):
            continue
        out["compared"] += 1
        cut = _verdict(certify(domain, t))
        with _cut(monkeypatch, other):
            alt = _verdict(certify(domain, t))
        if alt != cut:
            out["differ"] += 1
    return out


def test_the_cut_keeps_every_verdict(monkeypatch: pytest.MonkeyPatch) -> None:
    """Airline leaves four of its 25 tools out of most tasks and retail one of 27: with
    every tool back in, each verdict (minimum and proof outcomes) is the same."""
    got = _compare(monkeypatch, load_builtin("airline"), 40, _every_tool, longest=10)
    got += _compare(monkeypatch, load_builtin("retail"), 25, _every_tool, longest=10)
    assert got["compared"] >= 25, got
    assert got["differ"] == 0, got


def test_an_unsound_cut_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    """Keeping only the reference chain's tools changes verdicts: a refusal that another
    tool makes possible is accepted, and minima come out longer than they are. (The
    synthesized domains' cut keeps every tool, so every task is compared against it.)"""
    got: Counter[str] = Counter()
    for s in (0, 1):
        domain = loads_domain(synth_yaml(s), source=f"synth{s}.yaml")
        for t in generate(domain, 25, 0).tasks:
            got["compared"] += 1
            cut = _verdict(certify(domain, t))
            with _cut(monkeypatch, _chain_tools_only):
                alt = _verdict(certify(domain, t))
            got["differ"] += alt != cut
    assert got["compared"] == 50
    assert got["differ"] >= 3, got


@pytest.mark.slow
def test_the_cut_keeps_every_verdict_on_more_tasks(monkeypatch: pytest.MonkeyPatch) -> None:
    """The same comparison on the first 60 tasks of airline and of retail, long chains
    included (airline's 13-call task takes about 6 s without the cut)."""
    got = _compare(monkeypatch, load_builtin("airline"), 60, _every_tool)
    got += _compare(monkeypatch, load_builtin("retail"), 60, _every_tool)
    assert got["compared"] >= 60, got
    assert got["differ"] == 0, got


#: Built-in domains besides airline and retail whose cut leaves tools out of about half
#: their tasks (library, rental, telecom and mock keep every tool).
OTHER_CUT_DOMAINS = ("banking", "clinic", "delivery", "helpdesk", "hotel", "hr", "university")


def test_the_cut_keeps_every_verdict_in_hotel_and_hr(monkeypatch: pytest.MonkeyPatch) -> None:
    """The same comparison on two more domains' first tasks (about 2 s)."""
    got = _compare(monkeypatch, load_builtin("hotel"), 15, _every_tool)
    got += _compare(monkeypatch, load_builtin("hr"), 15, _every_tool)
    assert got["compared"] >= 10, got
    assert got["differ"] == 0, got


@pytest.mark.slow
@pytest.mark.parametrize("name", OTHER_CUT_DOMAINS)
def test_the_cut_keeps_every_verdict_in_other_domains(
    monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    """Every other built-in domain the cut prunes, on its first 40 tasks (3-16 s each)."""
    got = _compare(monkeypatch, load_builtin(name), 40, _every_tool)
    assert got["compared"] >= 15, got
    assert got["differ"] == 0, got


def test_the_cut_is_kept_on_the_domain_and_handed_out_fresh() -> None:
    """``relevant_tools`` is a pure function of the domain and its question, kept on the
    domain: asked again it answers the same, a caller changing the list it got does not
    change the next answer, and another question gets its own."""
    from graphgen.footprint import FieldRef
    from graphgen.verify.bmc import _relevant_tools, relevant_tools

    d = load_builtin("mock")
    reads = {FieldRef("Account", "status"), FieldRef("Account")}
    first = relevant_tools(d, reads, False)
    assert first == _relevant_tools(d, reads, False, set())
    assert "lock_account" in first
    first.clear()
    assert relevant_tools(d, set(reads), False) == _relevant_tools(d, reads, False, set())
    # the airports no call changes: nothing matters to a goal reading them alone, while
    # a goal with answers keeps every tool that shows something
    airline = load_builtin("airline")
    assert relevant_tools(airline, {FieldRef("Airport")}, False) == []
    assert len(relevant_tools(airline, {FieldRef("Airport")}, True)) == len(airline.tools)
