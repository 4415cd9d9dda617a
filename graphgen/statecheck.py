"""Every problem of a state against its domain, each with its table, row key and field.

One validator serves the state generator's self-check, the task reader
(:func:`graphgen.stategen.check_state`) and the import of an external state
(:mod:`graphgen.stateimport`). A value is checked in two steps: its type, by the
interpreter's own :func:`~graphgen.interp.check_value` (what tool calls accept), then the
field's declared rules for that kind of type, one small function per kind in
:data:`FIELD_RULES` (bounds of an int, a list being a sorted set); a new type adds its
rules there. Rules across rows (references, uniqueness, keys, counters) come after.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection
from dataclasses import dataclass
from typing import Any

from graphgen import keys
from graphgen.decimals import dec_text, parse_decimal
from graphgen.domain import Domain, EntityDef, FieldDef
from graphgen.parse import is_iso_date
from graphgen.state import State
from graphgen.suggest import did_you_mean
from graphgen.types import BOOL, DATE, INT, STR, DecT, EnumT, ListT, OptT, RefT, Ty, strip_opt


@dataclass(frozen=True)
class StateIssue:
    """One problem of a state: where (table, row key, field; empty when it concerns a
    whole table or row) and what, in plain words."""

    table: str
    key: str
    field: str
    message: str

    def __str__(self) -> str:
        where = self.table
        if self.key:
            where += f"[{self.key!r}]"
        if self.field:
            where += f".{self.field}"
        return f"{where}: {self.message}" if where else self.message


def _int_rules(f: FieldDef, v: Any) -> str | None:
    if f.min is not None and v < f.min:
        return f"{v} is below the minimum {f.min}"
    if f.max is not None and v > f.max:
        return f"{v} is above the maximum {f.max}"
    return None


def _list_rules(f: FieldDef, v: Any) -> str | None:
    # Effects build lists as sorted sets; an unsorted or repeating list would compare
    # unequal to the same set written by a tool.
    if v != sorted(set(v)):
        return f"the list {v!r} is not a sorted set (no repeats, in order)"
    return None


def _decimal_rules(f: FieldDef, v: Any) -> str | None:
    # A state keeps a decimal as its JSON text at the field's scale ("1.50", not "1.5" or
    # 1.5): the text is what tools show, so another spelling would show differently.
    ty = strip_opt(f.ty)
    assert isinstance(ty, DecT)
    d = parse_decimal(v)
    if not isinstance(v, str) or d is None or dec_text(d, ty.scale) != v:
        return f"a decimal is written as a string with {ty.scale} places, not {v!r}"
    return _int_rules(f, d)


def _rule_kind(ty: Ty) -> str:
    ty = strip_opt(ty)
    if isinstance(ty, DecT):
        return "decimal"
    if ty == INT:
        return "int"
    if isinstance(ty, ListT):
        return "list"
    return ""


#: The rules a well-typed value must also meet, by kind of field type
#: (:func:`_rule_kind`): each returns why the value breaks them, or None.
FIELD_RULES: dict[str, Callable[[FieldDef, Any], str | None]] = {
    "int": _int_rules,
    "decimal": _decimal_rules,
    "list": _list_rules,
}


def value_problem(f: FieldDef, v: Any, int_keys: Collection[str] = ()) -> str | None:
    """Why ``v`` cannot be the value of field ``f`` (type first, then its rules);
    ``int_keys`` names the entities whose ids are ints."""
    from graphgen.interp import check_value  # interp imports state; keep this lazy

    why = check_value(f.ty, v, int_keys)
    if why:
        return f"expected {why}, not {v!r}"
    if v is None:  # an optional field's None meets every rule
        return None
    rules = FIELD_RULES.get(_rule_kind(f.ty))
    return rules(f, v) if rules is not None else None


def quick_check(f: FieldDef, int_keys: Collection[str]) -> Callable[[Any], bool]:
    """A test that passes only values :func:`value_problem` accepts, made once per field:
    a state check runs it on every cell, and the valid case (nearly every cell) then
    needs no message and no dispatch on the type. A value it fails goes to
    :func:`value_problem` for the reason; a type it has no quick form for fails every
    value, so that one decides.

    >>> from graphgen.types import PRIMS
    >>> t = quick_check(FieldDef(name="n", ty=PRIMS["int"], min=0), ())
    >>> t(3), t(-1), t(True), t("3")
    (True, False, False, False)
    """
    ty = f.ty
    if isinstance(ty, OptT):
        inner = quick_check(FieldDef(name=f.name, ty=ty.inner, min=f.min, max=f.max), int_keys)
        return lambda v: v is None or inner(v)
    if ty == INT:
        lo, hi = f.min, f.max
        if lo is None and hi is None:
            return lambda v: type(v) is int
        low = -math.inf if lo is None else lo
        high = math.inf if hi is None else hi
        return lambda v: type(v) is int and low <= v <= high
    if ty == BOOL:
        return lambda v: type(v) is bool
    if isinstance(ty, RefT) and ty.entity in int_keys:
        return lambda v: type(v) is int
    if ty == STR or isinstance(ty, RefT):
        return lambda v: type(v) is str
    if isinstance(ty, EnumT):
        members = frozenset(ty.values)
        return lambda v: type(v) is str and v in members
    if ty == DATE:
        dates: set[str] = set()  # the valid dates seen: a table repeats them

        def date_ok(v: Any) -> bool:
            if type(v) is not str:
                return False
            if v in dates:
                return True
            if is_iso_date(v):
                dates.add(v)
                return True
            return False

        return date_ok
    return lambda v: False


def _key_number(edef: EntityDef, key: str) -> int | None:
    """The counter number in a key made by :meth:`EntityDef.make_id`, else None (always
    None for ids given by the data: no counter makes them)."""
    if edef.data_key:
        return None
    num = key[len(edef.prefix) :]
    return int(num) if key.startswith(edef.prefix) and num.isdigit() else None


def key_problem(edef: EntityDef, key: Any) -> str | None:
    """Why ``key`` cannot be an id of ``edef``'s table."""
    if edef.int_key:
        return keys.key_problem(edef, key)
    if not isinstance(key, str):
        return f"the key {key!r} is not a string"
    if not key:
        return "the key is empty"
    if edef.prefix and not key.startswith(edef.prefix):
        return f"the key {key!r} does not start with {edef.prefix!r}, the prefix of its ids"
    return None


