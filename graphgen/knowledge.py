"""What an agent can know: value *sorts* and the facts tool outputs reveal.

An agent never sees the database. It knows the values the instruction gives it and the
values earlier tool outputs returned. We classify every value by a :class:`Sort`:

* ``key:E``      — an id of entity ``E`` (from a lookup, or givable when ``E``'s key is);
* ``field:E.f``  — a value of field ``E.f`` (givable fields such as ``User.email``);
* ``enum:N``     — a member of enum ``N``;
* ``free:T``     — a free primitive (an amount, a new address) that the user states.

A call is *valid for the agent* when every argument is known at its sort and the
precondition holds. No sort is known for free: the tool schema lists an enum's members,
but knowing that a status *exists* is not knowing which one the user's order has. **An
enum member is known at a step iff it is a given of the task at that parameter's sort
(``enum:N``: the instruction states it, "my pending order") or an earlier output revealed
it** (a row or field of enum type ``N`` shows ``enum:N`` as well as ``field:E.f``).

The same classification gives the graph's data edges (type level, :func:`produced_sorts`)
and the concrete knowledge of a task (value level, :func:`facts_of_result`), so the
graph, the task generator and the z3 proofs agree. :func:`shown_cells` adds *whose*
values an output shows, which recognising a described row needs.
"""

from __future__ import annotations

import re
from typing import Any, NamedTuple, assert_never

from graphgen import ir, strings
from graphgen.domain import Domain, ParamDef, ToolDef, per_domain
from graphgen.state import State, call_key
from graphgen.tablebase import hashable
from graphgen.types import (
    INT,
    STR,
    DecT,
    EnumT,
    ListT,
    MapT,
    OptT,
    PrimT,
    RecordT,
    RefT,
    RowT,
    Ty,
    strip_opt,
)


class Sort(NamedTuple):
    """A kind of value an agent can know. ``str(sort)`` is the graph node id.

    A named tuple, not a dataclass: every fact an agent learns is keyed by its sort, and
    a tuple hashes and compares in C where a dataclass's ``__hash__`` and ``__eq__`` are
    Python calls, met millions of times by a search."""

    kind: str  # "key" | "field" | "enum" | "free"
    name: str  # "Order" | "User.email" | "Order.status" | "int"

    def __str__(self) -> str:
        return f"{self.kind}:{self.name}"


def parse_sort(text: str) -> Sort:
    """The sort a graph node id or a task's given names: the inverse of ``str(sort)``.

    >>> parse_sort("field:User.email")
    Sort(kind='field', name='User.email')
    """
    kind, _, name = text.partition(":")
    return Sort(kind, name)


def key_sort(entity: str) -> Sort:
    """The sort of ids of ``entity``."""
    return Sort("key", entity)


def param_sort(p: ParamDef) -> Sort:
    """The sort an argument for parameter ``p`` must be known at."""
    if p.source is not None:
        return Sort("field", f"{p.source[0]}.{p.source[1]}")
    return _scalar_sort(p.ty)


def _scalar_sort(t: Ty) -> Sort:
    if isinstance(t, OptT):  # an optional argument is known at its values' sort
        return _scalar_sort(t.inner)
    if isinstance(t, RefT):
        return key_sort(t.entity)
    if isinstance(t, EnumT):
        return Sort("enum", t.name)
    if isinstance(t, PrimT | DecT):
        return Sort("free", t.show())  # a value anyone can say: a number, a word
    raise TypeError(f"no sort for non-scalar type {t.show()}")


def field_sorts(domain: Domain, entity: str, field: str) -> list[Sort]:
    """Sorts revealed by seeing a value of ``entity.field`` (made once per domain: a
    listing of a large table asks for every row's fields)."""
    got = _all_field_sorts(domain).get((entity, field))
    if got is None:  # not a field of the domain: as it is read, it raises KeyError
        return _field_sorts(domain, entity, field)
    return list(got)


