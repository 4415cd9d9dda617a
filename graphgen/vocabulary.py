"""What generated values are drawn from: vocabularies and field-name heuristics.

Strings come from the small word lists shipped in ``graphgen/vocab`` (names, cities,
products, ...), chosen by a field's ``vocab`` hint or, failing that, by its name
(:func:`resolve_vocab`). Ints and dates without declared bounds get a realistic range
guessed from the field's name (:func:`int_bounds`, :data:`DATE_WINDOW`). The drawers here
take an explicit ``random.Random``, so the generator (:mod:`graphgen.stategen`) controls
every stream and stays deterministic.
"""

from __future__ import annotations

import datetime as _dt
import random
import re
from collections.abc import Callable
from functools import cache
from importlib import resources

from graphgen.domain import EntityDef, FieldDef
from graphgen.errors import StateGenError

__all__ = [
    "BIRTH_WINDOW",
    "DATE_WINDOW",
    "DEPLETABLE",
    "KNOWN_VOCABS",
    "SIMPLE_DRAWERS",
    "airport_city",
    "bumper",
    "draw_email",
    "draw_time",
    "draw_username",
    "identifier_words",
    "indefinite_article",
    "int_bounds",
    "is_birth_field",
    "later_time",
    "load_vocab",
    "name_tokens",
    "pair_start",
    "resolve_vocab",
    "town_names",
    "vocab_file_exists",
]

# Generated dates fall in one fixed year so that states never depend on "today".
DATE_WINDOW = (_dt.date(2026, 1, 1), _dt.date(2026, 12, 31))
BIRTH_WINDOW = (_dt.date(1950, 1, 1), _dt.date(2005, 12, 31))

# ------------------------------------------------------------------ vocabularies

# Bounded: the name becomes a file name (an overlong one is an OS error, not a miss).
_VOCAB_NAME = re.compile(r"^[a-z][a-z0-9_]{0,63}\Z")


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


def vocab_file_exists(name: str) -> bool:
    """Whether ``graphgen/vocab/<name>.txt`` is shipped (a hint may name any file)."""
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
def airport_city() -> dict[str, str]:
    """Airport code → its city, from ``airport_codes.txt``."""
    return dict(_airports())


_TOWN_PREFIXES = ("", "North ", "South ", "East ", "West ", "New ", "Port ", "Lake ", "Fort ")
_TOWN_SUFFIXES = ("", " Heights", " Springs", " Harbor", " Falls", " Junction", " Park")


@cache
def town_names() -> tuple[str, ...]:
    """Place names for airports past the real codes: each city of ``cities.txt`` with a
    prefix or suffix (``North Denver``, ``Denver Springs``), about 5,500. A table of
    thousands of airports drawing their cities from the 88 real ones put 80 airports in
    every city, and every lookup by city showed all of them.

    >>> len(town_names()) > 5000, "Port Denver" in town_names()
    (True, True)
    """
    return tuple(
        f"{p}{c}{s}"
        for c in load_vocab("cities")
        for p in _TOWN_PREFIXES
        for s in _TOWN_SUFFIXES
        if p or s
    )


# The vocab hints this module understands. Any other hint that names a shipped vocab
# file (e.g. ``email_domains``) draws from that file; anything else falls back on the
# field name and finally on single words.
KNOWN_VOCABS = frozenset(
    {
        "person_name",
        "first_name",
        "last_name",
        "email",
        "username",
        "street",
        "address",
        "city",
        "zip",
        "product",
        "color",
        "size_label",
        "word",
        "phrase",
        "title",
        "airport_code",
        "flight_number",
        "time",
        "phone",
        "code",
        "seat",
    }
)

_VOCAB_ALIASES = {
    "name": "person_name",
    "full_name": "person_name",
    "person": "person_name",
    "firstname": "first_name",
    "given_name": "first_name",
    "lastname": "last_name",
    "surname": "last_name",
    "family_name": "last_name",
    "email_address": "email",
    "user_name": "username",
    "handle": "username",
    "street_address": "street",
    "zipcode": "zip",
    "zip_code": "zip",
    "postal_code": "zip",
    "postcode": "zip",
    "cities": "city",
    "products": "product",
    "product_name": "product",
    "colors": "color",
    "colour": "color",
    "size": "size_label",
    "sizes": "size_label",
    "words": "word",
    "text": "phrase",
    "sentence": "phrase",
    "description": "phrase",
    "airport": "airport_code",
    "iata": "airport_code",
    "airport_codes": "airport_code",
    "flight": "flight_number",
    "flight_no": "flight_number",
    "hhmm": "time",
    "time_of_day": "time",
    "phone_number": "phone",
    "telephone": "phone",
    "sku": "code",
    "confirmation_code": "code",
    "streets": "street",
}

