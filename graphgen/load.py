"""Load domain files: YAML → :class:`~graphgen.spec.DomainSpec` → :class:`Domain`.

Every problem is collected with its location (file, line, tool or entity, expression,
column) and raised together as one :class:`~graphgen.errors.DomainError`, so an author
sees all mistakes in one run.
"""

from __future__ import annotations

import keyword
import re
import string
import unicodedata
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from graphgen import ir
from graphgen.domain import (
    Derive,
    Domain,
    EntityDef,
    FieldDef,
    Intent,
    Invariant,
    ParamDef,
    Phrase,
    ToolDef,
    canonical_json,
)
from graphgen.errors import DomainError, ExprError, Located
from graphgen.limits import (
    MAX_EXPR_COST,
    MAX_NAME_CHARS,
    SAFE_LOADER,
    domain_costs,
    text_problems,
    yaml_alias_problem,
    yaml_shape_problem,
)
from graphgen.parse import Elaborator, is_iso_date, prim_of
from graphgen.spec import DomainSpec, FieldSpec, ParamSpec
from graphgen.types import BOOL, DATE, INT, STR, EnumT, ListT, RefT, RowT, Ty, is_scalar

# \Z, not $: "$" also matches before a final newline, and "deposit\n" is no name.
TOOL_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}\Z")
_LIST = re.compile(r"^list\[\s*([A-Za-z_][A-Za-z0-9_]*)\s*\]\Z")


def _is_name(name: str) -> bool:
    """A field or parameter name: an identifier, not a keyword, no leading ``_``,
    at most :data:`~graphgen.limits.MAX_NAME_CHARS` characters."""
    return (
        name.isidentifier()
        and not keyword.iskeyword(name)
        and not name.startswith("_")
        and len(name) <= MAX_NAME_CHARS
    )


def name_problem(name: str) -> str | None:
    """Why ``name`` cannot name an entity, field, key, tool or parameter, or None.

    Domain names become Python identifiers in expressions and in the compiled package.
    Python reads an identifier in its NFKC form, so a fullwidth ``db`` would *be* ``db``
    and the ligature ``fi`` would be ``fi``: two names that look different could be one,
    or take a name the generated code uses. A leading underscore is kept for the
    generated code's own names.

    >>> print(name_problem("\\uff44\\uff42"))  # fullwidth d, b
    Python reads the name '\\uff44\\uff42' as 'db'; write it as 'db'
    >>> name_problem("_hidden")
    "the name '_hidden' starts with '_', which is kept for generated names"
    >>> name_problem("balance") is None
    True
    """
    folded = unicodedata.normalize("NFKC", name)
    if folded != name:
        shown = ascii(name)  # the terminal may draw the two alike
        return f"Python reads the name {shown} as {folded!r}; write it as {folded!r}"
    if name.startswith("_"):
        return f"the name {name!r} starts with '_', which is kept for generated names"
    return None


def _lines(text: str) -> dict[tuple[str, str], int]:
    """Line numbers of ``entities.X`` and ``tools.Y`` keys, and duplicate-key checks."""
    out: dict[tuple[str, str], int] = {}
    # The composer recurses and aliases share nodes: bound the nesting before composing
    # and the expanded size before walking, or a small file takes minutes (or the stack).
    shape = yaml_shape_problem(text)
    if shape is not None:
        raise DomainError([shape])
    root = yaml.compose(text, Loader=SAFE_LOADER)
    if root is not None:
        aliases = yaml_alias_problem(root)
        if aliases is not None:
            raise DomainError([aliases])
    dups: list[Located] = []

    def visit(node: yaml.Node, path: tuple[str, ...]) -> None:
        if isinstance(node, yaml.MappingNode):
            seen: dict[str, int] = {}
            for k, v in node.value:
                key = str(k.value)
                line = k.start_mark.line + 1
                if key in seen:
                    where = ".".join(path) or "top level"
                    what = "tool" if path == ("tools",) else "key"
                    dups.append(
                        Located(
                            f"duplicate {what} {key!r} (line {line}; first at line {seen[key]})",
                            where=f"{where} (line {line})",
                        )
                    )
                seen[key] = line
                if len(path) == 1 and path[0] in ("entities", "tools"):
                    out.setdefault((path[0], key), line)
                visit(v, (*path, key))
        elif isinstance(node, yaml.SequenceNode):
            for i, v in enumerate(node.value):
                visit(v, (*path, str(i)))

    if root is not None:
        visit(root, ())
    if dups:
        raise DomainError(dups)
    return out


