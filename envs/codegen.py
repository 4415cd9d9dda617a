"""Compile a domain into a standalone Python package: the code backend of the IR.

:func:`compile_domain_source` maps file names to source text; :func:`write_package`
writes them. The package needs only pydantic at run time:

- ``models.py``: one pydantic model per entity, and ``Db`` (every table, the id counters,
  row getters, the invariant checks);
- ``tools.py``: one plain function per tool (argument checks, preconditions, effects)
  and the ``call_tool`` dispatcher;
- ``runtime.py``: a verbatim copy of :mod:`graphgen.envs.runtime` (errors, undo journal);
- ``schemas.py``: the strict OpenAI tool schemas and the policy, as literals;
- ``env.py``: ``Environment`` with ``reset``/``step``/``get_reward``.

The tools follow :mod:`graphgen.interp`, the reference semantics, exactly: arguments
checked in the same order with the same messages, preconditions explained with the same
facts, effects applied in order under an undo journal, bounds and uniqueness checked on
touched rows in sorted order, list fields kept as sorted sets, comprehensions over keys
in sorted order. ``tests/test_codegen.py`` holds them to it differentially.

Expressions are printed by a subclass of :class:`graphgen.unparse.Printer`: operators and
their precedence are rendered by the one shared printer; only the leaves that read the
state (fields, rows, tables, comprehensions) are overridden. Output is deterministic:
the same domain always gives the same bytes, with no clock, uuid or randomness.
"""

from __future__ import annotations

import ast
import io
import keyword
import re
import string
import textwrap
import tokenize
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from graphgen import grading, ir
from graphgen.domain import Domain, ToolDef
from graphgen.envs.schemas import FINISH_NAME, finish_tool, openai_tools
from graphgen.types import BOOL, DATE, INT, STR, EnumT, ListT, RecordT, RefT, RowT, Ty
from graphgen.unparse import PRECEDENCE, Printer, precedence

WIDTH = 100
RUNTIME_SOURCE = Path(__file__).with_name("runtime.py")
# The one grading function of the pipeline, shipped verbatim (it imports nothing of ours).
GRADING_SOURCE = Path(grading.__file__)

# Names the generated modules define or import at module level, and the builtins the
# generated tool bodies call: a domain variable with one of these names is renamed.
_RUNTIME_NAMES = frozenset({
    "Journal", "ToolError", "all_of", "any_of", "check_bool", "check_bounds", "check_call",
    "check_date", "check_enum", "check_int", "check_ref", "check_str", "check_unique", "fact",
    "max_of", "min_of", "precondition_failed",
})
_MODULE_NAMES = frozenset({
    "Any", "Callable", "Db", "Literal", "Mapping", "PARAMS", "TOOLS", "call_tool", "db",
})
_USED_BUILTINS = frozenset({"all", "any", "len", "sorted", "sum", "min", "max", "callable"})
_AMBIGUOUS = frozenset({"l", "O", "I"})  # pycodestyle E741
_BASEMODEL_NAMES = frozenset(n for n in dir(BaseModel) if not n.startswith("__"))
# Names the class bodies of models.py read: an entity or field called so would shadow them.
_MODELS_NAMES = frozenset({"Any", "BaseModel", "ConfigDict", "Field", "Iterable", "Literal",
                           "Mapping", "bool", "dict", "int", "list", "str", "tuple"})


class CodegenError(ValueError):
    """The domain cannot be compiled (a name the generated code cannot use, and so on)."""


# ============================================================================ naming


def snake(name: str) -> str:
    """``PaymentMethod`` → ``payment_method``."""
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "_", name).lower()


@dataclass
class _Names:
    """How each entity is spelled in the generated code (checked for collisions)."""

    row_cls: dict[str, str] = field(default_factory=dict)  # Account → AccountRow
    getter: dict[str, str] = field(default_factory=dict)  # Account → get_account
    record: dict[str, str] = field(default_factory=dict)  # Account → account_record
    local: dict[str, str] = field(default_factory=dict)  # Account → account (a row local)

    @classmethod
    def plan(cls, domain: Domain) -> _Names:
        """Spell every entity; a name the generated code cannot use is a CodegenError."""
        where = f"{domain.source}: domain {domain.name!r}"
        n = cls()
        db_members: dict[str, str] = {"counters": "the id counters"}
        for m in ("from_state", "to_state", "check_invariants", "model_config"):
            db_members[m] = "a Db method"
        module: dict[str, str] = {m: "a generated name" for m in _MODULE_NAMES | _RUNTIME_NAMES}
        for ent, edef in domain.entities.items():
            s = snake(ent)
            n.row_cls[ent] = f"{ent}Row"
            n.getter[ent] = f"get_{s}"
            n.record[ent] = f"{s}_record"
            n.local[ent] = s
            for member in (ent, n.getter[ent], n.record[ent]):
                if member in db_members or member in _BASEMODEL_NAMES | _MODELS_NAMES:
                    raise CodegenError(f"{where}: entity {ent!r} would generate the Db member "
                                       f"{member!r}, which clashes with "
                                       f"{db_members.get(member, 'a name models.py uses')}")
                db_members[member] = f"entity {ent!r}"
            if n.row_cls[ent] in module:
                raise CodegenError(f"{where}: entity {ent!r} would generate class "
                                   f"{n.row_cls[ent]!r}, which clashes with "
                                   f"{module[n.row_cls[ent]]}")
            module[n.row_cls[ent]] = f"entity {ent!r}"
            for f in edef.fields:
                if f in _BASEMODEL_NAMES | _MODELS_NAMES or f.startswith("model_"):
                    raise CodegenError(f"{where}: field {ent}.{f} shadows a pydantic BaseModel "
                                       "attribute or a type name; rename it to compile this "
                                       "domain")
        return n


def _tool_vars(tool: ToolDef) -> list[str]:
    """Every name a tool's expressions bind: parameters, create bindings, loop variables."""
    names = list(tool.params)
    exprs: list[ir.Expr] = [c.expr for c in tool.requires]
    for s in tool.effects:
        if isinstance(s.effect, ir.Create) and s.effect.bind:
            names.append(s.effect.bind)
        exprs.extend(ir.effect_exprs(s.effect))
    if tool.returns is not None:
        exprs.append(tool.returns)
    for e in exprs:
        for node in ir.walk(e):
            if isinstance(node, ir.Comp):
                names.append(node.var)
    return list(dict.fromkeys(names))


def _rename(names: Iterable[str], reserved: Iterable[str]) -> dict[str, str]:
    """Python spelling of each domain variable: itself unless it clashes, then ``name_``."""
    taken = set(reserved) | _RUNTIME_NAMES | _MODULE_NAMES | _USED_BUILTINS | _AMBIGUOUS
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


def _fresh(base: str, used: set[str]) -> str:
    name = base
    while name in used:
        name += "_"
    used.add(name)
    return name


# ============================================================================ expressions


