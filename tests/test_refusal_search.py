"""Proof 6's two questions answered by the explicit search: can the refused call itself
succeed after other calls (:func:`~graphgen.verify.explicit.enabling`), and does any
chain make the requested change (the minimum search on that change). Cross-checked
against z3 question by question, with the search's tool levels against a search that
calls every tool, and with a budget that makes the search give up and z3 answer."""

from __future__ import annotations

from collections.abc import Iterator
from functools import cache
from typing import Any

import pytest

from graphgen.domain import Domain
from graphgen.domains import load_builtin
from graphgen.tasks.model import ProofStatus, Task
from graphgen.tasks.taskset import generate
from graphgen.verify import explicit, proofs
from graphgen.verify.bmc import ChangesGoal
from graphgen.verify.certify import certify
from graphgen.verify.explicit import enabling, minimum
from graphgen.verify.proofs import Prover
from tests.test_broken_tasks import _mock3, _refused_payment

UNKNOWN = ProofStatus.INCONCLUSIVE
#: calls the searches the tests compare with z3 may make (about a second of work)
CALLS = 20_000


@cache
def _candidates(name: str, n: int) -> tuple[Domain, list[Task]]:
    d = load_builtin(name)
    return d, generate(d, n, 0).tasks


def _refusals(sets: tuple[tuple[str, int], ...]) -> Iterator[tuple[Domain, Task]]:
    for name, n in sets:
        d, tasks = _candidates(name, n)
        for t in tasks:
            if t.kind == "refusal" and t.refused_call is not None:
                yield d, t


def _searched(d: Domain, t: Task) -> tuple[int | None, bool, int | None, bool] | None:
    """The explicit search's answers, with a large budget: the calls before the refused call can
    succeed and whether that search ended, the same for the requested change (None when
    it asks for nothing a chain can make)."""
    p = Prover(d, t)
    req = p.requested
    assert t.refused_call is not None
    if isinstance(req, list) and not req:
        return None
    space = p._space_for(ChangesGoal(req if isinstance(req, list) else []), p.k)
    valid = enabling(space, t.refused_call, p.k - 1, max_calls=CALLS)
    if not isinstance(req, list):
        return valid.min_calls, valid.complete, None, True
    space.calls_run = 0
    change = minimum(space, p.k, whole_layer=False, max_calls=CALLS)
    return valid.min_calls, valid.complete, change.min_calls, change.complete


def _z3_answers(d: Domain, t: Task) -> tuple[bool | None, bool | None]:
    """z3's answers to the same two questions (None where it gave up or the change is
    no list of changes): can the refused call succeed after < k calls, and can a chain
    of <= k calls make the requested change."""
    p = Prover(d, t, engine="z3")
    call = t.refused_call
    assert call is not None
    with p.z3:
        bmc = p.build()
        assert bmc is not None, p.build_error
        made = p._refused_call_valid(call)
        valid = None if made is not None and made.status is UNKNOWN else made is not None
        req = p.requested
        change: bool | None = None
        if isinstance(req, list):
            # with the refused call's question settled, only the change is asked
            got = p._refusal_rest(bmc, call, req, "settled", None, "any length")
            change = None if got.status is UNKNOWN else not got.ok
    return valid, change


def questions_agree(d: Domain, t: Task) -> tuple[int, int]:
    """Asserts that, on refusal ``t``, each of proof 6's questions the search answers
    within :data:`CALLS` gets z3's answer (z3 asked only that question, on its own
    unrolling); how many questions were compared, and how many chains found."""
    got = _searched(d, t)
    if got is None:
        return 0, 0
    valid_at, valid_done, change_at, change_done = got
    z3_valid, z3_change = _z3_answers(d, t)
    answered = found = 0
    if valid_done and z3_valid is not None:
        answered += 1
        assert (valid_at is not None) == z3_valid, (t.id, valid_at)
        found += valid_at is not None
    if change_done and z3_change is not None:
        answered += 1
        assert (change_at is not None) == z3_change, (t.id, change_at)
        found += change_at is not None
    return answered, found


def _agree(sets: tuple[tuple[str, int], ...]) -> tuple[int, int, int]:
    """:func:`questions_agree` on every refusal of the first candidates of each built-in
    in ``sets``: how many refusals were asked, questions compared, and chains found."""
    asked = answered = found = 0
    for d, t in _refusals(sets):
        a, f = questions_agree(d, t)
        asked += a > 0
        answered += a
        found += f
    return asked, answered, found


def test_the_search_and_z3_agree_on_each_question() -> None:
    """The first candidates of four built-ins; some refusals there are refused only for
    the order of calls (the search and z3 both find the chain)."""
    sets = (("airline", 120), ("mock", 60), ("banking", 40), ("helpdesk", 40))
    asked, answered, found = _agree(sets)
    assert asked >= 25 and answered >= 45 and found >= 2, (asked, answered, found)


@pytest.mark.slow
def test_the_search_and_z3_agree_on_the_refusals_of_eight_domains() -> None:
    """More candidates of eight built-ins (a few minutes): retail's searches give up
    more often, and answer where they end."""
    others = ("banking", "helpdesk", "delivery", "clinic", "hotel")
    sets = (("retail", 120), ("airline", 200), ("mock", 100), *((n, 80) for n in others))
    asked, answered, found = _agree(sets)
    assert asked >= 80 and answered >= 120 and found >= 2, (asked, answered, found)


