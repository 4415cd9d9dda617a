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
from collections.abc import Collection, Sequence
from typing import Any

from graphgen import ir
from graphgen.domain import Domain
from graphgen.interp import evaluate
from graphgen.knowledge import Cell, Sort, listed_keys, visible_fields
from graphgen.parse import Elaborator
from graphgen.state import State
from graphgen.tasks.identity import principal_entity
from graphgen.tasks.model import Call, Target
from graphgen.types import BOOL, DATE, INT, STR, EnumT, ListT, RefT, RowT, strip_opt

MAX_ATOMS = 3
# Rows a uniqueness check reads one by one rather than build another index to narrow them.
FEW_ROWS = 64
# Most candidates an agent is expected to read one by one to recognise a described
# target; a longer list needs a search that narrows it.
MAX_CANDIDATES = 6


def humanize(name: str) -> str:
    """``placed_on`` → ``placed on``; ``PaymentMethod`` → ``payment method``."""
    spaced = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", name).replace("_", " ")
    return spaced if name.islower() else spaced.lower()


def matching_keys(domain: Domain, state: State, entity: str, description: str) -> list[str]:
    """Keys of ``entity`` rows for which ``description`` (over variable ``x``) holds, in
    key order: the comprehension ``[x for x in entity if description]``, so a first atom
    ``x.f == v`` reads the rows through the state's index."""
    cond = Elaborator(domain.entities).condition(description, {"x": RowT(entity)})
    ref = RefT(entity)
    keys: list[str] = evaluate(
        ir.Comp("x", entity, cond, ir.Var("x", ref), ListT(ref)), state, {}, domain
    )
    return keys


def _atom_src(field: str, value: Any) -> str:
    return f"x.{field} == {value!r}"


def words(domain: Domain, where: str, value: Any) -> str:
    """How a user says an enum member or a flag of ``where`` (``Entity.field`` or
    ``tool.param``): the domain's ``phrases`` words, else the member with spaces
    (``gift_card`` -> ``gift card``). Other values are said as they are."""
    ph = domain.phrases.get(where)
    key = str(value).lower() if isinstance(value, bool) else str(value)
    if ph is not None and key in ph.words:
        return ph.words[key]
    if isinstance(value, bool):
        return "yes" if value else "no"
    return str(value).replace("_", " ") if _is_enum(domain, where) else str(value)


def _is_enum(domain: Domain, where: str) -> bool:
    owner, _, member = where.partition(".")
    if owner in domain.entities:
        fd = domain.entities[owner].fields.get(member)
        return fd is not None and isinstance(strip_opt(fd.ty), EnumT)
    tool = domain.tools.get(owner)
    p = tool.params.get(member) if tool is not None else None
    return p is not None and isinstance(strip_opt(p.ty), EnumT)


def field_name(domain: Domain, entity: str, field: str) -> str:
    """What a field is called in a question: the domain's ``name`` phrase ("available
    credit"), else the field's name with spaces."""
    ph = domain.phrases.get(f"{entity}.{field}")
    return ph.name if ph is not None and ph.name else humanize(field)


def relation_name(domain: Domain, entity: str, field: str) -> str:
    """What the row a reference field points to is called from ``entity``'s side: the
    domain's ``relation`` phrase ("departure airport" for ``Flight.origin``), else the
    field's name ("product" for ``product_id``)."""
    ph = domain.phrases.get(f"{entity}.{field}")
    if ph is not None and ph.relation:
        return ph.relation
    base = field[:-3] if field.endswith("_id") else field
    return humanize(base)


# Where an atom's words go: the owner ("my ..."), the noun itself ("my credit card"),
# before the noun ("my pending order") or after it ("... placed on 2026-03-02").
# A display field whose form is the bare value is a name ("flight GG4370").
_OWNER, _NOUN, _BEFORE, _AFTER, _NAME = "owner", "noun", "before", "after", "name"


