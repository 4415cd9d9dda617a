"""The files of a compiled package, one emitter each: ``models.py`` (pydantic state models),
``tools.py`` (one function per tool and ``call_tool``), ``schemas.py`` (the agent-facing
schemas and policy as literals), ``env.py`` (the ``Environment`` bound to the domain) and
``__init__.py``.

The tools follow :mod:`graphgen.interp`, the reference semantics, exactly: arguments
checked in the same order with the same messages, preconditions explained with the same
facts, effects applied in order under an undo journal, bounds and uniqueness checked on
touched rows in sorted order, list fields kept as sorted sets, comprehensions over keys
in sorted order. ``tests/test_codegen.py`` holds them to it differentially.
"""

from __future__ import annotations

import re
import string
import textwrap
from dataclasses import dataclass
from typing import assert_never

from graphgen import ir
from graphgen.domain import Domain, ToolDef
from graphgen.envs.layout import WIDTH, Lines, import_lines, literal_lines, py_str, sort_names
from graphgen.envs.naming import (
    LOCAL_RESERVED,
    CodegenError,
    EntityNames,
    fresh_name,
    rename_variables,
    tool_variables,
)
from graphgen.envs.printer import PyPrinter, may_raise, py_type, type_words
from graphgen.envs.schemas import FINISH_NAME, finish_tool, openai_tools
from graphgen.explain import explained_fields
from graphgen.types import BOOL, DATE, INT, STR, EnumT, ListT, RefT, Ty

# ============================================================================ models.py


