"""Referring expressions: name an entity so that exactly one row fits.

Users do not know internal ids. An instruction names a target by a few of its field
values ("your order placed on 2026-03-02 with status pending"). We search small sets of
``x.field == value`` atoms, cheapest first, until only the target matches on the
initial state. The chosen atoms are kept as an IR source text (``description``) so the
uniqueness can be re-checked independently (``verify`` proves it; the gate counts rows).
"""

from __future__ import annotations

import itertools
import random
import re
from collections.abc import Sequence
from typing import Any

from graphgen.domain import Domain
from graphgen.interp import evaluate
from graphgen.knowledge import Cell, Sort, listed_keys, visible_fields
from graphgen.parse import Elaborator
from graphgen.state import State
from graphgen.tasks.model import Call, Target
from graphgen.types import BOOL, DATE, INT, STR, EnumT, ListT, RefT, RowT

MAX_ATOMS = 3
# Most candidates an agent is expected to read one by one to recognise a described
# target; a longer list needs a search that narrows it.
MAX_CANDIDATES = 6


def principal_entity(domain: Domain) -> str | None:
    """The entity a user *is*: the one with a unique givable field most others reference."""
    best: tuple[int, str] | None = None
    for e in domain.entities.values():
        if not any(f.givable and f.unique for f in e.fields.values()):
            continue
        refs = sum(
            1
            for o in domain.entities.values()
            for f in o.fields.values()
            if domain.entity_of_ref(f.ty) == e.name
        )
        if best is None or refs > best[0]:
            best = (refs, e.name)
    return best[1] if best else None


def humanize(name: str) -> str:
    """``placed_on`` → ``placed on``; ``PaymentMethod`` → ``payment method``."""
    spaced = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", name).replace("_", " ")
    return spaced if name.islower() else spaced.lower()


def matching_keys(domain: Domain, state: State, entity: str, description: str) -> list[str]:
    """Keys of ``entity`` rows for which ``description`` (over variable ``x``) holds."""
    cond = Elaborator(domain.entities).condition(description, {"x": RowT(entity)})
    return [k for k in sorted(state.tables[entity]) if evaluate(cond, state, {"x": k}, domain)]


def _atom_src(field: str, value: Any) -> str:
    return f"x.{field} == {value!r}"


def _phrase_atom(
    domain: Domain,
    entity: str,
    field: str,
    value: Any,
    principal: tuple[str, str] | None,
    state: State | None = None,
) -> str | None:
    fd = domain.entities[entity].fields[field]
    if isinstance(fd.ty, RefT):
        if principal is not None and (fd.ty.entity, value) == principal:
            return ""  # rendered as "my": the user is speaking
        # Another row, named by its own unique display field ("with flight GG123");
        # otherwise an internal id the user cannot say.
        target = domain.entities[fd.ty.entity]
        shown = target.fields.get(target.display or "")
        row = state.tables[fd.ty.entity].get(value) if state is not None else None
        if shown is not None and shown.unique and row is not None:
            return f"with {humanize(fd.ty.entity)} {row[shown.name]}"
        return None
    if fd.ty == BOOL:
        return f"that is {'' if value else 'not '}{humanize(field)}"
    if fd.ty == DATE:
        return f"{humanize(field)} {value}"
    if isinstance(fd.ty, EnumT):
        return f"with {humanize(field)} {value}"
    if fd.ty in (INT, STR):
        return f"with {humanize(field)} {value}"
    return None


def describe(
    domain: Domain,
    state: State,
    entity: str,
    key: str,
    rng: random.Random,
    principal: tuple[str, str] | None = None,
) -> Target | None:
    """A :class:`Target` naming ``entity`` row ``key`` uniquely, or None if none is found.

    ``principal`` is the (entity, key) of the user the instruction speaks for; a row that
    belongs to it is phrased "my ...".
    """
    edef = domain.entities[entity]
    label = humanize(entity)
    if edef.key_givable:
        return Target(
            entity=entity, key=key, phrase=f"{label} {key}", description=f"x.{edef.key} == {key!r}"
        )
    row = state.tables[entity][key]
    # Only what some tool can show about this row: a description by a field no output
    # reveals ("the item with price 10" with no tool showing prices) cannot be checked.
    visible = visible_fields(domain)
    atoms: list[tuple[str, str, str]] = []  # (field, src, phrase)
    for fname, fd in edef.fields.items():
        if isinstance(fd.ty, ListT) or fname not in visible[entity]:
            continue
        if isinstance(fd.ty, RefT) and not _ref_visible(domain, visible, fd.ty.entity):
            continue
        ph = _phrase_atom(domain, entity, fname, row[fname], principal, state)
        if ph is None:
            continue
        atoms.append((fname, _atom_src(fname, row[fname]), ph))
    # A row the user owns is always "my ...": the owner atom is free and natural, so the
    # search only adds atoms that tell it apart from the user's other rows.
    owner = [a for a in atoms if a[2] == ""][:1]
    atoms = [a for a in atoms if a[2] != ""]
    rng.shuffle(atoms)
    atoms.sort(key=lambda a: a[0] != edef.display)
    others = {k: r for k, r in state.tables[entity].items() if k != key}
    for size in range(0 if owner else 1, MAX_ATOMS + 1):
        for rest in itertools.combinations(atoms, size):
            combo = (*owner, *rest)
            if any(all(r.get(f) == row[f] for f, _, _ in combo) for r in others.values()):
                continue
            owned = any(ph == "" for _, _, ph in combo)
            words = [ph for _, _, ph in combo if ph]
            phrase = ("my " if owned else "the ") + label
            if words:
                phrase += " " + " and ".join(words)
            return Target(
                entity=entity,
                key=key,
                phrase=phrase,
                description=" and ".join(src for _, src, _ in combo),
            )
    return None