def load_domain(path: str | Path) -> Domain:
    """Load, validate and type-check a domain YAML file.

    Raises :class:`DomainError` listing every problem found, each naming the file.

    >>> from graphgen.domains import builtin_path
    >>> load_domain(builtin_path("mock")).name
    'mock'
    """
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise DomainError([Located(f"cannot read file: {exc}", file=str(p))]) from None
    return loads_domain(text, source=str(p))


def loads_domain(text: str, source: str = "<domain>") -> Domain:
    """Load a domain from YAML text; ``source`` names it in error messages."""
    try:
        lines = _lines(text)
        raw = yaml.load(text, Loader=SAFE_LOADER)
    except DomainError as err:
        for pr in err.problems:
            pr.file = source
        raise
    except ValueError as exc:  # the constructor's int(): a decimal past 4300 digits
        raise DomainError([Located(f"bad YAML value: {exc}", file=source)]) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        raise DomainError(
            [Located(f"YAML syntax error: {exc}", file=source, where=where)]
        ) from None
    if not isinstance(raw, dict):
        raise DomainError([Located("a domain file is a YAML mapping", file=source)])
    texts = text_problems(raw)
    if texts:
        for pr in texts:
            pr.file = source
        raise DomainError(texts)
    try:
        spec = DomainSpec.model_validate(raw)
    except ValidationError as exc:
        problems = []
        for e in exc.errors():
            loc = ".".join(str(x) for x in e["loc"])
            where = loc
            if len(e["loc"]) >= 2 and e["loc"][0] in ("tools", "entities"):
                kind = "tool" if e["loc"][0] == "tools" else "entity"
                rest = ".".join(str(x) for x in e["loc"][2:])
                line = lines.get((str(e["loc"][0]), str(e["loc"][1])))
                where = f"{kind} {e['loc'][1]!r}" + (f" (line {line})" if line else "")
                where += f", {rest}" if rest else ""
            problems.append(Located(e["msg"], file=source, where=where))
        raise DomainError(problems) from None
    return elaborate_domain(spec, source=source, lines=lines)


