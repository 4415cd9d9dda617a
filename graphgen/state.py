"""The concrete state a domain's tools act on.

A state is a set of tables (entity → key → row) plus, per table, the counter that the
next ``create`` turns into an id. Rows hold field values only; the key lives in the
table's mapping.

**Copies share rows.** Task generation and the proofs copy a state for every candidate,
replay and write order, and states reach a hundred thousand rows, so :meth:`State.copy`
copies no table: the copy and the original share every table and row dict, and a state
copies a table (shallowly) or a row only when it first writes to it. The tables are
therefore read-only to everyone but the state itself: read them through
:attr:`State.tables`, write through :meth:`State.set_field`, :meth:`State.put_row` and
:meth:`State.delete_row` (the interpreter's effects and their undo do). Lists inside rows
are never changed in place either (effects replace them).

**What is shared is computed once.** Each table remembers the rows it started from (its
*base*, shared by every copy and never changed) and the keys written since. What depends
on the base alone, its keys in order and the equality indexes of
:meth:`State.keys_where`, is built once, when first asked for, and serves every copy: a
lookup is the base's answer corrected by the few rows written since. Two states with the
same base compare, and differ (:func:`changed_views`), by their written keys only.
"""

from __future__ import annotations

import copy
import json
from collections import Counter, OrderedDict
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, ConfigDict

from graphgen.domain import Domain
from graphgen.grading import state_diff
from graphgen.keys import key_from_json
from graphgen.tablebase import Base, OrderedView, Row, Table, field_value, hashable
from graphgen.today import check_today

__all__ = [
    "Row",
    "SharedForms",
    "SharedRow",
    "State",
    "StateModel",
    "Table",
    "changed_views",
    "diff",
]

_V = TypeVar("_V")

_MISSING = object()
# A table whose written keys pass this many (and an eighth of its rows) takes its current
# rows as its new base: lookups stay cheap after many writes (state generation's rules).
_REBASE_AT = 64


def call_key(name: str, args: Mapping[str, Any]) -> tuple[Any, ...] | None:
    """A call of tool ``name`` as a key of :meth:`State.memo`, or None when an argument
    cannot be hashed (a dict). A list argument counts as a tuple of its items; each value
    keeps its type, so ``True`` and ``1`` are different arguments."""
    try:
        items = frozenset((k, type(v), hashable(v)) for k, v in args.items())
    except TypeError:
        return None
    return (name, items)


class StateModel(BaseModel):
    """The JSON boundary form of a state (what files and tasks hold)."""

    model_config = ConfigDict(extra="forbid")
    tables: dict[str, dict[str | int, dict[str, Any]]]  # int ids in memory, "3" in JSON
    counters: dict[str, int]
    # The tables whose ids are ints (``key: {type: int}``). JSON object keys are strings,
    # so int id 3 is written "3"; this list says which tables to read back as ints. It
    # is written only when some table has int ids, so other states keep their bytes.
    int_keys: list[str] = []
    # The state's today (``today()``; graphgen.today), written only when set, so the
    # states of domains that never read it keep their bytes.
    today: str | None = None


class SharedRow(dict[str, Any]):
    """A row that states share and nobody may change in place: the rows of a state read
    by :meth:`State.from_dict` (kept for the next reader) and of a generated one (shared
    by every candidate drawn on it). Changing one raises TypeError; a state writing to
    it writes to a copy (:meth:`State.set_field`). Otherwise a plain dict."""

    __slots__ = ()

    def _refuse(self, *_: Any, **__: Any) -> Any:
        raise TypeError("a shared state row is read-only: write through State.set_field")

    __setitem__ = __delitem__ = __ior__ = _refuse
    update = pop = popitem = clear = setdefault = _refuse

    def __reduce__(self) -> tuple[Any, ...]:
        return (SharedRow, (dict(self),))

    def __deepcopy__(self, memo: dict[int, Any]) -> dict[str, Any]:
        # A deep copy is nobody else's: the caller may change it (a task's initial state
        # edited into another one).
        return {k: copy.deepcopy(v, memo) for k, v in self.items()}


def shared_rows(tables: dict[str, Table]) -> dict[str, Table]:
    """``tables`` with every row a :class:`SharedRow`."""
    return {e: {k: SharedRow(r) for k, r in t.items()} for e, t in tables.items()}


