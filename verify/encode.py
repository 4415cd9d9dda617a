"""The z3 encoding of the domain IR: symbolic states, expressions and tool calls.

A :class:`Universe` fixes a finite world: per entity the keys that can ever matter (rows
of the, usually sliced, concrete state, ids that creates can make, ids mentioned
anywhere), and the finite, sorted set of strings that can occur. Values are encoded as:

* ``int``           → z3 Int;
* ``bool``          → z3 Bool;
* ``date``          → z3 Int, the day ordinal (ISO strings sort as their ordinals do);
* ``str``           → z3 Int, the index in the sorted string table (order preserving);
* enum              → z3 Int, the index of the member;
* ``E`` id (RefT)   → z3 Int, the index in E's sorted key list; :data:`OUT` (-1) for an
  id outside the universe (such an id never names a row);
* ``list[T]``       → in a state, one membership Bool per element of T's finite universe
  (list fields are sets kept sorted, so membership determines the list); as a computed
  value, a *guarded sequence* ``[(present, item), ...]`` in list order.

A :class:`SymState` holds per key an ``exists`` Bool and per field a term. Every IR
expression evaluates to ``(value, err)`` where ``err`` is true exactly when the
interpreter would raise a ToolError (a missing row, ``min``/``max`` over nothing),
respecting short-circuit evaluation. :func:`encode_call` turns a tool into a transition:
argument validity, preconditions, effects in order (functional updates, so everything
not written is unchanged), invariants on touched rows, and the return value; the call is
atomic, so callers keep the pre-state when ``ok`` is false.

:class:`ToolTemplate` builds a tool's terms once over a symbolic pre-state (fully
symbolic, or symbolic only where cells can change) and instantiates them for any
concrete or symbolic state by substitution.

Reads and writes through a symbolic key only look at the keys it can be: by default the
*live* keys (rows of the state the universe was built from and ids creates make; no
other key ever names a row), narrower with :class:`KeyBounds` from a value-flow
analysis. List fields can likewise be given the items they can ever hold
(:meth:`Universe.field_elems`).

Limits (each raises :class:`EncodeError` or is stated where it applies): a list field
must hold a sorted list without repeats (the interpreter's invariant); storing a list
*literal* of several computed items into a field is rejected (its order and repeats are
not representable); appending an item outside the element universe — only possible for
``list[int]`` fields fed computed ints, which no built-in domain has — counts as a
failure. Ids, strings, dates and enum members are always inside by construction.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import Any, Protocol

import z3

from graphgen import ir
from graphgen.domain import Domain, ToolDef
from graphgen.errors import GraphgenError
from graphgen.interp import check_value
from graphgen.parse import is_iso_date
from graphgen.state import State
from graphgen.types import BOOL, DATE, INT, STR, EnumT, ListT, RecordT, RefT, Ty

# z3 ships no type stubs: every z3 expression is ``Any`` to mypy. The alias documents
# which values are z3 terms.
Term = Any

OUT = -1  # the index of an id outside the universe: it never names a row

TRUE: Term = z3.BoolVal(True)
FALSE: Term = z3.BoolVal(False)


class EncodeError(GraphgenError):
    """The IR uses something the finite encoding cannot represent exactly."""


# ------------------------------------------------------------------ term helpers
# Folding constants in Python keeps terms small: concrete keys (loop variables, literal
# ids) select cells directly instead of building if-then-else chains.


_CTX = z3.main_ctx()
# z3 hash-conses terms, so one term is one AST pointer: comparing pointers in Python
# identifies terms without a call into z3 (get_id/eq cost a ctypes round trip each).
_TRUE_PTR = TRUE.ast.value
_FALSE_PTR = FALSE.ast.value


def same(a: Term, b: Term) -> bool:
    """``a`` and ``b`` are the same term."""
    return a is b or bool(a.ast.value == b.ast.value)


def is_t(x: Term) -> bool:
    """``x`` is the literal true."""
    return x is TRUE or bool(x.ast.value == _TRUE_PTR)


def is_f(x: Term) -> bool:
    """``x`` is the literal false."""
    return x is FALSE or bool(x.ast.value == _FALSE_PTR)


def _mk_nary(fn: Any, parts: Sequence[Term]) -> Term:
    # z3.And/z3.Or coerce every argument in Python; the C call is much cheaper.
    n = len(parts)
    arr = (z3.Ast * n)()
    for i, p in enumerate(parts):
        arr[i] = p.ast
    return z3.BoolRef(fn(_CTX.ref(), n, arr), _CTX)


def and_(*xs: Term) -> Term:
    """Conjunction with constant folding."""
    parts = []
    for x in xs:
        if is_f(x):
            return FALSE
        if not is_t(x):
            parts.append(x)
    if not parts:
        return TRUE
    return parts[0] if len(parts) == 1 else _mk_nary(z3.Z3_mk_and, parts)


def or_(*xs: Term) -> Term:
    """Disjunction with constant folding."""
    parts = []
    for x in xs:
        if is_t(x):
            return TRUE
        if not is_f(x):
            parts.append(x)
    if not parts:
        return FALSE
    return parts[0] if len(parts) == 1 else _mk_nary(z3.Z3_mk_or, parts)


def not_(x: Term) -> Term:
    """Negation with constant folding."""
    if is_t(x):
        return FALSE
    if is_f(x):
        return TRUE
    return z3.BoolRef(z3.Z3_mk_not(_CTX.ref(), x.ast), _CTX)


def implies(a: Term, b: Term) -> Term:
    """``a → b`` with constant folding."""
    return or_(not_(a), b)


# Small integer literals are cached; ``_INT_OF`` maps a cached term's Python id back to
# its value so the hot path needs no call into z3.
_INTS: dict[int, Term] = {}
_INT_OF: dict[int, int] = {}


def int_val(i: int) -> Term:
    """A (cached) integer literal."""
    t = _INTS.get(i)
    if t is None:
        t = z3.IntVal(i)
        if len(_INTS) < 100_000:
            _INTS[i] = t
            _INT_OF[id(t)] = i
    return t


def int_const(x: Term) -> int | None:
    """The Python int of an integer literal term, else None."""
    v = _INT_OF.get(id(x))
    if v is not None:
        return v
    if isinstance(x, z3.IntNumRef):
        return int(x.as_long())
    return None


def eq(a: Term, b: Term) -> Term:
    """Equality of two scalar terms with constant folding."""
    ca, cb = int_const(a), int_const(b)
    if ca is not None and cb is not None:
        return TRUE if ca == cb else FALSE
    if same(a, b):
        return TRUE
    if isinstance(a, z3.BoolRef) and (is_t(a) or is_f(a)) and (is_t(b) or is_f(b)):
        return FALSE  # two different literals
    return z3.BoolRef(z3.Z3_mk_eq(_CTX.ref(), a.ast, b.ast), _CTX)


def ite(c: Term, a: Term, b: Term) -> Term:
    """If-then-else with constant folding (both branches of one sort)."""
    if is_t(c):
        return a
    if is_f(c):
        return b
    if same(a, b):
        return a
    cls = z3.BoolRef if isinstance(a, z3.BoolRef) else z3.ArithRef
    return cls(z3.Z3_mk_ite(_CTX.ref(), c.ast, a.ast, b.ast), _CTX)


def count(bs: Sequence[Term]) -> Term:
    """How many of ``bs`` are true (an Int term)."""
    n = 0
    rest = []
    for b in bs:
        if is_t(b):
            n += 1
        elif not is_f(b):
            rest.append(z3.If(b, 1, 0))
    if not rest:
        return int_val(n)
    total = z3.Sum(rest) if len(rest) > 1 else rest[0]
    return total + n if n else total


def arith(op: str, a: Term, b: Term) -> Term:
    """``a op b`` on Int terms with constant folding."""
    ca, cb = int_const(a), int_const(b)
    if ca is not None and cb is not None:
        return int_val(ca + cb if op == "+" else ca - cb if op == "-" else ca * cb)
    if op == "+":
        return a + b
    if op == "-":
        return a - b
    return a * b


def compare(op: str, a: Term, b: Term) -> Term:
    """An ordered comparison of Int terms with constant folding."""
    ca, cb = int_const(a), int_const(b)
    if ca is not None and cb is not None:
        r = {"<": ca < cb, "<=": ca <= cb, ">": ca > cb, ">=": ca >= cb}[op]
        return TRUE if r else FALSE
    if op == "<":
        return a < b
    if op == "<=":
        return a <= b
    if op == ">":
        return a > b
    return a >= b


_INT_SORT = z3.IntSort().ast
_BOOL_SORT = z3.BoolSort().ast


def fresh_int(prefix: str) -> Term:
    """A fresh Int constant (the C call: z3.FreshInt coerces in Python first)."""
    return z3.ArithRef(z3.Z3_mk_fresh_const(_CTX.ref(), prefix, _INT_SORT), _CTX)


def fresh_bool(prefix: str) -> Term:
    """A fresh Bool constant."""
    return z3.BoolRef(z3.Z3_mk_fresh_const(_CTX.ref(), prefix, _BOOL_SORT), _CTX)


def substitute_all(terms: Sequence[Term], pairs: Sequence[tuple[Term, Term]]) -> list[Term]:
    """Substitute ``pairs`` in every term, building the C arrays once (z3.substitute
    rebuilds them per call, which dominates when many terms share one mapping)."""
    if not terms:
        return []
    if not pairs:
        return list(terms)
    ctx = terms[0].ctx
    n = len(pairs)
    src = (z3.Ast * n)()
    dst = (z3.Ast * n)()
    for i, (a, b) in enumerate(pairs):
        src[i] = a.as_ast()
        dst[i] = b.as_ast()
    out = []
    for t in terms:
        r = z3.Z3_substitute(ctx.ref(), t.as_ast(), n, src, dst)
        out.append(z3.z3._to_expr_ref(r, ctx))
    return out


# ------------------------------------------------------------------ symbolic values


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


SymVal = Any  # a scalar Term, ListVal, RowVal or RecVal


def sym_eq(a: SymVal, b: SymVal) -> Term:
    """Python ``a == b`` for encoded values (lists compare in order, as Python does)."""
    if isinstance(a, ListVal) and isinstance(b, ListVal):
        return _seq_eq(a, b)
    if isinstance(a, ListVal | RowVal | RecVal) or isinstance(b, ListVal | RowVal | RecVal):
        raise EncodeError("only scalars and lists can be compared")
    return eq(a, b)


def _seq_eq(a: ListVal, b: ListVal) -> Term:
    if all(is_t(p) for p, _ in a.items) and all(is_t(p) for p, _ in b.items):
        if len(a.items) != len(b.items):
            return FALSE
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
        return ListVal([(and_(c, p), x) for p, x in a.items]
                       + [(and_(not_(c), p), x) for p, x in b.items])
    if isinstance(a, RowVal) and isinstance(b, RowVal):
        return RowVal(a.entity, ite(c, a.key, b.key),
                      {f: merge(c, a.fields[f], b.fields[f]) for f in a.fields})
    if isinstance(a, RecVal) and isinstance(b, RecVal):
        return RecVal({f: merge(c, a.fields[f], b.fields[f]) for f in a.fields})
    return ite(c, a, b)


def leaves(domain: Domain, v: SymVal, ty: Ty, guard: Term = TRUE
           ) -> list[tuple[Term, Ty, Term]]:
    """Every scalar shown in an output, with its type and the guard under which it is."""
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
    else:
        out.append((guard, ty, v))
    return out


# ------------------------------------------------------------------ the universe


def _date_ord(s: str) -> int:
    return _dt.date.fromisoformat(s).toordinal()


class KeyBounds(Protocol):
    """What a value-flow analysis (:func:`graphgen.verify.slicing.analyze_flow`) proved about the
    keys chains can use: the encoding then reads and writes only those rows' cells.
    Exact whenever the analysis is sound, since a key outside the bound is never the
    value of an evaluation that counts (see :mod:`graphgen.verify.slicing`)."""

    def keys_of(self, e: ir.Expr) -> frozenset[str] | None:
        """Every key ``e`` (an id expression reading no loop variable) can evaluate to
        in a call with known arguments on a reachable state; None if not bounded."""

    def param_keys(self, tool: str, p: Any) -> frozenset[str] | None:
        """Every key id parameter ``p`` of ``tool`` can be given (known ids)."""


@dataclass
class Universe:
    """The finite world an encoding ranges over, and the value codec."""

    domain: Domain
    keys: dict[str, list[str]]
    strings: list[str]
    dates: list[str]
    ints: list[int]
    counter0: dict[str, int]
    created: dict[str, list[str]]  # entity → ids the 0th, 1st, ... create would make
    live: dict[str, list[int]] = field(default_factory=dict)
    bounds: KeyBounds | None = None
    list_elems: dict[tuple[str, str], list[Any]] = field(default_factory=dict)
    _field_terms: dict[tuple[str, str], list[Term]] = field(default_factory=dict)
    index: dict[str, dict[str, int]] = field(default_factory=dict)
    str_index: dict[str, int] = field(default_factory=dict)
    _ivals: list[Term] = field(default_factory=list)
    _cand_cache: dict[int, tuple[ir.Expr, list[int]]] = field(default_factory=dict)
    _live_set: dict[str, set[int]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.index = {e: {k: i for i, k in enumerate(ks)} for e, ks in self.keys.items()}
        if not self.live:
            self.live = {e: list(range(len(ks))) for e, ks in self.keys.items()}
        self.str_index = {s: i for i, s in enumerate(self.strings)}
        top = max([len(self.strings), *(len(k) for k in self.keys.values()), 8])
        self._ivals = [int_val(i) for i in range(top + 1)]

    @classmethod
    def build(cls, domain: Domain, state: State, creates: Mapping[str, int] | None = None,
              extra: Iterable[tuple[Ty, Any]] = ()) -> Universe:
        """The universe of ``state`` plus ``creates[E]`` future ids of E and ``extra``
        typed values (givens, arguments, goal values) that must be representable."""
        refs: dict[str, set[str]] = {e: set() for e in domain.entities}
        strings: set[str] = set()
        dates: set[str] = set()
        ints: set[int] = set()

        def add(ty: Ty, v: Any) -> None:
            if isinstance(ty, ListT):
                if isinstance(v, list):
                    for x in v:
                        add(ty.elem, x)
            elif isinstance(ty, RefT):
                if isinstance(v, str) and ty.entity in refs:
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
        for tool in domain.tools.values():
            for e in _tool_exprs(tool):
                for n in ir.walk(e):
                    if isinstance(n, ir.Lit):
                        add(n.ty, n.value)
        for ty, v in extra:
            add(ty, v)
        created: dict[str, list[str]] = {}
        counter0 = {e: int(state.counters.get(e, 1)) for e in domain.entities}
        for ent, edef in domain.entities.items():
            n_new = int((creates or {}).get(ent, 0))
            created[ent] = [edef.make_id(counter0[ent] + i) for i in range(n_new)]
            refs[ent].update(created[ent])
        keys = {e: sorted(r) for e, r in refs.items()}
        live = {}
        for ent, ks in keys.items():
            table = state.tables.get(ent, {})
            made = set(created[ent])
            live[ent] = [i for i, k in enumerate(ks) if k in table or k in made]
        return cls(domain, keys, sorted(strings), sorted(dates), sorted(ints), counter0,
                   created, live)

    # -------------------------------------------------------------- codec

    def ival(self, i: int) -> Term:
        """A cached IntVal."""
        if 0 <= i < len(self._ivals):
            return self._ivals[i]
        return int_val(i)

    def enc(self, ty: Ty, v: Any) -> Term | None:
        """The term of Python value ``v`` at type ``ty``; None if it cannot occur here."""
        if ty == INT:
            ok = isinstance(v, int) and not isinstance(v, bool)
            return int_val(v) if ok else None
        if ty == BOOL:
            return (TRUE if v else FALSE) if isinstance(v, bool) else None
        if ty == DATE:
            return int_val(_date_ord(v)) if isinstance(v, str) and is_iso_date(v) else None
        if ty == STR:
            i = self.str_index.get(v) if isinstance(v, str) else None
            return None if i is None else self.ival(i)
        if isinstance(ty, EnumT):
            return self.ival(ty.values.index(v)) if v in ty.values else None
        if isinstance(ty, RefT):
            i = self.index[ty.entity].get(v) if isinstance(v, str) else None
            return None if i is None else self.ival(i)
        return None

    def enc_arg(self, ty: Ty, v: Any) -> Term:
        """An argument's term; an id outside the universe becomes :data:`OUT`."""
        t = self.enc(ty, v)
        if t is not None:
            return t
        if isinstance(ty, RefT):
            return int_val(OUT)
        raise EncodeError(f"value {v!r} of type {ty.show()} is outside the universe")

    def dec(self, ty: Ty, t: Term) -> Any:
        """The Python value of a literal term ``t`` at type ``ty``."""
        if ty == BOOL:
            return bool(is_t(t))
        n = int_const(t)
        if n is None:
            raise EncodeError(f"not a literal: {t}")
        if ty == INT:
            return n
        if ty == DATE:
            return _dt.date.fromordinal(n).isoformat()
        if ty == STR:
            return self.strings[n]
        if isinstance(ty, EnumT):
            return ty.values[n]
        if isinstance(ty, RefT):
            return self.keys[ty.entity][n] if n >= 0 else None
        raise EncodeError(f"cannot decode a {ty.show()}")

    def elems(self, ty: Ty) -> list[Any]:
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

    def field_elems(self, ent: str, f: str) -> list[Any]:
        """The sorted element universe of list field ``ent.f``: :attr:`list_elems` when
        the field has one (the items a value-flow analysis proved the field can ever
        hold), else every element of its item type."""
        hit = self.list_elems.get((ent, f))
        if hit is not None:
            return hit
        ty = self.domain.entities[ent].fields[f].ty
        assert isinstance(ty, ListT)
        return self.elems(ty.elem)

    def field_elem_terms(self, ent: str, f: str) -> list[Term]:
        """Terms of :meth:`field_elems`, in the same order."""
        hit = self._field_terms.get((ent, f))
        if hit is None:
            ty = self.domain.entities[ent].fields[f].ty
            assert isinstance(ty, ListT)
            hit = []
            for v in self.field_elems(ent, f):
                t = self.enc(ty.elem, v)
                assert t is not None
                hit.append(t)
            self._field_terms[(ent, f)] = hit
        return hit

    def z3_var(self, ty: Ty, name: str) -> Term:
        """A fresh z3 constant for a scalar of type ``ty``."""
        return fresh_bool(name) if ty == BOOL else fresh_int(name)

    # -------------------------------------------------------------- key candidates

    def live_idx(self, ent: str) -> list[int]:
        """Indices of the keys whose row can exist in some reachable state: rows of the
        state the universe was built from and ids creates make. Every other key (an id a
        row refers to, a given id) names no row now and none can appear there later."""
        return self.live.get(ent, [])

    def cands(self, e: ir.Expr, ent: str) -> list[int]:
        """The live keys key expression ``e`` can name (see :class:`KeyBounds`)."""
        if self.bounds is None:
            return self.live_idx(ent)
        hit = self._cand_cache.get(id(e))
        if hit is not None and hit[0] is e:
            return hit[1]
        keys = self.bounds.keys_of(e)
        out = self.live_idx(ent) if keys is None else self._live_of(ent, keys)
        self._cand_cache[id(e)] = (e, out)
        return out

    def param_cands(self, tool: str, p: Any) -> list[int]:
        """The live keys an id parameter can be (see :class:`KeyBounds`)."""
        ent = p.ty.entity
        if self.bounds is None:
            return self.live_idx(ent)
        keys = self.bounds.param_keys(tool, p)
        return self.live_idx(ent) if keys is None else self._live_of(ent, keys)

    def _live_of(self, ent: str, keys: Iterable[str]) -> list[int]:
        idx = self.index[ent]
        ok = self._live_set.setdefault(ent, set(self.live_idx(ent)))
        return sorted(i for k in keys if (i := idx.get(k)) is not None and i in ok)


