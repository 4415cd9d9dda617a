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
from collections.abc import Callable, Collection
from dataclasses import replace
from decimal import Decimal
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from graphgen import ir
from graphgen.decimals import dec_text, parse_decimal, places
from graphgen.domain import (
    Case,
    Derive,
    Domain,
    EntityDef,
    FieldDef,
    Intent,
    Invariant,
    Lemma,
    ParamDef,
    Phrase,
    ToolDef,
    canonical_json,
)
from graphgen.errors import DomainError, ExprError, Located
from graphgen.functions import (
    MAX_TABLE_ROWS,
    ConstTable,
    FunctionDef,
    constant_value,
    impure_part,
    table_key,
)
from graphgen.keys import key_spec_problems
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
from graphgen.spec import CaseSpec, ConstantSpec, DomainSpec, EntitySpec, FieldSpec, ParamSpec
from graphgen.specerrors import spec_error_message, spec_error_path
from graphgen.suggest import did_you_mean
from graphgen.today import check_today
from graphgen.types import (
    BOOL,
    DATE,
    INT,
    STR,
    DecT,
    EnumT,
    ListT,
    NoneT,
    OptT,
    RefT,
    RowT,
    Ty,
    is_optable,
    is_scalar,
    strip_opt,
)
from graphgen.unparse import to_source
from graphgen.vocabulary import vocab_problem
from graphgen.yamlpos import Positions, collect, where_path

# Names a let cannot take: the expression language's own calls.
_RESERVED_CALLS = frozenset(
    {"any", "all", "count", "sum", "min", "max", "len", "old", "round", "str"}
)

# \Z, not $: "$" also matches before a final newline, and "deposit\n" is no name.
TOOL_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}\Z")
_LIST = re.compile(r"^list\[\s*([A-Za-z_][A-Za-z0-9_]*)\s*\]\Z")
_OPTIONAL = re.compile(r"^(.+?)\s*\|\s*None\Z")


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


def _lines(text: str) -> tuple[dict[tuple[str, str], int], Positions]:
    """Line numbers of ``entities.X`` and ``tools.Y`` keys, the position of every node,
    and duplicate-key checks."""
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
    return out, collect(root, text)


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
        lines, positions = _lines(text)
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
            path = spec_error_path(e)
            at = positions.at(path, key=e["type"] == "extra_forbidden")
            problems.append(
                Located(
                    spec_error_message(e, raw),
                    file=source,
                    where=where,
                    line=at[0] if at else None,
                    column=at[1] if at else None,
                )
            )
        raise DomainError(problems) from None
    return elaborate_domain(spec, source=source, lines=lines, positions=positions)


