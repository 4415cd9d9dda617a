"""The limits a domain file must keep, and the checks that hold it to them.

A domain file may come from anyone. Each limit bounds the time or memory one step can
spend on it (loading the YAML, type-checking, generating states, compiling), so a
hostile file ends in a located :class:`~graphgen.errors.DomainError` in plain words
instead of a hang, a ``MemoryError`` or a traceback. The same table is in
``docs/security.md``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import Any

import yaml

from graphgen import ir
from graphgen.domain import Domain
from graphgen.errors import Located

#: The largest domain file, in bytes (the built-in retail domain is about 40 KB).
MAX_DOMAIN_BYTES = 1024 * 1024
#: The deepest nesting of YAML mappings and lists (the built-ins reach 6).
MAX_YAML_DEPTH = 32
#: The most YAML nodes with every alias expanded: aliases cannot make a small file big.
MAX_YAML_NODES = 200_000
#: The longest text of a domain (a description, the policy, a message, an expression).
MAX_TEXT_CHARS = 20_000
#: The longest name: an entity, field, tool, parameter, enum or enum member, a vocab hint.
MAX_NAME_CHARS = 64
#: The longest mapping key: a name, or ``Entity.field`` / ``tool.param`` (phrases).
MAX_KEY_CHARS = 2 * MAX_NAME_CHARS + 1
#: The most decimal digits of an integer in a domain file or an expression.
MAX_INT_DIGITS = 18
#: The most rows a table may have in a generated state (``size:``, ``--size``).
MAX_TABLE_SIZE = 100_000
#: Estimated evaluation steps of one expression (rows visited by nested comprehensions)
#: above which ``graphgen check`` warns that tool calls will be slow.
WARN_EXPR_COST = 100_000
#: ... and above which the domain is rejected (about 5 s of one tool call).
MAX_EXPR_COST = 1_000_000


_SURROGATE = re.compile("[\ud800-\udfff]")
# Control characters but tab, newline and carriage return; DEL; lone surrogates.
_UNPRINTABLE = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\ud800-\udfff]")
#: The safe YAML loader: libyaml's when it is installed (twenty times faster than PyYAML's
#: own, with the same nodes, marks and values).
SAFE_LOADER: Any = yaml.CSafeLoader if yaml.__with_libyaml__ else yaml.SafeLoader


def _line(node: yaml.Node) -> str:
    return f"line {node.start_mark.line + 1}"


def yaml_shape_problem(text: str) -> Located | None:
    """A file too big or nested too deep, found by streaming its parse events (the
    YAML composer recurses, so it must not see a deep file)."""
    size = len(text.encode("utf-8", "surrogatepass"))
    if size > MAX_DOMAIN_BYTES:
        return Located(f"the file has {size} bytes; the limit is {MAX_DOMAIN_BYTES}")
    lone = _SURROGATE.search(text)
    if lone is not None:
        line = text.count("\n", 0, lone.start()) + 1
        return Located(
            f"lone surrogate U+{ord(lone.group()):04X} (not Unicode text)", where=f"line {line}"
        )
    too_deep = f"mappings and lists nested deeper than {MAX_YAML_DEPTH} levels"
    depth = 0
    try:
        for ev in yaml.parse(text, Loader=SAFE_LOADER):
            if isinstance(ev, yaml.CollectionStartEvent):
                depth += 1
                if depth > MAX_YAML_DEPTH:
                    line = ev.start_mark.line + 1 if ev.start_mark else 0
                    return Located(too_deep, where=f"line {line}")
            elif isinstance(ev, yaml.CollectionEndEvent):
                depth -= 1
    except yaml.MarkedYAMLError as exc:
        # libyaml scans a flow collection before its first event and stops at its own
        # depth limit (1000): the same problem, found sooner.
        if "nesting depth" not in str(exc.problem) or exc.problem_mark is None:
            raise
        return Located(too_deep, where=f"line {exc.problem_mark.line + 1}")
    return None


def yaml_alias_problem(root: yaml.Node) -> Located | None:
    """An alias that refers to a node containing it, or aliases that expand the file
    past :data:`MAX_YAML_NODES` nodes (the "billion laughs"). Linear in the file: each
    node's expanded size is computed once."""
    sizes: dict[int, int] = {}
    open_: set[int] = set()
    # Iterative post-order: the composed graph may be deep through aliases.
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, done = stack.pop()
        nid = id(node)
        if done:
            kids = _kids(node)
            sizes[nid] = min(MAX_YAML_NODES + 1, 1 + sum(sizes[id(k)] for k in kids))
            open_.discard(nid)
            if sizes[nid] > MAX_YAML_NODES:
                return Located(
                    f"aliases expand the file past {MAX_YAML_NODES} nodes", where=_line(node)
                )
            continue
        if nid in sizes:
            continue
        if nid in open_:
            return Located("an alias refers to a node that contains it", where=_line(node))
        open_.add(nid)
        stack.append((node, True))
        for k in _kids(node):
            if id(k) in open_:
                return Located("an alias refers to a node that contains it", where=_line(k))
            if id(k) not in sizes:
                stack.append((k, False))
    return None


