"""A working agent model used to build reference chains: knowledge with provenance.

:class:`Planner` plays a careful agent on a concrete state. It knows the givens and
everything earlier calls returned (per :mod:`graphgen.knowledge`), and can *acquire* a
value it needs for an argument: either the instruction will give it (givable and free
sorts), or it searches backwards over the data edges for a read tool whose output on
this state reveals exactly that value, recursively acquiring that tool's arguments.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from graphgen import ir
from graphgen.domain import Domain, ToolDef, per_tool
from graphgen.errors import ToolError
from graphgen.footprint import FieldRef, cells_read, cells_written
from graphgen.interp import call_or_fail
from graphgen.knowledge import (
    Cell,
    Reveal,
    Sort,
    field_sorts,
    givable_sorts,
    key_sort,
    listed_keys,
    param_sort,
    parse_sort,
    produced_sorts,
    reveal,
    row_lookup,
    type_sorts,
)
from graphgen.state import State
from graphgen.tasks.model import Call, Given
from graphgen.types import ListT, RecordT, RowT, strip_opt

# Candidate argument tuples tried per producer tool; a lookup with one parameter, whose
# revealing tuples are looked up rather than tried, is tried on every value of its sort.
MAX_BINDINGS = 400
MAX_DEPTH = 4  # nested lookups allowed to reveal one value

# How a tool call is executed: the interpreter by default, a compiled environment when
# checking one (the generator, the dry-run and the planner all take the same callable).
Executor = Callable[[Domain, State, str, dict[str, Any]], Any]
ReadCache = dict[tuple[str, tuple[Any, ...]], "Read"]


@dataclass
class Read:
    """A memoised read: its result, or the error it raised."""

    ok: bool
    value: Any


def sort_distances(domain: Domain) -> dict[Sort, int]:
    """Fewest read calls needed to learn a value of each sort (type level, from givens).

    Used to try cheap producers first, so reference chains stay short.
    """
    dist: dict[Sort, int] = {s: 0 for s in givable_sorts(domain)}
    changed = True
    while changed:
        changed = False
        for t in domain.read_tools:
            need = 0
            ok = True
            for p in t.params.values():
                s = param_sort(p)
                if s.kind in ("enum", "free"):
                    continue
                if s not in dist:
                    ok = False
                    break
                need = max(need, dist[s])
            if not ok:
                continue
            for s in produced_sorts(domain, t):
                if dist.get(s, 1 << 30) > need + 1:
                    dist[s] = need + 1
                    changed = True
    return dist


@dataclass
class Knowledge:
    """Known values by sort, each with the index of the call that revealed it (-1: given).

    Nothing is known for free. In particular **an enum member is known at a step iff it
    is a given of the task at that parameter's sort (``enum:OrderStatus``: the
    instruction states it, "my pending order", "refund it to my gift card") or an earlier
    output revealed it** (an order row showing ``status: pending`` reveals
    ``enum:OrderStatus`` = ``pending``, see :func:`graphgen.knowledge.field_sorts`). The
    tool schema lists every member, but an agent that filters by a status the user never
    mentioned and no output showed is guessing. The z3 model of chains mirrors this rule.
    """

    facts: dict[Sort, dict[Any, int]] = field(default_factory=dict)
    # The sorts whose value dict this knowledge may change in place (None: every one).
    # A copy shares its original's dicts, and each of the two copies a sort's dict
    # before it first adds to it: the explicit search makes a copy per node it keeps,
    # and most calls add values of few sorts, or none.
    _mine: set[Sort] | None = field(default=None, repr=False, compare=False)

    @classmethod
    def from_givens(cls, givens: Iterable[Given]) -> Knowledge:
        """What the agent knows before any call: the task's givens."""
        know = cls()
        for g in givens:
            know.add(parse_sort(g.sort), g.value, -1)
        return know

    def knows(self, s: Sort, v: Any) -> bool:
        """Is ``v`` known at sort ``s`` (a given, or revealed by an earlier call)?"""
        return _hashable(v) in self.facts.get(s, {})

    def _own(self, s: Sort) -> dict[Any, int]:
        """Sort ``s``'s value dict, this knowledge's own to change."""
        known = self.facts.get(s)
        if self._mine is None:
            if known is None:
                known = self.facts[s] = {}
            return known
        if s not in self._mine:
            known = self.facts[s] = {} if known is None else dict(known)
            self._mine.add(s)
        assert known is not None
        return known

    def add(self, s: Sort, v: Any, origin: int) -> None:
        v = _hashable(v)
        if v not in self.facts.get(s, ()):
            self._own(s)[v] = origin

    def learn(self, shown: Reveal, origin: int) -> None:
        """Add every fact a call's output ``shown`` reveals, in its order (a value known
        already keeps its origin). One listing can reveal tens of thousands."""
        for s, vals in shown.by_sort:
            known = self.facts.get(s, {})
            if len(vals) > 4 * len(known):
                # a listing: the new values in their order, in C, less the few known
                add = dict.fromkeys(vals, origin)
                for v in known:
                    add.pop(v, None)
            else:
                add = {v: origin for v in vals if v not in known}
            if add:
                self._own(s).update(add)

    def origin(self, s: Sort, v: Any) -> int | None:
        return self.facts.get(s, {}).get(_hashable(v))

    def values(self, s: Sort) -> list[Any]:
        return list(self.facts.get(s, {}))

    def facts_items(self) -> list[tuple[Sort, Any]]:
        return [(s, v) for s, d in self.facts.items() for v in d]

    def copy(self) -> Knowledge:
        """An independent knowledge with the same facts, in time independent of how many
        values are known: the value dicts are shared until either side adds to one."""
        self._mine = set()
        return Knowledge(dict(self.facts), set())


