"""What an agent can know: value *sorts* and the facts tool outputs reveal.

An agent never sees the database. It knows the values the instruction gives it and the
values earlier tool outputs returned. We classify every value by a :class:`Sort`:

* ``key:E``      — an id of entity ``E`` (from a lookup, or givable when ``E``'s key is);
* ``field:E.f``  — a value of field ``E.f`` (givable fields such as ``User.email``);
* ``enum:N``     — a member of enum ``N``: always known, the tool schema lists them;
* ``free:T``     — a free primitive (an amount, a new address) that the user states.

A call is *valid for the agent* when every argument is known at its sort and the
precondition holds. The same classification gives the graph's data edges (type level,
:func:`produced_sorts`) and the concrete knowledge of a task (value level,
:func:`facts_of_result`), so the graph, the task generator and the z3 proofs agree.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, assert_never

from graphgen import ir
from graphgen.domain import Domain, ParamDef, ToolDef
from graphgen.types import EnumT, ListT, PrimT, RecordT, RefT, RowT, Ty


@dataclass(frozen=True, order=True, slots=True)
class Sort:
    """A kind of value an agent can know. ``str(sort)`` is the graph node id."""

    kind: str  # "key" | "field" | "enum" | "free"
    name: str  # "Order" | "User.email" | "Order.status" | "int"

    def __str__(self) -> str:
        return f"{self.kind}:{self.name}"

    @property
    def always_known(self) -> bool:
        """Enum members are listed by the tool schema, so no one has to give them."""
        return self.kind == "enum"


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
    if isinstance(t, RefT):
        return key_sort(t.entity)
    if isinstance(t, EnumT):
        return Sort("enum", t.name)
    if isinstance(t, PrimT):
        return Sort("free", t.name)
    raise TypeError(f"no sort for non-scalar type {t.show()}")


def field_sorts(domain: Domain, entity: str, field: str) -> list[Sort]:
    """Sorts revealed by seeing a value of ``entity.field``."""
    edef = domain.entities[entity]
    if field == edef.key:
        return [key_sort(entity)]
    t = edef.fields[field].ty
    out = [Sort("field", f"{entity}.{field}")]
    target = domain.entity_of_ref(t)
    if target is not None:
        out.append(key_sort(target))
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
        case ir.DictLit(values=vs) | ir.ListLit(items=vs):
            return set().union(*(_expr_sorts(domain, v) for v in vs)) if vs else set()
        case ir.IfExp(then=a, orelse=b):
            return _expr_sorts(domain, a) | _expr_sorts(domain, b)
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
        ):
            return _type_sorts(domain, e.ty)
        case _:
            assert_never(e)


def _row_sorts(domain: Domain, ent: str) -> set[Sort]:
    out = {key_sort(ent)}
    for f in domain.entities[ent].fields:
        out.update(field_sorts(domain, ent, f))
    return out


def _type_sorts(domain: Domain, t: Ty) -> set[Sort]:
    if isinstance(t, RefT):
        return {key_sort(t.entity)}
    if isinstance(t, ListT):
        return _type_sorts(domain, t.elem)
    if isinstance(t, RowT):
        return _row_sorts(domain, t.entity)
    if isinstance(t, RecordT):
        return set().union(*(_type_sorts(domain, x) for _, x in t.fields)) if t.fields else set()
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
                    out.update((s, item) for s in _type_sorts(domain, fd.ty.elem))
            else:
                out.update((s, x) for s in field_sorts(domain, t.entity, name))
        return
    if isinstance(t, RecordT) and isinstance(v, dict):
        exprs = dict(zip(e.keys, e.values, strict=True)) if isinstance(e, ir.DictLit) else {}
        for name, ft in t.fields:
            if name in v:
                _facts(domain, exprs.get(name), ft, v[name], out)
        return
    if isinstance(t, RefT):
        out.add((key_sort(t.entity), v))


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
        ):
            return None  # e.g. a list field: its items are keys, known from the type
        case _:
            assert_never(e)