def _pystr(s: str) -> str:
    """A Python string literal, double-quoted where possible; non-ASCII is escaped so
    linters see no confusable characters."""
    lit = ascii(s)
    if lit.startswith("'") and '"' not in s:
        return '"' + lit[1:-1] + '"'  # no quote in s is escaped, so the body is unchanged
    return lit


_FLIP: dict[str, ir.CmpOp] = {"==": "==", "!=": "!=", "<": ">", "<=": ">=", ">": "<", ">=": "<="}


class PyPrinter(Printer):
    """Renders IR as Python over a ``db`` (the generated ``Db``) with the same meaning.

    Leaves read the state through the Db: ``Entity[k].f`` → ``db.get_entity(k).f`` (a
    missing row is a ToolError), ``k in Entity`` → ``k in db.Entity``, comprehensions
    visit ``sorted(db.Entity)``. ``any``/``all`` over items that may fail build the whole
    list first, as the interpreter does, so an error in any row is raised the same way.
    A few spellings that Python linters reject (``x == True``, ``not a == b``,
    ``'a' == x``, ``x if x > y else y``) are printed in an equivalent form.
    """

    def __init__(self, names: _Names, variables: Mapping[str, str], db: str = "db") -> None:
        super().__init__()
        self.names = names
        self.variables = variables
        self.db = db
        self.helpers: set[str] = set()  # runtime functions the printed code calls

    def expr(self, e: ir.Expr, rows: frozenset[str] = frozenset()) -> str:
        e = self.rewrite(e)
        mm = _min_max(e)
        if mm is not None:
            fn, x, y = mm
            return f"{fn}({self.expr(x, rows)}, {self.expr(y, rows)})"
        if isinstance(e, ir.BoolOp):
            # and/or inside and/or is always parenthesised (clearer; ruff RUF021).
            return f" {e.op} ".join(
                f"({self.expr(v, rows)})" if isinstance(self.rewrite(v), ir.BoolOp)
                else self.wrap(v, PRECEDENCE[e.op] + 1, rows) for v in e.values)
        return super().expr(e, rows)

    def wrap(self, x: ir.Expr, min_prec: int, rows: frozenset[str]) -> str:
        x = self.rewrite(x)
        prec = PRECEDENCE["atom"] if _min_max(x) is not None else precedence(x)
        s = self.expr(x, rows)
        return f"({s})" if prec < min_prec else s

    @staticmethod
    def rewrite(e: ir.Expr) -> ir.Expr:
        """An equivalent node in the spelling Python linters accept: a constant on the
        right of a comparison, no ``== True``, no ``not a == b`` / ``not x in y`` /
        ``not not x``. The operands are pure, so evaluation order is free."""
        while True:
            match e:
                case ir.Compare(op=op, left=ir.Lit() as a, right=b) if not isinstance(b, ir.Lit):
                    e = ir.Compare(_FLIP[op], b, a, e.ty)
                case ir.Compare(op="==" | "!=" as op, left=a, right=ir.Lit(value=bool() as v)):
                    positive = (op == "==") == v
                    if isinstance(a, ir.Lit):
                        e = ir.Lit((a.value == v) == (op == "=="), e.ty)
                    else:
                        e = a if positive else ir.Not(a, e.ty)
                case ir.Not(operand=ir.Compare(op="==" | "!=" as op, left=a, right=b)):
                    flipped: ir.CmpOp = "!=" if op == "==" else "=="
                    e = ir.Compare(flipped, a, b, e.ty)
                case ir.Not(operand=ir.Contains(item=a, container=b, negated=neg)):
                    e = ir.Contains(a, b, not neg, e.ty)
                case ir.Not(operand=ir.Not(operand=inner)):
                    e = inner
                case _:
                    return e

    def lit(self, e: ir.Lit) -> str:
        return _pystr(e.value) if isinstance(e.value, str) else repr(e.value)

    def var(self, e: ir.Var, rows: frozenset[str]) -> str:
        return self.variables.get(e.name, e.name)

    def table(self, entity: str) -> str:
        return f"{self.db}.{entity}"

    def field_of(self, e: ir.FieldOf, rows: frozenset[str]) -> str:
        if isinstance(e.key, ir.Var) and e.key.name in rows:
            # A loop variable names a row that exists: plain indexing reads best.
            return f"{self.db}.{e.entity}[{self.var(e.key, rows)}].{e.field}"
        return f"{self.db}.{self.names.getter[e.entity]}({self.expr(e.key, rows)}).{e.field}"

    def row_of(self, e: ir.RowOf, rows: frozenset[str]) -> str:
        return f"{self.db}.{self.names.record[e.entity]}({self.expr(e.key, rows)})"

    def comp(self, c: ir.Comp, rows: frozenset[str]) -> str:
        return f"[{self.comp_body(c, rows)}]"

    def agg(self, a: ir.Agg, rows: frozenset[str]) -> str:
        c = a.comp
        proj = None
        if (a.fn == "count" and isinstance(c.proj, ir.RowOf) and isinstance(c.proj.key, ir.Var)
                and c.proj.key.name == c.var):
            proj = self.var(c.proj.key, rows)  # counting rows needs no record
        body = self.comp_body(c, rows, proj)
        if a.fn in ("min", "max"):
            self.helpers.add(f"{a.fn}_of")
            return f"{a.fn}_of([{body}], {_pystr(c.entity)})"
        if a.fn == "count":
            return f"len([{body}])"
        if a.fn in ("any", "all") and may_raise(c, ()):
            # The interpreter evaluates every item before any()/all() looks at them, so an
            # item that fails raises even after a decisive one: build the list first.
            self.helpers.add(f"{a.fn}_of")
            return f"{a.fn}_of([{body}])"
        return f"{a.fn}({body})"

    def comp_body(self, c: ir.Comp, rows: frozenset[str], proj: str | None = None) -> str:
        inner = rows | {c.var}
        v = self.variables.get(c.var, c.var)
        s = f"{proj or self.expr(c.proj, inner)} for {v} in sorted({self.table(c.entity)})"
        if c.cond is not None:
            # A conditional expression must be parenthesised in a comprehension's if.
            s += f" if {self.wrap(c.cond, 1, inner)}"
        return s


def _min_max(e: ir.Expr) -> tuple[str, ir.Expr, ir.Expr] | None:
    """``x if x > y else y`` as ("max", x, y), and the like (ruff FURB136).

    Same value (when x == y either is the answer) and same errors (pure operands).
    """
    match e:
        case ir.IfExp(cond=ir.Compare(op="<" | "<=" | ">" | ">=" as op, left=x, right=y),
                      then=t, orelse=f) if {t, f} == {x, y} and t != f:
            bigger = (op in (">", ">=")) == (t == x)
            return ("max" if bigger else "min"), x, y
    return None


