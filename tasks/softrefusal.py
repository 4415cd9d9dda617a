"""Refusals whose true reason is a soft failure.

A tool with a ``fails: true`` case refuses some calls without raising: it returns a
value (``{'success': False, 'message': 'The visit is today or past.'}``) and changes
nothing. Asked for such a call, the agent must not pretend it happened, and the reason
it can give is the message the tool returned — it sees that message by making the call,
which changes nothing. The generator (``Expander.refusal``) and the gate
(``dryrun.check_candidate``) both take the reason from :func:`soft_reason`, so they
cannot disagree on it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from graphgen.domain import Domain
from graphgen.errors import ToolError
from graphgen.interp import run_call
from graphgen.state import State


def message_of(value: Any) -> str | None:
    """The text a soft failure's result gives as its reason: the result itself when it
    is a non-empty string, else the ``message`` of a record (or its one string field);
    None when the result holds no such text (a bare ``False`` cites nothing)."""
    if isinstance(value, str):
        return value if value.strip() else None
    if isinstance(value, dict):
        msg = value.get("message")
        if isinstance(msg, str) and msg.strip():
            return msg
        texts = [v for v in value.values() if isinstance(v, str) and v.strip()]
        if len(texts) == 1:
            return texts[0]
    return None


def soft_reason(domain: Domain, st: State, tool: str, args: Mapping[str, Any]) -> str | None:
    """The message of the soft failure ``tool(args)`` would be on ``st`` (which is not
    changed); None if the call raises, succeeds, or soft-fails without a message."""
    if not domain.tools[tool].soft_fails:
        return None
    try:
        out = run_call(domain, st.copy(), tool, dict(args))
    except ToolError:
        return None
    return message_of(out.value) if out.soft_failed else None