class State:
    """A mutable concrete state. Cheap to copy (rows are shared until written, see the
    module docstring); compares by value."""

    __slots__ = (
        "_bases",
        "_cur",
        "_dirty",
        "_json",
        "_memo",
        "_mine",
        "counters",
        "tables",
        "today",
    )

    def __init__(
        self, tables: dict[str, Table], counters: dict[str, int], today: str | None = None
    ) -> None:
        # The given tables become the bases (each when first needed: a state made to
        # evaluate one expression makes none): this state never changes them in place.
        self.tables = dict(tables)
        self.counters = counters
        self.today = today  # None: graphgen.today.DEFAULT_TODAY
        self._bases: dict[str, Base] = {}
        self._dirty: dict[str, set[Any]] = {}
        # The table dicts the bases and writes are of; one found in :attr:`tables` instead
        # is new: given, or put there whole from outside (``st.tables["User"] = {...}``).
        self._cur: dict[str, Table] = {}
        # Tables whose dict is this state's alone, each with the keys whose row dict is.
        self._mine: dict[str, set[Any]] = {}
        # The JSON form, built once per content (and the counters and today it is of).
        self._json: tuple[tuple[dict[str, int], str | None], dict[str, Any]] | None = None
        self._memo: dict[Any, Any] = {}

    @classmethod
    def empty(cls, domain: Domain) -> State:
        return cls({e: {} for e in domain.entities}, {e: 1 for e in domain.entities})

    def copy(self) -> State:
        """An independent state with the same contents, in time independent of its size."""
        for e in self.tables:
            self._sync(e)  # one base per table for the copies to share
        new = State.__new__(State)
        new.tables = dict(self.tables)
        new.counters = dict(self.counters)
        new.today = self.today
        new._bases = dict(self._bases)
        new._dirty = {e: set(d) for e, d in self._dirty.items()}
        new._cur = dict(self._cur)
        new._mine = {}
        new._json = self._json
        new._memo = self._memo
        self._mine = {}  # every dict is shared with the copy now
        return new

    def assign(self, other: State) -> None:
        """Make this state hold what ``other`` holds (an undo to a copy taken earlier);
        ``other`` is not changed."""
        c = other.copy()
        self.tables, self.counters, self.today = c.tables, c.counters, c.today
        self._bases, self._dirty, self._cur, self._mine, self._json = (
            c._bases,
            c._dirty,
            c._cur,
            {},
            c._json,
        )
        self._memo = c._memo

    # ------------------------------------------------------------------ writes

    def _sync(self, entity: str) -> Base:
        """``entity``'s base (a table put in whole from outside becomes one)."""
        table = self.tables[entity]
        if table is not self._cur.get(entity):
            if entity in self._cur:
                self._json, self._memo = None, {}  # put there from outside: new content
            self._cur[entity] = table
            self._bases[entity] = Base(table)
            self._dirty[entity] = set()
            self._mine.pop(entity, None)
        return self._bases[entity]

    def _writable(self, entity: str) -> tuple[Table, set[Any]]:
        self._sync(entity)
        mine = self._mine.get(entity)
        if mine is None:
            self.tables[entity] = self._cur[entity] = dict(self.tables[entity])
            mine = self._mine[entity] = set()
        return self.tables[entity], mine

    def _touch(self, entity: str, key: Any) -> None:
        self._json, self._memo = None, {}
        dirty = self._dirty[entity]
        dirty.add(key)
        if len(dirty) > _REBASE_AT and len(dirty) * 8 > len(self.tables[entity]):
            # The current rows become the base: shared from now on, like a copy's.
            self._bases[entity] = Base(self.tables[entity])
            self._dirty[entity] = set()
            self._mine.pop(entity, None)

    def set_field(self, entity: str, key: Any, field: str, value: Any) -> None:
        """Set one field of an existing row (KeyError if there is no such row)."""
        table, mine = self._writable(entity)
        row = table[key]
        if key not in mine:
            row = table[key] = dict(row)
            mine.add(key)
        row[field] = value
        self._touch(entity, key)

    def put_row(self, entity: str, key: Any, row: Row) -> None:
        """Create (or replace) a row. The state keeps ``row`` and never changes it in
        place: the caller may keep it too."""
        table, mine = self._writable(entity)
        table[key] = row
        mine.discard(key)
        self._touch(entity, key)

    def delete_row(self, entity: str, key: Any) -> None:
        """Delete a row (KeyError if there is no such row)."""
        table, mine = self._writable(entity)
        del table[key]
        mine.discard(key)
        self._touch(entity, key)

    # ------------------------------------------------------------------ reads

    def memo(self) -> dict[Any, Any]:
        """A dict for what is computed from this state's rows (a domain's invariants on
        it, say), shared with its copies until one of them writes: a write starts an
        empty one. Keys name what is kept and what it depends on besides the rows."""
        for e in self.tables:
            self._sync(e)  # a table put in whole from outside is new content
        return self._memo

    def sorted_keys(self, entity: str) -> Sequence[Any]:
        """The keys of ``entity``'s table in order (the one order every backend uses):
        a read-only sequence, indexed and searched (``in``, ``index``) in time that
        grows with the rows written, not with the table."""
        base, dirty = self._sync(entity), self._dirty[entity]
        keys = base.sorted_keys()
        table, rows = self.tables[entity], base.rows
        gone = [k for k in dirty if k in rows and k not in table]
        extra = [k for k in dirty if k in table and k not in rows]
        return OrderedView(keys, keys, _same, gone, extra)

    def field_values(self, entity: str, field: str) -> Sequence[Any]:
        """The distinct values of ``entity.field`` but None, ordered by ``repr``: a
        read-only sequence like :meth:`sorted_keys`. TypeError for a list field."""
        base, dirty = self._sync(entity), self._dirty[entity]
        vals, reprs = base.values(field)
        view = OrderedView(vals, reprs, repr, (), ())
        if not dirty:
            return view
        # The values some written row held or holds: present now iff a row holds it.
        table, rows, index = self.tables[entity], base.rows, base.index(field, False)
        left: Counter[Any] = Counter()
        now: set[Any] = set()
        for k in dirty:
            if k in rows:
                left[rows[k][field]] += 1
            if k in table:
                now.add(hashable(table[k][field]))
        touched = (set(left) | now) - {None}
        gone = [v for v in touched if v in view and v not in now and len(index[v]) == left[v]]
        extra = [v for v in touched if v not in view]
        return OrderedView(vals, reprs, repr, gone, extra)

    def keys_where(
        self, entity: str, field: str, value: Any, decimal: bool = False
    ) -> Sequence[Any]:
        """The keys, in order, of the rows of ``entity`` whose ``field`` equals ``value``
        (``decimal``: the field holds decimals, compared as numbers, as expressions do);
        read-only.

        Raises TypeError when ``value`` or a value of the field is not hashable (a list):
        the caller scans instead."""
        base, dirty = self._sync(entity), self._dirty[entity]
        hits = base.index(field, decimal).get(value, ())
        if not dirty:
            return hits
        return _amended(
            hits,
            dirty,
            base.rows,
            self.tables[entity],
            lambda row: field_value(row[field], decimal) == value,
        )

    def indexed(self, entity: str, field: str, decimal: bool = False) -> bool:
        """Does :meth:`keys_where` on ``entity.field`` answer from an index built already
        (no pass over the table)?"""
        return self._sync(entity).indexed(field, decimal)

    def keys_holding(self, entity: str, field: str, item: Any) -> Sequence[Any]:
        """The keys, in order, of the rows of ``entity`` whose list ``field`` holds
        ``item``; read-only, like :meth:`keys_where`."""
        base, dirty = self._sync(entity), self._dirty[entity]
        hits = base.holding(field, item)
        if not dirty:
            return hits
        return _amended(hits, dirty, base.rows, self.tables[entity], lambda row: item in row[field])

    def refs_exist(self, entity: str, field: str, target: str) -> bool:
        """Does ``field`` of every row of ``entity`` name an existing row of ``target``
        (None names none)? Answered from the bases (once) and the rows written since;
        False may also mean the bases had a dangling reference that writes removed."""
        base, tbase = self._sync(entity), self._sync(target)
        if not base.names_rows_of(field, tbase):
            return False
        table, targets = self.tables[entity], self.tables[target]
        for k in self._dirty[entity]:
            row = table.get(k)
            if row is not None and row[field] not in targets:
                return False
        return not any(
            k not in targets and self.keys_where(entity, field, k) for k in self._dirty[target]
        )

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, State):
            return False
        if (
            self.counters != other.counters
            or self.today != other.today
            or self.tables.keys() != other.tables.keys()
        ):
            return False
        for e, t in self.tables.items():
            u = other.tables[e]
            if t is u:
                continue
            if self._sync(e) is other._sync(e):
                # Rows neither wrote since their common base are the base's on both sides.
                if len(t) != len(u) or any(
                    t.get(k, _MISSING) != u.get(k, _MISSING)
                    for k in self._dirty[e] | other._dirty[e]
                ):
                    return False
            elif t != u:
                return False
        return True

    __hash__ = None  # type: ignore[assignment]

    def __reduce__(self) -> tuple[Any, ...]:
        # The rows as they are now; what the copies shared is rebuilt when needed.
        return (State, (self.tables, self.counters, self.today))

    def changed_keys(self, other: State, entity: str) -> set[Any] | None:
        """The keys whose rows may differ between ``self`` and ``other`` in ``entity``
        (None: any may, they share no base); the caller may keep the set."""
        if self.tables.get(entity) is other.tables.get(entity):
            return set()
        if (
            entity in self.tables
            and entity in other.tables
            and self._sync(entity) is other._sync(entity)
        ):
            return self._dirty[entity] | other._dirty[entity]
        return None

    # ------------------------------------------------------------------ JSON

    def to_dict(self) -> dict[str, Any]:
        """The JSON-ready form (:class:`StateModel`), a new dict the caller may change.
        Row ids are the tables' keys: int ids stay ints here and become strings only in
        JSON text, listed in ``int_keys`` so :meth:`from_dict` reads them back as ints."""
        return self._json_ready(copy_rows=True)

    def _json_ready(self, *, copy_rows: bool) -> dict[str, Any]:
        keys = {e: self.sorted_keys(e) for e in self.tables}
        out: dict[str, Any] = {
            "tables": {
                e: {k: dict(t[k]) for k in keys[e]}
                if copy_rows
                else dict(zip(keys[e], map(t.__getitem__, keys[e]), strict=True))
                for e, t in sorted(self.tables.items())
            },
            "counters": dict(sorted(self.counters.items())),
        }
        # The keys of a table were sorted, so they are all ints or none is: the first says.
        ints = sorted(e for e, ks in keys.items() if ks and isinstance(ks[0], int))
        if ints:
            out["int_keys"] = ints
        if self.today is not None:
            out["today"] = self.today
        return out

    def json_form(self) -> dict[str, Any]:
        """:meth:`to_dict`, built once per content and shared (by the tasks of one
        initial state, by the dry-run's checks): read-only."""
        for e in self.tables:
            self._sync(e)  # a table put in whole from outside is new content
        if self._json is None or self._json[0] != (self.counters, self.today):
            # The form shares this state's rows (copying them all cost 0.3 s per 100,000
            # rows); none is this state's own any more, so a later write copies its row
            # and the form keeps the content it was made from.
            self._mine = {}
            self._json = ((dict(self.counters), self.today), self._json_ready(copy_rows=False))
        return self._json[1]

    def to_json(self, indent: int | None = 2) -> str:
        """Canonical JSON: same state ⇒ same bytes."""
        return json.dumps(self.to_dict(), indent=indent, sort_keys=True, ensure_ascii=False)

    @classmethod
    def from_dict(cls, data: dict[str, Any], domain: Domain | None = None) -> State:
        """A state from its JSON form. Ids of the tables listed in ``int_keys`` (or, given
        ``domain``, of its ``type: int`` keys) are read as ints: ``"3"`` is id 3.

        The tasks of one initial state share its tables' dict, so the state read from it
        is kept (:class:`SharedForms`, a few per process) and each call gets a copy:
        reading is paid once per state. Its rows are :class:`SharedRow`: a copy's writes
        never reach the kept state, and changing a row in place raises. The tables'
        dict must not be changed after it was read (a changed copy is a new dict).

        Raises ValueError (pydantic's ValidationError) on a malformed state, including
        an int-keyed table with a key that is not an integer's canonical text.
        """
        ints = None if domain is None else frozenset(domain.int_keys)
        return _READ.get(data, lambda d: cls._read(d, ints), ints).copy()

    @classmethod
    def _read(cls, data: dict[str, Any], ints: frozenset[str] | None) -> State:
        m = StateModel.model_validate(data)
        int_tables = set(m.int_keys) if ints is None else ints
        tables: dict[str, Table] = {}
        for e, t in m.tables.items():
            if e in int_tables:
                try:
                    rows = {key_from_json(True, str(k)): SharedRow(r) for k, r in t.items()}
                except ValueError as exc:
                    raise ValueError(f"table {e}: {exc}") from None
            else:
                rows = {k: SharedRow(r) for k, r in t.items()}
            # the keys alone: a list of one key type sorts with its fast comparison,
            # pairs by the generic one (on 128,000 airline rows at x1000: 14 ms, 138 ms)
            tables[e] = {k: rows[k] for k in sorted(rows)}  # type: ignore[type-var]
        today = None if m.today is None else check_today(m.today)
        return cls(tables, dict(m.counters), today)

    def __repr__(self) -> str:
        sizes = ", ".join(f"{e}={len(t)}" for e, t in self.tables.items())
        return f"State({sizes})"


