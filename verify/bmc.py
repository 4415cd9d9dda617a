"""Bounded model checking over call chains an agent could make.

A chain has up to ``k`` steps. Step ``t`` has an *active* flag (inactive steps only at
the end, so the chain length is the number of active steps), a symbolic tool choice and
symbolic arguments for every tool. An active step must be a *successful* call (we only
consider chains of successful calls: a failing call changes nothing, and the only thing
it could reveal is its error message, which the knowledge model does not count — so
dropping failing calls loses no reachable state or knowledge of the model), and each
argument must be *known* at that step (:mod:`graphgen.knowledge`):

* an enum member (always known; validity checks membership);
* a value the task's givens state at the parameter's sort; or
* a value an earlier step's output revealed at that sort — the symbolic mirror of
  :func:`graphgen.knowledge.facts_of_result`: comprehension items present in that step's
  post-state, a whole row's key and fields, a returned id, ...

States between steps are fresh variables only for cells some tool can change; all other
cells are shared terms (the frame). Per-tool transition terms are built once as
:class:`~verify.encode.ToolTemplate` and instantiated per step by substitution. One
:class:`Bmc` serves many queries through assumption literals, so the solver keeps what
it learned between them.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import z3

from graphgen import ir
from graphgen.domain import Domain, ToolDef
from graphgen.knowledge import Sort, field_sorts, key_sort, param_sort
from graphgen.state import State
from graphgen.types import PRIMS, EnumT, ListT, RecordT, RefT, RowT, Ty
from tasks.model import Call, Change, Given
from verify.encode import (
    FALSE,
    TRUE,
    ListVal,
    RecVal,
    RowVal,
    SymState,
    SymVal,
    Term,
    ToolTemplate,
    Universe,
    and_,
    creates_per_call,
    eq,
    implies,
    is_t,
    ite,
    leaves,
    not_,
    or_,
    read_field,
)
from verify.slicing import slice_state

Status = str  # "sat" | "unsat" | "unknown"


# ------------------------------------------------------------------ sorts and givens


def parse_sort(s: str) -> Sort:
    """``"field:User.email"`` → ``Sort("field", "User.email")``."""
    kind, _, name = s.partition(":")
    return Sort(kind, name)


def sort_type(domain: Domain, s: Sort) -> Ty | None:
    """The IR type of values of sort ``s`` (None if the sort names nothing)."""
    if s.kind == "key":
        return RefT(s.name) if s.name in domain.entities else None
    if s.kind == "field":
        ent, _, f = s.name.partition(".")
        edef = domain.entities.get(ent)
        if edef is None:
            return None
        return edef.field_type(f)
    if s.kind == "free":
        return PRIMS.get(s.name)
    if s.kind == "enum":
        if s.name in domain.enums:
            return domain.enums[s.name]
        for edef in domain.entities.values():
            for fd in edef.fields.values():
                if isinstance(fd.ty, EnumT) and fd.ty.name == s.name:
                    return fd.ty
    return None


def typed_givens(domain: Domain, givens: Iterable[Given]) -> list[tuple[Sort, Ty, Any]]:
    """Givens with their sort and the type of that sort (unknown sorts are dropped)."""
    out = []
    for g in givens:
        s = parse_sort(g.sort)
        t = sort_type(domain, s)
        if t is not None:
            out.append((s, t, g.value))
    return out


# ------------------------------------------------------------------ knowledge sites


def reveal_sites(domain: Domain, e: ir.Expr | None, t: Ty, v: SymVal, g: Term,
                 out: list[tuple[Term, Sort, Term]]) -> None:
    """What an output ``v`` of expression ``e`` (type ``t``) reveals, as guarded
    (guard, sort, value) sites: the symbolic mirror of ``knowledge._facts``."""
    if isinstance(e, ir.FieldOf) and not isinstance(t, ListT):
        for s in field_sorts(domain, e.entity, e.field):
            out.append((g, s, v))
        return
    if isinstance(t, ListT) and isinstance(v, ListVal):
        inner: ir.Expr | None = e.proj if isinstance(e, ir.Comp) else None
        for i, (p, item) in enumerate(v.items):
            if isinstance(e, ir.ListLit) and i < len(e.items):
                inner = e.items[i]
            reveal_sites(domain, inner, t.elem, item, and_(g, p), out)
        return
    if isinstance(t, RowT) and isinstance(v, RowVal):
        edef = domain.entities[t.entity]
        out.append((g, key_sort(t.entity), v.key))
        for name, x in v.fields.items():
            fd = edef.fields[name]
            if isinstance(fd.ty, ListT):
                if isinstance(fd.ty.elem, RefT) and isinstance(x, ListVal):
                    for p, item in x.items:
                        out.append((and_(g, p), key_sort(fd.ty.elem.entity), item))
            else:
                for s in field_sorts(domain, t.entity, name):
                    out.append((g, s, x))
        return
    if isinstance(t, RecordT) and isinstance(v, RecVal):
        exprs = dict(zip(e.keys, e.values, strict=True)) if isinstance(e, ir.DictLit) else {}
        for name, ft in t.fields:
            if name in v.fields:
                reveal_sites(domain, exprs.get(name), ft, v.fields[name], g, out)
        return
    if isinstance(t, RefT):
        out.append((g, key_sort(t.entity), v))


# ------------------------------------------------------------------ goals


class GoalView:
    """What a goal can look at: the final symbolic state and the agent's knowledge."""

    def __init__(self, bmc: Bmc) -> None:
        self.bmc = bmc
        self.uni = bmc.uni
        self.final = bmc.states[-1]

    def key(self, ent: str, key: str) -> Term | None:
        """The index term of ``ent`` key ``key`` (None if outside the universe)."""
        i = self.uni.index.get(ent, {}).get(key)
        return None if i is None else self.uni.ival(i)

    def exists(self, ent: str, key: str) -> Term:
        """Row ``ent``/``key`` exists in the final state."""
        i = self.uni.index.get(ent, {}).get(key)
        return FALSE if i is None else self.final.exists[ent][i]

    def field_is(self, ent: str, key: str, f: str, value: Any) -> Term:
        """Row ``ent``/``key`` exists and its field ``f`` equals ``value`` at the end."""
        edef = self.uni.domain.entities.get(ent)
        k = self.key(ent, key)
        if edef is None or k is None or f not in edef.fields:
            return FALSE
        ty = edef.fields[f].ty
        cur = read_field(self.uni, self.final, ent, k, f)
        if isinstance(ty, ListT):
            assert isinstance(cur, ListVal)
            if not isinstance(value, list):
                return FALSE
            el = self.uni.elems(ty.elem)
            if any(x not in el for x in value) or list(value) != sorted(set(value)):
                return FALSE
            want = set(value)
            parts = [p if x in want else not_(p) for (p, _), x in zip(cur.items, el,
                                                                      strict=True)]
            return and_(self.exists(ent, key), *parts)
        t = self.uni.enc(ty, value)
        if t is None:
            return FALSE
        return and_(self.exists(ent, key), eq(cur, t))

    def known(self, value: Any) -> Term:
        """``value`` is given or was shown by some output of the chain (any sort)."""
        for _, _, gv in self.bmc.givens:
            if _same_value(gv, value):
                return TRUE
        parts = []
        for guard, ty, term in self.bmc.leaf_sites:
            t = _enc_like(self.uni, ty, value)
            if t is not None:
                parts.append(and_(guard, eq(term, t)))
        return or_(*parts)

    def known_at(self, sort: Sort, value: Any) -> Term:
        """``value`` is known at ``sort`` at the end of the chain."""
        if sort.always_known:
            return TRUE
        ty = sort_type(self.uni.domain, sort)
        if ty is None:
            return FALSE
        t = self.uni.enc(ty, value)
        if t is None:
            return FALSE
        opts = [eq(t, g) for g in self.bmc.given_terms.get(sort, [])]
        opts += [and_(gd, eq(t, v)) for gd, v in self.bmc.sites.get(sort, [])]
        return or_(*opts)


