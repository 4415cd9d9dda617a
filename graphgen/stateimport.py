"""Import a state from outside (a database dump, a service's fixtures) into a domain.

The input is JSON shaped like a state file (``graphgen state`` prints one)::

    {"tables": {"Account": {"A0001": {"email": "...", "balance": 40, ...}, ...}, ...},
     "counters": {"Account": 2, ...}}

with two allowances for data written elsewhere: a table may be a list of rows that each
carry their key field (``[{"account_id": "A0001", "email": ...}, ...]``), and
``counters`` may be left out (each is then the first number past the table's ids).
``today`` (a date ``YYYY-MM-DD``) is the state's today, which ``today()`` reads; left
out, it is the default date (:data:`graphgen.today.DEFAULT_TODAY`).

Nothing invalid is accepted, and nothing is lost: :func:`import_state` reports *every*
problem at once (:class:`StateImportError`), each with its table, row key and field —
unknown or missing tables and fields, values of the wrong type, out of bounds or not an
enum member, dangling references, repeated unique values, bad or repeated keys, bad
counters, broken invariants. The checks of a table's rows are the ones every state
meets (:func:`graphgen.statecheck.state_issues`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from graphgen.domain import Domain
from graphgen.errors import GraphgenError
from graphgen.keys import key_from_json
from graphgen.state import State
from graphgen.statecheck import StateIssue, next_counter, state_issues
from graphgen.suggest import did_you_mean
from graphgen.today import check_today

#: The top-level keys of a state file.
TOP_KEYS = ("tables", "counters", "int_keys", "today")


class StateImportError(GraphgenError):
    """An external state is not a valid state of the domain; ``problems`` lists all."""

    def __init__(self, source: str, problems: list[StateIssue]) -> None:
        super().__init__(source)
        self.source = source
        self.problems = problems

    def __str__(self) -> str:
        n = len(self.problems)
        head = f"{self.source}: {n} problem{'s' if n != 1 else ''} in the state"
        return head + ":\n" + "\n".join(f"  - {p}" for p in self.problems)


class _Duplicate(str):
    """A JSON object key seen twice (json keeps the last; an import must not)."""


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    dups: list[str] = []
    for k, v in pairs:
        if k in out:
            dups.append(k)
        out[k] = v
    if dups:
        out["\0duplicates"] = [_Duplicate(k) for k in dups]
    return out


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a number JSON allows")


def parse_state_json(text: str) -> Any:
    """JSON text, keeping track of keys that repeat inside one object (``NaN`` and
    ``Infinity`` are refused: JSON has no such numbers)."""
    return json.loads(text, object_pairs_hook=_pairs, parse_constant=_no_constant)


def _dups(obj: dict[str, Any]) -> list[str]:
    return [str(k) for k in obj.pop("\0duplicates", [])]


def _rows(
    domain: Domain, ename: str, raw: Any, issues: list[StateIssue]
) -> dict[str, dict[str, Any]]:
    """The rows of one table keyed by id, from an object of rows or a list of rows."""
    edef = domain.entities[ename]
    rows: dict[str, dict[str, Any]] = {}
    if isinstance(raw, dict):
        for k in _dups(raw):
            issues.append(StateIssue(ename, k, "", "the key appears twice in the table"))
        for text, row in sorted(raw.items()):
            key: Any = text
            if edef.int_key:  # JSON object keys are text: int id 3 is "3"
                try:
                    key = key_from_json(True, text)
                except ValueError:
                    issues.append(StateIssue(ename, text, "", f"{ename} ids are integers"))
                    continue
            if isinstance(row, dict):
                for f in _dups(row):
                    issues.append(StateIssue(ename, key, f, "the field appears twice in the row"))
                row = dict(row)
                # the key field inside the row is allowed when it agrees with the key
                if edef.key in row and row.pop(edef.key) != key:
                    issues.append(StateIssue(ename, key, edef.key, "differs from the row's key"))
            rows[key] = row
        return rows
    if isinstance(raw, list):
        for i, row in enumerate(raw):
            if not isinstance(row, dict):
                issues.append(StateIssue(ename, f"#{i}", "", f"a row is an object, not {row!r}"))
                continue
            for f in _dups(row):
                issues.append(StateIssue(ename, f"#{i}", f, "the field appears twice in the row"))
            row = dict(row)
            if edef.key not in row:
                issues.append(StateIssue(ename, f"#{i}", edef.key, "the row has no key field"))
                continue
            key = row.pop(edef.key)
            if edef.int_key and isinstance(key, int) and not isinstance(key, bool):
                pass  # an int id, as the key type says
            elif not isinstance(key, str):
                issues.append(
                    StateIssue(ename, f"#{i}", edef.key, f"the key {key!r} is not a string")
                )
                continue
            if key in rows:
                issues.append(StateIssue(ename, key, "", f"the key appears twice (row #{i})"))
                continue
            rows[key] = row
        return dict(sorted(rows.items()))
    issues.append(
        StateIssue(
            ename, "", "", f"a table is an object of rows by key or a list of rows, not {raw!r}"
        )
    )
    return rows


def state_problems(domain: Domain, data: Any) -> tuple[State | None, list[StateIssue]]:
    """The state ``data`` describes and every problem it has (the state is None when the
    data is not even shaped like one)."""
    issues: list[StateIssue] = []
    if not isinstance(data, dict):
        return None, [StateIssue("", "", "", "a state is a JSON object with 'tables'")]
    data = dict(data)
    for k in _dups(data):
        issues.append(StateIssue("", "", "", f"the top-level key {k!r} appears twice"))
    for k in sorted(set(data) - set(TOP_KEYS)):
        hint = did_you_mean(k, TOP_KEYS)
        issues.append(
            StateIssue(
                "", "", "", f"unknown top-level key {k!r}{hint} (keys: {', '.join(TOP_KEYS)})"
            )
        )
    # ``int_keys`` (written by State.to_dict) lists tables with int ids; the domain's key
    # types decide how ids are read, so the list only has to agree with them.
    listed = data.get("int_keys", [])
    if not isinstance(listed, list) or any(
        not isinstance(e, str) or e not in domain.int_keys for e in listed
    ):
        ints = ", ".join(sorted(domain.int_keys)) or "none"
        issues.append(
            StateIssue("", "", "", f"'int_keys' lists tables with int ids ({ints}), not {listed!r}")
        )
    raw_tables = data.get("tables")
    if not isinstance(raw_tables, dict):
        issues.append(StateIssue("", "", "", "'tables' must be an object: table name -> rows"))
        return None, issues
    raw_tables = dict(raw_tables)
    for k in _dups(raw_tables):
        issues.append(StateIssue(k, "", "", "the table appears twice"))
    tables: dict[str, dict[str, Any]] = {}
    for ename, raw in raw_tables.items():
        if ename in domain.entities:
            tables[ename] = _rows(domain, ename, raw, issues)
        else:
            tables[ename] = {}  # reported as an unknown table below
    counters = _counters(domain, data, tables, issues)
    today = data.get("today")
    if today is not None:
        try:
            check_today(today)
        except ValueError as exc:
            issues.append(StateIssue("", "", "", f"'today': {exc}"))
            today = None
    st = State(tables, counters, today)
    issues += state_issues(domain, st)
    if not issues:
        issues += _invariant_issues(domain, st)
    return st, issues


def _counters(
    domain: Domain,
    data: dict[str, Any],
    tables: dict[str, dict[str, Any]],
    issues: list[StateIssue],
) -> dict[str, int]:
    raw = data.get("counters")
    computed = {
        e: next_counter(edef, list(tables.get(e, {}))) for e, edef in domain.entities.items()
    }
    if raw is None:
        return computed
    if not isinstance(raw, dict):
        issues.append(StateIssue("", "", "", "'counters' must be an object: table name -> number"))
        return computed
    raw = dict(raw)
    for k in _dups(raw):
        issues.append(StateIssue(k, "", "", "the counter appears twice"))
    out: dict[str, int] = {}
    for ename, n in raw.items():
        if ename not in domain.entities:
            hint = did_you_mean(ename, domain.entities)
            issues.append(StateIssue(ename, "", "", f"a counter of an unknown table{hint}"))
        elif not isinstance(n, int) or isinstance(n, bool) or n < 1:
            issues.append(
                StateIssue(ename, "", "", f"the counter must be a whole number >= 1, not {n!r}")
            )
            out[ename] = computed[ename]
        else:
            out[ename] = n
    for ename in domain.entities:
        if ename not in out and ename not in raw:
            issues.append(
                StateIssue(ename, "", "", "no counter (leave out 'counters' to have them computed)")
            )
            out[ename] = computed[ename]
    return out


def _invariant_issues(domain: Domain, st: State) -> list[StateIssue]:
    from graphgen.staterules import invariant_violations

    out = []
    for v in invariant_violations(domain, st):
        why = f" ({v.error})" if v.error else ""
        rule = " ".join(v.source.split())
        out.append(StateIssue(v.entity, v.key, "", f"breaks invariant {v.invariant}: {rule}{why}"))
    return out


def import_state(domain: Domain, data: Any, source: str = "<state>") -> State:
    """The state ``data`` (parsed JSON) describes, checked against ``domain``; raises
    :class:`StateImportError` listing every problem when it is not valid.

    >>> from graphgen.domains import load_builtin
    >>> d = load_builtin("mock")
    >>> row = {"email": "a@x.org", "owner": "Ann", "balance": 5, "status": "active"}
    >>> import_state(d, {"tables": {"Account": {"A0001": row}, "Payment": {}}}).counters
    {'Account': 2, 'Payment': 1}
    >>> try:
    ...     import_state(d, {"tables": {"Account": {"A0001": {**row, "balance": -1}}}})
    ... except StateImportError as exc:
    ...     print(exc)
    <state>: 2 problems in the state:
      - Payment: missing table (write {} for an empty one)
      - Account['A0001'].balance: -1 is below the minimum 0
    """
    st, issues = state_problems(domain, data)
    if issues or st is None:
        raise StateImportError(source, issues)
    return st


def import_state_file(domain: Domain, path: str | Path) -> State:
    """:func:`import_state` of a JSON file (repeated keys in it are problems too)."""
    p = Path(path)
    try:
        data = parse_state_json(p.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise StateImportError(
            str(p), [StateIssue("", "", "", f"cannot read the file: {exc}")]
        ) from None
    except json.JSONDecodeError as exc:
        msg = f"not valid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})"
        raise StateImportError(str(p), [StateIssue("", "", "", msg)]) from None
    except (ValueError, RecursionError) as exc:  # NaN, a huge int, deep nesting
        msg = f"not valid JSON: {exc}"
        raise StateImportError(str(p), [StateIssue("", "", "", msg)]) from None
    return import_state(domain, data, str(p))
