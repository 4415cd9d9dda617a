"""Each prover works in a z3 context of its own (``graphgen.verify.terms.Z3Scope``).

z3 breaks ties by term ids, which a shared context hands out in the order of the whole
process's history: the same query then does different work, and near the resource
limit ends either way, depending on what was proven before. These tests measure that
work (z3's resource counter per query) and show it is the same in any history.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
import z3

from graphgen.domains import load_builtin
from graphgen.tasks.model import Task
from graphgen.tasks.taskset import GenOptions, generate, task_json
from graphgen.verify import bmc, templates, terms
from graphgen.verify.certify import certify, recheck
from graphgen.verify.proofs import Engine, Prover
from graphgen.verify.terms import LIT, EncodeError, Z3Scope, and_, eq, is_t

MOCK = load_builtin("mock")


@pytest.fixture(scope="module")
def tasks() -> list[Task]:
    return generate(MOCK, 8, 11, GenOptions()).tasks


@pytest.fixture
def work(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """The resource units each z3 query of the test used, in order."""
    used: list[int] = []
    check = bmc.Bmc.check

    def counted(self: bmc.Bmc, *args: Any, **kwargs: Any) -> Any:
        def units() -> int:
            stats = self.solver.statistics()
            names = stats.keys()  # a list: z3's Statistics has no membership test
            return int(stats.get_key_value("rlimit count")) if "rlimit count" in names else 0

        before = units()
        got = check(self, *args, **kwargs)
        used.append(units() - before)
        return got

    monkeypatch.setattr(bmc.Bmc, "check", counted)
    yield used


def test_a_tasks_z3_work_does_not_depend_on_what_was_proven_before(
    tasks: list[Task], work: list[int]
) -> None:
    first, *others = tasks
    assert not isinstance(certify(MOCK, first, engine="z3"), str)
    alone = list(work)
    assert alone and sum(alone) > 0  # z3 did work, so there is something to compare
    for t in others:
        certify(MOCK, t, engine="z3")
    work.clear()
    again = certify(MOCK, first, engine="z3")
    assert not isinstance(again, str)
    assert work == alone


def test_provers_used_in_turn_keep_their_own_terms(tasks: list[Task]) -> None:
    """Two provers alive at once, their queries interleaved: each method call works in
    its own prover's context, so no term of one reaches the other's solver."""
    actions = [t for t in tasks if t.kind == "action"][:2]
    assert len(actions) == 2
    a, b = (Prover(MOCK, t, engine="z3") for t in actions)
    assert a.build() is not None and b.build() is not None
    for p, t in ((a, actions[0]), (b, actions[1]), (a, actions[0])):
        assert p.find_min_calls(len(t.chain)) == t.min_calls
    assert a.bmc is not None and b.bmc is not None
    assert a.bmc.solver.ctx is not b.bmc.solver.ctx
    assert [r.ok for r in a.all()] == [r.ok for r in b.all()] == [True] * 6


def test_a_scope_makes_its_context_only_when_used() -> None:
    outside = z3.main_ctx()
    scope = Z3Scope()
    with scope:
        pass
    assert z3.main_ctx() is outside  # nothing was made, and the outer one is back
    with scope:
        inner = and_(z3.Bool("p"), LIT.TRUE)
        assert inner.ctx is z3.main_ctx() is not outside
    assert is_t(and_(LIT.TRUE, LIT.TRUE)) and LIT.TRUE.ctx is outside
    with scope:  # the same context again: its terms are still good
        assert LIT.TRUE.ctx is inner.ctx


def test_literals_are_known_by_their_ast_in_each_scope() -> None:
    """A numeral a substitution hands back is another Python wrapper of a cached literal:
    ``int_const`` knows its value from the AST pointer and ``wrap_int`` gives back the
    cached term itself; a numeral never cached is still read (through z3), and
    a non-literal is none. The cache is the scope's own."""
    from graphgen.verify.terms import int_const, int_val, wrap_int

    with Z3Scope():
        seven = int_val(7)
        again = z3.IntVal(7)  # a new wrapper of the same hash-consed numeral
        assert again is not seven and int_const(again) == 7
        assert wrap_int(again.ast) is seven
        big = z3.IntVal(10**30)  # never cached
        assert int_const(big) == 10**30 and int_const(wrap_int(big.ast)) == 10**30
        x = z3.Int("x")
        assert int_const(x) is None and int_const(wrap_int(x.ast)) is None
    with Z3Scope():
        other = int_val(7)
        assert other is not seven and other.ctx is not seven.ctx
        assert LIT.int_at[other.ast.value] == 7 and wrap_int(other.ast) is other


def _proofs(t: Task | str) -> Any:
    """A certification's outcome without its times."""
    if isinstance(t, str):
        return t
    assert t.certificate is not None
    return t.min_calls, [(p.name, p.status, p.detail) for p in t.certificate.proofs]