class _Compiler:
    def __init__(self, spec: DomainSpec, source: str, lines: dict[tuple[str, str], int]) -> None:
        self.spec = spec
        self.source = source
        self.lines = lines
        self.problems: list[Located] = []
        self.enums: dict[str, EnumT] = {}

    def where(self, kind: str, name: str, part: str = "") -> str:
        line = self.lines.get(("tools" if kind == "tool" else "entities", name))
        s = f"{kind} {name!r}" + (f" (line {line})" if line else "")
        return s + (f", {part}" if part else "")

    def err(self, msg: str, where: str, expr: str = "", col: int | None = None) -> None:
        self.problems.append(Located(msg, self.source, where, expr, col))

    def resolve(
        self, s: FieldSpec | ParamSpec, owner: str, fname: str, where: str
    ) -> tuple[Ty | None, tuple[str, str] | None]:
        t = s.type.strip()
        if t == "enum":
            if s.enum is not None:
                if s.enum not in self.enums:
                    self.err(f"unknown enum {s.enum!r}", where)
                    return None, None
                return self.enums[s.enum], None
            if not s.values:
                self.err("an enum needs 'values' (or 'enum: <shared enum name>')", where)
                return None, None
            if len(set(s.values)) != len(s.values):
                self.err("enum values repeat", where)
            return EnumT(f"{owner}.{fname}", tuple(s.values)), None
        if s.values is not None:
            self.err(f"'values' only goes with type enum, not {t!r}", where)
        p = prim_of(t)
        if p is not None:
            return p, None
        if t in self.spec.entities:
            return RefT(t), None
        if t in self.enums:
            return self.enums[t], None
        m = _LIST.match(t)
        if m:
            inner = m.group(1)
            if inner in self.spec.entities:
                return ListT(RefT(inner)), None
            pi = prim_of(inner)
            if pi is not None:
                return ListT(pi), None
            self.err(f"unknown type {inner!r} in {t!r} (not an entity or primitive)", where)
            return None, None
        if isinstance(s, ParamSpec) and "." in t:
            ent, _, fld = t.partition(".")
            e = self.spec.entities.get(ent)
            if e is None:
                self.err(f"unknown entity {ent!r} in parameter type {t!r}", where)
                return None, None
            if fld == e.key.name:
                return RefT(ent), None
            fs = e.fields.get(fld)
            if fs is None:
                self.err(f"{ent} has no field {fld!r} (parameter type {t!r})", where)
                return None, None
            ft, _ = self.resolve(fs, ent, fld, where)
            if ft is not None and not is_scalar(ft):
                self.err(f"parameter type {t!r} is not a scalar field", where)
                return None, None
            return ft, (ent, fld)
        self.err(f"unknown type {t!r} (int, str, bool, date, enum, an entity, list[...])", where)
        return None, None

    def entities(self) -> dict[str, EntityDef]:
        out: dict[str, EntityDef] = {}
        for name, es in self.spec.entities.items():
            if not TOOL_NAME.match(name) or keyword.iskeyword(name):
                self.err("entity names are identifiers", self.where("entity", name))
            elif problem := name_problem(name):
                self.err(problem, self.where("entity", name))
            if problem := name_problem(es.key.name):
                self.err(problem, self.where("entity", name, "key"))
            fields: dict[str, FieldDef] = {}
            if es.key.name in es.fields:
                self.err(
                    f"key {es.key.name!r} is also listed as a field",
                    self.where("entity", name, f"fields.{es.key.name}"),
                )
            for fname, fs in es.fields.items():
                w = self.where("entity", name, f"fields.{fname}")
                if not _is_name(fname):
                    self.err(f"field name {fname!r} is not allowed", w)
                elif problem := name_problem(fname):
                    self.err(problem, w)
                if fs.vocab is not None and len(fs.vocab) > MAX_NAME_CHARS:
                    self.err(f"vocab hint longer than {MAX_NAME_CHARS} characters", w)
                ty, _ = self.resolve(fs, name, fname, w)
                if ty is None:
                    continue
                if (fs.min is not None or fs.max is not None) and ty != INT:
                    self.err("min/max bounds only apply to int fields", w)
                if fs.min is not None and fs.max is not None and fs.min > fs.max:
                    self.err(f"min {fs.min} is above max {fs.max}", w)
                if fs.unique and not is_scalar(ty):
                    self.err("only scalar fields can be unique", w)
                fields[fname] = FieldDef(
                    fname, ty, fs.unique, fs.givable, fs.min, fs.max, fs.vocab, fs.description
                )
            if es.display is not None and es.display not in es.fields:
                self.err(
                    f"display field {es.display!r} is not a field of {name}",
                    self.where("entity", name, "display"),
                )
            out[name] = EntityDef(
                name,
                es.key.name,
                es.key.prefix,
                es.key.width,
                es.key.givable,
                fields,
                es.description,
                es.size,
                es.display,
            )
        return out

    def rules(self, ents: dict[str, EntityDef], el: Elaborator) -> None:
        """Type-check each entity's ``generate`` block and ``invariants``; store them on
        its EntityDef."""
        for name, es in self.spec.entities.items():
            edef = ents.get(name)
            if edef is None:
                continue
            scope: dict[str, Ty] = {"x": RowT(name)}
            invariants: list[Invariant] = []
            seen: set[str] = set()
            for i, inv in enumerate(es.invariants):
                label = inv.name or f"invariants[{i}]"
                w = self.where(
                    "entity", name, f"invariants[{i}]" + (f" ({inv.name})" if inv.name else "")
                )
                if inv.name and inv.name in seen:
                    self.err(f"invariant name {inv.name!r} repeats", w, inv.check)
                seen.add(inv.name)
                try:
                    invariants.append(
                        Invariant(label, el.condition(inv.check, scope), inv.check, inv.policy)
                    )
                except ExprError as exc:
                    self.err(exc.message, w, inv.check, exc.col)
            edef = ents[name] = replace(edef, invariants=tuple(invariants))
            if es.generate is None:
                continue
            derives: list[Derive] = []
            for fname, src in es.generate.derive.items():
                w = self.where("entity", name, f"generate.derive.{fname}")
                if fname == edef.key:
                    self.err(f"cannot derive the key {name}.{fname}", w, src)
                    continue
                f = edef.fields.get(fname)
                if f is None:
                    if fname not in es.fields:  # else its type failed and was reported
                        known = ", ".join(edef.fields) or "none"
                        self.err(
                            f"{name} has no field {fname!r} to derive (fields: {known})", w, src
                        )
                    continue
                try:
                    e = el.expr(src, scope)
                except ExprError as exc:
                    self.err(exc.message, w, src, exc.col)
                    continue
                fitted = _fit(e, f.ty)
                if fitted is None:
                    self.err(
                        f"derived {name}.{fname} must be {f.ty.show()}, this is {e.ty.show()}",
                        w,
                        src,
                        1,
                    )
                    continue
                derives.append(Derive(fname, fitted, src))
            checks: list[ir.Check] = []
            for i, src in enumerate(es.generate.require):
                w = self.where("entity", name, f"generate.require[{i}]")
                try:
                    checks.append(ir.Check(el.condition(src, scope), src))
                except ExprError as exc:
                    self.err(exc.message, w, src, exc.col)
            ents[name] = replace(edef, derive=tuple(derives), require=tuple(checks))

    def tool(self, name: str, el: Elaborator) -> ToolDef | None:
        ts = self.spec.tools[name]
        ok = True
        if not TOOL_NAME.match(name):
            self.err(
                "tool names must match ^[A-Za-z_][A-Za-z0-9_]{0,63}$", self.where("tool", name)
            )
            ok = False
        elif problem := name_problem(name):
            self.err(problem, self.where("tool", name))
            ok = False
        params: dict[str, ParamDef] = {}
        for pname, ps in ts.params.items():
            w = self.where("tool", name, f"params.{pname}")
            if not _is_name(pname):
                self.err(f"parameter name {pname!r} is not allowed", w)
                ok = False
                continue
            if problem := name_problem(pname):
                self.err(problem, w)
                ok = False
                continue
            if pname in self.spec.entities:
                self.err(f"parameter {pname!r} shadows the entity of that name", w)
                ok = False
                continue
            if ps.vocab is not None and len(ps.vocab) > MAX_NAME_CHARS:
                self.err(f"vocab hint longer than {MAX_NAME_CHARS} characters", w)
                ok = False
            ty, src = self.resolve(ps, name, pname, w)
            if ty is None:
                ok = False
                continue
            if not is_scalar(ty):
                self.err(f"parameters are scalars, {pname!r} is {ty.show()}", w)
                ok = False
                continue
            if (ps.min is not None or ps.max is not None) and ty != INT:
                self.err(
                    f"min/max bounds only apply to int parameters, {pname!r} is {ty.show()}", w
                )
                ok = False
                continue
            params[pname] = ParamDef(pname, ty, src, ps.description, ps.min, ps.max, ps.vocab)
        scope: dict[str, Ty] = {p.name: p.ty for p in params.values()}

        checks: list[ir.Check] = []
        for i, c in enumerate(ts.requires):
            for msg in message_problems(c.message, params):
                self.err(msg, self.where("tool", name, f"requires[{i}].message"), c.message)
                ok = False
            try:
                checks.append(ir.Check(el.condition(c.check, scope), c.check, c.message))
            except ExprError as exc:
                self.err(exc.message, self.where("tool", name, f"requires[{i}]"), c.check, exc.col)
                ok = False
        effects: list[ir.Stmt] = []
        escope = dict(scope)
        for i, src_e in enumerate(ts.effects):
            try:
                effects.append(ir.Stmt(el.effect(src_e, escope), src_e))
            except ExprError as exc:
                self.err(exc.message, self.where("tool", name, f"effects[{i}]"), src_e, exc.col)
                ok = False
        ret: ir.Expr | None = None
        if ts.returns is not None:
            try:
                ret = el.expr(ts.returns, escope)
            except ExprError as exc:
                self.err(exc.message, self.where("tool", name, "returns"), ts.returns, exc.col)
                ok = False
        if not ts.effects and ts.returns is None:
            self.err("a tool needs effects or a return value", self.where("tool", name))
            ok = False
        intents: list[Intent] = []
        for i, it in enumerate(ts.intents):
            w = self.where("tool", name, f"intents[{i}]")
            problems = template_problems(it.text, params)
            for msg in problems:
                self.err(msg, w, it.text)
            ok = ok and not problems
            guard: ir.Expr | None = None
            if it.when is not None:
                try:
                    guard = el.condition(it.when, scope)
                except ExprError as exc:
                    self.err(exc.message, f"{w}.when", it.when, exc.col)
                    ok = False
            intents.append(Intent(it.text, guard, it.when))
        if not ok:
            return None
        return ToolDef(
            name,
            ts.description,
            params,
            tuple(checks),
            tuple(effects),
            ret,
            ts.returns,
            tuple(intents),
        )

    def run(self) -> Domain:
        dumped = self.spec.model_dump(mode="json")
        for ename, vals in self.spec.enums.items():
            if not TOOL_NAME.match(ename) or keyword.iskeyword(ename):
                self.err("enum names are identifiers", f"enum {ename!r}")
            if not vals or len(set(vals)) != len(vals):
                self.err("a shared enum needs distinct values", f"enum {ename!r}")
            self.enums[ename] = EnumT(ename, tuple(vals))
        ents = self.entities()
        el = Elaborator(ents)
        self.rules(ents, el)
        tools: dict[str, ToolDef] = {}
        for name in self.spec.tools:
            t = self.tool(name, el)
            if t is not None:
                tools[name] = t
        phrases = self.phrases(ents, tools)
        if self.problems:
            raise DomainError(self.problems)
        for e in dumped["entities"].values():
            if e.get("generate") is None:  # no block: same hash as before blocks existed
                e.pop("generate", None)
            if not e.get("invariants"):  # likewise for entities without invariants
                e.pop("invariants", None)
        # Unguarded intents and an empty phrase table hash as they did before guards and
        # phrases existed, so domains that use neither keep their hash.
        for t in dumped["tools"].values():
            t["intents"] = [x["text"] if x["when"] is None else x for x in t["intents"]]
        if not dumped["phrases"]:
            dumped.pop("phrases")
        domain = Domain(
            self.spec.name,
            self.spec.description,
            self.spec.policy,
            ents,
            tools,
            self.enums,
            self.source,
            canonical_json(dumped),
            phrases,
        )
        for where, src, cost in domain_costs(domain):
            if cost > MAX_EXPR_COST:
                self.err(
                    f"too costly: about {cost} evaluation steps at the declared table sizes "
                    f"(the limit is {MAX_EXPR_COST}); nested comprehensions multiply their "
                    "tables' rows",
                    where,
                    src,
                )
        if self.problems:
            raise DomainError(self.problems)
        return domain

    def phrases(self, ents: dict[str, EntityDef], tools: dict[str, ToolDef]) -> dict[str, Phrase]:
        """The ``phrases:`` table, each key checked against the schema."""
        out: dict[str, Phrase] = {}
        for key, ps in self.spec.phrases.items():
            w = f"phrases {key!r}"
            owner, _, member = key.partition(".")
            ty: Ty | None = None
            if owner in ents and member in ents[owner].fields:
                ty = ents[owner].fields[member].ty
            elif owner in tools and member in tools[owner].params:
                ty = tools[owner].params[member].ty
            if ty is None:
                if owner not in self.spec.entities and owner not in self.spec.tools:
                    self.err("not an Entity.field or tool.param of this domain", w)
                elif owner in ents or owner in tools:  # else the owner has its own errors
                    self.err(f"{owner} has no field or parameter {member!r}", w)
                continue
            if ps.form is not None and "{value}" not in ps.form:
                self.err("a form needs the {value} placeholder", w, ps.form)
            members = (
                set(ty.values)
                if isinstance(ty, EnumT)
                else {"true", "false"}
                if ty == BOOL
                else None
            )
            if ps.words and members is None:
                self.err(f"words are for enum and bool fields, not {ty.show()}", w)
            elif members is not None and set(ps.words) - members:
                self.err(f"words for non-members {sorted(set(ps.words) - members)}", w)
            if ps.noun and not isinstance(ty, EnumT):
                self.err("only an enum field can be a noun", w)
            if ps.relation is not None and not isinstance(ty, RefT):
                self.err("a relation name is for reference fields", w)
            if ps.now and (ty != DATE or owner not in tools):
                self.err("now is for date parameters of a tool", w)
            out[key] = Phrase(
                ps.form, ps.before, dict(ps.words), ps.noun, ps.relation, ps.name, ps.now
            )
        return out


