"""Shortcut answers a fair task must not accept, and the values that expose them.

Two answers cost an agent nothing and prove nothing:

* **echo** — the instruction itself, with no call made;
* **hedge** — every enum member of the domain plus every scalar value the reference
  chain's reads show, in one text: whatever the right value is, it is in there.

:func:`echo_answer` and :func:`hedge_answer` build them (the gate grades a candidate's
goal against both, and scripted agents can reuse them). :func:`contradicting` lists the
values that make a hedge wrong: the other values an answer could have been.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import Any

from graphgen.domain import Domain
from graphgen.grading import mention_pattern, normalize_answer
from graphgen.knowledge import Sort
from graphgen.tasks.plan import Knowledge
from graphgen.types import EnumT, ListT


def echo_answer(instruction: str) -> str:
    """The answer of an agent that repeats the request and makes no call."""
    return instruction


def domain_enum_members(domain: Domain) -> list[str]:
    """Every member of every enum the domain declares or uses, in a stable order."""
    out: list[str] = []
    types: list[Any] = list(domain.enums.values())
    for e in domain.entities.values():
        types.extend(f.ty for f in e.fields.values())
    for t in domain.tools.values():
        types.extend(p.ty for p in t.params.values())
    for ty in types:
        while isinstance(ty, ListT):
            ty = ty.elem
        if isinstance(ty, EnumT):
            out.extend(v for v in ty.values if v not in out)
    return out


def scalars(value: Any) -> list[Any]:
    """The scalar values inside a read result (rows, records and lists taken apart)."""
    if isinstance(value, dict):
        return [x for v in value.values() for x in scalars(v)]
    if isinstance(value, list):
        return [x for v in value for x in scalars(v)]
    return [] if value is None else [value]


def hedge_answer(domain: Domain, results: Iterable[Any]) -> str:
    """One text naming every enum member and every scalar the reads showed."""
    words: list[str] = []
    for v in [*domain_enum_members(domain), *(x for r in results for x in scalars(r))]:
        w = ("yes" if v else "no") if isinstance(v, bool) else str(v)
        if w not in words:
            words.append(w)
    return ", ".join(words)


def _same(a: Any, b: Any) -> bool:
    """Would an answer saying ``a`` also say ``b`` (or the other way round)?"""
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    return bool(
        re.search(mention_pattern(a), normalize_answer(str(b)))
        or re.search(mention_pattern(b), normalize_answer(str(a)))
    )


def _kind(v: Any) -> str:
    """What sort of value ``v`` is to a reader: a number, a date, or other text."""
    if isinstance(v, int | float):
        return "number"
    return "date" if re.fullmatch(r"\d{4}-\d{2}-\d{2}", str(v)) else "text"


def _same_entity(
    domain: Domain,
    know: Knowledge,
    ent: str,
    v: Any,
    add: Callable[[Any], None],
    values_too: bool = True,
) -> None:
    """For a question about one field of ``ent``: what a hedge says of its other fields
    that is false or off the question. A status member no row shown has ("locked" when
    the account is active), and values of the same sort as ``v`` shown in other fields
    (asked for a city, the street is not the answer) except those the user stated;
    without ``values_too`` only the status members (a refusal's false reasons)."""
    for fname, fd in domain.entities[ent].fields.items():
        sort = Sort("field", f"{ent}.{fname}")
        if isinstance(fd.ty, EnumT):
            for m in fd.ty.values:
                if not know.knows(sort, m):
                    add(m)
            continue
        if not values_too:
            continue
        for x in know.values(sort):
            if know.origin(sort, x) != -1 and _kind(x) == _kind(v):
                add(x)


def contradicting(
    domain: Domain,
    know: Knowledge,
    values: list[Any],
    same_row: bool = False,
    shown: Iterable[Any] = (),
) -> list[Any]:
    """Values whose mention contradicts ``values`` as the answer.

    For each value shown at a field (``Flight.status``): the other members of that
    field's enum, and the other values of the same field the agent has seen (another
    flight's date, another card's balance), and the members of the entity's enum fields
    that no shown row has (a false status). With ``same_row`` (a question about one
    field), also the other values :func:`_same_entity` finds in the entity's fields. A value
    with no field (a computed count or total) gets the other values of its sort among
    ``shown`` (the chain's outputs), and if in some enum that enum's other members.
    Flags and anything an answer value itself says are left out.
    """
    out: list[Any] = []
    shown = list(shown)

    def add(x: Any) -> None:
        if isinstance(x, bool) or x is None or isinstance(x, dict | list):
            return
        if any(_same(x, v) for v in values) or any(repr(x) == repr(o) for o in out):
            return
        out.append(x)

    for v in values:
        if isinstance(v, bool):
            continue
        fields = [s for s, x in know.facts_items() if s.kind == "field" and repr(x) == repr(v)]
        for s in fields:
            ent, _, fname = s.name.partition(".")
            fd = domain.entities[ent].fields.get(fname) if ent in domain.entities else None
            if fd is not None and isinstance(fd.ty, EnumT):
                for m in fd.ty.values:
                    add(m)
            for x in know.values(s):
                if know.origin(s, x) != -1:  # a value the user stated is no hedge
                    add(x)
            if ent in domain.entities:
                # Any answer: "locked" when every account shown is active is false.
                _same_entity(domain, know, ent, v, add, values_too=same_row)
        if not fields:
            # A computed answer (a count, a total): the other values of its sort the
            # chain showed, except those the user stated.
            given = {repr(x) for s, x in know.facts_items() if know.origin(s, x) == -1}
            for x in shown:
                if repr(x) not in given and _kind(x) == _kind(v):
                    add(x)
        if not fields and isinstance(v, str):
            for ty in domain.enums.values():
                if v in ty.values:
                    for m in ty.values:
                        add(m)
    return out


__all__ = [
    "contradicting",
    "domain_enum_members",
    "echo_answer",
    "hedge_answer",
    "scalars",
]