class SharedForms(Generic[_V]):
    """What was computed from a state's JSON form, for the next form of the same state:
    the forms the tasks of one initial state hold share their ``tables`` dict (a task's
    own dict around it is a copy), so a form is known by that dict's identity and the
    value of its few other entries. Keeps the ``keep`` most recently used; per
    process."""

    def __init__(self, keep: int) -> None:
        self.keep = keep
        # (id of the tables dict, extra key) -> (the dict, kept so that its id is not
        # reused; the other entries; the value)
        self._got: OrderedDict[tuple[int, Any], tuple[Any, dict[str, Any], _V]] = OrderedDict()

    def get(
        self, data: dict[str, Any], compute: Callable[[dict[str, Any]], _V], extra: Any = None
    ) -> _V:
        """``compute(data)``, or what it gave for a form of the same state."""
        if not isinstance(data, dict) or not isinstance(data.get("tables"), dict):
            return compute(data)  # not a state's form: nothing to know it by
        tables = data["tables"]
        rest = {k: v for k, v in data.items() if k != "tables"}
        key = (id(tables), extra)
        hit = self._got.get(key)
        if hit is not None and hit[0] is tables and hit[1] == rest:
            self._got.move_to_end(key)
            return hit[2]
        value = compute(data)
        self._got[key] = (tables, copy.deepcopy(rest), value)
        if len(self._got) > self.keep:
            self._got.popitem(last=False)
        return value


