"""z3 term helpers for the encoding: constant folding, cached literals, fresh constants.

Folding constants in Python keeps terms small: concrete keys (loop variables, literal
ids) select cells directly instead of building if-then-else chains. Every other module
of the encoding builds its terms through these helpers; :class:`EncodeError` is the one
error the encoding raises.
"""

from __future__ import annotations

import ctypes
from collections.abc import Sequence
from functools import cache
from typing import Any

import z3

from graphgen.errors import GraphgenError

# z3 ships no type stubs: every z3 expression is ``Any`` to mypy. The alias documents
# which values are z3 terms.
Term = Any


class EncodeError(GraphgenError):
    """The IR uses something the finite encoding cannot represent exactly."""


class _Literals:
    """The terms every encoding builds again and again, in the z3 context terms are
    built in: read as ``LIT.TRUE``, ``LIT.ctx``.

    A :class:`Z3Scope` swaps the contents of the one object :data:`LIT` (so modules
    that imported it see the swap); the first read after a swap builds them in the
    context then current."""

    ctx: Any
    TRUE: Term
    FALSE: Term
    # z3 hash-conses terms, so one term is one AST pointer: comparing pointers in Python
    # identifies terms without a call into z3 (get_id/eq cost a ctypes round trip each).
    true_ptr: int
    false_ptr: int
    int_sort: Any
    bool_sort: Any
    # Small integer literals are cached; ``int_of`` maps a cached term's Python id back
    # to its value so the hot path needs no call into z3, and ``int_at`` its AST pointer
    # (numerals are hash-consed: another wrapper of the same literal has that pointer).
    ints: dict[int, Term]
    int_of: dict[int, int]
    int_at: dict[int, int]

    def __getattr__(self, name: str) -> Any:
        # Called only for an attribute not set: none is, right after a swap.
        if name.startswith("_"):
            raise AttributeError(name)
        ctx = z3.main_ctx()
        self.ctx = ctx
        self.TRUE, self.FALSE = z3.BoolVal(True, ctx), z3.BoolVal(False, ctx)
        self.true_ptr, self.false_ptr = self.TRUE.ast.value, self.FALSE.ast.value
        self.int_sort, self.bool_sort = z3.IntSort(ctx).ast, z3.BoolSort(ctx).ast
        self.ints, self.int_of, self.int_at = {}, {}, {}
        return object.__getattribute__(self, name)


LIT = _Literals()


class Z3Scope:
    """A z3 context of one's own, current while the scope is entered.

    z3's solver heuristics break ties by the ids of terms, and a context hands out ids
    in the order terms are made, freed ids first: in a context shared by every task, a
    task's search (and so whether a query ends within its resource limit) depends on
    what the process proved before. Each :class:`~graphgen.verify.proofs.Prover`
    proves in a scope of its own, so a task's proofs are the same work in a fresh
    process, in a worker that has proved a thousand others, on any backend.

    The context is made when first needed (a task the explicit search decides never
    pays for one). Entering again (also while entered) makes the same context
    current; leaving restores the one before. Terms made in a scope must not be
    combined with terms made outside it. The current context is the process's (z3's
    default one), so provers run in processes, not threads, as z3's Python API wants.

    >>> a, b = Z3Scope(), Z3Scope()
    >>> with a:
    ...     x = LIT.TRUE
    >>> with b:
    ...     y = LIT.TRUE
    >>> x.ctx is y.ctx
    False
    >>> with a:
    ...     with b:
    ...         with a:
    ...             LIT.TRUE is x
    True
    """

    def __init__(self) -> None:
        self._ctx: Any = None
        self._lits: dict[str, Any] = {}
        # per entry, what to restore on leaving (None: this scope was current already)
        self._outer: list[tuple[Any, dict[str, Any]] | None] = []

    def _keep(self) -> None:
        """Record the context and literals this scope made while current."""
        self._ctx = z3.z3._main_ctx
        self._lits = dict(vars(LIT))

    def __enter__(self) -> Z3Scope:
        _keep_freed_blocks()  # once per process (cached)
        _count_references_unchecked()  # once per process (cached)
        if _ACTIVE and _ACTIVE[-1] is self:
            self._outer.append(None)
        else:
            if _ACTIVE:
                _ACTIVE[-1]._keep()  # its context may have been made since it was entered
            self._outer.append((z3.z3._main_ctx, dict(vars(LIT))))
            # With no context yet, z3.main_ctx() makes one on first use (z3 has no
            # public way to set the context its default arguments use).
            z3.z3._main_ctx = self._ctx
            vars(LIT).clear()
            vars(LIT).update(self._lits)
        _ACTIVE.append(self)
        return self

    def __exit__(self, *exc: object) -> None:
        _ACTIVE.pop()
        outer = self._outer.pop()
        if outer is None:
            return
        self._keep()
        z3.z3._main_ctx, lits = outer
        vars(LIT).clear()
        vars(LIT).update(lits)