def _same_value(a: Any, b: Any) -> bool:
    # bool is an int in Python; an answer True must not match a shown 1
    return type(a) is type(b) and a == b


def _enc_like(uni: Universe, ty: Ty, value: Any) -> Term | None:
    if isinstance(value, bool) != (ty == PRIMS["bool"]):
        return None
    return uni.enc(ty, value)


class Goal(Protocol):
    """A goal over the final symbolic state (and knowledge)."""

    def build(self, view: GoalView) -> Term: ...

    def seeds(self) -> set[str]: ...

    def typed_values(self, domain: Domain) -> list[tuple[Ty, Any]]: ...


@dataclass
class ChangesGoal:
    """The intent of a task goal: every listed change holds (each field has its ``after``
    value, created rows exist with those values, deleted rows do not exist), and every
    answer value is known."""

    changes: list[Change] = field(default_factory=list)
    answers: list[Any] = field(default_factory=list)

    def build(self, view: GoalView) -> Term:
        parts: list[Term] = []
        for c in self.changes:
            if c.field == "*":
                if c.after is None:
                    parts.append(not_(view.exists(c.entity, c.key)))
                elif isinstance(c.after, dict):
                    parts.append(view.exists(c.entity, c.key))
                    parts.extend(view.field_is(c.entity, c.key, f, v) for f, v in c.after.items())
                else:
                    parts.append(FALSE)
            else:
                parts.append(view.field_is(c.entity, c.key, c.field, c.after))
        parts.extend(view.known(a) for a in self.answers)
        return and_(*parts)

    def seeds(self) -> set[str]:
        out: set[str] = set()
        for c in self.changes:
            out.add(c.key)
            for v in (c.before, c.after):
                out.update(_strings_in(v))
        for a in self.answers:
            out.update(_strings_in(a))
        return out

    def typed_values(self, domain: Domain) -> list[tuple[Ty, Any]]:
        out: list[tuple[Ty, Any]] = []
        for c in self.changes:
            edef = domain.entities.get(c.entity)
            if edef is None:
                continue
            out.append((RefT(c.entity), c.key))
            for v in (c.before, c.after):
                if c.field == "*" and isinstance(v, dict):
                    out.extend((edef.fields[f].ty, x) for f, x in v.items() if f in edef.fields)
                elif c.field in edef.fields:
                    out.append((edef.fields[c.field].ty, v))
        return out


