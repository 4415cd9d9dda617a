"""Domain lemmas proven by induction, and the refusals they settle.

A refusal's proof 6 asks whether some chain of other calls could make the refused call
succeed. When the call fails on a *number* (a gift card's balance below a price), no
per-field argument (:mod:`graphgen.verify.reachable`) settles that: refunds raise the
balance. What keeps it low is relational: a card holds at most its balance plus what
could still be refunded to it. The unrolling answers such questions only by case
splits over every chain up to ``k``, and on retail's gift-card refusals that ran into
z3's resource limit.

A domain states the relation as a lemma of the entity (``lemmas:`` in the domain file,
:class:`graphgen.domain.Lemma`): ``value <= potential`` on a row, and no call raises
``potential``. Nothing trusts it. For one task, on the unrolling's universe and with
its tools, :func:`refusal_by_lemmas` builds the candidate invariant ``I``:

* every bounded field of every row that exists is within its ``min``/``max``, and every
  enum field among its members (the interpreter refuses a call that would leave a
  touched row outside its bounds, so this part is usually inductive on its own; the
  lemmas need it: a total is never negative);
* for each row the refused call names or a requested change writes, whose entity has a
  lemma, ``value <= potential`` and ``potential <= c``, where ``c`` is the potential's
  value in the initial state;

and proves, with z3 over the unrolling's shared symbolic pre-state (every cell some
call can change is a free constant; the rest hold their initial values in every
reachable state, which the value-flow analysis and the templates already rely on):

1. ``I`` holds in the initial state;
2. for every tool of the unrolling that can change a cell, ``I(pre) ∧ ok ∧ ¬I(post)``
   is unsat: any successful call, with any arguments of the universe, keeps ``I``;
3. then ``I ∧ (the refused call succeeds)`` unsat means it never does, and
   ``I ∧ (a requested change's cell holds its new value)`` unsat that no chain makes it.

By induction, every state the tools reach within the unrolling's universe satisfies
``I`` (whatever the agent knows: the knowledge model only removes chains). That
universe holds the value-flow slice and as many created rows of each table as ``k``
calls can make, and every chain of up to ``k`` calls an agent can make stays inside it
(:mod:`graphgen.verify.slicing`); a longer chain may create rows it lacks. So the claim
is for chains of up to ``k`` calls, the unrolling's own bound, and says so: the same
bound proof 6 states otherwise, reached without unrolling a single step.
Each query has the prover's resource limit; any answer but unsat drops that part of the
argument and leaves the question to the unrolling, as before.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import z3

from graphgen import ir
from graphgen.domain import Lemma
from graphgen.tasks.model import Call, Change
from graphgen.types import BOOL, EnumT, OptT, RefT, strip_opt
from graphgen.verify.bmc import Bmc, query_rlimit
from graphgen.verify.calls import creates_per_call, within_bounds
from graphgen.verify.evaluator import Evaluator
from graphgen.verify.symstate import SymState
from graphgen.verify.terms import (
    LIT,
    Term,
    and_,
    compare,
    eq,
    implies,
    int_val,
    is_f,
    is_t,
    not_,
    or_,
)
from graphgen.verify.universe import NONE_VALUE, Universe


class _Instance:
    """One lemma on one row: the terms of ``I`` it contributes on a state."""

    def __init__(self, entity: str, key: Any, lemma: Lemma, row: int) -> None:
        self.entity = entity
        self.key = key
        self.lemma = lemma
        self.row = row
        self.below = ir.Compare("<=", lemma.value, lemma.potential, BOOL)
        self.ceiling: Term | None = None

    @property
    def name(self) -> str:
        return f"lemma {self.lemma.name} on {self.entity} {self.key}"

    def _evaluator(self, bmc: Bmc, st: SymState) -> Evaluator:
        # one evaluator per row: the evaluator's memo would otherwise hand a second
        # row the first row's reads (they are structurally the same expression)
        return Evaluator(bmc.uni, st, f"entity {self.entity!r}, lemma {self.lemma.name!r}")

    def _x(self, bmc: Bmc) -> dict[str, Any]:
        return {"x": bmc.uni.index_term(self.row)}

    def potential(self, bmc: Bmc, st: SymState) -> tuple[Any, Term]:
        return self._evaluator(bmc, st).evaluate(self.lemma.potential, self._x(bmc))

    def holds(self, bmc: Bmc, st: SymState) -> Term:
        """``value <= potential <= ceiling`` on ``st``, neither raising."""
        assert self.ceiling is not None
        ev = self._evaluator(bmc, st)  # one memo: the potential is evaluated once
        below, err = ev.evaluate(self.below, self._x(bmc))
        pot, perr = ev.evaluate(self.lemma.potential, self._x(bmc))
        return and_(not_(err), not_(perr), below, compare("<=", pot, self.ceiling))


def _bounds(bmc: Bmc, st: SymState) -> list[Term]:
    """Every existing row's bounded fields within their ``min``/``max``, and its enum
    fields among their members."""
    out: list[Term] = []
    for ent, edef in bmc.domain.entities.items():
        for fd in edef.fields.values():
            ty = strip_opt(fd.ty)
            enum = len(ty.values) if isinstance(ty, EnumT) else 0
            if fd.min is None and fd.max is None and not enum:
                continue
            col = st.cells[ent][fd.name]
            for u, ex in enumerate(st.exists[ent]):
                v = col[u]
                if is_f(ex) or isinstance(v, list):
                    continue
                conds = within_bounds(fd, v)
                if enum:
                    absent = eq(v, int_val(NONE_VALUE)) if isinstance(fd.ty, OptT) else LIT.FALSE
                    member = and_(compare(">=", v, int_val(0)), compare("<", v, int_val(enum)))
                    conds.append(or_(absent, member))
                part = implies(ex, and_(*conds))
                if not is_t(part):
                    out.append(part)
    return out


def _instances(bmc: Bmc, call: Call, changes: list[Change]) -> list[_Instance]:
    """The lemmas of the rows the refused call names and of the rows the requested
    changes write (rows of the initial state, each once, in a fixed order)."""
    domain, uni = bmc.domain, bmc.uni
    tool = domain.tools[call.tool]
    rows: list[tuple[str, Any]] = []
    for p, v in sorted(tool.full_args(call.args).items()):
        ty = strip_opt(tool.params[p].ty)
        if isinstance(ty, RefT):
            rows.append((ty.entity, v))
    rows += [(c.entity, c.key) for c in changes if c.field != "*"]
    out: list[_Instance] = []
    seen: set[tuple[str, int]] = set()
    for ent, key in rows:
        lemmas = domain.entities[ent].lemmas
        row = uni.index[ent].get(key)
        if not lemmas or row is None or (ent, row) in seen:
            continue
        if not is_t(bmc.states[0].exists[ent][row]):
            continue
        seen.add((ent, row))
        out.extend(_Instance(ent, key, lem, row) for lem in lemmas)
    return out


def _check(facts: list[Term], rlimit: int) -> Any:
    s = z3.Solver()
    s.set("rlimit", rlimit)
    s.add(*facts)
    return s.check()


def _unsat(facts: list[Term], rlimit: int) -> bool:
    return bool(_check(facts, rlimit) == z3.unsat)


#: Of a query's resource limit, the share a try before splitting it by cases gets.
TRY_SHARE = 16


@dataclass
class _WholeTries:
    """Whether whole tries are still worth making in one induction (see
    :func:`_unsat_by_cases`): false once one has not decided."""

    worth: bool = True


def _unsat_by_cases(
    facts: list[Term],
    splits: list[tuple[Term, int]],
    uni: Universe,
    rlimit: int,
    tries: _WholeTries | None = None,
) -> bool:
    """Is the conjunction of ``facts`` unsat? Tried whole with a small share of the
    limit; when that does not decide, split on the first of ``splits`` (an argument's
    term and how many rows its entity has): one case per row, with that row's key put
    for the argument, plus the case that it names none of them. An induction query over
    a symbolic argument is a disjunction over the rows it may name, which z3 settles
    slowly; with the row fixed, most of the state folds away.

    ``tries``, shared by the queries of one induction, skips the whole try once one has
    not decided. Whether it decides depends on the task's universe more than on the
    tool: on the first 250 retail candidates every refusal's tool queries went the same
    way, so after a miss the others would spend their share for nothing."""
    if not splits:
        return _unsat(facts, rlimit)
    if tries is None or tries.worth:
        got = _check(facts, max(1, rlimit // TRY_SHARE))
        if got != z3.unknown:
            return bool(got == z3.unsat)
        if tries is not None:
            tries.worth = False
    (arg, n), rest = splits[0], splits[1:]
    whole = and_(*facts)
    cases = (z3.substitute(whole, (arg, uni.index_term(i))) for i in range(n))
    if rest:
        if not all(_unsat_by_cases([case], rest, uni, rlimit) for case in cases):
            return False
    elif not _each_unsat(cases, rlimit):
        return False
    return _unsat_by_cases(
        [whole, *(not_(eq(arg, uni.index_term(i))) for i in range(n))], rest, uni, rlimit
    )


def _each_unsat(cases: Iterable[Term], rlimit: int) -> bool:
    """Is each of ``cases`` unsat, each within ``rlimit`` (z3 applies a solver's limit
    to every check)? One solver asks them in turn, each asserted in a scope of its
    own, which costs less than a fresh solver per case (the 33 refusals among the
    first 250 retail candidates: 6.0 s against 7.1 s, with the same answers)."""
    s = z3.Solver()
    s.set("rlimit", rlimit)
    for case in cases:
        s.push()
        s.add(case)
        got = s.check()
        s.pop()
        if got != z3.unsat:
            return False
    return True


@dataclass(frozen=True)
class LemmaArgument:
    """What the lemmas showed for one refusal: why the refused call never succeeds
    (``never``) and why no chain makes a requested change (``unreachable``), each None
    when they did not show it; ``detail`` says what did not go through."""

    never: str | None
    unreachable: str | None
    detail: str = ""


def refusal_by_lemmas(
    bmc: Bmc, call: Call, changes: list[Change], timeout_ms: int
) -> LemmaArgument | None:
    """What the lemmas of the rows ``call`` names and ``changes`` write, proven
    inductive on ``bmc`` (see the module text), show about a refusal: that ``call``
    succeeds after no chain of up to ``bmc.k`` calls, and that no such chain makes some
    requested change;
    None when no lemma applies (no row of an entity with lemmas, or an argument
    outside the universe).

    Run inside the z3 context ``bmc`` was built in."""
    names = [t.name for t in bmc.tools]
    if call.tool not in names:
        return None
    insts = _instances(bmc, call, changes)
    if not insts:
        return None
    uni = bmc.uni
    j = names.index(call.tool)
    tool = bmc.tools[j]
    args: dict[str, Term] = {}
    for p, v in tool.full_args(call.args).items():
        term = uni.encode_value(tool.params[p].ty, v)
        if term is None:
            return None
        args[p] = term
    rlimit = query_rlimit(timeout_ms, bmc.rows)
    pre = bmc.shared_pre()
    s0 = bmc.states[0]
    for inst in insts:
        pot, err = inst.potential(bmc, s0)
        c = z3.simplify(pot)
        if not is_f(z3.simplify(err)) or not z3.is_int_value(c):
            return LemmaArgument(None, None, f"{inst.name}: the potential has no value initially")
        inst.ceiling = c

    def invariant(st: SymState) -> list[Term]:
        return [*_bounds(bmc, st), *(inst.holds(bmc, st) for inst in insts)]

    if not _unsat([not_(and_(*invariant(s0)))], rlimit):
        return LemmaArgument(None, None, "not true in the initial state")
    before = invariant(pre)
    layout = pre.layout()
    tries = _WholeTries()
    for k in range(len(bmc.tools)):
        tpl = bmc.template(k)
        if not tpl.changed_idx:
            continue  # a read keeps every cell, so every state it leaves satisfies I
        after = invariant(tpl.call.post)
        # the cases to split on: the slot a create fills (its table's counter), then
        # the arguments naming rows of tables the call can change, in parameter order
        changed = {layout[i][0] for i in tpl.changed_idx}
        splits = [
            (pre.created[e], len(uni.created[e]))
            for e in sorted(creates_per_call(tpl.tool))
            if not z3.is_int_value(pre.created[e])
        ]
        for p, pd in tpl.tool.params.items():
            ty = strip_opt(pd.ty)
            if isinstance(ty, RefT) and ty.entity in changed:
                splits.append((tpl.args[p], len(uni.keys[ty.entity])))
        if not _unsat_by_cases(
            [*before, tpl.call.ok, not_(and_(*after))], splits, uni, rlimit, tries
        ):
            return LemmaArgument(None, None, f"not shown kept by tool {tpl.tool.name!r}")
    held = "; ".join(f"{i.entity} {i.key}: {i.lemma.value_source} <= {i.ceiling}" for i in insts)
    used = ", ".join(sorted({i.lemma.name for i in insts}))
    proof = (
        f"by lemma {used}, proven by induction over every tool: {held} in every state "
        f"a chain of <= {bmc.k} calls reaches"
    )
    ok, _, _ = bmc.template(j).instantiate(pre, args)
    never = proof if _unsat([*before, ok], rlimit) else None
    unreachable = None
    for c in changes:
        cell = _cell(bmc, pre, c)
        if cell is not None and _unsat([*before, cell], rlimit):
            unreachable = f"{c.entity} {c.key}'s {c.field} is never {c.after!r}, {proof}"
            break
    allowed = ["the refused call"] if never is None else []
    allowed += ["the requested change"] if changes and unreachable is None else []
    missed = f"the bounds they prove allow {' and '.join(allowed)}" if allowed else ""
    return LemmaArgument(never, unreachable, missed)


def _cell(bmc: Bmc, st: SymState, c: Change) -> Term | None:
    """``c``'s cell holding its new value on ``st``, as a term (None for a change the
    encoding cannot state this way: a row made or dropped, a list, a value outside the
    universe)."""
    fd = bmc.domain.entities[c.entity].fields.get(c.field)
    row = bmc.uni.index[c.entity].get(c.key)
    if fd is None or row is None:
        return None
    v = st.cells[c.entity][c.field][row]
    want = bmc.uni.encode_value(fd.ty, c.after)
    if isinstance(v, list) or want is None:
        return None
    return and_(st.exists[c.entity][row], eq(v, want))
