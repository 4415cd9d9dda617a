"""Line and column of every node of a domain file, so each error points at its node.

PyYAML's composer keeps a start mark (line, column) on every node; the loader walks the
composed tree once (:func:`graphgen.load._lines`, which also finds duplicate keys) and
records here, for each path of keys and list indexes (``("tools", "pay", "effects",
"1")``), the key's mark and the value node. A problem found later — by pydantic on the
shape, or by the elaborator in an expression — names its path, and :meth:`Positions.at`
turns the deepest recorded prefix of that path into ``(line, column)``, 1-based. Inside
a one-line expression the column is the expression's own column shifted to the file.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import yaml

Path_ = tuple[str, ...]


@dataclass
class Positions:
    """Marks of a composed YAML file, by path."""

    keys: dict[Path_, tuple[int, int]] = field(default_factory=dict)
    values: dict[Path_, yaml.Node] = field(default_factory=dict)

    def add(self, path: Path_, key: yaml.Node | None, value: yaml.Node) -> None:
        """Record the node at ``path`` (and its key's mark, for a mapping entry)."""
        if key is not None:
            self.keys[path] = (key.start_mark.line + 1, key.start_mark.column + 1)
        self.values[path] = value

    def at(
        self, path: Path_, col: int | None = None, *, key: bool = False
    ) -> tuple[int, int] | None:
        """The 1-based (line, column) of the deepest recorded prefix of ``path``.

        A scalar is its start, or with ``col`` (an expression error's column, for the node
        at ``path`` itself) that column of a one-line scalar in the file; a mapping or a
        list is its key's mark, or its start in a list. With ``key`` the node at ``path``
        is its key's mark (an unknown or misspelt key).
        """
        for n in range(len(path), 0, -1):
            p = path[:n]
            node = self.values.get(p)
            if node is None:
                continue
            exact = n == len(path)
            if key and exact and p in self.keys:
                return self.keys[p]
            if isinstance(node, yaml.ScalarNode):
                return _scalar_pos(node, col if exact else None)
            if p in self.keys:
                return self.keys[p]
            return node.start_mark.line + 1, node.start_mark.column + 1
        return None


def _scalar_pos(node: yaml.ScalarNode, col: int | None) -> tuple[int, int]:
    line, column = node.start_mark.line + 1, node.start_mark.column + 1
    one_line = node.end_mark.line == node.start_mark.line
    if col is not None and one_line and node.style in (None, "'", '"'):
        # a quote opens the scalar; the expression's text starts after it
        column += (1 if node.style else 0) + col - 1
    return line, column


def collect(root: yaml.Node | None) -> Positions:
    """Every node of a composed file, by path (a key's text, a list's index)."""
    pos = Positions()
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