def _tool_exprs(tool: ToolDef) -> list[ir.Expr]:
    out = [c.expr for c in tool.requires]
    for s in tool.effects:
        out.extend(ir.effect_exprs(s.effect))
    if tool.returns is not None:
        out.append(tool.returns)
    return out


# ------------------------------------------------------------------ symbolic state

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
        return SymState(dict(self.exists), {e: dict(c) for e, c in self.cells.items()},
                        dict(self.created))

    @classmethod
    def from_state(cls, uni: Universe, st: State) -> SymState:
        """The constant encoding of a concrete state (restricted to the universe)."""
        exists: dict[str, list[Term]] = {}
        cells: dict[str, dict[str, list[Cell]]] = {}
        for ent, edef in uni.domain.entities.items():
            table = st.tables.get(ent, {})
            keys = uni.keys[ent]
            exists[ent] = [TRUE if k in table else FALSE for k in keys]
            cells[ent] = {}
            for f, fd in edef.fields.items():
                col: list[Cell] = []
                for k in keys:
                    row = table.get(k)
                    col.append(_const_cell(uni, ent, k, f, fd.ty, row[f] if row else None))
                cells[ent][f] = col
        return cls(exists, cells, {e: uni.ival(0) for e in uni.domain.entities})

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
                    n = len(uni.field_elems(ent, f))
                    cells[ent][f] = [[fresh_bool(f"{tag}.{ent}.{f}") for _ in range(n)]
                                     for _ in keys]
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
            terms[i] = (fresh_bool(tag) if isinstance(t, z3.BoolRef) else fresh_int(tag))
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
        ev = value or (lambda t: z3.simplify(t))
        tables: dict[str, dict[str, dict[str, Any]]] = {}
        counters: dict[str, int] = {}
        for ent, edef in uni.domain.entities.items():
            rows: dict[str, dict[str, Any]] = {}
            for i, k in enumerate(uni.keys[ent]):
                if not is_t(ev(self.exists[ent][i])):
                    continue
                row: dict[str, Any] = {}
                for f, fd in edef.fields.items():
                    c = self.cells[ent][f][i]
                    if isinstance(fd.ty, ListT):
                        el = uni.field_elems(ent, f)
                        row[f] = [el[j] for j, m in enumerate(c) if is_t(ev(m))]
                    else:
                        row[f] = uni.dec(fd.ty, ev(c))
                rows[k] = row
            tables[ent] = rows
            n = int_const(ev(self.created[ent]))
            counters[ent] = uni.counter0[ent] + (n or 0)
        return State(tables, counters)


