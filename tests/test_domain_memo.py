"""per_domain/per_tool: spec facts are computed once per loaded domain, and a domain
built from another (or a tool not in the domain) never sees a stale answer."""

from __future__ import annotations

import dataclasses

from graphgen.domains import load_builtin
from graphgen.footprint import cells_read


def test_a_tool_fact_is_computed_once_and_not_shared_with_a_changed_domain() -> None:
    dom = load_builtin("mock")
    # a tool whose checks read cells its effects and result do not
    name = next(n for n, t in sorted(dom.tools.items()) if t.requires and t.is_write)
    tool = dom.tools[name]
    first = cells_read(dom, tool)
    assert cells_read(dom, tool) is first  # memoised on the domain
    assert any(k[1] == name for k in dom.derived if isinstance(k, tuple))

    # a domain made from this one starts empty: its tools may differ
    other = dataclasses.replace(dom, tools=dict(dom.tools))
    assert other.derived == {}
    assert cells_read(other, tool) == first

    # a tool of the same name that is not the domain's own is computed, never memoised
    lookalike = dataclasses.replace(tool, requires=())
    assert cells_read.__wrapped__(dom, lookalike) != first  # type: ignore[attr-defined]
    before = dict(dom.derived)
    assert cells_read(dom, lookalike) == cells_read.__wrapped__(dom, lookalike)  # type: ignore[attr-defined]
    assert dom.derived == before