def _echoes(tool: ToolDef, s: Sort) -> bool:
    """Does ``tool`` reveal values of ``s`` only by echoing its own argument?

    ``get_order(order_id)`` shows an order id only when given it: as a producer of
    ``key:Order`` it is circular, and trying every row would only waste reads.
    """
    r = row_lookup(tool.returns)
    return r is not None and s == Sort("key", r.entity)


def _hashable(v: Any) -> Any:
    return tuple(v) if isinstance(v, list) else v


class _Pool:
    """The values tried for one parameter: the known ones, then the candidates not
    known, in order (read without listing them all)."""

    def __init__(self, known: list[Any], candidates: Sequence[Any]) -> None:
        self.known, self.candidates = known, candidates
        self._seen = {k: i for i, k in enumerate(known)}
        # ranks among the candidates of the known values that are candidates too
        ranks = (_rank(candidates, k) for k in known)
        self._known_ranks = sorted(r for r in ranks if r is not None)

    def __len__(self) -> int:
        return len(self.known) + len(self.candidates) - len(self._known_ranks)

    def position(self, v: Any) -> int | None:
        """Where ``v`` is in the pool (None: not in it)."""
        at = self._seen.get(_hashable(v))
        if at is not None:
            return at
        r = _rank(self.candidates, v)
        if r is None:
            return None
        return len(self.known) + r - sum(1 for k in self._known_ranks if k < r)

    def first(self, n: int) -> list[Any]:
        """The first ``n`` values of the pool."""
        out = list(self.known[:n])
        for c in self.candidates:
            if len(out) >= n:
                break
            if c not in self._seen:
                out.append(c)
        return out


def _rank(seq: Sequence[Any], v: Any) -> int | None:
    """The position of ``v`` in ``seq`` (None when it is not in it)."""
    rank = getattr(seq, "rank", None)
    if rank is not None:
        got: int | None = rank(v)
        return got
    try:
        return seq.index(v)
    except (ValueError, TypeError):
        return None


@dataclass(frozen=True)
class Lookup:
    """A read that lists rows of ``entity`` whose fields equal its arguments: its result
    is the comprehension ``[proj for x in entity if ... x.f == param ...]`` with every
    parameter pinned so (``pins``: parameter -> field, None for the row's key), or a row
    by its key (``Entity[param]``). ``shows`` is what each listed row shows: its
    "key", the whole "row", or one "field"."""

    entity: str
    pins: tuple[tuple[str, str | None], ...]
    shows: str
    field: str = ""