def template_problems(text: str, params: dict[str, ParamDef]) -> list[str]:
    """What is wrong with an intent template: unknown placeholders, bad inflections.

    ``{p}`` says parameter ``p``. ``{n:noun}`` (``n`` an int) says ``noun`` in the number
    ``n`` asks for ("ticket" -> "tickets"; ``person/people`` names an irregular plural).
    ``{b:yes words|no words}`` (``b`` a bool) says one of two phrases.
    """
    try:
        fields = [(f, sp) for _, f, sp, _ in string.Formatter().parse(text) if f is not None]
    except ValueError as exc:
        return [f"bad template: {exc}"]
    out = []
    for f, sp in fields:
        p = params.get(f)
        if p is None:
            out.append(f"placeholder {{{f}}} is not a parameter")
        elif sp and p.ty == BOOL and sp.count("|") != 1:
            out.append(f"{{{f}:...}} of a bool needs two phrases 'yes|no'")
        elif sp and p.ty not in (BOOL, INT):
            out.append(f"{{{f}:{sp}}}: inflection is for int and bool parameters")
    return out


# A standard format spec with a width and precision of at most three digits: a wider
# one would let a message allocate gigabytes, a nested field read another value.
_SPEC = re.compile(r"[<>=^]?[+\- ]?#?0?\d{0,3}[,_]?(\.\d{1,3})?[a-zA-Z%]?\Z")
_CONVERT: dict[str, Callable[[object], str]] = {"r": repr, "s": str, "a": ascii}