def models_source(domain: Domain, names: EntityNames, header: str) -> str:
    """``models.py``: one pydantic model per entity, and ``Db`` (tables, counters, row
    getters, invariant checks)."""
    out = Lines()
    out.docstring(
        0,
        [
            f"State models of the {domain.name} environment. {header}",
            "One pydantic model per entity (a row; its id is the table key), and Db: "
            "every table plus the counters that new ids are made from.",
        ],
    )
    out(0)
    uses_literal = any(
        isinstance(f.ty, EnumT) or (isinstance(f.ty, ListT) and isinstance(f.ty.elem, EnumT))
        for e in domain.entities.values()
        for f in e.fields.values()
    )
    invariants = {
        e: [f for f in d.fields.values() if f.min is not None or f.max is not None or f.unique]
        for e, d in domain.entities.items()
    }
    runtime_names = {"ToolError"}
    if any(f.min is not None or f.max is not None for fs in invariants.values() for f in fs):
        runtime_names.add("check_bounds")
    if any(f.unique for fs in invariants.values() for f in fs):
        runtime_names.add("check_unique")
    out.lines += import_lines(
        {
            "collections.abc": ["Iterable", "Mapping"],
            "typing": ["Any", "Literal"] if uses_literal else ["Any"],
        },
        {"pydantic": ["BaseModel", "ConfigDict", "Field"]},
        {".runtime": sorted(runtime_names)},
    )
    for ent, edef in domain.entities.items():
        out(0)
        out(0, f"class {names.row_cls[ent]}(BaseModel):")
        out.docstring(
            4,
            [
                f"A row of {ent}; its id ({edef.key}) is the key of Db.{ent}.",
                *([edef.description.strip()] if edef.description.strip() else []),
            ],
        )
        out(0)
        out(4, 'model_config = ConfigDict(extra="forbid", strict=True)')
        out(0)
        for f in edef.fields.values():
            if f.description.strip():
                out.comment(4, f.description.strip())
            out(4, f"{f.name}: {py_type(f.ty)}")
        out(0)
    out(0)
    out(0, "class Db(BaseModel):")
    out.docstring(
        4,
        [
            "The whole state: one table per entity (id -> row) and the id counters.",
            "Tables keep insertion order (rows loaded in key order, new rows last), "
            "exactly like the reference interpreter's state.",
        ],
    )
    out(0)
    out(4, 'model_config = ConfigDict(extra="forbid", strict=True)')
    out(0)
    for ent in domain.entities:
        out(4, f"{ent}: dict[str, {names.row_cls[ent]}] = Field(default_factory=dict)")
    ones = ", ".join(f"{py_str(e)}: 1" for e in domain.entities)
    out(4, f"counters: dict[str, int] = Field(default_factory=lambda: {{{ones}}})")
    out(0)
    out(4, "@classmethod")
    out(4, "def from_state(cls, data: Mapping[str, Any]) -> Db:")
    out.docstring(
        8,
        [
            "A Db from the JSON form of a state (graphgen's State.to_dict).",
            '    {"tables": {entity: {id: row}}, "counters": {entity: next id number}}',
        ],
    )
    out(
        8,
        'tables = {entity: dict(sorted(rows.items())) for entity, rows in data["tables"].items()}',
    )
    out(8, 'return cls.model_validate({**tables, "counters": dict(data["counters"])})')
    out(0)
    out(4, "def to_state(self) -> dict[str, Any]:")
    out.docstring(
        8,
        [
            "This state as plain JSON data in graphgen's State.to_dict shape, "
            "tables and rows in sorted order."
        ],
    )
    out(8, "return {")
    out(12, '"tables": {')
    for ent in sorted(domain.entities):
        out(16, f"{py_str(ent)}: {{k: self.{ent}[k].model_dump() for k in sorted(self.{ent})}},")
    out(12, "},")
    out(12, '"counters": dict(sorted(self.counters.items())),')
    out(8, "}")
    # The locals of Db's methods are fixed names: the domain's names appear there only as
    # attributes (self.Entity), so no entity can shadow a local (an entity Self once made
    # a local called self).
    row = "row"
    for ent, edef in domain.entities.items():
        out(0)
        out(4, f"def {names.getter[ent]}(self, key: str) -> {names.row_cls[ent]}:")
        out.docstring(8, [f"The {ent} row with id ``key``; a ToolError if there is none."])
        out(8, f"{row} = self.{ent}.get(key)")
        out(8, f"if {row} is None:")
        out(12, f'raise ToolError(f"{ent} {{key!r}} not found", kind="not_found")')
        out(8, f"return {row}")
        out(0)
        out(4, f"def {names.record[ent]}(self, key: str) -> dict[str, Any]:")
        out.docstring(
            8, [f"{ent} ``key`` as tools return it: the id as {edef.key}, then the fields."]
        )
        out(8, f"return {{{py_str(edef.key)}: key, **self.{names.getter[ent]}(key).model_dump()}}")
    out(0)
    out(4, "def check_invariants(self, touched: Iterable[tuple[str, str]]) -> None:")
    out.docstring(
        8,
        [
            "Bounds and uniqueness of the rows a call changed or created.",
            "Rows are checked in sorted (entity, id) order and fields in declaration "
            "order, so the first violation reported is the interpreter's.",
        ],
    )
    checked = [e for e in domain.entities if invariants[e]]
    if checked:
        out(8, "for entity, key in sorted(touched):")
        for i, ent in enumerate(checked):
            # One local per entity (mypy types a local once); the prefix keeps it clear of
            # the method's own locals whatever the entity is called.
            row = f"row_{names.local[ent]}"
            out(12, f"{'if' if i == 0 else 'elif'} entity == {py_str(ent)}:")
            out(16, f"{row} = self.{ent}.get(key)")
            out(16, f"if {row} is None:")
            out(20, "continue")
            for f in invariants[ent]:
                if f.min is not None or f.max is not None:
                    out(
                        16,
                        f"check_bounds({py_str(ent)}, key, {py_str(f.name)}, {row}.{f.name}, "
                        f"{f.min!r}, {f.max!r})",
                    )
                if f.unique:
                    out(
                        16,
                        f"check_unique({py_str(ent)}, key, {py_str(f.name)}, {row}.{f.name}, "
                        f"((k, r.{f.name}) for k, r in self.{ent}.items()))",
                    )
    return out.text()


