"""Cone of influence: the rows that any call chain can ever read.

Proofs quantify over every chain of up to k calls, but a chain only ever touches rows it
can *reach*. We keep a row of table E in the slice when

1. its key is a *reachable string* (see below), or
2. E is scanned by a comprehension (or aggregate) whose filter has a *selective*
   conjunct ``x.f == X`` (also ``x.f in X``, ``X in x.f`` for a list field ``f``, or an
   ``or`` of selective disjuncts) on a str/date/id field, reached with only error-free
   conjuncts before it, and the row's ``f`` value is reachable; or
3. E can be written and has a ``unique`` str/date/id field whose value is reachable
   (the uniqueness check compares a touched row with every other row).

A table that is scanned without a selective conjunct, or has a unique field of another
type and can be written, is kept whole. *Reachable strings* V start from the seeds
(givens, goal keys and values, reference-chain arguments), every string literal of the
domain and every id a create can make, and grow with every string (key, field, list
item) of every row added, until nothing changes.

Why this is sound (the slice behaves exactly like the full state for every chain whose
arguments are known values). By induction over the calls: every string an evaluation
produces is a literal, an argument (a given, or a value an earlier output showed, hence
from a sliced row), a field of a sliced row, or a created id — so it is in V. Strings
are never computed (the IR has no string operations). Hence (a) a point read
``E[k]`` reads a sliced row or a row absent from both states; (b) a scan visits a
non-sliced row only up to its selective conjunct, which is false there because the
row's value is not in V while the compared value is, and the conjuncts before it cannot
raise, so the scan's value and failure are the same; (c) a touched row is sliced and the
only rows its unique fields can clash with hold values in V; (d) writes go to sliced
rows, so rows outside the slice never change and final states agree outside it. Ints
are computed, so int fields are never used to select (their tables stay whole when
needed). Error-freedom is syntactic: literals, variables, fields of the loop row (or of
a row behind a *total* reference: a ref field whose targets all exist and cannot be
deleted), and operators over those; no ``min``/``max``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from graphgen import ir
from graphgen.domain import Domain
from graphgen.state import State
from graphgen.types import DATE, STR, ListT, RefT, Ty

Selector = tuple[str, bool]  # (field, is a list field); field "#key" is the key


@dataclass(frozen=True)
class SliceSpec:
    """The static half of slicing for one domain (plus extra scans such as targets)."""

    full: frozenset[str]
    selectors: dict[str, frozenset[Selector]]


def _stringish(t: Ty) -> bool:
    return t in (STR, DATE) or isinstance(t, RefT)


def _mentions(e: ir.Expr, var: str) -> bool:
    return any(isinstance(n, ir.Var) and n.name == var for n in ir.walk(e))


class _Analysis:
    def __init__(self, domain: Domain, state: State) -> None:
        self.domain = domain
        self.state = state
        self.deleted = {s.effect.entity for t in domain.tools.values() for s in t.effects
                        if isinstance(s.effect, ir.Delete)}
        self.total = self._total_refs()
        self.full: set[str] = set()
        self.selectors: dict[str, set[Selector]] = {e: set() for e in domain.entities}

    # ------------------------------------------------------------ total references

    def _total_refs(self) -> set[tuple[str, str]]:
        """Ref fields whose value always names an existing row."""
        writes: dict[tuple[str, str], list[ir.Expr]] = {}
        for t in self.domain.tools.values():
            for s in t.effects:
                eff = s.effect
                if isinstance(eff, ir.Assign):
                    writes.setdefault((eff.entity, eff.field), []).append(eff.value)
                elif isinstance(eff, ir.Create):
                    for f, v in eff.values:
                        writes.setdefault((eff.entity, f), []).append(v)
        cand: set[tuple[str, str]] = set()
        for ent, edef in self.domain.entities.items():
            for f, fd in edef.fields.items():
                if not isinstance(fd.ty, RefT) or fd.ty.entity in self.deleted:
                    continue
                target = self.state.tables.get(fd.ty.entity, {})
                if all(r.get(f) in target for r in self.state.tables.get(ent, {}).values()):
                    cand.add((ent, f))
        changed = True
        while changed:
            changed = False
            for ef in sorted(cand):
                if not all(self._existing(v, cand) for v in writes.get(ef, [])):
                    cand.discard(ef)
                    changed = True
        return cand

    def _existing(self, v: ir.Expr, total: set[tuple[str, str]]) -> bool:
        """``v`` (an id) names an existing row whenever it is written."""
        match v:
            case ir.Var():
                return True  # a parameter (checked), a created id, or a loop row
            case ir.FieldOf(entity=e, field=f):
                return (e, f) in total
            case ir.Lit(value=val, ty=RefT(entity=e)):
                return e not in self.deleted and val in self.state.tables.get(e, {})
            case ir.IfExp(then=a, orelse=b):
                return self._existing(a, total) and self._existing(b, total)
        return False

    # ------------------------------------------------------------ error freedom

    def _safe_key(self, ent: str, k: ir.Expr, loops: frozenset[str]) -> bool:
        match k:
            case ir.Var(name=n):
                # loop rows exist; parameters are checked and bindings created, and stay
                # when the table is never deleted from
                return n in loops or ent not in self.deleted
            case ir.FieldOf(entity=e, key=k2, field=f):
                return (e, f) in self.total and self._safe_key(e, k2, loops)
            case ir.IfExp(cond=c, then=a, orelse=b):
                return (self.error_free(c, loops) and self._safe_key(ent, a, loops)
                        and self._safe_key(ent, b, loops))
        return False

    def error_free(self, e: ir.Expr, loops: frozenset[str]) -> bool:
        """``e`` can never raise (so evaluating it on any row changes nothing)."""
        match e:
            case ir.Lit() | ir.Var():
                return True
            case ir.FieldOf(entity=ent, key=k) | ir.RowOf(entity=ent, key=k):
                return self._safe_key(ent, k, loops) and self.error_free(k, loops)
            case ir.Agg(fn=fn, comp=c):
                return fn not in ("min", "max") and self.error_free(c, loops)
            case ir.Comp(var=v, cond=c, proj=p):
                inner = loops | {v}
                return (c is None or self.error_free(c, inner)) and self.error_free(p, inner)
        return all(self.error_free(x, loops) for x in ir.children(e))

    # ------------------------------------------------------------ scans

    def _loop_field(self, e: ir.Expr, var: str, ent: str) -> Selector | None:
        if isinstance(e, ir.Var) and e.name == var:
            return ("#key", False)
        if (isinstance(e, ir.FieldOf) and e.entity == ent and isinstance(e.key, ir.Var)
                and e.key.name == var):
            fd = self.domain.entities[ent].fields[e.field]
            if isinstance(fd.ty, ListT):
                return (e.field, True) if _stringish(fd.ty.elem) else None
            return (e.field, False) if _stringish(fd.ty) else None
        return None

    def _selective(self, e: ir.Expr, var: str, ent: str, loops: frozenset[str]
                   ) -> set[Selector] | None:
        """Selectors such that a row fails ``e`` (without raising) unless one matches."""
        match e:
            case ir.Compare(op="==", left=a, right=b):
                for x, y in ((a, b), (b, a)):
                    lf = self._loop_field(x, var, ent)
                    if (lf is not None and not lf[1] and not _mentions(y, var)
                            and self.error_free(y, loops)):
                        return {lf}
            case ir.Contains(item=a, container=b, negated=False):
                lf = self._loop_field(a, var, ent)
                if (lf is not None and not lf[1] and not _mentions(b, var)
                        and self.error_free(b, loops)):
                    return {lf}
                lf = self._loop_field(b, var, ent)
                if (lf is not None and lf[1] and not _mentions(a, var)
                        and self.error_free(a, loops)):
                    return {lf}
            case ir.BoolOp(op="and", values=vs):
                return self._first_selective(list(vs), var, ent, loops)
            case ir.BoolOp(op="or", values=vs):
                out: set[Selector] = set()
                for v in vs:
                    sel = self._selective(v, var, ent, loops)
                    if sel is None:
                        return None
                    out |= sel
                return out
        return None

    def _first_selective(self, conj: Sequence[ir.Expr], var: str, ent: str,
                         loops: frozenset[str]) -> set[Selector] | None:
        for c in conj:
            s = self._selective(c, var, ent, loops)
            if s is not None:
                return s
            if not self.error_free(c, loops):
                return None  # a later conjunct may never be reached on other rows
        return None

    def scan(self, c: ir.Comp, loops: frozenset[str]) -> None:
        """Record what scanning ``c.entity`` with ``c``'s filter can reach."""
        inner = loops | {c.var}
        sel = None if c.cond is None else self._first_selective([c.cond], c.var, c.entity,
                                                                inner)
        if sel is None:
            self.full.add(c.entity)
        else:
            self.selectors[c.entity] |= sel

    def visit(self, e: ir.Expr, loops: frozenset[str] = frozenset()) -> None:
        """Find every scan inside ``e``."""
        if isinstance(e, ir.Agg):
            self.visit(e.comp, loops)
            return
        if isinstance(e, ir.Comp):
            self.scan(e, loops)
            inner = loops | {e.var}
            if e.cond is not None:
                self.visit(e.cond, inner)
            self.visit(e.proj, inner)
            return
        for x in ir.children(e):
            self.visit(x, loops)


