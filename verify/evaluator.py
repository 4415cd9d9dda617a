"""IR expressions on a symbolic state: every expression evaluates to ``(value, err)``.

``err`` is true exactly when the interpreter would raise a ToolError (a missing row,
``min``/``max`` over nothing), respecting short-circuit evaluation.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import fields
from typing import Any, assert_never

from graphgen import ir
from graphgen.ir import free_vars
from graphgen.today import DEFAULT_TODAY
from graphgen.types import BOOL, STR, DecT, ListT, MapT, RecordT, RefT, RowT, scale_of, strip_opt
from graphgen.verify import strings
from graphgen.verify.numbers import rescale, round_terms
from graphgen.verify.symstate import SymState, exists_at, read_field
from graphgen.verify.terms import (
    LIT,
    EncodeError,
    Term,
    and_,
    arith,
    compare,
    count,
    eq,
    implies,
    int_val,
    is_f,
    ite,
    not_,
    or_,
)
from graphgen.verify.universe import NONE_VALUE, OUT, Universe, date_ordinal
from graphgen.verify.values import ListVal, MapVal, RecVal, RowVal, SymVal, merge, sym_eq

_CANON: dict[int, tuple[ir.Expr, int]] = {}
_CANON_IDS: dict[tuple[Any, ...], int] = {}


def canon(e: ir.Expr) -> int:
    """A number per *structure*: structurally equal expressions (written twice in a
    tool, say) get the same one, memoised per node."""
    hit = _CANON.get(id(e))
    if hit is not None and hit[0] is e:
        return hit[1]
    match e:
        case (
            ir.Lit()
            | ir.Var()
            | ir.FieldOf()
            | ir.RowOf()
            | ir.Exists()
            | ir.Compare()
            | ir.BoolOp()
            | ir.Not()
            | ir.Arith()
            | ir.Neg()
            | ir.Contains()
            | ir.Len()
            | ir.ListLit()
            | ir.Comp()
            | ir.Agg()
            | ir.IfExp()
            | ir.DictLit()
            | ir.IsNone()
            | ir.Old()
            | ir.DictComp()
            | ir.Round()
            | ir.StrOp()
            | ir.Index()
            | ir.Today()
        ):
            # Each of these is a frozen dataclass whose fields are sub-expressions, tuples
            # of sub-expressions, or plain values: its fields spell out its structure. A
            # new node must be checked against that before it joins this arm.
            parts = _structure(e)
        case _:
            assert_never(e)
    out = _CANON_IDS.setdefault(parts, len(_CANON_IDS))
    _CANON[id(e)] = (e, out)
    return out


def _structure(e: ir.Expr) -> tuple[Any, ...]:
    """The node's class and fields, sub-expressions replaced by their :func:`canon`."""
    parts: list[Any] = [type(e).__name__]
    for f in fields(e):  # type: ignore[arg-type]
        v = getattr(e, f.name)
        if isinstance(v, ir.Expr):
            parts.append(("e", canon(v)))
        elif isinstance(v, tuple) and v and isinstance(v[0], ir.Expr):
            parts.append(("t", *(canon(x) for x in v)))
        else:
            parts.append((type(v).__name__, v))  # 1 and True hash alike
    return tuple(parts)