@dataclass
class FnGoal:
    """A goal given as a function of the view (``seeds``: strings it mentions)."""

    fn: Callable[[GoalView], Term]
    seed_strings: set[str] = field(default_factory=set)

    def build(self, view: GoalView) -> Term:
        return self.fn(view)

    def seeds(self) -> set[str]:
        return set(self.seed_strings)

    def typed_values(self, domain: Domain) -> list[tuple[Ty, Any]]:
        return []


def _strings_in(v: Any) -> Iterable[str]:
    if isinstance(v, str):
        yield v
    elif isinstance(v, list):
        for x in v:
            yield from _strings_in(x)
    elif isinstance(v, dict):
        for x in v.values():
            yield from _strings_in(x)


# ------------------------------------------------------------------ the unrolling


@dataclass
class SearchResult:
    """The answer of one query: ``chain`` is a witness when ``status == 'sat'``."""

    status: Status
    chain: list[Call] | None = None
    ms: float = 0.0
    reason: str = ""


@dataclass
class _Step:
    act: Term
    sel: Term
    args: list[dict[str, Term]]


class Bmc:
    """All chains of up to ``k`` known-argument successful calls from ``state``.

    ``state`` is sliced (see :mod:`verify.slicing`) with ``seeds`` (strings the queries
    mention besides the givens) unless ``slice_rows`` is false; ``extra`` are typed values
    that must be representable (goal values, pinned arguments).
    """

    def __init__(self, domain: Domain, state: State, givens: Iterable[Given], k: int, *,
                 tools: Sequence[str] | None = None, seeds: Iterable[str] = (),
                 extra: Iterable[tuple[Ty, Any]] = (), extra_scans: Sequence[ir.Comp] = (),
                 slice_rows: bool = True) -> None:
        self.domain = domain
        self.k = k
        self.tools: list[ToolDef] = [domain.tools[n] for n in (tools or list(domain.tools))]
        self.givens = typed_givens(domain, givens)
        creates: dict[str, int] = {}
        for t in self.tools:
            for e, n in creates_per_call(t).items():
                creates[e] = max(creates.get(e, 0), n)
        creates = {e: n * k for e, n in creates.items()}
        all_seeds = set(seeds) | {s for _, _, v in self.givens for s in _strings_in(v)}
        self.full_state = state
        self.state = (slice_state(domain, state, all_seeds, creates, extra_scans)
                      if slice_rows else state)
        self.uni = Universe.build(domain, self.state, creates,
                                  [(t, v) for _, t, v in self.givens] + list(extra))
        self.given_terms: dict[Sort, list[Term]] = {}
        for s, t, v in self.givens:
            term = self.uni.enc(t, v)
            if term is not None:
                self.given_terms.setdefault(s, []).append(term)
        self.solver = z3.Solver()
        self.templates = [ToolTemplate(self.uni, t, f"T{i}") for i, t in enumerate(self.tools)]
        self._site_tpl: list[list[tuple[Term, Sort, Term]]] = []
        self._leaf_tpl: list[list[tuple[Term, Ty, Term]]] = []
        for tpl in self.templates:
            sites: list[tuple[Term, Sort, Term]] = []
            lv: list[tuple[Term, Ty, Term]] = []
            ret, rty = tpl.enc.ret, tpl.enc.ret_ty
            if ret is not None and rty is not None:
                reveal_sites(domain, tpl.tool.returns, rty, ret, TRUE, sites)
                lv = leaves(domain, ret, rty)
            self._site_tpl.append(sites)
            self._leaf_tpl.append(lv)
        self.steps: list[_Step] = []
        self.states: list[SymState] = [SymState.from_state(self.uni, self.state)]
        self.sites: dict[Sort, list[tuple[Term, Term]]] = {}
        self.leaf_sites: list[tuple[Term, Ty, Term]] = []
        self._lits: dict[str, Term] = {}
        self._unroll()

    # ------------------------------------------------------------ building

    def _known(self, p: Any, arg: Term) -> Term:
        s = param_sort(p)
        if s.always_known:
            return TRUE
        opts = [eq(arg, g) for g in self.given_terms.get(s, [])]
        opts += [and_(gd, eq(arg, v)) for gd, v in self.sites.get(s, [])]
        return or_(*opts)

    def _unroll(self) -> None:
        n = len(self.tools)
        for t in range(self.k):
            act = z3.Bool(f"act{t}")
            sel = z3.Int(f"sel{t}")
            self.solver.add(sel >= 0, sel < n)
            if t > 0:
                self.solver.add(z3.Implies(act, self.steps[-1].act))
            args = [{p.name: self.uni.z3_var(p.ty, f"s{t}.{tool.name}.{p.name}")
                     for p in tool.params.values()} for tool in self.tools]
            self.steps.append(_Step(act, sel, args))
            cur = self.states[-1]
            cur_terms = cur.terms()
            posts: list[list[Term]] = []
            new_sites: list[tuple[Term, Sort, Term]] = []
            new_leaves: list[tuple[Term, Ty, Term]] = []
            for j, (tool, tpl) in enumerate(zip(self.tools, self.templates, strict=True)):
                chosen = and_(act, sel == j)
                extra = [x for g, _, v in self._site_tpl[j] for x in (g, v)]
                extra += [x for g, _, v in self._leaf_tpl[j] for x in (g, v)]
                ok, post, subs = tpl.instantiate(cur, args[j], extra)
                known = [self._known(p, args[j][p.name]) for p in tool.params.values()]
                self.solver.add(implies(chosen, and_(ok, *known)))
                posts.append(post)
                ns = len(self._site_tpl[j])
                for i, (_, s, _) in enumerate(self._site_tpl[j]):
                    new_sites.append((and_(chosen, subs[2 * i]), s, subs[2 * i + 1]))
                for i, (_, ty, _) in enumerate(self._leaf_tpl[j]):
                    new_leaves.append((and_(chosen, subs[2 * (ns + i)]), ty,
                                       subs[2 * (ns + i) + 1]))
            nxt = list(cur_terms)
            for i, old in enumerate(cur_terms):
                writers = [j for j, tpl in enumerate(self.templates) if tpl.changed[i]]
                if not writers:
                    continue
                v = z3.FreshBool("x") if z3.is_bool(old) else z3.FreshInt("x")
                val = old
                for j in reversed(writers):
                    val = ite(and_(act, sel == j), posts[j][i], val)
                self.solver.add(v == val)
                nxt[i] = v
            self.states.append(cur.rebuild(nxt))
            for g, s, v in new_sites:
                self.sites.setdefault(s, []).append((g, v))
            self.leaf_sites.extend(new_leaves)

    # ------------------------------------------------------------ assumptions

    def lit(self, name: str, term: Term) -> Term:
        """A fresh assumption literal implying ``term`` (cached under ``name``)."""
        if name not in self._lits:
            b = z3.FreshBool(name)
            self.solver.add(z3.Implies(b, term))
            self._lits[name] = b
        return self._lits[name]

    def length_is(self, n: int) -> list[Term]:
        """Assumptions: the chain has exactly ``n`` calls."""
        out = []
        if n > 0:
            out.append(self.steps[n - 1].act)
        if n < self.k:
            out.append(z3.Not(self.steps[n].act))
        return out

    def length_below(self, n: int) -> list[Term]:
        """Assumptions: the chain has fewer than ``n`` calls (n ≥ 1)."""
        return [z3.Not(self.steps[n - 1].act)] if n - 1 < self.k else []

    def read_only(self) -> Term:
        """Assumption: every call is a read (a tool without effects)."""
        reads = [j for j, t in enumerate(self.tools) if not t.is_write]
        return self.lit("read_only", and_(*(
            implies(s.act, or_(*(s.sel == j for j in reads))) for s in self.steps)))

    def pinned(self, chain: Sequence[Call], name: str = "pinned") -> Term | None:
        """Assumption: the chain is exactly ``chain`` (None if it cannot be expressed:
        unknown tool, wrong arguments, too long, a value outside the universe)."""
        if len(chain) > self.k:
            return None
        parts: list[Term] = []
        names = [t.name for t in self.tools]
        for t, c in enumerate(chain):
            if c.tool not in names:
                return None
            j = names.index(c.tool)
            tool = self.tools[j]
            if set(c.args) != set(tool.params):
                return None
            parts += [self.steps[t].act, self.steps[t].sel == j]
            for p, v in c.args.items():
                term = self.uni.enc(tool.params[p].ty, v)
                if term is None:
                    return None
                parts.append(eq(self.steps[t].args[j][p], term))
        if len(chain) < self.k:
            parts.append(z3.Not(self.steps[len(chain)].act))
        return self.lit(f"{name}#{len(self._lits)}", and_(*parts))

    # ------------------------------------------------------------ queries

    def goal_term(self, goal: Goal) -> Term:
        """The goal over the final state and knowledge."""
        return goal.build(GoalView(self))

    def check(self, assumptions: Sequence[Term], timeout_ms: int = 5000
              ) -> tuple[Status, z3.ModelRef | None, float]:
        """Check the unrolling under ``assumptions``: (status, model if sat, ms)."""
        self.solver.set("timeout", int(timeout_ms))
        t0 = time.perf_counter()
        r = self.solver.check(*assumptions)
        ms = (time.perf_counter() - t0) * 1000
        if r == z3.sat:
            return "sat", self.solver.model(), ms
        if r == z3.unsat:
            return "unsat", None, ms
        return "unknown", None, ms

    def reason_unknown(self) -> str:
        """Why the last check was inconclusive ('timeout', ...)."""
        r = str(self.solver.reason_unknown())
        return "timeout" if "timeout" in r or "canceled" in r else r

    def extract(self, m: z3.ModelRef) -> list[Call]:
        """The witness chain of a model."""
        out: list[Call] = []
        for s in self.steps:
            if not is_t(m.eval(s.act, model_completion=True)):
                break
            j = m.eval(s.sel, model_completion=True).as_long()
            tool = self.tools[j]
            args = {p.name: self.uni.dec(p.ty, m.eval(s.args[j][p.name], model_completion=True))
                    for p in tool.params.values()}
            out.append(Call(tool=tool.name, args=args))
        return out

    def final_state(self, m: z3.ModelRef) -> State:
        """The final state of a model (universe rows only)."""
        return self.states[-1].decode(self.uni, lambda t: m.eval(t, model_completion=True))

    def state_differs(self, other: State) -> Term:
        """The final state differs from concrete ``other`` on the universe."""
        ref = SymState.from_state(self.uni, other)
        fin = self.states[-1]
        parts: list[Term] = []
        for ent, edef in self.domain.entities.items():
            for i in range(len(self.uni.keys[ent])):
                e1, e2 = fin.exists[ent][i], ref.exists[ent][i]
                diffs = []
                for f, fd in edef.fields.items():
                    a, b = fin.cells[ent][f][i], ref.cells[ent][f][i]
                    if isinstance(fd.ty, ListT):
                        diffs.extend(not_(eq(x, y)) for x, y in zip(a, b, strict=True))
                    else:
                        diffs.append(not_(eq(a, b)))
                parts.append(not_(eq(e1, e2)))
                parts.append(and_(e1, e2, or_(*diffs)))
            n_other = other.counters.get(ent, self.uni.counter0[ent]) - self.uni.counter0[ent]
            parts.append(not_(eq(fin.created[ent], z3.IntVal(n_other))))
        return or_(*parts)

    def restrict(self, st: State) -> State:
        """``st`` restricted to the universe's keys (to compare with decoded states)."""
        tables = {e: {k: dict(r) for k, r in sorted(st.tables.get(e, {}).items())
                      if k in self.uni.index[e]} for e in self.domain.entities}
        return State(tables, dict(st.counters))


def search(domain: Domain, state: State, givens: Iterable[Given], goal: Goal, k: int, *,
           tools: Sequence[str] | None = None, timeout_ms: int = 5000,
           length: int | None = None) -> SearchResult:
    """Is there a chain of at most ``k`` (exactly ``length``, if given) successful calls
    with known arguments after which ``goal`` holds? A witness chain when sat."""
    t0 = time.perf_counter()
    givens = list(givens)
    bmc = Bmc(domain, state, givens, max(k, length or 0), tools=tools, seeds=goal.seeds(),
              extra=goal.typed_values(domain))
    assume = [bmc.lit("goal", bmc.goal_term(goal))]
    if length is not None:
        assume += bmc.length_is(length)
    status, model, _ = bmc.check(assume, timeout_ms)
    chain = bmc.extract(model) if model is not None else None
    reason = bmc.reason_unknown() if status == "unknown" else ""
    return SearchResult(status, chain, (time.perf_counter() - t0) * 1000, reason)


__all__ = ["Bmc", "ChangesGoal", "FnGoal", "Goal", "GoalView", "SearchResult", "parse_sort",
           "reveal_sites", "search", "sort_type", "typed_givens"]