def _ref_visible(domain: Domain, visible: dict[str, set[str]], entity: str) -> bool:
    """Can a reference to ``entity`` be phrased checkably: "my ..." for the principal, else
    by the other row's display field, which some output must show."""
    shown = domain.entities[entity].display
    return entity == principal_entity(domain) or (shown is not None and shown in visible[entity])


def described_fields(domain: Domain, target: Target) -> list[str]:
    """The fields (not the key) a target's description pins, in order."""
    key = domain.entities[target.entity].key
    return [f for f in re.findall(r"x\.(\w+) ==", target.description) if f != key]


def candidates_of(
    domain: Domain,
    chain: Sequence[Call],
    results: Sequence[Any],
    origin: int | None,
    key: Any,
    entity: str,
) -> list[Any]:
    """The ids the agent must tell the target ``key`` apart from: every id of ``entity``
    the call that first revealed ``key`` (index ``origin``) listed, in list order, the
    target among them. A given key, or one no call revealed, has no rivals."""
    if origin is None or origin < 0 or origin >= len(chain):
        return [key]
    found = listed_keys(domain, domain.tools[chain[origin].tool], results[origin], entity)
    return found if key in found else [key]


def unseen_cells(
    domain: Domain, state: State, target: Target, candidates: Sequence[Any], shown: set[Cell]
) -> list[Cell]:
    """The cells an agent must see to recognise ``target`` among ``candidates`` but that
    no call in ``shown`` showed, in candidate order.

    Every candidate's described fields must be seen (a careful agent reads each listed
    order until it has seen which one was placed on the stated day; one that reads them
    all is modelled, which is never less work). A field that refers to another row
    ("with flight GG123") also needs that row's display value, for the target, unless
    the row is the user speaking ("my order").
    """
    fields = described_fields(domain, target)
    edef = domain.entities[target.entity]
    principal = principal_entity(domain)
    out: list[Cell] = []
    for c in candidates:
        out.extend((target.entity, c, f) for f in fields if (target.entity, c, f) not in shown)
    row = state.tables[target.entity].get(target.key)
    for f in fields:
        fd = edef.fields.get(f)
        if row is None or fd is None or not isinstance(fd.ty, RefT) or fd.ty.entity == principal:
            continue
        shows = domain.entities[fd.ty.entity].display
        if shows is not None and (fd.ty.entity, row[f], shows) not in shown:
            out.append((fd.ty.entity, row[f], shows))
    return out


def stated_facts(domain: Domain, state: State, target: Target) -> list[tuple[Sort, Any]]:
    """The values a target's phrase states that the agent may use as givens.

    An instruction that says "the item with color amber" has told the agent the value
    ``amber`` of ``Item.color``; if that field is givable it is as good as a given, and
    the knowledge model (and so the proven minimum) must count it. A phrase that says an
    enum field's value ("my order with status pending") states that enum member, so the
    agent may filter by it (``enum:OrderStatus``).
    """
    edef = domain.entities[target.entity]
    row = state.tables[target.entity][target.key]
    out: list[tuple[Sort, Any]] = []
    for f in re.findall(r"x\.(\w+) ==", target.description):
        if f == edef.key:
            if edef.key_givable:
                out.append((Sort("key", target.entity), target.key))
            continue
        fd = edef.fields.get(f)
        if fd is None:
            continue
        if fd.givable:
            out.append((Sort("field", f"{target.entity}.{f}"), row[f]))
        if isinstance(fd.ty, EnumT):
            out.append((Sort("enum", fd.ty.name), row[f]))
        if isinstance(fd.ty, RefT):  # "with flight GG123": the other row's display value
            other = domain.entities[fd.ty.entity]
            shown = other.fields.get(other.display or "")
            orow = state.tables[fd.ty.entity].get(row[f])
            if shown is not None and shown.givable and orow is not None:
                out.append((Sort("field", f"{fd.ty.entity}.{shown.name}"), orow[shown.name]))
    return out