def test_the_levels_drop_no_enabling_chain(monkeypatch: pytest.MonkeyPatch) -> None:
    """The tools a depth may call (the refused call's reads' relevance levels) change
    no answer: the same length, or none, as a search that calls every tool at every
    depth, in no more calls."""
    pairs: list[tuple[Domain, Task, Any]] = []
    refusals = [*_refusals((("airline", 60), ("mock", 60), ("banking", 40)))]
    for d, t in [*refusals, (_mock3(), _refused_payment())]:
        p = Prover(d, t)
        assert t.refused_call is not None
        req = p.requested
        if isinstance(req, list) and not req:
            continue
        space = p._space_for(ChangesGoal(req if isinstance(req, list) else []), p.k)
        got = enabling(space, t.refused_call, p.k - 1, max_calls=CALLS)
        pairs.append((d, t, (got, space.calls_run)))

    def every_tool(domain: Any, names: Any, cells: Any, sorts: Any) -> Iterator[frozenset[str]]:
        yield frozenset(names)

    monkeypatch.setattr(explicit, "relevance_levels", every_tool)
    compared = found = 0
    for d, t, (got, calls) in pairs:
        p = Prover(d, t)
        req = p.requested
        assert t.refused_call is not None
        space = p._space_for(ChangesGoal(req if isinstance(req, list) else []), p.k)
        whole = enabling(space, t.refused_call, p.k - 1, max_calls=CALLS)
        if got.complete and whole.complete:
            compared += 1
            assert got.min_calls == whole.min_calls, t.id
            assert calls <= space.calls_run, t.id
            found += got.min_calls is not None
    assert compared >= 12 and found >= 1, (compared, found)


def test_a_deposit_first_is_found_by_the_search_and_by_z3() -> None:
    """Mock's "insufficient funds" payment, which a deposit of the amount first lets go
    through: the search finds the deposit under ``auto`` and says so; z3 alone finds it
    too, and both reject the task."""
    t = _refused_payment()
    d = _mock3()
    verdicts = {}
    for engine in ("auto", "z3"):
        p = Prover(d, t, engine=engine)
        got = p.refusal_impossible()
        assert not got.ok and "deposit" in got.detail and "pay" in got.detail, got.detail
        verdicts[engine] = "(explicit search)" in got.detail
        assert certify(d, t, engine=engine) == "proof_refusal_impossible"
    assert verdicts == {"auto": True, "z3": False}


def test_a_settled_refusal_builds_no_encoding() -> None:
    """An airline refusal the values settle in part and the search in the rest: proof 6
    holds with no unrolling built, proof 1 says who proved proof 6, and z3 alone proves
    the same."""
    d, tasks = _candidates("airline", 120)
    t = next(x for x in tasks if x.id == "airline-0-00002")
    p = Prover(d, t)
    by_name = {r.name: r for r in p.all()}
    assert p.bmc is None
    six = by_name["refusal_impossible"]
    assert six.ok and "explicit search" in six.detail, six.detail
    first = by_name["reference_chain"]
    assert first.ok and "proof 6 by the values calls can give a row and explicit search" in (
        first.detail
    ), first.detail
    z3_six = Prover(d, t, engine="z3").refusal_impossible()
    assert z3_six.ok and "explicit search" not in z3_six.detail


def test_a_search_past_its_budget_leaves_the_question_to_z3(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """With no calls to spend, neither search makes one: the layer it cannot pay for
    ends it before it begins, and z3 proves the same refusal."""
    d, tasks = _candidates("airline", 120)
    t = next(x for x in tasks if x.id == "airline-0-00002")
    p = Prover(d, t)
    assert t.refused_call is not None
    space = p._space_for(ChangesGoal(list(p.requested)), p.k)
    got = enabling(space, t.refused_call, p.k - 1, max_calls=0)
    assert not got.complete and got.chain is None and space.calls_run == 0
    monkeypatch.setattr(proofs, "REFUSAL_CALLS", 0)
    p = Prover(d, t)
    six = p.refusal_impossible()
    assert six.ok and "explicit search" not in six.detail, six.detail
    assert p.bmc is not None


def test_an_enabling_chain_is_one_the_agent_can_make() -> None:
    """The chain the search returns runs for the agent (every argument known, every
    call succeeding) and the refused call then succeeds after it: replayed by the
    interpreter from the initial state."""
    from graphgen.verify.explicit import Space

    t = _refused_payment()
    d = _mock3()
    p = Prover(d, t)
    call = t.refused_call
    assert call is not None
    space = p._space_for(ChangesGoal(list(p.requested)), p.k)
    got = enabling(space, call, p.k - 1)
    assert got.chain is not None and got.min_calls == len(got.chain)
    fresh = Space(d, p.initial, p.givens, ChangesGoal([]))
    assert fresh.follow([*got.chain, call]) is not None
    assert fresh.follow([call]) is None  # refused as the task stands
    assert [c.tool for c in got.chain][-1] == "deposit"