class _Compiler:
    def __init__(
        self,
        spec: DomainSpec,
        source: str,
        lines: dict[tuple[str, str], int],
        positions: Positions | None = None,
    ) -> None:
        self.spec = spec
        self.source = source
        self.lines = lines
        self.positions = positions or Positions()
        self.problems: list[Located] = []
        self.enums: dict[str, EnumT] = {}

    def where(self, kind: str, name: str, part: str = "") -> str:
        line = self.lines.get(("tools" if kind == "tool" else "entities", name))
        s = f"{kind} {name!r}" + (f" (line {line})" if line else "")
        return s + (f", {part}" if part else "")

    def err(
        self, msg: str, where: str, expr: str = "", col: int | None = None, expr_line: int = 1
    ) -> None:
        """Record a problem at ``where``; with ``col`` (and ``expr_line``), at that place
        inside the expression ``expr``."""
        path = where_path(where)
        at = self.positions.in_expr(path, expr, col, expr_line) if path is not None else None
        line, column = at if at is not None else (None, None)
        self.problems.append(Located(msg, self.source, where, expr, col, line, column, expr_line))

    def resolve(
        self, s: FieldSpec | ParamSpec, owner: str, fname: str, where: str
    ) -> tuple[Ty | None, tuple[str, str] | None]:
        t = s.type.strip()
        opt = _OPTIONAL.match(t)
        if opt:
            base, src = self.resolve(
                s.model_copy(update={"type": opt.group(1)}), owner, fname, where
            )
            if base is None:
                return None, None
            if not is_optable(base):
                self.err(
                    f"{base.show()} cannot be optional ('T | None' takes int, decimal, str, "
                    "date, an enum or an entity)",
                    where,
                )
                return None, None
            return OptT(base), src
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
        if t == "decimal":
            return DecT(2 if s.scale is None else s.scale), None
        if s.scale is not None:
            self.err(f"'scale' only goes with type decimal, not {t!r}", where)
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
        near = did_you_mean(t, ["int", "str", "bool", "date", "enum", *self.spec.entities])
        self.err(
            f"unknown type {t!r}{near} (int, str, bool, date, enum, an entity, list[...])", where
        )
        return None, None

    def bounds(self, s: FieldSpec | ParamSpec, ty: Ty, where: str, what: str) -> tuple[Any, Any]:
        """The ``min``/``max`` of a field or parameter as numbers of its type (a decimal's
        are written as strings, ``"0.00"``, with at most its scale's places)."""
        if s.min is None and s.max is None:
            return None, None
        if ty == INT:
            if isinstance(s.min, str) or isinstance(s.max, str):
                self.err("the bounds of an int are whole numbers, not strings", where)
                return None, None
            lo_i, hi_i = s.min, s.max
            if lo_i is not None and hi_i is not None and lo_i > hi_i:
                self.err(f"min {lo_i} is above max {hi_i}", where)
            return lo_i, hi_i
        if isinstance(ty, DecT):
            out: list[Decimal | None] = []
            for label, b in (("min", s.min), ("max", s.max)):
                d = None if b is None else parse_decimal(b)
                if b is not None and (d is None or places(d) > ty.scale):
                    self.err(
                        f"{label} {b!r} is not a decimal with at most {ty.scale} places "
                        f'(write it as a string, e.g. "{dec_text(0, ty.scale)}")',
                        where,
                    )
                    return None, None
                out.append(d)
            lo, hi = out
            if lo is not None and hi is not None and lo > hi:
                self.err(f"min {lo} is above max {hi}", where)
            return lo, hi
        self.err(f"min/max bounds only apply to int and decimal {what}, not {ty.show()}", where)
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
            for problem in key_spec_problems(es):
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
                elif fs.vocab is not None and (why := vocab_problem(fs.vocab)):
                    self.err(why, w)
                ty, _ = self.resolve(fs, name, fname, w)
                if ty is None:
                    continue
                lo, hi = self.bounds(fs, strip_opt(ty), w, "fields")
                if fs.unique and not is_scalar(ty):
                    self.err("only scalar fields can be unique", w)
                fields[fname] = FieldDef(
                    fname, ty, fs.unique, fs.givable, lo, hi, fs.vocab, fs.description
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
                key_kind=es.key.kind,
                key_vocab=es.key.vocab,
            )
        return out

    def lemmas(
        self, name: str, es: EntitySpec, el: Elaborator, scope: dict[str, Ty]
    ) -> tuple[Lemma, ...]:
        """Type-check an entity's ``lemmas``: ``value`` and ``potential`` are numbers
        over the row ``x``; names are unique within the entity."""
        out: list[Lemma] = []
        seen: set[str] = set()
        for i, lem in enumerate(es.lemmas):
            if lem.name in seen:
                self.err(
                    f"lemma name {lem.name!r} repeats", self.where("entity", name, f"lemmas[{i}]")
                )
            seen.add(lem.name)
            parts: dict[str, ir.Expr] = {}
            for part in ("value", "potential"):
                src = getattr(lem, part)
                w = self.where("entity", name, f"lemmas[{i}].{part} ({lem.name})")
                try:
                    e = el.expr(src, scope)
                except ExprError as exc:
                    self.err(exc.message, w, src, exc.col, exc.line)
                    continue
                if e.ty != INT and not isinstance(e.ty, DecT):
                    self.err(f"a lemma's {part} must be a number, this is {e.ty.show()}", w, src)
                    continue
                parts[part] = e
            if len(parts) == 2:
                out.append(
                    Lemma(
                        lem.name,
                        parts["value"],
                        parts["potential"],
                        lem.value,
                        lem.potential,
                        lem.note,
                    )
                )
        return tuple(out)

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
                    self.err(exc.message, w, inv.check, exc.col, exc.line)
            edef = ents[name] = replace(
                edef, invariants=tuple(invariants), lemmas=self.lemmas(name, es, el, scope)
            )
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
                    self.err(exc.message, w, src, exc.col, exc.line)
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
                    self.err(exc.message, w, src, exc.col, exc.line)
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
            elif ps.vocab is not None and (why := vocab_problem(ps.vocab)):
                self.err(why, w)
                ok = False
            ty, src = self.resolve(ps, name, pname, w)
            if ty is None:
                ok = False
                continue
            if not is_scalar(ty):
                self.err(f"parameters are scalars, {pname!r} is {ty.show()}", w)
                ok = False
                continue
            n_problems = len(self.problems)
            lo, hi = self.bounds(ps, strip_opt(ty), w, "parameters")
            if len(self.problems) > n_problems:
                ok = False
                continue
            if ps.has_default and (why := default_problem(ty, ps)) is not None:
                self.err(f"default {ps.default!r} {why}", w)
                ok = False
                continue
            params[pname] = ParamDef(
                pname,
                ty,
                src,
                ps.description,
                lo,
                hi,
                ps.vocab,
                ps.has_default,
                ps.default,
            )
        scope: dict[str, Ty] = {p.name: p.ty for p in params.values()}
        try:
            ok = self.lets(name, el, scope) and ok
            return self._tool_body(name, el, params, scope, ok)
        finally:
            el.lets = {}
            el.lets_as_old = True

    def lets(self, name: str, el: Elaborator, scope: dict[str, Ty]) -> bool:
        """Elaborate the tool's ``let:`` names, in order, into ``el.lets`` (each may use
        the parameters and the names before it); False if one is wrong."""
        ok = True
        el.lets = {}
        el.lets_as_old = False
        for lname, src in self.spec.tools[name].let.items():
            w = self.where("tool", name, f"let.{lname}")
            problem = name_problem(lname)
            if not _is_name(lname) or problem:
                self.err(problem or f"let name {lname!r} is not allowed", w, src)
                ok = False
                continue
            if lname in scope or lname in self.spec.entities or lname in _RESERVED_CALLS:
                what = "a parameter" if lname in scope else "an entity or a built-in"
                self.err(f"let name {lname!r} is already {what}", w, src)
                ok = False
                continue
            try:
                el.lets[lname] = el.expr(src, scope)
            except ExprError as exc:
                self.err(exc.message, w, src, exc.col, exc.line)
                ok = False
        return ok

    def _tool_body(
        self, name: str, el: Elaborator, params: dict[str, ParamDef], scope: dict[str, Ty], ok: bool
    ) -> ToolDef | None:
        ts = self.spec.tools[name]
        checks: list[ir.Check] = []
        # A parameter a passed check shows is not None stays so for the rest of the call
        # (parameters never change); field reads are narrowed within one expression only,
        # as an effect may write the field in between.
        known: frozenset[ir.Expr] = frozenset()
        int_keys = [e for e, d in el.entities.items() if d.int_key]
        for i, c in enumerate(ts.requires):
            for msg in message_problems(c.message, params, int_keys):
                self.err(msg, self.where("tool", name, f"requires[{i}].message"), c.message)
                ok = False
            try:
                cond = el.condition(c.check, scope, known)
                checks.append(ir.Check(cond, c.check, c.message))
                known |= _param_facts(el.facts(cond))
            except ExprError as exc:
                self.err(
                    exc.message,
                    self.where("tool", name, f"requires[{i}]"),
                    c.check,
                    exc.col,
                    exc.line,
                )
                ok = False
        if ts.cases and (ts.effects or ts.returns is not None):
            self.err(
                "a tool has either cases or tool-level effects/returns, not both "
                "(tool-level effects/returns are the shorthand for one case)",
                self.where("tool", name, "cases"),
            )
            ok = False
        case_specs = ts.cases or [CaseSpec(effects=ts.effects, returns=ts.returns)]
        cases: list[Case] = []
        el.lets_as_old = True  # effects and returns run after effects: lets read before
        for ci, cs in enumerate(case_specs):
            prefix = f"cases[{ci}]." if ts.cases else ""
            case = self.case(name, el, scope, known, cs, prefix)
            if case is None:
                ok = False
            else:
                cases.append(case)
        if not ts.cases and not ts.effects and ts.returns is None:
            self.err("a tool needs effects or a return value", self.where("tool", name))
            ok = False
        if ts.cases and ok:
            with_ret = [c.returns is not None for c in cases]
            if any(with_ret) and not all(with_ret):
                self.err(
                    "either every case returns a value or none does "
                    f"(cases without returns: {[i for i, r in enumerate(with_ret) if not r]})",
                    self.where("tool", name, "cases"),
                )
                ok = False
        effects: list[ir.Stmt] = [s for c in cases for s in c.effects]
        ret: ir.Expr | None = None
        if ok and ts.cases:
            ret = self.merged_returns(name, cases)
            ok = ok and (ret is not None or cases[0].returns is None)
        elif cases:
            ret = cases[0].returns
        el.lets = {}  # intents speak of parameters only
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
                    self.err(exc.message, f"{w}.when", it.when, exc.col, exc.line)
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
            tuple(cases) if ts.cases else (),
        )

    def case(
        self,
        tool: str,
        el: Elaborator,
        scope: dict[str, Ty],
        known: frozenset[ir.Expr],
        cs: CaseSpec,
        prefix: str,
    ) -> Case | None:
        """One case (or the tool-level shorthand, with ``prefix`` empty), type-checked."""
        ok = True
        when: ir.Expr | None = None
        if cs.when is not None:
            el.lets_as_old = False  # a case's guard runs before any effect
            try:
                when = el.condition(cs.when, scope, known)
                known = known | _param_facts(el.facts(when))
            except ExprError as exc:
                self.err(
                    exc.message,
                    self.where("tool", tool, f"{prefix}when"),
                    cs.when,
                    exc.col,
                    exc.line,
                )
                ok = False
        if cs.fails and cs.effects:
            self.err(
                "a soft failure ('fails: true') has no effects: it leaves the state as it was",
                self.where("tool", tool, f"{prefix}effects"),
            )
            ok = False
        effects: list[ir.Stmt] = []
        escope = dict(scope)
        el.lets_as_old = True  # effects and returns run after effects: lets read before
        for i, src_e in enumerate(cs.effects):
            try:
                effects.append(ir.Stmt(el.effect(src_e, escope, known), src_e))
            except ExprError as exc:
                where = self.where("tool", tool, f"{prefix}effects[{i}]")
                self.err(exc.message, where, src_e, exc.col, exc.line)
                ok = False
        ret: ir.Expr | None = None
        if cs.returns is not None:
            try:
                ret = el.expr(cs.returns, escope, known)
            except ExprError as exc:
                where = self.where("tool", tool, f"{prefix}returns")
                self.err(exc.message, where, cs.returns, exc.col, exc.line)
                ok = False
        if not ok:
            return None
        return Case(when, cs.when, cs.fails, tuple(effects), ret, cs.returns)

    def merged_returns(self, tool: str, cases: list[Case]) -> ir.Expr | None:
        """``r1 if when1 else r2 if when2 else ...``: what a cased tool may return, for the
        analyses that read a tool's result statically (never evaluated for a call)."""
        rets = [c.returns for c in cases]
        if rets[0] is None:
            return None
        want = rets[0].ty
        for i, r in enumerate(rets):
            if r is not None and r.ty != want:
                self.err(
                    f"every case returns the same type: case 0 returns {want.show()}, "
                    f"case {i} returns {r.ty.show()}",
                    self.where("tool", tool, f"cases[{i}].returns"),
                    cases[i].returns_source or "",
                )
                return None
        out: ir.Expr | None = None
        for c in reversed(cases):
            assert c.returns is not None
            if out is None or c.when is None:
                out = c.returns
            else:
                out = ir.IfExp(c.when, c.returns, out, want)
        return out

    def run(self) -> Domain:
        dumped = _without_new_defaults(self.spec, self.spec.model_dump(mode="json"))
        for ename, vals in self.spec.enums.items():
            if not TOOL_NAME.match(ename) or keyword.iskeyword(ename):
                self.err("enum names are identifiers", f"enum {ename!r}")
            if not vals or len(set(vals)) != len(vals):
                self.err("a shared enum needs distinct values", f"enum {ename!r}")
            self.enums[ename] = EnumT(ename, tuple(vals))
        ents = self.entities()
        el = Elaborator(ents)
        self.constants_and_functions(el)
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
            for f in e["fields"].values():
                if f.get("scale") is None:  # no scale: the hash of a file before decimals
                    f.pop("scale", None)
            if e.get("generate") is None:  # no block: same hash as before blocks existed
                e.pop("generate", None)
            if not e.get("invariants"):  # likewise for entities without invariants
                e.pop("invariants", None)
            if not e.get("lemmas"):  # and without lemmas
                e.pop("lemmas", None)
        # Unguarded intents and an empty phrase table hash as they did before guards and
        # phrases existed, so domains that use neither keep their hash.
        for tname, t in dumped["tools"].items():
            for p in t["params"].values():
                if p.get("scale") is None:
                    p.pop("scale", None)
            t["intents"] = [x["text"] if x["when"] is None else x for x in t["intents"]]
            # Domains without cases or parameter defaults hash as before they existed.
            if not t["cases"]:
                t.pop("cases")
            for pname, p in t["params"].items():
                if not self.spec.tools[tname].params[pname].has_default:
                    p.pop("default")
            if not t.get("let"):  # likewise for tools without let bindings
                t.pop("let", None)
        if not dumped["phrases"]:
            dumped.pop("phrases")
        for block in ("constants", "functions"):  # likewise for domains without them
            if not dumped[block]:
                dumped.pop(block)
        if dumped.get("today") is None:  # likewise for domains without a today range
            dumped.pop("today", None)
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
        domain.today_range = self.today_range()
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

    def today_range(self) -> tuple[str, str] | None:
        """The ``today: {from, to}`` range, checked: two dates, the first not later."""
        t = self.spec.today
        if t is None:
            return None
        try:
            lo, hi = check_today(t.start), check_today(t.end)
        except ValueError as exc:
            self.err(f"{exc}", "today")
            return None
        if lo > hi:
            self.err(f"today: 'from' ({lo}) is later than 'to' ({hi})", "today")
            return None
        return lo, hi

    def _value_type(self, t: str, where: str, scale: int | None = None) -> Ty | None:
        """The type a constant or a function parameter/result is declared with."""
        t = t.strip()
        if t == "decimal":
            return DecT(2 if scale is None else scale)
        p = prim_of(t)
        if p is not None:
            return p
        if t in self.enums:
            return self.enums[t]
        if t in self.spec.entities:
            return RefT(t)
        self.err(f"unknown type {t!r} (int, str, bool, date, a shared enum or an entity)", where)
        return None

    def const_table(self, name: str, cs: ConstantSpec, ty: Ty, w: str) -> ConstTable | None:
        """A ``constants:`` entry with ``key:`` and ``values:``, every row checked."""
        if cs.key is None or not cs.values or cs.value is not None:
            self.err(
                "a constant has either 'value:' or a table's 'key:' and 'values:' "
                "(a non-empty mapping)",
                w,
            )
            return None
        kty = self._value_type(cs.key, f"{w}, key")
        if kty is None:
            return None
        if len(cs.values) > MAX_TABLE_ROWS:
            self.err(f"a constant table has at most {MAX_TABLE_ROWS} rows, not {len(cs.values)}", w)
            return None
        rows: list[tuple[ir.Lit, ir.Lit]] = []
        ok = True
        for raw_k, raw_v in cs.values.items():
            k, why_k = table_key(kty, raw_k)
            v, why_v = constant_value(ty, raw_v)
            for why in (why_k and f"key {why_k}", why_v and f"value {why_v}"):
                if why:
                    self.err(why, f"{w}, values.{raw_k}")
                    ok = False
            rows.append((ir.Lit(k, kty), ir.Lit(v, ty)))
        default: ir.Lit | None = None
        if isinstance(kty, EnumT) and cs.default is None:
            missing = [m for m in kty.values if m not in cs.values]
            if missing:
                self.err(
                    f"the table lists no value for {', '.join(map(repr, missing))}; "
                    "list every member of the enum or give a 'default:'",
                    w,
                )
                ok = False
        elif cs.default is None:
            self.err(
                f"a table keyed by {kty.show()} needs a 'default:' for the keys it does not list",
                w,
            )
            ok = False
        else:
            d, why = constant_value(ty, cs.default)
            if why is not None:
                self.err(f"default {why}", w)
                ok = False
            default = ir.Lit(d, ty)
        return ConstTable(name, kty, ty, tuple(rows), default) if ok else None

    def constants_and_functions(self, el: Elaborator) -> None:
        """Elaborate ``constants:`` and ``functions:`` into ``el`` (in that order: a
        function may use every constant and the functions declared before it)."""
        taken = set(self.spec.entities) | set(self.spec.tools) | set(_RESERVED_CALLS)
        for cname, cs in self.spec.constants.items():
            w = f"constant {cname!r}"
            if not cname.isidentifier() or keyword.iskeyword(cname) or cname in taken:
                self.err(f"{cname!r} cannot name a constant (not a free identifier)", w)
                continue
            ty = self._value_type(cs.type, w, cs.scale)
            if ty is None:
                continue
            if cs.key is not None or cs.values is not None:
                # None for a broken table: its uses then say so, not "unknown name"
                el.const_tables[cname] = self.const_table(cname, cs, ty, w)
                continue
            value, why = constant_value(ty, cs.value)
            if why is not None:
                self.err(f"value {why}", w)
                continue
            el.constants[cname] = ir.Lit(value, ty)
        el.function_names = frozenset(self.spec.functions)
        for fname, fs in self.spec.functions.items():
            w = f"function {fname!r}"
            if not TOOL_NAME.match(fname) or keyword.iskeyword(fname):
                self.err(f"{fname!r} cannot name a function", w)
                continue
            if fname in taken or fname in el.constants or fname in el.const_tables:
                self.err(f"function name {fname!r} is already taken", w)
                continue
            params: list[tuple[str, Ty]] = []
            for pname, ptype in fs.params.items():
                pty = self._value_type(ptype, f"{w}, params.{pname}")
                if pty is not None:
                    params.append((pname, pty))
            ret = self._value_type(fs.returns, f"{w}, returns")
            if ret is None or len(params) != len(fs.params):
                continue
            try:
                body = el.expr(fs.body, dict(params))
            except ExprError as exc:
                self.err(exc.message, f"{w}, body", fs.body, exc.col, exc.line)
                continue
            bad = impure_part(body)
            if bad is not None:
                self.err(
                    "a function is pure: it cannot read tables or old(...), "
                    f"found {to_source(bad)}",
                    f"{w}, body",
                    fs.body,
                )
                continue
            fitted = _fit(body, ret)
            if fitted is None:
                self.err(
                    f"the body is {body.ty.show()}, the function returns {ret.show()}",
                    f"{w}, body",
                    fs.body,
                )
                continue
            el.functions[fname] = FunctionDef(fname, tuple(params), ret, fitted, fs.body)

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
            if ps.noun and not (isinstance(ty, EnumT) or (isinstance(ty, RefT) and owner in ents)):
                self.err("only an enum field or a reference field can be a noun", w)
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