_PERSON_ENTITIES = frozenset(
    {
        "user",
        "customer",
        "passenger",
        "person",
        "people",
        "employee",
        "member",
        "client",
        "guest",
        "patient",
        "student",
        "teacher",
        "driver",
        "owner",
        "contact",
        "staff",
        "agent",
        "traveler",
        "traveller",
        "author",
        "doctor",
        "tenant",
        "buyer",
        "seller",
        "pilot",
        "holder",
        "attendee",
        "applicant",
        "subscriber",
        "reviewer",
        "rider",
    }
)
_PRODUCT_ENTITIES = frozenset(
    {
        "product",
        "item",
        "article",
        "good",
        "goods",
        "merchandise",
        "listing",
        "variant",
    }
)
_PERSON_TOKENS = frozenset(
    {
        "owner",
        "holder",
        "customer",
        "passenger",
        "contact",
        "guest",
        "recipient",
        "person",
        "employee",
        "manager",
        "driver",
        "author",
        "assignee",
        "traveler",
    }
)
_CODE_TOKENS = frozenset(
    {
        "code",
        "sku",
        "reference",
        "ref",
        "confirmation",
        "pnr",
        "serial",
        "coupon",
        "promo",
        "token",
        "voucher",
        "barcode",
        "locator",
        "tracking",
    }
)
_PHRASE_TOKENS = frozenset(
    {
        "description",
        "note",
        "notes",
        "comment",
        "comments",
        "reason",
        "message",
        "summary",
        "bio",
        "details",
        "remarks",
        "memo",
    }
)


def name_tokens(name: str) -> list[str]:
    """The lowercase words of a snake_case identifier."""
    return [t for t in name.lower().split("_") if t]


def _words_in(name: str) -> list[str]:
    """Lowercase words of an identifier (snake_case or CamelCase)."""
    spaced = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name)
    return name_tokens(spaced)


def identifier_words(name: str) -> str:
    """An identifier as lowercase words: ``PaymentMethod`` -> ``payment method``.

    >>> identifier_words("PaymentMethod"), identifier_words("flight_number")
    ('payment method', 'flight number')
    """
    return " ".join(_words_in(name))


# Words whose first letter misleads: a vowel letter read as a consonant sound ("a user",
# "a one-way"), or a silent h ("an hour"). Matched on the lowercase start of the word.
_CONSONANT_SOUND = re.compile(r"^(u[bcfhjkqrst][aeiou]|use|usu|uni|ur[aeiou]|eu|ewe|one\b|once)")
_VOWEL_SOUND = re.compile(r"^(hour|honest|honou?r|heir)")
# Letters said with a leading vowel sound when an abbreviation is spelt out ("an SMS").
_VOWEL_LETTERS = frozenset("aefhilmnorsx")


def indefinite_article(phrase: str) -> str:
    """``a`` or ``an`` for ``phrase``, by the sound of its first word, not its letter.

    >>> [indefinite_article(w) for w in ("user id", "order", "hour", "item", "unit", "SMS")]
    ['a', 'an', 'an', 'an', 'a', 'an']
    >>> [indefinite_article(w) for w in ("umbrella", "European", "payment method", "")]
    ['an', 'a', 'a', 'a']
    """
    word = phrase.strip().split(" ", 1)[0] if phrase.strip() else ""
    if not word:
        return "a"
    if len(word) > 1 and word.isupper():  # an abbreviation is read letter by letter
        return "an" if word[0].lower() in _VOWEL_LETTERS else "a"
    low = word.lower()
    if _VOWEL_SOUND.match(low):
        return "an"
    if low[0] in "aeiou":
        return "a" if _CONSONANT_SOUND.match(low) else "an"
    return "a"