def _const_cell(uni: Universe, ent: str, key: str, f: str, ty: Ty, v: Any) -> Cell:
    if isinstance(ty, ListT):
        el = uni.field_elems(ent, f)
        if v is None:
            return [FALSE] * len(el)
        if not isinstance(v, list) or list(v) != sorted(set(v)):
            raise EncodeError(f"{ent} {key!r} {f}: a list field must be a sorted list without "
                              f"repeats (lists are sets kept sorted), got {v!r}")
        vs = set(v)
        if not vs <= set(el):
            raise EncodeError(f"{ent} {key!r} {f}: items {sorted(vs - set(el))!r} are outside "
                              f"the field's element universe")
        return [TRUE if x in vs else FALSE for x in el]
    if v is None:  # no row at this key: any value does, it is never read
        return FALSE if ty == BOOL else uni.ival(0)
    t = uni.enc(ty, v)
    if t is None:
        if isinstance(ty, RefT):
            return int_val(OUT)
        raise EncodeError(f"{ent} {key!r} {f}: value {v!r} is not a valid {ty.show()}")
    return t


# ------------------------------------------------------------------ reading the state


def exists_at(uni: Universe, st: SymState, ent: str, key: Term,
              cands: Sequence[int] | None = None) -> Term:
    """Does a row of ``ent`` with key ``key`` exist? ``cands``: the only keys ``key``
    can be when it matters (default: the live keys; any other key has no row)."""
    col = st.exists[ent]
    c = int_const(key)
    if c is not None:
        return col[c] if 0 <= c < len(col) else FALSE
    idx = uni.live_idx(ent) if cands is None else cands
    return or_(*(and_(eq(key, uni.ival(i)), col[i]) for i in idx))


