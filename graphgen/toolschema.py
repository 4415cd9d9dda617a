"""Tool lists from outside: OpenAI tool schemas or an MCP ``tools/list`` result.

``graphgen propose --from-tools tools.json`` starts a domain from an existing tool list:
the tools, their parameters and the parameters' types come from the file; the model is
asked only for what a schema cannot say (the state, preconditions, effects). This module
reads and validates such a file and turns it into a seed: a partial domain in the domain
language (:func:`seed_spec`) and the conditions the finished domain must keep
(:func:`seed_problems`).

Accepted shapes (JSON):

* a list of OpenAI tools, ``[{"type": "function", "function": {"name", "description",
  "parameters"}}, ...]`` (the bare ``{"name", "description", "parameters"}`` form too);
* an MCP ``tools/list`` result ``{"tools": [{"name", "description", "inputSchema"}]}``,
  or the whole JSON-RPC response ``{"jsonrpc": "2.0", "id": 1, "result": {"tools": ...}}``.

Parameter schemas may use ``string`` (``format: date`` is a date), ``integer`` (with
``minimum``/``maximum``), ``number`` (whole units: the language has no fractions),
``boolean``, ``enum`` and ``array`` of those; anything else is an error naming the file,
the tool and the parameter.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from graphgen.domain import Domain
from graphgen.errors import GraphgenError
from graphgen.limits import MAX_DOMAIN_BYTES
from graphgen.load import TOOL_NAME, name_problem
from graphgen.types import BOOL, DATE, INT, STR, EnumT, ListT, RefT, Ty

MAX_SEED_TOOLS = 200
"""Most tools one file may list (a domain of more is no starting point)."""

_SCALARS = frozenset({"str", "int", "bool", "date"})
_ENUM_MEMBER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}\Z")


class ToolFileError(GraphgenError):
    """A tool file that cannot seed a domain; ``problems`` lists every reason."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("\n".join(problems))
        self.problems = problems


@dataclass(frozen=True)
class SeedParam:
    """One parameter of a seeded tool, its type in the domain language.

    ``kind`` is the JSON Schema type it came from (``string``, ``integer``, ``number``,
    ``boolean``, ``enum``, ``array``); ``ty`` the domain-language type written into the
    seed (``str``, ``int``, ``date``, an entity name for a ``..._id`` string, ``list[..]``).
    """

    name: str
    kind: str
    ty: str
    required: bool
    description: str = ""
    values: tuple[str, ...] = ()
    minimum: int | None = None
    maximum: int | None = None


@dataclass(frozen=True)
class SeedTool:
    """One tool of the file: its name, description and parameters, in order."""

    name: str
    description: str
    params: tuple[SeedParam, ...] = field(default_factory=tuple)


def _entity_for(param: str) -> str:
    """The entity a ``..._id`` parameter probably refers to: ``order_id`` → ``Order``.

    >>> _entity_for("payment_method_id")
    'PaymentMethod'
    """
    return "".join(w.capitalize() for w in param.removesuffix("_id").split("_") if w)