def _vocab_from_name(entity: str, fname: str) -> str:
    """Guess a vocab from a field name (and its entity, for a bare ``name``)."""
    toks = name_tokens(fname)
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
        "fullname",
        "customername",
        "passengername",
    ):
        return "person_name"
    if set(toks) & _CODE_TOKENS:
        return "code"
    if set(toks) & _PHRASE_TOKENS:
        return "phrase"
    if {"title", "label", "name"} & set(toks):
        return "title"
    return "word"


def canonical_vocab(name: str) -> str:
    """The vocabulary a hint names, aliases resolved (``Full_Name`` is ``person_name``)."""
    name = name.strip().lower()
    return _VOCAB_ALIASES.get(name, name)


def vocab_names() -> list[str]:
    """Every name a ``vocab:`` hint may use: the built-in generators, their aliases and
    the shipped vocabulary files, sorted."""
    files = [
        p.name[: -len(".txt")]
        for p in resources.files("graphgen").joinpath("vocab").iterdir()
        if p.name.endswith(".txt")
    ]
    return sorted(KNOWN_VOCABS | set(_VOCAB_ALIASES) | set(files))


def vocab_problem(hint: str) -> str | None:
    """Why ``hint`` names no vocabulary (with the closest name), or None.

    >>> print(vocab_problem("emial"))  # doctest: +ELLIPSIS
    unknown vocabulary 'emial'; did you mean 'email'? (see the vocabularies ...)
    >>> vocab_problem("Email") is None
    True
    """
    from graphgen.suggest import did_you_mean

    name = canonical_vocab(hint)
    if name in KNOWN_VOCABS or vocab_file_exists(name):
        return None
    return (
        f"unknown vocabulary {hint!r}{did_you_mean(hint.strip().lower(), vocab_names())} "
        "(see the vocabularies in docs/domain-language.md)"
    )


def resolve_vocab(entity: EntityDef | str, f: FieldDef) -> str:
    """The vocabulary a string field draws from: its hint, else a guess from its name.

    Returns a member of :data:`KNOWN_VOCABS` or the stem of a shipped vocab file.
    """
    ename = entity if isinstance(entity, str) else entity.name
    if f.vocab:
        hint = canonical_vocab(f.vocab)
        if hint in KNOWN_VOCABS or vocab_file_exists(hint):
            return hint
    return _vocab_from_name(ename, f.name)


# ------------------------------------------------------------------ int / date heuristics

