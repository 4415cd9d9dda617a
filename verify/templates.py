"""Per-tool transitions built once over a symbolic pre-state and instantiated by substitution.

A :class:`ToolTemplate` builds a tool's terms once over a symbolic pre-state (fully
symbolic, or symbolic only where cells can change) and instantiates them for any
concrete or symbolic state.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import z3

from graphgen.domain import ToolDef
from graphgen.verify.calls import encode_call
from graphgen.verify.symstate import SymState
from graphgen.verify.terms import (
    GET_APP_ARG,
    LIT,
    SUBSTITUTE,
    Term,
    made,
    same,
    substitute_all,
    wrap_int,
)
from graphgen.verify.universe import Universe


class Substitution:
    """The C arrays of one substitution (``pairs``: from-term, to-term), built once and
    applied to many terms."""

    def __init__(self, pairs: Sequence[tuple[Term, Term]]) -> None:
        self.n = len(pairs)
        self.src = (z3.Ast * self.n)()
        self.dst = (z3.Ast * self.n)()
        for i, (a, b) in enumerate(pairs):
            self.src[i] = a.ast
            self.dst[i] = b.ast
        self._keep = list(pairs)  # the terms stay alive while the arrays point at them


class ToolTemplate:
    """One tool's transition built once over a fully symbolic pre-state and symbolic
    arguments; :meth:`instantiate` specialises it to any state and arguments."""

    def __init__(
        self,
        uni: Universe,
        tool: ToolDef,
        tag: str = "",
        pre: SymState | None = None,
        variables: Sequence[int] | None = None,
        args: Mapping[str, Term] | None = None,
    ) -> None:
        """``pre``: the pre-state to build over (default: every cell a fresh constant);
        ``variables``: the positions of ``pre`` that are constants to substitute (the
        others must hold in every state the template is instantiated on); ``args``: the
        argument variables (default: fresh ones of this template's own)."""
        self.uni = uni
        self.tool = tool
        tag = tag or tool.name
        self.pre = pre if pre is not None else SymState.fresh(uni, f"{tag}.pre")
        self.args = (
            dict(args)
            if args is not None
            else {p.name: uni.z3_var(p.ty, f"{tag}.{p.name}") for p in tool.params.values()}
        )
        self.call = encode_call(uni, self.pre, tool, self.args)
        self._pre_terms = self.pre.terms()
        self._post_terms = self.call.post.terms()
        self._vars = list(range(len(self._pre_terms))) if variables is None else list(variables)
        # Which positions the call can change: unchanged cells are the very pre terms.
        self.changed = [
            not same(a, b) for a, b in zip(self._pre_terms, self._post_terms, strict=True)
        ]
        self.changed_idx = [i for i, ch in enumerate(self.changed) if ch]
        self._pack_cache: dict[tuple[int, ...], tuple[Term, int]] = {}
        self._pack_bool: dict[tuple[int, ...], list[bool]] = {}
        self._keep: list[list[Term]] = []

    def pairs(self, st: SymState, args: Mapping[str, Term]) -> list[tuple[Term, Term]]:
        """The substitution sending the template's variables to ``st`` and ``args``."""
        return self._pairs(st.terms(), args)

    def _pairs(self, cur: Sequence[Term], args: Mapping[str, Term]) -> list[tuple[Term, Term]]:
        pre = self._pre_terms
        out = [(pre[i], cur[i]) for i in self._vars]
        out.extend((self.args[n], args[n]) for n in self.args)
        return out

    def _packed(self, extra: Sequence[Term]) -> tuple[Term, int]:
        """All outputs as the arguments of one application, so one substitution pass
        shares its cache across them (separate calls re-walk the shared subterms)."""
        key = tuple(id(x) for x in extra)
        hit = self._pack_cache.get(key)
        if hit is not None:
            return hit
        outs = [self.call.ok, *(self._post_terms[i] for i in self.changed_idx), *extra]
        n = len(outs)
        dom = (z3.Sort * n)()
        arr = (z3.Ast * n)()
        for i, t in enumerate(outs):
            dom[i] = t.sort().ast
            arr[i] = t.as_ast()
        ctx = LIT.ctx.ref()
        name = z3.Z3_mk_string_symbol(ctx, f"pack.{self.tool.name}.{n}")
        fd = z3.Z3_mk_func_decl(ctx, name, n, dom, z3.BoolSort().ast)
        app = z3.BoolRef(z3.Z3_mk_app(ctx, fd, n, arr), LIT.ctx)
        self._pack_cache[key] = (app, n)
        self._pack_bool[key] = [isinstance(t, z3.BoolRef) for t in outs]
        self._keep.append(list(extra))  # ids in the cache key stay valid
        return app, n

    def packed(self, extra: Sequence[Term]) -> Term:
        """The application :meth:`unpack` reads: the call's outputs and ``extra`` as the
        arguments of one term, to substitute in one pass (:func:`substitute_together`)."""
        return self._packed(extra)[0]

    def unpack(
        self, inst: Any, extra: Sequence[Term], cur: Sequence[Term]
    ) -> tuple[Term, list[Term], list[Term]]:
        """``(ok, post_terms, extra_terms)`` from ``inst``, the AST of :meth:`packed`
        ``(extra)`` after a substitution sending the template's variables to the state
        ``cur`` (its terms, in :meth:`SymState.terms` order) and to the arguments."""
        n = self._packed(extra)[1]
        bools = self._pack_bool[tuple(id(x) for x in extra)]
        ctx = LIT.ctx.ref()
        subs = []
        for i in range(n):
            a = made(GET_APP_ARG(ctx, inst, i))
            # Bools by hand (is_t/is_f compare pointers); ints as the cached literal
            # or through z3, which makes numerals IntNumRefs that int_const recognises
            subs.append(z3.BoolRef(a, LIT.ctx) if bools[i] else wrap_int(a))
        idx = self.changed_idx
        post = list(cur)
        for i, t in zip(idx, subs[1 : 1 + len(idx)], strict=True):
            post[i] = t
        return subs[0], post, subs[1 + len(idx) :]

    def instantiate(
        self,
        st: SymState,
        args: Mapping[str, Term],
        extra: Sequence[Term] = (),
        terms: Sequence[Term] | None = None,
    ) -> tuple[Term, list[Term], list[Term]]:
        """``(ok, post_terms, extra_terms)`` for ``st``/``args``: post terms in
        :meth:`SymState.terms` order (unchanged positions are ``st``'s own terms), and
        ``extra`` (other terms over the template's variables) substituted likewise.
        ``terms``: ``st.terms()`` if the caller has them."""
        cur = st.terms() if terms is None else terms
        inst = substitute_all([self.packed(extra)], self._pairs(cur, args))[0]
        return self.unpack(inst.as_ast(), extra, cur)


def substitute_together(apps: Sequence[Term], subst: Substitution) -> list[Any]:
    """The ASTs of ``apps`` after ``subst``, all in one pass of z3's substitution, whose
    cache then serves the subterms they share (the templates of one unrolling read the
    same cells at the same argument slots): the list's first item is the substituted
    whole, which keeps the others alive while the caller holds it; ``[None]`` for no
    ``apps``."""
    if not apps:
        return [None]
    ctx = LIT.ctx.ref()
    n = len(apps)
    dom = (z3.Sort * n)()
    arr = (z3.Ast * n)()
    bool_sort = z3.BoolSort(LIT.ctx).ast
    for i, a in enumerate(apps):
        dom[i] = bool_sort
        arr[i] = a.ast
    name = z3.Z3_mk_string_symbol(ctx, f"together.{n}")
    fd = z3.Z3_mk_func_decl(ctx, name, n, dom, bool_sort)
    whole = z3.BoolRef(z3.Z3_mk_app(ctx, fd, n, arr), LIT.ctx)
    inst = z3.BoolRef(made(SUBSTITUTE(ctx, whole.ast, subst.n, subst.src, subst.dst)), LIT.ctx)
    return [inst, *(made(GET_APP_ARG(ctx, inst.ast, i)) for i in range(n))]