# ============================================================================ tools.py


@dataclass
class ToolEmitter:
    """Emits one tool function: signature, docstring, argument checks, preconditions, then
    the effects under a journal (or the returned value, for a tool that only reads)."""

    domain: Domain
    names: EntityNames
    tool: ToolDef
    runtime_names: set[str]  # runtime names used (collected for the imports)
    model_names: set[str]  # model names used
    typing_names: set[str]  # typing names used

    def __post_init__(self) -> None:
        reserved = set(self.names.row_cls.values())
        self.variables = rename_variables(tool_variables(self.tool), reserved)
        self.used = (
            set(self.variables.values()) | reserved | LOCAL_RESERVED | set(self.domain.tools)
        )
        self.printer = PyPrinter(self.names, self.variables)
        self.ok_name = fresh_name("ok", self.used)
        self.exc_name = fresh_name("exc", self.used)

    def source(self, x: ir.Expr) -> str:
        """``x`` as Python; the runtime helpers it calls are recorded for the imports."""
        out = self.printer.expr(x)
        self.runtime_names |= self.printer.helpers
        return out

    def var_name(self, name: str) -> str:
        """The Python spelling of domain variable ``name``."""
        return self.variables.get(name, name)

    def annotate(self, t: Ty) -> str:
        """The annotation of ``t``; the typing names it uses are recorded for the imports."""
        s = py_type(t)
        if "Literal[" in s:
            self.typing_names.add("Literal")
        if "Any" in s:
            self.typing_names.add("Any")
        return s

    def emit(self, out: Lines) -> None:
        t = self.tool
        params = "".join(
            f", {self.var_name(p.name)}: {self.annotate(p.ty)}" for p in t.params.values()
        )
        ret = self.annotate(t.returns.ty) if t.returns is not None else "str"
        out(0, f"def {t.name}(db: Db{params}) -> {ret}:")
        out.docstring(4, self.docstring())
        self.emit_arg_checks(out)
        for chk in t.requires:
            self.emit_check(out, chk)
        if t.effects:
            self.emit_effects(out)
        else:
            self.emit_read(out)

    def docstring(self) -> list[str]:
        t = self.tool
        paras = [t.description.strip() or t.name.replace("_", " ").capitalize() + "."]
        args = ["Args:", "    db: The state. Changed only if the call succeeds."]
        for p in t.params.values():
            bounds = ""
            if p.min is not None or p.max is not None:
                bounds = f", {'' if p.min is None else p.min}..{'' if p.max is None else p.max}"
            head = f"    {self.var_name(p.name)} ({type_words(p.ty)}{bounds}): "
            desc = p.description.strip() or "(no description)"
            lines = textwrap.wrap(
                head + desc, WIDTH - 4, subsequent_indent=" " * 8, break_on_hyphens=False
            )
            args.extend(lines)
        paras.append("\n".join(args))
        created = {
            s.effect.bind: s.effect.entity
            for s in t.effects
            if isinstance(s.effect, ir.Create) and s.effect.bind
        }
        if isinstance(t.returns, ir.Var) and t.returns.name in created:
            paras.append(
                f"Returns:\n    The id of the new {created[t.returns.name]} ({t.returns.name})."
            )
        elif t.returns_source is not None:
            src = " ".join(t.returns_source.split())
            ret = textwrap.wrap(src, WIDTH - 12, break_on_hyphens=False)
            paras.append("\n".join(["Returns:", *("    " + r for r in ret)]))
        else:
            paras.append('Returns:\n    "ok".')
        why = (
            "An argument is invalid, a precondition is false or a row is missing"
            + (", or an effect would break an invariant" if t.effects else "")
            + ". The message is the observation for the agent"
            + ("; the state is left unchanged." if t.effects else ".")
        )
        raises = textwrap.wrap(
            "ToolError: " + why, WIDTH - 8, subsequent_indent="    ", break_on_hyphens=False
        )
        paras.append("\n".join(["Raises:", *("    " + r for r in raises)]))
        return paras

    def emit_arg_checks(self, out: Lines) -> None:
        t = self.tool
        for p in t.params.values():
            name, py = py_str(t.name), self.var_name(p.name)
            lead = f"{name}, {py_str(p.name)}, {py}"
            if (p.min is not None or p.max is not None) and p.ty != INT:
                raise CodegenError(
                    f"{self.domain.source}: tool {t.name!r}: bounds on the "
                    f"non-int parameter {p.name!r} are not supported"
                )
            if p.ty == INT:
                fn = "check_int"
                extra = f", {p.min!r}, {p.max!r}" if p.min is not None or p.max is not None else ""
                line = f"check_int({lead}{extra})"
            elif p.ty == BOOL:
                fn, line = "check_bool", f"check_bool({lead})"
            elif p.ty == DATE:
                fn, line = "check_date", f"check_date({lead})"
            elif isinstance(p.ty, EnumT):
                members = ", ".join(py_str(x) for x in p.ty.values)
                if len(p.ty.values) == 1:
                    members += ","
                fn, line = "check_enum", f"check_enum({lead}, ({members}))"
            elif isinstance(p.ty, RefT):
                ent = p.ty.entity
                fn, line = "check_ref", f"check_ref({lead}, db.{ent}, {py_str(ent)})"
            elif p.ty == STR:
                fn, line = "check_str", f"check_str({lead})"
            else:
                raise CodegenError(
                    f"{self.domain.source}: tool {t.name!r}: parameter "
                    f"{p.name!r} has type {p.ty.show()}"
                )
            self.runtime_names.add(fn)
            out(4, line)

    def emit_check(self, out: Lines, chk: ir.Check) -> None:
        t = self.tool
        out(0)
        out.comment(4, "requires: " + " ".join(chk.source.split()))
        safe = {n for n, p in t.params.items() if isinstance(p.ty, RefT)}
        ok, exc = self.ok_name, self.exc_name
        if may_raise(chk.expr, safe):
            out(4, "try:")
            out.stmt(8, f"{ok} = ", self.source(chk.expr))
            out(4, f"except ToolError as {exc}:")
            out(8, f"raise {exc}.within({py_str(t.name)}) from None")
            self.runtime_names.add("ToolError")
        else:
            out.stmt(4, f"{ok} = ", self.source(chk.expr))
        out(4, f"if not {ok}:")
        facts: list[str] = []
        for node in explained_fields(chk.expr):
            key = self.source(node.key)
            if not isinstance(node.key, ir.Var | ir.Lit):
                key = f"lambda: {key}"
            item = f"fact(db.{node.entity}, {py_str(node.entity)}, {py_str(node.field)}, {key})"
            if item not in facts:  # the same read gives the same fact: report it once
                facts.append(item)
        if facts:
            self.runtime_names.add("fact")
        args = [py_str(t.name), py_str(chk.message), py_str(chk.source)]
        if facts or self.message_values(chk):
            args.append("[" + ", ".join(facts) + "]")
        args += [f"{n}={self.var_name(n)}" for n in self.message_values(chk)]
        self.runtime_names.add("precondition_failed")
        out(8, f"raise precondition_failed({', '.join(args)})")

    def message_values(self, chk: ir.Check) -> list[str]:
        """The parameters the check's message template names, in order of appearance."""
        try:
            fields = [f for _, f, _, _ in string.Formatter().parse(chk.message) if f]
        except ValueError:
            return []  # a malformed template fails at run time, as in the interpreter
        used: list[str] = []
        for f in fields:
            root = re.split(r"[.\[!:]", f, maxsplit=1)[0]
            if root in self.tool.params and root not in used:
                used.append(root)
        return used

    def emit_read(self, out: Lines) -> None:
        t = self.tool
        assert t.returns is not None
        out(0)
        safe = {n for n, p in t.params.items() if isinstance(p.ty, RefT)}
        exc = self.exc_name
        if may_raise(t.returns, safe):
            out(4, "try:")
            out.stmt(8, "return ", self.source(t.returns))
            out(4, f"except ToolError as {exc}:")
            out(8, f"raise {exc}.within({py_str(t.name)}, unless_prefixed=True) from None")
            self.runtime_names.add("ToolError")
        else:
            out.stmt(4, "return ", self.source(t.returns))

    def emit_effects(self, out: Lines) -> None:
        t = self.tool
        journal, exc = fresh_name("journal", self.used), self.exc_name
        key = fresh_name("key", self.used)
        rows = {ent: fresh_name(self.names.local[ent], self.used) for ent in self.domain.entities}
        later: list[set[str]] = []  # names read by each effect's successors (and returns)
        reads: set[str] = set()
        if t.returns is not None:
            reads |= {n.name for n in ir.walk(t.returns) if isinstance(n, ir.Var)}
        for s in reversed(t.effects):
            later.insert(0, set(reads))
            for x in ir.effect_exprs(s.effect):
                reads |= {n.name for n in ir.walk(x) if isinstance(n, ir.Var)}
        self.runtime_names |= {"Journal", "ToolError"}
        out(0)
        out(4, f"{journal} = Journal(db.counters)")
        out(4, "try:")
        for s, after in zip(t.effects, later, strict=True):
            out.comment(8, " ".join(s.source.split()))
            self.emit_effect(out, s.effect, journal, key, rows, after)
        out(8, f"db.check_invariants({journal}.touched)")
        if t.returns is not None:
            out(8, f"return {journal}.commit({self.source(t.returns)})")
        else:
            out(8, f'return {journal}.commit("ok")')
        out(4, f"except ToolError as {exc}:")
        out(8, f"{journal}.rollback()")
        out(8, f"raise {exc}.within({py_str(t.name)}, unless_prefixed=True) from None")
        # Any other exception (a fault, an interrupt) undoes the effects too: a call is
        # atomic whatever stops it.
        out(4, "except BaseException:")
        out(8, f"{journal}.rollback()")
        out(8, "raise")

    def _key(self, out: Lines, k: ir.Expr, key: str) -> str:
        if isinstance(k, ir.Var | ir.Lit):
            return self.source(k)
        out.stmt(8, f"{key} = ", self.source(k))
        return key

    def emit_effect(
        self,
        out: Lines,
        eff: ir.Effect,
        journal: str,
        key: str,
        rows: dict[str, str],
        after: set[str],
    ) -> None:
        match eff:
            case ir.Assign(entity=ent, key=k, field=f, op=op, value=val):
                kk = self._key(out, k, key)
                row = rows[ent]
                out.stmt(8, f"{row} = ", f"db.{self.names.getter[ent]}({kk})")
                out(8, f"{journal}.set({py_str(ent)}, {kk}, {row}, {py_str(f)})")
                out.stmt(8, f"{row}.{f} {op} ", self.source(val))
            case ir.ListEdit(entity=ent, key=k, field=f, op=op, value=val):
                kk = self._key(out, k, key)
                row = rows[ent]
                out.stmt(8, f"{row} = ", f"db.{self.names.getter[ent]}({kk})")
                value = self.source(val)
                out(8, f"{journal}.{op}({py_str(ent)}, {kk}, {row}, {py_str(f)}, {value})")
            case ir.Create(entity=ent, bind=b, values=vs):
                edef = self.domain.entities[ent]
                fmt = edef.prefix.replace("{", "{{").replace("}", "}}") + f"{{:0{edef.width}d}}"
                cls = self.names.row_cls[ent]
                self.model_names.add(cls)
                fields = ", ".join(f"{f}={self.source(x)}" for f, x in vs)
                call = f"{journal}.create(db.{ent}, {py_str(ent)}, {py_str(fmt)}, {cls}({fields}))"
                if b is not None and b in after:
                    out(8, f"{self.var_name(b)} = {call}")
                else:
                    out(8, call)
            case ir.Delete(entity=ent, key=k):
                out(8, f"{journal}.delete(db.{ent}, {py_str(ent)}, {self.source(k)})")
            case _:
                assert_never(eff)