def select(uni: Universe, col: Sequence[Term], key: Term,
           cands: Sequence[int] | None = None) -> Term:
    """``col[key]``; an arbitrary value when ``key`` is none of ``cands`` (default: every
    position), which callers flag as an error (the row does not exist)."""
    c = int_const(key)
    if c is not None:
        return col[c] if 0 <= c < len(col) else col[0] if col else uni.ival(0)
    idx = range(len(col)) if cands is None else cands
    if not idx:
        return col[0] if col else uni.ival(0)
    out = col[idx[-1]]
    for i in reversed(idx[:-1]):
        out = ite(eq(key, uni.ival(i)), col[i], out)
    return out


def read_field(uni: Universe, st: SymState, ent: str, key: Term, f: str,
               cands: Sequence[int] | None = None) -> SymVal:
    """The value of field ``f`` of row ``key`` (a ListVal for list fields); ``cands`` as
    for :func:`exists_at`."""
    fd = uni.domain.entities[ent].fields[f]
    col = st.cells[ent][f]
    idx = uni.live_idx(ent) if cands is None else cands
    if isinstance(fd.ty, ListT):
        terms = uni.field_elem_terms(ent, f)
        if not col:
            return ListVal([])
        n = len(terms)
        c = int_const(key)
        if c is not None:
            mem = col[c] if 0 <= c < len(col) else [FALSE] * n
        else:
            mem = [select(uni, [row[j] for row in col], key, idx) for j in range(n)]
        return ListVal([(mem[j], terms[j]) for j in range(n)])
    if not col:
        return FALSE if fd.ty == BOOL else uni.ival(0)
    return select(uni, col, key, idx)


# ------------------------------------------------------------------ expressions


_FV: dict[int, tuple[ir.Expr, frozenset[str]]] = {}


def free_vars(e: ir.Expr) -> frozenset[str]:
    """The variables ``e`` reads (a comprehension binds its own), memoised per node."""
    hit = _FV.get(id(e))
    if hit is not None and hit[0] is e:
        return hit[1]
    if isinstance(e, ir.Var):
        out = frozenset({e.name})
    elif isinstance(e, ir.Comp):
        inner = free_vars(e.proj) | (free_vars(e.cond) if e.cond is not None else frozenset())
        out = inner - {e.var}
    else:
        out = frozenset().union(*(free_vars(c) for c in ir.children(e)))
    _FV[id(e)] = (e, out)
    return out


_CANON: dict[int, tuple[ir.Expr, int]] = {}
_CANON_IDS: dict[tuple[Any, ...], int] = {}


def canon(e: ir.Expr) -> int:
    """A number per *structure*: structurally equal expressions (written twice in a
    tool, say) get the same one, memoised per node."""
    hit = _CANON.get(id(e))
    if hit is not None and hit[0] is e:
        return hit[1]
    parts: list[Any] = [type(e).__name__]
    for f in fields(e):  # type: ignore[arg-type]
        v = getattr(e, f.name)
        if isinstance(v, ir.Expr):
            parts.append(("e", canon(v)))
        elif isinstance(v, tuple) and v and isinstance(v[0], ir.Expr):
            parts.append(("t", *(canon(x) for x in v)))
        else:
            parts.append((type(v).__name__, v))  # 1 and True hash alike
    out = _CANON_IDS.setdefault(tuple(parts), len(_CANON_IDS))
    _CANON[id(e)] = (e, out)
    return out


