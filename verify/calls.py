"""A tool call as a transition of the symbolic state.

:func:`encode_call` turns a tool into a transition: argument validity, preconditions,
effects in order (functional updates, so everything not written is unchanged),
invariants on touched rows, and the return value; the call is atomic, so callers keep
the pre-state when ``ok`` is false.

Limits (each raises :class:`~graphgen.verify.terms.EncodeError` or is stated where it
applies): a list field must hold a sorted list without repeats (the interpreter's
invariant); storing a list *literal* of several computed items into a field is rejected
(its order and repeats are not representable); appending an item outside the element
universe — only possible for ``list[int]`` fields fed computed ints, which no built-in
domain has — counts as a failure. Ids, strings, dates and enum members are always
inside by construction.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, assert_never

import z3

from graphgen import ir
from graphgen.domain import FieldDef, ToolDef
from graphgen.interp import check_value
from graphgen.types import INT, DecT, EnumT, ListT, OptT, RefT, Ty, strip_opt
from graphgen.verify import strings
from graphgen.verify.evaluator import Evaluator
from graphgen.verify.numbers import bound_term, rescale
from graphgen.verify.symstate import SymState, exists_at, read_field
from graphgen.verify.terms import (
    LIT,
    EncodeError,
    Term,
    and_,
    arith,
    compare,
    eq,
    implies,
    int_val,
    is_f,
    is_t,
    ite,
    not_,
    or_,
)
from graphgen.verify.universe import NONE_VALUE, OUT, Universe
from graphgen.verify.values import ListVal, SymVal, merge


@dataclass
class CallEncoding:
    """A tool call on a symbolic state: ``ok`` (it succeeds), the state after a
    successful call, the return value (on that state) and its type."""

    ok: Term
    post: SymState
    ret: SymVal | None
    ret_ty: Ty | None
    # the defaults are read when a call is encoded: in the scope's context (terms.Z3Scope)
    valid_args: Term = field(default_factory=lambda: LIT.TRUE)
    # The call ran a soft-failure case (``fails: true``): no state change, a result; it is
    # not ``ok`` (tasks and proofs count it as failed), this tells it from a hard failure.
    soft: Term = field(default_factory=lambda: LIT.FALSE)


def _membership(uni: Universe, ent: str, f: str, v: SymVal, where: str) -> tuple[list[Term], Term]:
    """A list value stored into list field ``ent.f``, as membership Bools, and the
    condition under which an item is outside the field's element universe (the store
    then counts as a failure; see :meth:`Universe.field_elements`).

    Stored lists are sets kept sorted; a literal with repeats or out of order would be
    stored as is by the interpreter, which membership cannot represent.
    """
    if not isinstance(v, ListVal):
        raise EncodeError(f"{where}: a list field needs a list value")
    if len(v.items) > 1 and not all(z3.is_int_value(x) for _, x in v.items):
        raise EncodeError(
            f"{where}: storing a list of several computed items is not "
            f"supported (order and repeats cannot be encoded)"
        )
    terms = uni.field_element_terms(ent, f)
    mem = [or_(*(and_(p, eq(x, t)) for p, x in v.items)) for t in terms]
    out = LIT.FALSE
    if (ent, f) in uni.list_elements:
        out = or_(*(and_(p, not_(or_(*(eq(x, t) for t in terms)))) for p, x in v.items))
    return mem, out


def _param_valid(uni: Universe, st: SymState, tool: ToolDef, p: Any, v: Term) -> Term:
    parts = []
    ty = p.ty
    if isinstance(ty, OptT):  # None, or a valid value of the inner type
        inner = _param_valid(uni, st, tool, replace(p, ty=ty.inner), v)
        return or_(eq(v, int_val(NONE_VALUE)), inner)
    if ty == INT or isinstance(ty, DecT):
        if p.min is not None:
            parts.append(compare(">=", v, bound_term(ty, p.min)))
        if p.max is not None:
            parts.append(compare("<=", v, bound_term(ty, p.max)))
    elif isinstance(ty, EnumT):
        parts.append(compare(">=", v, int_val(0)))
        parts.append(compare("<", v, int_val(len(ty.values))))
    elif isinstance(ty, RefT):
        parts.append(exists_at(uni, st, ty.entity, v, uni.param_candidates(tool.name, p)))
    return and_(*parts)


def encode_call(
    uni: Universe, st: SymState, tool: ToolDef, args: Mapping[str, Term]
) -> CallEncoding:
    """The transition of one call of ``tool`` with argument terms ``args`` (one per
    parameter, already of the right z3 sort) on state ``st``."""
    src = uni.domain.source
    env: dict[str, SymVal] = dict(args)
    valid = and_(*(_param_valid(uni, st, tool, p, args[p.name]) for p in tool.params.values()))
    conds: list[Term] = [valid]
    pre = Evaluator(uni, st)  # one memo for every precondition: they read one state
    for i, chk in enumerate(tool.requires):
        pre.where = f"tool {tool.name!r}, requires[{i}]"
        v, err = pre.evaluate(chk.expr, env)
        conds.append(and_(not_(err), v))
    # Cases: the first whose ``when`` holds (on the state after the checks) runs; a
    # ``when`` that raises fails the call if no earlier case applied; no case is a hard
    # failure; a soft failure (``fails``) leaves the state and counts as not ok.
    earlier: Term = LIT.FALSE  # some earlier case applied
    picked: list[tuple[Term, SymState, Term, SymVal | None, bool]] = []
    when_errs: list[Term] = []
    for ci, case in enumerate(tool.branches):
        if case.when is None:
            applies = not_(earlier)
        else:
            pre.where = f"tool {tool.name!r}, cases[{ci}].when"
            wv, werr = pre.evaluate(case.when, env)
            when_errs.append(and_(not_(earlier), werr))
            applies = and_(not_(earlier), not_(werr), wv)
        if is_f(applies):
            continue
        cenv = dict(env)
        cur = st
        touched: dict[str, list[Term]] = {}
        fails: list[Term] = []
        label = f"cases[{ci}].effects" if tool.cases else "effects"
        for i, stmt in enumerate(case.effects):
            where = f"{src}: tool {tool.name!r}, {label}[{i}] ({stmt.source})"
            cur, fail = _apply(uni, cur, stmt.effect, cenv, touched, where, pre)
            fails.append(fail)
        fails.append(not_(_invariants(uni, cur, touched)))
        ret = None
        if case.returns is not None:
            rwhere = f"tool {tool.name!r}, " + (f"cases[{ci}].returns" if tool.cases else "returns")
            ret, rerr = Evaluator(uni, cur, rwhere, pre).evaluate(case.returns, cenv)
            fails.append(rerr)
        picked.append((applies, cur, or_(*fails), ret, case.fails))
        earlier = or_(earlier, applies)
        if is_t(earlier):
            break
    conds.append(earlier)  # some case applies
    conds.extend(not_(w) for w in when_errs)
    post, ret_all = st, None
    soft = LIT.FALSE
    for applies, cur, fail, ret, soft_case in reversed(picked):
        conds.append(implies(applies, not_(fail)))
        if soft_case:
            soft = or_(soft, applies)
        post = merge_states(applies, cur, post)
        ret_all = ret if ret_all is None else merge(applies, ret, ret_all)
    conds.append(not_(soft))
    return CallEncoding(and_(*conds), post, ret_all, tool.return_ty, valid, and_(*conds[:-1], soft))


def merge_states(c: Term, a: SymState, b: SymState) -> SymState:
    """The state ``a`` where ``c`` holds, else ``b`` (cells that are the same object are
    shared, so a case that writes little costs little)."""
    if is_t(c) or a is b:
        return a
    out = b.copy()
    for ent in a.exists:
        if a.exists[ent] is not b.exists[ent]:
            out.exists[ent] = [
                x if x is y else ite(c, x, y)
                for x, y in zip(a.exists[ent], b.exists[ent], strict=True)
            ]
        for f, col in a.cells[ent].items():
            old = b.cells[ent][f]
            if col is old:
                continue
            new_col: list[Any] = []
            for x, y in zip(col, old, strict=True):
                if x is y:
                    new_col.append(x)
                elif isinstance(x, list):
                    new_col.append(
                        [p if p is q else ite(c, p, q) for p, q in zip(x, y, strict=True)]
                    )
                else:
                    new_col.append(ite(c, x, y))
            out.cells[ent] = {**out.cells[ent], f: new_col}
        if a.created[ent] is not b.created[ent]:
            out.created[ent] = ite(c, a.created[ent], b.created[ent])
    return out


def _touch(uni: Universe, touched: dict[str, list[Term]], ent: str, u: int, c: Term) -> None:
    col = touched.setdefault(ent, [LIT.FALSE] * len(uni.keys[ent]))
    col[u] = or_(col[u], c)


def _apply(
    uni: Universe,
    st: SymState,
    eff: ir.Effect,
    env: dict[str, SymVal],
    touched: dict[str, list[Term]],
    where: str,
    pre: Evaluator | None = None,
) -> tuple[SymState, Term]:
    """Apply one effect; return the new state and the condition under which it raises.
    ``pre`` evaluates ``old(...)`` on the state before the call."""
    evaluator = Evaluator(uni, st, where, pre)
    new = st.copy()
    match eff:
        case ir.Assign(entity=ent, key=k, field=f, op=op, value=v):
            key_term, key_err = evaluator.evaluate(k, env)
            value, value_err = evaluator.evaluate(v, env)
            value = strings.index_of(uni, value, where)
            candidates = uni.key_candidates(k, ent)
            fd = uni.domain.entities[ent].fields[f]
            old = st.cells[ent][f]
            col = list(old)
            mem: list[Term] = []
            if isinstance(fd.ty, ListT):
                mem, unrepresentable = _membership(uni, ent, f, value, where)
                value_err = or_(value_err, unrepresentable)
            elif isinstance(strip_opt(fd.ty), DecT):
                # to the field's scale (never fewer places), once: the value is the same
                # for every row the key may name
                value = rescale(value, v.ty, fd.ty)
            for u in candidates:  # a write to any other key fails: its row does not exist
                hit = eq(key_term, uni.index_term(u))
                if is_f(hit):
                    continue
                if isinstance(fd.ty, ListT):
                    col[u] = [ite(hit, m, o) for m, o in zip(mem, old[u], strict=True)]
                else:
                    new_value = (
                        value if op == "=" else arith("+" if op == "+=" else "-", old[u], value)
                    )
                    col[u] = ite(hit, new_value, old[u])
                _touch(uni, touched, ent, u, hit)
            new.cells[ent] = {**new.cells[ent], f: col}
            missing = not_(exists_at(uni, st, ent, key_term, candidates))
            return new, or_(key_err, missing, value_err)
        case ir.ListEdit(entity=ent, key=k, field=f, op=op, value=v):
            key_term, key_err = evaluator.evaluate(k, env)
            value, value_err = evaluator.evaluate(v, env)
            value = strings.index_of(uni, value, where)
            candidates = uni.key_candidates(k, ent)
            fd = uni.domain.entities[ent].fields[f]
            assert isinstance(fd.ty, ListT)
            terms = uni.field_element_terms(ent, f)
            is_item = [eq(value, t) for t in terms]
            old = st.cells[ent][f]
            cur = read_field(uni, st, ent, key_term, f, candidates)
            assert isinstance(cur, ListVal)
            member = or_(*(and_(h, p) for h, (p, _) in zip(is_item, cur.items, strict=True)))
            col = list(old)
            for u in candidates:
                hit = eq(key_term, uni.index_term(u))
                if is_f(hit):
                    continue
                mark = LIT.TRUE if op == "append" else LIT.FALSE
                col[u] = [ite(and_(hit, h), mark, o) for h, o in zip(is_item, old[u], strict=True)]
                _touch(uni, touched, ent, u, hit)
            new.cells[ent] = {**new.cells[ent], f: col}
            # An item outside the element universe cannot be stored: counted as a failure
            # (documented limit; ids and strings are always inside by construction).
            bad = member if op == "append" else not_(member)
            unrep = not_(or_(*is_item)) if op == "append" else LIT.FALSE
            missing = not_(exists_at(uni, st, ent, key_term, candidates))
            return new, or_(key_err, missing, value_err, bad, unrep)
        case ir.Create(entity=ent, bind=b, values=vs, key=given):
            if given is not None:
                # A named key would have to join the entity's id universe from every value
                # the argument can take; until that is encoded the proof is refused, so a
                # task that needs this tool is rejected, never accepted unproven.
                raise EncodeError(
                    f"{where}: {ent}.create(...) names its key, which the proofs do not encode"
                )
            edef = uni.domain.entities[ent]
            vals: dict[str, tuple[SymVal, Term]] = {f: evaluator.evaluate(x, env) for f, x in vs}
            for f, x in vs:
                vals[f] = (strings.index_of(uni, vals[f][0], where), vals[f][1])
                fty = edef.fields[f].ty
                if isinstance(strip_opt(fty), DecT):  # to the field's scale (never fewer places)
                    vals[f] = (rescale(vals[f][0], x.ty, fty), vals[f][1])
            mems: dict[str, list[Term]] = {}
            for f, fd in edef.fields.items():
                if isinstance(fd.ty, ListT):
                    mems[f], unrep = _membership(uni, ent, f, vals[f][0], where)
                    vals[f] = (vals[f][0], or_(vals[f][1], unrep))
            c = st.created[ent]
            made = uni.created[ent]
            ex = list(st.exists[ent])
            cols = {f: list(st.cells[ent][f]) for f in edef.fields}
            conds = []
            bind: Term = int_val(OUT)
            for i in range(len(made) - 1, -1, -1):
                cond = eq(c, uni.index_term(i))
                if is_f(cond):
                    continue
                conds.append(cond)
                u = uni.index[ent][made[i]]
                ex[u] = ite(cond, LIT.TRUE, ex[u])
                for f, fd in edef.fields.items():
                    if isinstance(fd.ty, ListT):
                        cols[f][u] = [
                            ite(cond, m, o) for m, o in zip(mems[f], cols[f][u], strict=True)
                        ]
                    else:
                        cols[f][u] = ite(cond, vals[f][0], cols[f][u])
                _touch(uni, touched, ent, u, cond)
                bind = ite(cond, uni.index_term(u), bind)
            new.exists[ent] = ex
            new.cells[ent] = cols
            new.created[ent] = arith("+", c, int_val(1))
            if b is not None:
                env[b] = bind
            # Running out of prepared ids is a failure; universes are sized so that no
            # chain within the bound can (k calls times creates per call).
            return new, or_(*(err for _, err in vals.values()), not_(or_(*conds)))
        case ir.Delete(entity=ent, key=k):
            key_term, key_err = evaluator.evaluate(k, env)
            candidates = uni.key_candidates(k, ent)
            ex = list(st.exists[ent])
            for u in candidates:
                hit = eq(key_term, uni.index_term(u))
                if not is_f(hit):
                    ex[u] = ite(hit, LIT.FALSE, ex[u])
            new.exists[ent] = ex
            return new, or_(key_err, not_(exists_at(uni, st, ent, key_term, candidates)))
        case _:
            assert_never(eff)


def within_bounds(fd: FieldDef, v: Term) -> list[Term]:
    """The cell ``v`` of field ``fd`` within the field's ``min`` and ``max``: one
    condition per bound, each true for an absent optional value."""
    absent = eq(v, int_val(NONE_VALUE)) if isinstance(fd.ty, OptT) else LIT.FALSE
    out: list[Term] = []
    if fd.min is not None:
        out.append(or_(absent, compare(">=", v, bound_term(strip_opt(fd.ty), fd.min))))
    if fd.max is not None:
        out.append(or_(absent, compare("<=", v, bound_term(strip_opt(fd.ty), fd.max))))
    return out


def _invariants(uni: Universe, st: SymState, touched: dict[str, list[Term]]) -> Term:
    """Bounds and uniqueness on every touched row that still exists (all its fields)."""
    parts: list[Term] = []
    for ent, col in touched.items():
        edef = uni.domain.entities[ent]
        bounded = [fd for fd in edef.fields.values() if fd.min is not None or fd.max is not None]
        unique = [fd for fd in edef.fields.values() if fd.unique]
        if not bounded and not unique:
            continue
        ex = st.exists[ent]
        for u, t in enumerate(col):
            if is_f(t):
                continue
            conds = []
            for fd in bounded:
                conds += within_bounds(fd, st.cells[ent][fd.name][u])
            for fd in unique:
                v = st.cells[ent][fd.name][u]
                absent = eq(v, int_val(NONE_VALUE)) if isinstance(fd.ty, OptT) else LIT.FALSE
                for u2, x2 in enumerate(ex):
                    if u2 != u and not is_f(x2):
                        clash = eq(v, st.cells[ent][fd.name][u2])
                        conds.append(implies(x2, or_(absent, not_(clash))))
            parts.append(implies(and_(t, ex[u]), and_(*conds)))
    return and_(*parts)


def static_arg_error(
    tool: ToolDef, args: Mapping[str, Any], int_keys: Collection[str] | None = None
) -> str | None:
    """The state-independent part of check_args (names and types), or None.
    ``int_keys``: the domain's entities with int ids (:func:`graphgen.interp.check_value`)."""
    if not isinstance(args, Mapping):
        return "arguments must be an object"
    required = {n for n, p in tool.params.items() if not p.has_default}
    if not required <= set(args) <= set(tool.params):
        return "unknown or missing arguments"
    for name, p in tool.params.items():
        if name not in args:
            continue
        why = check_value(p.ty, args[name], int_keys)
        if why:
            return f"{name} must be {why}"
    return None


def creates_per_call(tool: ToolDef) -> dict[str, int]:
    """How many rows of each entity one call of ``tool`` creates."""
    out: dict[str, int] = {}
    for s in tool.effects:  # every case's creates: an upper bound for any one call
        match s.effect:
            case ir.Create(entity=ent):
                out[ent] = out.get(ent, 0) + 1
            case ir.Assign() | ir.ListEdit() | ir.Delete():
                pass
            case _:
                assert_never(s.effect)
    return out
