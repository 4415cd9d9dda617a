"""Parse expression text into the typed IR.

Expressions use a small, safe subset of Python syntax. We parse with :mod:`ast` (never
``eval``) and *elaborate* the Python tree into :mod:`graphgen.ir` in one pass that
resolves names and checks types against the schema. Anything outside the subset is
rejected with an :class:`~graphgen.errors.ExprError` carrying the column.

The subset: int/str/bool literals, parameters, ``Entity[id].field``, ``Entity[id]``,
``id in Entity``, comparisons (chains allowed), ``and``/``or``/``not``, ``+ - *`` on
ints, ``in``/``not in`` on lists, ``len``, list literals, ``a if c else b``, dict
literals with string keys, list comprehensions over an entity table with filters, and
``any/all/count/sum/min/max`` over such a comprehension.

Effects are single statements: ``E[k].f = v``, ``E[k].f += v``, ``E[k].f -= v``,
``x = E.create(f=v, ...)``, ``del E[k]``, ``E[k].f.append(v)``, ``E[k].f.remove(v)``.
"""

from __future__ import annotations

import ast
import datetime as _dt
from collections.abc import Mapping
from typing import NoReturn, assert_never

from graphgen import ir
from graphgen.domain import EntityDef
from graphgen.errors import ExprError
from graphgen.limits import MAX_INT_DIGITS
from graphgen.types import (
    BOOL,
    DATE,
    INT,
    STR,
    EnumT,
    ListT,
    PrimT,
    RecordT,
    RefT,
    RowT,
    Ty,
    is_ordered,
    is_scalar,
)

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


def _column(node: ast.AST) -> int:
    """The 1-based column ``node`` starts at (errors point there)."""
    return int(getattr(node, "col_offset", 0)) + 1


def _attr_column(node: ast.Attribute) -> int:
    # Column of the attribute name itself, from the node's end: robust to spaces and
    # parentheses, and needs no ast.unparse (which recurses without bound).
    end = node.end_col_offset
    return end - len(node.attr) + 1 if end is not None and end > len(node.attr) else _column(node)


def is_iso_date(s: str) -> bool:
    """True for a ``YYYY-MM-DD`` calendar date."""
    if len(s) != 10:
        return False
    try:
        _dt.date.fromisoformat(s)
    except ValueError:
        return False
    return True


