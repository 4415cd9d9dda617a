"""Shape errors of a domain file in our own words.

pydantic validates the shape of a domain file (:mod:`graphgen.spec`) and reports in its
own terms ("params.x.default: Extra inputs are not permitted"). An author reads instead
what is wrong where, in the file's vocabulary: "unknown key 'default' in parameter 'x'
of tool 'y'; known keys: type, values, ...", with the closest known key when the key
looks misspelt. :func:`spec_error_message` makes that text from one pydantic error;
the loader adds the file, line and column of the node.
"""

from __future__ import annotations

import types
import typing
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel
from pydantic_core import ErrorDetails

from graphgen.spec import DomainSpec
from graphgen.suggest import did_you_mean


def spec_error_path(e: ErrorDetails) -> tuple[str, ...]:
    """The YAML path of a pydantic error (keys and list indexes as text)."""
    return tuple(str(x) for x in e["loc"])


def _unwrap(t: Any) -> Any:
    """``X | None`` → ``X``."""
    if typing.get_origin(t) in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(t) if a is not type(None)]
        return args[0] if len(args) == 1 else t
    return t


def model_at(loc: Sequence[str | int]) -> type[BaseModel] | None:
    """The spec model that describes the node at ``loc`` (None for a scalar or a path
    the models do not have)."""
    t: Any = DomainSpec
    for part in loc:
        t = _unwrap(t)
        if isinstance(t, type) and issubclass(t, BaseModel):
            f = t.model_fields.get(str(part))
            if f is None:
                return None
            t = f.annotation
        elif typing.get_origin(t) is dict:
            t = typing.get_args(t)[1]
        elif typing.get_origin(t) is list:
            t = typing.get_args(t)[0]
        else:
            return None
    t = _unwrap(t)
    return t if isinstance(t, type) and issubclass(t, BaseModel) else None


def describe(loc: Sequence[str | int]) -> str:
    """The node at ``loc`` in the file's words.

    >>> describe(("tools", "pay", "params", "amount"))
    "parameter 'amount' of tool 'pay'"
    >>> describe(("entities", "User", "fields", "email", "vocab"))
    "vocab of field 'email' of entity 'User'"
    >>> describe(())
    'the domain file'
    """
    parts = [str(x) for x in loc]
    named = {
        ("tools", "params"): "parameter {2!r} of tool {0!r}",
        ("tools", "requires"): "requires[{2}] of tool {0!r}",
        ("tools", "intents"): "intents[{2}] of tool {0!r}",
        ("tools", "effects"): "effects[{2}] of tool {0!r}",
        ("entities", "fields"): "field {2!r} of entity {0!r}",
        ("entities", "invariants"): "invariants[{2}] of entity {0!r}",
        ("entities", "lemmas"): "lemmas[{2}] of entity {0!r}",
        ("entities", "generate"): "generate.{2} of entity {0!r}",
    }
    if not parts:
        return "the domain file"
    top, rest = parts[0], parts[1:]
    if top in ("tools", "entities") and rest:
        kind = "tool" if top == "tools" else "entity"
        owner, inner = rest[0], rest[1:]
        if len(inner) >= 2 and (top, inner[0]) in named:
            head = named[(top, inner[0])].format(owner, inner[0], inner[1])
            tail = inner[2:]
        elif inner == ["key"] or inner[:1] == ["key"]:
            head, tail = f"the key of entity {owner!r}", inner[1:]
        elif inner:
            head, tail = f"{'.'.join(inner)} of {kind} {owner!r}", []
        else:
            head, tail = f"{kind} {owner!r}", []
        return f"{'.'.join(tail)} of {head}" if tail else head
    if top == "phrases" and rest:
        head = f"phrase {rest[0]!r}"
        return f"{'.'.join(rest[1:])} of {head}" if rest[1:] else head
    if top == "enums" and rest:
        return f"enum {rest[0]!r}"
    return f"{'.'.join(parts)} of the domain file" if rest else f"the top-level key {top!r}"


def _kind(value: Any) -> str:
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, bool):
        return f"{str(value).lower()}"
    if value is None:
        return "nothing (an empty value)"
    return repr(value)


_WANTS = {
    "string_type": "text",
    "int_type": "a whole number",
    "int_parsing": "a whole number",
    "int_from_float": "a whole number",
    "bool_type": "true or false",
    "bool_parsing": "true or false",
    "dict_type": "a mapping (key: value lines)",
    "model_type": "a mapping (key: value lines)",
    "model_attributes_type": "a mapping (key: value lines)",
    "list_type": "a list",
}


def spec_error_message(e: ErrorDetails, data: Any = None) -> str:
    """One pydantic error of :class:`~graphgen.spec.DomainSpec` in plain words."""
    loc = e["loc"]
    kind = e["type"]
    ctx = e.get("ctx") or {}
    if kind == "extra_forbidden" and loc:
        model = model_at(loc[:-1])
        known = sorted(model.model_fields) if model is not None else []
        key = str(loc[-1])
        msg = f"unknown key {key!r} in {describe(loc[:-1])}{did_you_mean(key, known)}"
        return msg + (f"; known keys: {', '.join(known)}" if known else "")
    if kind == "missing" and loc:
        return f"missing key {str(loc[-1])!r} in {describe(loc[:-1])}"
    what = describe(loc)
    if kind in _WANTS:
        return f"{what} must be {_WANTS[kind]}, not {_kind(e.get('input'))}"
    if kind == "string_pattern_mismatch":
        return (
            f"{what} {e.get('input')!r} is not a valid name (letters, digits and '_', "
            "starting with a letter)"
        )
    if kind in ("greater_than_equal", "greater_than"):
        return f"{what} must be at least {ctx.get('ge', ctx.get('gt'))}, not {e.get('input')!r}"
    if kind in ("less_than_equal", "less_than"):
        return f"{what} must be at most {ctx.get('le', ctx.get('lt'))}, not {e.get('input')!r}"
    msg = str(e["msg"])
    msg = msg.removeprefix("Value error, ")
    return f"{what}: {msg}"