def _phrase_atom(
    domain: Domain,
    entity: str,
    field: str,
    value: Any,
    principal: tuple[str, str] | None,
    state: State | None = None,
) -> tuple[str, str] | None:
    """How one ``x.field == value`` atom reads, and where (``_OWNER`` .. ``_AFTER``)."""
    edef = domain.entities[entity]
    fd = edef.fields[field]
    ph = domain.phrases.get(f"{entity}.{field}")
    place = _BEFORE if ph is not None and ph.before else _AFTER
    if ph is not None and ph.form == "{value}" and field == edef.display and fd.unique:
        place = _NAME

    def form(said: str, default: str) -> tuple[str, str]:
        if ph is not None and ph.form:
            text = ph.form
            if isinstance(value, int) and not isinstance(value, bool):
                # "with {value} checked {value:bag}": the noun agrees with the number
                text = re.sub(r"\{value:([^}]+)\}", lambda m: plural(m.group(1), value), text)
            return (text.replace("{value}", said), place)
        return (default, place)

    if isinstance(fd.ty, RefT):
        if principal is not None and (fd.ty.entity, value) == principal:
            return ("", _OWNER)  # rendered as "my": the user is speaking
        # Another row, named by its own unique display field and by the relation this
        # field is ("with departure airport JFK", never just "with airport JFK": a flight
        # has two airports); otherwise an internal id the user cannot say.
        target = domain.entities[fd.ty.entity]
        shown = target.fields.get(target.display or "")
        row = state.tables[fd.ty.entity].get(value) if state is not None else None
        if shown is not None and shown.unique and row is not None:
            said = str(row[shown.name])
            return form(said, f"with {relation_name(domain, entity, field)} {said}")
        return None
    if fd.ty == BOOL:
        if ph is not None and str(value).lower() in ph.words:
            return (ph.words[str(value).lower()], place)
        return (f"that is {'' if value else 'not '}{humanize(field)}", _AFTER)
    if isinstance(fd.ty, EnumT):
        said = words(domain, f"{entity}.{field}", value)
        if ph is not None and ph.noun:
            return (said, _NOUN)
        return form(said, f"with {humanize(field)} {said}")
    if fd.ty == DATE:
        return form(str(value), f"{humanize(field)} {value}")
    if fd.ty in (INT, STR):
        return form(str(value), f"with {humanize(field)} {value}")
    return None


def plural(noun: str, n: int) -> str:
    """``noun`` for ``n`` things: "bag"/"bags"; ``person/people`` gives both forms."""
    one, _, many = noun.partition("/")
    if n == 1:
        return one
    if many:
        return many
    if one.endswith(("s", "x", "ch", "sh")):
        return one + "es"
    if one.endswith("y") and one[-2:-1] not in "aeiou":
        return one[:-1] + "ies"
    return one + "s"


def phrase_of(label: str, atoms: list[tuple[str, str]]) -> str:
    """The noun phrase for atoms (words, place): "my gift card with $446 on it"; a row
    named by its display value alone reads like a name ("flight GG4370")."""
    name = next((w for w, p in atoms if p == _NAME), None)
    if name is not None:  # "flight GG7876 to MCI on 2026-05-15": a name takes no article
        return " ".join([f"{label} {name}", *(w for w, p in atoms if p != _NAME)])
    owned = any(p == _OWNER for _, p in atoms)
    noun = next((w for w, p in atoms if p == _NOUN), label)
    before = [w for w, p in atoms if p == _BEFORE]
    after = [w for w, p in atoms if p == _AFTER]
    phrase = ("my " if owned else "the ") + " ".join([*before, noun])
    if len(after) > 1:
        return f"{phrase} {', '.join(after[:-1])} and {after[-1]}"
    return phrase + (" " + after[0] if after else "")


def given_phrase(domain: Domain, entity: str, values: list[tuple[str, Any]]) -> str:
    """A noun phrase for given values of one entity that no target says: "the item in
    lavender and in size XL", "the product Standing Desk"."""
    said = [_phrase_atom(domain, entity, f, v, None) for f, v in values]
    return phrase_of(humanize(entity), [p for p in said if p is not None and p[1] != _OWNER])


