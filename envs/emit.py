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
from dataclasses import dataclass, field, replace
from typing import assert_never

from graphgen import ir
from graphgen.domain import Domain, ToolDef, reads_old
from graphgen.envs.layout import WIDTH, Lines, import_lines, literal_lines, py_str, sort_names
from graphgen.envs.naming import (
    LOCAL_RESERVED,
    CodegenError,
    EntityNames,
    fresh_name,
    rename_variables,
    tool_variables,
)
from graphgen.envs.printer import PRESENT, PyPrinter, may_raise, py_type, type_words
from graphgen.envs.schemas import FINISH_NAME, finish_tool, openai_tools
from graphgen.explain import explained_fields
from graphgen.interp import result_shape
from graphgen.today import uses_today
from graphgen.types import BOOL, DATE, INT, STR, DecT, EnumT, OptT, RefT, Ty, is_number, strip_opt

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
        "Literal[" in py_type(f.ty) for e in domain.entities.values() for f in e.fields.values()
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
    decimal_bounds = any(
        isinstance(strip_opt(f.ty), DecT) and (f.min is not None or f.max is not None)
        for e in domain.entities.values()
        for f in e.fields.values()
    )
    if any(invariants.values()):
        runtime_names.add("check_loaded")
    out.lines += import_lines(
        {
            "collections.abc": ["Iterable", "Mapping"],
            "typing": ["Any", "Literal"] if uses_literal else ["Any"],
            "decimal": ["Decimal"] if decimal_bounds else [],
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
            out(4, f"{f.name}: {py_type(f.ty, domain.int_keys)}")
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
        kt = "int" if ent in domain.int_keys else "str"
        out(4, f"{ent}: dict[{kt}, {names.row_cls[ent]}] = Field(default_factory=dict)")
    ones = ", ".join(f"{py_str(e)}: 1" for e in domain.entities)
    out(4, f"counters: dict[str, int] = Field(default_factory=lambda: {{{ones}}})")
    today = uses_today(domain)
    if today:
        out.comment(4, "The state's today, which today() reads (None: the default date).")
        out(4, "today: str | None = None")
    out(0)
    out(4, "@classmethod")
    out(4, "def from_state(cls, data: Mapping[str, Any]) -> Db:")
    out.docstring(
        8,
        [
            "A Db from the JSON form of a state (graphgen's State.to_dict).",
            '    {"tables": {entity: {id: row}}, "counters": {entity: next id number}}',
            *(
                ['Ids of the tables with int keys are ints (JSON writes id 3 as "3").']
                if domain.int_keys
                else []
            ),
        ],
    )
    if domain.int_keys:
        ints = ", ".join(py_str(e) for e in sorted(domain.int_keys))
        out(8, "tables: dict[str, dict[Any, Any]] = {}")
        out(8, 'for entity, rows in data["tables"].items():')
        out(12, f"if entity in ({ints},):")
        out(16, "tables[entity] = dict(sorted((int(k), r) for k, r in rows.items()))")
        out(12, "else:")
        out(16, "tables[entity] = dict(sorted(rows.items()))")
    else:
        out(
            8,
            "tables = {entity: dict(sorted(rows.items())) "
            'for entity, rows in data["tables"].items()}',
        )
    today_arg = ', "today": data.get("today")' if today else ""
    load = '{**tables, "counters": dict(data["counters"])' + today_arg + "}"
    if not any(invariants.values()):
        out(8, f"return cls.model_validate({load})")
    else:
        out(8, f"db = cls.model_validate({load})")
        # Writes check only the rows they touch: a loaded value out of bounds would break
        # an unrelated call later, so the whole state is checked once here.
        out(8, "problems = [")
        for ent, fs in invariants.items():
            if not fs:
                continue
            # one item a line: a table with many bounded fields stays within the width
            out(12, "*check_loaded(")
            out(16, f"{py_str(ent)},")
            out(16, f"db.{ent},")
            # decimal bounds are checked by the invariants of the rows a call touches
            bounded = [
                f
                for f in fs
                if (f.min is not None or f.max is not None)
                and not isinstance(strip_opt(f.ty), DecT)
            ]
            out(16, "{" if bounded else "{},")
            for f in bounded:
                out(20, f"{py_str(f.name)}: ({f.min!r}, {f.max!r}),")
            if bounded:
                out(16, "},")
            uniques = [f for f in fs if f.unique]
            out(16, "(" if uniques else "(),")
            for f in uniques:
                out(20, f"{py_str(f.name)},")
            if uniques:
                out(16, "),")
            out(12, "),")
        out(8, "]")
        out(8, "if problems:")
        out(12, 'raise ValueError("the state breaks rules of the domain: " + "; ".join(problems))')
        out(8, "return db")
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
    if domain.int_keys:
        # As State.to_dict: the int-keyed tables that have rows, so JSON reads back ints.
        # One list item per table (no tuple unpacking: the line breaker splits at commas).
        ints = ", ".join(f"*([{py_str(e)}] if self.{e} else [])" for e in sorted(domain.int_keys))
        out(12, f'**({{"int_keys": k}} if (k := [{ints}]) else {{}}),')
    if today:
        out(12, '**({"today": self.today} if self.today is not None else {}),')
    out(8, "}")
    # The locals of Db's methods are fixed names: the domain's names appear there only as
    # attributes (self.Entity), so no entity can shadow a local (an entity Self once made
    # a local called self).
    row = "row"
    for ent, edef in domain.entities.items():
        out(0)
        kt = "int" if ent in domain.int_keys else "str"
        out(4, f"def {names.getter[ent]}(self, key: {kt}) -> {names.row_cls[ent]}:")
        out.docstring(8, [f"The {ent} row with id ``key``; a ToolError if there is none."])
        out(8, f"{row} = self.{ent}.get(key)")
        out(8, f"if {row} is None:")
        out(12, f'raise ToolError(f"{ent} {{key!r}} not found", kind="not_found")')
        out(8, f"return {row}")
        out(0)
        out(4, f"def {names.record[ent]}(self, key: {kt}) -> dict[str, Any]:")
        out.docstring(
            8, [f"{ent} ``key`` as tools return it: the id as {edef.key}, then the fields."]
        )
        out(8, f"return {{{py_str(edef.key)}: key, **self.{names.getter[ent]}(key).model_dump()}}")
    out(0)
    kt = "Any" if domain.int_keys else "str"  # Any: the ids of several tables, int or str
    out(4, f"def check_invariants(self, touched: Iterable[tuple[str, {kt}]]) -> None:")
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
                ind = 16
                if isinstance(f.ty, OptT):  # an absent value has no bounds, clashes with none
                    out(16, f"if {row}.{f.name} is not None:")
                    ind = 20
                if f.min is not None or f.max is not None:
                    value, lo, hi = f"{row}.{f.name}", repr(f.min), repr(f.max)
                    if isinstance(strip_opt(f.ty), DecT):  # compared as numbers, shown as text
                        value = f"Decimal({value})"
                        lo, hi = (
                            "None" if b is None else f'Decimal("{b:f}")' for b in (f.min, f.max)
                        )
                    out(
                        ind,
                        f"check_bounds({py_str(ent)}, key, {py_str(f.name)}, {value}, {lo}, {hi})",
                    )
                if f.unique:
                    out(
                        ind,
                        f"check_unique({py_str(ent)}, key, {py_str(f.name)}, {row}.{f.name}, "
                        f"((k, r.{f.name}) for k, r in self.{ent}.items()))",
                    )
    return out.text()


# ============================================================================ tools.py


class _Shifted(Lines):
    """``out`` with every line indented ``by`` more (a case's body inside its ``if``); a
    blank line that would open the block is dropped."""

    def __init__(self, out: Lines, by: int) -> None:
        super().__init__()
        self.lines = out.lines
        self.by = by
        self.started = False

    def __call__(self, indent: int, text: str = "") -> None:
        if not text and not self.started:
            return
        self.started = True
        super().__call__(indent + self.by, text)

    def comment(self, indent: int, text: str) -> None:
        super().comment(indent + self.by, text)


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
    decimal_names: set[str] = field(default_factory=set)  # Decimal and .decimals names used

    def __post_init__(self) -> None:
        reserved = set(self.names.row_cls.values())
        self.variables = rename_variables(tool_variables(self.tool), reserved)
        self.used = (
            set(self.variables.values()) | reserved | LOCAL_RESERVED | set(self.domain.tools)
        )
        self.printer = PyPrinter(self.names, self.variables)
        self.printer.optional_vars = {
            n for n, p in self.tool.params.items() if isinstance(p.ty, OptT)
        }
        self.printer.optional_fields = {
            (e, f)
            for e, d in self.domain.entities.items()
            for f, fd in d.fields.items()
            if isinstance(fd.ty, OptT)
        }
        self.ok_name = fresh_name("ok", self.used)
        self.exc_name = fresh_name("exc", self.used)

    def source(self, x: ir.Expr) -> str:
        """``x`` as Python; the runtime helpers it calls are recorded for the imports."""
        out = self.printer.expr(x)
        self.runtime_names |= self.printer.helpers
        self.decimal_names |= self.printer.decimal_names
        return out

    def result_source(self, x: ir.Expr) -> str:
        """``x`` as Python giving the tool's result in JSON form (decimals as text)."""
        out = self.source(x)
        shape = result_shape(x.ty)
        if shape is None:
            return out
        if isinstance(shape, int) and isinstance(x.ty, DecT):
            self.decimal_names.add("dec_text")
            return f"dec_text({out}, {shape})"
        self.decimal_names.add("to_result")
        self.typing_names.add("cast")
        return f"cast({self.annotate(x.ty)!r}, to_result({out}, {shape!r}))"

    def stored_source(self, x: ir.Expr, ty: Ty, current: str | None = None, op: str = "=") -> str:
        """The value a field of type ``ty`` keeps after ``op`` with ``x``; a decimal
        field keeps its JSON text (``current`` is the field's present text, for += / -=)."""
        value = self.source(x)
        if isinstance(ty, OptT) and isinstance(ty.inner, DecT):  # its text, or None
            self.decimal_names.add("to_result")
            return f"to_result({value}, {ty.inner.scale})"
        if not isinstance(ty, DecT):
            return value
        self.decimal_names |= {"dec_text", "Decimal"}
        if op != "=":
            value = f"Decimal({current}) {op[0]} ({value})"
        return f"dec_text({value}, {ty.scale})"

    def var_name(self, name: str) -> str:
        """The Python spelling of domain variable ``name``."""
        return self.variables.get(name, name)

    def annotate(self, t: Ty) -> str:
        """The annotation of ``t``; the typing names it uses are recorded for the imports."""
        s = py_type(t, self.domain.int_keys)
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
        if t.cases:
            self.emit_cases(out)
        elif t.effects:
            self.emit_effects(out)
        else:
            self.emit_read(out)

    def emit_cases(self, out: Lines) -> None:
        """The first case whose ``when`` holds runs (its effects, or just its result);
        none holding is a ToolError, as in the interpreter."""
        t = self.tool
        safe = {n for n, p in t.params.items() if isinstance(p.ty, RefT)}
        ok, exc = self.ok_name, self.exc_name
        for i, case in enumerate(t.cases):
            out(0)
            label = f"case {i}" + (" (soft failure)" if case.fails else "")
            if case.when_source is not None:
                label += ": when " + " ".join(case.when_source.split())
            out.comment(4, label)
            inner = _Shifted(out, 4)
            if case.when is not None:
                if may_raise(case.when, safe):
                    out(4, "try:")
                    out.stmt(8, f"{ok} = ", self.source(case.when))
                    out(4, f"except ToolError as {exc}:")
                    out(8, f"raise {exc}.within({py_str(t.name)}) from None")
                    self.runtime_names.add("ToolError")
                    out(4, f"if {ok}:")
                else:
                    out.stmt(4, "if ", self.source(case.when), ":")
            else:
                inner = _Shifted(out, 0)
            if case.effects:
                self.emit_effects(inner, case.effects, case.returns)
            else:
                self.emit_read(inner, case.returns)
            if case.when is None:
                return  # later cases are never reached
        out(0)
        self.runtime_names.add("ToolError")
        args = f'{py_str(t.name + ": no case applies")}, tool={py_str(t.name)}, kind="no_case"'
        if len(args) + 21 <= WIDTH:
            out(4, f"raise ToolError({args})")
        else:
            out(4, "raise ToolError(")
            out(8, args)
            out(4, ")")

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
        elif t.cases and t.returns is not None:
            lines = ["Returns:"]
            for i, c in enumerate(t.cases):
                head = f"case {i}" + (" (soft failure)" if c.fails else "") + ": "
                src = " ".join((c.returns_source or '"ok"').split())
                lines += textwrap.wrap(
                    head + src, WIDTH - 12, initial_indent="    ", subsequent_indent="        "
                )
            paras.append("\n".join(lines))
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
        for p0 in t.params.values():
            name, py = py_str(t.name), self.var_name(p0.name)
            lead = f"{name}, {py_str(p0.name)}, {py}"
            p = p0
            ind = 4
            optional = isinstance(p0.ty, OptT)
            if isinstance(p0.ty, OptT):  # None is valid; a present value is checked
                p = replace(p0, ty=p0.ty.inner)
            if (p.min is not None or p.max is not None) and not is_number(p.ty):
                raise CodegenError(
                    f"{self.domain.source}: tool {t.name!r}: bounds on the "
                    f"non-int parameter {p.name!r} are not supported"
                )
            if isinstance(p.ty, DecT):
                # checked and read as a Decimal under a name of its own
                value = fresh_name(f"{py}_value", self.used)
                self.used.add(value)
                bounds = ", ".join(
                    "None" if b is None else f'Decimal("{b:f}")' for b in (p.min, p.max)
                )
                self.decimal_names |= {"check_decimal", "Decimal"}
                self.runtime_names.add("ToolError")
                check = f"check_decimal({lead}, {p.ty.scale}, {bounds}, ToolError)"
                out(
                    4,
                    f"{value} = None if {py} is None else {check}"
                    if optional
                    else f"{value} = {check}",
                )
                self.variables[p.name] = value
                continue
            if optional:
                out(4, f"if {py} is not None:")
                ind = 8
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
                fn = "check_int_ref" if ent in self.domain.int_keys else "check_ref"
                line = f"{fn}({lead}, db.{ent}, {py_str(ent)})"
            elif p.ty == STR:
                fn, line = "check_str", f"check_str({lead})"
            else:
                raise CodegenError(
                    f"{self.domain.source}: tool {t.name!r}: parameter "
                    f"{p.name!r} has type {p.ty.show()}"
                )
            self.runtime_names.add(fn)
            out(ind, line)

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

    def emit_read(self, out: Lines, returns: ir.Expr | None = None) -> None:
        t = self.tool
        returns = t.returns if returns is None and not t.cases else returns
        out(0)
        if returns is None:  # a case without a result returns "ok", as a write does
            out(4, 'return "ok"')
            return
        safe = {n for n, p in t.params.items() if isinstance(p.ty, RefT)}
        exc = self.exc_name
        if may_raise(returns, safe):
            out(4, "try:")
            out.stmt(8, "return ", self.result_source(returns))
            out(4, f"except ToolError as {exc}:")
            out(8, f"raise {exc}.within({py_str(t.name)}, unless_prefixed=True) from None")
            self.runtime_names.add("ToolError")
        else:
            out.stmt(4, "return ", self.result_source(returns))

    def emit_effects(
        self,
        out: Lines,
        effects: tuple[ir.Stmt, ...] | None = None,
        returns: ir.Expr | None = None,
    ) -> None:
        t = self.tool
        if effects is None:  # the tool-level shorthand: one case
            effects, returns = t.effects, t.returns
        journal, exc = fresh_name("journal", self.used), self.exc_name
        key = fresh_name("key", self.used)
        rows = {ent: fresh_name(self.names.local[ent], self.used) for ent in self.domain.entities}
        later: list[set[str]] = []  # names read by each effect's successors (and returns)
        reads: set[str] = set()
        if returns is not None:
            reads |= {n.name for n in ir.walk(returns) if isinstance(n, ir.Var)}
        for s in reversed(effects):
            later.insert(0, set(reads))
            for x in ir.effect_exprs(s.effect):
                reads |= {n.name for n in ir.walk(x) if isinstance(n, ir.Var)}
        self.runtime_names |= {"Journal", "ToolError"}
        out(0)
        if reads_old(effects, returns):
            # old(...) and let names read the state as it was before the effects; a case
            # that reads none of it makes no copy (nor an unused name).
            before = fresh_name("before", self.used)
            out(4, f"{before} = db.model_copy(deep=True)")
            self.printer.old_db = before
        out(4, f"{journal} = Journal(db.counters)")
        out(4, "try:")
        for s, after in zip(effects, later, strict=True):
            out.comment(8, " ".join(s.source.split()))
            self.emit_effect(out, s.effect, journal, key, rows, after)
        out(8, f"db.check_invariants({journal}.touched)")
        if returns is not None:
            out(8, f"return {journal}.commit({self.result_source(returns)})")
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
        # The copy is this case's own: later guards and cases read old(...) as the state
        # as it is (no effect has run there), not a name that may never have been set.
        self.printer.old_db = None

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
                fty = self.domain.entities[ent].fields[f].ty
                if isinstance(strip_opt(fty), DecT):
                    out.stmt(8, f"{row}.{f} = ", self.stored_source(val, fty, f"{row}.{f}", op))
                else:
                    out.stmt(8, f"{row}.{f} {op} ", self.source(val))
            case ir.ListEdit(entity=ent, key=k, field=f, op=op, value=val):
                kk = self._key(out, k, key)
                row = rows[ent]
                out.stmt(8, f"{row} = ", f"db.{self.names.getter[ent]}({kk})")
                value = self.source(val)
                out(8, f"{journal}.{op}({py_str(ent)}, {kk}, {row}, {py_str(f)}, {value})")
            case ir.Create(entity=ent, bind=b, values=vs, key=given):
                edef = self.domain.entities[ent]
                fmt = edef.prefix.replace("{", "{{").replace("}", "}}") + f"{{:0{edef.width}d}}"
                cls = self.names.row_cls[ent]
                self.model_names.add(cls)
                fields = ", ".join(f"{f}={self.stored_source(x, edef.fields[f].ty)}" for f, x in vs)
                if given is not None:
                    # Inline, not a runtime method: runtime.py is shared verbatim by every
                    # package, and this keeps the packages that never name a key unchanged.
                    kv = self.var_name(b) if b is not None and b in after else key
                    out.stmt(8, f"{kv} = ", self.source(given))
                    if not edef.int_key:
                        out(8, f"if not {kv}:")
                        msg = f"f{py_str(ent + ' ids are non-empty strings, got {' + kv + '!r}')}"
                        out(12, f'raise ToolError({msg}, kind="bad_args")')
                    out(8, f"if {kv} in db.{ent}:")
                    msg = f"f{py_str(ent + ' {' + kv + '!r} already exists')}"
                    out(12, f'raise ToolError({msg}, kind="exists")')
                    n = f"{journal}.counters[{py_str(ent)}] - 1"
                    out(
                        8, f"{journal}._insert(db.{ent}, {py_str(ent)}, {kv}, {n}, {cls}({fields}))"
                    )
                    return
                if edef.int_key:
                    call = f"{journal}.create_int(db.{ent}, {py_str(ent)}, {cls}({fields}))"
                else:
                    call = (
                        f"{journal}.create(db.{ent}, {py_str(ent)}, {py_str(fmt)}, {cls}({fields}))"
                    )
                if b is not None and b in after:
                    out(8, f"{self.var_name(b)} = {call}")
                else:
                    out(8, call)
            case ir.Delete(entity=ent, key=k):
                out(8, f"{journal}.delete(db.{ent}, {py_str(ent)}, {self.source(k)})")
            case _:
                assert_never(eff)


def _present_helper() -> list[str]:
    """``present``: an optional value the domain's ``is not None`` tests showed present
    (for type checkers; the tests make the error unreachable)."""
    return [
        '_T = TypeVar("_T")',
        "",
        "",
        "def present(value: _T | None) -> _T:",
        '    """A value that ``is not None`` tests have shown present."""',
        "    if value is None:",
        '        raise ToolError("a value expected present is None", kind="invariant")',
        "    return value",
        "",
        "",
    ]


def tools_source(domain: Domain, names: EntityNames, header: str) -> str:
    """``tools.py``: one function per tool, ``TOOLS``/``PARAMS`` and ``call_tool``."""
    runtime_names: set[str] = {"ToolError", "check_call"}
    model_names: set[str] = {"Db"}
    typing_names: set[str] = {"Any"}
    decimal_names: set[str] = set()
    body = Lines()
    for i, t in enumerate(domain.tools.values()):
        if i:
            body(0)
            body(0)
        ToolEmitter(domain, names, t, runtime_names, model_names, typing_names, decimal_names).emit(
            body
        )
    if PRESENT in runtime_names:  # defined in this file, not imported from the runtime
        typing_names.add("TypeVar")
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
        {
            "collections.abc": ["Callable"],
            "typing": sorted(typing_names),
            "decimal": sorted(decimal_names & {"Decimal"}),
        },
        {},
        {
            ".decimals": sorted(decimal_names - {"Decimal"}),
            ".models": sorted(model_names),
            ".runtime": sorted(runtime_names - {PRESENT}),
        },
    )
    if PRESENT in runtime_names:
        out.lines += _present_helper()
    else:
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
    defaults = {
        t.name: {p.name: p.default for p in t.params.values() if p.has_default}
        for t in domain.tools.values()
        if any(p.has_default for p in t.params.values())
    }
    if defaults:
        out.comment(0, "The value an absent argument takes, per tool and parameter.")
        out.lines += literal_lines(defaults, 0, "DEFAULTS: dict[str, dict[str, Any]] = ")
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
    if defaults:  # an absent argument takes its default (only domains that declare any)
        out(4, "if isinstance(arguments, dict):")
        out(8, "arguments = {**DEFAULTS.get(name, {}), **arguments}")
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
