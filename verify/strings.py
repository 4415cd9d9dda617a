"""Strings in the z3 encoding: a finite, exact encoding over the universe's string table.

A ``str`` is the Int index of its text in the universe's sorted string table
(:mod:`graphgen.verify.universe`). The string operations (:mod:`graphgen.strings`) are
encoded without z3's string theory:

* text-producing ``concat``/``fstring``/``str`` give a :class:`TextVal`: the parts
  themselves (each a term of its own type). Shown to the agent, every part is a value
  it sees (an id in "Ticket T0003 created" is revealed); used as a string (compared,
  stored, an argument of another operation) it needs its index, which exists when every
  part is a constant and the text is in the table, and is refused (EncodeError) otherwise;
* ``lower``/``upper``, ``startswith``/``endswith``/``contains`` and ``len`` on a symbolic
  index are tabulated over the finite table: the result is an if-then-else over the
  strings the index can be, computed in Python with the interpreter's own function.
  The table is closed under ``lower``/``upper`` when it is built (the results are added),
  so the tabulated result is always a string of the table.

Soundness: a string term only ever denotes an index of the table (the values of the
state, of arguments and of the domain's literals, plus the closure above), so an
if-then-else over every index is the operation's exact graph on the values that can
occur; every other case raises EncodeError, which makes the caller refuse the proof
rather than approximate it.
"""

from __future__ import annotations

from collections.abc import Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from typing import Any

from graphgen import ir
from graphgen.domain import Domain, per_domain
from graphgen.strings import TEXT_OPS, apply
from graphgen.types import STR, Ty
from graphgen.verify.terms import (
    LIT,
    EncodeError,
    Term,
    and_,
    eq,
    int_const,
    int_val,
    ite,
    not_,
    or_,
)

#: Most string-table entries a tabulated operation enumerates (pairs count as product).
MAX_TABLE = 200_000


@dataclass
class TextVal:
    """A computed text: its parts as (term, type) and its index term, when it has one."""

    parts: list[tuple[Term, Ty]]
    index: Term | None


@per_domain
def closure_ops(domain: Domain) -> frozenset[str]:
    """The case-mapping operations the domain's tools use (the table is closed under
    them), and every constant text the tools compute from literals only."""
    out: set[str] = set()
    for tool in domain.tools.values():
        for x in tool.expressions():
            for n in ir.walk(x):
                if isinstance(n, ir.StrOp) and n.op in ("lower", "upper"):
                    out.add(n.op)
    return frozenset(out)


@per_domain
def constant_texts(domain: Domain) -> frozenset[str]:
    """Texts of string operations over literals only (``'a' + 'b'``), folded here."""
    out: set[str] = set()
    for tool in domain.tools.values():
        for x in tool.expressions():
            for n in ir.walk(x):
                if (
                    isinstance(n, ir.StrOp)
                    and n.op in TEXT_OPS
                    and all(isinstance(a, ir.Lit) for a in n.args)
                ):
                    vals = [a.value for a in n.args if isinstance(a, ir.Lit)]
                    out.add(apply(n.op, vals, [a.ty for a in n.args]))
    return frozenset(out)


def close(strings: set[str], ops: AbstractSet[str]) -> set[str]:
    """``strings`` closed under the case mappings ``ops`` (two rounds reach a fixpoint:
    lower(upper(s)) is lower(s) for every text the table holds in practice, and a third
    round is added if not)."""
    out = set(strings)
    for _ in range(3):
        new = {s.lower() for s in out} if "lower" in ops else set()
        new |= {s.upper() for s in out} if "upper" in ops else set()
        if new <= out:
            break
        out |= new
    return out


@dataclass
class TextChoice:
    """A text that differs by case: a tool's cases return different messages, and the
    call's value is the one whose guard holds (guards exclusive, in case order). Each
    choice is a :class:`TextVal` or a plain string term."""

    choices: list[tuple[Term, Any]]


def text_choice(c: Term, a: Any, b: Any) -> TextChoice:
    """The text ``a if c else b`` (either may itself be a choice)."""

    def under(g: Term, v: Any) -> list[tuple[Term, Any]]:
        if isinstance(v, TextChoice):
            return [(and_(g, h), x) for h, x in v.choices]
        return [(g, v)]

    return TextChoice(under(c, a) + under(not_(c), b))


def index_of(uni: Any, v: Any, where: str) -> Term:
    """The string index of value ``v`` (an index term, or a TextVal that has one)."""
    if isinstance(v, TextChoice):
        *rest, (_, last) = v.choices
        out = index_of(uni, last, where)
        for g, x in reversed(rest):
            out = ite(g, index_of(uni, x, where), out)
        return out
    if isinstance(v, TextVal):
        if v.index is None:
            raise EncodeError(
                f"{where}: a computed string is used as a value (compared or stored); "
                "only its shown parts are encoded"
            )
        return v.index
    return v


def _decode(uni: Any, t: Term, ty: Ty) -> Any:
    return uni.decode_value(ty, t)