# The states State.from_dict read (extra key: the int-keyed tables a domain names).
_READ: SharedForms[State] = SharedForms(8)


def _amended(
    hits: Sequence[Any],
    dirty: Iterable[Any],
    before: Table,
    now: Table,
    holds: Callable[[Row], bool],
) -> Sequence[Any]:
    """``hits`` (the keys, in order, of the base rows ``before`` that ``holds``) as they
    are on the table ``now``: the written keys (``dirty``) whose row held and no longer
    does left out, those whose row holds and did not added. Only the few written rows are
    looked at: on a state copied from a large one, a lookup that hits thousands of rows
    would otherwise rebuild that list after every write to the table."""
    gone, extra = [], []
    for k in dirty:
        row = before.get(k)
        was = row is not None and holds(row)
        row = now.get(k)
        if row is not None and holds(row):
            if not was:
                extra.append(k)
        elif was:
            gone.append(k)
    if not gone and not extra:
        return hits
    return OrderedView(tuple(hits), hits, _same, gone, extra)


def _same(k: Any) -> Any:
    return k


def changed_views(
    before: State, after: State, also: Iterable[tuple[str, Any]] = ()
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The JSON forms of two states cut down to the rows that may differ between them
    (plus the rows ``also`` names): what :mod:`graphgen.grading` needs to diff and grade
    ``after`` against ``before`` (:func:`~graphgen.grading.state_diff`,
    :func:`~graphgen.grading.grade` with a goal whose rows are in ``also``), in time
    that grows with the rows written, not with the tables.

    Every row outside the views is the same in both states, so it can be neither a
    difference nor a created row; counters are whole."""
    extra: dict[str, set[Any]] = {}
    for e, k in also:
        extra.setdefault(e, set()).add(k)
    tb: dict[str, Table] = {}
    ta: dict[str, Table] = {}
    for e in sorted(set(before.tables) | set(after.tables)):
        t0, t1 = before.tables.get(e, {}), after.tables.get(e, {})
        keys = before.changed_keys(after, e)
        if keys is None:
            tb[e], ta[e] = dict(t0), dict(t1)
            continue
        keys |= extra.get(e, set())
        tb[e] = {k: t0[k] for k in keys if k in t0}
        ta[e] = {k: t1[k] for k in keys if k in t1}
    return (
        {"tables": tb, "counters": dict(before.counters)},
        {"tables": ta, "counters": dict(after.counters)},
    )


def diff(before: State, after: State) -> list[tuple[str, str, str, Any, Any]]:
    """Field-level differences as (entity, key, field, old, new), sorted.

    A created row shows as field '*' with old ``None``; a deleted row as field '*' with
    new ``None``. The grader's own diff does the work, so the two cannot disagree.
    """
    a, b = changed_views(before, after)
    return state_diff(a, b)