@per_domain
def _all_field_sorts(domain: Domain) -> dict[tuple[str, str], tuple[Sort, ...]]:
    return {
        (e, f): tuple(_field_sorts(domain, e, f))
        for e, edef in domain.entities.items()
        for f in [edef.key, *edef.fields]
    }


def _field_sorts(domain: Domain, entity: str, field: str) -> list[Sort]:
    edef = domain.entities[entity]
    if field == edef.key:
        return [key_sort(entity)]
    t = strip_opt(edef.fields[field].ty)
    out = [Sort("field", f"{entity}.{field}")]
    target = domain.entity_of_ref(t)
    if target is not None:
        out.append(key_sort(target))
    if isinstance(t, EnumT):
        out.append(Sort("enum", t.name))  # seeing a status reveals that member
    return out


def givable_sorts(domain: Domain) -> set[Sort]:
    """Sorts a user may state in an instruction (besides free values)."""
    out: set[Sort] = set()
    for e in domain.entities.values():
        if e.key_givable:
            out.add(key_sort(e.name))
        for f in e.fields.values():
            if f.givable:
                out.add(Sort("field", f"{e.name}.{f.name}"))
    return out


# ---------------------------------------------------------------- type level


def produced_sorts(domain: Domain, tool: ToolDef) -> set[Sort]:
    """Sorts of the values ``tool``'s return value can reveal (type level)."""
    if tool.returns is None:
        return set()
    return _expr_sorts(domain, tool.returns)


def _expr_sorts(domain: Domain, e: ir.Expr) -> set[Sort]:
    """Sorts a value of ``e`` reveals: the fields it shows, else what its type holds."""
    match e:
        case ir.FieldOf(entity=ent, field=f):
            return set(field_sorts(domain, ent, f))
        case ir.RowOf(entity=ent):
            return _row_sorts(domain, ent)
        case ir.Comp(proj=p):
            return _expr_sorts(domain, p)
        case ir.DictComp(comp=c):
            return {key_sort(c.entity)} | _expr_sorts(domain, c.proj)  # the keys are ids
        case ir.Index(operand=xs):
            return _expr_sorts(domain, xs)  # one of the list's items
        case ir.DictLit(values=vs) | ir.ListLit(items=vs):
            return set().union(*(_expr_sorts(domain, v) for v in vs)) if vs else set()
        case ir.IfExp(then=a, orelse=b):
            return _expr_sorts(domain, a) | _expr_sorts(domain, b)
        case ir.Old(operand=o):
            return _expr_sorts(domain, o)
        case ir.StrOp(op="fstring" | "concat" | "str", args=args):
            # a message shows every value written into it ("Ticket T0003 created")
            return set().union(*(_expr_sorts(domain, a) for a in args))
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
            | ir.Agg()
            | ir.IsNone()
            | ir.Round()
            | ir.StrOp()
            | ir.Today()
        ):
            return type_sorts(domain, e.ty)
        case _:
            assert_never(e)


def _row_sorts(domain: Domain, ent: str) -> set[Sort]:
    out = {key_sort(ent)}
    for f in domain.entities[ent].fields:
        out.update(field_sorts(domain, ent, f))
    return out


def type_sorts(domain: Domain, t: Ty) -> set[Sort]:
    """Sorts a value of type ``t`` reveals by its type alone (an id its entity's key, a
    member its enum; a row every field's)."""
    t = strip_opt(t)
    if isinstance(t, RefT):
        return {key_sort(t.entity)}
    if isinstance(t, ListT):
        return type_sorts(domain, t.elem)
    if isinstance(t, RowT):
        return _row_sorts(domain, t.entity)
    if isinstance(t, RecordT):
        return set().union(*(type_sorts(domain, x) for _, x in t.fields)) if t.fields else set()
    if isinstance(t, EnumT):
        return {Sort("enum", t.name)}
    if isinstance(t, MapT):
        return type_sorts(domain, t.key) | type_sorts(domain, t.value)
    return set()  # counts, flags, free strings reveal nothing an argument could need