class Evaluator:
    """Evaluates IR expressions to ``(value, err)`` on one symbolic state.

    One evaluator serves one environment of parameters and bindings; sub-expressions
    that do not read a comprehension variable are evaluated once (``Order[o].user_id``
    inside a scan over every row is the same term on every row), and so are
    structurally equal ones (the same lookup written in two preconditions).
    """

    def __init__(self, uni: Universe, st: SymState, where: str = "") -> None:
        self.uni = uni
        self.st = st
        self.where = where
        self._active: set[str] = set()
        self._memo: dict[int, tuple[SymVal, Term]] = {}

    def fail(self, msg: str) -> EncodeError:
        return EncodeError(f"{self.uni.domain.source}: {self.where}: {msg}")

    def ev(self, e: ir.Expr, env: Mapping[str, SymVal]) -> tuple[SymVal, Term]:
        """The value of ``e`` and the condition under which evaluating it raises."""
        if isinstance(e, ir.Lit | ir.Var):
            return self._ev(e, env)
        if self._active and free_vars(e) & self._active:
            return self._ev(e, env)
        c = canon(e)
        hit = self._memo.get(c)
        if hit is not None:
            return hit
        r = self._ev(e, env)
        self._memo[c] = r
        return r

    def _ev(self, e: ir.Expr, env: Mapping[str, SymVal]) -> tuple[SymVal, Term]:
        uni, st = self.uni, self.st
        match e:
            case ir.Lit(value=v, ty=t):
                term = uni.enc(t, v)
                if term is None:
                    if isinstance(t, RefT):
                        return int_val(OUT), FALSE
                    raise self.fail(f"literal {v!r} cannot be encoded")
                return term, FALSE
            case ir.Var(name=n):
                if n not in env:
                    raise self.fail(f"unbound name {n!r}")
                return env[n], FALSE
            case ir.FieldOf(entity=ent, key=k, field=f):
                kv, ke = self.ev(k, env)
                cands = uni.cands(k, ent)
                miss = not_(exists_at(uni, st, ent, kv, cands))
                return read_field(uni, st, ent, kv, f, cands), or_(ke, miss)
            case ir.RowOf(entity=ent, key=k):
                kv, ke = self.ev(k, env)
                cands = uni.cands(k, ent)
                miss = not_(exists_at(uni, st, ent, kv, cands))
                fields = {f: read_field(uni, st, ent, kv, f, cands)
                          for f in uni.domain.entities[ent].fields}
                return RowVal(ent, kv, fields), or_(ke, miss)
            case ir.Exists(entity=ent, key=k):
                kv, ke = self.ev(k, env)
                return exists_at(uni, st, ent, kv, uni.cands(k, ent)), ke
            case ir.Compare(op=op, left=a, right=b):
                x, ex = self.ev(a, env)
                y, ey = self.ev(b, env)
                if op == "==":
                    r = sym_eq(x, y)
                elif op == "!=":
                    r = not_(sym_eq(x, y))
                else:
                    r = compare(op, x, y)
                return r, or_(ex, ey)
            case ir.BoolOp(op=op, values=vs):
                # Short-circuit: a later operand is evaluated (and may raise) only when
                # every earlier one let evaluation continue.
                vals: list[Term] = []
                errs: list[Term] = []
                for sub in vs:
                    v, err = self.ev(sub, env)
                    errs.append(and_(*vals, err) if op == "and" else
                                and_(*(not_(x) for x in vals), err))
                    vals.append(v)
                return (and_(*vals) if op == "and" else or_(*vals)), or_(*errs)
            case ir.Not(operand=o):
                v, err = self.ev(o, env)
                return not_(v), err
            case ir.Arith(op=op, left=a, right=b):
                x, ex = self.ev(a, env)
                y, ey = self.ev(b, env)
                return arith(op, x, y), or_(ex, ey)
            case ir.Neg(operand=o):
                v, err = self.ev(o, env)
                return arith("-", int_val(0), v), err
            case ir.Contains(item=a, container=b, negated=neg):
                x, ex = self.ev(a, env)
                lst, el = self.ev(b, env)
                if not isinstance(lst, ListVal):
                    raise self.fail("'in' needs a list")
                r = or_(*(and_(p, sym_eq(y, x)) for p, y in lst.items))
                return (not_(r) if neg else r), or_(ex, el)
            case ir.Len(operand=o):
                lst, err = self.ev(o, env)
                if not isinstance(lst, ListVal):
                    raise self.fail("len() needs a list")
                return count([p for p, _ in lst.items]), err
            case ir.ListLit(items=items):
                out = []
                errs = []
                for it in items:
                    v, err = self.ev(it, env)
                    out.append((TRUE, v))
                    errs.append(err)
                return ListVal(out), or_(*errs)
            case ir.Comp():
                items2, err = self.comp(e, env)
                return ListVal(items2), err
            case ir.Agg(fn=fn, comp=c):
                return self.agg(fn, c, env)
            case ir.IfExp(cond=c, then=t, orelse=o):
                cv, ce = self.ev(c, env)
                tv, te = self.ev(t, env)
                ov, oe = self.ev(o, env)
                return merge(cv, tv, ov), or_(ce, and_(cv, te), and_(not_(cv), oe))
            case ir.DictLit(keys=ks, values=vs):
                rec: dict[str, SymVal] = {}
                errs = []
                for name, sub in zip(ks, vs, strict=True):
                    v, err = self.ev(sub, env)
                    rec[name] = v
                    errs.append(err)
                return RecVal(rec), or_(*errs)
        raise self.fail(f"unknown IR node {type(e).__name__}")

    def comp(self, c: ir.Comp, env: Mapping[str, SymVal]) -> tuple[list[tuple[Term, SymVal]],
                                                                    Term]:
        """The guarded items of a comprehension, rows in key order, and its error."""
        items: list[tuple[Term, SymVal]] = []
        errs: list[Term] = []
        inner = dict(env)
        shadowed = c.var in self._active
        self._active.add(c.var)
        try:
            self._scan(c, inner, items, errs)
        finally:
            if not shadowed:
                self._active.discard(c.var)
        return items, or_(*errs)

    def _scan(self, c: ir.Comp, inner: dict[str, SymVal], items: list[tuple[Term, SymVal]],
              errs: list[Term]) -> None:
        for i, ex in enumerate(self.st.exists[c.entity]):
            if is_f(ex):
                continue
            inner[c.var] = self.uni.ival(i)
            if c.cond is None:
                cv, ce = TRUE, FALSE
            else:
                cv, ce = self.ev(c.cond, inner)
            pv, pe = self.ev(c.proj, inner)
            take = and_(ex, cv)
            items.append((take, pv))
            errs.append(and_(ex, ce))
            errs.append(and_(take, pe))

    def agg(self, fn: str, c: ir.Comp, env: Mapping[str, SymVal]) -> tuple[SymVal, Term]:
        items, err = self.comp(c, env)
        if fn == "any":
            return or_(*(and_(p, v) for p, v in items)), err
        if fn == "all":
            return and_(*(implies(p, v) for p, v in items)), err
        if fn == "count":
            return count([p for p, _ in items]), err
        if fn == "sum":
            parts = [ite(p, v, int_val(0)) for p, v in items]
            total = int_val(0)
            for x in parts:
                total = arith("+", total, x)
            return total, err
        # min / max: over no rows the interpreter raises
        best: Term = int_val(0)
        seen: Term = FALSE
        for p, v in items:
            better = compare("<" if fn == "min" else ">", v, best)
            take = and_(p, or_(not_(seen), better))
            best = ite(take, v, best)
            seen = or_(seen, p)
        return best, or_(err, not_(seen))


