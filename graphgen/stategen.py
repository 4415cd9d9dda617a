"""Seeded generator of realistic initial states for a domain.

``generate_state(domain, seed)`` fills every table with ``EntityDef.size`` rows (or the
``sizes`` override) whose values respect the schema: enum members, int bounds, ISO dates,
``unique`` fields, and references that always name an existing row. Strings come from
the small vocabularies shipped in ``graphgen/vocab`` (names, cities, products, ...),
chosen by a field's ``vocab`` hint or, failing that, by its name.

Determinism: nothing here reads the clock, uuid or the global ``random``. Every column
draws from its own ``random.Random(f"{seed}:{entity}:{field}")`` stream (str seeds are
hashed with sha512, so they do not depend on ``PYTHONHASHSEED``), which also means that
adding a field to a domain does not reshuffle the values of the others.

States are shaped for task generation: references are spread so that most parent rows
have at least one child, every enum member (and both booleans) appears when the table
has room for it, display/givable strings are kept distinct where the vocabulary allows
(so an instruction can name a row unambiguously), and depletable quantities (stock,
balance, seats, ...) are sometimes exactly at their lower bound.

Business rules the schema cannot express come from each entity's ``generate:`` block
(:class:`graphgen.spec.GenerateSpec`). Once every table is drawn, ``derive`` fields are
computed (in dependency order, see :func:`derive_order`), then every ``require``
condition is checked on every row; a violating row has the fields the condition reads
re-drawn from their own seeded stream (``{seed}:{entity}:#require:{key}:{pass}:{try}``)
until it holds, at most :data:`REQUIRE_TRIES` times per pass. Rules are evaluated with
:func:`graphgen.interp.evaluate`; a table that a rule only visits through comprehensions
filtered on ``r.ref == x...`` (or ``r.key in x.list``) is cut down to the matching rows
first, so per-row aggregates stay linear in the table size.
"""

from __future__ import annotations

import datetime as _dt
import random
import re
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from typing import Any, TypeVar

from graphgen import ir
from graphgen.domain import Derive, Domain, EntityDef, FieldDef
from graphgen.errors import GraphgenError, ToolError
from graphgen.interp import evaluate
from graphgen.state import State
from graphgen.types import BOOL, DATE, INT, STR, EnumT, ListT, PrimT, RefT, Ty

__all__ = [
    "DATE_WINDOW",
    "KNOWN_VOCABS",
    "REQUIRE_TRIES",
    "StateGenError",
    "StateGenerator",
    "check_state",
    "derive_order",
    "generate_state",
    "load_vocab",
    "resolve_vocab",
    "rule_reads",
]

H = TypeVar("H", bound=Hashable)


class StateGenError(GraphgenError):
    """A state cannot be generated for this domain (e.g. a required ref has no target)."""


# Generated dates fall in one fixed year so that states never depend on "today".
DATE_WINDOW = (_dt.date(2026, 1, 1), _dt.date(2026, 12, 31))
_BIRTH_WINDOW = (_dt.date(1950, 1, 1), _dt.date(2005, 12, 31))

# How often a draw is repeated to dodge a clash before falling back to suffixing.
_RETRIES = 30

# ------------------------------------------------------------------ vocabularies

_VOCAB_NAME = re.compile(r"^[a-z][a-z0-9_]*$")


@cache
def load_vocab(name: str) -> tuple[str, ...]:
    """The items of ``graphgen/vocab/<name>.txt`` (blank lines and ``#`` lines skipped).

    Loaded through :mod:`importlib.resources` so it works from an installed wheel; cached.
    """
    if not _VOCAB_NAME.match(name):
        raise StateGenError(f"bad vocabulary name {name!r}")
    res = resources.files("graphgen").joinpath("vocab").joinpath(f"{name}.txt")
    if not res.is_file():
        raise StateGenError(f"no vocabulary file graphgen/vocab/{name}.txt")
    items = tuple(
        line.strip()
        for line in res.read_text(encoding="utf-8").splitlines()
        if line.strip() and not line.lstrip().startswith("#")
    )
    if not items:
        raise StateGenError(f"vocabulary file graphgen/vocab/{name}.txt is empty")
    return items


def _vocab_file_exists(name: str) -> bool:
    if not _VOCAB_NAME.match(name):
        return False
    return resources.files("graphgen").joinpath("vocab").joinpath(f"{name}.txt").is_file()


@cache
def _airports() -> tuple[tuple[str, str], ...]:
    """(code, city) pairs from airport_codes.txt, whose lines read ``SFO San Francisco``."""
    out = []
    for line in load_vocab("airport_codes"):
        code, _, city = line.partition(" ")
        out.append((code.strip(), city.strip()))
    return tuple(out)


@cache
def _airport_city() -> dict[str, str]:
    return dict(_airports())


# The vocab hints this module understands. Any other hint that names a shipped vocab
# file (e.g. ``email_domains``) draws from that file; anything else falls back on the
# field name and finally on single words.
KNOWN_VOCABS = frozenset({
    "person_name", "first_name", "last_name", "email", "username", "street", "address",
    "city", "zip", "product", "color", "size_label", "word", "phrase", "title",
    "airport_code", "flight_number", "time", "phone", "code", "seat",
})

_VOCAB_ALIASES = {
    "name": "person_name", "full_name": "person_name", "person": "person_name",
    "firstname": "first_name", "given_name": "first_name",
    "lastname": "last_name", "surname": "last_name", "family_name": "last_name",
    "email_address": "email", "user_name": "username", "handle": "username",
    "street_address": "street", "zipcode": "zip", "zip_code": "zip",
    "postal_code": "zip", "postcode": "zip", "cities": "city",
    "products": "product", "product_name": "product", "colors": "color", "colour": "color",
    "size": "size_label", "sizes": "size_label", "words": "word", "text": "phrase",
    "sentence": "phrase", "description": "phrase", "airport": "airport_code",
    "iata": "airport_code", "airport_codes": "airport_code", "flight": "flight_number",
    "flight_no": "flight_number", "hhmm": "time", "time_of_day": "time",
    "phone_number": "phone", "telephone": "phone", "sku": "code",
    "confirmation_code": "code", "streets": "street",
}

_PERSON_ENTITIES = frozenset({
    "user", "customer", "passenger", "person", "people", "employee", "member", "client",
    "guest", "patient", "student", "teacher", "driver", "owner", "contact", "staff",
    "agent", "traveler", "traveller", "author", "doctor", "tenant", "buyer", "seller",
    "pilot", "holder", "attendee", "applicant", "subscriber", "reviewer", "rider",
})
_PRODUCT_ENTITIES = frozenset({
    "product", "item", "article", "good", "goods", "merchandise", "listing", "variant",
})
_PERSON_TOKENS = frozenset({
    "owner", "holder", "customer", "passenger", "contact", "guest", "recipient",
    "person", "employee", "manager", "driver", "author", "assignee", "traveler",
})
_CODE_TOKENS = frozenset({
    "code", "sku", "reference", "ref", "confirmation", "pnr", "serial", "coupon",
    "promo", "token", "voucher", "barcode", "locator", "tracking",
})
_PHRASE_TOKENS = frozenset({
    "description", "note", "notes", "comment", "comments", "reason", "message",
    "summary", "bio", "details", "remarks", "memo",
})


def _tokens(name: str) -> list[str]:
    return [t for t in name.lower().split("_") if t]


def _words_in(name: str) -> list[str]:
    """Lowercase words of an identifier (snake_case or CamelCase)."""
    spaced = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name)
    return _tokens(spaced)


