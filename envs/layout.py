"""Text layout of generated Python: lines fitted to the width, docstrings, comments, imports
and literals, so the compiled packages pass the project's linters without a formatter.

The line breaker parses one generated statement into tokens nested by brackets and breaks
it the way a formatter would: a statement at its last bracket (a ``def`` at its first), a
bracketed part at its loosest operator or after its commas, string literals into pieces
that fit. A line that cannot be broken keeps a ``noqa: E501``.
"""

from __future__ import annotations

import ast
import io
import re
import textwrap
import tokenize
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

#: The line length of the generated code (the project's ruff line-length).
WIDTH = 100


def py_str(s: str) -> str:
    """A Python string literal, double-quoted where possible; non-ASCII is escaped so
    linters see no confusable characters."""
    lit = ascii(s)
    if lit.startswith("'") and '"' not in s:
        return '"' + lit[1:-1] + '"'  # no quote in s is escaped, so the body is unchanged
    return lit


# ============================================================================ line breaking

_OPEN = {"(": ")", "[": "]", "{": "}"}
_NOT_OPERAND = frozenset(
    {
        "and",
        "or",
        "not",
        "if",
        "else",
        "for",
        "in",
        "is",
        "lambda",
        "return",
        "raise",
        "await",
        "del",
        "yield",
    }
)
_COMMA = 10
_PRIORITY = {
    "for": 9,
    "if": 9,
    "else": 9,
    "or": 8,
    "and": 7,
    "==": 6,
    "!=": 6,
    "<": 6,
    "<=": 6,
    ">": 6,
    ">=": 6,
    "+": 5,
    "-": 5,
    "*": 4,
}


@dataclass
class _Token:
    text: str
    space: bool  # whitespace before it in the one-line form
    kind: int


@dataclass
class _Group:
    open: _Token
    body: list[_Token | _Group]
    close: _Token

    @property
    def space(self) -> bool:
        return self.open.space


_Node = _Token | _Group


def _parse_line(text: str) -> list[_Node]:
    """One line of Python as tokens nested by brackets."""
    root: list[_Node] = []
    stack: list[tuple[_Token, list[_Node]]] = []
    prev = 0
    skip = (tokenize.NEWLINE, tokenize.NL, tokenize.ENDMARKER, tokenize.INDENT, tokenize.DEDENT)
    for tok in tokenize.generate_tokens(io.StringIO(text).readline):
        if tok.type in skip:
            continue
        if tokenize.tok_name.get(tok.type, "").startswith("FSTRING"):
            return []
        t = _Token(tok.string, tok.start[1] > prev, tok.type)
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
    return n.text if isinstance(n, _Token) else n.open.text + _flat(n.body) + n.close.text


def _flat(nodes: list[_Node]) -> str:
    return "".join((" " if i and n.space else "") + _text(n) for i, n in enumerate(nodes))


def _is_operand(n: _Node) -> bool:
    if isinstance(n, _Group):
        return True
    if n.kind == tokenize.NAME:
        return n.text not in _NOT_OPERAND
    return n.kind in (tokenize.NUMBER, tokenize.STRING)


def _priority(nodes: list[_Node], i: int) -> int:
    n = nodes[i]
    if not isinstance(n, _Token):
        return 0
    if n.text == ",":
        return _COMMA
    p = _PRIORITY.get(n.text, 0)
    if n.text in ("+", "-", "*") and not (i and _is_operand(nodes[i - 1])):
        return 0  # unary, or a star argument
    return p


def _split(nodes: list[_Node]) -> list[list[_Node]]:
    """Split at the loosest top-level delimiter: after commas, before operators."""
    prios = [_priority(nodes, i) if i else 0 for i in range(len(nodes))]  # not a leading operator
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


def _escaped_width(ch: str) -> int:
    """Columns ``ch`` takes inside a literal written by :func:`py_str`. A quote counts
    two: whether it is escaped depends on the other characters of its piece."""
    return 2 if ch in "'\"" else len(ascii(ch)) - 2


def _cut_word(word: str, room: int) -> list[str]:
    """``word`` cut into pieces whose literals fit ``room`` columns, in one pass.

    Each piece holds at least one character, so a character whose escape alone is wider
    than ``room`` still makes progress. Linear in ``len(word)``: the widths are summed
    as the pieces grow, never recomputed from a slice.
    """
    pieces: list[str] = []
    start, used = 0, 2  # the two quotes
    for i, ch in enumerate(word):
        width = _escaped_width(ch)
        if used + width > room and i > start:
            pieces.append(word[start:i])
            start, used = i, 2
        used += width
    pieces.append(word[start:])
    return pieces


def _string_chunks(value: str, room: int) -> list[str]:
    """Cut a string into literals that each fit ``room`` columns (breaks after newlines,
    then after spaces; a word too long for a line is cut).

    The pieces joined give ``value`` back. The time is linear in the length of
    ``value`` (for a bounded ``room``), also for text without spaces.
    """
    chunks: list[str] = []
    cur = ""
    for w in re.split(r"(?<=[ \n])", value):
        if cur and (len(cur) + len(w) > room or len(py_str(cur + w)) > room or cur.endswith("\n")):
            chunks.append(cur)
            cur = ""
        cur += w
        if len(cur) > 1 and len(py_str(cur)) > room:
            *full, cur = _cut_word(cur, room)
            chunks += full
    if cur or not chunks:
        chunks.append(cur)
    return [py_str(c) for c in chunks]