# ------------------------------------------------------------------ tool calls


@dataclass
class CallEnc:
    """A tool call on a symbolic state: ``ok`` (it succeeds), the state after a
    successful call, the return value (on that state) and its type."""

    ok: Term
    post: SymState
    ret: SymVal | None
    ret_ty: Ty | None
    valid_args: Term = TRUE


def _membership(uni: Universe, ent: str, f: str, v: SymVal, where: str
                ) -> tuple[list[Term], Term]:
    """A list value stored into list field ``ent.f``, as membership Bools, and the
    condition under which an item is outside the field's element universe (the store
    then counts as a failure; see :meth:`Universe.field_elems`).

    Stored lists are sets kept sorted; a literal with repeats or out of order would be
    stored as is by the interpreter, which membership cannot represent.
    """
    if not isinstance(v, ListVal):
        raise EncodeError(f"{where}: a list field needs a list value")
    if len(v.items) > 1 and not all(z3.is_int_value(x) for _, x in v.items):
        raise EncodeError(f"{where}: storing a list of several computed items is not "
                          f"supported (order and repeats cannot be encoded)")
    terms = uni.field_elem_terms(ent, f)
    mem = [or_(*(and_(p, eq(x, t)) for p, x in v.items)) for t in terms]
    out = FALSE
    if (ent, f) in uni.list_elems:
        out = or_(*(and_(p, not_(or_(*(eq(x, t) for t in terms)))) for p, x in v.items))
    return mem, out


def _param_valid(uni: Universe, st: SymState, tool: ToolDef, p: Any, v: Term) -> Term:
    parts = []
    ty = p.ty
    if ty == INT:
        if p.min is not None:
            parts.append(compare(">=", v, int_val(p.min)))
        if p.max is not None:
            parts.append(compare("<=", v, int_val(p.max)))
    elif isinstance(ty, EnumT):
        parts.append(compare(">=", v, int_val(0)))
        parts.append(compare("<", v, int_val(len(ty.values))))
    elif isinstance(ty, RefT):
        parts.append(exists_at(uni, st, ty.entity, v, uni.param_cands(tool.name, p)))
    return and_(*parts)


def encode_call(uni: Universe, st: SymState, tool: ToolDef, args: Mapping[str, Term]) -> CallEnc:
    """The transition of one call of ``tool`` with argument terms ``args`` (one per
    parameter, already of the right z3 sort) on state ``st``."""
    src = uni.domain.source
    env: dict[str, SymVal] = dict(args)
    valid = and_(*(_param_valid(uni, st, tool, p, args[p.name])
                   for p in tool.params.values()))
    conds: list[Term] = [valid]
    pre = Evaluator(uni, st)  # one memo for every precondition: they read one state
    for i, chk in enumerate(tool.requires):
        pre.where = f"tool {tool.name!r}, requires[{i}]"
        v, err = pre.ev(chk.expr, env)
        conds.append(and_(not_(err), v))
    cur = st
    touched: dict[str, list[Term]] = {}
    for i, stmt in enumerate(tool.effects):
        where = f"{src}: tool {tool.name!r}, effects[{i}] ({stmt.source})"
        cur, fail = _apply(uni, cur, stmt.effect, env, touched, where)
        conds.append(not_(fail))
    conds.append(_invariants(uni, cur, touched))
    ret = None
    if tool.returns is not None:
        ret, rerr = Evaluator(uni, cur, f"tool {tool.name!r}, returns").ev(tool.returns, env)
        conds.append(not_(rerr))
    return CallEnc(and_(*conds), cur, ret, tool.return_ty, valid)


def _touch(uni: Universe, touched: dict[str, list[Term]], ent: str, u: int, c: Term) -> None:
    col = touched.setdefault(ent, [FALSE] * len(uni.keys[ent]))
    col[u] = or_(col[u], c)