def _vocab_from_name(entity: str, fname: str) -> str:
    """Guess a vocab from a field name (and its entity, for a bare ``name``)."""
    toks = _tokens(fname)
    joined = "".join(toks)
    ent = set(_words_in(entity))
    if "email" in joined:
        return "email"
    if joined in ("firstname", "givenname", "forename"):
        return "first_name"
    if joined in ("lastname", "surname", "familyname"):
        return "last_name"
    if joined in ("username", "login", "handle", "screenname"):
        return "username"
    if {"phone", "mobile", "telephone", "tel", "fax"} & set(toks):
        return "phone"
    if {"zip", "zipcode", "postcode"} & set(toks) or joined in ("postalcode", "zipcode"):
        return "zip"
    if "street" in toks:
        return "street"
    if "address" in toks:
        return "address"
    if {"city", "town"} & set(toks):
        return "city"
    if {"color", "colour"} & set(toks):
        return "color"
    if "size" in toks:
        return "size_label"
    if "flight" in toks and ({"number", "no", "num", "code"} & set(toks) or toks == ["flight"]):
        return "flight_number"
    if {"origin", "destination", "dest", "airport", "iata"} & set(toks):
        return "airport_code"
    if "airport" in ent and toks in (["code"], ["iata"]):
        return "airport_code"
    if "seat" in toks:
        return "seat"
    if toks and toks[-1] == "time":
        return "time"
    if "product" in toks or ("item" in toks and "name" in toks):
        return "product"
    if toks in (["name"], ["full", "name"], ["display", "name"]):
        if ent & _PERSON_ENTITIES:
            return "person_name"
        if ent & _PRODUCT_ENTITIES:
            return "product"
        if ent & {"city", "town", "location", "destination"}:
            return "city"
        return "title"
    if (set(toks) & _PERSON_TOKENS and ("name" in toks or len(toks) == 1)) or joined in (
        "fullname", "customername", "passengername",
    ):
        return "person_name"
    if set(toks) & _CODE_TOKENS:
        return "code"
    if set(toks) & _PHRASE_TOKENS:
        return "phrase"
    if {"title", "label", "name"} & set(toks):
        return "title"
    return "word"


def resolve_vocab(entity: EntityDef | str, f: FieldDef) -> str:
    """The vocabulary a string field draws from: its hint, else a guess from its name.

    Returns a member of :data:`KNOWN_VOCABS` or the stem of a shipped vocab file.
    """
    ename = entity if isinstance(entity, str) else entity.name
    if f.vocab:
        hint = f.vocab.strip().lower()
        hint = _VOCAB_ALIASES.get(hint, hint)
        if hint in KNOWN_VOCABS or _vocab_file_exists(hint):
            return hint
    return _vocab_from_name(ename, f.name)


# ------------------------------------------------------------------ int / date heuristics

# (tokens, default range) for int fields without declared bounds; first match wins.
_INT_HINTS: tuple[tuple[frozenset[str], tuple[int, int]], ...] = (
    (frozenset({"price", "cost", "fare", "fee", "rent"}), (5, 800)),
    (frozenset({"balance", "credit", "budget", "salary", "limit", "wallet"}), (0, 5000)),
    (frozenset({"amount", "total", "payment", "refund", "deposit", "subtotal", "charge"}),
     (10, 1500)),
    (frozenset({"quantity", "qty", "stock", "inventory", "units", "count"}), (0, 50)),
    (frozenset({"seats", "seat", "capacity"}), (0, 180)),
    (frozenset({"age"}), (18, 85)),
    (frozenset({"year"}), (1970, 2026)),
    (frozenset({"rating", "stars"}), (1, 5)),
    (frozenset({"priority", "level", "tier", "rank"}), (1, 5)),
    (frozenset({"score"}), (0, 100)),
    (frozenset({"percent", "pct", "percentage"}), (0, 100)),
    (frozenset({"discount"}), (0, 50)),
    (frozenset({"points", "miles", "loyalty"}), (0, 50000)),
    (frozenset({"duration", "minutes", "mins"}), (30, 600)),
    (frozenset({"nights", "days"}), (1, 14)),
    (frozenset({"weight", "kg"}), (1, 50)),
    (frozenset({"floor"}), (1, 20)),
    (frozenset({"room"}), (100, 999)),
)
_DEFAULT_INT = (0, 1000)
# Fields where "none left" is a state worth having: sometimes exactly at the minimum.
_DEPLETABLE = frozenset({
    "stock", "quantity", "qty", "inventory", "balance", "seats", "available",
    "remaining", "credit", "points", "miles", "units", "capacity",
})


def _int_hint(f: FieldDef) -> tuple[int, int]:
    """A typical range guessed from the field's name, else from its description."""
    for words in (
        set(_tokens(f.name)) | set(_tokens(f.vocab or "")),
        set(re.findall(r"[a-z]+", f.description.lower())),
    ):
        for keys, rng in _INT_HINTS:
            if words & keys:
                return rng
    return _DEFAULT_INT


def _int_bounds(f: FieldDef) -> tuple[int, int]:
    """A realistic range inside the declared bounds (the declared ones win on conflict)."""
    hlo, hhi = _int_hint(f)
    lo = hlo if f.min is None else max(hlo, f.min)
    hi = hhi if f.max is None else min(hhi, f.max)
    if lo > hi:  # the guess misses the declared range entirely
        span = hhi - hlo
        lo = f.min if f.min is not None else hi - span if f.max is None else f.max - span
        hi = f.max if f.max is not None else lo + span
    return lo, hi


# End-of-interval word → start-of-interval word, to pair e.g. check_out with check_in.
_PAIR_WORDS = {
    "end": "start", "ends": "starts", "arrival": "departure", "arrive": "depart",
    "arrives": "departs", "out": "in", "checkout": "checkin", "to": "from",
    "until": "from", "close": "open", "closes": "opens", "closed": "opened",
    "finish": "begin", "updated": "created", "modified": "created", "return": "departure",
    "due": "issued", "dropoff": "pickup", "last": "first",
}


def _pair_start(edef: EntityDef, f: FieldDef) -> str | None:
    """The sibling field that ``f`` should not precede (same type), if any."""
    toks = _tokens(f.name)
    for i, t in enumerate(toks):
        start = _PAIR_WORDS.get(t)
        if start is None:
            continue
        cand = "_".join([*toks[:i], start, *toks[i + 1:]])
        other = edef.fields.get(cand)
        if other is not None and other.ty == f.ty and not other.unique:
            return cand
    return None


def _is_birth(f: FieldDef) -> bool:
    toks = set(_tokens(f.name))
    return bool(toks & {"birth", "dob", "birthday", "birthdate", "born"})


# ------------------------------------------------------------------ the generator

# Address parts: a row that refers to a row with the same address field usually repeats
# it (an order ships to its customer's address) — most of the time, not always. Names
# are not copied: a passenger or contact who refers to a user is often someone else.
_CONTACT = frozenset({"street", "address", "city", "zip"})
_COPY_RATE = 0.8
# String kinds where two fields of one row should differ (origin vs destination).
_ROW_DISTINCT = frozenset({"airport_code", "city", "person_name"})


@dataclass(frozen=True)
class _Plan:
    """How one column is derived from others (all optional)."""

    pair: str | None = None  # the start field an end field (check_out, arrival) follows
    code_src: str | None = None  # the airport-code field whose city a city field is
    via: tuple[str, str, str] | None = None  # (g, Y, h): pick Y rows whose h == row.g
    copy: tuple[str, str] | None = None  # (g, X): usually copy X[row.g].<this field>
    avoid: tuple[str, ...] = ()  # earlier fields of the same kind to differ from


@dataclass
class _Table:
    """Per-entity generation context: columns built so far and the row personas."""

    edef: EntityDef
    keys: list[str]
    cols: dict[str, list[Any]] = field(default_factory=dict)
    personas: list[tuple[str, str]] | None = None
    persona_fields: frozenset[str] = frozenset()
    vocabs: dict[str, str] = field(default_factory=dict)
    plans: dict[str, _Plan] = field(default_factory=dict)
    masks: dict[str, list[bool]] = field(default_factory=dict)

    @property
    def n(self) -> int:
        return len(self.keys)


