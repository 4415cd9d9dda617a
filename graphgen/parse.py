"""Parse expression text into the typed IR.

Expressions use a small, safe subset of Python syntax. We parse with :mod:`ast` (never
``eval``) and *elaborate* the Python tree into :mod:`graphgen.ir` in one pass that
resolves names and checks types against the schema. Anything outside the subset is
rejected with an :class:`~graphgen.errors.ExprError` carrying the column.

The subset: int/str/bool literals, parameters, ``Entity[id].field``, ``Entity[id]``,
``id in Entity``, comparisons (chains allowed), ``and``/``or``/``not``, ``+ - *`` on
ints, ``in``/``not in`` on lists, ``len``, list literals, ``a if c else b``, dict
literals with string keys, list comprehensions over an entity table with filters, and
``any/all/count/sum/min/max`` over such a comprehension, dict comprehensions keyed
by the rows' ids (``{t.ticket_id: t for t in Ticket if ...}``) and one item of a list
(``xs[0]``, ``xs[-1]``).

Effects are single statements: ``E[k].f = v``, ``E[k].f += v``, ``E[k].f -= v``,
``x = E.create(f=v, ...)``, ``del E[k]``, ``E[k].f.append(v)``, ``E[k].f.remove(v)``.
"""

from __future__ import annotations

import ast
import datetime as _dt
import re
from collections.abc import Mapping
from decimal import Decimal
from typing import Any, NoReturn, assert_never

from graphgen import ir
from graphgen.domain import EntityDef
from graphgen.errors import ExprError
from graphgen.limits import MAX_INT_DIGITS
from graphgen.suggest import did_you_mean, effect_target_problem, syntax_words
from graphgen.types import (
    BOOL,
    DATE,
    INT,
    NONE,
    STR,
    DecT,
    EnumT,
    ListT,
    MapT,
    NoneT,
    OptT,
    PrimT,
    RecordT,
    RefT,
    RowT,
    Ty,
    is_number,
    is_optable,
    is_ordered,
    is_scalar,
    optional,
    scale_of,
    strip_opt,
)

#: The string methods expressions may call.
STR_METHODS = ("lower", "upper", "startswith", "endswith")

#: Most places a decimal literal, type or round() may have.
MAX_SCALE = 12


def arith_type(op: str, a: Ty, b: Ty) -> Ty:
    """The type of ``a op b`` on numbers: int for ints; else a decimal whose scale is
    the larger one for ``+ -`` and the sum for ``*`` (the exact result's places)."""
    if a == INT and b == INT:
        return INT
    sa, sb = scale_of(a), scale_of(b)
    return DecT(sa + sb if op == "*" else max(sa, sb))


AGGREGATES = ("any", "all", "count", "sum", "min", "max")
_CMP = {
    ast.Eq: "==",
    ast.NotEq: "!=",
    ast.Lt: "<",
    ast.LtE: "<=",
    ast.Gt: ">",
    ast.GtE: ">=",
}
# Generous but finite: deeply nested input must fail with our error, not RecursionError.
MAX_SOURCE_LEN = 4000
MAX_DEPTH = 60
# Python's tokenizer breaks lines at these (ast's line numbers count them)
_LINE_BREAK = re.compile(r"\r\n|\r|\n")


def is_iso_date(s: str) -> bool:
    """True for a ``YYYY-MM-DD`` calendar date."""
    if len(s) != 10:
        return False
    try:
        # fromisoformat also reads week dates ('2026-W09-1' is 2026-02-23): only the
        # YYYY-MM-DD spelling of the date it reads is that date.
        return _dt.date.fromisoformat(s).isoformat() == s
    except ValueError:
        return False