@per_tool
def lookup_shape(domain: Domain, tool: ToolDef) -> Lookup | None:
    """``tool`` as a :class:`Lookup`, or None when it is not one."""
    e = tool.returns
    if isinstance(e, ir.RowOf) and isinstance(e.key, ir.Var) and list(tool.params) == [e.key.name]:
        return Lookup(e.entity, ((e.key.name, None),), "row")
    if not isinstance(e, ir.Comp) or e.cond is None or not tool.params:
        return None
    x, ent = e.var, e.entity
    if isinstance(e.proj, ir.Var) and e.proj.name == x:
        shows, fld = "key", ""
    elif isinstance(e.proj, ir.RowOf) and _is_var(e.proj.key, x) and e.proj.entity == ent:
        shows, fld = "row", ""
    elif (
        isinstance(e.proj, ir.FieldOf)
        and _is_var(e.proj.key, x)
        and e.proj.entity == ent
        and not isinstance(strip_opt(e.proj.ty), ListT | RecordT | RowT)
    ):
        shows, fld = "field", e.proj.field
    else:
        return None
    pins: dict[str, str | None] = {}
    for part in ir.conjuncts(e.cond):
        if not (isinstance(part, ir.Compare) and part.op == "=="):
            continue
        for a, b in ((part.left, part.right), (part.right, part.left)):
            if not (isinstance(b, ir.Var) and b.name in tool.params and b.name != x):
                continue
            if _is_var(a, x):
                pins.setdefault(b.name, None)
            elif (
                isinstance(a, ir.FieldOf)
                and a.entity == ent
                and _is_var(a.key, x)
                and not isinstance(strip_opt(a.ty), ListT | RecordT | RowT)
            ):
                pins.setdefault(b.name, a.field)
    if set(pins) != set(tool.params):
        return None
    return Lookup(ent, tuple((p, pins[p]) for p in tool.params), shows, fld)


def _is_var(e: ir.Expr, name: str) -> bool:
    return isinstance(e, ir.Var) and e.name == name


def showing_rows(domain: Domain, state: State, shape: Lookup, s: Sort, v: Any) -> list[Any] | None:
    """The keys of the rows of ``shape.entity`` that show ``v`` at ``s`` when listed
    (:func:`graphgen.knowledge.facts_of_result` of one row); None when that cannot be
    looked up (a list field could show it)."""
    ent = shape.entity
    table = state.tables[ent]
    keys: set[Any] = set()
    if s == key_sort(ent) and shape.shows in ("key", "row"):
        try:
            if v in table:
                keys.add(v)
        except TypeError:
            pass  # not hashable: no key
    edef = domain.entities[ent]
    fields = list(edef.fields) if shape.shows == "row" else [shape.field] if shape.field else []
    for f in fields:
        fty = strip_opt(edef.fields[f].ty)
        try:
            if isinstance(fty, ListT):  # a row shows its list's items by their type
                if s in type_sorts(domain, fty.elem):
                    keys.update(state.keys_holding(ent, f, v))
            elif s in field_sorts(domain, ent, f):
                keys.update(state.keys_where(ent, f, v))
        except TypeError:
            return None  # an unhashable value: not looked up here
    return sorted(keys)