def describe(
    domain: Domain,
    state: State,
    entity: str,
    key: str,
    rng: random.Random,
    principal: tuple[str, str] | None = None,
    avoid: Collection[str] = (),
) -> Target | None:
    """A :class:`Target` naming ``entity`` row ``key`` uniquely, or None if none is found.

    ``principal`` is the (entity, key) of the user the instruction speaks for; a row that
    belongs to it is phrased "my ...". The words of each atom come from the domain's
    ``phrases`` (enum members as words, relation names, forms such as "placed on ...").
    No optional atom is made on a field in ``avoid`` (a refusal's blocking field: "cancel
    my delivered order" would state its own reason); the owner and the noun are said
    anyway.
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
    atoms: list[tuple[str, str, tuple[str, str]]] = []  # (field, src, (words, place))
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
    # A noun field ("my credit card") is said anyway, so it is part of every description.
    owner = [a for a in atoms if a[2][1] == _OWNER][:1]
    owner += [a for a in atoms if a[2][1] == _NOUN][:1]
    atoms = [a for a in atoms if a[2][1] not in (_OWNER, _NOUN) and a[0] not in avoid]
    rng.shuffle(atoms)
    atoms.sort(key=lambda a: a[0] != edef.display)
    # So is a reference the domain marks a noun: what the row is of ("the Picnic Basket
    # item in white", never "the item in white", which reads as an item said before).
    # Taken out after the shuffle, so the random draws stay the same.
    owner += [a for a in atoms if _noun_reference(domain, entity, a[0])]
    atoms = [a for a in atoms if a not in owner]
    for size in range(0 if owner else 1, MAX_ATOMS + 1):
        for rest in itertools.combinations(atoms, size):
            combo = (*owner, *rest)
            if _shared(state, entity, key, [f for f, _, _ in combo]):
                continue
            return Target(
                entity=entity,
                key=key,
                phrase=phrase_of(label, [ph for _, _, ph in combo]),
                description=" and ".join(src for _, src, _ in combo),
            )
    return None


def _noun_reference(domain: Domain, entity: str, field: str) -> bool:
    ph = domain.phrases.get(f"{entity}.{field}")
    return ph is not None and ph.noun and isinstance(domain.entities[entity].fields[field].ty, RefT)


def _shared(state: State, entity: str, key: Any, fields: list[str]) -> bool:
    """Does another row of ``entity`` hold every value ``key``'s row holds in ``fields``?
    Only the rows holding the rarest of them (through the state's index) are read.

    The fields whose index is built already are looked up first, and once the rows
    found are few, no other index is built: on a large table, building one costs a pass
    over every row, reading a few rows costs next to nothing."""
    table = state.tables[entity]
    row = table[key]
    holders: Sequence[Any] | None = None
    for f in sorted(fields, key=lambda f: not state.indexed(entity, f)):
        try:
            hits = state.keys_where(entity, f, row[f])
        except (TypeError, KeyError):  # a list value, or rows without the field
            continue
        if holders is None or len(hits) < len(holders):
            holders = hits
        if len(holders) <= FEW_ROWS:
            break
    if holders is None:
        holders = list(table)
    return any(k != key and all(table[k].get(f) == row[f] for f in fields) for k in holders)


_ATOM = re.compile(r"^x\.(\w+) == (.+)$")


def absorb_givens(
    domain: Domain,
    state: State,
    target: Target,
    given: list[tuple[str, str, Any]],
    principal: tuple[str, str] | None = None,
) -> tuple[Target, set[int]]:
    """``target`` retold with the given values that are true of it, and which givens
    (indexes into ``given``: (entity, field, value)) it now states.

    An instruction that must state "Standing Desk" and "XXL" says them about the row
    they describe ("the Standing Desk item in size XXL priced at $727"), not in a list
    of loose facts. A value of the target's own field joins as an atom on that field; a
    display value of a row the target refers to joins as an atom on the reference field.
    The description gains the same atoms, so it stays true and stays unique.
    """
    atoms = [_ATOM.match(a) for a in target.description.split(" and ")]
    if not atoms or any(m is None for m in atoms) or domain.entities[target.entity].key_givable:
        return target, set()
    fields = [m.group(1) for m in atoms if m is not None]
    edef = domain.entities[target.entity]
    row = state.tables[target.entity][target.key]
    used: set[int] = set()
    for i, (ent, fld, value) in enumerate(given):
        if ent == target.entity and fld in edef.fields and row.get(fld) == value:
            add = fld
        else:
            add = next(
                (
                    f
                    for f, fd in edef.fields.items()
                    if isinstance(fd.ty, RefT)
                    and fd.ty.entity == ent
                    and domain.entities[ent].display == fld
                    and state.tables[ent].get(row[f], {}).get(fld) == value
                ),
                "",
            )
        if not add:
            continue
        if add not in fields:
            if len(fields) >= MAX_ATOMS + 2:
                continue
            if _phrase_atom(domain, target.entity, add, row[add], principal, state) is None:
                continue
            fields.append(add)
        used.add(i)
    if not used:
        return target, set()
    said = [_phrase_atom(domain, target.entity, f, row[f], principal, state) for f in fields]
    if any(p is None for p in said):
        return target, set()
    return (
        Target(
            entity=target.entity,
            key=target.key,
            phrase=phrase_of(humanize(target.entity), [p for p in said if p is not None]),
            description=" and ".join(_atom_src(f, row[f]) for f in fields),
        ),
        used,
    )


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