def next_counter(edef: EntityDef, keys: list[Any]) -> int:
    """The first counter number past every key of the table (1 for an empty one): the
    largest int id for ``type: int`` keys, else the largest counter-made key."""
    if edef.int_key:
        return max((k for k in keys if isinstance(k, int)), default=0) + 1
    nums = [n for n in (_key_number(edef, k) for k in keys if isinstance(k, str)) if n is not None]
    return max(nums, default=0) + 1


def state_issues(domain: Domain, state: State) -> list[StateIssue]:
    """Every problem of ``state`` against ``domain`` (empty when it is valid): tables,
    counters, keys, fields (unknown, missing, type, bounds, list form), references
    (each dangling id) and unique fields (each repeated value)."""
    out: list[StateIssue] = []
    for ename in sorted(set(state.tables) - set(domain.entities)):
        msg = f"unknown table{did_you_mean(ename, domain.entities)}"
        out.append(StateIssue(ename, "", "", msg + f" (tables: {', '.join(domain.entities)})"))
    for ename in domain.entities:
        if ename not in state.tables:
            out.append(StateIssue(ename, "", "", "missing table (write {} for an empty one)"))
    for ename, edef in domain.entities.items():
        table = state.tables.get(ename, {})
        counter = state.counters.get(ename)
        fields = _Fields(
            set(edef.fields),
            [
                (fname, f, quick_check(f, domain.int_keys), domain.entity_of_ref(f.ty))
                for fname, f in edef.fields.items()
            ],
        )
        if counter is None:
            out.append(StateIssue(ename, "", "", "no counter"))
        for key, row in table.items():
            why = key_problem(edef, key)
            if why:
                out.append(StateIssue(ename, str(key), "", why))
            num = _key_number(edef, key) if isinstance(key, str) else None
            if counter is not None and num is not None and num >= counter:
                out.append(StateIssue(ename, key, "", f"counter {counter} is not past this key"))
            out.extend(_row_issues(domain, state, edef, fields, key, row))
        for fname, f in edef.fields.items():
            if f.unique:
                out.extend(_unique_issues(ename, fname, table))
    return out


@dataclass(frozen=True)
class _Fields:
    """An entity's fields as a state check reads them on every row: their names, and per
    field its quick test (:func:`quick_check`) and the table its ids name (or None)."""

    names: set[str]
    checks: list[tuple[str, FieldDef, Callable[[Any], bool], str | None]]


def _row_issues(
    domain: Domain, state: State, edef: EntityDef, fields: _Fields, key: str, row: Any
) -> list[StateIssue]:
    ename = edef.name
    if not isinstance(row, dict):
        return [StateIssue(ename, key, "", f"a row is an object of fields, not {row!r}")]
    out: list[StateIssue] = []
    for fname in sorted(row.keys() - fields.names):
        hint = did_you_mean(fname, edef.fields)
        if fname == edef.key:
            msg = "the key is the row's name in the table, not one of its fields"
        else:
            msg = f"unknown field{hint} (fields: {', '.join(edef.fields) or 'none'})"
        out.append(StateIssue(ename, key, fname, msg))
    for fname, f, quick, target in fields.checks:
        if fname not in row:
            out.append(StateIssue(ename, key, fname, "missing field"))
            continue
        v = row[fname]
        if not quick(v):
            why = value_problem(f, v, domain.int_keys)
            if why:
                out.append(StateIssue(ename, key, fname, why))
                continue
        if target is not None and v is not None:
            rows = state.tables.get(target, {})
            for x in v if isinstance(v, list) else (v,):
                if x not in rows:
                    out.append(StateIssue(ename, key, fname, f"{target} {x!r} does not exist"))
    return out


def _unique_issues(ename: str, fname: str, table: dict[str, Any]) -> list[StateIssue]:
    first: dict[str, str] = {}
    out: list[StateIssue] = []
    for key, row in table.items():
        if not isinstance(row, dict) or fname not in row:
            continue
        seen = repr(row[fname])
        if seen in first:
            out.append(
                StateIssue(
                    ename,
                    key,
                    fname,
                    f"{row[fname]!r} is already used by {first[seen]!r} (the field is unique)",
                )
            )
        else:
            first[seen] = key
    return out
