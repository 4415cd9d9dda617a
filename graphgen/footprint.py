"""Read and write sets of expressions, effects and tools: what a call looks at and changes.

One reference type, :class:`FieldRef`, names a location of the state at the level of a
table: ``E.f`` is field ``f`` of every row of entity ``E``, ``E.*`` is *which rows
exist*, and ``E.#`` is ``E``'s id counter (the next id a create hands out).

Two granularities are built from the same walkers:

* the *precise* sets the dependency graph (:mod:`graphgen.graph`) draws its edges from
  and the enabling analysis reasons with: :func:`reads`, :func:`fail_reads`,
  :func:`effect_reads`, :func:`effect_writes`, :func:`writes`, :func:`tool_reads`
  (before the call commits, with where each location is read) and :func:`tool_queries`
  (the return value);
* the *whole-call* sets the bounded model checker prunes tools with
  (:func:`graphgen.verify.bmc.relevant_tools`): :func:`cells_read` and
  :func:`cells_written`. They are coarser on purpose — every location whose value can
  influence any part of a call (its validity, its invariant checks, its output) or that
  a call can change, including the id counter — because that pruning is only sound when
  nothing a call depends on is missed. They are defined from the precise sets plus the
  extra locations, so the two granularities cannot drift apart.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import assert_never

from graphgen import ir
from graphgen.domain import Domain, ToolDef, per_tool
from graphgen.types import RefT

__all__ = [
    "COUNTER",
    "ROWS",
    "FieldRef",
    "cells_read",
    "cells_written",
    "effect_op",
    "effect_reads",
    "effect_writes",
    "fail_reads",
    "reads",
    "tool_queries",
    "tool_reads",
    "writes",
]

ROWS = "*"  # the field name of a table's row set
COUNTER = "#"  # the field name of a table's id counter


@dataclass(frozen=True)
class FieldRef:
    """A location of the state, table-wide: ``(entity, field)``.

    ``field`` is a field name, :data:`ROWS` (``'*'``, which rows exist) or
    :data:`COUNTER` (``'#'``, the id counter, only in :func:`cells_read` /
    :func:`cells_written`). ``str`` gives ``Entity.field``, the graph's state node name.
    """

    entity: str
    field: str = field(default=ROWS)

    def __str__(self) -> str:
        return f"{self.entity}.{self.field}"


# ------------------------------------------------------------------ expressions


def reads(expr: ir.Expr, domain: Domain | None = None) -> set[FieldRef]:
    """The state locations ``expr``'s value depends on.

    ``E[k].f`` reads ``E.f``; ``k in E`` and comprehensions over ``E`` read ``E.*``.
    ``E[k].f`` also reads ``E.*`` unless ``k`` is a variable: a variable key is a tool
    parameter (its row's existence is checked with the arguments, see
    :func:`tool_reads`), a comprehension variable (it ranges over existing rows) or a
    ``create`` binding (its row was just made). A whole row ``E[k]`` reads every field
    of ``E``, which needs ``domain``.
    """
    out: set[FieldRef] = set()
    for n in ir.walk(expr):
        match n:
            case ir.FieldOf(entity=ent, key=k, field=f):
                out.add(FieldRef(ent, f))
                if not isinstance(k, ir.Var):
                    out.add(FieldRef(ent))
            case ir.RowOf(entity=ent, key=k):
                if domain is None:
                    raise ValueError(
                        f"reading a whole {ent} row needs the domain: reads(expr, domain)"
                    )
                out.update(FieldRef(ent, f) for f in domain.entities[ent].fields)
                if not isinstance(k, ir.Var):
                    out.add(FieldRef(ent))
            case ir.Exists(entity=ent) | ir.Comp(entity=ent):
                out.add(FieldRef(ent))
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
                pass  # reads nothing itself; ir.walk visits its operands
            case _:
                assert_never(n)
    return out


def fail_reads(expr: ir.Expr, domain: Domain | None = None) -> set[FieldRef]:
    """The locations that decide whether evaluating ``expr`` *raises* (rather than its value).

    Evaluation raises when ``E[k]`` names a missing row (only possible for a computed or
    literal key, see :func:`reads`) and when ``min``/``max`` run over no rows.
    """
    out: set[FieldRef] = set()
    for n in ir.walk(expr):
        match n:
            case ir.FieldOf(entity=ent, key=k) | ir.RowOf(entity=ent, key=k):
                if not isinstance(k, ir.Var):
                    out.add(FieldRef(ent))
                    out |= reads(k, domain)
            case ir.Agg(fn=fn, comp=c):
                if fn in ("min", "max"):
                    out |= reads(c, domain)
            case ir.Round(den=den) if den is not None:
                out |= reads(den, domain)  # a zero divisor raises
            case ir.Index(operand=xs, index=i):
                out |= reads(xs, domain) | reads(i, domain)  # the list's length decides
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
                | ir.IfExp()
                | ir.DictLit()
                | ir.IsNone()
                | ir.Old()
                | ir.DictComp()
                | ir.Round()
                | ir.StrOp()
                | ir.Today()
            ):
                pass  # cannot raise by itself; ir.walk visits its operands
            case _:
                assert_never(n)
    return out


# ------------------------------------------------------------------ effects


def effect_writes(eff: ir.Effect) -> set[FieldRef]:
    """The locations one effect writes.

    A create writes ``E.*`` and every field of the new row (the parser fills defaults, so
    ``Create.values`` names them all); a delete writes ``E.*`` only, since any later read
    of the deleted row either goes through ``E.*`` or fails.
    """
    match eff:
        case ir.Assign(entity=ent, field=f) | ir.ListEdit(entity=ent, field=f):
            return {FieldRef(ent, f)}
        case ir.Create(entity=ent, values=vs):
            return {FieldRef(ent)} | {FieldRef(ent, f) for f, _ in vs}
        case ir.Delete(entity=ent):
            return {FieldRef(ent)}
        case _:
            assert_never(eff)


def effect_op(eff: ir.Effect) -> str:
    """The effect's kind as the graph names it: ``=``, ``+=``, ``-=``, ``append``,
    ``remove``, ``create`` or ``delete``."""
    match eff:
        case ir.Assign(op=op) | ir.ListEdit(op=op):
            return op
        case ir.Create():
            return "create"
        case ir.Delete():
            return "delete"
        case _:
            assert_never(eff)


def effect_reads(domain: Domain, eff: ir.Effect) -> set[FieldRef]:
    """The locations one effect reads: its keys and values, plus what its checks read.

    Beyond :func:`ir.effect_exprs`: the old value of a ``+=``/``-=`` target, the list an
    ``append``/``remove`` tests membership in, the row set of a target with a computed
    key, and for a ``unique`` field every row's value of it (the uniqueness check).
    """
    out: set[FieldRef] = set()
    for e in ir.effect_exprs(eff):
        out |= reads(e, domain)
    match eff:
        case ir.Assign(entity=ent, key=k, field=f, op=op):
            if not isinstance(k, ir.Var):
                out.add(FieldRef(ent))
            if op != "=":
                out.add(FieldRef(ent, f))
            if domain.entities[ent].fields[f].unique:
                out |= {FieldRef(ent, f), FieldRef(ent)}
        case ir.ListEdit(entity=ent, key=k, field=f):
            out.add(FieldRef(ent, f))
            if not isinstance(k, ir.Var):
                out.add(FieldRef(ent))
        case ir.Create(entity=ent, values=vs, key=given):
            fields = domain.entities[ent].fields
            if given is not None:  # a named key must not be taken: reads the row set
                out.add(FieldRef(ent))
            for f, _ in vs:
                if fields[f].unique:
                    out |= {FieldRef(ent, f), FieldRef(ent)}
        case ir.Delete(entity=ent, key=k):
            if not isinstance(k, ir.Var):
                out.add(FieldRef(ent))
        case _:
            assert_never(eff)
    return out


# ------------------------------------------------------------------ tools, precise


def writes(tool: ToolDef) -> set[FieldRef]:
    """Every location ``tool``'s effects write (empty for a read tool)."""
    out: set[FieldRef] = set()
    for stmt in tool.effects:
        out |= effect_writes(stmt.effect)
    return out


