"""Composite domains: two or more domains combined into one, declared in a small file.

A composition file names its parts (built-in domains or domain files) and the link
between them, in the domain language itself:

.. code-block:: yaml

    name: clinic_bank
    description: A dental clinic whose patients pay their fees from their bank accounts.
    parts: [dental.yaml, mock]      # built-in names, or paths relative to this file
    policy: |                       # the rules of the link (each part's policy is kept)
      Fees are paid from the patient's own bank account ...
    extend:                         # new fields on the parts' entities (the link's data)
      Patient:
        fields:
          account_id: {type: Account, description: "The patient's bank account."}
    enums: {...}                    # optional: enums the link uses
    tools: {...}                    # tools that use both parts (the link's behaviour)
    phrases: {...}                  # optional

The parts are *merged*: their entities, tools, enums and phrases keep their names, and a
name two parts (or a part and the link) both define is an error naming both (rename it
in one part); an enum both define with the same members is one enum. The result is
one ordinary domain mapping (:func:`compose_spec`), written out by ``graphgen compose``
(:func:`compose_text`) and loaded by the same loader as any domain file
(:func:`load_composite`): the task generator, the gate, the proofs and the compiled
environment see one domain and nothing else changes.

:func:`tool_parts` says which parts each tool touches (through the tables it reads or
writes), and :func:`crosses` whether a task's calls span every part.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from graphgen.domain import Domain
from graphgen.domains import builtin_names, builtin_path
from graphgen.errors import DomainError, Located
from graphgen.footprint import cells_read, cells_written
from graphgen.limits import MAX_DOMAIN_BYTES, SAFE_LOADER, yaml_shape_problem
from graphgen.load import loads_domain

COMPOSE_KEYS = (
    "name",
    "description",
    "parts",
    "policy",
    "extend",
    "enums",
    "entities",
    "tools",
    "phrases",
)
"""The keys of a composition file, in the order :func:`compose_spec` reads them."""


@dataclass(frozen=True)
class Part:
    """One part of a composition: its label (the name it was given by), its source
    path, and its domain mapping as read from YAML."""

    label: str
    path: Path
    spec: dict[str, Any]


def _read_yaml(path: Path, what: str) -> Any:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise DomainError([Located(f"cannot read {what}: {exc}", file=str(path))]) from None
    if len(text.encode("utf-8", "surrogatepass")) > MAX_DOMAIN_BYTES:
        raise DomainError([Located(f"{what} is over {MAX_DOMAIN_BYTES} bytes", file=str(path))])
    try:
        shape = yaml_shape_problem(text)
        if shape is not None:
            shape.file = str(path)
            raise DomainError([shape])
        return yaml.load(text, Loader=SAFE_LOADER)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        raise DomainError(
            [Located(f"YAML syntax error: {exc}", file=str(path), where=where)]
        ) from None


def _part(ref: Any, base: Path, source: str) -> Part:
    if not isinstance(ref, str) or not ref:
        raise DomainError([Located(f"a part is a domain name or path, not {ref!r}", source)])
    path = base / ref
    if not path.is_file() and ref in builtin_names():
        path = builtin_path(ref)
    if not path.is_file():
        raise DomainError(
            [
                Located(
                    f"part {ref!r} is neither a file next to the composition nor a built-in "
                    f"domain ({', '.join(builtin_names())})",
                    source,
                    "parts",
                )
            ]
        )
    # Each part must be a good domain on its own: its problems are located in its file.
    loads_domain(path.read_text(encoding="utf-8"), source=str(path))
    spec = _read_yaml(path, "the part")
    return Part(ref, path, spec)


def _merge(
    into: dict[str, Any],
    owner: dict[str, str],
    block: dict[str, Any],
    label: str,
    kind: str,
    problems: list[Located],
    source: str,
) -> None:
    for name, value in block.items():
        if name in owner:
            if kind == "enum" and into[name] == value:
                continue  # the same enum in both parts is one enum
            problems.append(
                Located(
                    f"{kind} {name!r} is defined by both {owner[name]} and {label}; rename "
                    "it in one of them",
                    source,
                )
            )
            continue
        owner[name] = label
        into[name] = value


def compose_spec(path: str | Path) -> dict[str, Any]:
    """The merged domain mapping of a composition file (see the module docstring).

    Raises :class:`~graphgen.errors.DomainError` listing every problem: an unknown key, a
    part that is missing or bad, a name defined twice, an ``extend`` of an unknown
    entity or of a field it already has.
    """
    p = Path(path)
    source = str(p)
    raw = _read_yaml(p, "the composition file")
    if not isinstance(raw, dict):
        raise DomainError([Located("a composition file is a YAML mapping", source)])
    problems: list[Located] = []
    unknown = sorted(set(map(str, raw)) - set(COMPOSE_KEYS))
    if unknown:
        problems.append(
            Located(
                f"unknown key(s) {', '.join(unknown)} (allowed: {', '.join(COMPOSE_KEYS)})", source
            )
        )
    refs = raw.get("parts")
    if not isinstance(refs, list) or len(refs) < 2:
        problems.append(Located("'parts' lists two or more domains", source, "parts"))
    for key in ("extend", "enums", "entities", "tools", "phrases"):
        if not isinstance(raw.get(key, {}), dict):
            problems.append(Located(f"'{key}' is a mapping", source, key))
    if problems:
        raise DomainError(problems)
    assert isinstance(refs, list)
    parts = [_part(ref, p.parent, source) for ref in refs]
    labels = [part.label for part in parts]
    if len(set(labels)) != len(labels):
        raise DomainError([Located("a part is listed twice", source, "parts")])
    merged: dict[str, Any] = {
        "name": raw.get("name", "_".join(str(s.spec.get("name", "")) for s in parts)),
        "description": raw.get(
            "description", " ".join(str(s.spec.get("description", "")) for s in parts)
        ),
    }
    blocks: dict[str, dict[str, Any]] = {"enums": {}, "entities": {}, "tools": {}, "phrases": {}}
    owners: dict[str, dict[str, str]] = {k: {} for k in blocks}
    kinds = {"enums": "enum", "entities": "entity", "tools": "tool", "phrases": "phrase"}
    for part in parts:
        for key, block in blocks.items():
            got = part.spec.get(key) or {}
            _merge(block, owners[key], got, part.label, kinds[key], problems, source)
    for key in ("enums", "entities", "tools", "phrases"):
        got = raw.get(key) or {}
        _merge(blocks[key], owners[key], got, "the composition", kinds[key], problems, source)
    for ent, ext in (raw.get("extend") or {}).items():
        where = f"extend.{ent}"
        if ent not in blocks["entities"]:
            problems.append(Located(f"no part defines the entity {ent!r}", source, where))
            continue
        if not isinstance(ext, dict) or set(ext) - {"fields"}:
            problems.append(Located("an extension adds 'fields' only", source, where))
            continue
        entity = dict(blocks["entities"][ent])
        fields = dict(entity.get("fields") or {})
        key = str((entity.get("key") or {}).get("name"))
        for fname, fspec in (ext.get("fields") or {}).items():
            if fname in fields or fname == key:
                problems.append(
                    Located(f"{ent} already has a field {fname!r}", source, f"{where}.{fname}")
                )
            fields[fname] = fspec
        entity["fields"] = fields
        blocks["entities"][ent] = entity
    if problems:
        raise DomainError(problems)
    policies = [
        f"{part.spec.get('name', part.label)}:\n{str(part.spec.get('policy', '')).strip()}"
        for part in parts
        if str(part.spec.get("policy", "")).strip()
    ]
    if str(raw.get("policy", "")).strip():
        policies.append(f"Between them:\n{str(raw['policy']).strip()}")
    merged["policy"] = "\n\n".join(policies) + "\n"
    for key in ("enums", "entities", "tools", "phrases"):
        if blocks[key]:
            merged[key] = blocks[key]
    return merged


class _Dumper(yaml.SafeDumper):
    """Safe YAML with texts of several lines (the policy) as literal blocks."""


def _text(dumper: yaml.SafeDumper, value: str) -> yaml.Node:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _text)


def compose_text(path: str | Path) -> str:
    """The merged domain as YAML text: what ``graphgen compose -o`` writes."""
    spec = compose_spec(path)
    header = f"# Composed from {Path(path).name} by graphgen compose; edit the parts instead.\n"
    return header + yaml.dump(spec, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=100)


def load_composite(path: str | Path) -> Domain:
    """The composition as one :class:`Domain`, through the ordinary loader."""
    return loads_domain(compose_text(path), source=f"{path} (composed)")


def part_of_entities(path: str | Path) -> dict[str, str]:
    """Entity name → the label of the part that defines it."""
    p = Path(path)
    raw = _read_yaml(p, "the composition file")
    out: dict[str, str] = {}
    for ref in raw["parts"]:
        part = _part(ref, p.parent, str(p))
        for ent in part.spec.get("entities") or {}:
            out[ent] = part.label
    return out


def tool_parts(domain: Domain, entity_part: dict[str, str]) -> dict[str, frozenset[str]]:
    """Tool name → the parts whose tables a call of it reads or writes."""
    out: dict[str, frozenset[str]] = {}
    for name, tool in domain.tools.items():
        cells = cells_read(domain, tool) | cells_written(domain, tool)
        out[name] = frozenset(entity_part[c.entity] for c in cells if c.entity in entity_part)
    return out


def crosses(tools: Iterable[str], parts: dict[str, frozenset[str]], every: set[str]) -> bool:
    """Whether calls of ``tools`` (a task's chain, and the refused call of a refusal)
    touch the tables of every part.

    >>> parts = {"pay_fee": frozenset({"dental", "bank"}), "find": frozenset({"dental"})}
    >>> crosses(["find", "pay_fee"], parts, {"dental", "bank"}), crosses(["find"], parts, {"bank"})
    (True, False)
    """
    touched: set[str] = set()
    for tool in tools:
        touched |= parts.get(tool, frozenset())
    return touched >= every
