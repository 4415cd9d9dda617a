"""OpenAI Chat Completions tool schemas for a domain, in strict (Structured Outputs) form.

Strict mode accepts a subset of JSON Schema: every object lists all of its properties
in ``required`` and sets ``additionalProperties: false``; we use only ``type``,
``description``, ``enum``, ``minimum``/``maximum`` (integers) and ``pattern`` (dates),
all of which strict mode supports. ``format`` is avoided on purpose.

The schemas are derived from the typed parameters alone, so the compiled environment,
the interpreter and the agent all see the same contract.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import replace
from typing import Any

from graphgen.decimals import dec_text
from graphgen.domain import Domain, ParamDef, ToolDef
from graphgen.types import BOOL, DATE, INT, STR, DecT, EnumT, OptT, RefT
from graphgen.vocabulary import identifier_words, indefinite_article

TOOL_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
DATE_PATTERN = r"^\d{4}-\d{2}-\d{2}$"

#: The action that ends an episode with the agent's final answer (see envs runtime).
FINISH_NAME = "respond"

#: Keywords a strict schema may use here, per JSON type (checked by the tests).
ALLOWED_KEYWORDS: dict[str, frozenset[str]] = {
    "integer": frozenset({"type", "description", "minimum", "maximum"}),
    "string": frozenset({"type", "description", "enum", "pattern"}),
    "boolean": frozenset({"type", "description"}),
}


def _type_hint(p: ParamDef) -> str:
    """A short sentence naming the value's shape, added after the author's description."""
    if isinstance(p.ty, RefT):
        words = identifier_words(p.ty.entity) + " id"
        return f"{indefinite_article(words).capitalize()} {words}."
    if p.ty == DATE:
        return "A date in YYYY-MM-DD format."
    if isinstance(p.ty, DecT):
        zero = dec_text(0, p.ty.scale)
        return f'A decimal with at most {p.ty.scale} places, as a string ("{zero}").'
    return ""


def param_schema(tool: str, p: ParamDef, int_keys: Collection[str] = ()) -> dict[str, Any]:
    """The JSON schema of one parameter; ids of the entities in ``int_keys`` (``type:
    int`` keys) are integers (``T | None``: the type list ``[T, "null"]``)."""
    if isinstance(p.ty, OptT):
        inner = param_schema(tool, replace(p, ty=p.ty.inner, has_default=False), int_keys)
        opt = {**inner, "type": [inner["type"], "null"]}
        return {**opt, "default": p.default} if p.has_default else opt
    desc = " ".join(x for x in (p.description.strip(), _type_hint(p)) if x)
    out: dict[str, Any]
    if p.ty == INT or (isinstance(p.ty, RefT) and p.ty.entity in int_keys):
        out = {"type": "integer"}
        if p.min is not None:
            out["minimum"] = p.min
        if p.max is not None:
            out["maximum"] = p.max
    elif p.ty == BOOL:
        out = {"type": "boolean"}
    elif isinstance(p.ty, EnumT):
        out = {"type": "string", "enum": list(p.ty.values)}
    elif p.ty == DATE:
        out = {"type": "string", "pattern": DATE_PATTERN}
    elif p.ty == STR or isinstance(p.ty, RefT):
        out = {"type": "string"}
    elif isinstance(p.ty, DecT):
        frac = rf"(\.\d{{1,{p.ty.scale}}})?" if p.ty.scale else ""
        out = {"type": "string", "pattern": rf"^[+-]?\d+{frac}$"}
    else:
        raise ValueError(
            f"tool {tool!r}: parameter {p.name!r} has type {p.ty.show()}, which has no tool schema"
        )
    if desc:
        out["description"] = desc
    if p.has_default:  # the value an absent argument takes (such a tool is not strict)
        out["default"] = p.default
    return out


def tool_schema(tool: ToolDef, int_keys: Collection[str] = ()) -> dict[str, Any]:
    """The strict function schema of one tool (``int_keys``: :func:`param_schema`)."""
    assert TOOL_NAME.match(tool.name), f"tool name {tool.name!r} is not a valid OpenAI name"
    return {
        "type": "function",
        "function": {
            "name": tool.name,
            "description": tool.description.strip() or tool.name.replace("_", " "),
            # Strict mode needs every parameter required: a tool with defaults is not strict.
            "strict": not any(p.has_default for p in tool.params.values()),
            "parameters": {
                "type": "object",
                "properties": {
                    n: param_schema(tool.name, p, int_keys) for n, p in tool.params.items()
                },
                "required": [n for n, p in tool.params.items() if not p.has_default],
                "additionalProperties": False,
            },
        },
    }


def openai_tools(domain: Domain) -> list[dict[str, Any]]:
    """Strict OpenAI tool schemas of every tool of ``domain``, in declaration order.

    >>> from graphgen.domains import load_builtin
    >>> t = openai_tools(load_builtin("mock"))[2]["function"]
    >>> t["name"], t["parameters"]["properties"]["amount"]["maximum"], t["strict"]
    ('deposit', 5000, True)
    """
    return [tool_schema(t, domain.int_keys) for t in domain.tools.values()]


def finish_tool() -> dict[str, Any]:
    """The schema of the action that ends an episode with the agent's answer."""
    return {
        "type": "function",
        "function": {
            "name": FINISH_NAME,
            "description": (
                "Finish the conversation with your final answer to the user. Include every "
                "value the user asked for. Call this once, after all other tool calls."
            ),
            "strict": True,
            "parameters": {
                "type": "object",
                "properties": {
                    "answer": {"type": "string", "description": "Your final answer."},
                },
                "required": ["answer"],
                "additionalProperties": False,
            },
        },
    }