def may_raise(e: ir.Expr, safe: Iterable[str]) -> bool:
    """Whether evaluating ``e`` can raise a ToolError (a missing row, min/max of nothing).

    ``safe`` are variables known to name existing rows (id parameters, already checked).
    """
    ok = set(safe) | {n.var for n in ir.walk(e) if isinstance(n, ir.Comp)}
    for n in ir.walk(e):
        if isinstance(n, ir.FieldOf | ir.RowOf) and not (
                isinstance(n.key, ir.Var) and n.key.name in ok):
            return True
        if isinstance(n, ir.Agg) and n.fn in ("min", "max"):
            return True
    return False


def explained_fields(check: ir.Check) -> list[ir.FieldOf]:
    """The fields a failed check's message reports, in the interpreter's order: pre-order,
    stopping at the first comprehension."""
    out: list[ir.FieldOf] = []
    for node in ir.walk(check.expr):
        if isinstance(node, ir.Comp):
            break
        if isinstance(node, ir.FieldOf):
            out.append(node)
    return out


# ============================================================================ layout

_OPEN = {"(": ")", "[": "]", "{": "}"}
_NOT_OPERAND = frozenset({"and", "or", "not", "if", "else", "for", "in", "is", "lambda",
                          "return", "raise", "await", "del", "yield"})
_COMMA = 10
_PRIO = {"for": 9, "if": 9, "else": 9, "or": 8, "and": 7,
         "==": 6, "!=": 6, "<": 6, "<=": 6, ">": 6, ">=": 6, "+": 5, "-": 5, "*": 4}


@dataclass
class _Tok:
    text: str
    space: bool  # whitespace before it in the one-line form
    kind: int


@dataclass
class _Group:
    open: _Tok
    body: list[_Tok | _Group]
    close: _Tok

    @property
    def space(self) -> bool:
        return self.open.space


_Node = _Tok | _Group


def _parse_line(text: str) -> list[_Node]:
    """One line of Python as tokens nested by brackets."""
    root: list[_Node] = []
    stack: list[tuple[_Tok, list[_Node]]] = []
    prev = 0
    skip = (tokenize.NEWLINE, tokenize.NL, tokenize.ENDMARKER, tokenize.INDENT, tokenize.DEDENT)
    for tok in tokenize.generate_tokens(io.StringIO(text).readline):
        if tok.type in skip:
            continue
        if tokenize.tok_name.get(tok.type, "").startswith("FSTRING"):
            return []
        t = _Tok(tok.string, tok.start[1] > prev, tok.type)
        prev = tok.end[1]
        if tok.type == tokenize.OP and tok.string in _OPEN:
            stack.append((t, []))
        elif tok.type == tokenize.OP and tok.string in _OPEN.values():
            opener, body = stack.pop()
            (stack[-1][1] if stack else root).append(_Group(opener, body, t))
        else:
            (stack[-1][1] if stack else root).append(t)
    assert not stack, f"unbalanced brackets in generated line: {text}"
    return root


def _text(n: _Node) -> str:
    return n.text if isinstance(n, _Tok) else n.open.text + _flat(n.body) + n.close.text


def _flat(nodes: list[_Node]) -> str:
    return "".join((" " if i and n.space else "") + _text(n) for i, n in enumerate(nodes))


def _is_operand(n: _Node) -> bool:
    if isinstance(n, _Group):
        return True
    if n.kind == tokenize.NAME:
        return n.text not in _NOT_OPERAND
    return n.kind in (tokenize.NUMBER, tokenize.STRING)


def _prio(nodes: list[_Node], i: int) -> int:
    n = nodes[i]
    if not isinstance(n, _Tok):
        return 0
    if n.text == ",":
        return _COMMA
    p = _PRIO.get(n.text, 0)
    if n.text in ("+", "-", "*") and not (i and _is_operand(nodes[i - 1])):
        return 0  # unary, or a star argument
    return p


def _split(nodes: list[_Node]) -> list[list[_Node]]:
    """Split at the loosest top-level delimiter: after commas, before operators."""
    prios = [_prio(nodes, i) if i else 0 for i in range(len(nodes))]  # not a leading operator
    best = max(prios, default=0)
    if best == 0:
        return [nodes]
    pieces: list[list[_Node]] = [[]]
    for n, p in zip(nodes, prios, strict=True):
        if p == best and best != _COMMA and pieces[-1]:
            pieces.append([])
        pieces[-1].append(n)
        if p == best and best == _COMMA:
            pieces.append([])
    return [p for p in pieces if p]


def _string_chunks(value: str, room: int) -> list[str]:
    """Cut a string into literals that each fit ``room`` columns (breaks after newlines,
    then after spaces; a word too long for a line is cut)."""
    chunks: list[str] = []
    cur = ""
    for w in re.split(r"(?<=[ \n])", value):
        if cur and (len(_pystr(cur + w)) > room or cur.endswith("\n")):
            chunks.append(cur)
            cur = ""
        cur += w
        while len(_pystr(cur)) > room and len(cur) > 1:
            cut = len(cur) - 1
            while cut > 1 and len(_pystr(cur[:cut])) > room:
                cut -= 1
            chunks.append(cur[:cut])
            cur = cur[cut:]
    if cur or not chunks:
        chunks.append(cur)
    return [_pystr(c) for c in chunks]


def _lone_string(nodes: list[_Node]) -> bool:
    """A plain string literal, maybe followed by a comma: it can be cut into pieces."""
    first = nodes[0]
    return (isinstance(first, _Tok) and first.kind == tokenize.STRING
            and first.text[:1] in "'\"" and all(isinstance(n, _Tok) and n.text == ","
                                                  for n in nodes[1:]))


def _layout(nodes: list[_Node], indent: int, stmt: bool, first: bool = False) -> list[str]:
    """Lines for ``nodes`` at ``indent``, each within WIDTH where any split allows.

    ``stmt``: the nodes start a statement, so only breaks inside brackets are legal
    there; inside brackets every token boundary is a legal break. A statement is split
    at its last bracket (``first``: its first, for ``def`` lines), a bracketed part at
    its loosest operator, else at its longest bracket.
    """
    pad = " " * indent
    text = _flat(nodes)
    if indent + len(text) <= WIDTH:
        return [pad + text]
    if not stmt:
        pieces = _split(nodes)
        if len(pieces) > 1:
            return [line for p in pieces for line in _layout(p, indent, False)]
    groups = [i for i, n in enumerate(nodes) if isinstance(n, _Group) and n.body]
    if groups:
        if stmt:
            gi = groups[0] if first else groups[-1]
        else:
            gi = max(groups, key=lambda i: len(_text(nodes[i])))
        g = nodes[gi]
        assert isinstance(g, _Group)
        head = [*nodes[:gi], g.open]
        tail = [g.close, *nodes[gi + 1:]]
        inner = g.body
        last = inner[-1]
        if (indent + 4 + len(_flat(inner)) > WIDTH and not (isinstance(last, _Tok)
                and last.text == ",") and any(_prio(inner, i) == _COMMA
                                               for i in range(len(inner)))):
            # One item per line gets a trailing comma, as formatters write it.
            inner = [*inner, _Tok(",", False, tokenize.OP)]
        body = _layout(inner, indent + 4, False)
        return _layout(head, indent, stmt) + body + _layout(tail, indent, stmt)
    lead = nodes[0]
    if not stmt and isinstance(lead, _Tok) and _lone_string(nodes):
        value = ast.literal_eval(lead.text)
        rest = _flat(nodes[1:])
        lines = [pad + c for c in _string_chunks(value, WIDTH - indent - len(rest))]
        lines[-1] += rest
        return lines
    return [pad + text]


