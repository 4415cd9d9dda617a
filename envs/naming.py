"""Identifiers of the generated code: how entities and variables are spelled, which names
the generated modules reserve, and how a clashing domain name is renamed or refused."""

from __future__ import annotations

import keyword
import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from pydantic import BaseModel

from graphgen import ir
from graphgen.domain import Domain, ToolDef
from graphgen.envs.schemas import FINISH_NAME

# Names the generated modules define or import at module level, and the builtins the
# generated tool bodies call: a domain variable with one of these names is renamed.
RUNTIME_NAMES = frozenset(
    {
        "Journal",
        "ToolError",
        "all_of",
        "any_of",
        "check_bool",
        "check_bounds",
        "check_call",
        "check_date",
        "check_enum",
        "check_int",
        "check_ref",
        "check_str",
        "check_unique",
        "fact",
        "max_of",
        "min_of",
        "precondition_failed",
    }
)
MODULE_NAMES = frozenset(
    {
        "Any",
        "Callable",
        "Db",
        "Literal",
        "Mapping",
        "PARAMS",
        "TOOLS",
        "call_tool",
        "db",
    }
)
USED_BUILTINS = frozenset({"all", "any", "len", "sorted", "sum", "min", "max", "callable"})
AMBIGUOUS_NAMES = frozenset({"l", "O", "I"})  # pycodestyle E741
_BASEMODEL_NAMES = frozenset(n for n in dir(BaseModel) if not n.startswith("__"))
# Names the class bodies of models.py read: an entity or field called so would shadow them.
_MODELS_NAMES = frozenset(
    {
        "Any",
        "BaseModel",
        "ConfigDict",
        "Field",
        "Iterable",
        "Literal",
        "Mapping",
        "bool",
        "dict",
        "int",
        "list",
        "str",
        "tuple",
        "classmethod",
    }
)
# Names a local variable of a generated tool must not take: every name the tool bodies
# read at module level or from the builtins, keywords, and names linters reject.
LOCAL_RESERVED = (
    RUNTIME_NAMES
    | MODULE_NAMES
    | USED_BUILTINS
    | AMBIGUOUS_NAMES
    | frozenset(keyword.kwlist)
    | frozenset(keyword.softkwlist)
    | frozenset({"self", "cls"})  # legal as locals of a function, but they mislead
)


class CodegenError(ValueError):
    """The domain cannot be compiled (a name the generated code cannot use, and so on)."""


def snake(name: str) -> str:
    """``PaymentMethod`` → ``payment_method``."""
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "_", name).lower()


@dataclass
class EntityNames:
    """How each entity is spelled in the generated code (checked for collisions)."""

    row_cls: dict[str, str] = field(default_factory=dict)  # Account → AccountRow
    getter: dict[str, str] = field(default_factory=dict)  # Account → get_account
    record: dict[str, str] = field(default_factory=dict)  # Account → account_record
    local: dict[str, str] = field(default_factory=dict)  # Account → account (a row local)

    @classmethod
    def plan(cls, domain: Domain) -> EntityNames:
        """Spell every entity; a name the generated code cannot use is a CodegenError."""
        where = f"{domain.source}: domain {domain.name!r}"
        n = cls()
        db_members: dict[str, str] = {"counters": "the id counters"}
        for m in ("from_state", "to_state", "check_invariants", "model_config"):
            db_members[m] = "a Db method"
        module: dict[str, str] = {m: "a generated name" for m in MODULE_NAMES | RUNTIME_NAMES}
        for ent, edef in domain.entities.items():
            s = snake(ent)
            n.row_cls[ent] = f"{ent}Row"
            n.getter[ent] = f"get_{s}"
            n.record[ent] = f"{s}_record"
            n.local[ent] = s
            for member in (ent, n.getter[ent], n.record[ent]):
                if member in db_members or member in _BASEMODEL_NAMES | _MODELS_NAMES:
                    raise CodegenError(
                        f"{where}: entity {ent!r} would generate the Db member "
                        f"{member!r}, which clashes with "
                        f"{db_members.get(member, 'a name models.py uses')}"
                    )
                db_members[member] = f"entity {ent!r}"
            if n.row_cls[ent] in module:
                raise CodegenError(
                    f"{where}: entity {ent!r} would generate class "
                    f"{n.row_cls[ent]!r}, which clashes with "
                    f"{module[n.row_cls[ent]]}"
                )
            module[n.row_cls[ent]] = f"entity {ent!r}"
            clash = (
                f"tool {n.row_cls[ent]!r}"
                if n.row_cls[ent] in domain.tools
                else f"entity {n.row_cls[ent]!r}"
                if n.row_cls[ent] in domain.entities
                else None
            )
            if clash is not None:
                raise CodegenError(
                    f"{where}: {clash} has the name of the class generated for the rows of "
                    f"entity {ent!r}; rename it"
                )
            for f in edef.fields:
                if f in _BASEMODEL_NAMES | _MODELS_NAMES or f.startswith("model_"):
                    raise CodegenError(
                        f"{where}: field {ent}.{f} shadows a pydantic BaseModel "
                        "attribute or a type name; rename it to compile this "
                        "domain"
                    )
        return n


def tool_variables(tool: ToolDef) -> list[str]:
    """Every name a tool's expressions bind: parameters, create bindings, loop variables."""
    names = list(tool.params)
    exprs: list[ir.Expr] = [c.expr for c in tool.requires]
    for s in tool.effects:
        if isinstance(s.effect, ir.Create) and s.effect.bind:
            names.append(s.effect.bind)
        exprs.extend(ir.effect_exprs(s.effect))
    if tool.returns is not None:
        exprs.append(tool.returns)
    exprs.extend(c.when for c in tool.cases if c.when is not None)
    for e in exprs:
        for node in ir.walk(e):
            if isinstance(node, ir.Comp):
                names.append(node.var)
    return list(dict.fromkeys(names))


def rename_variables(names: Iterable[str], reserved: Iterable[str]) -> dict[str, str]:
    """Python spelling of each domain variable: itself unless it clashes, then ``name_``."""
    taken = set(reserved) | RUNTIME_NAMES | MODULE_NAMES | USED_BUILTINS | AMBIGUOUS_NAMES
    taken |= set(keyword.kwlist)
    wanted = list(names)
    out: dict[str, str] = {}
    used = {n for n in wanted if n not in taken}
    for n in wanted:
        py = n
        while py in taken or (py != n and py in used):
            py += "_"
        out[n] = py
        used.add(py)
    return out


def fresh_name(base: str, used: set[str]) -> str:
    """``base``, with underscores appended until it is not in ``used``; recorded as used."""
    name = base
    while name in used:
        name += "_"
    used.add(name)
    return name


def check_tool_names(domain: Domain) -> None:
    """Every tool name must be usable as a Python function name and distinct from the
    action that ends an episode; otherwise a CodegenError."""
    if FINISH_NAME in domain.tools:
        raise CodegenError(
            f"{domain.source}: tool {FINISH_NAME!r} clashes with the action that ends an episode"
        )
    for name in domain.tools:
        if keyword.iskeyword(name) or name in RUNTIME_NAMES | MODULE_NAMES | USED_BUILTINS:
            raise CodegenError(
                f"{domain.source}: tool name {name!r} cannot be a Python "
                "function name in the generated code"
            )