_ACTIVE: list[Z3Scope] = []  # the scopes entered, innermost last


@cache
def _keep_freed_blocks() -> None:
    """Let glibc's malloc keep freed blocks of up to 32 MB for reuse (elsewhere: nothing).

    A z3 context allocates a block of some megabytes. With glibc's adaptive defaults, a
    process as large as one that imported the pipeline gets it from a fresh ``mmap``
    and returns it on free, so every new context page-faults about 16 MB: 8-10 ms
    instead of 0.5 ms, as much as a typical proof. Fixed thresholds (which also turn
    the adaptation off) keep such blocks in the heap; a process holds at most 32 MB
    more than it uses."""
    try:
        libc = ctypes.CDLL("libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):  # not glibc
        return
    m_trim_threshold, m_mmap_threshold = -1, -3
    mallopt(m_mmap_threshold, 32 << 20)
    mallopt(m_trim_threshold, 32 << 20)


def _c_function(name: str) -> Any:
    """z3's C function ``name`` itself, without the wrapper z3's Python API puts around
    it (which asks the context for an error code after every call), when the wrapper
    has the layout this was written against (the C function held as ``_elems.f``);
    otherwise the wrapper, which behaves the same, only slower."""
    wrapper = getattr(z3.z3core, name)
    defaults = getattr(wrapper, "__defaults__", None) or (None,)
    raw = getattr(defaults[-1], "f", None)
    return wrapper if raw is None else raw


# The calls the encoding makes most. A C function of z3's API that fails returns a null
# AST (and sets the error code): :func:`made` turns that into an error, so skipping the
# poll loses nothing for these.
_MK_AND = _c_function("Z3_mk_and")
_MK_OR = _c_function("Z3_mk_or")
_MK_NOT = _c_function("Z3_mk_not")
_MK_EQ = _c_function("Z3_mk_eq")
_MK_ITE = _c_function("Z3_mk_ite")
SUBSTITUTE = _c_function("Z3_substitute")
GET_APP_ARG = _c_function("Z3_get_app_arg")
INC_REF = _c_function("Z3_inc_ref")
DEC_REF = _c_function("Z3_dec_ref")
_ERROR_CODE = _c_function("Z3_get_error_code")
_ERROR_MSG = _c_function("Z3_get_error_msg")


def made(ast: Any) -> Any:
    """``ast`` as one of the C functions above returned it; a null AST means z3 refused
    the call, raised as :class:`EncodeError` with z3's message."""
    if ast.value is None:
        ctx = LIT.ctx.ref()
        try:
            msg: Any = _ERROR_MSG(ctx, _ERROR_CODE(ctx))
        except z3.Z3Exception as exc:  # a checked wrapper reports the error itself
            msg = exc.value
        if isinstance(msg, bytes):
            msg = msg.decode(errors="replace")
        raise EncodeError(f"z3 refused a term: {msg}")
    return ast


@cache
def _count_references_unchecked() -> bool:
    """Let z3's term objects count references through the C functions themselves.

    Every z3 term object made or freed calls ``Z3_inc_ref`` or ``Z3_dec_ref`` through a
    wrapper that then polls the context's error code: a second ctypes call and two
    Python frames, though counting a live term's references sets no error (and a null
    term would crash in the C call, before any poll). The term classes look the two
    names up in ``z3.z3``'s namespace, so the C functions are put there. True when
    swapped (only when both wrappers have the layout :func:`_c_function` expects)."""
    if INC_REF is z3.z3core.Z3_inc_ref or DEC_REF is z3.z3core.Z3_dec_ref:
        return False
    if z3.z3.Z3_inc_ref is not z3.z3core.Z3_inc_ref or z3.z3.Z3_dec_ref is not z3.z3core.Z3_dec_ref:
        return False  # someone else replaced them: leave theirs
    z3.z3.Z3_inc_ref, z3.z3.Z3_dec_ref = INC_REF, DEC_REF
    return True


def same(a: Term, b: Term) -> bool:
    """``a`` and ``b`` are the same term."""
    return a is b or bool(a.ast.value == b.ast.value)


def is_t(x: Term) -> bool:
    """``x`` is the literal true."""
    lits = LIT
    return x is lits.TRUE or bool(x.ast.value == lits.true_ptr)


def is_f(x: Term) -> bool:
    """``x`` is the literal false."""
    lits = LIT
    return x is lits.FALSE or bool(x.ast.value == lits.false_ptr)


def _make_nary(fn: Any, parts: Sequence[Term]) -> Term:
    # z3.And/z3.Or coerce every argument in Python; the C call is much cheaper.
    n = len(parts)
    arr = (z3.Ast * n)()
    for i, p in enumerate(parts):
        arr[i] = p.ast
    return z3.BoolRef(made(fn(LIT.ctx.ref(), n, arr)), LIT.ctx)


def and_(*xs: Term) -> Term:
    """Conjunction with constant folding."""
    parts = []
    for x in xs:
        if is_f(x):
            return LIT.FALSE
        if not is_t(x):
            parts.append(x)
    if not parts:
        return LIT.TRUE
    return parts[0] if len(parts) == 1 else _make_nary(_MK_AND, parts)


def or_(*xs: Term) -> Term:
    """Disjunction with constant folding."""
    parts = []
    for x in xs:
        if is_t(x):
            return LIT.TRUE
        if not is_f(x):
            parts.append(x)
    if not parts:
        return LIT.FALSE
    return parts[0] if len(parts) == 1 else _make_nary(_MK_OR, parts)


def not_(x: Term) -> Term:
    """Negation with constant folding."""
    if is_t(x):
        return LIT.FALSE
    if is_f(x):
        return LIT.TRUE
    return z3.BoolRef(made(_MK_NOT(LIT.ctx.ref(), x.ast)), LIT.ctx)


def implies(a: Term, b: Term) -> Term:
    """``a → b`` with constant folding."""
    return or_(not_(a), b)


def int_val(i: int) -> Term:
    """A (cached) integer literal."""
    lits = LIT
    t = lits.ints.get(i)
    if t is None:
        t = z3.IntVal(i, lits.ctx)
        if len(lits.ints) < 100_000:
            lits.ints[i] = t
            lits.int_of[id(t)] = i
            lits.int_at[t.ast.value] = i
    return t


def int_const(x: Term) -> int | None:
    """The Python int of an integer literal term, else None."""
    lits = LIT
    v = lits.int_of.get(id(x))
    if v is not None:
        return v
    if isinstance(x, z3.IntNumRef):
        v = lits.int_at.get(x.ast.value)
        return v if v is not None else int(x.as_long())
    return None


def wrap_int(a: Any) -> Term:
    """The term of AST ``a`` (an Int), as the cached literal when it is one: wrapping
    costs calls into z3, and :func:`int_const` then knows it at once."""
    lits = LIT
    v = lits.int_at.get(a.value)
    return lits.ints[v] if v is not None else z3.z3._to_expr_ref(a, lits.ctx)


def eq(a: Term, b: Term) -> Term:
    """Equality of two scalar terms with constant folding."""
    ca, cb = int_const(a), int_const(b)
    if ca is not None and cb is not None:
        return LIT.TRUE if ca == cb else LIT.FALSE
    if same(a, b):
        return LIT.TRUE
    if isinstance(a, z3.BoolRef) and (is_t(a) or is_f(a)) and (is_t(b) or is_f(b)):
        return LIT.FALSE  # two different literals
    return z3.BoolRef(made(_MK_EQ(LIT.ctx.ref(), a.ast, b.ast)), LIT.ctx)


def ite(c: Term, a: Term, b: Term) -> Term:
    """If-then-else with constant folding (both branches of one sort)."""
    if is_t(c):
        return a
    if is_f(c):
        return b
    if same(a, b):
        return a
    cls = z3.BoolRef if isinstance(a, z3.BoolRef) else z3.ArithRef
    return cls(made(_MK_ITE(LIT.ctx.ref(), c.ast, a.ast, b.ast)), LIT.ctx)


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
        return LIT.TRUE if r else LIT.FALSE
    if op == "<":
        return a < b
    if op == "<=":
        return a <= b
    if op == ">":
        return a > b
    return a >= b


def fresh_int(prefix: str) -> Term:
    """A fresh Int constant (the C call: z3.FreshInt coerces in Python first)."""
    return z3.ArithRef(z3.Z3_mk_fresh_const(LIT.ctx.ref(), prefix, LIT.int_sort), LIT.ctx)


def fresh_bool(prefix: str) -> Term:
    """A fresh Bool constant."""
    return z3.BoolRef(z3.Z3_mk_fresh_const(LIT.ctx.ref(), prefix, LIT.bool_sort), LIT.ctx)


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