def analyze(domain: Domain, state: State, extra_scans: Sequence[ir.Comp] = ()) -> SliceSpec:
    """What each table's slice depends on, for ``domain`` (and ``extra_scans``)."""
    a = _Analysis(domain, state)
    touchable: set[str] = set()
    for t in domain.tools.values():
        for c in t.requires:
            a.visit(c.expr)
        for s in t.effects:
            for x in ir.effect_exprs(s.effect):
                a.visit(x)
            if isinstance(s.effect, ir.Assign | ir.ListEdit | ir.Create):
                touchable.add(s.effect.entity)
        if t.returns is not None:
            a.visit(t.returns)
    for scan in extra_scans:
        a.visit(scan)
    for ent in sorted(touchable):
        for f, fd in domain.entities[ent].fields.items():
            if fd.unique:
                if _stringish(fd.ty):
                    a.selectors[ent].add((f, False))
                else:
                    a.full.add(ent)
    return SliceSpec(frozenset(a.full), {e: frozenset(s) for e, s in a.selectors.items()})


def _strings(row: Mapping[str, object]) -> Iterable[str]:
    for v in row.values():
        if isinstance(v, str):
            yield v
        elif isinstance(v, list):
            yield from (x for x in v if isinstance(x, str))


def slice_state(domain: Domain, state: State, seeds: Iterable[str],
                creates: Mapping[str, int] | None = None,
                extra_scans: Sequence[ir.Comp] = ()) -> State:
    """The cone-of-influence slice of ``state`` (same counters, fewer rows).

    ``seeds`` are the strings known from outside the state (givens, goal keys and
    values, chain arguments); ``creates[E]`` is how many E rows a chain may create.
    """
    spec = analyze(domain, state, extra_scans)
    reach: set[str] = {s for s in seeds if isinstance(s, str)}
    for t in domain.tools.values():
        for e in [c.expr for c in t.requires] + [x for s in t.effects
                                                  for x in ir.effect_exprs(s.effect)] + (
                [t.returns] if t.returns is not None else []):
            reach.update(n.value for n in ir.walk(e)
                         if isinstance(n, ir.Lit) and isinstance(n.value, str))
    for c in extra_scans:
        reach.update(n.value for n in ir.walk(c)
                     if isinstance(n, ir.Lit) and isinstance(n.value, str))
    for ent, edef in domain.entities.items():
        n0 = state.counters.get(ent, 1)
        reach.update(edef.make_id(n0 + i) for i in range((creates or {}).get(ent, 0)))
    kept: dict[str, dict[str, dict[str, Any]]] = {e: {} for e in domain.entities}
    for ent in spec.full:
        for k, row in state.tables.get(ent, {}).items():
            kept[ent][k] = row
            reach.add(k)
            reach.update(_strings(row))
    changed = True
    while changed:
        changed = False
        for ent in domain.entities:
            if ent in spec.full:
                continue
            sels = sorted(spec.selectors.get(ent, frozenset()))
            table = state.tables.get(ent, {})
            for k, row in table.items():
                if k in kept[ent]:
                    continue
                hit = k in reach
                for f, is_list in sels:
                    if hit:
                        break
                    v = row.get(f)
                    if is_list:
                        hit = isinstance(v, list) and any(x in reach for x in v)
                    else:
                        hit = v in reach
                if hit:
                    kept[ent][k] = row
                    reach.add(k)
                    reach.update(_strings(row))
                    changed = True
    tables = {e: {k: dict(r) for k, r in sorted(t.items())} for e, t in kept.items()}
    return State(tables, dict(state.counters))


__all__ = ["SliceSpec", "analyze", "slice_state"]
