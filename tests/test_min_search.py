"""The minimum search unrolls only as deep as each query needs, and finds the minimum.

With engine "z3", :meth:`Prover.shortest` asks "goal after j steps?" for j = 0, 1, … on
an unrolling that grows with j; by default it starts from a chain the interpreter ran
(:meth:`Prover.witness`) and asks only below it. Cross-check: on a fresh prover whose
unrolling is built to the reference's length first, z3 must find no chain below the
minimum reaching the goal and one of the minimum's length, with the goal read after
every step (the old way).
"""

from __future__ import annotations

import pytest

from graphgen.domains import load_builtin
from graphgen.tasks.expand import GenOptions
from graphgen.tasks.taskset import generate
from graphgen.verify.proofs import Engine, Prover


@pytest.mark.parametrize("engine", ["z3", "auto"])
@pytest.mark.parametrize(
    ("name", "n"), [("mock", 10), pytest.param("airline", 4, marks=pytest.mark.slow)]
)
def test_minimum_search_matches_the_full_unrolling(name: str, n: int, engine: Engine) -> None:
    domain = load_builtin(name)
    tasks = [t for t in generate(domain, n, 2, GenOptions()).tasks if t.kind != "refusal"]
    assert tasks
    for task in tasks:
        p = Prover(domain, task, engine=engine)
        m, witness, why = p.shortest(len(task.chain))
        assert m is not None and witness is not None, why
        assert len(witness) == m and 0 < m <= len(task.chain)
        assert p.bmc is not None
        if engine == "z3":  # upward: only as deep as the minimum
            assert len(p.bmc.steps) == m
        else:  # downward from the interpreter's chain: only as deep as the last query
            start = p.witness()
            assert start is not None and len(start) >= m
            assert len(p.bmc.steps) == len(start) - 1
        full = Prover(domain, task.model_copy(update={"min_calls": m}))
        with full.z3:  # the terms built here go with the prover's
            bmc = full.build()
            assert bmc is not None
            bmc.ensure(bmc.k)  # every step first
            goal = full._goal_lit(bmc.k)
            assert full._check([goal, *bmc.length_below(m)])[0] == "unsat", task.id
            assert full._check([goal, *bmc.length_below(m + 1)])[0] == "sat", task.id
        # and the certificate's proof 3 agrees on the deep unrolling
        assert full.min_calls().status.value == "proved"
        # a wrong minimum is refuted: one more is not the shortest
        wrong = Prover(domain, task.model_copy(update={"min_calls": m + 1}))
        if m + 1 <= wrong.k:
            assert wrong.min_calls().status.value == "refuted", task.id
        # and one fewer, though the interpreter's chain of m calls is at hand
        short = Prover(domain, task.model_copy(update={"min_calls": m - 1}), engine=engine)
        assert short.min_calls().status.value == "refuted", task.id


def test_restrict_keeps_exactly_the_tracked_rows_in_key_order() -> None:
    """``Bmc.restrict`` walks the tracked keys; the same rows in the same order as
    filtering the whole sorted table, on a state ten times the default size."""
    domain = load_builtin("retail")
    sizes = {e: ed.size * 10 for e, ed in domain.entities.items()}
    task = next(
        t for t in generate(domain, 3, 4, GenOptions(sizes=sizes)).tasks if t.kind == "action"
    )
    p = Prover(domain, task)
    bmc = p.build()
    assert bmc is not None
    final = p.run.final
    got = bmc.restrict(final)
    for e in domain.entities:
        want = [
            (k, r)
            for k, r in sorted(final.tables.get(e, {}).items())
            if k in bmc.state.tables.get(e, {}) or k in bmc._created[e]
        ]
        assert list(got.tables[e].items()) == want
    # the slice is a strict part of the big state: rows were left out
    assert sum(map(len, got.tables.values())) < sum(map(len, final.tables.values()))