def _fit(line: str) -> list[str]:
    """Fit one generated statement line (with its indentation) to WIDTH."""
    if len(line) <= WIDTH:
        return [line]
    body = line.lstrip(" ")
    indent = len(line) - len(body)
    nodes = _parse_line(body)
    if not nodes:  # f-strings on Python >= 3.12 tokenize into parts: leave them whole
        return [line + "  # noqa: E501"]
    out = _layout(nodes, indent, True, first=body.startswith("def "))
    return [x if len(x) <= WIDTH else x + "  # noqa: E501" for x in out]


def _has_top_delims(expr: str) -> bool:
    nodes = _parse_line(expr)
    return any(_prio(nodes, i) for i in range(len(nodes)))


def _ascii_text(s: str) -> str:
    return s.encode("ascii", "backslashreplace").decode("ascii")


class _Out:
    """Lines of one generated file."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def __call__(self, indent: int, text: str = "") -> None:
        self.lines.extend(_fit(" " * indent + text) if text else [""])

    def stmt(self, indent: int, head: str, expr: str, tail: str = "") -> None:
        """``head + expr + tail``; a long expression is parenthesised so it can be split."""
        line = head + expr + tail
        if indent + len(line) > WIDTH and _has_top_delims(expr):
            line = f"{head}({expr}){tail}"
        self(indent, line)

    def comment(self, indent: int, text: str) -> None:
        room = WIDTH - indent - 2
        for para in _ascii_text(text).strip().splitlines() or [""]:
            wrapped = textwrap.wrap(para, room, subsequent_indent="    ",
                                    break_on_hyphens=False) or [""]
            self.lines.extend((" " * indent + "# " + w).rstrip() for w in wrapped)

    def docstring(self, indent: int, paragraphs: list[str]) -> None:
        """A docstring; paragraphs are wrapped unless they start with a space (kept)."""
        pad = " " * indent
        body: list[str] = []
        for i, para in enumerate(paragraphs):
            if i:
                body.append("")
            if para.startswith(" ") or "\n" in para:
                body.extend(para.splitlines())
            else:
                body.extend(textwrap.wrap(para, WIDTH - indent - 3,
                                          break_on_hyphens=False) or [""])
        text = [_doc_escape(b) for b in body]
        if len(text) == 1 and len(pad) + len(text[0]) + 6 <= WIDTH:
            self.lines.append(f'{pad}"""{text[0]}"""')
            return
        self.lines.append(f'{pad}"""{text[0]}')
        self.lines.extend((pad + t).rstrip() if t.strip() else "" for t in text[1:])
        self.lines.append(f'{pad}"""')

    def text(self) -> str:
        return "\n".join(self.lines).rstrip("\n") + "\n"


def _doc_escape(s: str) -> str:
    s = s.replace("\\", "\\\\").replace('"""', '\\"\\"\\"')
    if s.endswith('"'):
        s = s[:-1] + '\\"'
    return _ascii_text(s)


def _sort_names(names: Iterable[str]) -> list[str]:
    """isort's order-by-type: CONSTANTS, then Classes, then functions and variables."""

    def key(n: str) -> tuple[int, str]:
        kind = 0 if n.isupper() and len(n) > 1 else 1 if n[:1].isupper() else 2
        return kind, n.lower()

    return sorted(set(names), key=key)


def _imports(std: Mapping[str, Iterable[str]], third: Mapping[str, Iterable[str]],
             local: Mapping[str, Iterable[str]], plain: Iterable[str] = ()) -> list[str]:
    """Import lines in isort order: future, standard library, third party, local."""
    out = ["from __future__ import annotations", ""]
    std_lines = [f"import {m}" for m in sorted(plain)]
    std_lines += [f"from {m} import {', '.join(_sort_names(ns))}"
                  for m, ns in sorted(std.items()) if ns]
    for block in (std_lines,
                  [f"from {m} import {', '.join(_sort_names(ns))}"
                   for m, ns in sorted(third.items()) if ns],
                  [f"from {m} import {', '.join(_sort_names(ns))}"
                   for m, ns in sorted(local.items()) if ns]):
        if block:
            out.extend(_fit_import(x) for x in block)
            out.append("")
    return out


def _fit_import(line: str) -> str:
    if len(line) <= WIDTH:
        return line
    head, _, names = line.partition(" import ")
    parts = names.split(", ")
    return head + " import (\n" + "".join(f"    {p},\n" for p in parts) + ")"


# ============================================================================ literals


def _lit_flat(v: Any) -> str:
    if isinstance(v, dict):
        return "{" + ", ".join(f"{_lit_flat(k)}: {_lit_flat(x)}" for k, x in v.items()) + "}"
    if isinstance(v, list):
        return "[" + ", ".join(_lit_flat(x) for x in v) + "]"
    if isinstance(v, str):
        return _pystr(v)
    if v is None or isinstance(v, bool | int):
        return repr(v)
    raise TypeError(f"cannot write {type(v).__name__} as a literal")


def _lit_lines(v: Any, indent: int, prefix: str = "", suffix: str = "") -> list[str]:
    """A JSON-like value as a Python literal, exploded one item per line when too long."""
    pad = " " * indent
    flat = prefix + _lit_flat(v) + suffix
    if indent + len(flat) <= WIDTH:
        return [pad + flat]
    if isinstance(v, dict) and v:
        lines = [pad + prefix + "{"]
        for k, x in v.items():
            lines += _lit_lines(x, indent + 4, _lit_flat(k) + ": ", ",")
        return [*lines, pad + "}" + suffix]
    if isinstance(v, list) and v:
        lines = [pad + prefix + "["]
        for x in v:
            lines += _lit_lines(x, indent + 4, "", ",")
        return [*lines, pad + "]" + suffix]
    if isinstance(v, str):
        chunks = _string_chunks(v, WIDTH - indent - 4)
        return [pad + prefix + "(", *(pad + "    " + c for c in chunks), pad + ")" + suffix]
    return [pad + flat + "  # noqa: E501"]


# ============================================================================ types


def py_type(t: Ty) -> str:
    """The Python annotation of an IR type."""
    if t in (INT, BOOL):
        return "int" if t == INT else "bool"
    if t in (STR, DATE) or isinstance(t, RefT):
        return "str"
    if isinstance(t, EnumT):
        return "Literal[" + ", ".join(_pystr(v) for v in t.values) + "]"
    if isinstance(t, ListT):
        return f"list[{py_type(t.elem)}]"
    if isinstance(t, RowT | RecordT):
        return "dict[str, Any]"
    raise CodegenError(f"no Python type for {t.show()}")