def tools_source(domain: Domain, names: EntityNames, header: str) -> str:
    """``tools.py``: one function per tool, ``TOOLS``/``PARAMS`` and ``call_tool``."""
    runtime_names: set[str] = {"ToolError", "check_call"}
    model_names: set[str] = {"Db"}
    typing_names: set[str] = {"Any"}
    body = Lines()
    for i, t in enumerate(domain.tools.values()):
        if i:
            body(0)
            body(0)
        ToolEmitter(domain, names, t, runtime_names, model_names, typing_names).emit(body)
    out = Lines()
    out.docstring(
        0,
        [
            f"The tools of the {domain.name} environment. {header}",
            "Each tool is a plain function of the state (``db``) and its typed "
            "arguments. It checks the arguments in declaration order, then each "
            "precondition (its domain source is the comment above it), then applies the "
            "effects (their source is the comment above each) under a journal that "
            "undoes them all if any step or invariant fails. ``call_tool`` runs a tool "
            "from a name and a JSON object of arguments.",
        ],
    )
    out(0)
    out.lines += import_lines(
        {"collections.abc": ["Callable"], "typing": sorted(typing_names)},
        {},
        {".models": sorted(model_names), ".runtime": sorted(runtime_names)},
    )
    out(0)
    out.lines += body.lines
    out(0)
    out(0)
    out.comment(0, "Every tool by name, in declaration order, with its parameters in order.")
    out(0, "TOOLS: dict[str, Callable[..., Any]] = {")
    for name in domain.tools:
        out(4, f"{py_str(name)}: {name},")
    out(0, "}")
    out(0, "PARAMS: dict[str, tuple[str, ...]] = {")
    for t in domain.tools.values():
        ps = ", ".join(py_str(p) for p in t.params) + ("," if len(t.params) == 1 else "")
        out(4, f"{py_str(t.name)}: ({ps}),")
    out(0, "}")
    out(0)
    out(0)
    out(0, "def call_tool(db: Db, name: str, arguments: object) -> Any:")
    out.docstring(
        4,
        [
            "Run tool ``name`` with ``arguments`` (a JSON object) on ``db``.",
            "Returns the tool's result as plain JSON data. Raises ToolError, whose "
            "message is the observation for the agent; ``db`` is then unchanged.",
        ],
    )
    out(4, "tool = TOOLS.get(name)")
    out(4, "if tool is None:")
    out(8, 'available = ", ".join(TOOLS)')
    out.lines += [
        "        raise ToolError(",
        '            f"unknown tool {name!r}; available: {available}", tool=name, '
        'kind="unknown_tool"',
        "        )",
    ]
    out(4, "params = PARAMS[name]")
    out(4, "args = check_call(name, params, arguments)")
    out(4, "return tool(db, *(args[p] for p in params))")
    return out.text()