def message_problems(text: str, params: dict[str, ParamDef]) -> list[str]:
    """What is wrong with a precondition's message template.

    A message is shown to the agent with ``{p}`` filled by parameter ``p``, optionally
    converted (``!r``, ``!s``, ``!a``) and formatted by a short standard spec that suits
    the parameter's type (``{amount:>6}``). Nothing else is allowed between braces (no
    index or attribute access, no nested field): ``str.format`` would act on it when
    the agent first fails the check. A literal brace is written twice: ``{{``, ``}}``.
    """
    try:
        fields = [(f, cv, sp) for _, f, sp, cv in string.Formatter().parse(text) if f is not None]
    except ValueError as exc:
        return [f"bad message template: {exc} (write a literal brace as {{{{ or }}}})"]
    out = []
    for f, conv, spec in fields:
        p = params.get(f)
        if p is None:
            out.append(
                f"placeholder {{{f}}} is not a parameter (write a literal brace as {{{{ or }}}})"
            )
            continue
        convert = _CONVERT.get(conv) if conv else None
        if conv and convert is None:
            out.append(f"placeholder {{{f}!{conv}}}: the conversions are !r, !s and !a")
            continue
        if not spec:
            continue
        sample: object = 0 if p.ty == INT else True if p.ty == BOOL else "x"
        try:
            if not _SPEC.match(spec):
                raise ValueError("not a short standard format spec")
            format(convert(sample) if convert else sample, spec)
        except ValueError as exc:
            out.append(f"placeholder {{{f}:{spec}}}: bad format spec for {p.ty.show()}: {exc}")
    return out


