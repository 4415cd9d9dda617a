"""Refusals whose true reason is a soft failure.

A tool with a ``fails: true`` case refuses some calls without raising: it returns a
value (``{'success': False, 'message': 'The visit is today or past.'}``) and changes
nothing. Asked for such a call, the agent must not pretend it happened, and must say
why. It sees the message by making the call, which changes nothing.

What counts as saying why: the message itself, or any one of the values it rests on.
Grading the message verbatim would fail an agent that puts "gold needs 30000 points;
the guest has 19969." in its own words, so each value that makes the failing case's
guard hold (``points < TIER_THRESHOLD[target]``: 19969 and 30000; ``today() <
check_in``: the arrival date) is a reason on its own. The guard, not the message's
fields, says what a reason is: a message may also show what was asked ("gold"), which
explains nothing. The generator (``Expander.refusal``) and the gate
(``dryrun.check_candidate``) both take the reasons from :func:`soft_reason`, so they
cannot disagree on them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from graphgen import ir
from graphgen.decimals import to_result
from graphgen.domain import Domain
from graphgen.errors import ToolError
from graphgen.interp import evaluate, pick_case, precheck, result_shape, with_old
from graphgen.ir import free_vars
from graphgen.state import State
from graphgen.types import BOOL, RefT, is_scalar, strip_opt


@dataclass(frozen=True)
class SoftReason:
    """Why a call soft-fails: the ``message`` it returns and the ``values`` that message
    rests on (see the module docstring), each a reason an agent may give."""

    message: str
    values: tuple[Any, ...]

    def groups(self) -> list[list[Any]]:
        """The answer groups of a refusal task: the message, then each value (the
        generator leaves out a value the request itself states: that is no reason)."""
        return [[self.message], *([v] for v in self.values)]


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


def soft_reason(domain: Domain, st: State, tool: str, args: Mapping[str, Any]) -> SoftReason | None:
    """Why ``tool(args)`` would soft-fail on ``st`` (which is not changed); None if the
    call raises, succeeds, or soft-fails without a message.

    >>> from graphgen.domains import load_builtin
    >>> from graphgen.stategen import generate_state
    >>> d = load_builtin("hotel")
    >>> st = generate_state(d, 0)
    >>> soft_reason(d, st, "upgrade_tier", {"guest_id": "G0009"})
    SoftReason(message='gold needs 30000 points; the guest has 19969.', values=(19969, 30000))
    >>> soft_reason(d, st, "get_guest", {"guest_id": "G0003"}) is None  # no soft failure
    True
    """
    tdef = domain.tools[tool]
    if not tdef.soft_fails:
        return None
    # A soft failure has no effects, so its case is picked and its result read on ``st``
    # itself: no copy of the state (this runs for every binding the generator tries).
    try:
        env = with_old(tdef, st, dict(precheck(domain, st, tool, dict(args))))
        case = pick_case(domain, st, tdef, env)
        if not case.fails:
            return None
        value = (
            to_result(evaluate(case.returns, st, env, domain), result_shape(case.returns.ty))
            if case.returns is not None
            else "ok"
        )
    except ToolError:
        return None
    msg = message_of(value)
    if msg is None:
        return None
    # The case applies because its guard holds and every earlier case's guard fails.
    exprs: list[ir.Expr] = []
    for c in tdef.branches:
        if c is case:
            exprs += _reasons(c.when, True, st, env, domain)
            break
        exprs += _reasons(c.when, False, st, env, domain)
    values: list[Any] = []
    for e in exprs:
        try:
            v = to_result(evaluate(e, st, env, domain), result_shape(e.ty))
        except ToolError:  # an operand an earlier case's guard never reached
            continue
        if v is None or isinstance(v, bool) or (isinstance(v, str) and not v.strip()):
            continue
        if v not in values:
            values.append(v)
    return SoftReason(msg, tuple(values))


def _reasons(
    e: ir.Expr | None, want: bool, st: State, env: dict[str, Any], domain: Domain
) -> list[ir.Expr]:
    """The operands that make guard ``e`` come out ``want``: both sides of a comparison
    (less the constants and today's date: "30000 points needed, the guest has 19969"),
    and within ``and``/``or`` the operands that decide it. A flag has no value to give."""
    match e:
        case None | ir.Lit() | ir.Today():
            return []
        case ir.Compare(left=a, right=b):
            return [x for x in (a, b) if not isinstance(x, ir.Lit | ir.Today) and _citable(x)]
        case ir.Not(operand=x):
            return _reasons(x, not want, st, env, domain)
        case ir.BoolOp(op=op, values=xs):
            if want == (op == "and"):  # every operand decides it
                return [r for x in xs for r in _reasons(x, want, st, env, domain)]
            out: list[ir.Expr] = []
            for x in xs:  # the operands that came out ``want`` decide it
                try:
                    decides = evaluate(x, st, env, domain) is want
                except ToolError:
                    decides = False
                if decides:
                    out += _reasons(x, want, st, env, domain)
            return out
        case _:
            # fields read outside any comprehension (one over rows names no one value)
            return [
                n
                for n in ir.walk(e)
                if isinstance(n, ir.FieldOf) and _citable(n) and free_vars(n) <= env.keys()
            ]


def _citable(e: ir.Expr) -> bool:
    """Has ``e`` a value an agent can give as a reason (a scalar, not a flag or an id)?"""
    return is_scalar(e.ty) and e.ty != BOOL and not isinstance(strip_opt(e.ty), RefT)