# ---------------------------------------------------------------- value level

Fact = tuple[Sort, Any]


def facts_of_result(domain: Domain, tool: ToolDef, value: Any) -> set[Fact]:
    """The concrete (sort, value) facts an agent learns from ``tool`` returning ``value``.

    >>> from graphgen.domains import load_builtin
    >>> d = load_builtin("mock")
    >>> sorted(facts_of_result(d, d.tools["find_account"], ["A001"]))
    [(Sort(kind='key', name='Account'), 'A001')]
    """
    if tool.returns is None:
        return set()
    out: set[Fact] = set()
    _facts(domain, tool.returns, tool.returns.ty, value, out)
    return out


def _facts(domain: Domain, e: ir.Expr | None, t: Ty, v: Any, out: set[Fact]) -> None:
    if v is None:
        return
    if isinstance(e, ir.StrOp) and isinstance(v, str):
        for part, text in message_parts(e, v):
            _facts(domain, part, part.ty, _from_text(part.ty, text), out)
        return
    if isinstance(e, ir.Index):  # one item of a list: what an item of a comprehension shows
        e = e.operand.proj if isinstance(e.operand, ir.Comp) else None
    if isinstance(e, ir.FieldOf) and not isinstance(t, ListT):
        for s in field_sorts(domain, e.entity, e.field):
            out.add((s, v))
        return
    if isinstance(t, ListT) and isinstance(v, list):
        for i, item in enumerate(v):
            _facts(domain, _item_expr(e, i), t.elem, item, out)
        return
    if isinstance(t, RowT) and isinstance(v, dict):
        edef = domain.entities[t.entity]
        for name, x in v.items():
            if name == edef.key:
                out.add((key_sort(t.entity), x))
                continue
            fd = edef.fields.get(name)
            if fd is None:
                continue
            if isinstance(fd.ty, ListT):
                for item in x:
                    out.update((s, item) for s in type_sorts(domain, fd.ty.elem))
            else:
                out.update((s, x) for s in field_sorts(domain, t.entity, name))
        return
    if isinstance(t, MapT) and isinstance(v, dict):
        # A result keyed by id: each key is a revealed id, each value shows what the
        # comprehension's projection shows.
        proj = e.comp.proj if isinstance(e, ir.DictComp) else None
        for k, x in v.items():
            _facts(domain, None, t.key, map_key(domain, t, k), out)
            _facts(domain, proj, t.value, x, out)
        return
    if isinstance(t, RecordT) and isinstance(v, dict):
        exprs = dict(zip(e.keys, e.values, strict=True)) if isinstance(e, ir.DictLit) else {}
        for name, ft in t.fields:
            if name in v:
                _facts(domain, exprs.get(name), ft, v[name], out)
        return
    if isinstance(t, RefT):
        out.add((key_sort(t.entity), v))
    elif isinstance(t, EnumT):
        out.add((Sort("enum", t.name), v))


def message_parts(e: ir.StrOp, text: str) -> list[tuple[ir.Expr, str]]:
    """The values written into message ``text`` made by ``e`` (an f-string or a
    concatenation), each with the expression it came from: the text is matched against
    the message's literal parts. A message whose parts cannot be told apart (two values
    with no text between them) gives the first reading of the match."""
    if e.op not in ("fstring", "concat", "str"):
        return []
    pattern = ""
    fields: list[ir.Expr] = []
    for a in strings.message_parts(e):
        if isinstance(a, ir.Lit) and isinstance(a.value, str) and a.ty == STR:
            pattern += re.escape(a.value)
        else:
            pattern += "(.*?)"
            fields.append(a)
    m = re.fullmatch(pattern, text, flags=re.DOTALL)
    if m is None:
        return []
    return list(zip(fields, m.groups(), strict=True))


