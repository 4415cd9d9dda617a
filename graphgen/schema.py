"""The JSON Schema of a domain file, for editor completion and validation.

Generated from the pydantic models of :mod:`graphgen.spec` (so every key they accept is
in it, with its description), then widened where the loader accepts a shorthand the
models only see after their ``before`` validators: a bare string for a field, a
parameter, a key, a check, an intent, an invariant or a phrase, and one item instead
of a list. ``graphgen schema > domain.schema.json`` writes it; an editor with a YAML
language server reads it from a first line
``# yaml-language-server: $schema=domain.schema.json``.
"""

from __future__ import annotations

import copy
import json
from typing import Any

from graphgen.spec import DomainSpec

#: Spec models that may be written as a bare string, and what the string means.
STRING_SHORTHANDS: dict[str, str] = {
    "FieldSpec": "the field's type alone: int, str, bool, date, an entity, list[...]",
    "ParamSpec": "the parameter's type alone: int, str, bool, date, an entity, Entity.field",
    "KeySpec": "the key's name alone",
    "CheckSpec": "the condition alone (no message)",
    "IntentSpec": "the template alone (no guard)",
    "InvariantSpec": "the condition alone",
    "PhraseSpec": "the form alone: how an atom on the field reads, with {value}",
}

#: (model, key) of lists that also take a single item.
ONE_OR_MANY: set[tuple[str, str]] = {
    ("ToolSpec", "requires"),
    ("ToolSpec", "effects"),
    ("GenerateSpec", "require"),
}

#: Descriptions of keys whose model field carries none.
DESCRIPTIONS: dict[tuple[str, str], str] = {
    ("FieldSpec", "unique"): "no two rows share a value (scalar fields only)",
    ("FieldSpec", "min"): "the smallest value an int field may hold",
    ("FieldSpec", "max"): "the largest value an int field may hold",
    ("FieldSpec", "description"): "what the field means, for the agent's tool schemas",
    ("ParamSpec", "type"): "int | str | bool | date | enum | <Entity> | <Entity>.<field>",
    ("ParamSpec", "values"): "members, for enums",
    ("ParamSpec", "enum"): "name of a shared enum",
    ("ParamSpec", "description"): "what the parameter means, shown in the tool schema",
    ("ParamSpec", "min"): "the smallest value an int argument may take",
    ("ParamSpec", "max"): "the largest value an int argument may take",
    ("ParamSpec", "vocab"): "value generator hint for generated arguments, e.g. 'city'",
    ("KeySpec", "name"): "the key's name: the id parameter and record field",
    ("KeySpec", "prefix"): 'text before the counter in new ids ("O" makes O0001; "" none)',
    ("KeySpec", "givable"): "a user can know an id without calling a tool",
    ("CheckSpec", "check"): "a bool condition over the parameters and the state",
    ("CheckSpec", "message"): "what the agent reads when the check fails; {param} fills in",
    ("IntentSpec", "text"): "the instruction template; {param} placeholders",
    ("IntentSpec", "when"): "a guard over the parameters: the facts the text claims",
    ("InvariantSpec", "check"): "a bool condition over the row variable x",
    ("EntitySpec", "key"): "the key: its name, or {name, prefix, width, givable}",
    ("EntitySpec", "fields"): "field name -> type or {type, ...}",
    ("EntitySpec", "description"): "what a row is",
    ("ToolSpec", "description"): "what the tool does, shown to the agent",
    ("ToolSpec", "params"): "parameter name -> type or {type, ...}",
    ("ToolSpec", "requires"): "preconditions: all must hold, else the call fails",
    ("ToolSpec", "effects"): "statements that change the state, in order",
    ("ToolSpec", "returns"): "the result, evaluated after the effects",
    ("DomainSpec", "name"): "the domain's name (a Python identifier)",
    ("DomainSpec", "description"): "one sentence on what the domain is",
    ("DomainSpec", "policy"): "the rules the agent follows, shown as its system prompt",
    ("DomainSpec", "enums"): "shared enums: name -> members",
    ("DomainSpec", "entities"): "the tables of the state: name -> entity",
    ("DomainSpec", "tools"): "the tools: name -> tool",
    ("PhraseSpec", "form"): "how an atom on the field reads after the noun, with {value}",
}

_DRAFT = "https://json-schema.org/draft/2020-12/schema"


def domain_json_schema() -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of a domain file.

    >>> s = domain_json_schema()
    >>> sorted(s["required"]), "FieldSpec" in s["$defs"]
    (['entities', 'name', 'tools'], True)
    """
    schema = copy.deepcopy(DomainSpec.model_json_schema())
    defs: dict[str, Any] = schema["$defs"]
    models = {"DomainSpec": schema, **defs}
    for (model, key), text in DESCRIPTIONS.items():
        prop = models.get(model, {}).get("properties", {}).get(key)
        if prop is not None:
            prop.setdefault("description", text)
    for model, key in ONE_OR_MANY:
        props = models.get(model, {}).get("properties", {})
        if key in props:
            many = props[key]
            props[key] = {
                "anyOf": [many["items"], many],
                **{k: v for k, v in many.items() if k in ("description", "title", "default")},
            }
    for name in ("FieldSpec", "ParamSpec"):
        # {enum: [a, b]} (no type) is an enum field: type is then optional
        d = defs.get(name)
        if d is not None:
            d["required"] = [r for r in d.get("required", []) if r != "type"]
            d["properties"]["enum"]["anyOf"].insert(
                0, {"type": "array", "items": {"type": "string"}}
            )
            if not d["required"]:
                d.pop("required")
    for name, meaning in STRING_SHORTHANDS.items():
        d = defs.get(name)
        if d is None:
            continue
        obj = {k: v for k, v in d.items() if k not in ("title", "description")}
        defs[name] = {
            "title": d.get("title", name),
            "description": d.get("description", ""),
            "anyOf": [{"type": "string", "description": meaning}, obj],
        }
    schema["$schema"] = _DRAFT
    schema["title"] = "graphgen domain file"
    return schema


def domain_json_schema_text() -> str:
    """:func:`domain_json_schema` as canonical JSON text (same bytes every run)."""
    return json.dumps(domain_json_schema(), indent=2, sort_keys=True, ensure_ascii=False) + "\n"