def _whole(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    if isinstance(value, float) and not value.is_integer():
        return None
    return int(value)


def _param(where: str, name: str, schema: Any, required: bool, errs: list[str]) -> SeedParam | None:
    """One property schema as a :class:`SeedParam`; appends to ``errs`` when it cannot be."""
    w = f"{where}, parameter {name!r}"
    if problem := name_problem(name):
        errs.append(f"{w}: {problem}")
        return None
    if not name.isidentifier():
        errs.append(f"{w}: a parameter name is a Python identifier")
        return None
    if not isinstance(schema, dict):
        errs.append(f"{w}: the schema is a JSON object, not {type(schema).__name__}")
        return None
    desc = schema.get("description", "")
    desc = desc if isinstance(desc, str) else ""
    enum = schema.get("enum")
    kind = schema.get("type")
    if isinstance(kind, list):  # ["string", "null"]: optional in the source
        kinds = [k for k in kind if k != "null"]
        kind = kinds[0] if len(kinds) == 1 else kind
    if enum is not None:
        if not isinstance(enum, list) or not enum:
            errs.append(f"{w}: 'enum' is a non-empty list")
            return None
        bad = [v for v in enum if not isinstance(v, str) or not _ENUM_MEMBER.match(v)]
        if bad:
            errs.append(
                f"{w}: enum members must be identifier-like strings (letters, digits, _); "
                f"not {bad[0]!r}"
            )
            return None
        if len(set(enum)) != len(enum):
            errs.append(f"{w}: the enum lists a member twice")
            return None
        members = ", ".join(enum)
        return SeedParam(name, "enum", f"enum [{members}]", required, desc, tuple(enum))
    if kind == "string":
        fmt = schema.get("format")
        if fmt == "date":
            return SeedParam(name, "string", "date", required, desc)
        if name.endswith("_id") and _entity_for(name):
            return SeedParam(name, "string", _entity_for(name), required, desc)
        return SeedParam(name, "string", "str", required, desc)
    if kind in ("integer", "number"):
        lo, hi = _whole(schema.get("minimum")), _whole(schema.get("maximum"))
        return SeedParam(name, str(kind), "int", required, desc, (), lo, hi)
    if kind == "boolean":
        return SeedParam(name, "boolean", "bool", required, desc)
    if kind == "array":
        items = schema.get("items")
        # the items of ``item_ids`` are ``item_id``s: references to Item
        one = name[:-1] if name.endswith("_ids") else name
        item = _param(where, one, items, required, []) if isinstance(items, dict) else None
        if item is None or item.kind in ("array", "enum"):
            errs.append(
                f"{w}: an array's 'items' must be a string, integer, number or boolean schema"
            )
            return None
        return SeedParam(name, "array", f"list[{item.ty}]", required, desc)
    shown = json.dumps(kind) if kind is not None else "no type"
    errs.append(
        f"{w}: unsupported type {shown}; use string, integer, number, boolean, enum or an "
        "array of those (nested objects have no equivalent in the domain language)"
    )
    return None


def _tool_entries(data: Any) -> tuple[list[Any], str] | None:
    """The tool objects of any accepted shape, and the key holding each one's schema."""
    if isinstance(data, dict) and isinstance(data.get("result"), dict):
        data = data["result"]  # a JSON-RPC response
    if isinstance(data, dict) and isinstance(data.get("tools"), list):
        return list(data["tools"]), "inputSchema"
    if isinstance(data, list):
        return data, "parameters"
    return None


def parse_tools(data: Any, source: str = "<tools>") -> list[SeedTool]:
    """Validate a decoded tool file; every problem is listed in one :class:`ToolFileError`.

    >>> tools = parse_tools([{"type": "function", "function": {"name": "cancel",
    ...     "parameters": {"type": "object", "properties": {"order_id": {"type": "string"}},
    ...     "required": ["order_id"]}}}])
    >>> [(p.name, p.ty, p.required) for p in tools[0].params]
    [('order_id', 'Order', True)]
    >>> parse_tools({"tools": [{"name": "x-y", "inputSchema": {"type": "object"}}]}, "t.json")
    Traceback (most recent call last):
    ...
    graphgen.toolschema.ToolFileError: t.json: tool 'x-y': a tool name is an identifier ...
    """
    got = _tool_entries(data)
    if got is None:
        raise ToolFileError(
            [
                f"{source}: expected a list of OpenAI tools or an MCP tools/list result "
                '({"tools": [...]}), not a JSON ' + type(data).__name__
            ]
        )
    entries, schema_key = got
    errs: list[str] = []
    if not entries:
        errs.append(f"{source}: the file lists no tools")
    if len(entries) > MAX_SEED_TOOLS:
        errs.append(f"{source}: {len(entries)} tools; the limit is {MAX_SEED_TOOLS}")
        raise ToolFileError(errs)
    tools: list[SeedTool] = []
    seen: set[str] = set()
    for i, entry in enumerate(entries):
        if isinstance(entry, dict) and isinstance(entry.get("function"), dict):
            entry = entry["function"]
        if not isinstance(entry, dict):
            errs.append(f"{source}: tools[{i}] is not a JSON object")
            continue
        name = entry.get("name")
        if not isinstance(name, str):
            errs.append(f"{source}: tools[{i}] has no 'name' string")
            continue
        where = f"{source}: tool {name!r}"
        if not TOOL_NAME.match(name):
            errs.append(f"{where}: a tool name is an identifier (letters, digits, _)")
            continue
        if problem := name_problem(name):
            errs.append(f"{where}: {problem}")
            continue
        if name in seen:
            errs.append(f"{where}: listed twice")
            continue
        seen.add(name)
        desc = entry.get("description", "")
        schema = entry.get(schema_key, entry.get("parameters", entry.get("inputSchema")))
        if schema is None:
            schema = {"type": "object", "properties": {}}
        if not isinstance(schema, dict) or schema.get("type", "object") != "object":
            errs.append(f"{where}: its {schema_key} must be a JSON Schema of type object")
            continue
        props = schema.get("properties", {})
        required = schema.get("required", [])
        if not isinstance(props, dict) or not isinstance(required, list):
            errs.append(f"{where}: 'properties' is an object and 'required' a list")
            continue
        missing = [r for r in required if r not in props]
        if missing:
            errs.append(f"{where}: 'required' names {missing[0]!r}, which is not a property")
        params: list[SeedParam] = []
        for pname, pschema in props.items():
            p = _param(where, pname, pschema, pname in required, errs)
            if p is not None:
                params.append(p)
        tools.append(SeedTool(name, desc if isinstance(desc, str) else "", tuple(params)))
    if errs:
        raise ToolFileError(errs)
    return tools


def load_tools(path: str | Path) -> list[SeedTool]:
    """Read and validate a tool file (see the module docstring for the shapes)."""
    p = Path(path)
    try:
        raw = p.read_bytes()
    except OSError as exc:
        raise ToolFileError([f"{p}: cannot read the file: {exc.strerror or exc}"]) from None
    if len(raw) > MAX_DOMAIN_BYTES:
        raise ToolFileError([f"{p}: {len(raw)} bytes; the limit is {MAX_DOMAIN_BYTES}"])
    try:
        data = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise ToolFileError([f"{p}: the file is not UTF-8 text"]) from None
    except json.JSONDecodeError as exc:
        raise ToolFileError(
            [f"{p}: not JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})"]
        ) from None
    except RecursionError:
        raise ToolFileError([f"{p}: the JSON is nested too deeply"]) from None
    return parse_tools(data, str(p))


def seed_spec(tools: list[SeedTool]) -> dict[str, Any]:
    """The partial domain the model completes: an entity (key only) for every ``..._id``
    parameter's guessed target, and every tool with its typed parameters.

    >>> spec = seed_spec(parse_tools([{"name": "cancel", "description": "Cancel.",
    ...     "parameters": {"type": "object", "properties": {
    ...         "order_id": {"type": "string"}, "reason": {"enum": ["late", "damaged"]}}}}]))
    >>> spec["entities"]["Order"]["key"], spec["tools"]["cancel"]["params"]["reason"]
    ({'name': 'order_id', 'prefix': 'OR', 'width': 3}, {'enum': ['late', 'damaged']})
    """
    entities: dict[str, Any] = {}
    out_tools: dict[str, Any] = {}
    for t in tools:
        params: dict[str, Any] = {}
        for p in t.params:
            spec: dict[str, Any] = {"enum": list(p.values)} if p.kind == "enum" else {"type": p.ty}
            if p.minimum is not None:
                spec["min"] = p.minimum
            if p.maximum is not None:
                spec["max"] = p.maximum
            if p.description:
                spec["description"] = p.description
            params[p.name] = spec
            target = p.ty.removeprefix("list[").removesuffix("]")
            if p.kind in ("string", "array") and target not in _SCALARS | set(entities):
                key = p.name[:-1] if p.name.endswith("_ids") else p.name
                entities[target] = {"key": {"name": key, "prefix": target[:2].upper(), "width": 3}}
        out_tools[t.name] = {"description": t.description, "params": params}
    return {"entities": entities, "tools": out_tools}


def _fits(p: SeedParam, ty: Ty) -> bool:
    """Whether a parameter of the finished domain keeps the type the file gave it."""
    if p.kind == "enum":
        return isinstance(ty, EnumT) and set(ty.values) == set(p.values)
    if p.kind in ("integer", "number"):
        return ty == INT
    if p.kind == "boolean":
        return ty == BOOL
    if p.kind == "array":
        return isinstance(ty, ListT)
    return ty in (STR, DATE) or isinstance(ty, RefT | EnumT)


def seed_problems(domain: Domain, tools: list[SeedTool], source: str) -> list[str]:
    """What the finished domain changed of the tool file: a tool or a required parameter
    left out, or a parameter whose type no longer matches its schema."""
    out: list[str] = []
    for t in tools:
        have = domain.tools.get(t.name)
        if have is None:
            out.append(f"{source}: the tool {t.name!r} of the tool file is missing; keep it")
            continue
        for p in t.params:
            got = have.params.get(p.name)
            if got is None:
                if p.required:
                    out.append(f"{source}: tool {t.name!r} lost its required parameter {p.name!r}")
                continue
            if not _fits(p, got.ty):
                out.append(
                    f"{source}: tool {t.name!r}, parameter {p.name!r} is {got.ty.show()}, "
                    f"but the tool file declares it as {p.kind} (use {p.ty})"
                )
    return out