def evaluate(uni: Any, op: str, args: Sequence[tuple[Any, Ty]], where: str) -> Any:
    """The encoding of string operation ``op`` on evaluated ``args`` (value, type)."""
    if op in TEXT_OPS - {"lower", "upper"}:
        parts: list[tuple[Term, Ty]] = []
        for v, t in args:  # nested texts are spliced in, as graphgen.strings.message_parts
            parts.extend(v.parts if isinstance(v, TextVal) else [(v, t)])
        index: Term | None = None
        if all(_is_const(v, t) for v, t in parts):
            try:
                text = apply(op, [_decode(uni, v, t) for v, t in parts], [t for _, t in parts])
            except EncodeError:
                # A constant that is no value of its type (a date past the calendar on a
                # path whose checks fail): no known string, its parts are still shown.
                text = None
            i = None if text is None else uni.str_index.get(text)
            index = None if i is None else uni.index_term(i)
        return TextVal(parts, index)
    terms = [index_of(uni, v, where) for v, _ in args]
    for _, ty in args:
        if ty != STR:
            raise EncodeError(f"{where}: a string operation on a {ty.show()} is not encoded")
    views = [_view(uni, t) for t in terms]
    rows = _table(uni, op, views, where)
    bases = [base for base, _ in views]
    if op in ("lower", "upper"):
        out: Term = int_val(-1)
        for (i,), text in reversed(rows):
            j = uni.str_index.get(text)
            if j is None:
                raise EncodeError(f"{where}: {op} of a string gives one outside the table")
            out = ite(eq(bases[0], uni.index_term(i)), uni.index_term(j), out)
        # remembered, so that an operation on the result tabulates over the base's
        # strings (contains(lower(q), lower(t)) is one table over q and t, not an
        # if-then-else compared with every string)
        base, fns = views[0]
        _remember(uni, out, base, (*fns, op))
        return out
    if op == "len":
        out = int_val(0)
        for (i,), n in reversed(rows):
            out = ite(eq(bases[0], uni.index_term(i)), int_val(n), out)
        return out
    return _holds(uni, bases, [combo for combo, b in rows if b])


def equal(uni: Any, x: Term, y: Term, where: str) -> Term | None:
    """``x == y`` for two string terms of which one at least is a case mapping of
    another (see :func:`evaluate`), tabulated over the strings beneath; None when neither
    is, and the caller compares the terms themselves."""
    vx, vy = _view(uni, x), _view(uni, y)
    if not vx[1] and not vy[1]:
        return None
    rows = _table(uni, "==", [vx, vy], where)
    return _holds(uni, [vx[0], vy[0]], [combo for combo, b in rows if b])


def _holds(uni: Any, bases: Sequence[Term], combos: Sequence[tuple[int, ...]]) -> Term:
    """Some combination of ``combos`` is the bases' indexes: a disjunction grouped by
    the first argument, so each of its tests is written once."""
    if not combos:
        return LIT.FALSE
    if len(bases) == 1:
        return or_(*(eq(bases[0], uni.index_term(i)) for (i,) in combos))
    groups: dict[int, list[tuple[int, ...]]] = {}
    for combo in combos:
        groups.setdefault(combo[0], []).append(combo[1:])
    return or_(
        *(
            and_(eq(bases[0], uni.index_term(i)), _holds(uni, bases[1:], rest))
            for i, rest in groups.items()
        )
    )


def _view(uni: Any, t: Term) -> tuple[Term, tuple[str, ...]]:
    """``t`` as (base index term, case mappings applied to it in order)."""
    hit = uni.str_mapped.get(t.ast.value)
    if hit is not None:
        return hit[1], hit[2]
    return t, ()


def _remember(uni: Any, t: Term, base: Term, fns: tuple[str, ...]) -> None:
    if int_const(t) is None:
        # the term is kept with its entry: a pointer is not reused while it lives
        uni.str_mapped[t.ast.value] = (t, base, fns)


def _table(
    uni: Any, op: str, views: Sequence[tuple[Term, tuple[str, ...]]], where: str
) -> list[tuple[tuple[int, ...], Any]]:
    """The value of ``op`` on every combination of strings the arguments can be: each
    argument is a base index (a constant, or any string of the table) seen through its
    case mappings. Computed in Python with the interpreter's own functions, once per
    universe and shape (the same table serves every row and every step)."""
    consts = [int_const(base) for base, _ in views]
    key = (op, tuple((fns, c) for (_, fns), c in zip(views, consts, strict=True)))
    hit = uni.str_tables.get(key)
    if hit is not None:
        return hit  # type: ignore[no-any-return]
    n = len(uni.strings)
    cands = [([c] if 0 <= c < n else []) if c is not None else range(n) for c in consts]
    size = 1
    for c in cands:
        size *= len(c)
    if size > MAX_TABLE:
        raise EncodeError(f"{where}: string operation {op} over too many strings ({size})")
    texts = [
        [_through(uni.strings[i], fns) for i in c] for c, (_, fns) in zip(cands, views, strict=True)
    ]
    combos: list[tuple[tuple[int, ...], list[str]]] = [((), [])]
    for c, ts in zip(cands, texts, strict=True):
        combos = [((*acc, i), [*vs, t]) for acc, vs in combos for i, t in zip(c, ts, strict=True)]
    if op == "==":
        rows = [(combo, vs[0] == vs[1]) for combo, vs in combos]
    else:
        rows = [(combo, apply(op, vs, [STR] * len(vs))) for combo, vs in combos]
    if op not in ("lower", "upper", "len"):
        rows = [(combo, b) for combo, b in rows if b]  # a test: its true rows say it all
    uni.str_tables[key] = rows
    return rows


def _through(s: str, fns: tuple[str, ...]) -> str:
    for f in fns:
        s = apply(f, [s], [STR])
    return s


def _is_const(v: Term, ty: Ty) -> bool:
    from graphgen.types import BOOL
    from graphgen.verify.terms import is_f, is_t

    if ty == BOOL:
        return bool(is_t(v) or is_f(v))
    return int_const(v) is not None
