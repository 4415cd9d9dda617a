"""The entities' ``generate:`` rules and ``invariants``, applied to a freshly drawn state.

Business rules the schema cannot express come from each entity's ``generate:`` block
(:class:`graphgen.spec.GenerateSpec`) and its ``invariants`` (the policy's rules about
states, :class:`graphgen.spec.InvariantSpec`). Once every table is drawn, ``derive``
fields are computed (in dependency order, see :func:`derive_order`), then every
``require`` condition and every invariant is checked on every row; a violating row has
the fields the condition reads re-drawn from their own seeded stream
(``{seed}:{entity}:#require:{key}:{pass}:{try}``) until it holds, at most
:data:`REQUIRE_TRIES` times per pass. An invariant that reads no re-drawable scalar of
its row (ownership: ``PaymentMethod[x.payment_method_id].user_id == x.user_id``) has
the row's reference fields it reads re-drawn instead.

:func:`invariant_violations` checks the invariants on any state (the dry-run gate uses
it on initial and final states of candidate tasks). Rules are evaluated with
:func:`graphgen.interp.evaluate`; a table that a rule only visits through comprehensions
filtered on ``r.ref == x...`` (or ``r.key in x.list``) is cut down to the matching rows
first, so per-row aggregates stay linear in the table size. After the first pass, a
condition is evaluated on a row again only when something it reads there changed since
it last held (:class:`_Deps`), and a repair attempt re-checks only the conditions that
failed and those reading a field it moved: the same state, with half the evaluations on
a big airline state.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from decimal import Decimal
from functools import partial
from typing import TYPE_CHECKING, Any, assert_never

from graphgen import ir
from graphgen.domain import Derive, Domain, EntityDef, per_domain
from graphgen.errors import StateGenError, ToolError
from graphgen.interp import evaluate, stored
from graphgen.state import State
from graphgen.types import BOOL, DecT, EnumT, ListT, PrimT, RefT

if TYPE_CHECKING:  # the generator imports this module to apply the rules
    from graphgen.stategen import StateGenerator

__all__ = [
    "REQUIRE_TRIES",
    "RuleEngine",
    "Violation",
    "derive_order",
    "invariant_violations",
    "rule_reads",
]

# Re-draws of one violating row before it counts as stuck in this pass (in widening
# stages, see RuleEngine._repair), and passes over all rows before rules that keep breaking
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

    label: str  # e.g. "generate.require[1]", "invariant paid_by_owner", "the bounds of ..."
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
        match n:
            case ir.FieldOf(entity=y, key=k, field=f):
                out.add((y, f, y == ent and _is_x(k)))
            case ir.RowOf(entity=y, key=k):
                own = y == ent and _is_x(k)
                out.update((y, g, own) for g in domain.entities[y].fields)
            case ir.Agg(fn="count", comp=c):
                stack.extend(x for x in (c.cond,) if x is not None)
                continue
            case (
                ir.Lit()
                | ir.Var()
                | ir.Exists()
                | ir.Compare()
                | ir.BoolOp()
                | ir.Not()
                | ir.Arith()
                | ir.Neg()
                | ir.Contains()
                | ir.Len()
                | ir.ListLit()
                | ir.Comp()
                | ir.Agg()
                | ir.IfExp()
                | ir.DictLit()
                | ir.IsNone()
                | ir.Old()
                | ir.DictComp()
                | ir.Round()
                | ir.StrOp()
                | ir.Index()
                | ir.Today()
            ):
                pass  # reads nothing itself; its children may
            case _:
                assert_never(n)
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
                f"\n    in: {d.source}"
            )
        deps[(ent, fname)] = [
            (e, f) for e, f, _ in sorted(reads) if (e, f) in rules and (e, f) != (ent, fname)
        ]
    out: list[tuple[str, Derive]] = []
    state: dict[tuple[str, str], int] = {}  # 1 = on the current path, 2 = placed

    def place(node: tuple[str, str], path: list[tuple[str, str]]) -> None:
        if state.get(node) == 2:
            return
        if state.get(node) == 1:
            cyc = [*path[path.index(node) :], node]
            raise StateGenError(
                f"{domain.source}: generate.derive rules form a cycle: "
                + " -> ".join(f"{e}.{f}" for e, f in cyc)
            )
        state[node] = 1
        for dep in deps[node]:
            place(dep, [*path, node])
        state[node] = 2
        out.append((node[0], rules[node]))

    for node in rules:
        place(node, [])
    return out


def _x_only(e: ir.Expr) -> bool:
    return all(not isinstance(n, ir.Var | ir.Comp) or _is_x(n) for n in ir.walk(e))


TableNode = ir.Comp | ir.FieldOf | ir.RowOf | ir.Exists


def _table_nodes(e: ir.Expr) -> Iterator[tuple[TableNode, dict[str, str]]]:
    """Every node of ``e`` that touches a table (a comprehension over it, a field or
    row read, an existence test), with the comprehension variables in scope there
    (variable -> the entity it ranges over)."""
    stack: list[tuple[ir.Expr, dict[str, str]]] = [(e, {})]
    while stack:
        n, cvars = stack.pop()
        match n:
            case ir.Comp(var=v, entity=y):
                yield n, cvars
                inner = {**cvars, v: y}
                stack.extend((c, inner) for c in ir.children(n))
                continue
            case ir.FieldOf() | ir.RowOf() | ir.Exists():
                yield n, cvars
            case (
                ir.Lit()
                | ir.Var()
                | ir.Compare()
                | ir.BoolOp()
                | ir.Not()
                | ir.Arith()
                | ir.Neg()
                | ir.Contains()
                | ir.Len()
                | ir.ListLit()
                | ir.Agg()
                | ir.IfExp()
                | ir.DictLit()
                | ir.IsNone()
                | ir.Old()
                | ir.DictComp()
                | ir.Round()
                | ir.StrOp()
                | ir.Index()
                | ir.Today()
            ):
                pass  # touches no table itself; its children may
            case _:
                assert_never(n)
        stack.extend((c, cvars) for c in ir.children(n))


def _narrowings(e: ir.Expr, ent: str, stable: Callable[[str, str], bool]) -> tuple[_Narrow, ...]:
    """The tables ``e`` (over row ``x`` of ``ent``) can be evaluated on in part."""
    comps: dict[str, list[ir.Comp]] = {}
    others: dict[str, list[ir.Expr]] = {}  # keys of lookups outside comprehensions
    for n, cvars in _table_nodes(e):
        if isinstance(n, ir.Comp):
            comps.setdefault(n.entity, []).append(n)
        elif not (isinstance(n.key, ir.Var) and cvars.get(n.key.name) == n.entity):
            others.setdefault(n.entity, []).append(n.key)
    out: list[_Narrow] = []
    for y, cs in comps.items():
        common: list[_Narrow] | None = None
        for c in cs:
            cands = []
            for part in ir.conjuncts(c.cond):
                if isinstance(part, ir.Compare) and part.op == "==":
                    for a, b in ((part.left, part.right), (part.right, part.left)):
                        if not _x_only(b):
                            continue
                        if isinstance(a, ir.Var) and a.name == c.var:
                            cands.append(_Narrow(y, "eq", _KEY, b))
                        elif (
                            isinstance(a, ir.FieldOf)
                            and isinstance(a.key, ir.Var)
                            and a.key.name == c.var
                            and stable(y, a.field)
                        ):
                            cands.append(_Narrow(y, "eq", a.field, b))
                elif (
                    isinstance(part, ir.Contains)
                    and not part.negated
                    and isinstance(part.item, ir.Var)
                    and part.item.name == c.var
                    and _x_only(part.container)
                ):
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
                or (
                    isinstance(pick.rhs, ir.FieldOf)
                    and _is_x(pick.rhs.key)
                    and pick.rhs.field == pick.field
                )
            )
            if not (y == ent and own and all(_is_x(k) for k in others[y])):
                continue
        out.append(pick)
    return tuple(out)


@dataclass(frozen=True)
class _Deps:
    """What one condition reads on row ``x``, fine enough to tell, after other rows
    changed, that it still holds without evaluating it again (:meth:`RuleEngine.enforce`).
    The engine creates and deletes no rows, so only field values can change."""

    own: tuple[str, ...]  # fields of row x
    keyed: tuple[tuple[str | None, str, str], ...]  # (x's ref field or None for x, E, f): E[k].f
    groups: tuple[tuple[str, str, str], ...]  # (E, g, h): any field of E's rows with g == x.h
    columns: tuple[tuple[str, str], ...]  # (E, f): field f of any row of E
    in_groups: tuple[tuple[str, str], ...]  # (E, f): the fields read on the groups' rows

    def sees(self, ent: str, fields: AbstractSet[str]) -> bool:
        """Can a change of ``fields`` of row x itself (of ``ent``) change the value?"""
        return (
            any(f in fields for f in self.own)
            or any(y == ent and g in fields for y, g, _ in self.groups)
            or any(y == ent and f in fields for y, f in self.in_groups)
            or any(y == ent and f in fields for y, f in self.columns)
            or any(y == ent and f in fields for _, y, f in self.keyed)
        )


def _deps(e: ir.Expr, ent: str, narrows: tuple[_Narrow, ...], domain: Domain) -> _Deps:
    """The :class:`_Deps` of condition ``e`` over row ``x`` of ``ent``, evaluated with
    ``narrows``: a narrowed table is read only in the rows of one group (``g == x.h``)
    and in row ``x``, so a change elsewhere in it cannot change the value."""
    groups: dict[str, tuple[str, str, str]] = {}
    for nw in narrows:
        rhs = nw.rhs
        if (
            nw.kind == "eq"
            and nw.field != _KEY
            and isinstance(rhs, ir.FieldOf)
            and rhs.entity == ent
            and _is_x(rhs.key)
        ):
            groups[nw.entity] = (nw.entity, nw.field, rhs.field)
    own: set[str] = set()
    keyed: set[tuple[str | None, str, str]] = set()
    grp: set[tuple[str, str, str]] = set()
    in_grp: set[tuple[str, str]] = set()
    cols: set[tuple[str, str]] = set()

    def read(y: str, key: ir.Expr, fields: Iterable[str], cvars: dict[str, str]) -> None:
        if isinstance(key, ir.Var) and key.name in cvars and cvars[key.name] == y:
            if y in groups:  # a row of the narrowed table: one of x's group
                grp.add(groups[y])
                own.add(groups[y][2])
                in_grp.update((y, f) for f in fields)
            else:
                cols.update((y, f) for f in fields)
        elif _is_x(key) and "x" not in cvars:
            if y == ent:
                own.update(fields)
            else:
                keyed.update((None, y, f) for f in fields)
        elif (
            isinstance(key, ir.FieldOf)
            and key.entity == ent
            and _is_x(key.key)
            and "x" not in cvars
        ):
            own.add(key.field)
            keyed.update((key.field, y, f) for f in fields)
        else:
            cols.update((y, f) for f in fields)

    for n, cvars in _table_nodes(e):
        if isinstance(n, ir.FieldOf):
            read(n.entity, n.key, (n.field,), cvars)
        elif isinstance(n, ir.RowOf):
            read(n.entity, n.key, domain.entities[n.entity].fields, cvars)
        # a comprehension binds a variable; an existence test reads which rows exist,
        # fixed while the rules run
    return _Deps(
        tuple(sorted(own)),
        tuple(sorted(keyed, key=str)),
        tuple(sorted(grp)),
        tuple(sorted(cols)),
        tuple(sorted(in_grp)),
    )


class RuleEngine:
    """Applies the domain's ``generate`` rules to a freshly drawn state, in place."""

    def __init__(self, gen: StateGenerator, st: State) -> None:
        self.gen = gen
        self.st = st
        self.domain = gen.domain
        d = self.domain
        self.order = derive_order(d)
        self.derived = {(e, dv.field) for e, dv in self.order}
        self.derive_reads = {(e, dv.field): rule_reads(dv.expr, e, d) for e, dv in self.order}
        # Derives that read their own field start from the draw, which is kept here.
        self.drawn: dict[tuple[str, str], dict[str, Any]] = {
            (e, dv.field): {k: r[dv.field] for k, r in st.tables[e].items()}
            for e, dv in self.order
            if (e, dv.field, True) in self.derive_reads[(e, dv.field)]
        }
        self.derive_narrows = {
            (e, dv.field): _narrowings(dv.expr, e, self._stable) for e, dv in self.order
        }
        self.conds = {e: self._conds(e, edef) for e, edef in d.entities.items()}
        self._index: dict[tuple[str, str], dict[Any, dict[str, Any]]] = {}
        self._pos = {e: {k: i for i, k in enumerate(st.tables[e])} for e in d.entities}
        # What each condition reads, and when (a tick of ``_changed``) each cell, column
        # and group last changed and each condition was last seen holding on each row:
        # a pass skips a condition nothing it reads has changed for since.
        self.deps = {e: [self._cond_deps(e, c) for c in cs] for e, cs in self.conds.items()}
        self._grouped: dict[str, set[str]] = {}
        for ds in self.deps.values():
            for dp in ds:
                for y, g, _ in dp.groups:
                    self._grouped.setdefault(y, set()).add(g)
        self._tick = 0
        self._cell_tick: dict[tuple[str, str], dict[Any, int]] = {}
        self._col_tick: dict[tuple[str, str], int] = {}
        self._group_tick: dict[tuple[str, str], dict[Any, int]] = {}
        self._held: dict[str, list[dict[Any, int]]] = {
            e: [{} for _ in cs] for e, cs in self.conds.items()
        }

    def _cond_deps(self, ent: str, c: _Cond) -> _Deps:
        if c.expr is None:  # the bounds of a derived field of the row
            assert c.field is not None
            return _Deps((c.field,), (), (), (), ())
        return _deps(c.expr, ent, c.narrows, self.domain)

    def _stable(self, ent: str, fname: str) -> bool:
        """Fields no derive changes: safe to index (a repair that re-draws a reference
        moves the row in the index, :meth:`_reindex`)."""
        f = self.domain.entities[ent].fields.get(fname)
        return f is not None and (ent, fname) not in self.derived and isinstance(f.ty, RefT)

    def _reindex(self, ent: str, key: str, before: dict[str, Any]) -> None:
        """Keep the indexes right after row ``key``'s fields changed from ``before``."""
        row = self.st.tables[ent][key]
        for (e, f), idx in self._index.items():
            if e != ent or f == _KEY or before[f] == row[f]:
                continue
            idx.get(before[f], {}).pop(key, None)
            idx.setdefault(row[f], {})[key] = row

    # -- set-up

    def _redrawable(self, ent: str, start: set[str]) -> tuple[str, ...]:
        """The row's own fields a repair re-draws to change the value of ``start``."""
        edef = self.domain.entities[ent]
        plans = self.gen.plans(ent)
        out: set[str] = set()
        todo, seen = list(start), set(start)
        while todo:
            f = todo.pop()
            fd = edef.fields.get(f)
            if fd is None:
                continue
            if (ent, f) in self.derived:
                reads = self.derive_reads[(ent, f)]
                if (ent, f, True) in reads and isinstance(fd.ty, PrimT | EnumT | DecT):
                    out.add(f)
                more = {g for e, g, own in reads if own and e == ent} - seen
                seen |= more
                todo.extend(more)
            elif isinstance(fd.ty, PrimT | EnumT | DecT | ListT):
                out.add(f)  # a list too: "len(x.items) >= 1" is met by another draw
        grew = True
        while grew:  # an end date / arrival time / airport city follows its source
            grew = False
            for g, p in plans.items():
                if (
                    g not in out
                    and (ent, g) not in self.derived
                    and (p.pair in out or p.code_src in out)
                ):
                    out.add(g)
                    grew = True
        return tuple(f for f in edef.fields if f in out)

    def _conds(self, ent: str, edef: EntityDef) -> list[_Cond]:
        out: list[_Cond] = []
        for inv in edef.invariants:
            own = {f for e, f, o in rule_reads(inv.expr, ent, self.domain) if o and e == ent}
            redraw = self._redrawable(ent, own)
            if not redraw:
                # Only references decide it (whose payment method pays): re-draw those.
                redraw = tuple(
                    f for f in edef.fields if f in own and isinstance(edef.fields[f].ty, RefT)
                )
            out.append(
                _Cond(
                    f"invariant {inv.name}",
                    inv.source,
                    inv.expr,
                    None,
                    _narrowings(inv.expr, ent, self._stable),
                    redraw,
                )
            )
        for i, chk in enumerate(edef.require):
            own = {f for e, f, o in rule_reads(chk.expr, ent, self.domain) if o and e == ent}
            out.append(
                _Cond(
                    f"generate.require[{i}]",
                    chk.source,
                    chk.expr,
                    None,
                    _narrowings(chk.expr, ent, self._stable),
                    self._redrawable(ent, own),
                )
            )
        for dv in edef.derive:
            f = edef.fields[dv.field]
            if f.min is not None or f.max is not None:
                parts = ([f"x.{dv.field} >= {f.min}"] if f.min is not None else []) + (
                    [f"x.{dv.field} <= {f.max}"] if f.max is not None else []
                )
                out.append(
                    _Cond(
                        f"the bounds of derived field {dv.field!r}",
                        " and ".join(parts),
                        None,
                        dv.field,
                        (),
                        self._redrawable(ent, {dv.field}),
                    )
                )
        return out

    # -- evaluation

    def _eval(self, e: ir.Expr, narrows: tuple[_Narrow, ...], key: str) -> Any:
        env = {"x": key}
        # The engine changes rows in place, so each evaluation reads them through a
        # state of its own: nothing a state builds from its rows (an index) outlives it.
        st = self.st
        whole = State(st.tables, st.counters, st.today)
        if not narrows:
            return evaluate(e, whole, env, self.domain)
        tables = dict(st.tables)
        for nw in narrows:
            v = evaluate(nw.rhs, whole, env, self.domain)
            if nw.kind == "eq":
                tables[nw.entity] = self._lookup(nw.entity, nw.field).get(v, {})
            else:
                full = st.tables[nw.entity]
                tables[nw.entity] = {k: full[k] for k in sorted(v) if k in full}
        return evaluate(e, State(tables, st.counters, st.today), env, self.domain)

    def _lookup(self, ent: str, fname: str) -> dict[Any, dict[str, Any]]:
        idx = self._index.get((ent, fname))
        if idx is None:
            idx = {}
            for k, row in self.st.tables[ent].items():
                idx.setdefault(k if fname == _KEY else row[fname], {})[k] = row
            self._index[(ent, fname)] = idx
        return idx

    def _rows_where(self, ent: str, fname: str, value: Any) -> list[Any] | None:
        """The keys of ``ent``'s rows whose ``fname`` is ``value``, in table order, from the
        index kept right through repairs (None for a field that is not indexed)."""
        if not self._stable(ent, fname):
            return None
        pos = self._pos[ent]
        return sorted(self._lookup(ent, fname).get(value, {}), key=pos.__getitem__)

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
            value = self._eval(dv.expr, self.derive_narrows[(ent, dv.field)], key)
            # kept in the state's form, as an effect stores it (a decimal as its text)
            row[dv.field] = stored(self.domain.entities[ent].fields[dv.field].ty, value)
        except ToolError as exc:
            raise StateGenError(
                f"{self._where(ent, key)}, generate.derive.{dv.field}: "
                f"{exc.message}\n    in: {dv.source}"
            ) from None
        return bool(row[dv.field] != old)

    def _changed(
        self, ent: str, key: Any, before: Mapping[str, Any], fields: Iterable[str]
    ) -> None:
        """Row ``key`` of ``ent`` now differs from ``before`` in ``fields``: stamp them."""
        self._tick += 1
        t = self._tick
        for f in fields:
            self._cell_tick.setdefault((ent, f), {})[key] = t
            self._col_tick[(ent, f)] = t
        row = self.st.tables[ent][key]
        for g in self._grouped.get(ent, ()):
            ticks = self._group_tick.setdefault((ent, g), {})
            ticks[before[g]] = ticks[row[g]] = t

    def _still_holds(self, ent: str, i: int, key: Any) -> bool:
        """Condition ``i`` of ``ent`` held on row ``key`` and nothing it reads there has
        changed since (so it holds: evaluation is a function of what it reads)."""
        seen = self._held[ent][i].get(key)
        if seen is None:
            return False
        dp = self.deps[ent][i]
        cells = self._cell_tick
        for f in dp.own:
            if cells.get((ent, f), {}).get(key, -1) > seen:
                return False
        row = self.st.tables[ent][key]
        for via, y, f in dp.keyed:
            k = key if via is None else row[via]
            if cells.get((y, f), {}).get(k, -1) > seen:
                return False
        for y, g, h in dp.groups:
            if self._group_tick.get((y, g), {}).get(row[h], -1) > seen:
                return False
        return all(self._col_tick.get(col, -1) <= seen for col in dp.columns)

    def _propagate(self, dirty: dict[tuple[str, str], set[str]]) -> None:
        """Re-derive what reads the changed fields (rows listed per field), in order."""
        for ent, dv in self.order:
            rows: set[str] = set()
            every = False
            for e, f, own in self.derive_reads[(ent, dv.field)]:
                changed = dirty.get((e, f))
                if not changed:
                    continue
                if own and e == ent:
                    rows |= changed
                else:
                    every = True
            keys = list(self.st.tables[ent]) if every else sorted(rows)
            table = self.st.tables[ent]
            for key in keys:
                if self._derive(ent, dv, key):
                    dirty.setdefault((ent, dv.field), set()).add(key)
                    self._changed(ent, key, table[key], (dv.field,))

    # -- require

    def _holds(self, c: _Cond, ent: str, key: str) -> bool:
        if c.expr is None:
            assert c.field is not None
            f = self.domain.entities[ent].fields[c.field]
            v = self.st.tables[ent][key][c.field]
            if v is None:
                return True  # an absent optional value has no bounds
            if isinstance(f.ty, DecT):
                v = Decimal(v)  # stored as its text
            return (f.min is None or v >= f.min) and (f.max is None or v <= f.max)
        try:
            return bool(self._eval(c.expr, c.narrows, key))
        except ToolError:
            return False  # e.g. min() over no rows: cannot hold as drawn

    def _failing(self, ent: str, key: str) -> list[_Cond]:
        return [c for c in self.conds[ent] if not self._holds(c, ent, key)]

    def _failing_now(self, ent: str, key: Any) -> list[_Cond]:
        """:meth:`_failing`, evaluating only the conditions something they read changed
        for since they last held on the row."""
        out = []
        held = self._held[ent]
        for i, c in enumerate(self.conds[ent]):
            if self._still_holds(ent, i, key):
                continue
            if self._holds(c, ent, key):
                held[i][key] = self._tick
            else:
                held[i].pop(key, None)
                out.append(c)
        return out

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
                    failing = self._failing_now(ent, key)
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
        ent, key = next(
            (e, k) for e in self.conds for k in self.st.tables[e] if self._failing(e, k)
        )
        self._fail(
            ent,
            key,
            self._failing(ent, key)[0],
            f"rules kept breaking each other for {_REQUIRE_PASSES} passes",
        )

    def _fail(self, ent: str, key: str, c: _Cond, why: str = "") -> None:
        if not why:
            every = [
                f
                for f in self.domain.entities[ent].fields
                if any(f in d.redraw for d in self.conds[ent])
            ]
            why = (
                f"re-drew {', '.join(every)} {REQUIRE_TRIES} times"
                if c.redraw
                else "it reads no field of the row that can be re-drawn (only non-key, "
                "non-reference scalar and list fields, or the inputs of derived ones, can; "
                "for an invariant that reads none of those, its row's reference fields)"
            )
        row = self.st.tables[ent][key]
        shown = ", ".join(f"{f}={row[f]!r}" for f in self.domain.entities[ent].fields)
        raise StateGenError(
            f"{self._where(ent, key)}: cannot satisfy {c.label} ({why})"
            f"\n    condition: {c.source}\n    row: {shown}"
        )

    def _repair(self, ent: str, key: str, failing: list[_Cond], pass_no: int) -> set[str] | None:
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
        numbers = [
            f
            for f in mine
            if not isinstance(edef.fields[f].ty, EnumT | RefT) and edef.fields[f].ty != BOOL
        ]
        # A reference that follows another one (the payment method of the order's user)
        # is re-drawn alone first: the other one (the user) moves only if that fails.
        plans = self.gen.plans(ent)
        followers = [
            f for f in mine if isinstance(edef.fields[f].ty, RefT) and plans[f].via is not None
        ]
        stages = [s for s in (numbers, followers, mine, every) if s]
        if not stages:
            return None
        row = self.st.tables[ent][key]
        before = dict(row)
        drawn_before = {f: self.drawn[(ent, f)][key] for f in every if (ent, f) in self.drawn}
        i = self._pos[ent][key]
        own = [dv for e, dv in self.order if e == ent]
        # Check the conditions that failed first: they are the likeliest to fail again.
        # The others held on the row as it was; one still does unless the attempt
        # changed a field it reads (nothing else changes meanwhile).
        others = [
            (c, dp)
            for c, dp in zip(self.conds[ent], self.deps[ent], strict=True)
            if c not in failing
        ]
        for attempt in range(1, REQUIRE_TRIES + 1):
            fields = stages[min(len(stages) - 1, (attempt - 1) * len(stages) // REQUIRE_TRIES)]
            rng = self.gen.stream(ent, "#require", str(key), str(pass_no), str(attempt))
            # A re-drawn reference takes the contact details that follow it along (an
            # order that moves to another customer usually ships to their address).
            follow = [
                g
                for g, p in plans.items()
                if p.copy is not None and p.copy[0] in fields and g not in fields
            ]
            last = dict(row)
            for f in [*fields, *follow]:
                v = self.gen.redraw(
                    ent,
                    i,
                    key,
                    edef.fields[f],
                    row,
                    self.st.tables[ent],
                    rng,
                    attempt,
                    tables=self.st.tables,
                    rows_where=self._rows_where,
                )
                if (ent, f) in self.drawn:
                    self.drawn[(ent, f)][key] = v
                row[f] = v
            self._reindex(ent, key, last)
            for dv in own:
                self._derive(ent, dv, key)
            if all(self._holds(c, ent, key) for c in failing):
                moved = {f for f in row if row[f] != before[f]}
                if all(self._holds(c, ent, key) for c, dp in others if dp.sees(ent, moved)):
                    self._changed(ent, key, before, moved)
                    for held in self._held[ent]:  # it ends with every condition holding
                        held[key] = self._tick
                    return moved
        last = dict(row)
        row.update(before)
        self._reindex(ent, key, last)
        for f, v in drawn_before.items():
            self.drawn[(ent, f)][key] = v
        return None


@dataclass(frozen=True)
class Violation:
    """A row that breaks an invariant of its entity."""

    entity: str
    key: str
    invariant: str  # its name (or ``invariants[i]``)
    source: str  # the condition as written
    policy: str  # the policy sentence it encodes ("" if not given)
    error: str = ""  # the evaluation error, when the condition could not be evaluated

    def describe(self) -> str:
        """One line naming the row, the invariant and the condition."""
        why = f" ({self.error})" if self.error else ""
        return (
            f"{self.entity} {self.key!r} breaks invariant {self.invariant}: "
            f"{' '.join(self.source.split())}{why}"
        )


def invariant_violations(
    domain: Domain, state: State, limit: int = 0, rows: Mapping[str, Iterable[Any]] | None = None
) -> list[Violation]:
    """Every (entity, row, invariant) of ``domain`` that ``state`` breaks, in declaration
    and key order (the first ``limit`` ones when ``limit`` > 0); with ``rows``, among
    those rows only (per entity, in key order).

    A condition that raises on a row (a missing referenced row) counts as broken.
    Comprehensions filtered on a reference of the row (``p.user_id == x.user_id``) read
    only the rows the state's index gives for it, as in :class:`RuleEngine`.
    """
    out: list[Violation] = []

    def narrowed(ent: str, fname: str, v: Any) -> dict[Any, dict[str, Any]]:
        table = state.tables[ent]
        if fname == _KEY:
            return {v: table[v]} if v in table else {}
        try:
            keys = state.keys_where(ent, fname, v)
        except TypeError:
            keys = [k for k, r in table.items() if r[fname] == v]
        return {k: table[k] for k in keys}

    for ent, edef in domain.entities.items():
        for inv in edef.invariants:
            narrows = _narrowings(inv.expr, ent, partial(_is_ref, domain))
            every = state.sorted_keys(ent) if ent in state.tables else ()
            for key in every if rows is None else rows.get(ent, ()):
                env = {"x": key}
                st = state
                error = ""
                try:
                    if narrows:
                        tables = dict(state.tables)
                        for nw in narrows:
                            v = evaluate(nw.rhs, state, env, domain)
                            if nw.kind == "eq":
                                tables[nw.entity] = narrowed(nw.entity, nw.field, v)
                            else:
                                full = state.tables[nw.entity]
                                tables[nw.entity] = {k: full[k] for k in sorted(v) if k in full}
                        st = State(tables, state.counters, state.today)
                    ok = bool(evaluate(inv.expr, st, env, domain))
                except ToolError as exc:
                    ok, error = False, exc.message
                if not ok:
                    out.append(Violation(ent, key, inv.name, inv.source, inv.policy, error))
                    if limit and len(out) >= limit:
                        return out
    return out


def _is_ref(domain: Domain, ent: str, fname: str) -> bool:
    f = domain.entities[ent].fields.get(fname)
    return f is not None and isinstance(f.ty, RefT)


@dataclass(frozen=True)
class _Reach:
    """Row ``x`` of an invariant's entity reads the rows of ``entity`` whose ``field``
    (or key, ``_KEY``) equals ``x``'s field ``via`` (or its key)."""

    entity: str
    field: str
    via: str


@per_domain
def _invariant_reaches(domain: Domain) -> dict[str, tuple[_Reach, ...] | None]:
    """Per entity with invariants, every other row its invariants read on a row ``x``,
    as :class:`_Reach` es (evaluated as :func:`invariant_violations` does, narrowed);
    None when some read is not bounded so (a comprehension not narrowed by an equality
    on ``x``, a lookup keyed by anything but ``x`` or one of its fields)."""
    out: dict[str, tuple[_Reach, ...] | None] = {}
    for ent, edef in domain.entities.items():
        if not edef.invariants:
            continue
        found: list[_Reach] | None = []
        for inv in edef.invariants:
            got = _reaches(domain, ent, inv.expr)
            if got is None or found is None:
                found = None
            else:
                found.extend(r for r in got if r not in found)
        out[ent] = None if found is None else tuple(found)
    return out


def _reaches(domain: Domain, ent: str, e: ir.Expr) -> list[_Reach] | None:
    """The :class:`_Reach` es of one invariant of ``ent`` (None: not bounded)."""
    narrows = {nw.entity: nw for nw in _narrowings(e, ent, partial(_is_ref, domain))}
    out: list[_Reach] = []

    def via(k: ir.Expr) -> str | None:
        """``x`` -> its key; ``x.g`` -> g; anything else: None."""
        if _is_x(k):
            return _KEY
        if isinstance(k, ir.FieldOf) and k.entity == ent and _is_x(k.key):
            return k.field
        return None

    stack: list[tuple[ir.Expr, frozenset[tuple[str, str]]]] = [(e, frozenset())]
    while stack:
        n, rows_of = stack.pop()  # rows_of: (variable, entity) of enclosing comprehensions
        if isinstance(n, ir.Comp):  # also the one inside an aggregate or a dict one
            c = n
            nw = narrows.get(c.entity)
            g = via(nw.rhs) if nw is not None and nw.kind == "eq" else None
            if nw is None or g is None:
                return None
            out.append(_Reach(c.entity, nw.field, g))
            inner = rows_of | {(c.var, c.entity)}
            stack.extend((x, inner) for x in ir.children(n))
            continue
        if isinstance(n, ir.FieldOf | ir.RowOf | ir.Exists):
            k = n.key
            own = isinstance(k, ir.Var) and (k.name, n.entity) in rows_of
            if not own and not (_is_x(k) and n.entity == ent):
                g = via(k)
                if g is None:
                    return None
                out.append(_Reach(n.entity, _KEY, g))
        stack.extend((x, rows_of) for x in ir.children(n))
    return out


def rows_reached(domain: Domain, before: State, after: State) -> dict[str, list[Any]] | None:
    """The rows of ``after`` (per entity with invariants, in key order) whose invariants
    may hold otherwise than on ``before``: those written since, and those whose
    invariants read a written row (:func:`_invariant_reaches`). None when that is not
    bounded, or the two states share no base to tell what was written."""
    changed: dict[str, set[Any]] = {}
    for ent in domain.entities:
        if ent not in after.tables or ent not in before.tables:
            return None
        keys = before.changed_keys(after, ent)
        if keys is None:
            return None
        changed[ent] = keys
    out: dict[str, list[Any]] = {}
    for ent, reach in _invariant_reaches(domain).items():
        if reach is None:
            return None
        table = after.tables[ent]
        keys = {k for k in changed[ent] if k in table}
        for r in reach:
            values: set[Any] = set()
            for k in changed[r.entity]:
                for st in (before, after):
                    row = st.tables[r.entity].get(k)
                    if row is not None:
                        values.add(k if r.field == _KEY else row[r.field])
            for v in values:
                if r.via == _KEY:
                    if v in table:
                        keys.add(v)
                else:
                    try:
                        keys.update(after.keys_where(ent, r.via, v))
                    except TypeError:
                        return None
        out[ent] = sorted(keys)
    return out


def policy_problem(
    domain: Domain, state: State, since: State | None = None, *, known_clean: bool = False
) -> str:
    """The first invariant of the domain that ``state`` breaks, described ("" if none).

    Kept with the state (:meth:`State.memo`): the candidates and tasks of one initial
    state ask it once. ``since``: a state that ``state`` was reached from; when it breaks
    none, only the rows the change can reach are checked (:func:`rows_reached`): every
    other row holds as it did. ``known_clean``: the caller has checked every invariant
    on every row (the rule engine, which checks them with the state's other rules); the
    answer "" is kept without checking again."""
    memo = state.memo()
    hit = memo.get(("policy", id(domain)))
    if hit is not None and hit[0] is domain:
        return str(hit[1])
    if known_clean:
        memo[("policy", id(domain))] = (domain, "")
        return ""
    rows = None
    if since is not None and not policy_problem(domain, since):
        rows = rows_reached(domain, since, state)
    bad = invariant_violations(domain, state, limit=1, rows=rows)
    why = bad[0].describe() if bad else ""
    memo[("policy", id(domain))] = (domain, why)
    return why
