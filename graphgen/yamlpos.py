"""Line and column of every node of a domain file, so each error points at its node.

PyYAML's composer keeps a start mark (line, column) on every node; the loader walks the
composed tree once (:func:`graphgen.load._lines`, which also finds duplicate keys) and
records here, for each path of keys and list indexes (``("tools", "pay", "effects",
"1")``), the key's mark and the value node. A problem found later — by pydantic on the
shape, or by the elaborator in an expression — names its path, and :meth:`Positions.at`
turns the deepest recorded prefix of that path into ``(line, column)``, 1-based.
:meth:`Positions.in_expr` places an expression error at its culprit in the file, on
whichever line of a multi-line (folded, literal or plain) scalar it is.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import yaml

Path_ = tuple[str, ...]


@dataclass
class Positions:
    """Marks of a composed YAML file, by path, and the file's lines."""

    keys: dict[Path_, tuple[int, int]] = field(default_factory=dict)
    values: dict[Path_, yaml.Node] = field(default_factory=dict)
    lines: list[str] = field(default_factory=list)

    def add(self, path: Path_, key: yaml.Node | None, value: yaml.Node) -> None:
        """Record the node at ``path`` (and its key's mark, for a mapping entry)."""
        if key is not None:
            self.keys[path] = (key.start_mark.line + 1, key.start_mark.column + 1)
        self.values[path] = value

    def at(self, path: Path_, *, key: bool = False) -> tuple[int, int] | None:
        """The 1-based (line, column) of the deepest recorded prefix of ``path``.

        A scalar is its start; a mapping or a list is its key's mark, or its start in a
        list. With ``key`` the node at ``path`` is its key's mark (an unknown or misspelt
        key).
        """
        for n in range(len(path), 0, -1):
            p = path[:n]
            node = self.values.get(p)
            if node is None:
                continue
            if key and n == len(path) and p in self.keys:
                return self.keys[p]
            if p in self.keys and not isinstance(node, yaml.ScalarNode):
                return self.keys[p]
            return node.start_mark.line + 1, node.start_mark.column + 1
        return None

    def in_expr(
        self, path: Path_, expr: str, col: int | None, line: int = 1
    ) -> tuple[int, int] | None:
        """The 1-based (line, column) in the file of an expression error.

        ``expr`` is the expression text at ``path`` (or at a key of the mapping there,
        as ``check`` of a ``requires`` item); ``col`` and ``line`` are the error's place
        inside its stripped text (without ``col``: the node at ``path``). A folded or
        plain multi-line scalar joins its lines with spaces and a literal one keeps
        them: the culprit is found by walking the scalar's source alongside its value.
        Where that cannot be done the scalar's start stands in.
        """
        if col is None:
            return self.at(path)
        node = self.values.get(path)
        if isinstance(node, yaml.MappingNode):
            node = next(
                (
                    v
                    for _, v in node.value
                    if isinstance(v, yaml.ScalarNode) and v.value.strip() == expr.strip()
                ),
                node,
            )
        if not isinstance(node, yaml.ScalarNode):
            return self.at(path)
        text = expr.strip()
        base = node.value.find(text) if text else -1
        spot = None
        if base >= 0:
            spot = _source_of(node, self.lines, base + _offset(text, line, col))
        return spot or (node.start_mark.line + 1, node.start_mark.column + 1)


# how YAML breaks lines (marks count them), and how Python's tokenizer does (ast does)
_YAML_BREAK = re.compile(r"\r\n|[\r\n\x85\u2028\u2029]")
_PY_BREAK = re.compile(r"\r\n|\r|\n")


def _offset(text: str, line: int, col: int) -> int:
    """The 0-based offset in ``text`` of its 1-based ``line`` and ``col``."""
    starts = [0, *(m.end() for m in _PY_BREAK.finditer(text))]
    return starts[max(1, min(line, len(starts))) - 1] + max(col, 1) - 1


def _source_of(node: yaml.ScalarNode, lines: list[str], offset: int) -> tuple[int, int] | None:
    """The 1-based (line, column) in the file of character ``offset`` of the scalar's value.

    YAML drops indentation and a block's header, folds line breaks into spaces and
    undoubles quotes, but keeps the other visible characters in order: each visible
    character of the value is the next one like it in the source. (A double-quoted
    escape such as ``\\t`` is skipped over, which may land a character off.) A space, or
    the end, is placed just after the visible character before it.
    """
    value: str = node.value
    if not lines or offset < 0 or offset > len(value):
        return None
    li, ci = node.start_mark.line, node.start_mark.column
    if node.style in ("|", ">"):
        li, ci = li + 1, 0  # the content starts on the line after the '|' or '>' header
    elif node.style in ("'", '"'):
        ci += 1  # past the opening quote
    end = node.end_mark.line
    last: tuple[int, int] | None = None
    for ch in value[: offset + 1]:
        if ch.isspace():
            continue
        while li <= end and li < len(lines):
            if ci < len(lines[li]) and lines[li][ci] == ch:
                break
            if ci >= len(lines[li]):
                li, ci = li + 1, 0
            else:
                ci += 1
        else:
            return None  # an escape the walk cannot follow
        last = (li, ci)
        ci += 1
    if offset < len(value) and not value[offset].isspace() and last is not None:
        return last[0] + 1, last[1] + 1
    if last is None:  # only spaces before the culprit
        return node.start_mark.line + 1, node.start_mark.column + 1
    return last[0] + 1, last[1] + 2


def collect(root: yaml.Node | None, text: str = "") -> Positions:
    """Every node of a composed file, by path (a key's text, a list's index); ``text`` is
    the file the nodes were composed from."""
    pos = Positions(lines=_YAML_BREAK.split(text))
    if root is None:
        return pos

    def visit(node: yaml.Node, path: Path_) -> None:
        if isinstance(node, yaml.MappingNode):
            for k, v in node.value:
                p = (*path, str(k.value))
                if p not in pos.values:  # a duplicate key is reported on its own
                    pos.add(p, k, v)
                visit(v, p)
        elif isinstance(node, yaml.SequenceNode):
            for i, v in enumerate(node.value):
                p = (*path, str(i))
                pos.add(p, None, v)
                visit(v, p)

    visit(root, ())
    return pos


_WHERE = re.compile(
    r"^(tool|entity|enum|phrases|constant|function) '([^']*)'(?: \(line \d+\))?(?:, (.*))?\Z"
)
_PART = re.compile(r"([^.\[\]\s]+)|\[(\d+)\]")


def where_path(where: str) -> Path_ | None:
    """The YAML path a location text of the elaborator names.

    >>> where_path("tool 'pay' (line 20), requires[1].message")
    ('tools', 'pay', 'requires', '1', 'message')
    >>> where_path("entity 'User', generate.derive.total")
    ('entities', 'User', 'generate', 'derive', 'total')
    >>> where_path("entity 'User', invariants[0] (paid)")
    ('entities', 'User', 'invariants', '0')
    >>> where_path("constant 'RATE', values.EUR")
    ('constants', 'RATE', 'values', 'EUR')
    """
    m = _WHERE.match(where)
    if m is None:
        return None
    kind, name, part = m.groups()
    top = {
        "tool": "tools",
        "entity": "entities",
        "enum": "enums",
        "phrases": "phrases",
        "constant": "constants",
        "function": "functions",
    }[kind]
    out: list[str] = [top, name]
    if part:
        part = part.split(" (", 1)[0]  # "invariants[0] (its name)"
        out += [a or b for a, b in _PART.findall(part)]
    return tuple(out)