def _type_words(t: Ty) -> str:
    if isinstance(t, RefT):
        return f"{t.entity} id"
    if t == DATE:
        return "date YYYY-MM-DD"
    if isinstance(t, EnumT):
        return "one of " + ", ".join(t.values)
    return t.show()


# ============================================================================ models.py


def _models(domain: Domain, names: _Names, header: str) -> str:
    o = _Out()
    o.docstring(0, [f"State models of the {domain.name} environment. {header}",
                    "One pydantic model per entity (a row; its id is the table key), and Db: "
                    "every table plus the counters that new ids are made from."])
    o(0)
    uses_literal = any(isinstance(f.ty, EnumT) or (isinstance(f.ty, ListT)
                       and isinstance(f.ty.elem, EnumT))
                       for e in domain.entities.values() for f in e.fields.values())
    invariants = {e: [f for f in d.fields.values() if f.min is not None or f.max is not None
                      or f.unique] for e, d in domain.entities.items()}
    rt = {"ToolError"}
    if any(f.min is not None or f.max is not None for fs in invariants.values() for f in fs):
        rt.add("check_bounds")
    if any(f.unique for fs in invariants.values() for f in fs):
        rt.add("check_unique")
    o.lines += _imports({"collections.abc": ["Iterable", "Mapping"],
                         "typing": ["Any", "Literal"] if uses_literal else ["Any"]},
                        {"pydantic": ["BaseModel", "ConfigDict", "Field"]},
                        {".runtime": sorted(rt)})
    for ent, edef in domain.entities.items():
        o(0)
        o(0, f"class {names.row_cls[ent]}(BaseModel):")
        o.docstring(4, [f"A row of {ent}; its id ({edef.key}) is the key of Db.{ent}.",
                        *([edef.description.strip()] if edef.description.strip() else [])])
        o(0)
        o(4, 'model_config = ConfigDict(extra="forbid", strict=True)')
        o(0)
        for f in edef.fields.values():
            if f.description.strip():
                o.comment(4, f.description.strip())
            o(4, f"{f.name}: {py_type(f.ty)}")
        o(0)
    o(0)
    o(0, "class Db(BaseModel):")
    o.docstring(4, ["The whole state: one table per entity (id -> row) and the id counters.",
                    "Tables keep insertion order (rows loaded in key order, new rows last), "
                    "exactly like the reference interpreter's state."])
    o(0)
    o(4, 'model_config = ConfigDict(extra="forbid", strict=True)')
    o(0)
    for ent in domain.entities:
        o(4, f"{ent}: dict[str, {names.row_cls[ent]}] = Field(default_factory=dict)")
    ones = ", ".join(f"{_pystr(e)}: 1" for e in domain.entities)
    o(4, f"counters: dict[str, int] = Field(default_factory=lambda: {{{ones}}})")
    o(0)
    o(4, "@classmethod")
    o(4, "def from_state(cls, data: Mapping[str, Any]) -> Db:")
    o.docstring(8, ["A Db from the JSON form of a state (graphgen's State.to_dict).",
                    '    {"tables": {entity: {id: row}}, "counters": {entity: next id number}}'])
    o(8, "tables = {entity: dict(sorted(rows.items())) for entity, rows in data"
         '["tables"].items()}')
    o(8, 'return cls.model_validate({**tables, "counters": dict(data["counters"])})')
    o(0)
    o(4, "def to_state(self) -> dict[str, Any]:")
    o.docstring(8, ["This state as plain JSON data in graphgen's State.to_dict shape, "
                    "tables and rows in sorted order."])
    o(8, "return {")
    o(12, '"tables": {')
    for ent in sorted(domain.entities):
        o(16, f"{_pystr(ent)}: {{k: self.{ent}[k].model_dump() for k in sorted(self.{ent})}},")
    o(12, "},")
    o(12, '"counters": dict(sorted(self.counters.items())),')
    o(8, "}")
    for ent, edef in domain.entities.items():
        row = names.local[ent]
        o(0)
        o(4, f"def {names.getter[ent]}(self, key: str) -> {names.row_cls[ent]}:")
        o.docstring(8, [f"The {ent} row with id ``key``; a ToolError if there is none."])
        o(8, f"{row} = self.{ent}.get(key)")
        o(8, f"if {row} is None:")
        o(12, f'raise ToolError(f"{ent} {{key!r}} not found", kind="not_found")')
        o(8, f"return {row}")
        o(0)
        o(4, f"def {names.record[ent]}(self, key: str) -> dict[str, Any]:")
        o.docstring(8, [f"{ent} ``key`` as tools return it: the id as {edef.key}, then the "
                        "fields."])
        o(8, f"return {{{_pystr(edef.key)}: key, **self.{names.getter[ent]}(key).model_dump()}}")
    o(0)
    o(4, "def check_invariants(self, touched: Iterable[tuple[str, str]]) -> None:")
    o.docstring(8, ["Bounds and uniqueness of the rows a call changed or created.",
                    "Rows are checked in sorted (entity, id) order and fields in declaration "
                    "order, so the first violation reported is the interpreter's."])
    checked = [e for e in domain.entities if invariants[e]]
    if checked:
        o(8, "for entity, key in sorted(touched):")
        for i, ent in enumerate(checked):
            row = names.local[ent]
            o(12, f"{'if' if i == 0 else 'elif'} entity == {_pystr(ent)}:")
            o(16, f"{row} = self.{ent}.get(key)")
            o(16, f"if {row} is None:")
            o(20, "continue")
            for f in invariants[ent]:
                if f.min is not None or f.max is not None:
                    o(16, f"check_bounds({_pystr(ent)}, key, {_pystr(f.name)}, {row}.{f.name}, "
                          f"{f.min!r}, {f.max!r})")
                if f.unique:
                    o(16, f"check_unique({_pystr(ent)}, key, {_pystr(f.name)}, {row}.{f.name}, "
                          f"((k, r.{f.name}) for k, r in self.{ent}.items()))")
    return o.text()


# ============================================================================ tools.py