def _apply(uni: Universe, st: SymState, eff: ir.Effect, env: dict[str, SymVal],
           touched: dict[str, list[Term]], where: str) -> tuple[SymState, Term]:
    """Apply one effect; return the new state and the condition under which it raises."""
    ev = Evaluator(uni, st, where)
    new = st.copy()
    match eff:
        case ir.Assign(entity=ent, key=k, field=f, op=op, value=v):
            kv, ke = ev.ev(k, env)
            val, ve = ev.ev(v, env)
            cands = uni.cands(k, ent)
            fd = uni.domain.entities[ent].fields[f]
            old = st.cells[ent][f]
            col = list(old)
            mem: list[Term] = []
            if isinstance(fd.ty, ListT):
                mem, unrep = _membership(uni, ent, f, val, where)
                ve = or_(ve, unrep)
            for u in cands:  # a write to any other key fails: its row does not exist
                hit = eq(kv, uni.ival(u))
                if is_f(hit):
                    continue
                if isinstance(fd.ty, ListT):
                    col[u] = [ite(hit, m, o) for m, o in zip(mem, old[u], strict=True)]
                else:
                    nv = val if op == "=" else arith("+" if op == "+=" else "-", old[u], val)
                    col[u] = ite(hit, nv, old[u])
                _touch(uni, touched, ent, u, hit)
            new.cells[ent] = {**new.cells[ent], f: col}
            return new, or_(ke, not_(exists_at(uni, st, ent, kv, cands)), ve)
        case ir.ListEdit(entity=ent, key=k, field=f, op=op, value=v):
            kv, ke = ev.ev(k, env)
            val, ve = ev.ev(v, env)
            cands = uni.cands(k, ent)
            fd = uni.domain.entities[ent].fields[f]
            assert isinstance(fd.ty, ListT)
            terms = uni.field_elem_terms(ent, f)
            is_j = [eq(val, t) for t in terms]
            old = st.cells[ent][f]
            cur = read_field(uni, st, ent, kv, f, cands)
            assert isinstance(cur, ListVal)
            member = or_(*(and_(h, p) for h, (p, _) in zip(is_j, cur.items, strict=True)))
            col = list(old)
            for u in cands:
                hit = eq(kv, uni.ival(u))
                if is_f(hit):
                    continue
                mark = TRUE if op == "append" else FALSE
                col[u] = [ite(and_(hit, h), mark, o) for h, o in zip(is_j, old[u], strict=True)]
                _touch(uni, touched, ent, u, hit)
            new.cells[ent] = {**new.cells[ent], f: col}
            # An item outside the element universe cannot be stored: counted as a failure
            # (documented limit; ids and strings are always inside by construction).
            bad = member if op == "append" else not_(member)
            unrep = not_(or_(*is_j)) if op == "append" else FALSE
            return new, or_(ke, not_(exists_at(uni, st, ent, kv, cands)), ve, bad, unrep)
        case ir.Create(entity=ent, bind=b, values=vs):
            edef = uni.domain.entities[ent]
            vals: dict[str, tuple[SymVal, Term]] = {f: ev.ev(x, env) for f, x in vs}
            mems: dict[str, list[Term]] = {}
            for f, fd in edef.fields.items():
                if isinstance(fd.ty, ListT):
                    mems[f], unrep = _membership(uni, ent, f, vals[f][0], where)
                    vals[f] = (vals[f][0], or_(vals[f][1], unrep))
            c = st.created[ent]
            made = uni.created[ent]
            ex = list(st.exists[ent])
            cols = {f: list(st.cells[ent][f]) for f in edef.fields}
            conds = []
            bind: Term = int_val(OUT)
            for i in range(len(made) - 1, -1, -1):
                cond = eq(c, uni.ival(i))
                if is_f(cond):
                    continue
                conds.append(cond)
                u = uni.index[ent][made[i]]
                ex[u] = ite(cond, TRUE, ex[u])
                for f, fd in edef.fields.items():
                    val = vals[f][0]
                    if isinstance(fd.ty, ListT):
                        cols[f][u] = [ite(cond, m, o) for m, o in zip(mems[f], cols[f][u],
                                                                      strict=True)]
                    else:
                        cols[f][u] = ite(cond, val, cols[f][u])
                _touch(uni, touched, ent, u, cond)
                bind = ite(cond, uni.ival(u), bind)
            new.exists[ent] = ex
            new.cells[ent] = cols
            new.created[ent] = arith("+", c, int_val(1))
            if b is not None:
                env[b] = bind
            # Running out of prepared ids is a failure; universes are sized so that no
            # chain within the bound can (k calls times creates per call).
            return new, or_(*(err for _, err in vals.values()), not_(or_(*conds)))
        case ir.Delete(entity=ent, key=k):
            kv, ke = ev.ev(k, env)
            cands = uni.cands(k, ent)
            ex = list(st.exists[ent])
            for u in cands:
                hit = eq(kv, uni.ival(u))
                if not is_f(hit):
                    ex[u] = ite(hit, FALSE, ex[u])
            new.exists[ent] = ex
            return new, or_(ke, not_(exists_at(uni, st, ent, kv, cands)))
    raise EncodeError(f"{where}: unknown effect {type(eff).__name__}")


def _invariants(uni: Universe, st: SymState, touched: dict[str, list[Term]]) -> Term:
    """Bounds and uniqueness on every touched row that still exists (all its fields)."""
    parts: list[Term] = []
    for ent, col in touched.items():
        edef = uni.domain.entities[ent]
        bounded = [fd for fd in edef.fields.values() if fd.min is not None or fd.max is not None]
        unique = [fd for fd in edef.fields.values() if fd.unique]
        if not bounded and not unique:
            continue
        ex = st.exists[ent]
        for u, t in enumerate(col):
            if is_f(t):
                continue
            conds = []
            for fd in bounded:
                v = st.cells[ent][fd.name][u]
                if fd.min is not None:
                    conds.append(compare(">=", v, int_val(fd.min)))
                if fd.max is not None:
                    conds.append(compare("<=", v, int_val(fd.max)))
            for fd in unique:
                v = st.cells[ent][fd.name][u]
                for u2, x2 in enumerate(ex):
                    if u2 != u and not is_f(x2):
                        conds.append(implies(x2, not_(eq(v, st.cells[ent][fd.name][u2]))))
            parts.append(implies(and_(t, ex[u]), and_(*conds)))
    return and_(*parts)


# ------------------------------------------------------------------ templates


class Substitution:
    """The C arrays of one substitution (``pairs``: from-term, to-term), built once and
    applied to many terms."""

    def __init__(self, pairs: Sequence[tuple[Term, Term]]) -> None:
        self.n = len(pairs)
        self.src = (z3.Ast * self.n)()
        self.dst = (z3.Ast * self.n)()
        for i, (a, b) in enumerate(pairs):
            self.src[i] = a.ast
            self.dst[i] = b.ast
        self._keep = list(pairs)  # the terms stay alive while the arrays point at them


