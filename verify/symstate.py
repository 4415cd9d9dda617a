"""The symbolic state: per key an ``exists`` Bool and per field a term, and its readers.

A list field is held, per row, as one membership Bool per element of the field's finite
universe (list fields are sets kept sorted, so membership determines the list).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import z3

from graphgen.domain import Key
from graphgen.state import State
from graphgen.types import BOOL, ListT, OptT, RefT, Ty
from graphgen.verify.terms import (
    LIT,
    EncodeError,
    Term,
    and_,
    eq,
    fresh_bool,
    fresh_int,
    int_const,
    int_val,
    is_t,
    ite,
    or_,
)
from graphgen.verify.universe import OUT, Universe
from graphgen.verify.values import ListVal, SymVal

Cell = Any  # a scalar Term, or a list of membership Bools for a list field


@dataclass
class SymState:
    """Per entity: ``exists[i]`` and ``cells[field][i]`` for universe key ``i``, and
    ``created``: how many rows were created so far (an Int term)."""

    exists: dict[str, list[Term]]
    cells: dict[str, dict[str, list[Cell]]]
    created: dict[str, Term]

    def copy(self) -> SymState:
        """A shallow copy: lists are replaced, never mutated, by updates."""
        return SymState(
            dict(self.exists), {e: dict(c) for e, c in self.cells.items()}, dict(self.created)
        )

    @classmethod
    def from_state(cls, uni: Universe, st: State) -> SymState:
        """The constant encoding of a concrete state (restricted to the universe)."""
        exists: dict[str, list[Term]] = {}
        cells: dict[str, dict[str, list[Cell]]] = {}
        for ent, edef in uni.domain.entities.items():
            table = st.tables.get(ent, {})
            keys = uni.keys[ent]
            exists[ent] = [LIT.TRUE if k in table else LIT.FALSE for k in keys]
            cells[ent] = {}
            for f, fd in edef.fields.items():
                col: list[Cell] = []
                for k in keys:
                    row = table.get(k)
                    col.append(_const_cell(uni, ent, k, f, fd.ty, row[f] if row else None))
                cells[ent][f] = col
        return cls(exists, cells, {e: uni.index_term(0) for e in uni.domain.entities})

    @classmethod
    def fresh(cls, uni: Universe, tag: str) -> SymState:
        """A fully symbolic state (every cell a fresh constant)."""
        exists: dict[str, list[Term]] = {}
        cells: dict[str, dict[str, list[Cell]]] = {}
        for ent, edef in uni.domain.entities.items():
            keys = uni.keys[ent]
            exists[ent] = [fresh_bool(f"{tag}.{ent}.ex") for _ in keys]
            cells[ent] = {}
            for f, fd in edef.fields.items():
                if isinstance(fd.ty, ListT):
                    n = len(uni.field_elements(ent, f))
                    cells[ent][f] = [
                        [fresh_bool(f"{tag}.{ent}.{f}") for _ in range(n)] for _ in keys
                    ]
                else:
                    cells[ent][f] = [uni.z3_var(fd.ty, f"{tag}.{ent}.{f}") for _ in keys]
        created = {e: fresh_int(f"{tag}.{e}.created") for e in uni.domain.entities}
        return cls(exists, cells, created)

    def layout(self) -> list[tuple[str, str, int]]:
        """Per position of :meth:`terms`: (entity, field, row index); field ``'*'`` is
        the row's existence and ``'#'`` (row -1) the created-rows counter."""
        out: list[tuple[str, str, int]] = []
        for ent in sorted(self.exists):
            out.extend((ent, "*", i) for i in range(len(self.exists[ent])))
            for f in sorted(self.cells[ent]):
                for i, c in enumerate(self.cells[ent][f]):
                    if isinstance(c, list):
                        out.extend((ent, f, i) for _ in c)
                    else:
                        out.append((ent, f, i))
        out.extend((e, "#", -1) for e in sorted(self.created))
        return out

    def with_fresh(self, positions: Iterable[int], tag: str) -> SymState:
        """This state with a fresh constant at each of ``positions`` (of :meth:`terms`)."""
        terms = self.terms()
        for i in positions:
            t = terms[i]
            terms[i] = fresh_bool(tag) if isinstance(t, z3.BoolRef) else fresh_int(tag)
        return self.rebuild(terms)

    def terms(self) -> list[Term]:
        """Every term of the state in a fixed order (pairs with another state's)."""
        out: list[Term] = []
        for ent in sorted(self.exists):
            out.extend(self.exists[ent])
            for f in sorted(self.cells[ent]):
                for c in self.cells[ent][f]:
                    if isinstance(c, list):
                        out.extend(c)
                    else:
                        out.append(c)
        out.extend(self.created[e] for e in sorted(self.created))
        return out

    def rebuild(self, terms: Sequence[Term]) -> SymState:
        """A state of the same shape whose terms are ``terms`` (the order of :meth:`terms`)."""
        it = iter(terms)
        exists: dict[str, list[Term]] = {}
        cells: dict[str, dict[str, list[Cell]]] = {}
        for ent in sorted(self.exists):
            exists[ent] = [next(it) for _ in self.exists[ent]]
            cells[ent] = {}
            for f in sorted(self.cells[ent]):
                col: list[Cell] = []
                for c in self.cells[ent][f]:
                    col.append([next(it) for _ in c] if isinstance(c, list) else next(it))
                cells[ent][f] = col
        created = {e: next(it) for e in sorted(self.created)}
        return SymState(exists, cells, created)

    def decode(self, uni: Universe, value: Any = None) -> State:
        """The concrete state (the universe's rows only). ``value`` maps a term to a
        literal term (a model's ``eval``); by default terms are simplified."""
        value_of = value or (lambda t: z3.simplify(t))
        tables: dict[str, dict[Key, dict[str, Any]]] = {}
        counters: dict[str, int] = {}
        for ent, edef in uni.domain.entities.items():
            rows: dict[Key, dict[str, Any]] = {}
            for i, k in enumerate(uni.keys[ent]):
                if not is_t(value_of(self.exists[ent][i])):
                    continue
                row: dict[str, Any] = {}
                for f, fd in edef.fields.items():
                    c = self.cells[ent][f][i]
                    if isinstance(fd.ty, ListT):
                        el = uni.field_elements(ent, f)
                        row[f] = [el[j] for j, m in enumerate(c) if is_t(value_of(m))]
                    else:
                        row[f] = uni.decode_value(fd.ty, value_of(c))
                rows[k] = row
            tables[ent] = rows
            n = int_const(value_of(self.created[ent]))
            counters[ent] = uni.counter0[ent] + (n or 0)
        return State(tables, counters, uni.today)