@dataclass
class _ToolGen:
    """Generates one tool function."""

    domain: Domain
    names: _Names
    tool: ToolDef
    rt: set[str]  # runtime names used (collected for the imports)
    models: set[str]  # model names used
    typing: set[str]

    def __post_init__(self) -> None:
        reserved = set(self.names.row_cls.values())
        self.vars = _rename(_tool_vars(self.tool), reserved)
        self.used = set(self.vars.values()) | reserved | _RUNTIME_NAMES | _MODULE_NAMES
        self.pp = PyPrinter(self.names, self.vars)
        self.ok = _fresh("ok", self.used)
        self.exc = _fresh("exc", self.used)

    def e(self, x: ir.Expr) -> str:
        out = self.pp.expr(x)
        self.rt |= self.pp.helpers
        return out

    def v(self, name: str) -> str:
        return self.vars.get(name, name)

    def annotate(self, t: Ty) -> str:
        s = py_type(t)
        if "Literal[" in s:
            self.typing.add("Literal")
        if "Any" in s:
            self.typing.add("Any")
        return s

    def emit(self, o: _Out) -> None:
        t = self.tool
        params = "".join(f", {self.v(p.name)}: {self.annotate(p.ty)}" for p in t.params.values())
        ret = self.annotate(t.returns.ty) if t.returns is not None else "str"
        o(0, f"def {t.name}(db: Db{params}) -> {ret}:")
        o.docstring(4, self.doc())
        self.args(o)
        for chk in t.requires:
            self.check(o, chk)
        if t.effects:
            self.effects(o)
        else:
            self.read(o)

    def doc(self) -> list[str]:
        t = self.tool
        paras = [t.description.strip() or t.name.replace("_", " ").capitalize() + "."]
        args = ["Args:", "    db: The state. Changed only if the call succeeds."]
        for p in t.params.values():
            bounds = ""
            if p.min is not None or p.max is not None:
                bounds = f", {'' if p.min is None else p.min}..{'' if p.max is None else p.max}"
            head = f"    {self.v(p.name)} ({_type_words(p.ty)}{bounds}): "
            desc = p.description.strip() or "(no description)"
            lines = textwrap.wrap(head + desc, WIDTH - 4, subsequent_indent=" " * 8,
                                  break_on_hyphens=False)
            args.extend(lines)
        paras.append("\n".join(args))
        created = {s.effect.bind: s.effect.entity for s in t.effects
                   if isinstance(s.effect, ir.Create) and s.effect.bind}
        if isinstance(t.returns, ir.Var) and t.returns.name in created:
            paras.append(f"Returns:\n    The id of the new {created[t.returns.name]} "
                         f"({t.returns.name}).")
        elif t.returns_source is not None:
            src = " ".join(t.returns_source.split())
            ret = textwrap.wrap(src, WIDTH - 12, break_on_hyphens=False)
            paras.append("\n".join(["Returns:", *("    " + r for r in ret)]))
        else:
            paras.append('Returns:\n    "ok".')
        why = ("An argument is invalid, a precondition is false or a row is missing"
               + (", or an effect would break an invariant" if t.effects else "")
               + ". The message is the observation for the agent"
               + ("; the state is left unchanged." if t.effects else "."))
        raises = textwrap.wrap("ToolError: " + why, WIDTH - 8, subsequent_indent="    ",
                               break_on_hyphens=False)
        paras.append("\n".join(["Raises:", *("    " + r for r in raises)]))
        return paras

    def args(self, o: _Out) -> None:
        t = self.tool
        for p in t.params.values():
            name, py = _pystr(t.name), self.v(p.name)
            lead = f"{name}, {_pystr(p.name)}, {py}"
            if (p.min is not None or p.max is not None) and p.ty != INT:
                raise CodegenError(f"{self.domain.source}: tool {t.name!r}: bounds on the "
                                   f"non-int parameter {p.name!r} are not supported")
            if p.ty == INT:
                fn = "check_int"
                extra = f", {p.min!r}, {p.max!r}" if p.min is not None or p.max is not None else ""
                line = f"check_int({lead}{extra})"
            elif p.ty == BOOL:
                fn, line = "check_bool", f"check_bool({lead})"
            elif p.ty == DATE:
                fn, line = "check_date", f"check_date({lead})"
            elif isinstance(p.ty, EnumT):
                members = ", ".join(_pystr(x) for x in p.ty.values)
                if len(p.ty.values) == 1:
                    members += ","
                fn, line = "check_enum", f"check_enum({lead}, ({members}))"
            elif isinstance(p.ty, RefT):
                ent = p.ty.entity
                fn, line = "check_ref", f"check_ref({lead}, db.{ent}, {_pystr(ent)})"
            elif p.ty == STR:
                fn, line = "check_str", f"check_str({lead})"
            else:
                raise CodegenError(f"{self.domain.source}: tool {t.name!r}: parameter "
                                   f"{p.name!r} has type {p.ty.show()}")
            self.rt.add(fn)
            o(4, line)

    def check(self, o: _Out, chk: ir.Check) -> None:
        t = self.tool
        o(0)
        o.comment(4, "requires: " + " ".join(chk.source.split()))
        safe = {n for n, p in t.params.items() if isinstance(p.ty, RefT)}
        ok, exc = self.ok, self.exc
        if may_raise(chk.expr, safe):
            o(4, "try:")
            o.stmt(8, f"{ok} = ", self.e(chk.expr))
            o(4, f"except ToolError as {exc}:")
            o(8, f"raise {exc}.within({_pystr(t.name)}) from None")
            self.rt.add("ToolError")
        else:
            o.stmt(4, f"{ok} = ", self.e(chk.expr))
        o(4, f"if not {ok}:")
        facts: list[str] = []
        for node in explained_fields(chk):
            key = self.e(node.key)
            if not isinstance(node.key, ir.Var | ir.Lit):
                key = f"lambda: {key}"
            item = f"fact(db.{node.entity}, {_pystr(node.entity)}, {_pystr(node.field)}, {key})"
            if item not in facts:  # the same read gives the same fact: report it once
                facts.append(item)
        if facts:
            self.rt.add("fact")
        args = [_pystr(t.name), _pystr(chk.message or "precondition failed"), _pystr(chk.source)]
        if facts or self.message_values(chk):
            args.append("[" + ", ".join(facts) + "]")
        args += [f"{n}={self.v(n)}" for n in self.message_values(chk)]
        self.rt.add("precondition_failed")
        o(8, f"raise precondition_failed({', '.join(args)})")

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

    def read(self, o: _Out) -> None:
        t = self.tool
        assert t.returns is not None
        o(0)
        safe = {n for n, p in t.params.items() if isinstance(p.ty, RefT)}
        exc = self.exc
        if may_raise(t.returns, safe):
            o(4, "try:")
            o.stmt(8, "return ", self.e(t.returns))
            o(4, f"except ToolError as {exc}:")
            o(8, f"raise {exc}.within({_pystr(t.name)}, unless_prefixed=True) from None")
            self.rt.add("ToolError")
        else:
            o.stmt(4, "return ", self.e(t.returns))

    def effects(self, o: _Out) -> None:
        t = self.tool
        journal, exc = _fresh("journal", self.used), self.exc
        key = _fresh("key", self.used)
        rows = {ent: _fresh(self.names.local[ent], self.used) for ent in self.domain.entities}
        later: list[set[str]] = []  # names read by each effect's successors (and returns)
        reads: set[str] = set()
        if t.returns is not None:
            reads |= {n.name for n in ir.walk(t.returns) if isinstance(n, ir.Var)}
        for s in reversed(t.effects):
            later.insert(0, set(reads))
            for x in ir.effect_exprs(s.effect):
                reads |= {n.name for n in ir.walk(x) if isinstance(n, ir.Var)}
        self.rt |= {"Journal", "ToolError"}
        o(0)
        o(4, f"{journal} = Journal(db.counters)")
        o(4, "try:")
        for s, after in zip(t.effects, later, strict=True):
            o.comment(8, " ".join(s.source.split()))
            self.effect(o, s.effect, journal, key, rows, after)
        o(8, f"db.check_invariants({journal}.touched)")
        if t.returns is not None:
            o.stmt(8, "return ", self.e(t.returns))
        else:
            o(8, 'return "ok"')
        o(4, f"except ToolError as {exc}:")
        o(8, f"{journal}.rollback()")
        o(8, f"raise {exc}.within({_pystr(t.name)}, unless_prefixed=True) from None")

    def _key(self, o: _Out, k: ir.Expr, key: str) -> str:
        if isinstance(k, ir.Var | ir.Lit):
            return self.e(k)
        o.stmt(8, f"{key} = ", self.e(k))
        return key

    def effect(self, o: _Out, eff: ir.Effect, journal: str, key: str, rows: dict[str, str],
               after: set[str]) -> None:
        match eff:
            case ir.Assign(entity=ent, key=k, field=f, op=op, value=val):
                kk = self._key(o, k, key)
                row = rows[ent]
                o.stmt(8, f"{row} = ", f"db.{self.names.getter[ent]}({kk})")
                o(8, f"{journal}.set({_pystr(ent)}, {kk}, {row}, {_pystr(f)})")
                o.stmt(8, f"{row}.{f} {op} ", self.e(val))
            case ir.ListEdit(entity=ent, key=k, field=f, op=op, value=val):
                kk = self._key(o, k, key)
                row = rows[ent]
                o.stmt(8, f"{row} = ", f"db.{self.names.getter[ent]}({kk})")
                o(8, f"{journal}.{op}({_pystr(ent)}, {kk}, {row}, {_pystr(f)}, {self.e(val)})")
            case ir.Create(entity=ent, bind=b, values=vs):
                edef = self.domain.entities[ent]
                fmt = edef.prefix.replace("{", "{{").replace("}", "}}") + \
                    f"{{:0{edef.width}d}}"
                cls = self.names.row_cls[ent]
                self.models.add(cls)
                fields = ", ".join(f"{f}={self.e(x)}" for f, x in vs)
                call = f"{journal}.create(db.{ent}, {_pystr(ent)}, {_pystr(fmt)}, {cls}({fields}))"
                if b is not None and b in after:
                    o(8, f"{self.v(b)} = {call}")
                else:
                    o(8, call)
            case ir.Delete(entity=ent, key=k):
                o(8, f"{journal}.delete(db.{ent}, {_pystr(ent)}, {self.e(k)})")
            case _:
                raise CodegenError(f"unknown effect {type(eff).__name__}")


