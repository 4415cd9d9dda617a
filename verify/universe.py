"""The finite world an encoding ranges over, and the codec between Python values and terms.

A :class:`Universe` fixes, per entity, the keys that can ever matter (rows of the,
usually sliced, concrete state, ids that creates can make, ids mentioned anywhere), and
the finite, sorted set of strings that can occur. Scalars are encoded as:

* ``int``           → z3 Int;
* ``bool``          → z3 Bool;
* ``date``          → z3 Int, the day ordinal (:func:`date_ordinal`; ISO strings sort as
  their ordinals do, and consecutive days are consecutive ints);
* ``str``           → z3 Int, the index in the sorted string table (order preserving);
* enum              → z3 Int, the index of the member;
* ``E`` id (RefT)   → z3 Int, the index in E's sorted key list (int ids sorted as
  numbers); :data:`OUT` (-1) for an id outside the universe (such an id never names a
  row).

Reads and writes through a symbolic key only look at the keys it can be: by default the
*live* keys (rows of the state the universe was built from and ids creates make; no
other key ever names a row), narrower with :class:`KeyBounds` from a value-flow
analysis. List fields can likewise be given the items they can ever hold
(:meth:`Universe.field_elements`).
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from typing import Any, Protocol

from graphgen import ir
from graphgen.decimals import dec_text, parse_decimal, places
from graphgen.domain import Domain, Key, per_domain
from graphgen.keys import key_order, next_counter
from graphgen.parse import is_iso_date
from graphgen.state import State
from graphgen.today import today_of_state, uses_today
from graphgen.types import BOOL, DATE, INT, STR, DecT, EnumT, ListT, NoneT, OptT, RefT, Ty
from graphgen.verify.terms import (
    LIT,
    EncodeError,
    Term,
    fresh_bool,
    fresh_int,
    int_const,
    int_val,
    is_t,
)

OUT = -1  # the index of an id outside the universe: it never names a row
# ``None`` of every optional type (``T | None``): an Int far below any index, day number
# or int the data and the limits allow (ints have at most MAX_INT_DIGITS digits), so a
# present value never equals it. See docs/verify.md ("Optional values").
NONE_VALUE = -(10**30)


def date_ordinal(iso: str) -> int:
    """The day number of ISO date ``iso``: the one integer every z3 encoding of a date uses
    (the symbolic state here and the precondition check in :mod:`graphgen.verify.satcheck`),
    so consecutive days are consecutive integers and date order is integer order."""
    return _dt.date.fromisoformat(iso).toordinal()


_MAX_ORDINAL = _dt.date.max.toordinal()


def ordinal_date(n: int) -> str:
    """The ISO date of day number ``n`` (the inverse of :func:`date_ordinal`)."""
    return _dt.date.fromordinal(n).isoformat()


class KeyBounds(Protocol):
    """What a value-flow analysis (:func:`graphgen.verify.slicing.analyze_flow`) proved about the
    keys chains can use: the encoding then reads and writes only those rows' cells.
    Exact whenever the analysis is sound, since a key outside the bound is never the
    value of an evaluation that counts (see :mod:`graphgen.verify.slicing`)."""

    def keys_of(self, e: ir.Expr) -> frozenset[Key] | None:
        """Every key ``e`` (an id expression reading no loop variable) can evaluate to
        in a call with known arguments on a reachable state; None if not bounded."""

    def param_keys(self, tool: str, p: Any) -> frozenset[Key] | None:
        """Every key id parameter ``p`` of ``tool`` can be given (known ids)."""


def _index(n: int, size: int, ty: Ty) -> int:
    """``n`` if it indexes a universe of ``size`` values of ``ty``; else EncodeError."""
    if not 0 <= n < size:
        raise EncodeError(f"{n} is no {ty.show()} of the universe")
    return n


@dataclass
class Universe:
    """The finite world an encoding ranges over, and the value codec."""

    domain: Domain
    keys: dict[str, list[Key]]
    strings: list[str]
    dates: list[str]
    ints: list[int]
    counter0: dict[str, int]
    created: dict[str, list[Key]]  # entity → ids the 0th, 1st, ... create would make
    live: dict[str, list[int]] = field(default_factory=dict)
    bounds: KeyBounds | None = None
    list_elements: dict[tuple[str, str], list[Any]] = field(default_factory=dict)
    _field_terms: dict[tuple[str, str], list[Term]] = field(default_factory=dict)
    index: dict[str, dict[Key, int]] = field(default_factory=dict)
    str_index: dict[str, int] = field(default_factory=dict)
    _index_terms: list[Term] = field(default_factory=list)
    _candidate_cache: dict[int, tuple[ir.Expr, list[int]]] = field(default_factory=dict)
    _live_set: dict[str, set[int]] = field(default_factory=dict)
    # graphgen.verify.strings: string terms that are case mappings of another (pointer →
    # (term, base, mappings)), and the tables of string operations computed so far
    str_mapped: dict[int, tuple[Term, Term, tuple[str, ...]]] = field(default_factory=dict)
    str_tables: dict[Any, list[tuple[tuple[int, ...], Any]]] = field(default_factory=dict)
    # graphgen.verify.symstate: a column read at a key term, kept per (column, key,
    # candidates) with the column and key it was read from (their ids stay theirs)
    reads: dict[tuple[int, int, Any], tuple[Any, Term, Any]] = field(default_factory=dict)
    # The state's today (graphgen.today; None: the default date), a constant here: no
    # call changes it, so one value serves every step of a chain.
    today: str | None = None

    def __post_init__(self) -> None:
        self.index = {e: {k: i for i, k in enumerate(ks)} for e, ks in self.keys.items()}
        if not self.live:
            self.live = {e: list(range(len(ks))) for e, ks in self.keys.items()}
        self.str_index = {s: i for i, s in enumerate(self.strings)}
        top = max([len(self.strings), *(len(k) for k in self.keys.values()), 8])
        self._index_terms = [int_val(i) for i in range(top + 1)]

    @classmethod
    def build(
        cls,
        domain: Domain,
        state: State,
        creates: Mapping[str, int] | None = None,
        extra: Iterable[tuple[Ty, Any]] = (),
    ) -> Universe:
        """The universe of ``state`` plus ``creates[E]`` future ids of E and ``extra``
        typed values (givens, arguments, goal values) that must be representable."""
        refs: dict[str, set[Key]] = {e: set() for e in domain.entities}
        strings: set[str] = set()
        dates: set[str] = set()
        ints: set[int] = set()

        def add(ty: Ty, v: Any) -> None:
            if isinstance(ty, OptT):
                if v is not None:
                    add(ty.inner, v)
            elif isinstance(ty, ListT):
                if isinstance(v, list):
                    for x in v:
                        add(ty.elem, x)
            elif isinstance(ty, RefT):
                if is_key(v) and ty.entity in refs:
                    refs[ty.entity].add(v)
            elif ty == STR:
                if isinstance(v, str):
                    strings.add(v)
            elif ty == DATE:
                if isinstance(v, str) and is_iso_date(v):
                    dates.add(v)
            elif ty == INT and isinstance(v, int) and not isinstance(v, bool):
                ints.add(v)

        for ent, edef in domain.entities.items():
            for key, row in state.tables.get(ent, {}).items():
                refs[ent].add(key)
                for f, fd in edef.fields.items():
                    if f in row:
                        add(fd.ty, row[f])
        for ty, v in tool_literals(domain):
            add(ty, v)
        for ty, v in extra:
            add(ty, v)
        # texts the tools compute from literals, and the case mappings they apply, are
        # strings of the table too (see graphgen.verify.strings)
        from graphgen.verify.strings import close, closure_ops, constant_texts

        if state.today is not None or uses_today(domain):
            dates.add(today_of_state(state))
        strings |= constant_texts(domain)
        strings = close(strings, closure_ops(domain))
        created: dict[str, list[Key]] = {}
        counter0 = {
            e: next_counter(d, state.tables.get(e, {}), int(state.counters.get(e, 1)))
            for e, d in domain.entities.items()
        }
        for ent, edef in domain.entities.items():
            n_new = int((creates or {}).get(ent, 0))
            created[ent] = [edef.make_id(counter0[ent] + i) for i in range(n_new)]
            refs[ent].update(created[ent])
        # Int keys sort numerically, so index order is id order (the order comprehensions
        # visit rows in). A table's ids are all of one type; a value of the other type
        # (a stray given) never names a row and sorts after them.
        keys = {e: sorted(r, key=key_order) for e, r in refs.items()}
        live = {}
        for ent, ks in keys.items():
            table = state.tables.get(ent, {})
            made = set(created[ent])
            live[ent] = [i for i, k in enumerate(ks) if k in table or k in made]
        return cls(
            domain,
            keys,
            sorted(strings),
            sorted(dates),
            sorted(ints),
            counter0,
            created,
            live,
            today=state.today,
        )

    # -------------------------------------------------------------- codec

    def index_term(self, i: int) -> Term:
        """A cached IntVal."""
        if 0 <= i < len(self._index_terms):
            return self._index_terms[i]
        return int_val(i)

    def encode_value(self, ty: Ty, v: Any) -> Term | None:
        """The term of Python value ``v`` at type ``ty``; None if it cannot occur here."""
        if isinstance(ty, OptT | NoneT):
            if v is None:
                return int_val(NONE_VALUE)
            return self.encode_value(ty.inner, v) if isinstance(ty, OptT) else None
        if ty == INT:
            ok = isinstance(v, int) and not isinstance(v, bool)
            return int_val(v) if ok else None
        if ty == BOOL:
            return (LIT.TRUE if v else LIT.FALSE) if isinstance(v, bool) else None
        if ty == DATE:
            return int_val(date_ordinal(v)) if isinstance(v, str) and is_iso_date(v) else None
        if ty == STR:
            i = self.str_index.get(v) if isinstance(v, str) else None
            return None if i is None else self.index_term(i)
        if isinstance(ty, EnumT):
            return self.index_term(ty.values.index(v)) if v in ty.values else None
        if isinstance(ty, RefT):
            i = self.index[ty.entity].get(v) if is_key(v) else None
            return None if i is None else self.index_term(i)
        if isinstance(ty, DecT):  # the scaled integer (see graphgen.verify.numbers)
            d = v if isinstance(v, Decimal) else parse_decimal(v)
            if d is None or places(d) > ty.scale:
                return None
            return int_val(int(d.scaleb(ty.scale)))
        return None

    def encode_arg(self, ty: Ty, v: Any) -> Term:
        """An argument's term; an id outside the universe becomes :data:`OUT`."""
        t = self.encode_value(ty, v)
        if t is not None:
            return t
        if isinstance(ty, RefT) or (isinstance(ty, OptT) and isinstance(ty.inner, RefT)):
            return int_val(OUT)
        raise EncodeError(f"value {v!r} of type {ty.show()} is outside the universe")

    def decode_value(self, ty: Ty, t: Term) -> Any:
        """The Python value of a literal term ``t`` at type ``ty``."""
        if ty == BOOL:
            return bool(is_t(t))
        n = int_const(t)
        if n is None:
            raise EncodeError(f"not a literal: {t}")
        if isinstance(ty, OptT | NoneT):
            if n == NONE_VALUE or isinstance(ty, NoneT):
                return None
            return self.decode_value(ty.inner, t)
        if ty == INT:
            return n
        if ty == DATE:
            if not 1 <= n <= _MAX_ORDINAL:  # e.g. an unchecked sum on a failing path
                raise EncodeError(f"day number {n} is no date")
            return ordinal_date(n)
        # An index outside the universe (None's sentinel read as a narrowed value on a
        # path whose checks fail) is no value: refused, never read from the end.
        if ty == STR:
            return self.strings[_index(n, len(self.strings), ty)]
        if isinstance(ty, EnumT):
            return ty.values[_index(n, len(ty.values), ty)]
        if isinstance(ty, RefT):
            if n < 0:  # OUT (or None's sentinel): no row
                return None
            keys = self.keys[ty.entity]
            return keys[_index(n, len(keys), ty)]
        if isinstance(ty, DecT):
            try:
                return dec_text(Decimal(n).scaleb(-ty.scale), ty.scale)
            except InvalidOperation:  # past Decimal's precision: arithmetic on None's sentinel
                raise EncodeError(f"{n} is no {ty.show()}") from None
        raise EncodeError(f"cannot decode a {ty.show()}")

    def elements(self, ty: Ty) -> list[Any]:
        """The finite, sorted element universe of list items of type ``ty``."""
        if isinstance(ty, RefT):
            return self.keys[ty.entity]
        if ty == STR:
            return self.strings
        if ty == DATE:
            return self.dates
        if ty == INT:
            return self.ints
        if ty == BOOL:
            return [False, True]
        if isinstance(ty, EnumT):
            return sorted(ty.values)
        raise EncodeError(f"no element universe for {ty.show()}")

    def field_elements(self, ent: str, f: str) -> list[Any]:
        """The sorted element universe of list field ``ent.f``: :attr:`list_elements` when
        the field has one (the items a value-flow analysis proved the field can ever
        hold), else every element of its item type."""
        hit = self.list_elements.get((ent, f))
        if hit is not None:
            return hit
        ty = self.domain.entities[ent].fields[f].ty
        assert isinstance(ty, ListT)
        return self.elements(ty.elem)

    def field_element_terms(self, ent: str, f: str) -> list[Term]:
        """Terms of :meth:`field_elements`, in the same order."""
        hit = self._field_terms.get((ent, f))
        if hit is None:
            ty = self.domain.entities[ent].fields[f].ty
            assert isinstance(ty, ListT)
            hit = []
            for v in self.field_elements(ent, f):
                t = self.encode_value(ty.elem, v)
                assert t is not None
                hit.append(t)
            self._field_terms[(ent, f)] = hit
        return hit

    def z3_var(self, ty: Ty, name: str) -> Term:
        """A fresh z3 constant for a scalar of type ``ty``."""
        return fresh_bool(name) if ty == BOOL else fresh_int(name)

    # -------------------------------------------------------------- key candidates

    def live_indices(self, ent: str) -> list[int]:
        """Indices of the keys whose row can exist in some reachable state: rows of the
        state the universe was built from and ids creates make. Every other key (an id a
        row refers to, a given id) names no row now and none can appear there later."""
        return self.live.get(ent, [])

    def key_candidates(self, e: ir.Expr, ent: str) -> list[int]:
        """The live keys key expression ``e`` can name (see :class:`KeyBounds`)."""
        if self.bounds is None:
            return self.live_indices(ent)
        hit = self._candidate_cache.get(id(e))
        if hit is not None and hit[0] is e:
            return hit[1]
        keys = self.bounds.keys_of(e)
        out = self.live_indices(ent) if keys is None else self._live_among(ent, keys)
        self._candidate_cache[id(e)] = (e, out)
        return out

    def param_candidates(self, tool: str, p: Any) -> list[int]:
        """The live keys an id parameter can be (see :class:`KeyBounds`)."""
        ent = p.ty.entity
        if self.bounds is None:
            return self.live_indices(ent)
        keys = self.bounds.param_keys(tool, p)
        return self.live_indices(ent) if keys is None else self._live_among(ent, keys)

    def _live_among(self, ent: str, keys: Iterable[Key]) -> list[int]:
        idx = self.index[ent]
        ok = self._live_set.setdefault(ent, set(self.live_indices(ent)))
        return sorted(i for k in keys if (i := idx.get(k)) is not None and i in ok)


def is_key(v: object) -> bool:
    """A value that can be a row id: a str, or an int for ``type: int`` keys."""
    return isinstance(v, str) or (isinstance(v, int) and not isinstance(v, bool))


@per_domain
def tool_literals(domain: Domain) -> tuple[tuple[Ty, Any], ...]:
    """Every literal the tools' expressions hold, with its type (once per domain: each
    universe needs them)."""
    return tuple(
        (n.ty, n.value)
        for tool in domain.tools.values()
        for e in tool.expressions()
        for n in ir.walk(e)
        if isinstance(n, ir.Lit)
    )
