"""Seeded generator of realistic initial states for a domain.

``generate_state(domain, seed)`` fills every table with ``EntityDef.size`` rows (or the
``sizes`` override) whose values respect the schema: enum members, int bounds, ISO dates,
``unique`` fields, and references that always name an existing row. Strings come from
the vocabularies of :mod:`graphgen.vocabulary`.

Determinism: nothing here reads the clock, uuid or the global ``random``. Every column
draws from its own ``random.Random(f"{seed}:{entity}:{field}")`` stream (str seeds are
hashed with sha512, so they do not depend on ``PYTHONHASHSEED``), which also means that
adding a field to a domain does not reshuffle the values of the others.

States are shaped for task generation: references are spread so that most parent rows
have at least one child, every enum member (and both booleans) appears when the table
has room for it, display/givable strings are kept distinct where the vocabulary allows
(so an instruction can name a row unambiguously), and depletable quantities (stock,
balance, seats, ...) are sometimes exactly at their lower bound.

What values are drawn from lives in :mod:`graphgen.vocabulary`; the entities'
``generate:`` rules (derive, require) and ``invariants`` are applied by
:mod:`graphgen.staterules` once every table is drawn, re-drawing violating rows through
:meth:`StateGenerator.redraw`.
"""

from __future__ import annotations

import datetime as _dt
import random
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, TypeVar, overload

from graphgen.decimals import from_units, units
from graphgen.domain import Domain, EntityDef, FieldDef, Key
from graphgen.errors import StateGenError
from graphgen.keys import key_words
from graphgen.limits import MAX_TABLE_SIZE
from graphgen.state import State, shared_rows
from graphgen.statecheck import state_issues
from graphgen.staterules import REQUIRE_TRIES, RuleEngine, policy_problem
from graphgen.today import draw_today, uses_today
from graphgen.types import BOOL, DATE, INT, STR, DecT, EnumT, ListT, OptT, RefT, Ty
from graphgen.vocabulary import (
    BIRTH_WINDOW,
    DATE_WINDOW,
    DEPLETABLE,
    SIMPLE_DRAWERS,
    airport_city,
    bumper,
    draw_email,
    draw_time,
    draw_username,
    int_bounds,
    is_birth_field,
    later_time,
    load_vocab,
    name_tokens,
    pair_start,
    resolve_vocab,
    town_names,
    vocab_file_exists,
)

__all__ = ["ColumnPlan", "StateGenerator", "check_state", "generate_state", "table_sizes"]

H = TypeVar("H", bound=Hashable)

# How often a draw is repeated to dodge a clash before falling back to suffixing.
_RETRIES = 30

# ------------------------------------------------------------------ the generator

# Address parts: a row that refers to a row with the same address field usually repeats
# it (an order ships to its customer's address) — most of the time, not always. Names
# are not copied: a passenger or contact who refers to a user is often someone else.
_CONTACT = frozenset({"street", "address", "city", "zip"})
_COPY_RATE = 0.8
# String kinds where two fields of one row should differ (origin vs destination).
_ROW_DISTINCT = frozenset({"airport_code", "city", "person_name"})


#: The share of rows in which a generated optional (``T | None``) field is None.
NONE_SHARE = 0.25

#: How likely a generated list is to hold 0, 1, 2 or 3 items.
LIST_SIZE_WEIGHTS = (1, 3, 3, 2)


def _list_size(rng: random.Random) -> int:
    """How many items a generated list is to hold (:data:`LIST_SIZE_WEIGHTS`)."""
    return rng.choices(range(len(LIST_SIZE_WEIGHTS)), LIST_SIZE_WEIGHTS)[0]


def _distinct(one: Callable[[], Any], k: int) -> list[Any]:
    """Up to ``k`` distinct values of ``one()``, sorted: a list field's items. It tries
    ``4 * k`` draws, so a narrow element type (a bool) gives fewer."""
    vals: list[Any] = []
    for _ in range(k * 4):
        if len(vals) >= k:
            break
        v = one()
        if v not in vals:
            vals.append(v)
    return sorted(vals)