class Evaluator:
    """Evaluates IR expressions to ``(value, err)`` on one symbolic state.

    One evaluator serves one environment of parameters and bindings; sub-expressions
    that do not read a comprehension variable are evaluated once (``Order[o].user_id``
    inside a scan over every row is the same term on every row), and so are
    structurally equal ones (the same lookup written in two preconditions).
    """

    def __init__(
        self, uni: Universe, st: SymState, where: str = "", old: Evaluator | None = None
    ) -> None:
        self.uni = uni
        self.st = st
        self.where = where
        # the evaluator of the state before the call's effects, read by ``old(...)``;
        # None where there is no earlier state (preconditions: ``old(x)`` is ``x``)
        self.old = old
        self._active: set[str] = set()
        self._memo: dict[int, tuple[SymVal, Term]] = {}

    def fail(self, msg: str) -> EncodeError:
        return EncodeError(f"{self.uni.domain.source}: {self.where}: {msg}")

    def evaluate(self, e: ir.Expr, env: Mapping[str, SymVal]) -> tuple[SymVal, Term]:
        """The value of ``e`` and the condition under which evaluating it raises."""
        if isinstance(e, ir.Lit | ir.Var):
            return self._evaluate_node(e, env)
        if self._active and free_vars(e) & self._active:
            return self._evaluate_node(e, env)
        c = canon(e)
        hit = self._memo.get(c)
        if hit is not None:
            return hit
        r = self._evaluate_node(e, env)
        self._memo[c] = r
        return r

    def _evaluate_node(self, e: ir.Expr, env: Mapping[str, SymVal]) -> tuple[SymVal, Term]:
        uni, st = self.uni, self.st
        match e:
            case ir.Lit(value=v, ty=t):
                term = uni.encode_value(t, v)
                if term is None:
                    if isinstance(t, RefT):
                        return int_val(OUT), LIT.FALSE
                    raise self.fail(f"literal {v!r} cannot be encoded")
                return term, LIT.FALSE
            case ir.Var(name=n):
                if n not in env:
                    raise self.fail(f"unbound name {n!r}")
                return env[n], LIT.FALSE
            case ir.FieldOf(entity=ent, key=k, field=f):
                kv, ke = self.evaluate(k, env)
                candidates = uni.key_candidates(k, ent)
                miss = not_(exists_at(uni, st, ent, kv, candidates))
                return read_field(uni, st, ent, kv, f, candidates), or_(ke, miss)
            case ir.RowOf(entity=ent, key=k):
                kv, ke = self.evaluate(k, env)
                candidates = uni.key_candidates(k, ent)
                miss = not_(exists_at(uni, st, ent, kv, candidates))
                fields = {
                    f: read_field(uni, st, ent, kv, f, candidates)
                    for f in uni.domain.entities[ent].fields
                }
                return RowVal(ent, kv, fields), or_(ke, miss)
            case ir.Exists(entity=ent, key=k):
                kv, ke = self.evaluate(k, env)
                return exists_at(uni, st, ent, kv, uni.key_candidates(k, ent)), ke
            case ir.Compare(op=op, left=a, right=b):
                x, ex = self.evaluate(a, env)
                y, ey = self.evaluate(b, env)
                x, y = strings.index_of(uni, x, self.where), strings.index_of(uni, y, self.where)
                if op in ("==", "!=") and a.ty == STR and b.ty == STR:
                    mapped = strings.equal(uni, x, y, self.where)
                    if mapped is not None:
                        return (mapped if op == "==" else not_(mapped)), or_(ex, ey)
                if isinstance(strip_opt(a.ty), DecT) or isinstance(strip_opt(b.ty), DecT):
                    top = max(scale_of(a.ty), scale_of(b.ty))
                    x, y = rescale(x, a.ty, top), rescale(y, b.ty, top)
                if op == "==":
                    r = sym_eq(x, y)
                elif op == "!=":
                    r = not_(sym_eq(x, y))
                else:
                    r = compare(op, x, y)
                return r, or_(ex, ey)
            case ir.BoolOp(op=op, values=vs):
                # Short-circuit: a later operand is evaluated (and may raise) only when
                # every earlier one let evaluation continue.
                vals: list[Term] = []
                errs: list[Term] = []
                for sub in vs:
                    v, err = self.evaluate(sub, env)
                    errs.append(
                        and_(*vals, err) if op == "and" else and_(*(not_(x) for x in vals), err)
                    )
                    vals.append(v)
                return (and_(*vals) if op == "and" else or_(*vals)), or_(*errs)
            case ir.Not(operand=o):
                v, err = self.evaluate(o, env)
                return not_(v), err
            case ir.Arith(op=op, left=a, right=b):
                x, ex = self.evaluate(a, env)
                y, ey = self.evaluate(b, env)
                if isinstance(e.ty, DecT) and op != "*":  # a product's scales add up
                    x, y = rescale(x, a.ty, e.ty), rescale(y, b.ty, e.ty)
                return arith(op, x, y), or_(ex, ey)
            case ir.Neg(operand=o):
                v, err = self.evaluate(o, env)
                return arith("-", int_val(0), v), err
            case ir.Contains(item=a, container=b, negated=neg):
                x, ex = self.evaluate(a, env)
                lst, el = self.evaluate(b, env)
                if not isinstance(lst, ListVal):
                    raise self.fail("'in' needs a list")
                r = or_(*(and_(p, sym_eq(y, x)) for p, y in lst.items))
                return (not_(r) if neg else r), or_(ex, el)
            case ir.Len(operand=o):
                lst, err = self.evaluate(o, env)
                if not isinstance(lst, ListVal):
                    raise self.fail("len() needs a list")
                return count([p for p, _ in lst.items]), err
            case ir.ListLit(items=items):
                out = []
                errs = []
                for it in items:
                    v, err = self.evaluate(it, env)
                    out.append((LIT.TRUE, v))
                    errs.append(err)
                return ListVal(out), or_(*errs)
            case ir.Comp():
                items2, err = self.comp(e, env)
                return ListVal(items2), err
            case ir.Agg(fn=fn, comp=c):
                return self.agg(fn, c, env)
            case ir.IfExp(cond=c, then=t, orelse=o):
                cv, ce = self.evaluate(c, env)
                tv, te = self.evaluate(t, env)
                ov, oe = self.evaluate(o, env)
                if isinstance(strip_opt(e.ty), DecT):
                    tv, ov = rescale(tv, t.ty, e.ty), rescale(ov, o.ty, e.ty)
                return merge(cv, tv, ov), or_(ce, and_(cv, te), and_(not_(cv), oe))
            case ir.DictLit(keys=ks, values=vs):
                rec: dict[str, SymVal] = {}
                errs = []
                for name, sub in zip(ks, vs, strict=True):
                    v, err = self.evaluate(sub, env)
                    rec[name] = v
                    errs.append(err)
                return RecVal(rec), or_(*errs)
            case ir.IsNone(operand=o, negated=neg):
                v, err = self.evaluate(o, env)
                r = eq(v, int_val(NONE_VALUE))
                return (not_(r) if neg else r), err
            case ir.Old(operand=o):
                before = self.old
                if before is None:
                    return self.evaluate(o, env)
                # The loop variables active here are active there too, so its memo never
                # keeps a value that depends on the row being visited.
                saved = before._active
                before._active = saved | self._active
                try:
                    return before.evaluate(o, env)
                finally:
                    before._active = saved
            case ir.Index(operand=xs, index=i):
                return self.index(e, xs, i, env)
            case ir.Today():
                # the initial state's today: no call changes it, so one constant serves
                # every step of a chain
                return int_val(date_ordinal(uni.today or DEFAULT_TODAY)), LIT.FALSE
            case ir.DictComp(comp=c):
                # Two scans of the same rows in the same order: the ids, then the values.
                ids = ir.Comp(c.var, c.entity, c.cond, ir.Var(c.var, RefT(c.entity)), c.ty)
                keys, _ = self.comp(ids, env)
                vals, err = self.comp(c, env)
                kv = zip(keys, vals, strict=True)
                return MapVal(c.entity, [(p, k, v) for (p, k), (_, v) in kv]), err
            case ir.Round(num=a, den=b, places=places, mode=mode):
                x, ex = self.evaluate(a, env)
                if b is None:
                    y, ey, sd = int_val(1), LIT.FALSE, 0
                else:
                    y, ey = self.evaluate(b, env)
                    sd = scale_of(b.ty)
                # (x / 10^sa) / (y / 10^sd) * 10^places = x * 10^(sd + places - sa) / y
                shift = sd + places - scale_of(a.ty)
                if shift < 0:
                    y = arith("*", y, int_val(10**-shift))
                    shift = 0
                zero = eq(y, int_val(0))
                value = round_terms(x, ite(zero, int_val(1), y), shift, mode)
                return value, or_(ex, ey, zero)
            case ir.StrOp(op=op, args=args):
                vals = [self.evaluate(a, env) for a in args]
                where = f"{self.uni.domain.source}: {self.where}"
                pairs = [(v, a.ty) for (v, _), a in zip(vals, args, strict=True)]
                return strings.evaluate(uni, op, pairs, where), or_(*(err for _, err in vals))
            case _:
                assert_never(e)

    def comp(self, c: ir.Comp, env: Mapping[str, SymVal]) -> tuple[list[tuple[Term, SymVal]], Term]:
        """The guarded items of a comprehension, rows in key order, and its error."""
        items: list[tuple[Term, SymVal]] = []
        errs: list[Term] = []
        inner = dict(env)
        shadowed = c.var in self._active
        self._active.add(c.var)
        try:
            self._scan(c, inner, items, errs)
        finally:
            if not shadowed:
                self._active.discard(c.var)
        return items, or_(*errs)

    def _scan(
        self,
        c: ir.Comp,
        inner: dict[str, SymVal],
        items: list[tuple[Term, SymVal]],
        errs: list[Term],
    ) -> None:
        for i, ex in enumerate(self.st.exists[c.entity]):
            if is_f(ex):
                continue
            inner[c.var] = self.uni.index_term(i)
            if c.cond is None:
                cv, ce = LIT.TRUE, LIT.FALSE
            else:
                cv, ce = self.evaluate(c.cond, inner)
            pv, pe = self.evaluate(c.proj, inner)
            take = and_(ex, cv)
            items.append((take, pv))
            errs.append(and_(ex, ce))
            errs.append(and_(take, pe))

    def index(
        self, e: ir.Index, xs: ir.Expr, i: ir.Expr, env: Mapping[str, SymVal]
    ) -> tuple[SymVal, Term]:
        """Item ``i`` of a guarded list: the present item whose position (among present
        items) is ``i``, or ``len + i`` for a negative ``i``; an error when there is none."""
        lst, el = self.evaluate(xs, env)
        iv, ie = self.evaluate(i, env)
        if not isinstance(lst, ListVal):
            raise self.fail("indexing needs a list")
        total = count([p for p, _ in lst.items])
        idx = ite(compare("<", iv, int_val(0)), arith("+", total, iv), iv)
        inside = and_(compare(">=", idx, int_val(0)), compare("<", idx, total))
        if not lst.items:
            if e.ty == BOOL:
                return LIT.FALSE, or_(el, ie, LIT.TRUE)
            if isinstance(e.ty, ListT | RowT | RecordT | MapT):
                raise self.fail("indexing a list that is always empty")
            return int_val(0), or_(el, ie, LIT.TRUE)
        value = lst.items[-1][1]  # any value: it is never read where the index is outside
        for k in range(len(lst.items) - 1, -1, -1):
            p, x = lst.items[k]
            at = and_(p, sym_eq(count([q for q, _ in lst.items[:k]]), idx))
            value = merge(at, x, value)
        return value, or_(el, ie, not_(inside))

    def agg(self, fn: str, c: ir.Comp, env: Mapping[str, SymVal]) -> tuple[SymVal, Term]:
        items, err = self.comp(c, env)
        if fn == "any":
            return or_(*(and_(p, v) for p, v in items)), err
        if fn == "all":
            return and_(*(implies(p, v) for p, v in items)), err
        if fn == "count":
            return count([p for p, _ in items]), err
        if fn == "sum":
            parts = [ite(p, v, int_val(0)) for p, v in items]
            total = int_val(0)
            for x in parts:
                total = arith("+", total, x)
            return total, err
        # min / max: over no rows the interpreter raises
        best: Term = int_val(0)
        seen: Term = LIT.FALSE
        for p, v in items:
            better = compare("<" if fn == "min" else ">", v, best)
            take = and_(p, or_(not_(seen), better))
            best = ite(take, v, best)
            seen = or_(seen, p)
        return best, or_(err, not_(seen))