def _tools(domain: Domain, names: _Names, header: str) -> str:
    rt: set[str] = {"ToolError", "check_call"}
    models: set[str] = {"Db"}
    typing_names: set[str] = {"Any"}
    body = _Out()
    for i, t in enumerate(domain.tools.values()):
        if i:
            body(0)
            body(0)
        _ToolGen(domain, names, t, rt, models, typing_names).emit(body)
    o = _Out()
    o.docstring(0, [f"The tools of the {domain.name} environment. {header}",
                    "Each tool is a plain function of the state (``db``) and its typed "
                    "arguments. It checks the arguments in declaration order, then each "
                    "precondition (its domain source is the comment above it), then applies the "
                    "effects (their source is the comment above each) under a journal that "
                    "undoes them all if any step or invariant fails. ``call_tool`` runs a tool "
                    "from a name and a JSON object of arguments."])
    o(0)
    o.lines += _imports({"collections.abc": ["Callable"], "typing": sorted(typing_names)}, {},
                        {".models": sorted(models), ".runtime": sorted(rt)})
    o(0)
    o.lines += body.lines
    o(0)
    o(0)
    o.comment(0, "Every tool by name, in declaration order, with its parameters in order.")
    o(0, "TOOLS: dict[str, Callable[..., Any]] = {")
    for name in domain.tools:
        o(4, f"{_pystr(name)}: {name},")
    o(0, "}")
    o(0, "PARAMS: dict[str, tuple[str, ...]] = {")
    for t in domain.tools.values():
        ps = ", ".join(_pystr(p) for p in t.params) + ("," if len(t.params) == 1 else "")
        o(4, f"{_pystr(t.name)}: ({ps}),")
    o(0, "}")
    o(0)
    o(0)
    o(0, "def call_tool(db: Db, name: str, arguments: object) -> Any:")
    o.docstring(4, ["Run tool ``name`` with ``arguments`` (a JSON object) on ``db``.",
                    "Returns the tool's result as plain JSON data. Raises ToolError, whose "
                    "message is the observation for the agent; ``db`` is then unchanged."])
    o(4, "tool = TOOLS.get(name)")
    o(4, "if tool is None:")
    o(8, 'available = ", ".join(TOOLS)')
    o.lines += ['        raise ToolError(',
                '            f"unknown tool {name!r}; available: {available}", tool=name, '
                'kind="unknown_tool"',
                "        )"]
    o(4, "params = PARAMS[name]")
    o(4, "args = check_call(name, params, arguments)")
    o(4, "return tool(db, *(args[p] for p in params))")
    return o.text()


# ============================================================================ other files


def _schemas(domain: Domain, header: str) -> str:
    o = _Out()
    o.docstring(0, [f"Agent-facing description of the {domain.name} environment. {header}",
                    "TOOLS are the OpenAI Chat Completions tool schemas (strict mode) of every "
                    f"tool; FINISH_TOOL is the ``{FINISH_NAME}`` action that ends an episode "
                    "with the agent's answer; POLICY is the domain policy for the system "
                    "prompt."])
    o(0)
    o.lines += _imports({"typing": ["Any"]}, {}, {})
    o.lines.append(f"DOMAIN = {_pystr(domain.name)}")
    o.lines.append(f"DOMAIN_HASH = {_pystr(domain.content_hash)}")
    o.lines += _lit_lines(domain.description.strip(), 0, "DESCRIPTION = ")
    o.lines += _lit_lines(domain.policy.strip() + "\n" if domain.policy.strip() else "", 0,
                          "POLICY = ")
    o(0)
    o.lines += _lit_lines(openai_tools(domain), 0, "TOOLS: list[dict[str, Any]] = ")
    o(0)
    o.lines += _lit_lines(finish_tool(), 0, "FINISH_TOOL: dict[str, Any] = ")
    return o.text()