def tool_reads(domain: Domain, tool: ToolDef) -> dict[FieldRef, set[str]]:
    """Every location ``tool`` reads before it commits, mapped to where it is read.

    ``requires``: a precondition; ``param``: an argument of entity type ``E`` must name
    an existing row, so the call reads ``E.*``; ``effect``: see :func:`effect_reads`.
    The return value is not included (see :func:`tool_queries`).
    """
    out: dict[FieldRef, set[str]] = {}

    def add(refs: Iterable[FieldRef], via: str) -> None:
        for r in refs:
            out.setdefault(r, set()).add(via)

    for chk in tool.requires:
        add(reads(chk.expr, domain), "requires")
    add((FieldRef(p.ty.entity) for p in tool.params.values() if isinstance(p.ty, RefT)), "param")
    for case in tool.cases:  # which case runs depends on what its guard reads
        if case.when is not None:
            add(reads(case.when, domain), "when")
    for stmt in tool.effects:  # every case's effects
        add(effect_reads(domain, stmt.effect), "effect")
    return out


def tool_queries(domain: Domain, tool: ToolDef) -> set[FieldRef]:
    """The locations ``tool``'s return value reads (evaluated after the effects)."""
    return reads(tool.returns, domain) if tool.returns is not None else set()


# ------------------------------------------------------------------ tools, whole call


@per_tool
def cells_read(domain: Domain, tool: ToolDef) -> frozenset[FieldRef]:
    """Every location whose value can influence a call of ``tool``: its validity, its
    invariant checks or its output.

    :func:`tool_reads` and :func:`tool_queries`, plus: ``E.*`` wherever a field of ``E``
    is read (whether the row read exists), the id counter of every created entity, and
    for every entity an effect writes, its row set and its bounded and unique fields
    (the invariant check after the effects reads them).
    """
    out = set(tool_reads(domain, tool)) | tool_queries(domain, tool)
    out |= {FieldRef(r.entity) for r in out}
    touched: set[str] = set()
    for stmt in tool.effects:
        match stmt.effect:
            case ir.Assign(entity=ent) | ir.ListEdit(entity=ent):
                touched.add(ent)
            case ir.Create(entity=ent):
                out.add(FieldRef(ent, COUNTER))
                touched.add(ent)
            case ir.Delete(entity=ent):
                out.add(FieldRef(ent))
            case _:
                assert_never(stmt.effect)
    for ent in touched:
        out.add(FieldRef(ent))
        out.update(
            FieldRef(ent, f)
            for f, fd in domain.entities[ent].fields.items()
            if fd.unique or fd.min is not None or fd.max is not None
        )
    return frozenset(out)


@per_tool
def cells_written(domain: Domain, tool: ToolDef) -> frozenset[FieldRef]:
    """Every location a call of ``tool`` can change: :func:`writes`, plus the id counter
    and every field of each entity it creates rows of."""
    out = writes(tool)
    for stmt in tool.effects:
        match stmt.effect:
            case ir.Create(entity=ent):
                out.add(FieldRef(ent, COUNTER))
                out.update(FieldRef(ent, f) for f in domain.entities[ent].fields)
            case ir.Assign() | ir.ListEdit() | ir.Delete():
                pass
            case _:
                assert_never(stmt.effect)
    return frozenset(out)