def _fit(e: ir.Expr, want: Ty) -> ir.Expr | None:
    """``e`` typed as ``want``: string literals become enum members, dates or ids (also
    inside ``a if c else b`` and list literals); None if it cannot be."""
    if e.ty == want:
        return e
    if isinstance(e, ir.Lit) and e.ty == STR and isinstance(e.value, str):
        v = e.value
        if (
            (isinstance(want, EnumT) and v in want.values)
            or (want == DATE and is_iso_date(v))
            or isinstance(want, RefT)
        ):
            return ir.Lit(v, want)
        return None
    if isinstance(e, ir.IfExp):
        a, b = _fit(e.then, want), _fit(e.orelse, want)
        return ir.IfExp(e.cond, a, b, want) if a is not None and b is not None else None
    if isinstance(e, ir.ListLit) and isinstance(want, ListT):
        items = [_fit(x, want.elem) for x in e.items]
        if all(x is not None for x in items):
            return ir.ListLit(tuple(x for x in items if x is not None), want)
    return None


def elaborate_domain(
    spec: DomainSpec, source: str = "<domain>", lines: dict[tuple[str, str], int] | None = None
) -> Domain:
    """Type-check a :class:`DomainSpec` (from YAML or built in Python) into a Domain:
    parse every expression, resolve every type, collect every located problem.

    Named "elaborate", not "compile": ``graphgen compile`` turns a Domain into a package.
    """
    return _Compiler(spec, source, lines or {}).run()


def domain_from_dict(data: dict[str, Any], source: str = "<dict>") -> Domain:
    """Build a domain from plain Python data shaped like the YAML file."""
    try:
        spec = DomainSpec.model_validate(data)
    except ValidationError as exc:
        raise DomainError(
            [Located(f"{'.'.join(map(str, e['loc']))}: {e['msg']}", source) for e in exc.errors()]
        ) from None
    return elaborate_domain(spec, source)