@dataclass(frozen=True)
class ColumnPlan:
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
    keys: list[Key]
    cols: dict[str, list[Any]] = field(default_factory=dict)
    personas: list[tuple[str, str]] | None = None
    persona_fields: frozenset[str] = frozenset()
    vocabs: dict[str, str] = field(default_factory=dict)
    plans: dict[str, ColumnPlan] = field(default_factory=dict)
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
        self.sizes: dict[str, int] = table_sizes(domain, sizes=sizes)
        self.keys: dict[str, list[Key]] = {}
        self._key_at: dict[str, dict[Key, int]] = {}
        self._tables: dict[str, _Table] = {}
        self._busy: set[tuple[str, str]] = set()
        self._bounds: dict[FieldDef, tuple[int, int]] = {}  # int_bounds, which is slow

    # -- plumbing

    def stream(self, *parts: str) -> random.Random:
        """The random stream named ``parts`` under this generator's seed."""
        # A str seed is hashed with sha512 by random.seed: stable across processes.
        return random.Random(":".join([str(self.seed), *parts]))

    def plans(self, ent: str) -> Mapping[str, ColumnPlan]:
        """How each column of ``ent`` follows others (set up by :meth:`generate`)."""
        return self._tables[ent].plans

    def _positions(self, ent: str) -> dict[Key, int]:
        """Each key of ``ent`` -> its place in :attr:`keys` (made once per entity)."""
        got = self._key_at.get(ent)
        if got is None:
            got = self._key_at[ent] = {k: i for i, k in enumerate(self.keys[ent])}
        return got

    def _where(self, edef: EntityDef, f: FieldDef) -> str:
        return f"{self.domain.source}: entity {edef.name!r}, field {f.name!r}"

    def _data_keys(self, edef: EntityDef) -> list[Key]:
        """Ids of a table whose keys are given by the data: distinct words of the key's
        ``vocab`` word list (seeded), else (or once the list runs out) the readable
        ``make_id`` form."""
        n = self.sizes[edef.name]
        words: list[str] = []
        if edef.key_vocab and (drawn := key_words(edef.key_vocab)) is not None:
            words = drawn
            self.stream(edef.name, edef.key).shuffle(words)
        out: list[Key] = list(words[:n])
        i = 1
        while len(out) < n:
            k = edef.make_id(i)
            if k not in out:
                out.append(k)
            i += 1
        return out

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
            name: self._data_keys(edef)
            if edef.data_key
            else [edef.make_id(i) for i in range(1, self.sizes[name] + 1)]
            for name, edef in self.domain.entities.items()
        }
        self._tables = {}
        for name, edef in self.domain.entities.items():
            t = _Table(edef, self.keys[name])
            for f in edef.fields.values():
                if f.ty == STR or f.ty == OptT(STR):
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
        # Only a domain that reads today() has one (other states keep their bytes); it is
        # drawn from a stream of its own, so no other value of the state changes with it.
        today = None
        if self.domain.today_range is not None or uses_today(self.domain):
            today = draw_today(self.stream("today"), self.domain.today_range)
        if any(e.derive or e.require or e.invariants for e in self.domain.entities.values()):
            # The rules change the rows in place, before the state is handed out.
            rules = RuleEngine(self, State(tables, counters, today))
            rules.derive_all()
            rules.enforce()
            state = State(shared_rows(tables), counters, today)
            problems = check_state(self.domain, state)
            # Kept with the state (State.memo): the dry-run gate of every candidate drawn
            # on it asks again. enforce() returns only once every condition, invariants
            # included, holds on every row (else it raises), so that is the answer.
            broken = policy_problem(self.domain, state, known_clean=True)
            if problems or broken:  # e.g. a derived id that names no row
                raise StateGenError(
                    f"{self.domain.source}: the generate rules produced an "
                    f"invalid state: {'; '.join([*problems[:5], *([broken] if broken else [])])}"
                )
            return state
        # Shared by every candidate drawn on it, so its rows are read-only (SharedRow).
        return State(shared_rows(tables), counters, today)

    def _check_refs(self) -> None:
        for t in self._tables.values():
            if t.n == 0:
                continue
            for f in t.edef.fields.values():
                if isinstance(f.ty, RefT) and not self.keys.get(f.ty.entity):
                    target = f.ty.entity
                    if target not in self.keys:
                        raise StateGenError(
                            f"{self._where(t.edef, f)}: refers to unknown entity {target!r}"
                        )
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

    def _built_column(self, ent: str, fname: str) -> list[Any] | None:
        """A column if it has been built (dependencies broken by a cycle are not)."""
        return self._tables[ent].cols.get(fname)

    def _plan(self, t: _Table, f: FieldDef) -> ColumnPlan:
        edef = t.edef
        names = list(edef.fields)
        earlier = names[: names.index(f.name)]
        vocab = t.vocabs.get(f.name)
        pair = code_src = None
        via: tuple[str, str, str] | None = None
        copy: tuple[str, str] | None = None
        avoid: tuple[str, ...] = ()
        if not f.unique and (f.ty == DATE or vocab == "time"):
            start = pair_start(edef, f)
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
        return ColumnPlan(pair, code_src, via, copy, avoid)

    def _via(self, edef: EntityDef, f: FieldDef, target: str) -> tuple[str, str, str] | None:
        """For ``f`` → Y: another field g → X with Y.h → X (an order's payment method
        should belong to the order's user). None if there is no such diamond."""
        ydef = self.domain.entities.get(target)
        if ydef is None or target == edef.name:
            return None
        for g, gf in edef.fields.items():
            if g == f.name or not isinstance(gf.ty, RefT) or gf.ty.entity in (target, edef.name):
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
        if isinstance(ty, OptT):
            # ``T | None``: a column of T, then about a quarter of the rows absent (from
            # the field's own stream, so the other columns draw as before).
            col = self._column(t, replace(f, ty=ty.inner))
            rng = self.stream(t.edef.name, f.name, "none")
            return [None if rng.random() < NONE_SHARE else v for v in col]
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
        if isinstance(ty, DecT):
            return self._decimal_column(t, f, ty)
        raise StateGenError(f"{self._where(t.edef, f)}: cannot generate values of type {ty.show()}")

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

    def _decimal_column(self, t: _Table, f: FieldDef, ty: DecT) -> list[Any]:
        """Decimals within the bounds, at the scale, in their JSON form (:func:`_decimal_draw`)."""
        draw = _decimal_draw(f, ty, self.stream(t.edef.name, f.name))
        return self._fill(
            t.n, lambda _: draw(), hard=f.unique, soft=False, where=self._where(t.edef, f)
        )

    def _choice_column(self, t: _Table, f: FieldDef, values: list[Any]) -> list[Any]:
        """Enums and bools: every member appears once the table has room for all."""
        n, k = t.n, len(values)
        rng = self.stream(t.edef.name, f.name)
        if f.unique:
            if n > k:
                raise StateGenError(
                    f"{self._where(t.edef, f)}: unique field has only {k} "
                    f"possible values but the table has {n} rows"
                )
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
        rng = self.stream(t.edef.name, f.name)
        lo, hi = int_bounds(f)
        if f.unique:
            if hi - lo + 1 < n:
                if f.max is None:
                    hi = lo + 2 * n
                elif f.min is None:
                    lo = hi - 2 * n
                else:
                    raise StateGenError(
                        f"{self._where(t.edef, f)}: unique field has only "
                        f"{hi - lo + 1} values in [{lo}, {hi}] for {n} rows"
                    )
            return rng.sample(range(lo, hi + 1), n)
        depletable = bool(set(name_tokens(f.name)) & DEPLETABLE)

        def draw(_: int) -> int:
            if depletable and rng.random() < 0.08:
                return lo
            return rng.randint(lo, hi)

        soft = f.givable or f.name == t.edef.display
        return self._fill(n, draw, hard=False, soft=soft and hi - lo + 1 >= 2 * n)

    def _date_column(self, t: _Table, f: FieldDef) -> list[str]:
        n = t.n
        rng = self.stream(t.edef.name, f.name)
        start, end = BIRTH_WINDOW if is_birth_field(f) else DATE_WINDOW
        span = (end - start).days + 1
        if f.unique:
            days = rng.sample(range(max(span, n)), n)
            return [(start + _dt.timedelta(d)).isoformat() for d in days]
        if any(p.pair == f.name for p in t.plans.values()):
            span -= 14  # a start date leaves room for its end date inside the window
        pair = t.plans[f.name].pair
        before_col = self._built_column(t.edef.name, pair) if pair else None
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
            rng = self.stream(t.edef.name, "#persona")
            firsts, lasts = load_vocab("first_names"), load_vocab("last_names")
            t.personas = self._fill(
                t.n, lambda _: (rng.choice(firsts), rng.choice(lasts)), hard=False, soft=True
            )
        return t.personas

    def _mask(self, t: _Table, g: str) -> list[bool]:
        """Which rows copy contact details through ref field ``g`` (shared by all of
        them, so a row copies its customer's whole address or none of it)."""
        if g not in t.masks:
            rng = self.stream(t.edef.name, f"#copy:{g}")
            t.masks[g] = [rng.random() < _COPY_RATE for _ in range(t.n)]
        return t.masks[g]

    def _str_column(self, t: _Table, f: FieldDef) -> list[str]:
        vocab = t.vocabs[f.name]
        rng = self.stream(t.edef.name, f.name)
        draw = self._str_drawer(t, f, vocab, rng)
        plan = t.plans[f.name]
        if plan.copy is not None:
            g, x = plan.copy
            refs, src = self._built_column(t.edef.name, g), self._built_column(x, f.name)
            if refs is not None and src is not None:
                index = {k: i for i, k in enumerate(self.keys[x])}
                mask, fresh = self._mask(t, g), draw

                def draw(i: int) -> str:
                    return str(src[index[refs[i]]]) if mask[i] else fresh(i)

        avoid = [c for g in plan.avoid if (c := self._built_column(t.edef.name, g)) is not None]
        soft = (
            (f.givable or f.name == t.edef.display)
            and vocab not in ("color", "size_label", "time")
            and plan.copy is None
        )
        return self._fill(
            t.n,
            draw,
            hard=f.unique,
            soft=soft,
            bump=bumper(vocab, rng),
            avoid=avoid,
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
            return lambda i: draw_email(rng, *person(i))
        if vocab == "username":
            return lambda i: draw_username(rng, *person(i))
        plan = t.plans.get(f.name, ColumnPlan()) if own_person else ColumnPlan()
        if vocab == "time":
            before = self._built_column(t.edef.name, plan.pair) if plan.pair else None
            if before is not None:
                col = before
                return lambda i: later_time(rng, col[i])
            return lambda _: draw_time(rng)
        if vocab == "city" and plan.code_src:
            codes = self._built_column(t.edef.name, plan.code_src)
            if codes is not None:
                cities = airport_city()
                # one draw per made-up code, as before, so the rest of the state is the
                # same; a made-up code gets a made-up town, so a city keeps few airports
                return lambda i: cities.get(codes[i]) or rng.choice(town_names())
        simple = SIMPLE_DRAWERS.get(vocab)
        if simple is not None:
            return lambda _: simple(rng)
        if vocab_file_exists(vocab):
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
        rng = self.stream(t.edef.name, f.name)
        if f.unique and n > m:
            raise StateGenError(
                f"{self._where(t.edef, f)}: unique reference needs {n} distinct {target} "
                f"rows but there are {m}"
            )
        plan = t.plans[f.name]
        avoid = [c for g in plan.avoid if (c := self._built_column(t.edef.name, g)) is not None]
        groups: dict[Any, list[Key]] | None = None
        gcol: list[Any] | None = None
        if plan.via is not None:
            g, y, h = plan.via
            gcol, hcol = self._built_column(t.edef.name, g), self._built_column(y, h)
            if gcol is not None and hcol is not None:
                groups = {}
                for ykey, xval in zip(self.keys[y], hcol, strict=True):
                    groups.setdefault(xval, []).append(ykey)
        if f.unique:
            return self._unique_refs(t, target, avoid, groups, gcol, rng)
        cover = min(n, m - m // 8)
        pending = rng.sample(targets, cover)  # parents still owed a child, popped from end
        owed = set(pending)
        out: list[Any] = [""] * n
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
            if pick is not None:
                owed.discard(pick)
            out[i] = pick or rng.choice(targets)
        return out

    def _unique_refs(
        self,
        t: _Table,
        target: str,
        avoid: list[list[Any]],
        groups: dict[Any, list[Key]] | None,
        gcol: list[Any] | None,
        rng: random.Random,
    ) -> list[str]:
        """A one-to-one reference (n <= m checked): each target used at most once."""
        targets = self.keys[target]
        used: set[Key] = set()
        out: list[Any] = [""] * t.n
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
        rng = self.stream(t.edef.name, f.name)
        out: list[list[Any]] = []
        if isinstance(elem, RefT):
            targets = self.keys.get(elem.entity)
            if targets is None:
                raise StateGenError(
                    f"{self._where(t.edef, f)}: refers to unknown entity {elem.entity!r}"
                )
            pending = rng.sample(targets, len(targets))
            for i in range(t.n):
                own = t.keys[i] if elem.entity == t.edef.name else None
                room = len(targets) - (own is not None)
                k = min(_list_size(rng), room)
                picked: list[Key] = []
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
            k = _list_size(rng)
            out.append(_distinct(one, k))
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
            lo, hi = int_bounds(f)
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

    # -- repairs (for the generate rules)

    def _list_redraw(
        self, t: _Table, f: FieldDef, elem: Ty, key: Key, rng: random.Random
    ) -> list[Any]:
        """A fresh small sorted set for one row's list ``f``, its size drawn as its
        column's are (a row never lists itself)."""
        k = _list_size(rng)
        one: Callable[[], Any]
        if isinstance(elem, RefT):
            # drawn from the whole key list (a copy per re-draw would cost a pass over
            # the target table); a row of a self-referencing list never lists itself
            targets = self.keys.get(elem.entity, [])
            own = key if elem.entity == t.edef.name else None
            k = min(k, len(targets) - (own is not None))

            def pick() -> Any:
                while True:
                    x = rng.choice(targets)
                    if x != own:
                        return x

            one = pick
        else:
            one = self._elem_drawer(t, f, elem, rng)
        return _distinct(one, k)

    def redraw(
        self,
        ent: str,
        i: int,
        key: str,
        f: FieldDef,
        row: dict[str, Any],
        table: Mapping[str, Mapping[str, Any]],
        rng: random.Random,
        attempt: int,
        tables: Mapping[str, Mapping[str, Mapping[str, Any]]] | None = None,
        rows_where: Callable[[str, str, Any], list[Any] | None] | None = None,
    ) -> Any:
        """A fresh value of ``f`` for row ``key`` (the ``i``-th) of ``ent``, drawn the way
        its column was; ``table`` holds the current rows (for unique fields), ``tables``
        every table's (for references that follow another one, and copied contacts);
        ``rows_where(entity, field, value)``, when given, lists the keys of the rows
        holding ``value`` in table order (None: not indexed, scan), so that following a
        reference does not read the whole target table.

        A reference picks a target consistent with the row's other references when its
        column does (:meth:`_via`: a payment method of the order's user), else any
        target; never the row itself, nor what its earlier same-typed refs name.

        Ints search a little: every third attempt draws from the whole range, the others
        from a window at its low or high end that narrows with each attempt, so one-sided
        conditions (``x.balance <= 1000``, ``... <= x.seats``) are met within a few tries
        while a window still holds all solutions the draw stays uniform over them. The
        last third of the attempts may use the declared bounds beyond the usual range.
        """
        t = self._tables[ent]
        ty = f.ty
        old = row[f.name]
        taken = {r[f.name] for k, r in table.items() if k != key} if f.unique else set()
        plan = t.plans.get(f.name, ColumnPlan())
        if isinstance(ty, RefT):
            targets = self.keys[ty.entity]
            pool = targets
            if plan.via is not None and tables is not None:
                g, y, h = plan.via
                found = rows_where(y, h, row[g]) if rows_where is not None else None
                if found is None:
                    found = [k for k, r in tables[y].items() if r[h] == row[g]]
                pool = found or targets
            banned = taken | {row[g] for g in plan.avoid if g in row}
            if ty.entity == ent and len(targets) > 1:
                banned.add(key)
            at = self._positions(ty.entity) if pool is targets else None
            ok = _Without(pool, banned, at)
            if not ok:
                ok = _Without(targets, banned, self._positions(ty.entity))
            return rng.choice(ok) if ok else old
        if ty == STR and plan.copy is not None and tables is not None:
            g, x = plan.copy
            src = tables[x].get(row[g])
            if src is not None and self._mask(t, g)[i]:
                return src[f.name]
        if isinstance(ty, ListT):
            return self._list_redraw(t, f, ty.elem, key, rng)
        if isinstance(ty, EnumT):
            if f.unique:
                free = [v for v in ty.values if v not in taken]
                return rng.choice(free) if free else old
            return rng.choices(ty.values, [2.0] + [1.0] * (len(ty.values) - 1))[0]
        if ty == BOOL:
            return rng.random() < 0.5
        source = row.get(plan.pair) if plan.pair else None  # the start this field follows
        if ty == INT:
            lo, hi = self._bounds.get(f) or self._bounds.setdefault(f, int_bounds(f))
            if attempt > REQUIRE_TRIES * 2 // 3:
                lo = int(f.min) if f.min is not None else lo
                hi = int(f.max) if f.max is not None else hi
            if attempt % 3 != 1:
                width = max(1, int((hi - lo + 1) * 0.7 ** ((attempt + 1) // 3)))
                if rng.random() < 0.5:
                    hi = lo + width - 1
                else:
                    lo = hi - width + 1

            def draw() -> Any:
                return rng.randint(lo, hi)
        elif ty == DATE:
            start, end = BIRTH_WINDOW if is_birth_field(f) else DATE_WINDOW
            span = (end - start).days + 1
            if any(p.pair == f.name for p in t.plans.values()):
                span -= 14  # a start date leaves room for its end date

            def draw() -> Any:
                if isinstance(source, str):
                    b = _dt.date.fromisoformat(source)
                    return min(b + _dt.timedelta(rng.randint(1, 14)), max(end, b)).isoformat()
                return (start + _dt.timedelta(rng.randrange(span))).isoformat()
        elif isinstance(ty, DecT):
            draw = _decimal_draw(f, ty, rng)
        elif ty == STR:
            vocab = t.vocabs.get(f.name) or resolve_vocab(t.edef, f)
            code = row.get(plan.code_src) if plan.code_src else None
            one = self._str_drawer(t, f, vocab, rng)

            def draw() -> Any:
                if vocab == "time" and isinstance(source, str):
                    return later_time(rng, source)
                if vocab == "city" and isinstance(code, str) and code in airport_city():
                    return airport_city()[code]
                return one(i)
        else:
            return old
        avoid = [row[g] for g in plan.avoid if g in row]
        for _ in range(_RETRIES):
            v = draw()
            if v not in taken and v not in avoid:
                return v
        return old


def _decimal_draw(f: FieldDef, ty: DecT, rng: random.Random) -> Callable[[], str]:
    """Draws of decimal field ``f``: within its bounds (0 to 1000 where none are declared),
    at the scale, in JSON form ("12.50"); whole units are drawn as often as any other
    amount, as prices are."""
    unit = 10**ty.scale
    lo = units(f.min if f.min is not None else 0, ty.scale)
    hi = units(f.max if f.max is not None else max(1000, (f.min or 0) + 1000), ty.scale)
    hi = max(lo, hi)

    def draw() -> str:
        n = rng.randint(lo, hi)
        if unit > 1 and rng.random() < 0.5:
            n = min(hi, max(lo, n - n % unit))  # a whole amount
        return from_units(n, ty.scale)

    return draw


class _Without(Sequence[Any]):
    """``[x for x in items if x not in banned]`` without building it: the same length
    and items, so ``rng.choice`` on it draws what it draws on the list. ``at`` maps each
    item to its place in ``items`` (for a whole table's keys); without it the items are
    looked through once."""

    def __init__(
        self, items: Sequence[Any], banned: set[Any], at: Mapping[Any, int] | None = None
    ) -> None:
        self._items = items
        if at is None:
            at = {x: i for i, x in enumerate(items) if x in banned}
        self._skip = sorted(i for b in banned if (i := at.get(b)) is not None)

    def __len__(self) -> int:
        return len(self._items) - len(self._skip)

    @overload
    def __getitem__(self, i: int) -> Any: ...
    @overload
    def __getitem__(self, i: slice) -> list[Any]: ...
    def __getitem__(self, i: int | slice) -> Any:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        for s in self._skip:  # the banned items before it push it along
            if s <= i:
                i += 1
        return self._items[i]


def _choose_not(rng: random.Random, pool: list[Key], banned: set[Key]) -> Key | None:
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


# ------------------------------------------------------------------ public API


def table_sizes(
    domain: Domain, scale: int = 1, sizes: Mapping[str, int] | None = None
) -> dict[str, int]:
    """The rows of every table: ``scale`` times its ``size:``, or as ``sizes`` says.

    Raises :class:`StateGenError` for an entity the domain does not have and for a size
    outside 0 to :data:`~graphgen.limits.MAX_TABLE_SIZE`.

    >>> from graphgen.domains import load_builtin
    >>> table_sizes(load_builtin("mock"), 10, {"Payment": 3})
    {'Account': 60, 'Payment': 3}
    """
    extra = sorted(set(sizes or {}) - set(domain.entities))
    if extra:
        raise StateGenError(
            f"{domain.source}: sizes name unknown entities {', '.join(extra)} "
            f"(entities: {', '.join(domain.entities)})"
        )
    if isinstance(scale, bool) or not isinstance(scale, int) or scale < 1:
        raise StateGenError(
            f"{domain.source}: the scale must be an int of at least 1, not {scale!r}"
        )
    out: dict[str, int] = {}
    for name, edef in domain.entities.items():
        n = (sizes or {}).get(name, edef.size * scale)
        if isinstance(n, bool) or not isinstance(n, int) or not 0 <= n <= MAX_TABLE_SIZE:
            raise StateGenError(
                f"{domain.source}: size of {name} must be an int from 0 to "
                f"{MAX_TABLE_SIZE}, not {n!r}"
            )
        out[name] = n
    return out


def generate_state(domain: Domain, seed: int, sizes: Mapping[str, int] | None = None) -> State:
    """A realistic, schema-valid state of ``domain``; same seed ⇒ identical state.

    ``sizes`` overrides the per-entity row counts (``EntityDef.size``). Rows are keyed
    ``make_id(1..n)`` and each counter is ``n + 1``. Every ``generate.derive`` field
    holds its expression's value and every ``generate.require`` condition and every
    invariant holds on every row. Raises :class:`StateGenError` when the schema or those
    rules cannot be satisfied (e.g. a required reference into an empty table, a require
    no re-draw can meet).
    """
    return StateGenerator(domain, seed, sizes).generate()


def check_state(domain: Domain, state: State) -> list[str]:
    """Schema problems of ``state`` (empty when valid): tables, keys, counters, field
    types, bounds, list form, references and uniques, one line each
    (:func:`graphgen.statecheck.state_issues`)."""
    return [str(p) for p in state_issues(domain, state)]