def _const_cell(uni: Universe, ent: str, key: Key, f: str, ty: Ty, v: Any) -> Cell:
    if isinstance(ty, ListT):
        el = uni.field_elements(ent, f)
        if v is None:
            return [LIT.FALSE] * len(el)
        if not isinstance(v, list) or list(v) != sorted(set(v)):
            raise EncodeError(
                f"{ent} {key!r} {f}: a list field must be a sorted list without "
                f"repeats (lists are sets kept sorted), got {v!r}"
            )
        vs = set(v)
        if not vs <= set(el):
            raise EncodeError(
                f"{ent} {key!r} {f}: items {sorted(vs - set(el))!r} are outside "
                f"the field's element universe"
            )
        return [LIT.TRUE if x in vs else LIT.FALSE for x in el]
    if v is None and not isinstance(ty, OptT):  # no row here: any value does, never read
        return LIT.FALSE if ty == BOOL else uni.index_term(0)
    t = uni.encode_value(ty, v)
    if t is None:
        if isinstance(ty, RefT) or (isinstance(ty, OptT) and isinstance(ty.inner, RefT)):
            return int_val(OUT)
        raise EncodeError(f"{ent} {key!r} {f}: value {v!r} is not a valid {ty.show()}")
    return t


# ------------------------------------------------------------------ reading the state


def exists_at(
    uni: Universe, st: SymState, ent: str, key: Term, candidates: Sequence[int] | None = None
) -> Term:
    """Does a row of ``ent`` with key ``key`` exist? ``candidates``: the only keys ``key``
    can be when it matters (default: the live keys; any other key has no row)."""
    col = st.exists[ent]
    c = int_const(key)
    if c is not None:
        return col[c] if 0 <= c < len(col) else LIT.FALSE
    idx = uni.live_indices(ent) if candidates is None else candidates
    return _kept(
        uni, col, key, idx, lambda: or_(*(and_(eq(key, uni.index_term(i)), col[i]) for i in idx))
    )


def _kept(uni: Universe, col: Sequence[Any], key: Term, idx: Sequence[int], read: Any) -> Any:
    """``read()``, the read of column ``col`` at ``key`` over the rows ``idx``, built once
    per universe (:attr:`Universe.reads`): the tools of one unrolling read the same
    cells at the same argument slots. The column and key are kept with it, so that the
    ids in the memo's key stay theirs."""
    memo = (id(col), key.ast.value, tuple(idx))
    hit = uni.reads.get(memo)
    if hit is not None:
        return hit[2]
    out = read()
    uni.reads[memo] = (col, key, out)
    return out


def select(
    uni: Universe,
    col: Sequence[Term],
    key: Term,
    candidates: Sequence[int] | None = None,
    keep: bool = True,
) -> Term:
    """``col[key]``; an arbitrary value when ``key`` is none of ``candidates`` (default: every
    position), which callers flag as an error (the row does not exist). ``keep``: keep
    it in ``uni.reads`` for the next read of this column at this key (not for a column
    the caller builds afresh each time, which no later read would find)."""
    c = int_const(key)
    if c is not None:
        return col[c] if 0 <= c < len(col) else col[0] if col else uni.index_term(0)
    idx = range(len(col)) if candidates is None else candidates
    if not idx:
        return col[0] if col else uni.index_term(0)

    def read() -> Term:
        out = col[idx[-1]]
        for i in reversed(idx[:-1]):
            out = ite(eq(key, uni.index_term(i)), col[i], out)
        return out

    return _kept(uni, col, key, idx, read) if keep else read()


def read_field(
    uni: Universe,
    st: SymState,
    ent: str,
    key: Term,
    f: str,
    candidates: Sequence[int] | None = None,
) -> SymVal:
    """The value of field ``f`` of row ``key`` (a ListVal for list fields); ``candidates`` as
    for :func:`exists_at`."""
    fd = uni.domain.entities[ent].fields[f]
    col = st.cells[ent][f]
    idx = uni.live_indices(ent) if candidates is None else candidates
    if isinstance(fd.ty, ListT):
        terms = uni.field_element_terms(ent, f)
        if not col:
            return ListVal([])
        n = len(terms)
        c = int_const(key)
        if c is not None:
            mem = col[c] if 0 <= c < len(col) else [LIT.FALSE] * n
        else:
            # one read per item position, each of a column made here: kept whole
            mem = _kept(
                uni,
                col,
                key,
                idx,
                lambda: [
                    select(uni, [row[j] for row in col], key, idx, keep=False) for j in range(n)
                ],
            )
        return ListVal([(mem[j], terms[j]) for j in range(n)])
    if not col:
        return LIT.FALSE if fd.ty == BOOL else uni.index_term(0)
    return select(uni, col, key, idx)