def test_unchecked_c_calls_prove_the_same(
    tasks: list[Task], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The encoding calls z3's C functions without the error poll of z3's wrappers, and
    z3's term objects count references that way once a scope was entered; the proofs
    come out as they do through the checked wrappers."""
    with Z3Scope():
        assert is_t(LIT.TRUE)
    # where z3's wrappers have the layout terms.py expects, the C functions were taken
    if terms.INC_REF is not z3.z3core.Z3_inc_ref:
        assert z3.z3.Z3_inc_ref is terms.INC_REF and z3.z3.Z3_dec_ref is terms.DEC_REF
    fast = [_proofs(certify(MOCK, t, engine="z3")) for t in tasks[:4]]
    # every unchecked call back to its checked wrapper, where the encoding looks it up
    hot = {
        "_MK_AND": "Z3_mk_and",
        "_MK_OR": "Z3_mk_or",
        "_MK_NOT": "Z3_mk_not",
        "_MK_EQ": "Z3_mk_eq",
        "_MK_ITE": "Z3_mk_ite",
        "SUBSTITUTE": "Z3_substitute",
        "GET_APP_ARG": "Z3_get_app_arg",
        "INC_REF": "Z3_inc_ref",
        "DEC_REF": "Z3_dec_ref",
    }
    for module in (terms, templates):
        for const, name in hot.items():
            if hasattr(module, const):
                monkeypatch.setattr(module, const, getattr(z3.z3core, name))
    monkeypatch.setattr(z3.z3, "Z3_inc_ref", z3.z3core.Z3_inc_ref)
    monkeypatch.setattr(z3.z3, "Z3_dec_ref", z3.z3core.Z3_dec_ref)
    checked = [_proofs(certify(MOCK, t, engine="z3")) for t in tasks[:4]]
    assert fast == checked
    assert any(not isinstance(x, str) for x in fast)


def test_a_term_z3_refuses_is_an_encode_error_not_a_crash() -> None:
    """Without the wrappers' poll, a refused call still surfaces: z3 returns a null term,
    which becomes an :class:`EncodeError` carrying z3's message."""
    with Z3Scope():
        b, i, s = z3.Bool("b"), z3.Int("i"), z3.String("s")
        with pytest.raises(EncodeError, match="z3 refused a term: Sorts Int and String"):
            eq(i, s)
        with pytest.raises(EncodeError, match="z3 refused a term: Sort mismatch"):
            and_(b, i)
        assert not is_t(eq(i, z3.Int("j")))  # a well-sorted term is made as before


def test_a_tasks_z3_work_does_not_depend_on_the_order_of_its_keys(work: list[int]) -> None:
    """A task read back from its file has every object's keys sorted (the canonical
    JSON), where the generator built them in the domain's order: a created row's fields
    in a goal, a call's arguments. The proofs must do the same z3 work on both, or a
    task near the limit is proven in the generator and times out when certified again
    (it did: a retail task of seed 0 whose goal creates an order)."""
    retail = load_builtin("retail")
    made = [
        t
        for t in generate(retail, 40, 0, GenOptions()).tasks
        if any(c.field == "*" for c in t.goal.changes)
    ][:2]
    assert made
    for t in made:
        after = next(c.after for c in t.goal.changes if c.field == "*")
        assert isinstance(after, dict) and list(after) != sorted(after)  # not sorted yet
        read_back = Task.model_validate(json.loads(task_json(t)))
        goals = []
        for task in (t, read_back):
            p = Prover(retail, task, engine="z3")
            with p.z3:
                b = p.build()
                assert b is not None
                goals.append(b.goal_term(p.goal_pred).sexpr())
        assert goals[0] == goals[1], t.id
        work.clear()
        first = _proofs(certify(retail, t, engine="z3"))
        as_made = list(work)
        work.clear()
        again = _proofs(certify(retail, read_back, engine="z3"))
        assert again == first
        assert work == as_made, t.id


@pytest.mark.parametrize("engine", ["z3", "auto"])
def test_verify_asks_what_certify_asked(work: list[int], engine: Engine) -> None:
    """``recheck`` (what ``graphgen verify`` runs) asks z3 the same queries in the same
    order as ``certify`` did when the task was made, each doing the same work, so a
    task near the limit is not proven once and refused when checked."""
    retail = load_builtin("retail")
    # most of retail's first candidates are the explicit search's: enough are drawn that
    # two of them reach z3
    tasks = [t for t in generate(retail, 60, 0, GenOptions()).tasks if t.kind != "refusal"]
    compared = 0
    for t in tasks:
        if compared == 2:
            break
        work.clear()
        made = certify(retail, t, engine=engine)
        if isinstance(made, str) or not work:
            continue  # rejected, or no query reached z3
        asked = list(work)
        work.clear()
        why, cert = recheck(retail, made, engine=engine)
        assert why == "" and cert is not None, (t.id, why)
        assert work == asked, t.id
        compared += 1
    assert compared >= 2
