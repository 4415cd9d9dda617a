"""Concrete call chains run through the encoding, to test it against the interpreter."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import z3

from graphgen.domain import Domain
from graphgen.state import State
from graphgen.strings import text_of
from graphgen.types import BOOL, ListT, MapT, RecordT, RefT, Ty, strip_opt
from graphgen.verify.calls import creates_per_call, encode_call, static_arg_error
from graphgen.verify.strings import TextChoice, TextVal
from graphgen.verify.symstate import SymState
from graphgen.verify.templates import ToolTemplate
from graphgen.verify.terms import EncodeError, Term, is_f, is_t
from graphgen.verify.universe import Universe
from graphgen.verify.values import ListVal, MapVal, RecVal, RowVal, SymVal


def run_concrete(
    domain: Domain,
    state: State,
    calls: Sequence[tuple[str, Mapping[str, Any]]],
    *,
    via_template: bool = False,
    outputs: list[Any] | None = None,
) -> tuple[list[bool], State]:
    """Run a chain through the encoding with concrete tools and arguments.

    Failing calls leave the state unchanged (atomic), as in the interpreter. Returns the
    success of every call and the final state (universe rows only). ``via_template``
    instantiates the symbolic per-tool templates instead of encoding each call directly,
    so both encodings can be tested against the interpreter. With ``outputs``, the
    encoded result of every call is appended to it, in the interpreter's JSON form
    (:func:`decode_output`; None for a failed call): what the proofs read as shown.
    """
    creates: dict[str, int] = {}
    extra: list[tuple[Ty, Any]] = []
    for name, args in calls:
        tool = domain.tools.get(name)
        if tool is None:
            continue
        for e, n in creates_per_call(tool).items():
            creates[e] = creates.get(e, 0) + n
        if static_arg_error(tool, args, domain.int_keys) is None:
            extra.extend((tool.params[p].ty, v) for p, v in tool.full_args(args).items())
    uni = Universe.build(domain, state, creates, extra)
    st = SymState.from_state(uni, state)
    templates: dict[str, ToolTemplate] = {}
    oks: list[bool] = []
    for name, args in calls:
        tool = domain.tools.get(name)
        if tool is None or static_arg_error(tool, args, domain.int_keys) is not None:
            oks.append(False)
            if outputs is not None:
                outputs.append(None)
            continue
        full = tool.full_args(args)
        terms = {p: uni.encode_arg(tool.params[p].ty, v) for p, v in full.items()}
        if via_template:
            tpl = templates.get(name) or templates.setdefault(name, ToolTemplate(uni, tool))
            shown = _terms(tpl.call.ret) if outputs is not None else []
            ok, post_terms, shown = tpl.instantiate(st, terms, shown)
            ok = z3.simplify(ok)
            post = st.rebuild([z3.simplify(t) for t in post_terms])
            ret = _with_terms(tpl.call.ret, iter(shown)) if outputs is not None else None
        else:
            encoded = encode_call(uni, st, tool, terms)
            ok = z3.simplify(encoded.ok)
            post = encoded.post.rebuild([z3.simplify(t) for t in encoded.post.terms()])
            ret = encoded.ret
        if not (is_t(ok) or is_f(ok)):
            raise EncodeError(f"call {name}: validity did not reduce to a constant: {ok}")
        oks.append(is_t(ok))
        if outputs is not None:
            out = None
            if is_t(ok):  # a case that returns nothing answers "ok", as the interpreter
                ty = tool.return_ty
                out = "ok" if ret is None or ty is None else decode_output(uni, ret, ty, name)
            outputs.append(out)
        if is_t(ok):
            st = post
    return oks, st.decode(uni)


def _terms(v: SymVal) -> list[Term]:
    """Every term of an encoded value, in the order :func:`_with_terms` consumes them."""
    if v is None:
        return []
    if isinstance(v, ListVal):
        return [t for p, x in v.items for t in (p, *_terms(x))]
    if isinstance(v, RowVal):
        return [v.key, *(t for x in v.fields.values() for t in _terms(x))]
    if isinstance(v, RecVal):
        return [t for x in v.fields.values() for t in _terms(x)]
    if isinstance(v, MapVal):
        return [t for p, k, x in v.items for t in (p, k, *_terms(x))]
    if isinstance(v, TextChoice):
        return [t for g, x in v.choices for t in (g, *_terms(x))]
    if isinstance(v, TextVal):
        return [t for t, _ in v.parts]
    return [v]


def _with_terms(v: SymVal, it: Iterator[Term]) -> SymVal:
    """``v`` with its terms (in :func:`_terms` order) replaced by the next of ``it``."""
    if v is None:
        return None
    if isinstance(v, ListVal):
        return ListVal([(next(it), _with_terms(x, it)) for _, x in v.items])
    if isinstance(v, RowVal):
        key = next(it)
        return RowVal(v.entity, key, {f: _with_terms(x, it) for f, x in v.fields.items()})
    if isinstance(v, RecVal):
        return RecVal({f: _with_terms(x, it) for f, x in v.fields.items()})
    if isinstance(v, MapVal):
        return MapVal(v.entity, [(next(it), next(it), _with_terms(x, it)) for *_, x in v.items])
    if isinstance(v, TextChoice):
        return TextChoice([(next(it), _with_terms(x, it)) for _, x in v.choices])
    if isinstance(v, TextVal):
        return TextVal([(next(it), ty) for _, ty in v.parts], None)
    return next(it)


def _holds(t: Term, where: str) -> bool:
    c = z3.simplify(t)
    if not (is_t(c) or is_f(c)):
        raise EncodeError(f"{where}: a guard of the output did not reduce to a constant: {c}")
    return is_t(c)


def decode_output(uni: Universe, v: SymVal, ty: Ty, where: str = "output") -> Any:
    """The Python value of an encoded output on a concrete state and arguments, in the
    form the interpreter returns it (decimals as JSON text, rows with their key, texts
    written out): items whose guard is false are left out, a text that differs by case
    is the one whose guard holds."""
    if isinstance(v, TextChoice):
        for g, x in v.choices:
            if _holds(g, where):
                return decode_output(uni, x, ty, where)
        raise EncodeError(f"{where}: no message of the output applies")
    if isinstance(v, TextVal):
        return "".join(text_of(uni.decode_value(pty, z3.simplify(t)), pty) for t, pty in v.parts)
    shape = strip_opt(ty)
    if isinstance(v, ListVal):
        assert isinstance(shape, ListT)
        return [decode_output(uni, x, shape.elem, where) for p, x in v.items if _holds(p, where)]
    if isinstance(v, RowVal):
        edef = uni.domain.entities[v.entity]
        row = {edef.key: decode_output(uni, v.key, RefT(v.entity), where)}
        for f, x in v.fields.items():
            row[f] = decode_output(uni, x, edef.fields[f].ty, where)
        return row
    if isinstance(v, RecVal):
        assert isinstance(shape, RecordT)
        types = dict(shape.fields)
        return {f: decode_output(uni, x, types[f], where) for f, x in v.fields.items()}
    if isinstance(v, MapVal):
        assert isinstance(shape, MapT)
        return {
            decode_output(uni, k, shape.key, where): decode_output(uni, x, shape.value, where)
            for p, k, x in v.items
            if _holds(p, where)
        }
    if ty == BOOL:
        return _holds(v, where)
    return uni.decode_value(ty, z3.simplify(v))