class Elaborator:
    """Turns Python ``ast`` nodes into typed IR for one domain schema."""

    def __init__(self, entities: Mapping[str, EntityDef]) -> None:
        self.entities = entities

    # ----------------------------------------------------------------- entry points

    def expr(self, src: str, scope: Mapping[str, Ty]) -> ir.Expr:
        """Parse and type ``src`` as an expression over ``scope`` (name → type)."""
        tree = self._parse(src, "eval")
        assert isinstance(tree, ast.Expression)
        try:
            return self._expression(tree.body, dict(scope), 0)
        except RecursionError:  # e.g. a very long a.b.c... chain; only ExprError escapes
            raise ExprError("expression nested too deeply", None) from None

    def condition(self, src: str, scope: Mapping[str, Ty]) -> ir.Expr:
        """An expression that must be boolean (preconditions, goals)."""
        e = self.expr(src, scope)
        if e.ty != BOOL:
            raise ExprError(f"a condition must be bool, this is {e.ty.show()}", 1)
        return e

    def effect(self, src: str, scope: dict[str, Ty]) -> ir.Effect:
        """Parse one effect statement. A ``create`` binding is added to ``scope``."""
        tree = self._parse(src, "exec")
        assert isinstance(tree, ast.Module)
        if len(tree.body) != 1:
            raise ExprError("an effect must be exactly one statement", 1)
        try:
            return self._stmt(tree.body[0], scope)
        except RecursionError:
            raise ExprError("expression nested too deeply", None) from None

    # ----------------------------------------------------------------- parsing

    def _parse(self, src: str, mode: str) -> ast.AST:
        if not isinstance(src, str):
            raise ExprError(f"expected expression text, got {type(src).__name__}", None)
        if len(src) > MAX_SOURCE_LEN:
            raise ExprError(f"expression longer than {MAX_SOURCE_LEN} characters", None)
        try:
            return ast.parse(src.strip(), mode=mode)
        except SyntaxError as exc:
            if not exc.offset:  # CPython reports offset 0 at end of input: point past the end
                exc.offset = len(src.strip()) + 1
            self._syntax(exc)
        except (ValueError, RecursionError, MemoryError) as exc:
            raise ExprError(f"cannot parse: {exc.__class__.__name__}", None) from None

    @staticmethod
    def _syntax(exc: SyntaxError) -> NoReturn:
        raise ExprError(f"syntax error: {exc.msg}", exc.offset) from None

    # ----------------------------------------------------------------- expressions

    def _expression(self, n: ast.AST, scope: dict[str, Ty], depth: int) -> ir.Expr:
        if depth > MAX_DEPTH:
            raise ExprError("expression nested too deeply", _column(n))
        d = depth + 1
        match n:
            case ast.Constant(value=v):
                if isinstance(v, bool):
                    return ir.Lit(v, BOOL)
                if isinstance(v, int):
                    if abs(v) >= 10**MAX_INT_DIGITS:
                        raise ExprError(
                            f"integer literal with more than {MAX_INT_DIGITS} digits", _column(n)
                        )
                    return ir.Lit(v, INT)
                if isinstance(v, str):
                    return ir.Lit(v, STR)
                raise ExprError(f"unsupported literal {v!r} (only int, str, bool)", _column(n))
            case ast.Name(id=name):
                return self._name(name, scope, n)
            case ast.Attribute():
                return self._attribute(n, scope, d)
            case ast.Subscript(value=ast.Name(id=ent), slice=sl) if ent in self.entities:
                key = self._key(ent, self._expression(sl, scope, d), sl)
                return ir.RowOf(ent, key, RowT(ent))
            case ast.Subscript():
                raise ExprError("only a table can be indexed: Entity[id]", _column(n))
            case ast.Compare():
                return self._compare(n, scope, d)
            case ast.BoolOp(op=op, values=vals):
                parts = tuple(self._bool(v, scope, d) for v in vals)
                return ir.BoolOp("and" if isinstance(op, ast.And) else "or", parts, BOOL)
            case ast.UnaryOp(op=ast.Not(), operand=o):
                return ir.Not(self._bool(o, scope, d), BOOL)
            case ast.UnaryOp(op=ast.USub(), operand=o):
                x = self._int(o, scope, d)
                if isinstance(x, ir.Lit) and isinstance(x.value, int):
                    return ir.Lit(-x.value, INT)
                return ir.Neg(x, INT)
            case ast.UnaryOp(op=ast.UAdd(), operand=o):
                return self._int(o, scope, d)
            case ast.BinOp(op=op, left=a, right=b):
                sym = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*"}.get(type(op))
                if sym is None:
                    raise ExprError(
                        f"operator {type(op).__name__} is not allowed (only + - *)", _column(n)
                    )
                return ir.Arith(sym, self._int(a, scope, d), self._int(b, scope, d), INT)  # type: ignore[arg-type]
            case ast.Call():
                return self._call(n, scope, d)
            case ast.ListComp(elt=elt, generators=gens):
                return self._comp(elt, gens, scope, d, n)
            case ast.GeneratorExp():
                raise ExprError(
                    "a generator is only allowed inside any/all/count/sum/min/max", _column(n)
                )
            case ast.IfExp(test=t, body=b, orelse=o):
                c = self._bool(t, scope, d)
                x, y = self._expression(b, scope, d), self._expression(o, scope, d)
                x, y = self._unify(x, y, n)
                return ir.IfExp(c, x, y, x.ty)
            case ast.List(elts=elts):
                items = [self._expression(x, scope, d) for x in elts]
                if not items:
                    return ir.ListLit((), ListT(STR))
                first = items[0]
                items = [self._coerce(x, first.ty, elts[i]) for i, x in enumerate(items)]
                if not is_scalar(first.ty):
                    raise ExprError("list literals hold scalars only", _column(n))
                return ir.ListLit(tuple(items), ListT(first.ty))
            case ast.Dict(keys=keys, values=vals):
                ks: list[str] = []
                for k in keys:
                    if not (isinstance(k, ast.Constant) and isinstance(k.value, str)):
                        raise ExprError("dict keys must be string literals", _column(k or n))
                    if k.value in ks:
                        raise ExprError(f"duplicate dict key {k.value!r}", _column(k))
                    ks.append(k.value)
                vs = tuple(self._expression(v, scope, d) for v in vals)
                return ir.DictLit(
                    tuple(ks), vs, RecordT(tuple((k, v.ty) for k, v in zip(ks, vs, strict=True)))
                )
            case ast.Lambda():
                raise ExprError("lambda is not allowed", _column(n))
            case ast.NamedExpr():
                raise ExprError("assignment expressions are not allowed", _column(n))
        raise ExprError(f"unsupported syntax: {type(n).__name__}", _column(n))

    def _name(self, name: str, scope: Mapping[str, Ty], n: ast.AST) -> ir.Expr:
        if name.startswith("__"):
            raise ExprError(f"forbidden name {name!r}", _column(n))
        t = scope.get(name)
        if t is None:
            if name in self.entities:
                raise ExprError(
                    f"table {name!r} is not a value; use {name}[id].field or id in {name}",
                    _column(n),
                )
            if name in AGGREGATES or name == "len":
                raise ExprError(f"{name!r} must be called", _column(n))
            raise ExprError(f"unknown name {name!r}", _column(n))
        if isinstance(t, RowT):  # a comprehension variable stands for the row
            return ir.RowOf(t.entity, ir.Var(name, RefT(t.entity)), t)
        return ir.Var(name, t)

    def _attribute(self, n: ast.Attribute, scope: dict[str, Ty], d: int) -> ir.Expr:
        if n.attr.startswith("_"):
            raise ExprError(f"forbidden attribute {n.attr!r}", _attr_column(n))
        base = self._expression(n.value, scope, d)
        if not isinstance(base, ir.RowOf):
            raise ExprError(
                f"attribute .{n.attr} needs a row (Entity[id] or a comprehension variable), "
                f"got {base.ty.show()}",
                _column(n),
            )
        ent = self.entities[base.entity]
        if n.attr == ent.key:
            return base.key
        f = ent.fields.get(n.attr)
        if f is None:
            known = ", ".join([ent.key, *ent.fields])
            raise ExprError(
                f"{base.entity} has no field {n.attr!r} (fields: {known})",
                _attr_column(n),
            )
        return ir.FieldOf(base.entity, base.key, n.attr, f.ty)

    def _key(self, ent: str, key: ir.Expr, n: ast.AST) -> ir.Expr:
        want = RefT(ent)
        if key.ty == want:
            return key
        if isinstance(key, ir.Lit) and key.ty == STR:
            return ir.Lit(key.value, want)
        raise ExprError(f"{ent}[...] needs a {ent} id, got {key.ty.show()}", _column(n))

    def _bool(self, n: ast.AST, scope: dict[str, Ty], d: int) -> ir.Expr:
        e = self._expression(n, scope, d)
        if e.ty != BOOL:
            raise ExprError(f"expected bool, got {e.ty.show()}", _column(n))
        return e

    def _int(self, n: ast.AST, scope: dict[str, Ty], d: int) -> ir.Expr:
        e = self._expression(n, scope, d)
        if e.ty != INT:
            raise ExprError(f"arithmetic needs int, got {e.ty.show()}", _column(n))
        return e

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
                    if not isinstance(right.ty, ListT):
                        raise ExprError(
                            f"'in' needs a list or a table on the right, got {right.ty.show()}",
                            _column(right_ast),
                        )
                    right = self._coerce_list(right, left, right_ast)
                    item = self._coerce(left, right.ty.elem, left_ast)  # type: ignore[attr-defined]
                    parts.append(ir.Contains(item, right, neg, BOOL))
            else:
                sym = _CMP.get(type(op))
                if sym is None:
                    raise ExprError(f"operator {type(op).__name__} is not allowed", _column(n))
                right = self._expression(right_ast, scope, d)
                a, b = self._unify(left, right, n)
                if not (is_scalar(a.ty) or isinstance(a.ty, ListT)):
                    raise ExprError(f"cannot compare {a.ty.show()}", _column(n))
                if sym not in ("==", "!=") and not is_ordered(a.ty):
                    raise ExprError(f"{sym} needs int, date or str, got {a.ty.show()}", _column(n))
                parts.append(ir.Compare(sym, a, b, BOOL))  # type: ignore[arg-type]
            left, left_ast = right, right_ast
        return parts[0] if len(parts) == 1 else ir.BoolOp("and", tuple(parts), BOOL)

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
        """Give a string literal the type ``want`` (enum member, date, id) or fail."""
        if e.ty == want:
            return e
        match e:
            case ir.Lit(value=str() as v) if e.ty == STR:
                if isinstance(want, EnumT):
                    if v not in want.values:
                        raise ExprError(f"{v!r} is not a member of {want.show()}", _column(n))
                    return ir.Lit(v, want)
                if want == DATE:
                    if not is_iso_date(v):
                        raise ExprError(f"{v!r} is not an ISO date (YYYY-MM-DD)", _column(n))
                    return ir.Lit(v, DATE)
                if isinstance(want, RefT):
                    return ir.Lit(v, want)
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
            ):
                pass  # only literals take their type from context
            case _:
                assert_never(e)
        raise ExprError(f"expected {want.show()}, got {e.ty.show()}", _column(n))

    def _unify(self, a: ir.Expr, b: ir.Expr, n: ast.AST) -> tuple[ir.Expr, ir.Expr]:
        if a.ty == b.ty:
            return a, b
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
        raise ExprError(f"cannot compare {a.ty.show()} with {b.ty.show()}", _column(n))

    def _call(self, n: ast.Call, scope: dict[str, Ty], d: int) -> ir.Expr:
        fn = n.func
        if not isinstance(fn, ast.Name):
            shown = ast.unparse(fn)
            raise ExprError(f"calls are not allowed: {shown}(...)", _column(n))
        name = fn.id
        if name not in AGGREGATES and name != "len":
            raise ExprError(f"calls are not allowed: {name}(...)", _column(n))
        if n.keywords or len(n.args) != 1:
            raise ExprError(f"{name}() takes exactly one argument", _column(n))
        arg = n.args[0]
        if name == "len":
            x = self._expression(arg, scope, d)
            if not isinstance(x.ty, ListT):
                raise ExprError(f"len() needs a list, got {x.ty.show()}", _column(arg))
            return ir.Len(x, INT)
        if not isinstance(arg, ast.GeneratorExp | ast.ListComp):
            raise ExprError(
                f"{name}() takes a comprehension over a table: {name}(x for x in Entity if ...)",
                _column(arg),
            )
        comp = self._comp(arg.elt, arg.generators, scope, d, arg)
        pt = comp.proj.ty
        if name in ("any", "all"):
            if pt != BOOL:
                raise ExprError(f"{name}() needs bool items, got {pt.show()}", _column(arg))
            return ir.Agg(name, comp, BOOL)  # type: ignore[arg-type]
        if name == "count":
            return ir.Agg("count", comp, INT)
        if name == "sum":
            if pt != INT:
                raise ExprError(f"sum() needs int items, got {pt.show()}", _column(arg))
            return ir.Agg("sum", comp, INT)
        if pt not in (INT, DATE):
            raise ExprError(f"{name}() needs int or date items, got {pt.show()}", _column(arg))
        return ir.Agg(name, comp, pt)  # type: ignore[arg-type]

    def _comp(
        self,
        elt: ast.AST,
        gens: list[ast.comprehension],
        scope: dict[str, Ty],
        d: int,
        n: ast.AST,
    ) -> ir.Comp:
        if len(gens) != 1:
            raise ExprError("a comprehension has exactly one 'for'", _column(n))
        g = gens[0]
        if g.is_async:
            raise ExprError("async comprehensions are not allowed", _column(n))
        if not isinstance(g.target, ast.Name):
            raise ExprError("the loop variable must be a plain name", _column(g.target))
        if not (isinstance(g.iter, ast.Name) and g.iter.id in self.entities):
            raise ExprError(
                "a comprehension iterates over a table: for x in Entity", _column(g.iter)
            )
        var, ent = g.target.id, g.iter.id
        if var in scope or var in self.entities:
            raise ExprError(f"loop variable {var!r} shadows another name", _column(g.target))
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

    # ----------------------------------------------------------------- effects

    def _target(self, n: ast.AST, scope: dict[str, Ty]) -> tuple[str, ir.Expr, str, Ty]:
        """``Entity[key].field`` as an assignable place."""
        if not (
            isinstance(n, ast.Attribute)
            and isinstance(n.value, ast.Subscript)
            and isinstance(n.value.value, ast.Name)
            and n.value.value.id in self.entities
        ):
            raise ExprError("an effect writes a field: Entity[id].field", _column(n))
        ent = n.value.value.id
        key = self._key(ent, self._expression(n.value.slice, scope, 0), n.value.slice)
        edef = self.entities[ent]
        if n.attr == edef.key:
            raise ExprError(f"cannot write the key {ent}.{n.attr}", _column(n))
        if n.attr.startswith("_"):
            raise ExprError(f"forbidden attribute {n.attr!r}", _column(n))
        f = edef.fields.get(n.attr)
        if f is None:
            raise ExprError(
                f"{ent} has no field {n.attr!r}", int(getattr(n.value, "end_col_offset", 0)) + 2
            )
        return ent, key, n.attr, f.ty

    def _stmt(self, s: ast.stmt, scope: dict[str, Ty]) -> ir.Effect:
        match s:
            case ast.Assign(targets=[ast.Name(id=bind)], value=ast.Call() as call):
                if bind in scope or bind in self.entities:
                    raise ExprError(f"name {bind!r} is already taken", _column(s))
                eff = self._create(call, scope, bind)
                scope[bind] = RefT(eff.entity)
                return eff
            case ast.Assign(targets=[tgt], value=v):
                ent, key, fld, ty = self._target(tgt, scope)
                val = self._coerce(self._expression(v, scope, 0), ty, v)
                return ir.Assign(ent, key, fld, "=", val)
            case ast.Assign():
                raise ExprError("assign to exactly one field", _column(s))
            case ast.AugAssign(target=tgt, op=op, value=v):
                sym = {ast.Add: "+=", ast.Sub: "-="}.get(type(op))
                if sym is None:
                    raise ExprError("only += and -= are allowed", _column(s))
                ent, key, fld, ty = self._target(tgt, scope)
                if ty != INT:
                    raise ExprError(
                        f"{sym} needs an int field, {ent}.{fld} is {ty.show()}", _column(s)
                    )
                val = self._coerce(self._expression(v, scope, 0), INT, v)
                return ir.Assign(ent, key, fld, sym, val)  # type: ignore[arg-type]
            case ast.Delete(targets=[ast.Subscript(value=ast.Name(id=ent), slice=sl)]) if (
                ent in self.entities
            ):
                return ir.Delete(ent, self._key(ent, self._expression(sl, scope, 0), sl))
            case ast.Delete():
                raise ExprError("delete one row: del Entity[id]", _column(s))
            case ast.Expr(value=ast.Call(func=ast.Attribute(attr="create")) as call):
                return self._create(call, scope, None)
            case ast.Expr(
                value=ast.Call(func=ast.Attribute(value=place, attr=meth), args=args, keywords=kw)
            ) if meth in ("append", "remove"):
                ent, key, fld, ty = self._target(place, scope)
                if not isinstance(ty, ListT):
                    raise ExprError(
                        f".{meth}() needs a list field, {ent}.{fld} is {ty.show()}", _column(s)
                    )
                if kw or len(args) != 1:
                    raise ExprError(f".{meth}() takes one argument", _column(s))
                val = self._coerce(self._expression(args[0], scope, 0), ty.elem, args[0])
                return ir.ListEdit(ent, key, fld, meth, val)  # type: ignore[arg-type]
            case ast.Import() | ast.ImportFrom():
                raise ExprError("imports are not allowed", _column(s))
        raise ExprError(f"unsupported effect: {type(s).__name__}", _column(s))

    def _create(self, call: ast.Call, scope: dict[str, Ty], bind: str | None) -> ir.Create:
        fn = call.func
        if not (
            isinstance(fn, ast.Attribute)
            and fn.attr == "create"
            and isinstance(fn.value, ast.Name)
            and fn.value.id in self.entities
        ):
            raise ExprError(
                "calls are not allowed here; create rows with Entity.create(...)", _column(call)
            )
        ent = fn.value.id
        edef = self.entities[ent]
        if call.args:
            raise ExprError("Entity.create takes keyword arguments only", _column(call))
        vals: list[tuple[str, ir.Expr]] = []
        seen: set[str] = set()
        for kw in call.keywords:
            if kw.arg is None:
                raise ExprError("**kwargs is not allowed", _column(kw))
            if kw.arg == edef.key:
                raise ExprError(f"the key {ent}.{kw.arg} is assigned by the system", _column(kw))
            f = edef.fields.get(kw.arg)
            if f is None:
                raise ExprError(f"{ent} has no field {kw.arg!r}", _column(kw))
            seen.add(kw.arg)
            value = self._expression(kw.value, scope, 0)
            vals.append((kw.arg, self._coerce(value, f.ty, kw.value)))
        for fname, f in edef.fields.items():
            if fname not in seen:
                if isinstance(f.ty, ListT):
                    vals.append((fname, ir.ListLit((), f.ty)))
                else:
                    raise ExprError(f"{ent}.create(...) is missing field {fname!r}", _column(call))
        order = list(edef.fields)
        vals.sort(key=lambda kv: order.index(kv[0]))
        return ir.Create(ent, bind, tuple(vals))


def prim_of(name: str) -> PrimT | None:
    """The primitive type called ``name``, if any."""
    return {"int": INT, "str": STR, "bool": BOOL, "date": DATE}.get(name)