class Elaborator:
    """Turns Python ``ast`` nodes into typed IR for one domain schema."""

    def __init__(self, entities: Mapping[str, EntityDef]) -> None:
        self.entities = entities
        # Optional-typed expressions (parameters, field reads) known not to be None at
        # the point being elaborated: ``x is not None and x > 3`` reads ``x`` as an int.
        self.known: frozenset[ir.Expr] = frozenset()
        # The tool's ``let:`` names being elaborated (name -> its expression). A use
        # reads the value on the state before the call: ``old(expr)``, except where
        # ``lets_as_old`` is off (preconditions and let bodies, which run before any
        # effect, so the plain expression means the same and analyses read it better).
        self.lets: dict[str, ir.Expr] = {}
        self.lets_as_old = True
        # Domain constants (name -> literal) and the pure functions defined so far
        # (graphgen.functions.FunctionDef by name); ``function_names`` are all declared
        # ones, so a call to one not yet defined (or to itself) says why it cannot be.
        self.constants: dict[str, ir.Lit] = {}
        # graphgen.functions.ConstTable by name; None for a table with problems of its own
        self.const_tables: dict[str, Any] = {}
        self.functions: dict[str, Any] = {}
        self.function_names: frozenset[str] = frozenset()

    # ----------------------------------------------------------------- narrowing

    @staticmethod
    def facts(e: ir.Expr, when: bool = True) -> frozenset[ir.Expr]:
        """The optional expressions that are not None whenever ``e`` evaluates to
        ``when`` (``x is not None`` true, ``x is None`` false, through and/or/not)."""
        match e:
            case ir.IsNone(operand=o, negated=neg):
                return frozenset((o,)) if neg == when else frozenset()
            case ir.Not(operand=o):
                return Elaborator.facts(o, not when)
            case ir.BoolOp(op=op, values=vs) if (op == "and") == when:
                out: frozenset[ir.Expr] = frozenset()
                for v in vs:
                    out |= Elaborator.facts(v, when)
                return out
        return frozenset()

    def _narrowed(self, known: frozenset[ir.Expr]) -> _Narrowing:
        return _Narrowing(self, known)

    def _widened(self, e: ir.Expr) -> ir.Expr:
        """A narrowed read back at its optional type (testing it again is allowed)."""
        match e:
            case ir.Var(name=n):
                wide: ir.Expr = ir.Var(n, OptT(e.ty))
            case ir.FieldOf(entity=ent, key=k, field=f):
                wide = ir.FieldOf(ent, k, f, OptT(e.ty))
            case _:
                return e
        return wide if wide in self.known else e

    def _present(self, e: ir.Expr) -> ir.Expr:
        """``e`` retyped to its inner type if it is known not to be None here."""
        if isinstance(e.ty, OptT) and e in self.known:
            match e:
                case ir.Var(name=n):
                    return ir.Var(n, e.ty.inner)
                case ir.FieldOf(entity=ent, key=k, field=f):
                    return ir.FieldOf(ent, k, f, e.ty.inner)
        return e

    # ----------------------------------------------------------------- entry points

    def expr(
        self, src: str, scope: Mapping[str, Ty], known: frozenset[ir.Expr] = frozenset()
    ) -> ir.Expr:
        """Parse and type ``src`` as an expression over ``scope`` (name → type);
        ``known`` are optional expressions known not to be None (see :meth:`facts`)."""
        tree = self._parse(src, "eval")
        assert isinstance(tree, ast.Expression)
        try:
            with self._narrowed(known):
                return self._expression(tree.body, dict(scope), 0)
        except RecursionError:  # e.g. a very long a.b.c... chain; only ExprError escapes
            raise ExprError("expression nested too deeply", None) from None

    def condition(
        self, src: str, scope: Mapping[str, Ty], known: frozenset[ir.Expr] = frozenset()
    ) -> ir.Expr:
        """An expression that must be boolean (preconditions, goals)."""
        e = self.expr(src, scope, known)
        if e.ty != BOOL:
            raise ExprError(f"a condition must be bool, this is {e.ty.show()}", 1)
        return e

    def effect(
        self, src: str, scope: dict[str, Ty], known: frozenset[ir.Expr] = frozenset()
    ) -> ir.Effect:
        """Parse one effect statement. A ``create`` binding is added to ``scope``."""
        tree = self._parse(src, "exec")
        assert isinstance(tree, ast.Module)
        if len(tree.body) != 1:
            raise ExprError("an effect must be exactly one statement", 1)
        try:
            with self._narrowed(known):
                return self._stmt(tree.body[0], scope)
        except RecursionError:
            raise ExprError("expression nested too deeply", None) from None

    # ----------------------------------------------------------------- parsing

    def _parse(self, src: str, mode: str) -> ast.AST:
        if not isinstance(src, str):
            raise ExprError(f"expected expression text, got {type(src).__name__}", None)
        if len(src) > MAX_SOURCE_LEN:
            raise ExprError(f"expression longer than {MAX_SOURCE_LEN} characters", None)
        self._text = src.strip()  # decimal literals are read from the text: 12.50, not 12.5
        try:
            return ast.parse(src.strip(), mode=mode)
        except SyntaxError as exc:
            if not exc.offset:  # CPython reports offset 0 at end of input: point past the end
                last = _LINE_BREAK.split(self._text)
                exc.lineno, exc.offset = len(last), len(last[-1]) + 1
            self._syntax(exc)
        except (ValueError, RecursionError, MemoryError) as exc:
            raise ExprError(f"cannot parse: {exc.__class__.__name__}", None) from None

    @staticmethod
    def _syntax(exc: SyntaxError) -> NoReturn:
        raise ExprError(f"syntax error: {exc.msg}", exc.offset, exc.lineno or 1) from None

    def _at(self, node: ast.AST) -> tuple[int, int]:
        """The 1-based column and line (inside the expression) ``node`` starts at:
        errors point there."""
        line = int(getattr(node, "lineno", 1))
        return self._chars(line, int(getattr(node, "col_offset", 0))) + 1, line

    def _attr_at(self, node: ast.Attribute) -> tuple[int, int]:
        # The attribute name itself, from the node's end: robust to spaces and
        # parentheses, and needs no ast.unparse (which recurses without bound).
        end, line = node.end_col_offset, node.end_lineno
        if end is None or line is None:
            return self._at(node)
        col = self._chars(line, end) - len(node.attr) + 1
        return (col, line) if col >= 1 else self._at(node)

    def _chars(self, line: int, col_offset: int) -> int:
        # ast counts columns in UTF-8 bytes; the author counts characters
        lines = _LINE_BREAK.split(self._text)
        text = lines[line - 1] if 0 < line <= len(lines) else ""
        return len(text.encode("utf-8")[:col_offset].decode("utf-8", "replace"))

    # ----------------------------------------------------------------- expressions

    def _expression(self, n: ast.AST, scope: dict[str, Ty], depth: int) -> ir.Expr:
        if depth > MAX_DEPTH:
            raise ExprError("expression nested too deeply", *self._at(n))
        d = depth + 1
        match n:
            case ast.Constant(value=v):
                if isinstance(v, bool):
                    return ir.Lit(v, BOOL)
                if isinstance(v, int):
                    if abs(v) >= 10**MAX_INT_DIGITS:
                        raise ExprError(
                            f"integer literal with more than {MAX_INT_DIGITS} digits", *self._at(n)
                        )
                    return ir.Lit(v, INT)
                if isinstance(v, str):
                    return ir.Lit(v, STR)
                if v is None:
                    return ir.Lit(None, NONE)
                if isinstance(v, float):
                    return self._decimal_literal(n)
                raise ExprError(
                    f"unsupported literal {v!r} (only int, decimal, str, bool, None)", *self._at(n)
                )
            case ast.Name(id=name):
                return self._name(name, scope, n)
            case ast.Attribute():
                return self._attribute(n, scope, d)
            case ast.Subscript(value=ast.Name(id=ent), slice=sl) if ent in self.entities:
                key = self._key(ent, self._expression(sl, scope, d), sl)
                return ir.RowOf(ent, key, RowT(ent))
            case ast.Subscript(value=ast.Name(id=tname), slice=sl) if (
                tname in self.const_tables and tname not in scope and tname not in self.lets
            ):
                table = self.const_tables[tname]
                if table is None:
                    raise ExprError(
                        f"constant table {tname!r} is broken (see its problems)", *self._at(n)
                    )
                if isinstance(sl, ast.Slice):
                    raise ExprError(f"look up one row of {tname}: {tname}[key]", *self._at(sl))
                key = self._coerce(self._expression(sl, scope, d), table.key, sl)
                return table.lookup(key)  # type: ignore[no-any-return]
            case ast.Subscript(value=lst, slice=sl):
                xs = self._expression(lst, scope, d)
                if not isinstance(xs.ty, ListT):
                    raise ExprError(
                        f"only a table or a list can be indexed: Entity[id] or xs[0], "
                        f"got {xs.ty.show()}",
                        *self._at(n),
                    )
                if isinstance(sl, ast.Slice):
                    raise ExprError("slices are not allowed; pick one item: xs[0]", *self._at(sl))
                i = self._expression(sl, scope, d)
                if i.ty != INT:  # a position: a decimal is a number but no index
                    raise ExprError(
                        f"a list index is an int position, got {i.ty.show()}{_maybe_none(i)}",
                        *self._at(sl),
                    )
                return ir.Index(xs, i, xs.ty.elem)
            case ast.Compare():
                return self._compare(n, scope, d)
            case ast.BoolOp(op=op, values=vals):
                # Each operand is read knowing the earlier ones came out true (``and``) or
                # false (``or``): ``x is not None and x > 3``, ``x is None or x > 3``.
                is_and = isinstance(op, ast.And)
                parts_l: list[ir.Expr] = []
                extra: frozenset[ir.Expr] = frozenset()
                for operand in vals:
                    with self._narrowed(self.known | extra):
                        part = self._bool(operand, scope, d)
                    parts_l.append(part)
                    extra |= self.facts(part, is_and)
                return ir.BoolOp("and" if is_and else "or", tuple(parts_l), BOOL)
            case ast.UnaryOp(op=ast.Not(), operand=o):
                return ir.Not(self._bool(o, scope, d), BOOL)
            case ast.UnaryOp(op=ast.USub(), operand=o):
                x = self._int(o, scope, d)
                if isinstance(x, ir.Lit) and isinstance(x.value, int | Decimal):
                    return ir.Lit(-x.value, x.ty)
                return ir.Neg(x, x.ty)
            case ast.UnaryOp(op=ast.UAdd(), operand=o):
                return self._int(o, scope, d)
            case ast.BinOp(op=ast.Div()):
                raise ExprError(
                    "division is only allowed inside round: round(a / b, 2) "
                    "(or round(a / b, 2, 'half_up'))",
                    *self._at(n),
                )
            case ast.BinOp(op=op, left=a, right=b):
                sym = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*"}.get(type(op))
                if sym is None:
                    raise ExprError(
                        f"operator {type(op).__name__} is not allowed (only + - *)", *self._at(n)
                    )
                x, y = self._expression(a, scope, d), self._expression(b, scope, d)
                if sym == "+" and STR in (x.ty, y.ty) and DATE not in (x.ty, y.ty):
                    return self._concat(x, y, a, b)
                if DATE in (x.ty, y.ty):
                    return self._date_arith(sym, x, y, n)
                x, y = self._number(x, a), self._number(y, b)
                return ir.Arith(sym, x, y, arith_type(sym, x.ty, y.ty))  # type: ignore[arg-type]
            case ast.JoinedStr(values=parts):
                return self._fstring(parts, scope, d, n)
            case ast.Call():
                return self._call(n, scope, d)
            case ast.ListComp(elt=elt, generators=gens):
                return self._comp(elt, gens, scope, d, n)
            case ast.GeneratorExp():
                raise ExprError(
                    "a generator is only allowed inside any/all/count/sum/min/max", *self._at(n)
                )
            case ast.IfExp(test=t, body=b, orelse=o):
                c = self._bool(t, scope, d)
                with self._narrowed(self.known | self.facts(c, True)):
                    x = self._expression(b, scope, d)
                with self._narrowed(self.known | self.facts(c, False)):
                    y = self._expression(o, scope, d)
                x, y = self._unify(x, y, n)
                ty = x.ty
                if isinstance(x.ty, OptT | NoneT) or isinstance(y.ty, OptT | NoneT):
                    ty = _join_opt(x.ty, y.ty)
                    x, y = self._coerce(x, ty, b), self._coerce(y, ty, o)
                elif x.ty != y.ty and is_number(x.ty):  # int/decimal mixes: the wider scale
                    ty = DecT(max(scale_of(x.ty), scale_of(y.ty)))
                return ir.IfExp(c, x, y, ty)
            case ast.List(elts=elts):
                items = [self._expression(x, scope, d) for x in elts]
                if not items:
                    return ir.ListLit((), ListT(STR))
                first = items[0]
                items = [self._coerce(x, first.ty, elts[i]) for i, x in enumerate(items)]
                if not is_scalar(first.ty) or isinstance(first.ty, DecT):
                    raise ExprError("list literals hold scalars (not decimals) only", *self._at(n))
                return ir.ListLit(tuple(items), ListT(first.ty))
            case ast.Dict(keys=keys, values=vals):
                ks: list[str] = []
                for k in keys:
                    if k is None:  # {**other}
                        raise ExprError(
                            "a record lists its keys one by one; '**' is not allowed",
                            *self._at(n),
                        )
                    if not (isinstance(k, ast.Constant) and isinstance(k.value, str)):
                        got = ast.get_source_segment(self._text, k) or "this key"
                        raise ExprError(
                            f"a record's keys are quoted names, like {{'total': ...}}, not {got}",
                            *self._at(k),
                        )
                    if k.value in ks:
                        raise ExprError(
                            f"the key {k.value!r} is given twice in this record", *self._at(k)
                        )
                    ks.append(k.value)
                vs = tuple(self._expression(v, scope, d) for v in vals)
                return ir.DictLit(
                    tuple(ks), vs, RecordT(tuple((k, v.ty) for k, v in zip(ks, vs, strict=True)))
                )
            case ast.DictComp(key=k, value=v, generators=gens):
                return self._dict_comp(k, v, gens, scope, d, n)
            case ast.Lambda():
                raise ExprError("lambda is not allowed", *self._at(n))
            case ast.NamedExpr():
                raise ExprError("assignment expressions are not allowed", *self._at(n))
        raise ExprError(syntax_words(type(n).__name__), *self._at(n))

    def _name(self, name: str, scope: Mapping[str, Ty], n: ast.AST) -> ir.Expr:
        if name.startswith("__"):
            raise ExprError(f"forbidden name {name!r}", *self._at(n))
        t = scope.get(name)
        if t is None and name in self.lets:
            e = self.lets[name]
            return ir.Old(e, e.ty) if self.lets_as_old else e
        if t is None and name in self.constants:
            return self.constants[name]
        if t is None and name in self.const_tables:
            raise ExprError(
                f"constant table {name!r} is not a value; look a row up: {name}[key]", *self._at(n)
            )
        if t is None:
            if name in self.entities:
                raise ExprError(
                    f"table {name!r} is not a value; use {name}[id].field or id in {name}",
                    *self._at(n),
                )
            if name in AGGREGATES or name in ("len", "old", "round", "str", "today"):
                raise ExprError(f"{name!r} must be called", *self._at(n))
            near = did_you_mean(name, [*scope, *self.entities])
            raise ExprError(f"unknown name {name!r}{near}", *self._at(n))
        if isinstance(t, RowT):  # a comprehension variable stands for the row
            return ir.RowOf(t.entity, ir.Var(name, RefT(t.entity)), t)
        return self._present(ir.Var(name, t))

    def _attribute(self, n: ast.Attribute, scope: dict[str, Ty], d: int) -> ir.Expr:
        if n.attr.startswith("_"):
            raise ExprError(f"forbidden attribute {n.attr!r}", *self._attr_at(n))
        base = self._expression(n.value, scope, d)
        if not isinstance(base, ir.RowOf):
            raise ExprError(
                f"attribute .{n.attr} needs a row (Entity[id] or a comprehension variable), "
                f"got {base.ty.show()}",
                *self._at(n),
            )
        ent = self.entities[base.entity]
        if n.attr == ent.key:
            return base.key
        f = ent.fields.get(n.attr)
        if f is None:
            known = ", ".join([ent.key, *ent.fields])
            raise ExprError(
                f"{base.entity} has no field {n.attr!r}"
                f"{did_you_mean(n.attr, [ent.key, *ent.fields])} (fields: {known})",
                *self._attr_at(n),
            )
        return self._present(ir.FieldOf(base.entity, base.key, n.attr, f.ty))

    def _key(self, ent: str, key: ir.Expr, n: ast.AST) -> ir.Expr:
        want = RefT(ent)
        if key.ty == want:
            return key
        if isinstance(key, ir.Lit) and key.ty in (STR, INT):
            return self._coerce(key, want, n)
        raise ExprError(
            f"{ent}[...] needs a {ent} id, got {key.ty.show()}{_maybe_none(key)}", *self._at(n)
        )

    def _literal_id(self, v: int | str, want: RefT, n: ast.AST) -> ir.Expr:
        """A literal id of ``want.entity``: an int for ``type: int`` keys, else a str."""
        edef = self.entities.get(want.entity)
        int_key = edef is not None and edef.int_key
        if int_key != isinstance(v, int):
            kind = "integers" if int_key else "strings"
            raise ExprError(f"{want.entity} ids are {kind}, got {v!r}", *self._at(n))
        return ir.Lit(v, want)

    def _bool(self, n: ast.AST, scope: dict[str, Ty], d: int) -> ir.Expr:
        e = self._expression(n, scope, d)
        if e.ty != BOOL:
            raise ExprError(f"expected bool, got {e.ty.show()}{_maybe_none(e)}", *self._at(n))
        return e

    def _int(self, n: ast.AST, scope: dict[str, Ty], d: int) -> ir.Expr:
        """A number operand: int or decimal."""
        return self._number(self._expression(n, scope, d), n)

    def _number(self, e: ir.Expr, n: ast.AST) -> ir.Expr:
        if not is_number(e.ty):
            raise ExprError(
                f"arithmetic needs int or decimal, got {e.ty.show()}{_maybe_none(e)}", *self._at(n)
            )
        return e

    def _date_arith(self, sym: str, x: ir.Expr, y: ir.Expr, n: ast.AST) -> ir.Expr:
        """``d + n`` and ``d - n`` (days; a date), ``d1 - d2`` (the days between; an int)."""
        if sym == "-" and x.ty == DATE and y.ty in (DATE, STR):
            return ir.Arith("-", x, self._coerce(y, DATE, n), INT)
        if sym == "-" and y.ty == DATE and x.ty == STR:
            return ir.Arith("-", self._coerce(x, DATE, n), y, INT)
        if sym in ("+", "-") and x.ty == DATE and y.ty == INT:
            return ir.Arith(sym, x, y, DATE)  # type: ignore[arg-type]
        if sym == "+" and x.ty == INT and y.ty == DATE:
            return ir.Arith("+", x, y, DATE)
        raise ExprError(
            "date arithmetic is date + days, date - days or date - date, "
            f"not {x.ty.show()} {sym} {y.ty.show()}",
            *self._at(n),
        )

    def _string(self, e: ir.Expr, n: ast.AST, what: str) -> ir.Expr:
        if e.ty != STR:
            # an optional value is turned into text by testing it, not by str(None)
            hint = _maybe_none(e) or " (write str(x) or an f-string)"
            raise ExprError(f"{what} needs a str, got {e.ty.show()}{hint}", *self._at(n))
        return e

    def _concat(self, x: ir.Expr, y: ir.Expr, a: ast.AST, b: ast.AST) -> ir.Expr:
        """``a + b`` on strings; a chain stays one node."""
        self._string(x, a, "+ on a string")
        self._string(y, b, "+ on a string")
        left = x.args if isinstance(x, ir.StrOp) and x.op == "concat" else (x,)
        return ir.StrOp("concat", (*left, y), STR)

    def _fstring(self, parts: list[ast.expr], scope: dict[str, Ty], d: int, n: ast.AST) -> ir.Expr:
        """``f"Ticket {ticket_id} closed"``: literal parts and interpolated scalars."""
        args: list[ir.Expr] = []
        for p in parts:
            if isinstance(p, ast.Constant) and isinstance(p.value, str):
                args.append(ir.Lit(p.value, STR))
                continue
            if not isinstance(p, ast.FormattedValue):
                raise ExprError("unsupported f-string part", *self._at(p))
            if p.conversion != -1 or p.format_spec is not None:
                raise ExprError(
                    "f-string fields take no conversion or format spec ({x}, not {x!r} or "
                    "{x:>5}); a decimal is written at its scale",
                    *self._at(p.value),
                )
            x = self._expression(p.value, scope, d)
            if not is_scalar(x.ty):
                raise ExprError(f"an f-string shows scalars, not {x.ty.show()}", *self._at(p.value))
            args.append(x)
        return ir.StrOp("fstring", tuple(args), STR)

    def _method(self, n: ast.Call, fn: ast.Attribute, scope: dict[str, Ty], d: int) -> ir.Expr:
        """``s.lower()``, ``s.upper()``, ``s.startswith(t)``, ``s.endswith(t)``."""
        s = self._string(self._expression(fn.value, scope, d), fn.value, f".{fn.attr}()")
        want = 0 if fn.attr in ("lower", "upper") else 1
        if n.keywords or len(n.args) != want:
            raise ExprError(f".{fn.attr}() takes {want} argument(s)", *self._attr_at(fn))
        if want == 0:
            return ir.StrOp(fn.attr, (s,), STR)  # type: ignore[arg-type]
        t = self._coerce(self._expression(n.args[0], scope, d), STR, n.args[0])
        return ir.StrOp(fn.attr, (s, t), BOOL)  # type: ignore[arg-type]

    def _decimal_literal(self, n: ast.AST) -> ir.Expr:
        text = ast.get_source_segment(self._text, n) or ""
        if not re.fullmatch(r"\d+\.\d+", text):
            raise ExprError(
                f"write a decimal with digits on both sides of the point, like 12.50 "
                f"(got {text or 'a float'})",
                *self._at(n),
            )
        digits = len(text.split(".")[1])
        if digits > MAX_SCALE:
            raise ExprError(f"a decimal has at most {MAX_SCALE} places", *self._at(n))
        return ir.Lit(Decimal(text), DecT(digits))

    def _round(self, n: ast.Call, scope: dict[str, Ty], d: int) -> ir.Expr:
        """``round(x, places)`` / ``round(a / b, places)``, optionally ``'half_up'``."""
        usage = "round(x, places) or round(a / b, places), optionally with 'half_up'"
        if n.keywords or len(n.args) not in (2, 3):
            raise ExprError(f"round takes 2 or 3 arguments: {usage}", *self._at(n))
        x_ast, p_ast = n.args[0], n.args[1]
        if not (
            isinstance(p_ast, ast.Constant)
            and type(p_ast.value) is int
            and 0 <= p_ast.value <= MAX_SCALE
        ):
            raise ExprError(
                f"round's places are a whole number from 0 to {MAX_SCALE}", *self._at(p_ast)
            )
        mode = "half_even"
        if len(n.args) == 3:
            m = n.args[2]
            if not (isinstance(m, ast.Constant) and m.value in ("half_even", "half_up")):
                got = ast.get_source_segment(self._text, m) or "this"
                raise ExprError(
                    f"round's mode is 'half_up' or 'half_even' (the default), not {got}",
                    *self._at(m),
                )
            mode = str(m.value)
        den: ir.Expr | None = None
        if isinstance(x_ast, ast.BinOp) and isinstance(x_ast.op, ast.Div):
            num = self._int(x_ast.left, scope, d)
            den = self._int(x_ast.right, scope, d)
        else:
            num = self._int(x_ast, scope, d)
        return ir.Round(num, den, p_ast.value, mode, DecT(p_ast.value))  # type: ignore[arg-type]

    def _compare(self, n: ast.Compare, scope: dict[str, Ty], d: int) -> ir.Expr:
        parts: list[ir.Expr] = []
        left_ast: ast.AST = n.left
        left = self._expression(n.left, scope, d)
        for op, right_ast in zip(n.ops, n.comparators, strict=True):
            if isinstance(op, ast.In | ast.NotIn):
                neg = isinstance(op, ast.NotIn)
                if isinstance(right_ast, ast.Name) and right_ast.id in self.entities:
                    ent = right_ast.id
                    ex: ir.Expr = ir.Exists(ent, self._key(ent, left, left_ast), BOOL)
                    parts.append(ir.Not(ex, BOOL) if neg else ex)
                    right = ex
                else:
                    right = self._expression(right_ast, scope, d)
                    if right.ty == STR:  # a substring test
                        needle = self._string(left, left_ast, "'in' on a string")
                        sub: ir.Expr = ir.StrOp("contains", (right, needle), BOOL)
                        parts.append(ir.Not(sub, BOOL) if neg else sub)
                        left, left_ast = right, right_ast
                        continue
                    if not isinstance(right.ty, ListT):
                        raise ExprError(
                            f"'in' needs a list or a table on the right, got {right.ty.show()}",
                            *self._at(right_ast),
                        )
                    right = self._coerce_list(right, left, right_ast)
                    item = self._coerce(left, right.ty.elem, left_ast)  # type: ignore[attr-defined]
                    parts.append(ir.Contains(item, right, neg, BOOL))
            elif isinstance(op, ast.Is | ast.IsNot):
                right = self._expression(right_ast, scope, d)
                parts.append(self._is_none(left, right, isinstance(op, ast.IsNot), n))
            else:
                sym = _CMP.get(type(op))
                if sym is None:
                    raise ExprError(f"operator {type(op).__name__} is not allowed", *self._at(n))
                right = self._expression(right_ast, scope, d)
                if isinstance(left.ty, NoneT) or isinstance(right.ty, NoneT):
                    word = "is None" if sym == "==" else "is not None"
                    raise ExprError(
                        f"compare with None using 'x {word}', not '{sym} None'", *self._at(n)
                    )
                a, b = self._unify(left, right, n)
                if not (is_scalar(a.ty) or isinstance(a.ty, ListT)):
                    raise ExprError(f"cannot compare {a.ty.show()}", *self._at(n))
                if sym not in ("==", "!=") and not is_ordered(a.ty):
                    raise ExprError(
                        f"{sym} needs int, date or str, got "
                        f"{(a if isinstance(a.ty, OptT) else b).ty.show()}"
                        f"{_maybe_none(a) or _maybe_none(b)}",
                        *self._at(n),
                    )
                parts.append(ir.Compare(sym, a, b, BOOL))  # type: ignore[arg-type]
            left, left_ast = right, right_ast
        return parts[0] if len(parts) == 1 else ir.BoolOp("and", tuple(parts), BOOL)

    def _is_none(self, left: ir.Expr, right: ir.Expr, negated: bool, n: ast.AST) -> ir.Expr:
        """``left is None`` / ``left is not None``: the only use of ``is``."""
        word = "is not" if negated else "is"
        if isinstance(left.ty, NoneT) and not isinstance(right.ty, NoneT):
            left, right = right, left
        if not isinstance(right.ty, NoneT):
            raise ExprError(
                f"'{word}' only tests for None: write 'x {word} None' (use == to compare values)",
                *self._at(n),
            )
        if isinstance(left.ty, NoneT):
            raise ExprError(f"'None {word} None' is always the same; test a value", *self._at(n))
        if not isinstance(left.ty, OptT):
            left = self._widened(left)
        if not isinstance(left.ty, OptT):
            raise ExprError(
                f"this value is never None (its type is {left.ty.show()}); "
                f"only a 'T | None' value can be tested with '{word} None'",
                *self._at(n),
            )
        return ir.IsNone(left, negated, BOOL)

    def _coerce_list(self, lst: ir.Expr, item: ir.Expr, n: ast.AST) -> ir.Expr:
        # ['pending', 'processed'] next to an enum value takes the enum's type.
        if (
            isinstance(lst, ir.ListLit)
            and isinstance(lst.ty, ListT)
            and lst.ty.elem == STR
            and item.ty != STR
            and is_scalar(item.ty)
        ):
            items = tuple(self._coerce(x, item.ty, n) for x in lst.items)
            return ir.ListLit(items, ListT(item.ty))
        return lst

    def _coerce(self, e: ir.Expr, want: Ty, n: ast.AST) -> ir.Expr:
        """Give a string literal the type ``want`` (enum member, date, id) or fail.

        A value of ``T`` fits ``T | None`` as it is, and ``None`` fits any ``T | None``.
        """
        if e.ty == want:
            return e
        if isinstance(want, OptT):
            if isinstance(e, ir.Lit) and e.value is None:  # None, typed by a branch or not
                return ir.Lit(None, want)
            if isinstance(e, ir.IfExp):
                a, b = self._coerce(e.then, want, n), self._coerce(e.orelse, want, n)
                return ir.IfExp(e.cond, a, b, want)
            if e.ty == want.inner:
                return e
            if (
                isinstance(e.ty, OptT)
                and isinstance(want.inner, DecT)
                and is_number(e.ty.inner)
                and scale_of(e.ty) <= want.inner.scale
            ):
                return e  # an optional int or decimal widens to the decimal, as a present one
            try:
                return self._coerce(e, want.inner, n)
            except ExprError:
                raise ExprError(
                    f"expected {want.show()}, got {e.ty.show()}", *self._at(n)
                ) from None
        if isinstance(e, ir.Lit) and isinstance(e.ty, NoneT):
            raise ExprError(
                f"None is not a {want.show()}; declare the type as '{want.show()} | None'",
                *self._at(n),
            )
        if isinstance(want, DecT) and is_number(e.ty):
            have = scale_of(e.ty)
            if have > want.scale:
                raise ExprError(
                    f"this value has {have} decimal places but {want.show()} keeps "
                    f"{want.scale}: round it, e.g. round(..., {want.scale})",
                    *self._at(n),
                )
            return e  # stored at the wanted scale: exact, it has no more places
        match e:
            case ir.Lit(value=str() as v) if e.ty == STR:
                if isinstance(want, EnumT):
                    if v not in want.values:
                        raise ExprError(f"{v!r} is not a member of {want.show()}", *self._at(n))
                    return ir.Lit(v, want)
                if want == DATE:
                    if not is_iso_date(v):
                        raise ExprError(f"{v!r} is not an ISO date (YYYY-MM-DD)", *self._at(n))
                    return ir.Lit(v, DATE)
                if isinstance(want, RefT):
                    return self._literal_id(v, want, n)
            case ir.Lit(value=int() as v) if e.ty == INT and isinstance(want, RefT):
                return self._literal_id(v, want, n)
            case ir.ListLit(items=items) if isinstance(want, ListT):
                if not items:
                    return ir.ListLit((), want)
                return ir.ListLit(tuple(self._coerce(x, want.elem, n) for x in items), want)
            case (
                ir.Lit()
                | ir.ListLit()
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
                pass  # only literals take their type from context
            case _:
                assert_never(e)
        raise ExprError(f"expected {want.show()}, got {e.ty.show()}", *self._at(n))

    def _unify(self, a: ir.Expr, b: ir.Expr, n: ast.AST) -> tuple[ir.Expr, ir.Expr]:
        if a.ty == b.ty or (is_number(strip_opt(a.ty)) and is_number(strip_opt(b.ty))):
            # ints and decimals of any scales compare as numbers (and equal None only
            # where both are None)
            return a, b
        if isinstance(a.ty, OptT | NoneT) or isinstance(b.ty, OptT | NoneT):
            # ``x == y`` with x: int | None and y: int compares as Python does; both sides
            # keep their own type (a present value is the plain value).
            joined = _join_opt(a.ty, b.ty)
            if not isinstance(joined, OptT):
                raise ExprError(f"cannot compare {a.ty.show()} with {b.ty.show()}", *self._at(n))
            inner = joined.inner
            a2 = a if isinstance(a.ty, OptT | NoneT) else self._coerce(a, inner, n)
            b2 = b if isinstance(b.ty, OptT | NoneT) else self._coerce(b, inner, n)
            return self._coerce(a2, joined, n) if isinstance(a2.ty, NoneT) else a2, (
                self._coerce(b2, joined, n) if isinstance(b2.ty, NoneT) else b2
            )
        try:
            return a, self._coerce(b, a.ty, n)
        except ExprError:
            pass
        try:
            return self._coerce(a, b.ty, n), b
        except ExprError:
            pass
        for lit, other in ((b, a), (a, b)):
            # A str literal next to an enum or a date: say why it does not fit (not a
            # member, not ISO), which "cannot compare enum with str" hides.
            if (
                isinstance(lit, ir.Lit)
                and lit.ty == STR
                and (isinstance(other.ty, EnumT) or other.ty == DATE)
            ):
                self._coerce(lit, other.ty, n)
            if isinstance(lit, ir.Lit) and lit.ty in (STR, INT) and isinstance(other.ty, RefT):
                self._coerce(lit, other.ty, n)  # says which type the entity's ids are
        raise ExprError(f"cannot compare {a.ty.show()} with {b.ty.show()}", *self._at(n))

    def _call(self, n: ast.Call, scope: dict[str, Ty], d: int) -> ir.Expr:
        fn = n.func
        if isinstance(fn, ast.Attribute) and fn.attr in STR_METHODS:
            return self._method(n, fn, scope, d)
        if not isinstance(fn, ast.Name):
            shown = ast.unparse(fn)
            raise ExprError(f"calls are not allowed: {shown}(...)", *self._at(n))
        name = fn.id
        if name in self.functions:
            return self._inline(name, n, scope, d)
        if name in self.function_names:
            raise ExprError(
                f"function {name}() is not defined yet here: a function may call only the "
                "functions declared before it (no recursion)",
                *self._at(n),
            )
        if name == "round":
            return self._round(n, scope, d)
        if name == "str":
            if n.keywords or len(n.args) != 1:
                raise ExprError("str() takes exactly one argument", *self._at(n))
            x = self._expression(n.args[0], scope, d)
            if not is_scalar(x.ty):
                raise ExprError(f"str() takes a scalar, not {x.ty.show()}", *self._at(n.args[0]))
            return ir.StrOp("str", (x,), STR)
        if name == "today":
            if n.keywords or n.args:
                raise ExprError("today() takes no arguments: today()", *self._at(n))
            return ir.Today(DATE)
        if name == "old":
            if n.keywords or len(n.args) != 1:
                raise ExprError("old() takes exactly one argument: old(expr)", *self._at(n))
            x = self._expression(n.args[0], scope, d)
            return ir.Old(x, x.ty)
        if name not in AGGREGATES and name != "len":
            raise ExprError(f"calls are not allowed: {name}(...)", *self._at(n))
        if n.keywords or len(n.args) != 1:
            raise ExprError(f"{name}() takes exactly one argument", *self._at(n))
        arg = n.args[0]
        if name == "len":
            x = self._expression(arg, scope, d)
            if x.ty == STR:
                return ir.StrOp("len", (x,), INT)
            if not isinstance(x.ty, ListT):
                raise ExprError(f"len() needs a list, got {x.ty.show()}", *self._at(arg))
            return ir.Len(x, INT)
        if not isinstance(arg, ast.GeneratorExp | ast.ListComp):
            raise ExprError(
                f"{name}() takes a comprehension over a table: {name}(x for x in Entity if ...)",
                *self._at(arg),
            )
        comp = self._comp(arg.elt, arg.generators, scope, d, arg)
        pt = comp.proj.ty
        if name in ("any", "all"):
            if pt != BOOL:
                raise ExprError(f"{name}() needs bool items, got {pt.show()}", *self._at(arg))
            return ir.Agg(name, comp, BOOL)  # type: ignore[arg-type]
        if name == "count":
            return ir.Agg("count", comp, INT)
        if name == "sum":
            if not is_number(pt):
                raise ExprError(
                    f"sum() needs int or decimal items, got {pt.show()}", *self._at(arg)
                )
            return ir.Agg("sum", comp, pt)
        if pt not in (INT, DATE) and not isinstance(pt, DecT):
            raise ExprError(f"{name}() needs int or date items, got {pt.show()}", *self._at(arg))
        return ir.Agg(name, comp, pt)  # type: ignore[arg-type]

    def _inline(self, name: str, n: ast.Call, scope: dict[str, Ty], d: int) -> ir.Expr:
        """A call of a domain function: its body with the arguments put in."""
        from graphgen.functions import substitute  # the functions module imports this one

        f = self.functions[name]
        if n.keywords:
            raise ExprError(f"{name}() takes positional arguments only", *self._at(n))
        if len(n.args) != len(f.params):
            want = ", ".join(p for p, _ in f.params)
            raise ExprError(
                f"{name}() takes {len(f.params)} argument(s) ({want}), got {len(n.args)}",
                *self._at(n),
            )
        values = {}
        for (pname, pty), a in zip(f.params, n.args, strict=True):
            x = self._expression(a, scope, d)
            try:
                values[pname] = self._coerce(x, pty, a)
            except ExprError as exc:
                raise ExprError(
                    f"{name}() parameter {pname}: {exc.message}", exc.col, exc.line
                ) from None
        body: ir.Expr = substitute(f.body, values)
        return body

    def _comp(
        self,
        elt: ast.AST,
        gens: list[ast.comprehension],
        scope: dict[str, Ty],
        d: int,
        n: ast.AST,
    ) -> ir.Comp:
        if len(gens) != 1:
            raise ExprError("a comprehension has exactly one 'for'", *self._at(n))
        g = gens[0]
        if g.is_async:
            raise ExprError("async comprehensions are not allowed", *self._at(n))
        if not isinstance(g.target, ast.Name):
            raise ExprError("the loop variable must be a plain name", *self._at(g.target))
        if not (isinstance(g.iter, ast.Name) and g.iter.id in self.entities):
            raise ExprError(
                "a comprehension iterates over a table: for x in Entity", *self._at(g.iter)
            )
        var, ent = g.target.id, g.iter.id
        if var in scope or var in self.entities or var in self.lets:
            raise ExprError(f"loop variable {var!r} shadows another name", *self._at(g.target))
        inner = {**scope, var: RowT(ent)}
        conds = [self._bool(c, inner, d) for c in g.ifs]
        cond: ir.Expr | None
        if not conds:
            cond = None
        elif len(conds) == 1:
            cond = conds[0]
        else:
            cond = ir.BoolOp("and", tuple(conds), BOOL)
        proj = self._expression(elt, inner, d)
        return ir.Comp(var, ent, cond, proj, ListT(proj.ty))

    def _dict_comp(
        self,
        key: ast.AST,
        value: ast.AST,
        gens: list[ast.comprehension],
        scope: dict[str, Ty],
        d: int,
        n: ast.AST,
    ) -> ir.DictComp:
        """``{v.<key>: value for v in Entity if cond}``: a result keyed by the rows' ids."""
        comp = self._comp(value, gens, scope, d, n)
        inner = {**scope, comp.var: RowT(comp.entity)}
        k = self._expression(key, inner, d)
        if k != ir.Var(comp.var, RefT(comp.entity)):
            keyname = self.entities[comp.entity].key
            raise ExprError(
                f"a dict comprehension is keyed by the row's id: "
                f"{{{comp.var}.{keyname}: ... for {comp.var} in {comp.entity}}}",
                *self._at(key),
            )
        return ir.DictComp(comp, MapT(RefT(comp.entity), comp.proj.ty))

    # ----------------------------------------------------------------- effects

    def _target(self, n: ast.AST, scope: dict[str, Ty]) -> tuple[str, ir.Expr, str, Ty]:
        """``Entity[key].field`` as an assignable place."""
        if not (
            isinstance(n, ast.Attribute)
            and isinstance(n.value, ast.Subscript)
            and isinstance(n.value.value, ast.Name)
            and n.value.value.id in self.entities
        ):
            raise ExprError(effect_target_problem(n), *self._at(n))
        ent = n.value.value.id
        key = self._key(ent, self._expression(n.value.slice, scope, 0), n.value.slice)
        edef = self.entities[ent]
        if n.attr == edef.key:
            raise ExprError(f"cannot write the key {ent}.{n.attr}", *self._at(n))
        if n.attr.startswith("_"):
            raise ExprError(f"forbidden attribute {n.attr!r}", *self._at(n))
        f = edef.fields.get(n.attr)
        if f is None:
            raise ExprError(
                f"{ent} has no field {n.attr!r}{did_you_mean(n.attr, edef.fields)}",
                int(getattr(n.value, "end_col_offset", 0)) + 2,
            )
        return ent, key, n.attr, f.ty

    def _stmt(self, s: ast.stmt, scope: dict[str, Ty]) -> ir.Effect:
        match s:
            case ast.Assign(targets=[ast.Name(id=bind)], value=ast.Call() as call):
                if bind in scope or bind in self.entities or bind in self.lets:
                    raise ExprError(f"name {bind!r} is already taken", *self._at(s))
                eff = self._create(call, scope, bind)
                scope[bind] = RefT(eff.entity)
                return eff
            case ast.Assign(targets=[tgt], value=v):
                ent, key, fld, ty = self._target(tgt, scope)
                val = self._coerce(self._expression(v, scope, 0), ty, v)
                return ir.Assign(ent, key, fld, "=", val)
            case ast.Assign():
                raise ExprError("assign to exactly one field", *self._at(s))
            case ast.AugAssign(target=tgt, op=op, value=v):
                sym = {ast.Add: "+=", ast.Sub: "-="}.get(type(op))
                if sym is None:
                    raise ExprError("only += and -= are allowed", *self._at(s))
                ent, key, fld, ty = self._target(tgt, scope)
                if not is_number(ty):
                    raise ExprError(
                        f"{sym} needs an int or decimal field, {ent}.{fld} is {ty.show()}",
                        *self._at(s),
                    )
                val = self._coerce(self._expression(v, scope, 0), ty, v)
                return ir.Assign(ent, key, fld, sym, val)  # type: ignore[arg-type]
            case ast.Delete(targets=[ast.Subscript(value=ast.Name(id=ent), slice=sl)]) if (
                ent in self.entities
            ):
                return ir.Delete(ent, self._key(ent, self._expression(sl, scope, 0), sl))
            case ast.Delete():
                raise ExprError("delete one row: del Entity[id]", *self._at(s))
            case ast.Expr(value=ast.Call(func=ast.Attribute(attr="create")) as call):
                return self._create(call, scope, None)
            case ast.Expr(
                value=ast.Call(func=ast.Attribute(value=place, attr=meth), args=args, keywords=kw)
            ) if meth in ("append", "remove"):
                ent, key, fld, ty = self._target(place, scope)
                if not isinstance(ty, ListT):
                    raise ExprError(
                        f".{meth}() needs a list field, {ent}.{fld} is {ty.show()}", *self._at(s)
                    )
                if kw or len(args) != 1:
                    raise ExprError(f".{meth}() takes one argument", *self._at(s))
                val = self._coerce(self._expression(args[0], scope, 0), ty.elem, args[0])
                return ir.ListEdit(ent, key, fld, meth, val)  # type: ignore[arg-type]
            case ast.Import() | ast.ImportFrom():
                raise ExprError("imports are not allowed", *self._at(s))
        raise ExprError(f"unsupported effect: {type(s).__name__}", *self._at(s))

    def _create(self, call: ast.Call, scope: dict[str, Ty], bind: str | None) -> ir.Create:
        fn = call.func
        if not (
            isinstance(fn, ast.Attribute)
            and fn.attr == "create"
            and isinstance(fn.value, ast.Name)
            and fn.value.id in self.entities
        ):
            raise ExprError(
                "calls are not allowed here; create rows with Entity.create(...)", *self._at(call)
            )
        ent = fn.value.id
        edef = self.entities[ent]
        if call.args:
            raise ExprError("Entity.create takes keyword arguments only", *self._at(call))
        vals: list[tuple[str, ir.Expr]] = []
        seen: set[str] = set()
        key: ir.Expr | None = None
        for kw in call.keywords:
            if kw.arg is None:
                raise ExprError("**kwargs is not allowed", *self._at(kw))
            if kw.arg == edef.key:
                key = self._expression(kw.value, scope, 0)
                # A new id is a plain value of the key's runtime type (a str or int
                # parameter), not a reference: no row has it yet.
                if key.ty != (INT if edef.int_key else STR):
                    key = self._coerce(key, RefT(ent), kw.value)
                continue
            f = edef.fields.get(kw.arg)
            if f is None:
                near = did_you_mean(kw.arg or "", self.entities[ent].fields)
                raise ExprError(f"{ent} has no field {kw.arg!r}{near}", *self._at(kw))
            seen.add(kw.arg)
            value = self._expression(kw.value, scope, 0)
            vals.append((kw.arg, self._coerce(value, f.ty, kw.value)))
        for fname, f in edef.fields.items():
            if fname not in seen:
                if isinstance(f.ty, ListT):
                    vals.append((fname, ir.ListLit((), f.ty)))
                else:
                    raise ExprError(
                        f"{ent}.create(...) is missing field {fname!r}", *self._at(call)
                    )
        if key is None and edef.data_key:
            raise ExprError(
                f"{ent} ids are given by the data (key type str, no prefix), so "
                f"{ent}.create(...) must name its key: {ent}.create({edef.key}=..., ...)",
                *self._at(call),
            )
        order = list(edef.fields)
        vals.sort(key=lambda kv: order.index(kv[0]))
        return ir.Create(ent, bind, tuple(vals), key)


class _Narrowing:
    """``with el._narrowed(known):`` elaborates with ``known`` as the not-None facts."""

    def __init__(self, el: Elaborator, known: frozenset[ir.Expr]) -> None:
        self.el, self.known, self.saved = el, known, el.known

    def __enter__(self) -> None:
        self.el.known = self.known

    def __exit__(self, *exc: object) -> None:
        self.el.known = self.saved


def _join_opt(a: Ty, b: Ty) -> Ty:
    """The type of ``x if c else y`` when one side may be None: ``T | None`` for the
    other side's ``T`` (a ``NoneT`` when both are ``None``)."""
    inner = [strip_opt(t) for t in (a, b) if not isinstance(t, NoneT)]
    if not inner:
        return NONE
    t = inner[0]
    if any(x != t for x in inner):
        # str literals next to enums or dates: the literal side takes the other's type
        t = next((x for x in inner if x != STR), t)
    return optional(t) if is_optable(t) else t


def _maybe_none(e: ir.Expr) -> str:
    """A hint for an optional value used where a present one is needed."""
    if isinstance(e.ty, OptT):
        return " (it may be None: test 'is not None' first, e.g. 'x is not None and ...')"
    if isinstance(e.ty, NoneT):
        return " (None)"
    return ""


def prim_of(name: str) -> PrimT | None:
    """The primitive type called ``name``, if any."""
    return {"int": INT, "str": STR, "bool": BOOL, "date": DATE}.get(name)