def _lone_string(nodes: list[_Node]) -> bool:
    """A plain string literal, maybe followed by a comma: it can be cut into pieces."""
    first = nodes[0]
    return (
        isinstance(first, _Token)
        and first.kind == tokenize.STRING
        and first.text[:1] in "'\""
        and all(isinstance(n, _Token) and n.text == "," for n in nodes[1:])
    )


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
        tail = [g.close, *nodes[gi + 1 :]]
        inner = g.body
        last = inner[-1]
        if (
            indent + 4 + len(_flat(inner)) > WIDTH
            and not (isinstance(last, _Token) and last.text == ",")
            and any(_priority(inner, i) == _COMMA for i in range(len(inner)))
        ):
            # One item per line gets a trailing comma, as formatters write it.
            inner = [*inner, _Token(",", False, tokenize.OP)]
        body = _layout(inner, indent + 4, False)
        return _layout(head, indent, stmt) + body + _layout(tail, indent, stmt)
    lead = nodes[0]
    if not stmt and isinstance(lead, _Token) and _lone_string(nodes):
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


def _has_top_delimiters(expr: str) -> bool:
    nodes = _parse_line(expr)
    return any(_priority(nodes, i) for i in range(len(nodes)))


def _ascii_text(s: str) -> str:
    return s.encode("ascii", "backslashreplace").decode("ascii")


class Lines:
    """Lines of one generated file."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def __call__(self, indent: int, text: str = "") -> None:
        self.lines.extend(_fit(" " * indent + text) if text else [""])

    def stmt(self, indent: int, head: str, expr: str, tail: str = "") -> None:
        """``head + expr + tail``; a long expression is parenthesised so it can be split."""
        line = head + expr + tail
        if indent + len(line) > WIDTH and _has_top_delimiters(expr):
            line = f"{head}({expr}){tail}"
        self(indent, line)

    def comment(self, indent: int, text: str) -> None:
        room = WIDTH - indent - 2
        for para in _ascii_text(text).strip().splitlines() or [""]:
            wrapped = textwrap.wrap(
                para, room, subsequent_indent="    ", break_on_hyphens=False
            ) or [""]
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
                body.extend(textwrap.wrap(para, WIDTH - indent - 3, break_on_hyphens=False) or [""])
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


def sort_names(names: Iterable[str]) -> list[str]:
    """isort's order-by-type: CONSTANTS, then Classes, then functions and variables."""

    def key(n: str) -> tuple[int, str]:
        kind = 0 if n.isupper() and len(n) > 1 else 1 if n[:1].isupper() else 2
        return kind, n.lower()

    return sorted(set(names), key=key)


def import_lines(
    std: Mapping[str, Iterable[str]],
    third: Mapping[str, Iterable[str]],
    local: Mapping[str, Iterable[str]],
    plain: Iterable[str] = (),
) -> list[str]:
    """Import lines in isort order: future, standard library, third party, local."""
    out = ["from __future__ import annotations", ""]
    std_lines = [f"import {m}" for m in sorted(plain)]
    std_lines += [
        f"from {m} import {', '.join(sort_names(ns))}" for m, ns in sorted(std.items()) if ns
    ]
    for block in (
        std_lines,
        [f"from {m} import {', '.join(sort_names(ns))}" for m, ns in sorted(third.items()) if ns],
        [f"from {m} import {', '.join(sort_names(ns))}" for m, ns in sorted(local.items()) if ns],
    ):
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


def _literal_flat(v: Any) -> str:
    if isinstance(v, dict):
        items = (f"{_literal_flat(k)}: {_literal_flat(x)}" for k, x in v.items())
        return "{" + ", ".join(items) + "}"
    if isinstance(v, list):
        return "[" + ", ".join(_literal_flat(x) for x in v) + "]"
    if isinstance(v, str):
        return py_str(v)
    if v is None or isinstance(v, bool | int):
        return repr(v)
    raise TypeError(f"cannot write {type(v).__name__} as a literal")


def literal_lines(v: Any, indent: int, prefix: str = "", suffix: str = "") -> list[str]:
    """A JSON-like value as a Python literal, exploded one item per line when too long."""
    pad = " " * indent
    flat = prefix + _literal_flat(v) + suffix
    if indent + len(flat) <= WIDTH:
        return [pad + flat]
    if isinstance(v, dict) and v:
        lines = [pad + prefix + "{"]
        for k, x in v.items():
            lines += literal_lines(x, indent + 4, _literal_flat(k) + ": ", ",")
        return [*lines, pad + "}" + suffix]
    if isinstance(v, list) and v:
        lines = [pad + prefix + "["]
        for x in v:
            lines += literal_lines(x, indent + 4, "", ",")
        return [*lines, pad + "]" + suffix]
    if isinstance(v, str):
        chunks = _string_chunks(v, WIDTH - indent - 4)
        return [pad + prefix + "(", *(pad + "    " + c for c in chunks), pad + ")" + suffix]
    return [pad + flat + "  # noqa: E501"]