def _message_samples(ty: Ty, int_keys: Collection[str]) -> list[object]:
    """One value of each form a parameter of type ``ty`` has when a message is filled:
    an int id is an int, a decimal a Decimal, an optional parameter may be None."""
    if isinstance(ty, OptT):
        return [*_message_samples(ty.inner, int_keys), None]
    if ty == INT or (isinstance(ty, RefT) and ty.entity in int_keys):
        return [0]
    if ty == BOOL:
        return [True]
    if isinstance(ty, DecT):
        return [Decimal(0)]
    return ["x"]


def message_problems(
    text: str, params: dict[str, ParamDef], int_keys: Collection[str] = ()
) -> list[str]:
    """What is wrong with a precondition's message template.

    A message is shown to the agent with ``{p}`` filled by parameter ``p``, optionally
    converted (``!r``, ``!s``, ``!a``) and formatted by a short standard spec that suits
    every value the parameter can take (``{amount:>6}``; an optional one is converted
    first, ``{note!s:>6}``, as None takes no spec). ``int_keys`` names the entities whose
    ids are ints. Nothing else is allowed between braces (no index or attribute access,
    no nested field): ``str.format`` would act on it when the agent first fails the
    check. A literal brace is written twice: ``{{``, ``}}``.
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
        if not _SPEC.match(spec):
            out.append(
                f"placeholder {{{f}:{spec}}}: bad format spec for {p.ty.show()}: "
                "not a short standard format spec"
            )
            continue
        for sample in _message_samples(p.ty, int_keys):
            try:
                format(convert(sample) if convert else sample, spec)
            except (TypeError, ValueError) as exc:
                why = (
                    f"{f} may be None, which takes no format spec: write {{{f}!s:{spec}}}"
                    if sample is None
                    else f"bad format spec for {p.ty.show()}: {exc}"
                )
                out.append(f"placeholder {{{f}:{spec}}}: {why}")
                break
    return out


def _param_facts(facts: frozenset[ir.Expr]) -> frozenset[ir.Expr]:
    """The not-None facts about parameters (they hold for the whole call)."""
    return frozenset(e for e in facts if isinstance(e, ir.Var))


def default_problem(ty: Ty, ps: ParamSpec) -> str | None:
    """Why ``ps.default`` is not a value of ``ty`` (None when it is)."""
    from graphgen.interp import check_value  # the one place values are checked

    v = ps.default
    if v is None:
        return None if isinstance(ty, OptT) else f"needs the type '{ty.show()} | None'"
    why = check_value(ty, v)
    if why:
        return f"is not {why}"
    if isinstance(ps.min, int) and isinstance(v, int) and v < ps.min:
        return f"is below the minimum {ps.min}"
    if isinstance(ps.max, int) and isinstance(v, int) and v > ps.max:
        return f"is above the maximum {ps.max}"
    return None


def _fit(e: ir.Expr, want: Ty) -> ir.Expr | None:
    """``e`` typed as ``want``: string literals become enum members, dates or ids (also
    inside ``a if c else b`` and list literals); None if it cannot be."""
    if e.ty == want:
        return e
    if isinstance(want, OptT):
        # As in an effect: None fits any ``T | None``, and so does a value of ``T``.
        if isinstance(e, ir.Lit) and isinstance(e.ty, NoneT):
            return ir.Lit(None, want)
        if isinstance(e, ir.IfExp):
            a, b = _fit(e.then, want), _fit(e.orelse, want)
            return ir.IfExp(e.cond, a, b, want) if a is not None and b is not None else None
        return _fit(e, want.inner)
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
    spec: DomainSpec,
    source: str = "<domain>",
    lines: dict[tuple[str, str], int] | None = None,
    positions: Positions | None = None,
) -> Domain:
    """Type-check a :class:`DomainSpec` (from YAML or built in Python) into a Domain:
    parse every expression, resolve every type, collect every located problem.

    Named "elaborate", not "compile": ``graphgen compile`` turns a Domain into a package.
    """
    return _Compiler(spec, source, lines or {}, positions).run()


def domain_from_dict(data: dict[str, Any], source: str = "<dict>") -> Domain:
    """Build a domain from plain Python data shaped like the YAML file."""
    try:
        spec = DomainSpec.model_validate(data)
    except ValidationError as exc:
        raise DomainError(
            [
                Located(f"{'.'.join(map(str, e['loc']))}: {spec_error_message(e, data)}", source)
                for e in exc.errors()
            ]
        ) from None
    return elaborate_domain(spec, source)


def _without_new_defaults(spec: DomainSpec, dumped: dict[str, Any]) -> dict[str, Any]:
    """``dumped`` without the key options added in language v2 where they are not
    written, so a domain that does not use them keeps its content hash
    (and the task files and packages made from it keep their bytes)."""
    for name, es in spec.entities.items():
        ent = dumped["entities"][name]
        if "type" not in es.key.model_fields_set:
            ent["key"].pop("type", None)
        if es.key.vocab is None:
            ent["key"].pop("vocab", None)
    return dumped
