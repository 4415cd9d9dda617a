"""IR → Python-syntax source text (the same surface syntax domains are written in).

Used for messages shown to agents and authors, and as the base printer that the code
generator in ``envs`` specialises.
"""

from __future__ import annotations

from graphgen import ir

_PREC = {"or": 1, "and": 2, "not": 3, "cmp": 4, "+": 5, "-": 5, "*": 6, "neg": 7, "atom": 9}


def _p(e: ir.Expr) -> int:
    match e:
        case ir.BoolOp(op=op):
            return _PREC[op]
        case ir.Not():
            return _PREC["not"]
        case ir.Compare() | ir.Contains() | ir.Exists():
            return _PREC["cmp"]
        case ir.Arith(op=op):
            return _PREC[op]
        case ir.Neg():
            return _PREC["neg"]
        case ir.IfExp():
            return 0
    return _PREC["atom"]


def to_source(e: ir.Expr, rows: frozenset[str] = frozenset()) -> str:
    """Render ``e`` back to expression syntax.

    >>> from graphgen.types import INT
    >>> to_source(ir.Arith("+", ir.Lit(1, INT), ir.Var("x", INT), INT))
    '1 + x'
    """

    def wrap(x: ir.Expr, min_prec: int) -> str:
        s = to_source(x, rows)
        return f"({s})" if _p(x) < min_prec else s

    match e:
        case ir.Lit(value=v):
            return repr(v)
        case ir.Var(name=n):
            return n
        case ir.FieldOf(key=ir.Var(name=v), field=f) if v in rows:
            return f"{v}.{f}"
        case ir.FieldOf(entity=ent, key=k, field=f):
            return f"{ent}[{to_source(k, rows)}].{f}"
        case ir.RowOf(key=ir.Var(name=v)) if v in rows:
            return v
        case ir.RowOf(entity=ent, key=k):
            return f"{ent}[{to_source(k, rows)}]"
        case ir.Exists(entity=ent, key=k):
            return f"{wrap(k, 5)} in {ent}"
        case ir.Compare(op=op, left=a, right=b):
            return f"{wrap(a, 5)} {op} {wrap(b, 5)}"
        case ir.BoolOp(op=op, values=vs):
            return f" {op} ".join(wrap(v, _PREC[op] + 1) for v in vs)
        case ir.Not(operand=ir.Exists(entity=ent, key=k)):
            return f"{wrap(k, 5)} not in {ent}"
        case ir.Not(operand=o):
            return f"not {wrap(o, _PREC['not'])}"
        case ir.Arith(op=op, left=a, right=b):
            return f"{wrap(a, _PREC[op])} {op} {wrap(b, _PREC[op] + 1)}"
        case ir.Neg(operand=o):
            return f"-{wrap(o, _PREC['neg'])}"
        case ir.Contains(item=a, container=b, negated=neg):
            return f"{wrap(a, 5)} {'not in' if neg else 'in'} {wrap(b, 5)}"
        case ir.Len(operand=o):
            return f"len({to_source(o, rows)})"
        case ir.ListLit(items=items):
            return "[" + ", ".join(to_source(x, rows) for x in items) + "]"
        case ir.Comp():
            return f"[{_comp_body(e, rows)}]"
        case ir.Agg(fn=fn, comp=c):
            return f"{fn}({_comp_body(c, rows)})"
        case ir.IfExp(cond=c, then=t, orelse=o):
            return f"{wrap(t, 1)} if {wrap(c, 1)} else {wrap(o, 0)}"
        case ir.DictLit(keys=ks, values=vs):
            body = ", ".join(f"{k!r}: {to_source(v, rows)}" for k, v in zip(ks, vs, strict=True))
            return "{" + body + "}"
    raise TypeError(f"unknown IR node {type(e).__name__}")


def _comp_body(c: ir.Comp, rows: frozenset[str]) -> str:
    inner = rows | {c.var}
    s = f"{to_source(c.proj, inner)} for {c.var} in {c.entity}"
    if c.cond is not None:
        s += f" if {to_source(c.cond, inner)}"
    return s


def effect_source(eff: ir.Effect) -> str:
    """Render an effect statement."""
    match eff:
        case ir.Assign(entity=ent, key=k, field=f, op=op, value=v):
            return f"{ent}[{to_source(k)}].{f} {op} {to_source(v)}"
        case ir.Create(entity=ent, bind=b, values=vs):
            args = ", ".join(f"{n}={to_source(v)}" for n, v in vs)
            return (f"{b} = " if b else "") + f"{ent}.create({args})"
        case ir.Delete(entity=ent, key=k):
            return f"del {ent}[{to_source(k)}]"
        case ir.ListEdit(entity=ent, key=k, field=f, op=op, value=v):
            return f"{ent}[{to_source(k)}].{f}.{op}({to_source(v)})"
    raise TypeError(f"unknown effect {type(eff).__name__}")