class Planner:
    """Builds a chain on ``state`` (mutated by write calls) while tracking knowledge."""

    def __init__(
        self,
        domain: Domain,
        state: State,
        rng: random.Random,
        execute: Executor = call_or_fail,
        usage: dict[str, int] | None = None,
        explore: float = 0.25,
        shared_reads: ReadCache | None = None,
    ) -> None:
        self.domain = domain
        self.explore = explore
        self.state = state
        self.rng = rng
        self.execute = execute
        self.usage = usage if usage is not None else {}
        self.know = Knowledge()
        self.chain: list[Call] = []
        self.results: list[Any] = []
        self.reveals: list[Reveal] = []  # what each call of the chain showed
        self.givens: list[Given] = []
        self.givable = givable_sorts(domain)
        self.dist = sort_distances(domain)
        self.producers: dict[Sort, list[ToolDef]] = {}
        for t in domain.read_tools:
            for s in produced_sorts(domain, t):
                if not _echoes(t, s):
                    self.producers.setdefault(s, []).append(t)
        # Reads on the untouched initial state may be shared by all planners on it (the
        # expander passes one cache per state); the first write switches to a private one.
        self._cache: ReadCache = shared_reads if shared_reads is not None else {}
        self._sorts: dict[str, dict[str, Sort]] = {}

    # ------------------------------------------------------------- bookkeeping

    def snapshot(self) -> tuple[Knowledge, int, int]:
        return self.know.copy(), len(self.chain), len(self.givens)

    def restore(self, snap: tuple[Knowledge, int, int]) -> None:
        # Copy: the same snapshot may be restored again after later mutations.
        self.know, n, g = snap[0].copy(), snap[1], snap[2]
        del self.chain[n:]
        del self.results[n:]
        del self.reveals[n:]
        del self.givens[g:]

    def give(self, s: Sort, v: Any) -> None:
        """The instruction will state ``v``."""
        if not self.know.knows(s, v):
            self.givens.append(Given(sort=str(s), value=v))
            self.know.add(s, v, -1)

    def record(self, tool: str, args: dict[str, Any], result: Any) -> int:
        """Append a call already executed on ``self.state`` and learn from its result."""
        idx = len(self.chain)
        self.chain.append(Call(tool=tool, args=dict(args)))
        self.results.append(result)
        shown = reveal(self.domain, self.state, self.domain.tools[tool], args, result)
        self.reveals.append(shown)
        self.know.learn(shown, idx)
        self.usage[tool] = self.usage.get(tool, 0) + 1
        if self.domain.tools[tool].is_write:
            # A fresh dict (the shared one still describes the initial state) keeping the
            # reads this write cannot change: nothing a read's result depends on is among
            # the write's cells (whole-call footprints, which miss nothing either side).
            written = cells_written(self.domain, self.domain.tools[tool])
            self._cache = {
                k: r for k, r in self._cache.items() if not (self._reads_of(k[0]) & written)
            }
        return idx

    def forget_reads(self) -> None:
        """Drop memoised read results (the state was replaced)."""
        self._cache = {}

    def _read(self, tool: ToolDef, args: dict[str, Any]) -> Read:
        key = (tool.name, tuple(sorted((k, _hashable(v)) for k, v in args.items())))
        got = self._cache.get(key)
        if got is None:
            try:
                got = Read(True, self.execute(self.domain, self.state, tool.name, args))
            except ToolError as exc:
                got = Read(False, exc)
            self._cache[key] = got
        return got

    def read(self, tool: ToolDef, args: dict[str, Any]) -> Any:
        """Result of a read call on the current state (memoised), or raise ToolError."""
        got = self._read(tool, args)
        if not got.ok:
            raise got.value.with_traceback(None)  # re-raised often: don't grow its traceback
        return got.value

    def revealed(self, tool: ToolDef, args: dict[str, Any]) -> frozenset[tuple[Sort, Any]] | None:
        """The (sort, hashable value) facts a read call's result reveals on the current
        state (kept with the state, :func:`graphgen.knowledge.reveal`), or None when the
        call fails."""
        got = self._read(tool, args)
        if not got.ok:
            return None
        return reveal(self.domain, self.state, tool, args, got.value).fact_set

    # ------------------------------------------------------------- acquisition

    def candidates(self, s: Sort) -> Sequence[Any]:
        """Values of sort ``s`` present in the state (to enumerate producer arguments), in
        order; read-only. Keys and field values come from the state's ordered views,
        which are indexed and searched without reading the whole table."""
        if s.kind == "key":
            return self.state.sorted_keys(s.name)
        if s.kind == "field":
            ent, _, f = s.name.partition(".")
            try:
                return self.state.field_values(ent, f)  # None is never said
            except TypeError:  # a list field: its values as tuples
                vals = {_hashable(r[f]) for r in self.state.tables[ent].values()}
                return sorted((v for v in vals if v is not None), key=repr)
        if s.kind == "enum":
            for t in self.domain.tools.values():
                for p in t.params.values():
                    if param_sort(p) == s:
                        return list(strip_opt(p.ty).values)  # type: ignore[attr-defined]
            return []
        return []

    def acquire(
        self,
        s: Sort,
        v: Any,
        depth: int = 0,
        pending: frozenset[tuple[Sort, Any]] = frozenset(),
        narrow: bool = False,
    ) -> bool:
        """Make ``v`` known at sort ``s``, adding givens or lookup calls. Rolls back on failure.

        ``pending`` holds the values being acquired further up: a lookup that needs one
        of them as an argument is circular (``get_x(id)`` to learn ``id``) and is skipped,
        otherwise chains repeat the same read once per nesting level. An enum member is
        never acquired: it is known only when given (:meth:`state_args`) or revealed.
        ``narrow`` prefers, among the lookups that reveal ``v``, the one listing the fewest
        values of ``s`` (a search by status before a list of every order): an agent must
        then read fewer candidates to recognise a described target.
        """
        if self.know.knows(s, v):
            return True
        if s.kind == "enum":
            return False
        if s.kind == "free" or s in self.givable:
            self.give(s, v)
            return True
        if depth >= MAX_DEPTH:
            return False
        producers = list(self.producers.get(s, []))
        self.rng.shuffle(producers)
        # Mostly the cheapest route (short chains); sometimes the least used one, so that
        # every reachable read tool ends up in some reference chain (coverage).
        if self.rng.random() < self.explore:
            producers.sort(key=lambda t: (self.usage.get(t.name, 0), self._cost(t)))
        else:
            producers.sort(key=lambda t: (self._cost(t), self.usage.get(t.name, 0)))
        pending = pending | {(s, _hashable(v))}
        found: Iterable[tuple[ToolDef, dict[str, Any], Any]] = self._revealing(
            producers, s, v, pending
        )
        if narrow and s.kind == "key":
            found = sorted(found, key=lambda m: len(listed_keys(self.domain, m[0], m[2], s.name)))
        for tool, args, result in found:
            snap = self.snapshot()
            if all(
                self.acquire(param_sort(tool.params[p]), a, depth + 1, pending)
                for p, a in args.items()
            ):
                # A lookup made for an argument may already have shown ``v`` (listing a
                # product's items shows the one a variant search would find): stop there.
                if not self.know.knows(s, v):
                    self.record(tool.name, args, result)
                return True
            self.restore(snap)
        return False

    def _revealing(
        self,
        producers: list[ToolDef],
        s: Sort,
        v: Any,
        pending: frozenset[tuple[Sort, Any]],
    ) -> Iterable[tuple[ToolDef, dict[str, Any], Any]]:
        """The (tool, args, result) reads on this state whose output reveals ``v`` at ``s``:
        per producer, its bindings (:meth:`_bindings`) in order that do."""
        want = (s, _hashable(v))
        for tool in producers:
            sorts = self._param_sorts(tool)
            found = self._revealing_bindings(tool, s, v)
            for args in self._bindings(tool) if found is None else found:
                if any((sorts[p], _hashable(a)) in pending for p, a in args.items()):
                    continue
                facts = self.revealed(tool, args)
                if facts is not None and want in facts:
                    yield tool, args, self.read(tool, args)

    def _revealing_bindings(self, tool: ToolDef, s: Sort, v: Any) -> list[dict[str, Any]] | None:
        """Among :meth:`_bindings`, in their order, the only ones that can reveal ``v`` at
        ``s`` (a superset of those that do), found from the rows that show it instead of
        by trying every binding; None when ``tool`` is not a :class:`Lookup`.

        A lookup lists the rows whose pinned fields equal its arguments, and what a
        result reveals is what its rows show, each on its own; so a row that shows ``v``
        is listed by one binding only, its own field values."""
        shape = lookup_shape(self.domain, tool)
        if shape is None:
            return None
        keys = showing_rows(self.domain, self.state, shape, s, v)
        if keys is None:
            return None
        names = list(tool.params)
        pools = [self._pool_of(self._param_sorts(tool)[n]) for n in names]
        if any(pool is None for pool in pools):
            return []  # a free argument: no binding (as :meth:`_bindings`)
        table = self.state.tables[shape.entity]
        found: dict[int, dict[str, Any]] = {}
        for k in keys:
            args = {p: k if f is None else table[k][f] for p, f in shape.pins}
            at, size = 0, 1
            for n, pool in zip(reversed(names), reversed(pools), strict=True):
                assert pool is not None
                pos = pool.position(args[n])
                if pos is None:
                    break
                at += pos * size
                size *= len(pool)
            else:
                if len(names) == 1 or at < MAX_BINDINGS:
                    found.setdefault(at, {n: args[n] for n in names})
        return [found[at] for at in sorted(found)]

    def _pool_of(self, s: Sort) -> _Pool | None:
        """The values :meth:`_bindings` tries at sort ``s`` (None: a free sort)."""
        if s.kind == "free":
            return None
        return _Pool(self.know.values(s), self.candidates(s))

    def _reads_of(self, tool: str) -> frozenset[FieldRef]:
        """Every location a call of ``tool`` depends on (:func:`cells_read`)."""
        return cells_read(self.domain, self.domain.tools[tool])

    def _param_sorts(self, tool: ToolDef) -> dict[str, Sort]:
        """Each parameter's sort (:func:`param_sort`), computed once per tool."""
        got = self._sorts.get(tool.name)
        if got is None:
            got = self._sorts[tool.name] = {p: param_sort(q) for p, q in tool.params.items()}
        return got

    def state_args(self, tool: ToolDef, args: dict[str, Any]) -> None:
        """The user asks for this call in words: the intent sentence states every
        argument (:func:`graphgen.tasks.render.intent_text`), so its enum members are
        givens ("refund it to my gift card", "upgrade me to business")."""
        for p, a in args.items():
            s = param_sort(tool.params[p])
            if s.kind == "enum":
                self.give(s, a)

    def shown(self) -> set[Cell]:
        """The cells of particular rows the chain so far has shown
        (:func:`graphgen.knowledge.shown_cells`)."""
        out: set[Cell] = set()
        for shown in self.reveals:
            out |= shown.cells
        return out

    def _cost(self, tool: ToolDef) -> int:
        cost = 0
        for p in tool.params.values():
            s = param_sort(p)
            if s.kind not in ("enum", "free"):
                cost = max(cost, self.dist.get(s, 99))
        return cost

    def _bindings(
        self, tool: ToolDef, limit: int | None = MAX_BINDINGS
    ) -> Iterable[dict[str, Any]]:
        """Argument tuples to try for ``tool``: the product of each parameter's known
        values, then the state's other values of its sort, in order; the first ``limit``
        of them (all with None)."""
        names = list(tool.params)
        pools: list[Sequence[Any]] = []
        for n in names:
            pool = self._pool_of(param_sort(tool.params[n]))
            if pool is None:
                return  # a producer needing an invented value cannot reveal a given one
            # A value past the first ``limit`` of its pool is in no binding tried.
            pools.append(pool.first(limit) if limit is not None else pool.first(len(pool)))
        for i, combo in enumerate(itertools.product(*pools)):
            if limit is not None and i >= limit:
                return
            yield dict(zip(names, combo, strict=True))

    # ------------------------------------------------------------- acting

    def call(self, tool: str, args: dict[str, Any], stated: bool = False) -> tuple[bool, Any]:
        """Acquire every argument, then execute ``tool`` on the state.

        ``stated``: the call is an intent the instruction asks for in words, so its enum
        arguments are givens (:meth:`state_args`). Returns (ok, result-or-ToolError). On
        failure the planner is rolled back.
        """
        t = self.domain.tools[tool]
        snap = self.snapshot()
        if stated:
            self.state_args(t, args)
        for p, a in args.items():
            if not self.acquire(param_sort(t.params[p]), a):
                self.restore(snap)
                return False, None
        try:
            result = self.execute(self.domain, self.state, tool, args)
        except ToolError as exc:
            self.restore(snap)
            return False, exc
        self.record(tool, args, result)
        return True, result