def _kids(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.MappingNode):
        return [x for kv in node.value for x in kv]
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    return []


def _walk(data: Any, path: str) -> Iterator[tuple[str, Any, bool]]:
    """(path, value, is_key) of every value and key of loaded YAML data, without
    recursion (the shape was bounded before, but stay safe)."""
    stack: list[tuple[str, Any, bool]] = [(path, data, False)]
    while stack:
        p, x, is_key = stack.pop()
        yield p, x, is_key
        if isinstance(x, dict):
            for k, v in x.items():
                sub = f"{p}.{k}" if p else str(k)
                stack.append((sub, k, True))
                stack.append((sub, v, False))
        elif isinstance(x, list):
            stack.extend((f"{p}[{i}]", v, False) for i, v in enumerate(x))


def text_problems(data: Any) -> list[Located]:
    """Every text and number of loaded YAML data within the limits: no NUL or other
    control character but tab and newline, no lone surrogate, no text longer than
    :data:`MAX_TEXT_CHARS`, no key longer than :data:`MAX_KEY_CHARS`, no integer
    with more than :data:`MAX_INT_DIGITS` digits. One problem per path."""
    out: list[Located] = []
    for path, x, is_key in _walk(data, ""):
        where = path or "top level"
        if isinstance(x, bool):
            continue
        if isinstance(x, int) and abs(x) >= 10**MAX_INT_DIGITS:
            out.append(Located(f"integer with more than {MAX_INT_DIGITS} digits", where=where))
        elif isinstance(x, str):
            why = _text_problem(x, MAX_KEY_CHARS if is_key else MAX_TEXT_CHARS)
            if why:
                what = "name" if is_key else "text"
                out.append(Located(f"{what} {_preview(x)}: {why}", where=where))
    return out


def _text_problem(s: str, limit: int) -> str:
    if len(s) > limit:
        return f"{len(s)} characters; the limit is {limit}"
    bad = _UNPRINTABLE.search(s)
    if bad is None:
        return ""
    code = ord(bad.group())
    if 0xD800 <= code <= 0xDFFF:
        return f"lone surrogate U+{code:04X} (not Unicode text)"
    return f"control character U+{code:04X}"


def _preview(s: str) -> str:
    shown = s if len(s) <= 40 else s[:37] + "..."
    return ascii(shown)


def expression_cost(e: ir.Expr, rows: Callable[[str], int]) -> int:
    """Estimated evaluation steps of ``e``: a comprehension visits every row of its
    table (``rows(entity)``, the declared size) and evaluates its body on each, so
    nested comprehensions multiply. Capped just above :data:`MAX_EXPR_COST`."""
    inner = sum(expression_cost(c, rows) for c in ir.children(e))
    cost = 1 + (rows(e.entity) * inner if isinstance(e, ir.Comp) else inner)
    return min(cost, MAX_EXPR_COST * 10)


def domain_costs(domain: Domain) -> list[tuple[str, str, int]]:
    """(where, expression source, estimated steps) of every expression of ``domain``,
    at the tables' declared sizes. A tool's expressions cost that much per call; an
    entity's ``generate`` rules and invariants are evaluated on each of its rows, so
    theirs are multiplied by its size."""

    def rows(entity: str) -> int:
        edef = domain.entities.get(entity)
        return max(1, edef.size) if edef is not None else 1

    out: list[tuple[str, str, int]] = []
    for tool in domain.tools.values():
        for i, chk in enumerate(tool.requires):
            out.append(
                (f"tool {tool.name!r}, requires[{i}]", chk.source, expression_cost(chk.expr, rows))
            )
        for i, st in enumerate(tool.effects):
            cost = sum(expression_cost(e, rows) for e in ir.effect_exprs(st.effect))
            out.append((f"tool {tool.name!r}, effects[{i}]", st.source, cost))
        if tool.returns is not None:
            out.append(
                (
                    f"tool {tool.name!r}, returns",
                    tool.returns_source or "",
                    expression_cost(tool.returns, rows),
                )
            )
        for i, case in enumerate(tool.cases):
            if case.when is not None:
                where = f"tool {tool.name!r}, cases[{i}].when"
                out.append((where, case.when_source or "", expression_cost(case.when, rows)))
        for i, it in enumerate(tool.intents):
            if it.when is not None:
                where = f"tool {tool.name!r}, intents[{i}].when"
                out.append((where, it.when_source or "", expression_cost(it.when, rows)))
    for edef in domain.entities.values():
        n = rows(edef.name)
        per_row: list[tuple[str, str, ir.Expr]] = [
            (f"generate.derive.{d.field}", d.source, d.expr) for d in edef.derive
        ]
        per_row += [
            (f"generate.require[{i}]", c.source, c.expr) for i, c in enumerate(edef.require)
        ]
        per_row += [(f"invariants ({inv.name})", inv.source, inv.expr) for inv in edef.invariants]
        for part, source, e in per_row:
            out.append((f"entity {edef.name!r}, {part}", source, n * expression_cost(e, rows)))
    return out
