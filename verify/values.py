"""Symbolic values of computed expressions: lists, rows and dict literals over terms.

A scalar value is a term (:mod:`graphgen.verify.terms`); a computed list is a *guarded
sequence* ``[(present, item), ...]`` in list order; a whole row carries its key and its
fields' values; a dict literal its fields' values.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from graphgen.domain import Domain
from graphgen.types import ListT, MapT, RecordT, RefT, Ty
from graphgen.verify.terms import (
    LIT,
    EncodeError,
    Term,
    and_,
    count,
    eq,
    implies,
    is_f,
    is_t,
    ite,
    not_,
)


@dataclass
class ListVal:
    """A computed list: ``items`` in list order, each present when its guard holds."""

    items: list[tuple[Term, Any]]


@dataclass
class RowVal:
    """A whole row (``Entity[id]``): its key and its field values at evaluation time."""

    entity: str
    key: Term
    fields: dict[str, Any]


@dataclass
class RecVal:
    """A dict literal's value."""

    fields: dict[str, Any]


@dataclass
class MapVal:
    """A dict comprehension's value: per row in key order, whether it is kept, its id (a
    key term of ``entity``) and its value."""

    entity: str
    items: list[tuple[Term, Term, Any]]


SymVal = Any  # a scalar Term, ListVal, RowVal, RecVal or MapVal


def _scalar(v: SymVal) -> SymVal:
    """A computed text as its string index (see graphgen.verify.strings)."""
    from graphgen.verify.strings import TextChoice, TextVal, index_of

    return index_of(None, v, "a comparison") if isinstance(v, TextVal | TextChoice) else v


def _is_text(v: SymVal) -> bool:
    from graphgen.verify.strings import TextChoice, TextVal

    return isinstance(v, TextVal | TextChoice)


def sym_eq(a: SymVal, b: SymVal) -> Term:
    """Python ``a == b`` for encoded values (lists compare in order, as Python does)."""
    a, b = _scalar(a), _scalar(b)
    if isinstance(a, ListVal) and isinstance(b, ListVal):
        return _seq_eq(a, b)
    if isinstance(a, ListVal | RowVal | RecVal | MapVal) or isinstance(
        b, ListVal | RowVal | RecVal | MapVal
    ):
        raise EncodeError("only scalars and lists can be compared")
    return eq(a, b)


def _seq_eq(a: ListVal, b: ListVal) -> Term:
    if all(is_t(p) for p, _ in a.items) and all(is_t(p) for p, _ in b.items):
        if len(a.items) != len(b.items):
            return LIT.FALSE
        return and_(*(sym_eq(x, y) for (_, x), (_, y) in zip(a.items, b.items, strict=True)))
    # Guarded sequences: the i-th present item of a must equal the i-th present of b.
    pos_a = [count([p for p, _ in a.items[:i]]) for i in range(len(a.items))]
    pos_b = [count([p for p, _ in b.items[:j]]) for j in range(len(b.items))]
    parts = [eq(count([p for p, _ in a.items]), count([p for p, _ in b.items]))]
    for i, (pa, xa) in enumerate(a.items):
        for j, (pb, xb) in enumerate(b.items):
            same_pos = eq(pos_a[i], pos_b[j])
            if is_f(same_pos):
                continue
            parts.append(implies(and_(pa, pb, same_pos), sym_eq(xa, xb)))
    return and_(*parts)


def merge(c: Term, a: SymVal, b: SymVal) -> SymVal:
    """The value of ``a if c else b``."""
    if is_t(c):
        return a
    if is_f(c):
        return b
    if isinstance(a, ListVal) and isinstance(b, ListVal):
        return ListVal(
            [(and_(c, p), x) for p, x in a.items] + [(and_(not_(c), p), x) for p, x in b.items]
        )
    if isinstance(a, RowVal) and isinstance(b, RowVal):
        return RowVal(
            a.entity,
            ite(c, a.key, b.key),
            {f: merge(c, a.fields[f], b.fields[f]) for f in a.fields},
        )
    if isinstance(a, RecVal) and isinstance(b, RecVal):
        return RecVal({f: merge(c, a.fields[f], b.fields[f]) for f in a.fields})
    if isinstance(a, MapVal) and isinstance(b, MapVal):
        return MapVal(
            a.entity,
            [(and_(c, p), k, x) for p, k, x in a.items]
            + [(and_(not_(c), p), k, x) for p, k, x in b.items],
        )
    if _is_text(a) or _is_text(b):
        # Cases returning different messages: keep each message's shown parts (an index
        # is made only where the text is compared or stored).
        from graphgen.verify.strings import text_choice

        return text_choice(c, a, b)
    return ite(c, _scalar(a), _scalar(b))


def leaves(
    domain: Domain, v: SymVal, ty: Ty, guard: Term | None = None
) -> list[tuple[Term, Ty, Term]]:
    """Every scalar shown in an output, with its type and the guard under which it is
    (``guard``: under which ``v`` is, default always)."""
    guard = LIT.TRUE if guard is None else guard
    out: list[tuple[Term, Ty, Term]] = []
    if isinstance(v, ListVal):
        assert isinstance(ty, ListT)
        for p, x in v.items:
            out.extend(leaves(domain, x, ty.elem, and_(guard, p)))
    elif isinstance(v, RowVal):
        out.append((guard, RefT(v.entity), v.key))
        edef = domain.entities[v.entity]
        for name, x in v.fields.items():
            out.extend(leaves(domain, x, edef.fields[name].ty, guard))
    elif isinstance(v, RecVal):
        assert isinstance(ty, RecordT)
        types = dict(ty.fields)
        for name, x in v.fields.items():
            out.extend(leaves(domain, x, types[name], guard))
    elif isinstance(v, MapVal):
        assert isinstance(ty, MapT)
        for p, k, x in v.items:
            out.append((and_(guard, p), ty.key, k))
            out.extend(leaves(domain, x, ty.value, and_(guard, p)))
    elif hasattr(v, "choices"):  # a text that differs by case: each under its guard
        for g, x in v.choices:
            out.extend(leaves(domain, x, ty, and_(guard, g)))
    elif hasattr(v, "parts"):  # a computed text shows each value written into it
        for part, part_ty in v.parts:
            out.extend(leaves(domain, part, part_ty, guard))
    else:
        out.append((guard, ty, v))
    return out