# ============================================================================ other files


def schemas_source(domain: Domain, header: str) -> str:
    """``schemas.py``: the strict tool schemas, the finishing action and the policy."""
    out = Lines()
    out.docstring(
        0,
        [
            f"Agent-facing description of the {domain.name} environment. {header}",
            "TOOLS are the OpenAI Chat Completions tool schemas (strict mode) of every "
            f"tool; FINISH_TOOL is the ``{FINISH_NAME}`` action that ends an episode "
            "with the agent's answer; POLICY is the domain policy for the system "
            "prompt; WRITE_TOOLS names the tools that change the state.",
        ],
    )
    out(0)
    out.lines += import_lines({"typing": ["Any"]}, {}, {})
    out.lines.append(f"DOMAIN = {py_str(domain.name)}")
    out.lines.append(f"DOMAIN_HASH = {py_str(domain.content_hash)}")
    out.lines += literal_lines(domain.description.strip(), 0, "DESCRIPTION = ")
    out.lines += literal_lines(
        domain.policy.strip() + "\n" if domain.policy.strip() else "", 0, "POLICY = "
    )
    out(0)
    out.lines += literal_lines(openai_tools(domain), 0, "TOOLS: list[dict[str, Any]] = ")
    out(0)
    out.lines += literal_lines(finish_tool(), 0, "FINISH_TOOL: dict[str, Any] = ")
    out(0)
    out.comment(0, "The tools that change the state (the others only read it).")
    writes = [t.name for t in domain.tools.values() if t.is_write]
    out.lines += literal_lines(writes, 0, "WRITE_TOOLS: list[str] = ")
    return out.text()