class StateGenerator:
    """Builds one seeded state of ``domain``; :meth:`generate` is pure given the seed.

    ``sizes`` overrides ``EntityDef.size`` per entity (unknown names are an error).
    """

    def __init__(self, domain: Domain, seed: int, sizes: Mapping[str, int] | None = None) -> None:
        self.domain = domain
        self.seed = seed
        self.sizes: dict[str, int] = {}
        extra = sorted(set(sizes or {}) - set(domain.entities))
        if extra:
            raise StateGenError(
                f"{domain.source}: sizes name unknown entities {', '.join(extra)} "
                f"(entities: {', '.join(domain.entities)})"
            )
        for name, edef in domain.entities.items():
            n = (sizes or {}).get(name, edef.size)
            if isinstance(n, bool) or not isinstance(n, int) or n < 0:
                raise StateGenError(f"{domain.source}: size of {name} must be an int >= 0, "
                                    f"not {n!r}")
            self.sizes[name] = n
        self.keys: dict[str, list[str]] = {}
        self._tables: dict[str, _Table] = {}
        self._busy: set[tuple[str, str]] = set()

    # -- plumbing

    def _rng(self, *parts: str) -> random.Random:
        # A str seed is hashed with sha512 by random.seed: stable across processes.
        return random.Random(":".join([str(self.seed), *parts]))

    def _where(self, edef: EntityDef, f: FieldDef) -> str:
        return f"{self.domain.source}: entity {edef.name!r}, field {f.name!r}"

    # -- entry point

    def generate(self) -> State:
        """All keys first (so refs, even cyclic ones, have targets), then all columns.

        Columns are built on demand (a column derived from another one, possibly in
        another table, builds that one first). Each has its own random stream, so build
        order does not change values; a cycle of derivations is cut where it is first
        met, in declaration order, which is fixed. Last, the domain's ``generate`` rules
        (derive, then require) are applied to the finished tables.
        """
        self.keys = {
            name: [edef.make_id(i) for i in range(1, self.sizes[name] + 1)]
            for name, edef in self.domain.entities.items()
        }
        self._tables = {}
        for name, edef in self.domain.entities.items():
            t = _Table(edef, self.keys[name])
            for f in edef.fields.values():
                if f.ty == STR:
                    t.vocabs[f.name] = resolve_vocab(edef, f)
            t.persona_fields = _persona_fields(t)
            self._tables[name] = t
        for t in self._tables.values():
            for f in t.edef.fields.values():
                t.plans[f.name] = self._plan(t, f)
        self._check_refs()
        for name, edef in self.domain.entities.items():
            for fname in edef.fields:
                self._ensure(name, fname)
        tables = {
            name: {
                key: {fname: t.cols[fname][i] for fname in t.edef.fields}
                for i, key in enumerate(t.keys)
            }
            for name, t in self._tables.items()
        }
        counters = {name: self.sizes[name] + 1 for name in self.domain.entities}
        state = State(tables, counters)
        if any(e.derive or e.require for e in self.domain.entities.values()):
            rules = _Rules(self, state)
            rules.derive_all()
            rules.enforce()
            problems = check_state(self.domain, state)
            if problems:  # e.g. a derived id that names no row, or a repeated unique value
                raise StateGenError(f"{self.domain.source}: the generate rules produced an "
                                    f"invalid state: {'; '.join(problems[:5])}")
        return state

    def _check_refs(self) -> None:
        for t in self._tables.values():
            if t.n == 0:
                continue
            for f in t.edef.fields.values():
                if isinstance(f.ty, RefT) and not self.keys.get(f.ty.entity):
                    target = f.ty.entity
                    if target not in self.keys:
                        raise StateGenError(
                            f"{self._where(t.edef, f)}: refers to unknown entity {target!r}")
                    raise StateGenError(
                        f"{self._where(t.edef, f)}: every {t.edef.name} needs a {target} but "
                        f"the {target} table is empty (give {target} a size >= 1)"
                    )

    def _ensure(self, ent: str, fname: str) -> list[Any] | None:
        """Build column ``ent.fname`` after the columns it derives from.

        Returns ``None`` only for a column already being built (a dependency cycle): the
        dependent column then simply goes without that derivation.
        """
        t = self._tables[ent]
        if fname in t.cols:
            return t.cols[fname]
        if (ent, fname) in self._busy:
            return None
        self._busy.add((ent, fname))
        p = t.plans[fname]
        deps: list[tuple[str, str]] = [(ent, g) for g in p.avoid]
        if p.pair:
            deps.append((ent, p.pair))
        if p.code_src:
            deps.append((ent, p.code_src))
        if p.via:
            deps += [(ent, p.via[0]), (p.via[1], p.via[2])]
        if p.copy:
            deps += [(ent, p.copy[0]), (p.copy[1], fname)]
        for d in deps:
            self._ensure(*d)
        t.cols[fname] = self._column(t, t.edef.fields[fname])
        self._busy.discard((ent, fname))
        return t.cols[fname]

    def _col(self, ent: str, fname: str) -> list[Any] | None:
        """A column if it has been built (dependencies broken by a cycle are not)."""
        return self._tables[ent].cols.get(fname)

    def _plan(self, t: _Table, f: FieldDef) -> _Plan:
        edef = t.edef
        names = list(edef.fields)
        earlier = names[: names.index(f.name)]
        vocab = t.vocabs.get(f.name)
        pair = code_src = None
        via: tuple[str, str, str] | None = None
        copy: tuple[str, str] | None = None
        avoid: tuple[str, ...] = ()
        if not f.unique and (f.ty == DATE or vocab == "time"):
            start = _pair_start(edef, f)
            if start is not None and (f.ty == DATE or t.vocabs.get(start) == "time"):
                pair = start
        if vocab == "city":
            code_src = next((g for g, v in t.vocabs.items() if v == "airport_code"), None)
        if vocab in _ROW_DISTINCT:
            avoid = tuple(g for g in earlier if t.vocabs.get(g) == vocab)
        if isinstance(f.ty, RefT):
            avoid = tuple(g for g in earlier if edef.fields[g].ty == f.ty)
            via = self._via(edef, f, f.ty.entity)
        if vocab in _CONTACT and not f.unique and code_src is None:
            copy = self._copy_source(edef, f)
        return _Plan(pair, code_src, via, copy, avoid)

    def _via(self, edef: EntityDef, f: FieldDef, target: str) -> tuple[str, str, str] | None:
        """For ``f`` → Y: another field g → X with Y.h → X (an order's payment method
        should belong to the order's user). None if there is no such diamond."""
        ydef = self.domain.entities.get(target)
        if ydef is None or target == edef.name:
            return None
        for g, gf in edef.fields.items():
            if (g == f.name or not isinstance(gf.ty, RefT)
                    or gf.ty.entity in (target, edef.name)):
                continue
            for h, hf in ydef.fields.items():
                if hf.ty == gf.ty:
                    return g, target, h
        return None

    def _copy_source(self, edef: EntityDef, f: FieldDef) -> tuple[str, str] | None:
        """A ref field g → X where X has a same-named, same-kind contact field."""
        for g, gf in edef.fields.items():
            if not isinstance(gf.ty, RefT) or gf.ty.entity == edef.name:
                continue
            xdef = self.domain.entities.get(gf.ty.entity)
            other = xdef.fields.get(f.name) if xdef else None
            if other is not None and other.ty == STR:
                return g, gf.ty.entity
        return None

    def _column(self, t: _Table, f: FieldDef) -> list[Any]:
        ty = f.ty
        if isinstance(ty, RefT):
            return self._ref_column(t, f, ty.entity)
        if isinstance(ty, ListT):
            return self._list_column(t, f, ty.elem)
        if isinstance(ty, EnumT):
            return self._choice_column(t, f, list(ty.values))
        if ty == BOOL:
            return self._choice_column(t, f, [False, True])
        if ty == INT:
            return self._int_column(t, f)
        if ty == DATE:
            return self._date_column(t, f)
        if ty == STR:
            return self._str_column(t, f)
        raise StateGenError(f"{self._where(t.edef, f)}: cannot generate values of type "
                            f"{ty.show()}")

    # -- distinctness

    def _fill(
        self,
        n: int,
        draw: Callable[[int], H],
        *,
        hard: bool,
        soft: bool,
        bump: Callable[[H, int], H] | None = None,
        avoid: Sequence[list[Any]] = (),
        where: str = "",
    ) -> list[H]:
        """``n`` draws; re-draw on clashes (column-wide if hard/soft, row-wide vs ``avoid``).

        A hard (``unique``) column that still clashes after the retries is made unique
        with ``bump(value, k)`` for k = 2, 3, ...; soft columns accept the clash.
        """
        out: list[H] = []
        seen: set[H] = set()
        for i in range(n):
            v = draw(i)
            for _ in range(_RETRIES):
                clash = ((hard or soft) and v in seen) or any(col[i] == v for col in avoid)
                if not clash:
                    break
                v = draw(i)
            if hard and v in seen:
                if bump is None:
                    raise StateGenError(f"{where}: cannot make {n} distinct values")
                base, k = v, 2
                while v in seen:
                    v = bump(base, k)
                    k += 1
                    if k > n + 1000:
                        raise StateGenError(f"{where}: cannot make {n} distinct values")
            seen.add(v)
            out.append(v)
        return out

    # -- scalars

    def _choice_column(self, t: _Table, f: FieldDef, values: list[Any]) -> list[Any]:
        """Enums and bools: every member appears once the table has room for all."""
        n, k = t.n, len(values)
        rng = self._rng(t.edef.name, f.name)
        if f.unique:
            if n > k:
                raise StateGenError(f"{self._where(t.edef, f)}: unique field has only {k} "
                                    f"possible values but the table has {n} rows")
            return rng.sample(values, n)
        # The first member (typically the "normal" state: active, pending) is a bit
        # more common than the rest; booleans stay even.
        weights = [1.0] * k if f.ty == BOOL else [2.0] + [1.0] * (k - 1)
        out: list[Any] = [None] * n
        if n >= k:
            for pos, v in zip(rng.sample(range(n), k), values, strict=True):
                out[pos] = v
        for i in range(n):
            if out[i] is None:
                out[i] = rng.choices(values, weights)[0]
        return out

    def _int_column(self, t: _Table, f: FieldDef) -> list[int]:
        n = t.n
        rng = self._rng(t.edef.name, f.name)
        lo, hi = _int_bounds(f)
        if f.unique:
            if hi - lo + 1 < n:
                if f.max is None:
                    hi = lo + 2 * n
                elif f.min is None:
                    lo = hi - 2 * n
                else:
                    raise StateGenError(f"{self._where(t.edef, f)}: unique field has only "
                                        f"{hi - lo + 1} values in [{lo}, {hi}] for {n} rows")
            return rng.sample(range(lo, hi + 1), n)
        depletable = bool(set(_tokens(f.name)) & _DEPLETABLE)

        def draw(_: int) -> int:
            if depletable and rng.random() < 0.08:
                return lo
            return rng.randint(lo, hi)

        soft = f.givable or f.name == t.edef.display
        return self._fill(n, draw, hard=False, soft=soft and hi - lo + 1 >= 2 * n)

    def _date_column(self, t: _Table, f: FieldDef) -> list[str]:
        n = t.n
        rng = self._rng(t.edef.name, f.name)
        start, end = _BIRTH_WINDOW if _is_birth(f) else DATE_WINDOW
        span = (end - start).days + 1
        if f.unique:
            days = rng.sample(range(max(span, n)), n)
            return [(start + _dt.timedelta(d)).isoformat() for d in days]
        if any(p.pair == f.name for p in t.plans.values()):
            span -= 14  # a start date leaves room for its end date inside the window
        pair = t.plans[f.name].pair
        before_col = self._col(t.edef.name, pair) if pair else None
        if before_col is not None:
            out = []
            for before in before_col:
                b = _dt.date.fromisoformat(before)
                d = b + _dt.timedelta(rng.randint(1, 14))
                out.append(min(d, max(end, b)).isoformat())
            return out
        return [(start + _dt.timedelta(rng.randrange(span))).isoformat() for _ in range(n)]

    # -- strings

    def _personas(self, t: _Table) -> list[tuple[str, str]]:
        """One (first, last) per row, distinct where the vocabulary allows."""
        if t.personas is None:
            rng = self._rng(t.edef.name, "#persona")
            firsts, lasts = load_vocab("first_names"), load_vocab("last_names")
            t.personas = self._fill(
                t.n, lambda _: (rng.choice(firsts), rng.choice(lasts)), hard=False, soft=True
            )
        return t.personas

    def _mask(self, t: _Table, g: str) -> list[bool]:
        """Which rows copy contact details through ref field ``g`` (shared by all of
        them, so a row copies its customer's whole address or none of it)."""
        if g not in t.masks:
            rng = self._rng(t.edef.name, f"#copy:{g}")
            t.masks[g] = [rng.random() < _COPY_RATE for _ in range(t.n)]
        return t.masks[g]

    def _str_column(self, t: _Table, f: FieldDef) -> list[str]:
        vocab = t.vocabs[f.name]
        rng = self._rng(t.edef.name, f.name)
        draw = self._str_drawer(t, f, vocab, rng)
        plan = t.plans[f.name]
        if plan.copy is not None:
            g, x = plan.copy
            refs, src = self._col(t.edef.name, g), self._col(x, f.name)
            if refs is not None and src is not None:
                index = {k: i for i, k in enumerate(self.keys[x])}
                mask, fresh = self._mask(t, g), draw

                def draw(i: int) -> str:
                    return str(src[index[refs[i]]]) if mask[i] else fresh(i)

        avoid = [c for g in plan.avoid if (c := self._col(t.edef.name, g)) is not None]
        soft = (f.givable or f.name == t.edef.display) and vocab not in (
            "color", "size_label", "time"
        ) and plan.copy is None
        return self._fill(
            t.n, draw, hard=f.unique, soft=soft, bump=_bumper(vocab, rng), avoid=avoid,
            where=self._where(t.edef, f),
        )

    def _str_drawer(
        self, t: _Table, f: FieldDef, vocab: str, rng: random.Random, own_person: bool = True
    ) -> Callable[[int], str]:
        in_persona = own_person and f.name in t.persona_fields
        has_persona = own_person and bool(t.persona_fields)

        def person(i: int) -> tuple[str, str]:
            if in_persona or (vocab in ("email", "username") and has_persona):
                return self._personas(t)[i]
            return rng.choice(load_vocab("first_names")), rng.choice(load_vocab("last_names"))

        if vocab == "person_name":
            return lambda i: " ".join(person(i))
        if vocab == "first_name":
            return lambda i: person(i)[0]
        if vocab == "last_name":
            return lambda i: person(i)[1]
        if vocab == "email":
            return lambda i: _email(rng, *person(i))
        if vocab == "username":
            return lambda i: _username(rng, *person(i))
        plan = t.plans.get(f.name, _Plan()) if own_person else _Plan()
        if vocab == "time":
            before = self._col(t.edef.name, plan.pair) if plan.pair else None
            if before is not None:
                col = before
                return lambda i: _later_time(rng, col[i])
            return lambda _: _time(rng)
        if vocab == "city" and plan.code_src:
            codes = self._col(t.edef.name, plan.code_src)
            if codes is not None:
                cities = _airport_city()
                return lambda i: cities.get(codes[i]) or rng.choice(load_vocab("cities"))
        simple = _SIMPLE.get(vocab)
        if simple is not None:
            return lambda _: simple(rng)
        if _vocab_file_exists(vocab):
            items = load_vocab(vocab)
            return lambda _: rng.choice(items)
        return lambda _: rng.choice(load_vocab("words"))

    # -- references

    def _ref_column(self, t: _Table, f: FieldDef, target: str) -> list[str]:
        """Each row names an existing target row.

        Preferences, strongest first: never the row itself or what an earlier ref field
        of the row to the same table names (origin vs destination); a target consistent
        with the row's other refs (see :meth:`_via`); a target not yet used, until all
        but ~1/8 of the targets have a child (a few childless parents make good tasks).
        """
        n = t.n
        targets = self.keys[target]
        m = len(targets)
        if n == 0:
            return []
        rng = self._rng(t.edef.name, f.name)
        if f.unique and n > m:
            raise StateGenError(
                f"{self._where(t.edef, f)}: unique reference needs {n} distinct {target} "
                f"rows but there are {m}"
            )
        plan = t.plans[f.name]
        avoid = [c for g in plan.avoid if (c := self._col(t.edef.name, g)) is not None]
        groups: dict[str, list[str]] | None = None
        gcol: list[Any] | None = None
        if plan.via is not None:
            g, y, h = plan.via
            gcol, hcol = self._col(t.edef.name, g), self._col(y, h)
            if gcol is not None and hcol is not None:
                groups = {}
                for ykey, xval in zip(self.keys[y], hcol, strict=True):
                    groups.setdefault(xval, []).append(ykey)
        if f.unique:
            return self._unique_refs(t, target, avoid, groups, gcol, rng)
        cover = min(n, m - m // 8)
        pending = rng.sample(targets, cover)  # parents still owed a child, popped from end
        owed = set(pending)
        out = [""] * n
        for i in rng.sample(range(n), n):  # shuffled, so coverage is not by key order
            banned = {c[i] for c in avoid}
            if target == t.edef.name and m > 1:
                banned.add(t.keys[i])
            pool = targets
            if groups is not None and gcol is not None and groups.get(gcol[i]):
                pool = groups[gcol[i]]
            pick = None
            if pool is targets:
                while pending and pending[-1] not in owed:  # served elsewhere: drop lazily
                    pending.pop()
                # Skip (but keep) owed parents this row may not take; few are banned.
                skipped = 0
                for x in reversed(pending):
                    if x not in owed:
                        continue
                    if x not in banned:
                        pick = x
                        break
                    skipped += 1
                    if skipped > len(banned):
                        break
            else:
                fresh = [x for x in pool if x in owed and x not in banned]
                pick = rng.choice(fresh) if fresh else None
            if pick is None:
                pick = _choose_not(rng, pool, banned) or _choose_not(rng, targets, banned)
            owed.discard(pick or "")
            out[i] = pick or rng.choice(targets)
        return out

    def _unique_refs(
        self,
        t: _Table,
        target: str,
        avoid: list[list[Any]],
        groups: dict[str, list[str]] | None,
        gcol: list[Any] | None,
        rng: random.Random,
    ) -> list[str]:
        """A one-to-one reference (n <= m checked): each target used at most once."""
        targets = self.keys[target]
        used: set[str] = set()
        out = [""] * t.n
        for i in rng.sample(range(t.n), t.n):
            banned = {c[i] for c in avoid} | used
            if target == t.edef.name and len(targets) > 1:
                banned.add(t.keys[i])
            pool = targets
            if groups is not None and gcol is not None and groups.get(gcol[i]):
                pool = groups[gcol[i]]
            ok = [x for x in pool if x not in banned] or [x for x in targets if x not in banned]
            pick = rng.choice(ok or [x for x in targets if x not in used])
            used.add(pick)
            out[i] = pick
        return out

    def _list_column(self, t: _Table, f: FieldDef, elem: Ty) -> list[list[Any]]:
        """Small sorted sets (0..3 items); ref lists prefer targets not yet used."""
        rng = self._rng(t.edef.name, f.name)
        size_weights = [1, 3, 3, 2]
        out: list[list[Any]] = []
        if isinstance(elem, RefT):
            targets = self.keys.get(elem.entity)
            if targets is None:
                raise StateGenError(
                    f"{self._where(t.edef, f)}: refers to unknown entity {elem.entity!r}")
            pending = rng.sample(targets, len(targets))
            for i in range(t.n):
                own = t.keys[i] if elem.entity == t.edef.name else None
                room = len(targets) - (own is not None)
                k = min(rng.choices(range(4), size_weights)[0], room)
                picked: list[str] = []
                while k and pending and not picked:  # one not-yet-listed target first
                    p = pending.pop()
                    if p != own:
                        picked.append(p)
                while len(picked) < k:  # k <= 3, so rejection sampling ends quickly
                    x = rng.choice(targets)
                    if x != own and x not in picked:
                        picked.append(x)
                out.append(sorted(picked))
            return out
        one = self._elem_drawer(t, f, elem, rng)
        for _ in range(t.n):
            k = rng.choices(range(4), size_weights)[0]
            vals: list[Any] = []
            for _ in range(k * 4):
                if len(vals) >= k:
                    break
                v = one()
                if v not in vals:
                    vals.append(v)
            out.append(sorted(vals))
        return out

    def _elem_drawer(
        self, t: _Table, f: FieldDef, elem: Ty, rng: random.Random
    ) -> Callable[[], Any]:
        if isinstance(elem, EnumT):
            vals = elem.values
            return lambda: rng.choice(vals)
        if elem == BOOL:
            return lambda: rng.random() < 0.5
        if elem == INT:
            lo, hi = _int_bounds(f)
            return lambda: rng.randint(lo, hi)
        if elem == DATE:
            start, end = DATE_WINDOW
            span = (end - start).days + 1
            return lambda: (start + _dt.timedelta(rng.randrange(span))).isoformat()
        if elem == STR:
            # Items of a list are not "the row's person": never tie them to the persona.
            draw = self._str_drawer(t, f, resolve_vocab(t.edef, f), rng, own_person=False)
            return lambda: draw(0)
        raise StateGenError(f"{self._where(t.edef, f)}: cannot generate list of {elem.show()}")


def _choose_not(rng: random.Random, pool: list[str], banned: set[str]) -> str | None:
    """A random member of ``pool`` outside ``banned`` (None if there is none)."""
    for _ in range(8):
        x = rng.choice(pool)
        if x not in banned:
            return x
    ok = [x for x in pool if x not in banned]
    return rng.choice(ok) if ok else None


def _persona_fields(t: _Table) -> frozenset[str]:
    """Fields that describe the row's own person: the first of each name kind."""
    taken: set[str] = set()
    out: set[str] = set()
    for fname, v in t.vocabs.items():
        if v in ("person_name", "first_name", "last_name") and v not in taken:
            taken.add(v)
            out.add(fname)
    return frozenset(out)


# ------------------------------------------------------------------ string vocabularies

_CODE_CHARS = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"  # no 0/O or 1/I look-alikes


def _clean(s: str) -> str:
    return re.sub(r"[^a-z0-9]", "", s.lower())


def _email(rng: random.Random, first: str, last: str) -> str:
    f, la = _clean(first) or "user", _clean(last) or "mail"
    local = rng.choice([f"{f}.{la}", f"{f}{la}", f"{f[0]}{la}", f"{f}_{la}", f"{f}.{la[0]}"])
    if rng.random() < 0.6:
        local += str(rng.randint(1, 99))
    return f"{local}@{rng.choice(load_vocab('email_domains'))}"


def _username(rng: random.Random, first: str, last: str) -> str:
    f, la = _clean(first) or "user", _clean(last) or "name"
    return rng.choice([f"{f[0]}{la}", f"{f}{la[0]}", f"{f}_{la}"]) + str(rng.randint(1, 999))


def _time(rng: random.Random) -> str:
    return f"{rng.randint(5, 22):02d}:{rng.randrange(0, 60, 5):02d}"


def _later_time(rng: random.Random, before: str) -> str:
    h, _, m = before.partition(":")
    total = min(int(h) * 60 + int(m) + rng.randrange(45, 361, 5), 23 * 60 + 59)
    return f"{total // 60:02d}:{total % 60:02d}"


def _street(rng: random.Random) -> str:
    return f"{rng.randint(1, 9999)} {rng.choice(load_vocab('streets'))}"


def _zip(rng: random.Random) -> str:
    return f"{rng.randint(1001, 99950):05d}"


def _phrase(rng: random.Random) -> str:
    words = load_vocab("words")
    text = " ".join(rng.choice(words) for _ in range(rng.randint(3, 5)))
    return text[0].upper() + text[1:]


_SIMPLE: dict[str, Callable[[random.Random], str]] = {
    "street": _street,
    "address": lambda r: f"{_street(r)}, {r.choice(load_vocab('cities'))} {_zip(r)}",
    "city": lambda r: r.choice(load_vocab("cities")),
    "zip": _zip,
    "product": lambda r: r.choice(load_vocab("products")),
    "color": lambda r: r.choice(load_vocab("colors")),
    "size_label": lambda r: r.choice(load_vocab("size_labels")),
    "word": lambda r: r.choice(load_vocab("words")),
    "phrase": _phrase,
    "title": lambda r: " ".join(w.capitalize() for w in r.sample(load_vocab("words"), 2)),
    "airport_code": lambda r: r.choice(_airports())[0],
    "flight_number": lambda r: f"GG{r.randint(100, 9999)}",
    "phone": lambda r: f"{r.randint(201, 989)}-555-{r.randint(100, 199):04d}",
    "code": lambda r: "".join(r.choice(_CODE_CHARS) for _ in range(6)),
    "seat": lambda r: f"{r.randint(1, 40)}{r.choice('ABCDEF')}",
}


def _bumper(vocab: str, rng: random.Random) -> Callable[[str, int], str]:
    """How a unique string column makes a clashing value distinct (deterministically)."""
    if vocab == "email":
        def bump_email(v: str, k: int) -> str:
            local, _, dom = v.partition("@")
            return f"{local}.{k}@{dom}"
        return bump_email
    if vocab == "airport_code":
        # More airports than the vocabulary holds: synthesize 3-letter codes.
        return lambda _v, _k: "".join(rng.choice("ABCDEFGHIJKLMNOPQRSTUVWXYZ")
                                      for _ in range(3))
    if vocab in ("zip", "phone", "flight_number", "code", "time", "seat"):
        simple = _SIMPLE.get(vocab, _time)
        return lambda _v, _k: simple(rng)
    return lambda v, k: f"{v} {k}"


# ------------------------------------------------------------------ generate: derive / require

# Re-draws of one violating row before it counts as stuck in this pass (in widening
# stages, see _Rules._repair), and passes over all rows before rules that keep breaking
# each other are an error.
REQUIRE_TRIES = 50
_REQUIRE_PASSES = 12
_KEY = "#key"  # a narrowing on the row key rather than on a field


@dataclass(frozen=True)
class _Narrow:
    """While evaluating one rule, table ``entity`` can be cut down to the rows whose
    ``field`` equals (``eq``) or whose key is in (``in``) the value of ``rhs`` (an
    expression over ``x`` only): every comprehension over the table filters on it, and
    nothing else reads the table except row ``x`` itself, which passes the filter. Turns
    per-row aggregates from a scan of the table into an index lookup."""

    entity: str
    kind: str  # "eq" | "in"
    field: str  # a stable (ref, non-derived) field, or _KEY
    rhs: ir.Expr


@dataclass(frozen=True)
class _Cond:
    """A condition a generated row must meet: a ``require`` or a derived field's bounds."""

    label: str  # e.g. "generate.require[1]" or "the bounds of derived field 'total'"
    source: str
    expr: ir.Expr | None  # None for a bounds check of derived field ``field``
    field: str | None
    narrows: tuple[_Narrow, ...]
    redraw: tuple[str, ...]  # fields of the row a repair re-draws, declaration order


Read = tuple[str, str, bool]  # (entity, field, read on the row variable x itself)


def _is_x(k: ir.Expr) -> bool:
    return isinstance(k, ir.Var) and k.name == "x"


def rule_reads(e: ir.Expr, ent: str, domain: Domain) -> set[Read]:
    """The fields a ``generate`` expression over row ``x`` of ``ent`` reads.

    ``count()`` does not read what it projects; a whole row reads every field.
    """
    out: set[Read] = set()
    stack = [e]
    while stack:
        n = stack.pop()
        if isinstance(n, ir.FieldOf):
            out.add((n.entity, n.field, n.entity == ent and _is_x(n.key)))
        elif isinstance(n, ir.RowOf):
            own = n.entity == ent and _is_x(n.key)
            out.update((n.entity, f, own) for f in domain.entities[n.entity].fields)
        if isinstance(n, ir.Agg) and n.fn == "count":
            stack.extend(c for c in (n.comp.cond,) if c is not None)
            continue
        stack.extend(ir.children(n))
    return out


def derive_order(domain: Domain) -> list[tuple[str, Derive]]:
    """Every ``generate.derive`` rule, each after the derived fields it reads.

    Ordered field by field (a derive may read other derived fields, also of other
    tables), ties in declaration order. Raises :class:`StateGenError` on a cycle, or
    when a derive reads its own field on other rows (only ``x``'s own draw is defined).
    """
    rules = {(e, d.field): d for e, edef in domain.entities.items() for d in edef.derive}
    deps: dict[tuple[str, str], list[tuple[str, str]]] = {}
    for (ent, fname), d in rules.items():
        reads = rule_reads(d.expr, ent, domain)
        if (ent, fname, False) in reads:
            raise StateGenError(
                f"{domain.source}: entity {ent!r}, generate.derive.{fname}: reads {fname} of "
                f"other {ent} rows, whose derived values depend on the order rows are "
                f"computed in (only x.{fname}, this row's random draw, may be read)"
                f"\n    in: {d.source}")
        deps[(ent, fname)] = [(e, f) for e, f, _ in sorted(reads)
                              if (e, f) in rules and (e, f) != (ent, fname)]
    out: list[tuple[str, Derive]] = []
    state: dict[tuple[str, str], int] = {}  # 1 = on the current path, 2 = placed

    def place(node: tuple[str, str], path: list[tuple[str, str]]) -> None:
        if state.get(node) == 2:
            return
        if state.get(node) == 1:
            cyc = [*path[path.index(node):], node]
            raise StateGenError(
                f"{domain.source}: generate.derive rules form a cycle: "
                + " -> ".join(f"{e}.{f}" for e, f in cyc))
        state[node] = 1
        for dep in deps[node]:
            place(dep, [*path, node])
        state[node] = 2
        out.append((node[0], rules[node]))

    for node in rules:
        place(node, [])
    return out


def _conjuncts(e: ir.Expr | None) -> list[ir.Expr]:
    if e is None:
        return []
    if isinstance(e, ir.BoolOp) and e.op == "and":
        return [c for v in e.values for c in _conjuncts(v)]
    return [e]


def _x_only(e: ir.Expr) -> bool:
    return all(not isinstance(n, ir.Var | ir.Comp) or _is_x(n) for n in ir.walk(e))


def _narrowings(e: ir.Expr, ent: str,
                stable: Callable[[str, str], bool]) -> tuple[_Narrow, ...]:
    """The tables ``e`` (over row ``x`` of ``ent``) can be evaluated on in part."""
    comps: dict[str, list[ir.Comp]] = {}
    others: dict[str, list[ir.Expr]] = {}  # keys of lookups outside comprehensions
    stack: list[tuple[ir.Expr, dict[str, str]]] = [(e, {})]
    while stack:
        n, cvars = stack.pop()
        if isinstance(n, ir.Comp):
            comps.setdefault(n.entity, []).append(n)
            inner = {**cvars, n.var: n.entity}
            stack.extend((c, inner) for c in ir.children(n))
            continue
        if isinstance(n, ir.FieldOf | ir.RowOf | ir.Exists) and not (
            isinstance(n.key, ir.Var) and cvars.get(n.key.name) == n.entity
        ):
            others.setdefault(n.entity, []).append(n.key)
        stack.extend((c, cvars) for c in ir.children(n))
    out: list[_Narrow] = []
    for y, cs in comps.items():
        common: list[_Narrow] | None = None
        for c in cs:
            cands = []
            for part in _conjuncts(c.cond):
                if isinstance(part, ir.Compare) and part.op == "==":
                    for a, b in ((part.left, part.right), (part.right, part.left)):
                        if not _x_only(b):
                            continue
                        if isinstance(a, ir.Var) and a.name == c.var:
                            cands.append(_Narrow(y, "eq", _KEY, b))
                        elif (isinstance(a, ir.FieldOf) and isinstance(a.key, ir.Var)
                              and a.key.name == c.var and stable(y, a.field)):
                            cands.append(_Narrow(y, "eq", a.field, b))
                elif (isinstance(part, ir.Contains) and not part.negated
                      and isinstance(part.item, ir.Var) and part.item.name == c.var
                      and _x_only(part.container)):
                    cands.append(_Narrow(y, "in", _KEY, part.container))
            common = cands if common is None else [x for x in common if x in cands]
        if not common:
            continue
        pick = common[0]
        if others.get(y):
            # Only row x itself may be read outside the comprehensions, and it must
            # survive the cut: x.h == x.h.
            own = pick.kind == "eq" and (
                (pick.field == _KEY and _is_x(pick.rhs))
                or (isinstance(pick.rhs, ir.FieldOf) and _is_x(pick.rhs.key)
                    and pick.rhs.field == pick.field)
            )
            if not (y == ent and own and all(_is_x(k) for k in others[y])):
                continue
        out.append(pick)
    return tuple(out)


class _Rules:
    """Applies the domain's ``generate`` rules to a freshly drawn state, in place."""

    def __init__(self, gen: StateGenerator, st: State) -> None:
        self.gen = gen
        self.st = st
        self.domain = gen.domain
        d = self.domain
        self.order = derive_order(d)
        self.derived = {(e, dv.field) for e, dv in self.order}
        self.dreads = {(e, dv.field): rule_reads(dv.expr, e, d) for e, dv in self.order}
        # Derives that read their own field start from the draw, which is kept here.
        self.drawn: dict[tuple[str, str], dict[str, Any]] = {
            (e, dv.field): {k: r[dv.field] for k, r in st.tables[e].items()}
            for e, dv in self.order if (e, dv.field, True) in self.dreads[(e, dv.field)]
        }
        self.dnarrow = {(e, dv.field): _narrowings(dv.expr, e, self._stable)
                        for e, dv in self.order}
        self.conds = {e: self._conds(e, edef) for e, edef in d.entities.items()}
        self._index: dict[tuple[str, str], dict[Any, dict[str, Any]]] = {}
        self._pos = {e: {k: i for i, k in enumerate(st.tables[e])} for e in d.entities}
        self._bounds: dict[FieldDef, tuple[int, int]] = {}  # _int_bounds, which is slow

    def _stable(self, ent: str, fname: str) -> bool:
        """Fields no rule changes: safe to index once."""
        f = self.domain.entities[ent].fields.get(fname)
        return f is not None and (ent, fname) not in self.derived and isinstance(f.ty, RefT)

    # -- set-up

    def _redrawable(self, ent: str, start: set[str]) -> tuple[str, ...]:
        """The row's own fields a repair re-draws to change the value of ``start``."""
        edef = self.domain.entities[ent]
        plans = self.gen._tables[ent].plans
        out: set[str] = set()
        todo, seen = list(start), set(start)
        while todo:
            f = todo.pop()
            fd = edef.fields.get(f)
            if fd is None:
                continue
            if (ent, f) in self.derived:
                reads = self.dreads[(ent, f)]
                if (ent, f, True) in reads and isinstance(fd.ty, PrimT | EnumT):
                    out.add(f)
                more = {g for e, g, own in reads if own and e == ent} - seen
                seen |= more
                todo.extend(more)
            elif isinstance(fd.ty, PrimT | EnumT):
                out.add(f)
        grew = True
        while grew:  # an end date / arrival time / airport city follows its source
            grew = False
            for g, p in plans.items():
                if g not in out and (ent, g) not in self.derived and (
                        p.pair in out or p.code_src in out):
                    out.add(g)
                    grew = True
        return tuple(f for f in edef.fields if f in out)

    def _conds(self, ent: str, edef: EntityDef) -> list[_Cond]:
        out: list[_Cond] = []
        for i, chk in enumerate(edef.require):
            own = {f for e, f, o in rule_reads(chk.expr, ent, self.domain) if o and e == ent}
            out.append(_Cond(f"generate.require[{i}]", chk.source, chk.expr, None,
                             _narrowings(chk.expr, ent, self._stable),
                             self._redrawable(ent, own)))
        for dv in edef.derive:
            f = edef.fields[dv.field]
            if f.min is not None or f.max is not None:
                parts = ([f"x.{dv.field} >= {f.min}"] if f.min is not None else []) + (
                    [f"x.{dv.field} <= {f.max}"] if f.max is not None else [])
                out.append(_Cond(f"the bounds of derived field {dv.field!r}",
                                 " and ".join(parts), None, dv.field, (),
                                 self._redrawable(ent, {dv.field})))
        return out

    # -- evaluation

    def _eval(self, e: ir.Expr, narrows: tuple[_Narrow, ...], key: str) -> Any:
        env = {"x": key}
        st = self.st
        if narrows:
            tables = dict(st.tables)
            for nw in narrows:
                v = evaluate(nw.rhs, st, env, self.domain)
                if nw.kind == "eq":
                    tables[nw.entity] = self._lookup(nw.entity, nw.field).get(v, {})
                else:
                    full = st.tables[nw.entity]
                    tables[nw.entity] = {k: full[k] for k in sorted(v) if k in full}
            st = State(tables, st.counters)
        return evaluate(e, st, env, self.domain)

    def _lookup(self, ent: str, fname: str) -> dict[Any, dict[str, Any]]:
        idx = self._index.get((ent, fname))
        if idx is None:
            idx = {}
            for k, row in self.st.tables[ent].items():
                idx.setdefault(k if fname == _KEY else row[fname], {})[k] = row
            self._index[(ent, fname)] = idx
        return idx

    def _where(self, ent: str, key: str) -> str:
        return f"{self.domain.source}: entity {ent!r}, row {key!r}"

    # -- derive

    def derive_all(self) -> None:
        """Compute every derived field of every row, in dependency order."""
        for ent, dv in self.order:
            for key in self.st.tables[ent]:
                self._derive(ent, dv, key)

    def _derive(self, ent: str, dv: Derive, key: str) -> bool:
        """(Re)compute ``dv`` on one row; True if the value changed."""
        row = self.st.tables[ent][key]
        old = row[dv.field]
        drawn = self.drawn.get((ent, dv.field))
        if drawn is not None:
            row[dv.field] = drawn[key]
        try:
            row[dv.field] = self._eval(dv.expr, self.dnarrow[(ent, dv.field)], key)
        except ToolError as exc:
            raise StateGenError(f"{self._where(ent, key)}, generate.derive.{dv.field}: "
                                f"{exc.message}\n    in: {dv.source}") from None
        return bool(row[dv.field] != old)

    def _propagate(self, dirty: dict[tuple[str, str], set[str]]) -> None:
        """Re-derive what reads the changed fields (rows listed per field), in order."""
        for ent, dv in self.order:
            rows: set[str] = set()
            every = False
            for e, f, own in self.dreads[(ent, dv.field)]:
                changed = dirty.get((e, f))
                if not changed:
                    continue
                if own and e == ent:
                    rows |= changed
                else:
                    every = True
            keys = list(self.st.tables[ent]) if every else sorted(rows)
            for key in keys:
                if self._derive(ent, dv, key):
                    dirty.setdefault((ent, dv.field), set()).add(key)

    # -- require

    def _holds(self, c: _Cond, ent: str, key: str) -> bool:
        if c.expr is None:
            assert c.field is not None
            f = self.domain.entities[ent].fields[c.field]
            v = self.st.tables[ent][key][c.field]
            return (f.min is None or v >= f.min) and (f.max is None or v <= f.max)
        try:
            return bool(self._eval(c.expr, c.narrows, key))
        except ToolError:
            return False  # e.g. min() over no rows: cannot hold as drawn

    def _failing(self, ent: str, key: str) -> list[_Cond]:
        return [c for c in self.conds[ent] if not self._holds(c, ent, key)]

    def enforce(self) -> None:
        """Re-draw violating rows until every condition holds on every row.

        Passes go over entities in declaration order, rows in key order. A row that
        cannot be repaired from its own fields in this pass may be repaired by others
        (a cabin can be oversold by many bookings); only a pass that repairs nothing
        while rows still fail is an error.
        """
        if not any(self.conds.values()):
            return
        for pass_no in range(1, _REQUIRE_PASSES + 1):
            stuck: list[tuple[str, str, _Cond]] = []
            progress = False
            for ent, conds in self.conds.items():
                if not conds:
                    continue
                # Derived fields elsewhere follow the repairs once per table and pass:
                # a condition read stale meanwhile is caught by the next pass.
                dirty: dict[tuple[str, str], set[str]] = {}
                for key in list(self.st.tables[ent]):
                    failing = self._failing(ent, key)
                    if not failing:
                        continue
                    changed = self._repair(ent, key, failing, pass_no)
                    if changed is None:
                        stuck.append((ent, key, failing[0]))
                        continue
                    progress = True
                    for f in changed:
                        dirty.setdefault((ent, f), set()).add(key)
                self._propagate(dirty)
            if not stuck and not progress:
                return
            if stuck and not progress:
                self._fail(*stuck[0])
        ent, key = next((e, k) for e in self.conds for k in self.st.tables[e]
                        if self._failing(e, k))
        self._fail(ent, key, self._failing(ent, key)[0],
                   f"rules kept breaking each other for {_REQUIRE_PASSES} passes")

    def _fail(self, ent: str, key: str, c: _Cond, why: str = "") -> None:
        if not why:
            every = [f for f in self.domain.entities[ent].fields
                     if any(f in d.redraw for d in self.conds[ent])]
            why = (f"re-drew {', '.join(every)} {REQUIRE_TRIES} times" if c.redraw else
                   "it reads no field of the row that can be re-drawn (only non-key, "
                   "non-reference scalar fields, or the inputs of derived ones, can)")
        row = self.st.tables[ent][key]
        shown = ", ".join(f"{f}={row[f]!r}" for f in self.domain.entities[ent].fields)
        raise StateGenError(f"{self._where(ent, key)}: cannot satisfy {c.label} ({why})"
                            f"\n    condition: {c.source}\n    row: {shown}")

    def _repair(self, ent: str, key: str, failing: list[_Cond],
                pass_no: int) -> set[str] | None:
        """Re-draw the row until all its conditions hold: the fields that changed, or
        None (row unchanged) if no attempt worked.

        Widening stages: first only the quantities (int, str, date) the failing
        conditions read, so that enums and flags keep their spread when a number can fix
        it; then everything they read; last everything any condition of the row reads
        (the re-draw must not break the row's other conditions, and may need to move
        them: a booking too big for its cabin may have to stop being booked).
        """
        edef = self.domain.entities[ent]
        mine = [f for f in edef.fields if any(f in c.redraw for c in failing)]
        every = [f for f in edef.fields if any(f in c.redraw for c in self.conds[ent])]
        numbers = [f for f in mine if not isinstance(edef.fields[f].ty, EnumT)
                   and edef.fields[f].ty != BOOL]
        stages = [s for s in (numbers, mine, every) if s]
        if not stages:
            return None
        row = self.st.tables[ent][key]
        before = dict(row)
        drawn_before = {f: self.drawn[(ent, f)][key] for f in every if (ent, f) in self.drawn}
        t = self.gen._tables[ent]
        i = self._pos[ent][key]
        own = [dv for e, dv in self.order if e == ent]
        # Check the conditions that failed first: they are the likeliest to fail again.
        conds = [*failing, *(c for c in self.conds[ent] if c not in failing)]
        for attempt in range(1, REQUIRE_TRIES + 1):
            fields = stages[min(len(stages) - 1, (attempt - 1) * len(stages) // REQUIRE_TRIES)]
            rng = self.gen._rng(ent, "#require", key, str(pass_no), str(attempt))
            for f in fields:
                v = self._redraw(t, i, key, edef.fields[f], row, rng, attempt)
                if (ent, f) in self.drawn:
                    self.drawn[(ent, f)][key] = v
                row[f] = v
            for dv in own:
                self._derive(ent, dv, key)
            if all(self._holds(c, ent, key) for c in conds):
                return {f for f in row if row[f] != before[f]}
        row.update(before)
        for f, v in drawn_before.items():
            self.drawn[(ent, f)][key] = v
        return None

    def _redraw(self, t: _Table, i: int, key: str, f: FieldDef, row: dict[str, Any],
                rng: random.Random, attempt: int) -> Any:
        """A fresh value of ``f`` for one row, drawn the way its column was.

        Ints search a little: every third attempt draws from the whole range, the others
        from a window at its low or high end that narrows with each attempt, so one-sided
        conditions (``x.balance <= 1000``, ``... <= x.seats``) are met within a few tries
        while a window still holds all solutions the draw stays uniform over them. The
        last third of the attempts may use the declared bounds beyond the usual range.
        """
        ty = f.ty
        old = row[f.name]
        table = self.st.tables[t.edef.name]
        taken = {r[f.name] for k, r in table.items() if k != key} if f.unique else set()
        plan = t.plans.get(f.name, _Plan())
        if isinstance(ty, EnumT):
            if f.unique:
                free = [v for v in ty.values if v not in taken]
                return rng.choice(free) if free else old
            return rng.choices(ty.values, [2.0] + [1.0] * (len(ty.values) - 1))[0]
        if ty == BOOL:
            return rng.random() < 0.5
        source = row.get(plan.pair) if plan.pair else None  # the start this field follows
        if ty == INT:
            lo, hi = self._bounds.get(f) or self._bounds.setdefault(f, _int_bounds(f))
            if attempt > REQUIRE_TRIES * 2 // 3:
                lo = f.min if f.min is not None else lo
                hi = f.max if f.max is not None else hi
            if attempt % 3 != 1:
                width = max(1, int((hi - lo + 1) * 0.7 ** ((attempt + 1) // 3)))
                if rng.random() < 0.5:
                    hi = lo + width - 1
                else:
                    lo = hi - width + 1

            def draw() -> Any:
                return rng.randint(lo, hi)
        elif ty == DATE:
            start, end = _BIRTH_WINDOW if _is_birth(f) else DATE_WINDOW
            span = (end - start).days + 1
            if any(p.pair == f.name for p in t.plans.values()):
                span -= 14  # a start date leaves room for its end date

            def draw() -> Any:
                if isinstance(source, str):
                    b = _dt.date.fromisoformat(source)
                    return min(b + _dt.timedelta(rng.randint(1, 14)), max(end, b)).isoformat()
                return (start + _dt.timedelta(rng.randrange(span))).isoformat()
        elif ty == STR:
            vocab = t.vocabs.get(f.name) or resolve_vocab(t.edef, f)
            code = row.get(plan.code_src) if plan.code_src else None
            one = self.gen._str_drawer(t, f, vocab, rng)

            def draw() -> Any:
                if vocab == "time" and isinstance(source, str):
                    return _later_time(rng, source)
                if vocab == "city" and isinstance(code, str) and code in _airport_city():
                    return _airport_city()[code]
                return one(i)
        else:
            return old
        avoid = [row[g] for g in plan.avoid if g in row]
        for _ in range(_RETRIES):
            v = draw()
            if v not in taken and v not in avoid:
                return v
        return old


# ------------------------------------------------------------------ public API


def generate_state(domain: Domain, seed: int, sizes: Mapping[str, int] | None = None) -> State:
    """A realistic, schema-valid state of ``domain``; same seed ⇒ identical state.

    ``sizes`` overrides the per-entity row counts (``EntityDef.size``). Rows are keyed
    ``make_id(1..n)`` and each counter is ``n + 1``. Every ``generate.derive`` field
    holds its expression's value and every ``generate.require`` condition holds on every
    row. Raises :class:`StateGenError` when the schema or those rules cannot be satisfied
    (e.g. a required reference into an empty table, a require no re-draw can meet).
    """
    return StateGenerator(domain, seed, sizes).generate()


def check_state(domain: Domain, state: State) -> list[str]:
    """Schema problems of ``state`` (empty when valid): types, refs, bounds, uniques.

    Also checks that list fields are sorted sets and that counters are past every key.
    """
    from graphgen.interp import check_value  # interp imports state; keep this lazy

    problems: list[str] = []
    if set(state.tables) != set(domain.entities):
        problems.append(f"tables {sorted(state.tables)} != entities {sorted(domain.entities)}")
    for ename, edef in domain.entities.items():
        table = state.tables.get(ename, {})
        counter = state.counters.get(ename)
        if counter is None:
            problems.append(f"{ename}: no counter")
        for key, row in table.items():
            where = f"{ename}[{key!r}]"
            if counter is not None:
                num = key[len(edef.prefix):]
                if key.startswith(edef.prefix) and num.isdigit() and int(num) >= counter:
                    problems.append(f"{where}: counter {counter} is not past this key")
            if set(row) != set(edef.fields):
                problems.append(f"{where}: fields {sorted(row)} != {sorted(edef.fields)}")
                continue
            for fname, f in edef.fields.items():
                v = row[fname]
                why = check_value(f.ty, v)
                if why:
                    problems.append(f"{where}.{fname} = {v!r}: expected {why}")
                    continue
                target = domain.entity_of_ref(f.ty)
                vals = v if isinstance(v, list) else [v]
                if target is not None:
                    for x in vals:
                        if x not in state.tables.get(target, {}):
                            problems.append(f"{where}.{fname}: {target} {x!r} does not exist")
                if isinstance(v, list) and v != sorted(set(v)):
                    problems.append(f"{where}.{fname}: list is not a sorted set: {v!r}")
                if f.ty == INT and (
                    (f.min is not None and v < f.min) or (f.max is not None and v > f.max)
                ):
                    problems.append(f"{where}.{fname} = {v}: outside [{f.min}, {f.max}]")
        for fname, f in edef.fields.items():
            if f.unique:
                vals = [row.get(fname) for row in table.values()]
                if len(vals) != len(set(map(repr, vals))):
                    problems.append(f"{ename}.{fname}: unique field has repeated values")
    return problems