# (tokens, default range) for int fields without declared bounds; first match wins.
_INT_HINTS: tuple[tuple[frozenset[str], tuple[int, int]], ...] = (
    (frozenset({"price", "cost", "fare", "fee", "rent"}), (5, 800)),
    (frozenset({"balance", "credit", "budget", "salary", "limit", "wallet"}), (0, 5000)),
    (
        frozenset({"amount", "total", "payment", "refund", "deposit", "subtotal", "charge"}),
        (10, 1500),
    ),
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
DEPLETABLE = frozenset(
    {
        "stock",
        "quantity",
        "qty",
        "inventory",
        "balance",
        "seats",
        "available",
        "remaining",
        "credit",
        "points",
        "miles",
        "units",
        "capacity",
    }
)


def _int_hint(f: FieldDef) -> tuple[int, int]:
    """A typical range guessed from the field's name, else from its description."""
    for words in (
        set(name_tokens(f.name)) | set(name_tokens(f.vocab or "")),
        set(re.findall(r"[a-z]+", f.description.lower())),
    ):
        for keys, rng in _INT_HINTS:
            if words & keys:
                return rng
    return _DEFAULT_INT


def int_bounds(f: FieldDef) -> tuple[int, int]:
    """A realistic range inside the declared bounds (the declared ones win on conflict)."""
    hlo, hhi = _int_hint(f)
    fmin = None if f.min is None else int(f.min)  # int fields have int bounds
    fmax = None if f.max is None else int(f.max)
    lo = hlo if fmin is None else max(hlo, fmin)
    hi = hhi if fmax is None else min(hhi, fmax)
    if lo > hi:  # the guess misses the declared range entirely
        span = hhi - hlo
        lo = fmin if fmin is not None else hi - span if fmax is None else fmax - span
        hi = fmax if fmax is not None else lo + span
    return lo, hi


# End-of-interval word → start-of-interval word, to pair e.g. check_out with check_in.
_PAIR_WORDS = {
    "end": "start",
    "ends": "starts",
    "arrival": "departure",
    "arrive": "depart",
    "arrives": "departs",
    "out": "in",
    "checkout": "checkin",
    "to": "from",
    "until": "from",
    "close": "open",
    "closes": "opens",
    "closed": "opened",
    "finish": "begin",
    "updated": "created",
    "modified": "created",
    "return": "departure",
    "due": "issued",
    "dropoff": "pickup",
    "last": "first",
}


def pair_start(edef: EntityDef, f: FieldDef) -> str | None:
    """The sibling field that ``f`` should not precede (same type), if any."""
    toks = name_tokens(f.name)
    for i, t in enumerate(toks):
        start = _PAIR_WORDS.get(t)
        if start is None:
            continue
        cand = "_".join([*toks[:i], start, *toks[i + 1 :]])
        other = edef.fields.get(cand)
        if other is not None and other.ty == f.ty and not other.unique:
            return cand
    return None


def is_birth_field(f: FieldDef) -> bool:
    """Whether ``f`` holds a birth date (drawn from :data:`BIRTH_WINDOW`)."""
    toks = set(name_tokens(f.name))
    return bool(toks & {"birth", "dob", "birthday", "birthdate", "born"})


# ------------------------------------------------------------------ string vocabularies

_CODE_CHARS = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"  # no 0/O or 1/I look-alikes


def _clean(s: str) -> str:
    return re.sub(r"[^a-z0-9]", "", s.lower())


def draw_email(rng: random.Random, first: str, last: str) -> str:
    """An email address built from a person's names."""
    f, la = _clean(first) or "user", _clean(last) or "mail"
    local = rng.choice([f"{f}.{la}", f"{f}{la}", f"{f[0]}{la}", f"{f}_{la}", f"{f}.{la[0]}"])
    if rng.random() < 0.6:
        local += str(rng.randint(1, 99))
    return f"{local}@{rng.choice(load_vocab('email_domains'))}"


def draw_username(rng: random.Random, first: str, last: str) -> str:
    """A login name built from a person's names."""
    f, la = _clean(first) or "user", _clean(last) or "name"
    return rng.choice([f"{f[0]}{la}", f"{f}{la[0]}", f"{f}_{la}"]) + str(rng.randint(1, 999))


def draw_time(rng: random.Random) -> str:
    """A time of day ``HH:MM`` in five-minute steps, between 05:00 and 22:55."""
    return f"{rng.randint(5, 22):02d}:{rng.randrange(0, 60, 5):02d}"


def later_time(rng: random.Random, before: str) -> str:
    """A time 45 minutes to 6 hours after ``before`` (capped at 23:59), for end times."""
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


SIMPLE_DRAWERS: dict[str, Callable[[random.Random], str]] = {
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


# Carrier codes for flight numbers beyond the first carrier's (GG).
_CARRIERS = ("GH", "GJ", "GK", "GL", "GM", "GN", "GP", "GQ", "GR", "GS", "GT", "GV", "GW")


def bumper(vocab: str, rng: random.Random) -> Callable[[str, int], str]:
    """How a unique string column makes a clashing value distinct (deterministically)."""
    if vocab == "email":

        def bump_email(v: str, k: int) -> str:
            local, _, dom = v.partition("@")
            return f"{local}.{k}@{dom}"

        return bump_email
    if vocab == "airport_code":
        # More airports than the vocabulary holds: synthesize 3-letter codes.
        return lambda _v, _k: "".join(rng.choice("ABCDEFGHIJKLMNOPQRSTUVWXYZ") for _ in range(3))
    if vocab == "flight_number":
        # More flights than one carrier's 9,900 numbers: another carrier's code. Reached
        # only after the column's own re-draws failed, so a table that fits in GG's
        # numbers draws exactly what it always did.
        return lambda _v, k: f"{_CARRIERS[k % len(_CARRIERS)]}{rng.randint(100, 9999)}"
    if vocab in ("zip", "phone", "code", "time", "seat"):
        simple = SIMPLE_DRAWERS.get(vocab, draw_time)
        return lambda _v, _k: simple(rng)
    return lambda v, k: f"{v} {k}"