_ENV = '''
class Environment:
    """One episode at a time over the compiled tools: ``reset(task)``, then ``step(action)``
    until ``done``.

    A task is a mapping with ``initial_state`` (``{"tables": ..., "counters": ...}``),
    ``instruction`` (the first observation) and ``goal`` (``{"changes": [...], "answer":
    [...]}``, as in graphgen task files).

    An action is ``{"name": tool, "arguments": {...} or a JSON string}`` (an OpenAI tool
    call ``{"function": {...}}`` is accepted too). The action ``respond`` with
    ``{"answer": text}`` ends the episode; so does running out of steps.

    Grading is graphgen's own grading function, shipped in ``grading.py``: every expected
    change made, nothing else changed, every answer value mentioned in the final answer.
    The reward is 1.0 on success, else 0.0, given when the episode ends.
    """

    def __init__(self, max_steps: int = 30) -> None:
        self.max_steps = max_steps
        self.task: dict[str, Any] = {}
        self.db = Db()
        self.answer: str | None = None
        self.steps = 0
        self.done = False

    @property
    def tools(self) -> list[dict[str, Any]]:
        """The tool schemas to offer the agent, the finishing action last."""
        return [*TOOLS, FINISH_TOOL]

    @property
    def policy(self) -> str:
        """The domain policy, for the system prompt."""
        return POLICY

    def reset(self, task: Mapping[str, Any]) -> str:
        """Start an episode on ``task``; returns the first observation (the instruction)."""
        self.task = dict(task)
        self.db = Db.from_state(task["initial_state"])
        self.answer = None
        self.steps = 0
        self.done = False
        return str(task.get("instruction", ""))

    def step(self, action: Mapping[str, Any]) -> tuple[str, float, bool, dict[str, Any]]:
        """Apply one action; returns (observation, reward, done, info)."""
        if self.done:
            return "Error: the episode is over; call reset()", 0.0, True, {"error": "done"}
        call = action.get("function", action)
        name = call.get("name", "")
        arguments: Any = call.get("arguments", {})
        self.steps += 1
        info: dict[str, Any] = {"tool": name, "step": self.steps, "error": None}
        observation = ""
        if isinstance(arguments, str):
            try:
                arguments = json.loads(arguments) if arguments.strip() else {}
            except json.JSONDecodeError as exc:
                observation = f"Error: {name}: arguments are not valid JSON ({exc.msg})"
                info["error"] = "bad_json"
        if info["error"] is None and name == FINISH:
            answer = arguments.get("answer", "") if isinstance(arguments, Mapping) else ""
            self.answer = str(answer)
            self.done = True
            observation = "Episode finished."
        elif info["error"] is None:
            try:
                result = call_tool(self.db, name, arguments)
            except ToolError as exc:
                observation = f"Error: {exc.message}"
                info["error"] = exc.kind
            else:
                observation = result if isinstance(result, str) else json.dumps(
                    result, ensure_ascii=False)
        if self.steps >= self.max_steps:
            self.done = True
        reward = self.get_reward() if self.done else 0.0
        if self.done:
            info["grade"] = self.grade()
        return observation, reward, self.done, info

    def grade(self) -> dict[str, Any]:
        """``{"success": bool, "items": [{"check", "ok", "detail"}, ...]}``."""
        goal = self.task.get("goal") or {"changes": [], "answer": []}
        return grade(self.task["initial_state"], self.db.to_state(), goal, self.answer)

    def get_reward(self) -> float:
        """1.0 if the episode's grade is a success, else 0.0."""
        return 1.0 if self.grade()["success"] else 0.0
'''


def _env(domain: Domain, header: str) -> str:
    o = _Out()
    o.docstring(0, [f"A gym-style environment for the {domain.name} tools. {header}"])
    o(0)
    o.lines += _imports({"collections.abc": ["Mapping"], "typing": ["Any"]}, {},
                        {".grading": ["grade"], ".models": ["Db"], ".runtime": ["ToolError"],
                         ".schemas": ["FINISH_TOOL", "POLICY", "TOOLS"], ".tools": ["call_tool"]},
                        plain=["json"])
    o.lines.append(f"FINISH = {_pystr(FINISH_NAME)}  # the action that ends an episode")
    o(0)
    o.lines += _ENV.splitlines()
    return o.text()


def _init(domain: Domain, names: _Names, header: str) -> str:
    o = _Out()
    paras = [f"The {domain.name} environment. {header}"]
    if domain.description.strip():
        paras.append(" ".join(domain.description.split()))
    paras.append("Usage::\n\n    env = Environment()\n    first = env.reset(task)\n"
                 '    obs, reward, done, info = env.step({"name": ..., "arguments": {...}})')
    o.docstring(0, paras)
    o(0)
    rows = list(names.row_cls.values())
    exported = {".env": ["Environment"], ".models": ["Db", *rows], ".runtime": ["ToolError"],
                ".schemas": ["DESCRIPTION", "DOMAIN", "DOMAIN_HASH", "FINISH_TOOL", "POLICY",
                             "TOOLS"],
                ".tools": ["call_tool"]}
    o.lines += _imports({}, {}, exported)
    names_all = [n for ns in exported.values() for n in ns]
    o.lines += _lit_lines(_sort_names(names_all), 0, "__all__ = ")
    return o.text()


# ============================================================================ entry points


def _check_domain(domain: Domain) -> None:
    if FINISH_NAME in domain.tools:
        raise CodegenError(f"{domain.source}: tool {FINISH_NAME!r} clashes with the action "
                           "that ends an episode")
    for name in domain.tools:
        if keyword.iskeyword(name) or name in _RUNTIME_NAMES | _MODULE_NAMES | _USED_BUILTINS:
            raise CodegenError(f"{domain.source}: tool name {name!r} cannot be a Python "
                               "function name in the generated code")


def compile_domain_source(domain: Domain) -> dict[str, str]:
    """The generated package as {relative file name: source text}, sorted by name.

    Deterministic: the same domain gives byte-identical text (no paths, no clock).
    """
    _check_domain(domain)
    names = _Names.plan(domain)
    header = (f"Generated by graphgen from domain {domain.name!r} (spec {domain.content_hash}); "
              "do not edit.")
    files = {
        "__init__.py": _init(domain, names, header),
        "env.py": _env(domain, header),
        "models.py": _models(domain, names, header),
        "py.typed": "",
        "runtime.py": RUNTIME_SOURCE.read_text(encoding="utf-8"),
        "grading.py": GRADING_SOURCE.read_text(encoding="utf-8"),
        "schemas.py": _schemas(domain, header),
        "tools.py": _tools(domain, names, header),
    }
    return dict(sorted(files.items()))


def write_package(domain: Domain, out_dir: Path) -> list[Path]:
    """Write the compiled package into ``out_dir`` (created if needed); the paths written."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for name, text in compile_domain_source(domain).items():
        path = out_dir / name
        path.write_bytes(text.encode("utf-8"))
        written.append(path)
    return written


__all__ = ["CodegenError", "PyPrinter", "compile_domain_source", "py_type", "write_package"]