class ToolTemplate:
    """One tool's transition built once over a fully symbolic pre-state and symbolic
    arguments; :meth:`instantiate` specialises it to any state and arguments."""

    def __init__(self, uni: Universe, tool: ToolDef, tag: str = "",
                 pre: SymState | None = None, variables: Sequence[int] | None = None) -> None:
        """``pre``: the pre-state to build over (default: every cell a fresh constant);
        ``variables``: the positions of ``pre`` that are constants to substitute (the
        others must hold in every state the template is instantiated on)."""
        self.uni = uni
        self.tool = tool
        tag = tag or tool.name
        self.pre = pre if pre is not None else SymState.fresh(uni, f"{tag}.pre")
        self.args = {p.name: uni.z3_var(p.ty, f"{tag}.{p.name}") for p in tool.params.values()}
        self.enc = encode_call(uni, self.pre, tool, self.args)
        self._pre_terms = self.pre.terms()
        self._post_terms = self.enc.post.terms()
        self._vars = (list(range(len(self._pre_terms))) if variables is None
                      else list(variables))
        # Which positions the call can change: unchanged cells are the very pre terms.
        self.changed = [not same(a, b)
                        for a, b in zip(self._pre_terms, self._post_terms, strict=True)]
        self.changed_idx = [i for i, ch in enumerate(self.changed) if ch]
        self._pack_cache: dict[tuple[int, ...], tuple[Term, int]] = {}
        self._pack_bool: dict[tuple[int, ...], list[bool]] = {}
        self._keep: list[list[Term]] = []

    def pairs(self, st: SymState, args: Mapping[str, Term]) -> list[tuple[Term, Term]]:
        """The substitution sending the template's variables to ``st`` and ``args``."""
        cur = st.terms()
        pre = self._pre_terms
        out = [(pre[i], cur[i]) for i in self._vars]
        out.extend((self.args[n], args[n]) for n in self.args)
        return out

    def _packed(self, extra: Sequence[Term]) -> tuple[Term, int]:
        """All outputs as the arguments of one application, so one substitution pass
        shares its cache across them (separate calls re-walk the shared subterms)."""
        key = tuple(id(x) for x in extra)
        hit = self._pack_cache.get(key)
        if hit is not None:
            return hit
        outs = [self.enc.ok, *(self._post_terms[i] for i in self.changed_idx), *extra]
        n = len(outs)
        dom = (z3.Sort * n)()
        arr = (z3.Ast * n)()
        for i, t in enumerate(outs):
            dom[i] = t.sort().ast
            arr[i] = t.as_ast()
        ctx = _CTX.ref()
        name = z3.Z3_mk_string_symbol(ctx, f"pack.{self.tool.name}.{n}")
        fd = z3.Z3_mk_func_decl(ctx, name, n, dom, z3.BoolSort().ast)
        app = z3.BoolRef(z3.Z3_mk_app(ctx, fd, n, arr), _CTX)
        self._pack_cache[key] = (app, n)
        self._pack_bool[key] = [isinstance(t, z3.BoolRef) for t in outs]
        self._keep.append(list(extra))  # ids in the cache key stay valid
        return app, n

    def instantiate_with(self, subst: Substitution, args: Mapping[str, Term],
                         extra: Sequence[Term], cur: Sequence[Term]
                         ) -> tuple[Term, list[Term], list[Term]]:
        """:meth:`instantiate` with the state part of the substitution prepared once
        (:class:`Substitution`, shared by every template over the same pre-state);
        ``args`` must be among its pairs."""
        del args  # already in ``subst``
        app, n = self._packed(extra)
        bools = self._pack_bool[tuple(id(x) for x in extra)]
        ctx = _CTX.ref()
        inst = z3.Z3_substitute(ctx, app.ast, subst.n, subst.src, subst.dst)
        z3.Z3_inc_ref(ctx, inst)
        try:
            subs = []
            for i in range(n):
                a = z3.Z3_get_app_arg(ctx, inst, i)
                # Bools by hand (is_t/is_f compare pointers); ints through z3, which
                # makes numerals IntNumRefs that int_const recognises
                subs.append(z3.BoolRef(a, _CTX) if bools[i] else z3.z3._to_expr_ref(a, _CTX))
        finally:
            z3.Z3_dec_ref(ctx, inst)
        idx = self.changed_idx
        post = list(cur)
        for i, t in zip(idx, subs[1:1 + len(idx)], strict=True):
            post[i] = t
        return subs[0], post, subs[1 + len(idx):]

    def instantiate(self, st: SymState, args: Mapping[str, Term],
                    extra: Sequence[Term] = (), terms: Sequence[Term] | None = None
                    ) -> tuple[Term, list[Term], list[Term]]:
        """``(ok, post_terms, extra_terms)`` for ``st``/``args``: post terms in
        :meth:`SymState.terms` order (unchanged positions are ``st``'s own terms), and
        ``extra`` (other terms over the template's variables) substituted likewise.
        ``terms``: ``st.terms()`` if the caller has them."""
        cur = st.terms() if terms is None else terms
        pre = self._pre_terms
        pairs = [(pre[i], cur[i]) for i in self._vars]
        pairs.extend((self.args[n], args[n]) for n in self.args)
        idx = self.changed_idx
        app, n = self._packed(extra)
        inst = substitute_all([app], pairs)[0]
        ctx = _CTX.ref()
        subs = [z3.z3._to_expr_ref(z3.Z3_get_app_arg(ctx, inst.as_ast(), i), _CTX)
                for i in range(n)]
        post = list(cur)
        for i, t in zip(idx, subs[1:1 + len(idx)], strict=True):
            post[i] = t
        return subs[0], post, subs[1 + len(idx):]


# ------------------------------------------------------------------ concrete runs


def static_arg_error(tool: ToolDef, args: Mapping[str, Any]) -> str | None:
    """The state-independent part of check_args (names and types), or None."""
    if not isinstance(args, Mapping):
        return "arguments must be an object"
    if set(args) != set(tool.params):
        return "unknown or missing arguments"
    for name, p in tool.params.items():
        why = check_value(p.ty, args[name])
        if why:
            return f"{name} must be {why}"
    return None


def creates_per_call(tool: ToolDef) -> dict[str, int]:
    """How many rows of each entity one call of ``tool`` creates."""
    out: dict[str, int] = {}
    for s in tool.effects:
        if isinstance(s.effect, ir.Create):
            out[s.effect.entity] = out.get(s.effect.entity, 0) + 1
    return out


def run_concrete(domain: Domain, state: State, calls: Sequence[tuple[str, Mapping[str, Any]]],
                 *, via_template: bool = False) -> tuple[list[bool], State]:
    """Run a chain through the encoding with concrete tools and arguments.

    Failing calls leave the state unchanged (atomic), as in the interpreter. Returns the
    success of every call and the final state (universe rows only). ``via_template``
    instantiates the symbolic per-tool templates instead of encoding each call directly,
    so both encodings can be tested against the interpreter.
    """
    creates: dict[str, int] = {}
    extra: list[tuple[Ty, Any]] = []
    for name, args in calls:
        tool = domain.tools.get(name)
        if tool is None:
            continue
        for e, n in creates_per_call(tool).items():
            creates[e] = creates.get(e, 0) + n
        if static_arg_error(tool, args) is None:
            extra.extend((tool.params[p].ty, v) for p, v in args.items())
    uni = Universe.build(domain, state, creates, extra)
    st = SymState.from_state(uni, state)
    templates: dict[str, ToolTemplate] = {}
    oks: list[bool] = []
    for name, args in calls:
        tool = domain.tools.get(name)
        if tool is None or static_arg_error(tool, args) is not None:
            oks.append(False)
            continue
        terms = {p: uni.enc_arg(tool.params[p].ty, v) for p, v in args.items()}
        if via_template:
            tpl = templates.get(name) or templates.setdefault(name, ToolTemplate(uni, tool))
            ok, post_terms, _ = tpl.instantiate(st, terms)
            ok = z3.simplify(ok)
            post = st.rebuild([z3.simplify(t) for t in post_terms])
        else:
            enc = encode_call(uni, st, tool, terms)
            ok = z3.simplify(enc.ok)
            post = enc.post.rebuild([z3.simplify(t) for t in enc.post.terms()])
        if not (is_t(ok) or is_f(ok)):
            raise EncodeError(f"call {name}: validity did not reduce to a constant: {ok}")
        oks.append(is_t(ok))
        if is_t(ok):
            st = post
    return oks, st.decode(uni)


__all__ = [
    "FALSE", "OUT", "TRUE", "CallEnc", "EncodeError", "Evaluator", "ListVal", "RecVal",
    "RowVal", "Substitution", "SymState", "SymVal", "Term", "ToolTemplate", "Universe", "and_",
    "creates_per_call", "encode_call", "eq", "exists_at", "free_vars", "implies", "int_const",
    "int_val", "is_f", "is_t", "ite", "leaves", "not_", "or_", "read_field", "run_concrete",
    "static_arg_error", "sym_eq",
]
