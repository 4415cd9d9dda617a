"""z3 term helpers for the encoding: constant folding, cached literals, fresh constants.

Folding constants in Python keeps terms small: concrete keys (loop variables, literal
ids) select cells directly instead of building if-then-else chains. Every other module
of the encoding builds its terms through these helpers; :class:`EncodeError` is the one
error the encoding raises.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import z3

from graphgen.errors import GraphgenError

# z3 ships no type stubs: every z3 expression is ``Any`` to mypy. The alias documents
# which values are z3 terms.
Term = Any

TRUE: Term = z3.BoolVal(True)
FALSE: Term = z3.BoolVal(False)


class EncodeError(GraphgenError):
    """The IR uses something the finite encoding cannot represent exactly."""


CONTEXT = z3.main_ctx()
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


def _make_nary(fn: Any, parts: Sequence[Term]) -> Term:
    # z3.And/z3.Or coerce every argument in Python; the C call is much cheaper.
    n = len(parts)
    arr = (z3.Ast * n)()
    for i, p in enumerate(parts):
        arr[i] = p.ast
    return z3.BoolRef(fn(CONTEXT.ref(), n, arr), CONTEXT)


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
    return parts[0] if len(parts) == 1 else _make_nary(z3.Z3_mk_and, parts)


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
    return parts[0] if len(parts) == 1 else _make_nary(z3.Z3_mk_or, parts)


def not_(x: Term) -> Term:
    """Negation with constant folding."""
    if is_t(x):
        return FALSE
    if is_f(x):
        return TRUE
    return z3.BoolRef(z3.Z3_mk_not(CONTEXT.ref(), x.ast), CONTEXT)


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
    return z3.BoolRef(z3.Z3_mk_eq(CONTEXT.ref(), a.ast, b.ast), CONTEXT)


def ite(c: Term, a: Term, b: Term) -> Term:
    """If-then-else with constant folding (both branches of one sort)."""
    if is_t(c):
        return a
    if is_f(c):
        return b
    if same(a, b):
        return a
    cls = z3.BoolRef if isinstance(a, z3.BoolRef) else z3.ArithRef
    return cls(z3.Z3_mk_ite(CONTEXT.ref(), c.ast, a.ast, b.ast), CONTEXT)


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
    return z3.ArithRef(z3.Z3_mk_fresh_const(CONTEXT.ref(), prefix, _INT_SORT), CONTEXT)


def fresh_bool(prefix: str) -> Term:
    """A fresh Bool constant."""
    return z3.BoolRef(z3.Z3_mk_fresh_const(CONTEXT.ref(), prefix, _BOOL_SORT), CONTEXT)


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
