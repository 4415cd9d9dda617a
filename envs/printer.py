"""IR expressions and types as Python source over the generated ``Db``.

Expressions are printed by a subclass of :class:`graphgen.unparse.Printer`: operators and
their precedence are rendered by the one shared printer; only the leaves that read the
state (fields, rows, tables, comprehensions) are overridden, plus a few spellings that
Python linters reject.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from decimal import Decimal
from typing import assert_never

from graphgen import ir
from graphgen.envs.layout import py_str
from graphgen.envs.naming import CodegenError, EntityNames
from graphgen.today import DEFAULT_TODAY
from graphgen.types import (
    BOOL,
    DATE,
    INT,
    STR,
    DecT,
    EnumT,
    ListT,
    MapT,
    NoneT,
    OptT,
    RecordT,
    RefT,
    RowT,
    Ty,
    scale_of,
    strip_opt,
)
from graphgen.unparse import PRECEDENCE, Printer, precedence, to_source

PRESENT = "present"  # the generated helper that reads a narrowed optional value

_FLIP: dict[str, ir.CmpOp] = {"==": "==", "!=": "!=", "<": ">", "<=": ">=", ">": "<", ">=": "<="}


class PyPrinter(Printer):
    """Renders IR as Python over a ``db`` (the generated ``Db``) with the same meaning.

    Leaves read the state through the Db: ``Entity[k].f`` → ``db.get_entity(k).f`` (a
    missing row is a ToolError), ``k in Entity`` → ``k in db.Entity``, comprehensions
    visit ``sorted(db.Entity)``. ``any``/``all`` over items that may fail build the whole
    list first, as the interpreter does, so an error in any row is raised the same way.
    A few spellings that Python linters reject (``x == True``, ``not a == b``,
    ``'a' == x``, ``x if x > y else y``) are printed in an equivalent form.
    """

    def __init__(self, names: EntityNames, variables: Mapping[str, str], db: str = "db") -> None:
        super().__init__()
        self.names = names
        self.variables = variables
        self.db = db
        self.helpers: set[str] = set()  # runtime functions the printed code calls
        # The copy of the Db taken before a call's effects, which ``old(...)`` reads;
        # None where no effect ran yet (preconditions read ``db`` itself).
        self.old_db: str | None = None
        # Optional parameters and fields (``T | None``): a read the elaborator narrowed
        # to ``T`` is printed as ``present(x)`` so a type checker sees ``T`` too.
        self.optional_vars: set[str] = set()
        self.optional_fields: set[tuple[str, str]] = set()
        self.decimal_names: set[str] = set()  # names from decimal / the package's decimals

    def expr(self, e: ir.Expr, rows: frozenset[str] = frozenset()) -> str:
        e = self.rewrite(e)
        mm = min_max_call(e)
        if mm is not None:
            fn, x, y = mm
            return f"{fn}({self.expr(x, rows)}, {self.expr(y, rows)})"
        match e:
            case ir.Arith(op=op, left=a, right=b) if DATE in (a.ty, b.ty):
                if e.ty == INT:  # date - date: the days between
                    self.helpers.add("date_diff")
                    return f"date_diff({self.expr(a, rows)}, {self.expr(b, rows)})"
                self.helpers.add("date_add")
                day, n = (a, b) if a.ty == DATE else (b, a)
                days = (
                    self.expr(n, rows) if op == "+" else f"-{self.wrap(n, PRECEDENCE['neg'], rows)}"
                )
                return f"date_add({self.expr(day, rows)}, {days})"
            case ir.BoolOp(op=op, values=values):
                # and/or inside and/or is always parenthesised (clearer; ruff RUF021).
                return f" {op} ".join(
                    f"({self.expr(v, rows)})"
                    if isinstance(self.rewrite(v), ir.BoolOp)
                    else self.wrap(v, PRECEDENCE[op] + 1, rows)
                    for v in values
                )
            case (
                ir.Lit()
                | ir.Var()
                | ir.FieldOf()
                | ir.RowOf()
                | ir.Exists()
                | ir.Compare()
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
                # The shared printer renders these; the leaves come back to the hooks below.
                return super().expr(e, rows)
            case _:
                assert_never(e)

    def wrap(self, x: ir.Expr, min_prec: int, rows: frozenset[str]) -> str:
        x = self.rewrite(x)
        prec = PRECEDENCE["atom"] if min_max_call(x) is not None else precedence(x)
        if isinstance(x, ir.StrOp) and x.op == "fstring" and len(x.args) > 1:
            prec = PRECEDENCE["+"]  # printed as a + chain
        s = self.expr(x, rows)
        return f"({s})" if prec < min_prec else s

    @staticmethod
    def rewrite(e: ir.Expr) -> ir.Expr:
        """An equivalent node in the spelling Python linters accept: a constant on the
        right of a comparison, no ``== True``, no ``not a == b`` / ``not x in y`` /
        ``not not x``. The operands are pure, so evaluation order is free."""
        while True:
            match e:
                case ir.Compare(op=op, left=ir.Lit() as a, right=b) if not isinstance(b, ir.Lit):
                    e = ir.Compare(_FLIP[op], b, a, e.ty)
                case ir.Compare(op="==" | "!=" as op, left=a, right=ir.Lit(value=bool() as v)):
                    positive = (op == "==") == v
                    if isinstance(a, ir.Lit):
                        e = ir.Lit((a.value == v) == (op == "=="), e.ty)
                    else:
                        e = a if positive else ir.Not(a, e.ty)
                case ir.Not(operand=ir.Compare(op="==" | "!=" as op, left=a, right=b)):
                    flipped: ir.CmpOp = "!=" if op == "==" else "=="
                    e = ir.Compare(flipped, a, b, e.ty)
                case ir.Not(operand=ir.Contains(item=a, container=b, negated=neg)):
                    e = ir.Contains(a, b, not neg, e.ty)
                case ir.Not(operand=ir.Not(operand=inner)):
                    e = inner
                case _:
                    return e

    def lit(self, e: ir.Lit) -> str:
        if isinstance(e.value, Decimal):
            self.decimal_names.add("Decimal")
            return f'Decimal("{e.value:f}")'
        return py_str(e.value) if isinstance(e.value, str) else repr(e.value)

    def strop(self, e: ir.StrOp, rows: frozenset[str]) -> str:
        if e.op in ("fstring", "str"):
            # the parts' texts joined: a decimal at its scale, others as str()
            parts = [self.text(x, rows) for x in e.args]
            if e.op == "str" or len(parts) == 1:
                return parts[0]
            # joined with + (every part is a str); wrap() knows it binds like +
            return " + ".join(parts)
        return super().strop(e, rows)

    def text(self, x: ir.Expr, rows: frozenset[str]) -> str:
        """Python for the text of ``x`` (see graphgen.strings.text_of)."""
        s = self.expr(x, rows)
        if isinstance(x.ty, DecT):
            self.decimal_names.add("dec_text")
            return f"dec_text({s}, {x.ty.scale})"
        if isinstance(strip_opt(x.ty), DecT):  # None reads "None", as str(None) does
            self.decimal_names.add("to_result")
            return f"str(to_result({s}, {scale_of(x.ty)}))"
        if x.ty == STR or isinstance(x.ty, EnumT) or x.ty == DATE:
            return self.wrap(x, PRECEDENCE["atom"], rows)  # already its text
        return f"str({s})"  # ids too: an int id (``type: int`` keys) is no text

    def rounded(self, e: ir.Round, rows: frozenset[str]) -> str:
        self.decimal_names.add("round_div")
        num = self.expr(e.num, rows)
        if e.den is None:
            return f"round_div({num}, 1, {e.places}, {py_str(e.mode)})"
        # a zero divisor is the interpreter's error, in its words
        self.helpers.add("ToolError")
        where = py_str(to_source(e))
        den = self.expr(e.den, rows)
        return f"round_div({num}, {den}, {e.places}, {py_str(e.mode)}, ToolError, {where})"

    def var(self, e: ir.Var, rows: frozenset[str]) -> str:
        name = self.variables.get(e.name, e.name)
        if e.name in self.optional_vars and not isinstance(e.ty, OptT):
            self.helpers.add(PRESENT)
            return f"{PRESENT}({name})"
        return name

    def old(self, e: ir.Old, rows: frozenset[str]) -> str:
        # printed as an atom wherever it stands, like ``old(...)`` is
        if self.old_db is None:
            return self.wrap(e.operand, PRECEDENCE["atom"], rows)
        saved = self.db
        self.db = self.old_db
        try:
            # A row visited now may be missing before the call: read the loop rows
            # through the getters, which raise the interpreter's not-found error.
            return self.wrap(e.operand, PRECEDENCE["atom"], frozenset())
        finally:
            self.db = saved

    def today(self) -> str:
        # the Db carries the state's today (None: the default); a call never changes it
        return f"({self.db}.today or {DEFAULT_TODAY!r})"

    def table(self, entity: str) -> str:
        return f"{self.db}.{entity}"

    def index(self, items: str, i: str) -> str:
        # The interpreter's error (kind "empty") for an index past the end, not IndexError.
        self.helpers.add("item_of")
        return f"item_of({items}, {i})"

    def map_key(self, key: str) -> str:
        # A result keyed by id is JSON data: object keys are strings (int id 3 is "3").
        return f"str({key})"

    def field_of(self, e: ir.FieldOf, rows: frozenset[str]) -> str:
        if isinstance(e.key, ir.Var) and e.key.name in rows:
            # A loop variable names a row that exists: plain indexing reads best.
            s = f"{self.db}.{e.entity}[{self.var(e.key, rows)}].{e.field}"
        else:
            s = f"{self.db}.{self.names.getter[e.entity]}({self.expr(e.key, rows)}).{e.field}"
        if (e.entity, e.field) in self.optional_fields and not isinstance(e.ty, OptT):
            self.helpers.add(PRESENT)
            s = f"{PRESENT}({s})"
        # a decimal is kept as its JSON text and computed with as a Decimal
        if isinstance(e.ty, DecT):
            self.decimal_names.add("Decimal")
            return f"Decimal({s})"
        if isinstance(strip_opt(e.ty), DecT):  # an optional one may be None
            self.decimal_names.add("parse_decimal")
            return f"parse_decimal({s})"
        return s

    def row_of(self, e: ir.RowOf, rows: frozenset[str]) -> str:
        return f"{self.db}.{self.names.record[e.entity]}({self.expr(e.key, rows)})"

    def agg(self, a: ir.Agg, rows: frozenset[str]) -> str:
        c = a.comp
        proj = None
        if (
            a.fn == "count"
            and isinstance(c.proj, ir.RowOf)
            and isinstance(c.proj.key, ir.Var)
            and c.proj.key.name == c.var
        ):
            proj = self.var(c.proj.key, rows)  # counting rows needs no record
        body = self.comp_body(c, rows, proj)
        if a.fn in ("min", "max"):
            self.helpers.add(f"{a.fn}_of")
            return f"{a.fn}_of([{body}], {py_str(c.entity)})"
        if a.fn == "count":
            return f"len([{body}])"
        if a.fn in ("any", "all") and may_raise(c, ()):
            # The interpreter evaluates every item before any()/all() looks at them, so an
            # item that fails raises even after a decisive one: build the list first.
            self.helpers.add(f"{a.fn}_of")
            return f"{a.fn}_of([{body}])"
        return f"{a.fn}({body})"

    def comp_body(self, c: ir.Comp, rows: frozenset[str], proj: str | None = None) -> str:
        inner = rows | {c.var}
        v = self.variables.get(c.var, c.var)
        s = f"{proj or self.expr(c.proj, inner)} for {v} in sorted({self.table(c.entity)})"
        if c.cond is not None:
            # A conditional expression must be parenthesised in a comprehension's if.
            s += f" if {self.wrap(c.cond, 1, inner)}"
        return s


def min_max_call(e: ir.Expr) -> tuple[str, ir.Expr, ir.Expr] | None:
    """``x if x > y else y`` as ("max", x, y), and the like (ruff FURB136).

    Same value (when x == y either is the answer) and same errors (pure operands).
    """
    match e:
        case ir.IfExp(
            cond=ir.Compare(op="<" | "<=" | ">" | ">=" as op, left=x, right=y), then=t, orelse=f
        ) if {t, f} == {x, y} and t != f:
            bigger = (op in (">", ">=")) == (t == x)
            return ("max" if bigger else "min"), x, y
    return None


def may_raise(e: ir.Expr, safe: Iterable[str]) -> bool:
    """Whether evaluating ``e`` can raise a ToolError (a missing row, min/max of nothing).

    ``safe`` are variables known to name existing rows (id parameters, already checked).
    """
    nodes = ir.walk(e)
    ok = set(safe) | {n.var for n in nodes if isinstance(n, ir.Comp)}
    return any(_node_may_raise(n, ok) for n in nodes)


def _node_may_raise(n: ir.Expr, ok: set[str]) -> bool:
    """Whether ``n`` itself (not its operands) can raise; ``ok`` name existing rows."""
    match n:
        case ir.FieldOf(key=key) | ir.RowOf(key=key):
            return not (isinstance(key, ir.Var) and key.name in ok)
        case ir.Agg(fn=fn):
            return fn in ("min", "max")
        case ir.Round(den=den) if den is not None:
            return True  # division by zero
        case ir.Index():
            return True  # past the end
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
            return False
        case _:
            assert_never(n)


# ============================================================================ types


def py_type(t: Ty, int_keys: Collection[str] = ()) -> str:
    """The Python annotation of an IR type; ids of ``int_keys`` entities are ints."""
    if isinstance(t, OptT):
        return f"{py_type(t.inner, int_keys)} | None"
    if isinstance(t, NoneT):
        return "None"
    if t in (INT, BOOL):
        return "int" if t == INT else "bool"
    if isinstance(t, RefT) and t.entity in int_keys:
        return "int"
    if t in (STR, DATE) or isinstance(t, RefT | DecT):
        return "str"  # a decimal's JSON form is a string: "12.50"
    if isinstance(t, EnumT):
        return "Literal[" + ", ".join(py_str(v) for v in t.values) + "]"
    if isinstance(t, ListT):
        return f"list[{py_type(t.elem, int_keys)}]"
    if isinstance(t, RowT | RecordT):
        return "dict[str, Any]"
    if isinstance(t, MapT):
        # JSON object keys are strings, so an int id becomes "3" in the result
        return f"dict[str, {py_type(t.value, int_keys)}]"
    raise CodegenError(f"no Python type for {t.show()}")


def type_words(t: Ty) -> str:
    """How a docstring names a value of type ``t`` (``Account id``, ``one of a, b``)."""
    if isinstance(t, OptT):
        return f"{type_words(t.inner)}, or None"
    if isinstance(t, RefT):
        return f"{t.entity} id"
    if t == DATE:
        return "date YYYY-MM-DD"
    if isinstance(t, EnumT):
        return "one of " + ", ".join(t.values)
    return t.show()
