"""Concrete call chains run through the encoding, to test it against the interpreter."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import z3

from graphgen.domain import Domain
from graphgen.state import State
from graphgen.types import Ty
from graphgen.verify.calls import creates_per_call, encode_call, static_arg_error
from graphgen.verify.symstate import SymState
from graphgen.verify.templates import ToolTemplate
from graphgen.verify.terms import EncodeError, is_f, is_t
from graphgen.verify.universe import Universe


def run_concrete(
    domain: Domain,
    state: State,
    calls: Sequence[tuple[str, Mapping[str, Any]]],
    *,
    via_template: bool = False,
) -> tuple[list[bool], State]:
    """Run a chain through the encoding with concrete tools and arguments.

    Failing calls leave the state unchanged (atomic), as in the interpreter. Returns the
    success of every call and the final state (universe rows only). ``via_template``
    instantiates the symbolic per-tool templates instead of encoding each call directly,
    so both encodings can be tested against the interpreter.
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
            continue
        full = tool.full_args(args)
        terms = {p: uni.encode_arg(tool.params[p].ty, v) for p, v in full.items()}
        if via_template:
            tpl = templates.get(name) or templates.setdefault(name, ToolTemplate(uni, tool))
            ok, post_terms, _ = tpl.instantiate(st, terms)
            ok = z3.simplify(ok)
            post = st.rebuild([z3.simplify(t) for t in post_terms])
        else:
            encoded = encode_call(uni, st, tool, terms)
            ok = z3.simplify(encoded.ok)
            post = encoded.post.rebuild([z3.simplify(t) for t in encoded.post.terms()])
        if not (is_t(ok) or is_f(ok)):
            raise EncodeError(f"call {name}: validity did not reduce to a constant: {ok}")
        oks.append(is_t(ok))
        if is_t(ok):
            st = post
    return oks, st.decode(uni)