def env_source(domain: Domain, header: str) -> str:
    """``env.py``: the episode loop of ``environment.py`` bound to this domain."""
    out = Lines()
    out.docstring(0, [f"The Gymnasium-shaped environment of the {domain.name} tools. {header}"])
    out(0)
    out.lines += import_lines(
        {"collections.abc": ["Mapping"], "typing": ["Any"]},
        {},
        {
            ".environment": ["ToolEnvironment"],
            ".grading": ["grade"],
            ".models": ["Db"],
            ".schemas": ["FINISH_TOOL", "POLICY", "TOOLS"],
            ".tools": ["call_tool"],
        },
    )
    out(0)
    out(0, "class Environment(ToolEnvironment[Db]):")
    out.docstring(
        4,
        [
            f'The {domain.name} environment: ``reset(options={{"task": task}})``, '
            "then ``step(action)`` until terminated or truncated.",
            "The episode logic is ``environment.py``'s; this class binds it to the "
            "state model, the tools, their schemas and the grading function.",
        ],
    )
    out(0)
    out(4, "tool_schemas = TOOLS")
    out(4, "finish_tool = FINISH_TOOL")
    out(4, "policy = POLICY")
    out(0)
    out(4, "def load_state(self, data: Mapping[str, Any]) -> Db:")
    out(8, "return Db.from_state(data)")
    out(0)
    out(4, "def run_tool(self, db: Db, name: str, arguments: object) -> Any:")
    out(8, "return call_tool(db, name, arguments)")
    out(0)
    out(
        4,
        "def grade_state(self, initial: dict[str, Any], final: dict[str, Any], "
        "goal: dict[str, Any], answer: str | None) -> dict[str, Any]:",
    )
    out(8, "return grade(initial, final, goal, answer)")
    return out.text()


def init_source(domain: Domain, names: EntityNames, header: str) -> str:
    """``__init__.py``: the package's public names."""
    out = Lines()
    paras = [f"The {domain.name} environment. {header}"]
    if domain.description.strip():
        paras.append(" ".join(domain.description.split()))
    paras.append(
        "Usage::\n\n    env = Environment()\n"
        '    observation, info = env.reset(options={"task": task})\n'
        "    observation, reward, terminated, truncated, info = env.step(\n"
        '        {"name": ..., "arguments": {...}})'
    )
    out.docstring(0, paras)
    out(0)
    rows = list(names.row_cls.values())
    exported = {
        ".env": ["Environment"],
        ".models": ["Db", *rows],
        ".runtime": ["ToolError"],
        ".schemas": ["DESCRIPTION", "DOMAIN", "DOMAIN_HASH", "FINISH_TOOL", "POLICY", "TOOLS"],
        ".tools": ["call_tool"],
        ".trl_env": ["TrlEnvironment"],
    }
    out.lines += import_lines({}, {}, exported)
    names_all = [n for ns in exported.values() for n in ns]
    out.lines += literal_lines(sort_names(names_all), 0, "__all__ = ")
    return out.text()