def _from_text(t: Ty, text: str) -> Any:
    """A value of type ``t`` as a message writes it (the inverse of strings.text_of)."""
    if t == INT and re.fullmatch(r"-?\d+", text):
        return int(text)
    return text


def _item_expr(e: ir.Expr | None, i: int) -> ir.Expr | None:
    """The expression item ``i`` of list expression ``e``'s value comes from, if known."""
    match e:
        case ir.Comp(proj=p):
            return p
        case ir.ListLit(items=items):
            return items[min(i, len(items) - 1)] if items else None
        case None:
            return None
        case (
            ir.Lit()
            | ir.Var()
            | ir.FieldOf()
            | ir.RowOf()
            | ir.Exists()
            | ir.Compare()
            | ir.BoolOp()
            | ir.Not()
            | ir.Arith()
            | ir.Neg()
            | ir.Contains()
            | ir.Len()
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
            return None  # e.g. a list field: its items are keys, known from the type
        case _:
            assert_never(e)


# ---------------------------------------------------------------- rows the agent sees

Cell = tuple[str, Any, str]  # (entity, key, field)


def shown_cells(domain: Domain, tool: ToolDef, args: dict[str, Any], value: Any) -> set[Cell]:
    """The cells of particular rows an agent sees from ``tool(**args)`` returning ``value``.

    Facts (:func:`facts_of_result`) say which values the agent holds; cells say *whose*
    they are, which is what recognising a described row needs ("my order placed on
    2026-11-02" is recognised only by seeing that order's date). A row read shows its
    row; ``Entity[param].f`` shows one cell; a search ``[x for x in E if x.f == param
    and ...]`` shows, for every row it returns, the fields its filter pins to a value.

    >>> from graphgen.domains import load_builtin
    >>> d = load_builtin("retail")
    >>> t = d.tools["find_user_orders_by_status"]
    >>> sorted(shown_cells(d, t, {"user_id": "U0001", "status": "pending"}, ["O0003"]))
    [('Order', 'O0003', 'status'), ('Order', 'O0003', 'user_id')]
    """
    out: set[Cell] = set()
    if tool.returns is not None:
        _cells(domain, tool.returns, args, value, out)
    return out


def _cells(domain: Domain, e: ir.Expr, args: dict[str, Any], v: Any, out: set[Cell]) -> None:
    if v is None:
        return
    match e:
        case ir.RowOf(entity=ent):
            if isinstance(v, dict):
                key = v.get(domain.entities[ent].key)
                out.update((ent, key, f) for f in v if f in domain.entities[ent].fields)
        case ir.FieldOf(entity=ent, key=ir.Var(name=n), field=f) if n in args:
            out.add((ent, args[n], f))
        case ir.Comp(var=var, entity=ent, cond=cond, proj=proj) if isinstance(v, list):
            pinned = _pinned_fields(var, ent, cond)
            is_key = isinstance(proj, ir.Var) and proj.name == var
            is_row = (
                isinstance(proj, ir.RowOf) and isinstance(proj.key, ir.Var) and proj.key.name == var
            )
            for item in v:
                if is_key:
                    out.update((ent, item, f) for f in pinned)
                elif is_row:
                    _cells(domain, proj, args, item, out)
                    key = item.get(domain.entities[ent].key) if isinstance(item, dict) else None
                    out.update((ent, key, f) for f in pinned)
        case ir.DictLit(keys=ks, values=vs) if isinstance(v, dict):
            for k, x in zip(ks, vs, strict=True):
                if k in v:
                    _cells(domain, x, args, v[k], out)
        case ir.DictComp(comp=ir.Comp(var=var, entity=ent, cond=cond, proj=proj)) if isinstance(
            v, dict
        ):
            # Keyed by id: every value is known to belong to its key's row.
            pinned = _pinned_fields(var, ent, cond)
            for text, item in v.items():
                key = map_key(domain, e.ty, text)
                out.update((ent, key, f) for f in pinned)
                if isinstance(proj, ir.RowOf) and proj.key == ir.Var(var, RefT(ent)):
                    _cells(domain, proj, args, item, out)
                elif isinstance(proj, ir.FieldOf) and proj.key == ir.Var(var, RefT(ent)):
                    out.add((ent, key, proj.field))
        case ir.ListLit(items=items) if isinstance(v, list):
            for x, item in zip(items, v, strict=False):
                _cells(domain, x, args, item, out)
        case ir.Old(operand=o):
            _cells(domain, o, args, v, out)
        case (
            ir.Lit()
            | ir.Var()
            | ir.FieldOf()
            | ir.RowOf()
            | ir.Comp()
            | ir.DictLit()
            | ir.DictComp()
            | ir.Index()
            | ir.Today()
            | ir.ListLit()
            | ir.Exists()
            | ir.Compare()
            | ir.BoolOp()
            | ir.Not()
            | ir.Arith()
            | ir.Neg()
            | ir.Contains()
            | ir.Len()
            | ir.Agg()
            | ir.IfExp()
            | ir.IsNone()
            | ir.Round()
            | ir.StrOp()
        ):
            return  # a computed value: whose row it describes is not shown
        case _:
            assert_never(e)


def _pinned_fields(var: str, entity: str, cond: ir.Expr | None) -> list[str]:
    """Fields of ``entity`` that every row a comprehension over ``var`` keeps has at a
    value the caller knows: conjuncts ``var.f == param`` (or a literal)."""
    if cond is None:
        return []
    conj = cond.values if isinstance(cond, ir.BoolOp) and cond.op == "and" else (cond,)
    out = []
    for c in conj:
        if isinstance(c, ir.Compare) and c.op == "==":
            for a, b in ((c.left, c.right), (c.right, c.left)):
                if _row_field(a, var, entity) and _known_side(b, var):
                    assert isinstance(a, ir.FieldOf)
                    out.append(a.field)
                    break
    return out


def _row_field(e: ir.Expr, var: str, entity: str) -> bool:
    """Is ``e`` a field ``var.f`` of the row being visited?"""
    return (
        isinstance(e, ir.FieldOf)
        and e.entity == entity
        and isinstance(e.key, ir.Var)
        and e.key.name == var
    )


def _known_side(e: ir.Expr, var: str) -> bool:
    """A literal, or a name other than the row variable (a parameter the caller passed)."""
    return isinstance(e, ir.Lit) or (isinstance(e, ir.Var) and e.name != var)


class Reveal:
    """What one call's output shows an agent: the facts it reveals
    (:func:`facts_of_result`), in one fixed order, and the cells of particular rows it
    shows (:func:`shown_cells`). Each is computed when first asked for."""

    __slots__ = (
        "_by_sort",
        "_cells",
        "_fact_set",
        "_facts",
        "_groups",
        "_raw",
        "args",
        "domain",
        "tool",
        "value",
    )

    def __init__(self, domain: Domain, tool: ToolDef, args: dict[str, Any], value: Any) -> None:
        self.domain, self.tool, self.args, self.value = domain, tool, dict(args), value
        self._raw: set[Fact] | None = None
        self._groups: list[tuple[Sort, list[Any]]] | None = None
        self._facts: tuple[Fact, ...] | None = None
        self._cells: frozenset[Cell] | None = None
        self._by_sort: tuple[tuple[Sort, tuple[Any, ...]], ...] | None = None
        self._fact_set: frozenset[Fact] | None = None

    def _found(self) -> set[Fact]:
        if self._raw is None:
            self._raw = facts_of_result(self.domain, self.tool, self.value)
        return self._raw

    @property
    def facts(self) -> tuple[Fact, ...]:
        """The facts, ordered by sort and then by ``repr`` of the value: a set's order
        follows string hashing (per process), and the order facts are learned in feeds
        argument pools, so it must not depend on it."""
        if self._facts is None:
            self._facts = tuple((s, v) for s, vals in self._sorted() for v in vals)
        return self._facts

    def _sorted(self) -> list[tuple[Sort, list[Any]]]:
        """The values per sort, sorts in order and each one's values by ``repr``: the
        order of :attr:`facts`. Sorting each sort's values on its own compares strings
        only; one listing shows tens of thousands of values of a few sorts."""
        if self._groups is not None:
            return self._groups
        groups: dict[Sort, list[Any]] = {}
        for s, v in self._found():
            got = groups.get(s)
            if got is None:
                groups[s] = [v]
            else:
                got.append(v)
        out = sorted(groups.items(), key=lambda kv: (kv[0].kind, kv[0].name))
        for _, vals in out:
            vals.sort(key=repr)
        self._groups = out
        return out

    @property
    def by_sort(self) -> tuple[tuple[Sort, tuple[Any, ...]], ...]:
        """:attr:`facts` grouped by sort, each value hashable (a list as a tuple)."""
        if self._by_sort is None:
            self._by_sort = tuple(
                (s, tuple(hashable(v) for v in vals)) for s, vals in self._sorted()
            )
        return self._by_sort

    @property
    def fact_set(self) -> frozenset[Fact]:
        """The facts as a set of (sort, hashable value) pairs (no order needed, so none
        is made: asking whether an output shows a value is most of what this is for)."""
        if self._fact_set is None:
            self._fact_set = frozenset((s, hashable(v)) for s, v in self._found())
        return self._fact_set

    @property
    def cells(self) -> frozenset[Cell]:
        if self._cells is None:
            self._cells = frozenset(shown_cells(self.domain, self.tool, self.args, self.value))
        return self._cells


def reveal(domain: Domain, state: State, tool: ToolDef, args: dict[str, Any], value: Any) -> Reveal:
    """What ``tool(**args)``, which returned ``value`` on ``state``, shows an agent.

    A read's output is a function of the state's content, its date and its arguments, so what it
    shows is kept in the state's memo (:meth:`~graphgen.state.State.memo`) and serves
    every copy until one writes: the candidates drawn on one initial state make the same
    first reads, and on large tables one listing can show tens of thousands of facts.
    It serves only the very result it was made from, which the interpreter shares
    (:func:`~graphgen.interp.run_call`): a compiled environment under check returns
    results of its own, and what they show is worked out from them. A write's output is
    worked out afresh (``state`` is the state after it)."""
    call = None if tool.is_write else call_key(tool.name, args)
    if call is None:
        return Reveal(domain, tool, args, value)
    memo, key = state.memo(), ("reveal", id(domain), state.today, call)
    hit = memo.get(key)
    if hit is not None and hit.domain is domain and hit.value is value:
        return hit  # type: ignore[no-any-return]
    got = Reveal(domain, tool, args, value)
    if hit is None:
        memo[key] = got
    return got


def visible_fields(domain: Domain) -> dict[str, set[str]]:
    """Per entity, the fields some tool's output can show for a particular row (type level
    of :func:`shown_cells`): what a referring expression may describe a row by."""
    out: dict[str, set[str]] = {e: set() for e in domain.entities}
    for t in domain.tools.values():
        if t.returns is not None:
            for ent, f in _shown_fields(domain, t.returns):
                out[ent].add(f)
    return out


def _shown_fields(domain: Domain, e: ir.Expr) -> set[tuple[str, str]]:
    match e:
        case ir.RowOf(entity=ent):
            return {(ent, f) for f in domain.entities[ent].fields}
        case ir.FieldOf(entity=ent, key=ir.Var(), field=f):
            return {(ent, f)}
        case ir.Comp(var=var, entity=ent, cond=cond, proj=proj):
            row = isinstance(proj, ir.Var) and proj.name == var
            if isinstance(proj, ir.RowOf) and isinstance(proj.key, ir.Var):
                row = proj.key.name == var
                if row:
                    return _shown_fields(domain, proj) | {
                        (ent, f) for f in _pinned_fields(var, ent, cond)
                    }
            return {(ent, f) for f in _pinned_fields(var, ent, cond)} if row else set()
        case ir.DictLit(values=vs) | ir.ListLit(items=vs):
            return set().union(*(_shown_fields(domain, v) for v in vs)) if vs else set()
        case ir.Old(operand=o):
            return _shown_fields(domain, o)
        case ir.DictComp(comp=ir.Comp(var=var, entity=ent, cond=cond, proj=proj)):
            pinned = {(ent, f) for f in _pinned_fields(var, ent, cond)}
            this_row = ir.Var(var, RefT(ent))
            if isinstance(proj, ir.RowOf) and proj.key == this_row:
                return pinned | _shown_fields(domain, proj)
            if isinstance(proj, ir.FieldOf) and proj.key == this_row:
                return pinned | {(ent, proj.field)}
            return pinned
        case ir.Index(operand=xs):
            return _shown_fields(domain, xs)
        case (
            ir.Lit()
            | ir.Var()
            | ir.FieldOf()
            | ir.Exists()
            | ir.Compare()
            | ir.BoolOp()
            | ir.Not()
            | ir.Arith()
            | ir.Neg()
            | ir.Contains()
            | ir.Len()
            | ir.Agg()
            | ir.IfExp()
            | ir.IsNone()
            | ir.Round()
            | ir.StrOp()
            | ir.Today()
        ):
            return set()
        case _:
            assert_never(e)


def map_key(domain: Domain, t: Ty, text: Any) -> Any:
    """The id a key of a result keyed by id (type ``t``, a :class:`MapT`) stands for:
    JSON object keys are strings, so ``"3"`` is int id 3 of a ``type: int`` key."""
    if (
        isinstance(t, MapT)
        and isinstance(t.key, RefT)
        and t.key.entity in domain.int_keys
        and isinstance(text, str)
    ):
        try:
            return int(text)
        except ValueError:
            return text
    return text


def row_lookup(e: ir.Expr | None) -> ir.RowOf | None:
    """The ``Entity[param]`` a read shows whole: its return value itself, or the one row
    of that form inside a record literal (``{'ticket': Ticket[ticket_id]}``) — either
    way the agent sees every field of the row. None for any other return value."""
    match e:
        case ir.RowOf(key=ir.Var()):
            return e
        case ir.DictLit(values=vs):
            rows = [r for v in vs if (r := row_lookup(v)) is not None]
            return rows[0] if len(rows) == 1 else None
        case _:
            return None


def listed_keys(domain: Domain, tool: ToolDef, value: Any, entity: str) -> list[Any]:
    """The ids of ``entity`` that ``tool`` returning ``value`` shows, in the order shown
    (each once): the candidates an agent holds after the call ("list_user_orders returned
    four orders")."""
    out: list[Any] = []
    if tool.return_ty is not None:
        _keys(domain, tool.return_ty, value, entity, out)
    return list(dict.fromkeys(out))


def _keys(domain: Domain, t: Ty, v: Any, entity: str, out: list[Any]) -> None:
    if v is None:
        return
    if isinstance(t, RefT):
        if t.entity == entity:
            out.append(v)
    elif isinstance(t, ListT) and isinstance(v, list):
        for item in v:
            _keys(domain, t.elem, item, entity, out)
    elif isinstance(t, RowT) and isinstance(v, dict):
        edef = domain.entities[t.entity]
        for name, x in v.items():
            if name == edef.key:
                if t.entity == entity:
                    out.append(x)
            elif name in edef.fields:
                _keys(domain, edef.fields[name].ty, x, entity, out)
    elif isinstance(t, RecordT) and isinstance(v, dict):
        for name, ft in t.fields:
            _keys(domain, ft, v.get(name), entity, out)
    elif isinstance(t, MapT) and isinstance(v, dict):
        for k, x in v.items():
            _keys(domain, t.key, map_key(domain, t, k), entity, out)
            _keys(domain, t.value, x, entity, out)
