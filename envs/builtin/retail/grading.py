"""The one grading function: did the agent reach the goal, and nothing else?

Pure Python over plain dicts (the JSON form of states and goals), importing only the
standard library, so the environment compiler can ship this very module inside generated
environments: the pipeline and the environments grade with the same code.
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Iterator
from typing import Any

GradeItem = dict[str, Any]


def _rows(state: dict[str, Any]) -> dict[str, dict[str, dict[str, Any]]]:
    tables: dict[str, dict[str, dict[str, Any]]] = state["tables"]
    return tables


Diff = list[tuple[str, str, str, Any, Any]]


def state_diff(before: dict[str, Any], after: dict[str, Any]) -> Diff:
    """(entity, key, field, old, new) for every difference; field '*' = row created/deleted."""
    out: list[tuple[str, str, str, Any, Any]] = []
    a_t, b_t = _rows(before), _rows(after)
    for ent in sorted(set(a_t) | set(b_t)):
        a, b = a_t.get(ent, {}), b_t.get(ent, {})
        for key in sorted(set(a) | set(b)):
            ra, rb = a.get(key), b.get(key)
            if ra is None:
                out.append((ent, key, "*", None, rb))
            elif rb is None:
                out.append((ent, key, "*", ra, None))
            elif ra != rb:
                for f in sorted(set(ra) | set(rb)):
                    if ra.get(f) != rb.get(f):
                        out.append((ent, key, f, ra.get(f), rb.get(f)))
    return out


def _mentions(text: str, value: Any) -> bool:
    """Does the (lower-cased) answer text state ``value``?

    Values must stand alone: 5 is not in "15" nor in "5.9", "active" is not in
    "inactive", and a flag's "no" is not in "know".
    """
    if isinstance(value, bool):
        words = ("yes", "true") if value else ("no", "false")
        return any(re.search(rf"\b{w}\b", text) for w in words)
    if isinstance(value, int):
        pat = rf"(?<![\d.]){value}(?!\.?\d)"
        return re.search(pat, text.replace(",", "")) is not None
    pat = rf"(?<!\w){re.escape(str(value).lower())}(?!\w)"
    return re.search(pat, text) is not None


# Most renamings of created rows tried when grading (the product over entities of the
# permutations of their new keys). Ids of created rows come from per-table counters, so
# making the same rows in another order swaps their ids; the grader therefore accepts any
# consistent renaming of new ids. Beyond this many renamings only the ids as generated
# are tried (a task creating more than 5 rows of one entity would be needed to hit it).
MAX_RENAMINGS = 720

Renaming = dict[tuple[str, str], str]  # (entity, expected new key) -> actual new key


def _new_keys(initial: dict[str, Any], keys: dict[str, set[str]]) -> dict[str, list[str]]:
    """Per entity, the sorted keys in ``keys`` that the initial state does not have."""
    old = _rows(initial)
    out = {e: sorted(k for k in ks if k not in old.get(e, {})) for e, ks in keys.items()}
    return {e: ks for e, ks in sorted(out.items()) if ks}


def renamings(
    initial: dict[str, Any], final: dict[str, Any], changes: list[dict[str, Any]]
) -> Iterator[Renaming]:
    """The consistent renamings of created rows' ids to try, the identity first.

    A renaming is, per entity, a bijection from the keys the changes create (absent from
    ``initial``) onto the keys ``final`` has and ``initial`` does not. When the numbers
    differ for some entity no bijection exists and only the identity is offered (grading
    then reports the missing or extra rows); likewise when there would be more than
    :data:`MAX_RENAMINGS` of them.
    """
    wanted: dict[str, set[str]] = {}
    for c in changes:
        wanted.setdefault(c["entity"], set()).add(c["key"])
    expected = _new_keys(initial, wanted)
    actual = _new_keys(initial, {e: set(_rows(final).get(e, {})) for e in expected})
    yield {}
    if not expected or any(len(actual.get(e, [])) != len(ks) for e, ks in expected.items()):
        return
    if math.prod(math.factorial(len(ks)) for ks in expected.values()) > MAX_RENAMINGS:
        return
    ents = list(expected)
    for images in itertools.product(*(itertools.permutations(actual[e]) for e in ents)):
        ren = {
            (e, k): v
            for e, image in zip(ents, images, strict=True)
            for k, v in zip(expected[e], image, strict=True)
        }
        if any(k != v for (_, k), v in ren.items()):
            yield ren


def _renamed_value(v: Any, names: dict[str, str]) -> Any:
    if isinstance(v, str):
        return names.get(v, v)
    if isinstance(v, list):
        return [_renamed_value(x, names) for x in v]
    if isinstance(v, dict):
        return {k: _renamed_value(x, names) for k, x in v.items()}
    return v


def rename_changes(changes: list[dict[str, Any]], ren: Renaming) -> list[dict[str, Any]] | None:
    """``changes`` with created rows' keys renamed by ``ren``, and every value naming
    one of those keys (a reference to a new row) renamed with it.

    Values carry no type here, so a string is renamed wherever it equals a renamed key;
    None when one string is a new key of two entities renamed differently (ambiguous).
    """
    names: dict[str, str] = {}
    for (_, k), v in ren.items():
        if names.setdefault(k, v) != v:
            return None
    # ``before`` values come from the initial state, which holds no new id.
    return [
        {
            **c,
            "key": ren.get((c["entity"], c["key"]), c["key"]),
            "after": _renamed_value(c.get("after"), names),
        }
        for c in changes
    ]


def changes_hold(
    state: dict[str, Any], changes: list[dict[str, Any]], initial: dict[str, Any] | None = None
) -> bool:
    """Does every change's ``after`` hold on ``state``? A row change (field '*') holds
    when the row exists with exactly those values, or is absent if ``after`` is None.

    With ``initial``, rows the changes create may hold under any consistent renaming of
    their new ids (:func:`renamings`); without it, only under the ids as written.
    """
    if initial is None:
        return _changes_hold(state, changes)
    for ren in renamings(initial, state, changes):
        renamed = rename_changes(changes, ren) if ren else changes
        if renamed is not None and _changes_hold(state, renamed):
            return True
    return False


def _changes_hold(state: dict[str, Any], changes: list[dict[str, Any]]) -> bool:
    tables = _rows(state)
    for c in changes:
        row = tables.get(c["entity"], {}).get(c["key"])
        after = c.get("after")
        if c["field"] == "*":
            if row != after:  # None for a deleted row: absent; else exactly these values
                return False
        elif row is None or c["field"] not in row or row[c["field"]] != after:
            return False
    return True


def grade(
    initial: dict[str, Any], final: dict[str, Any], goal: dict[str, Any], answer: str | None = None
) -> dict[str, Any]:
    """Grade a final state (and the agent's answer text) against a task's goal.

    ``goal`` is ``{"changes": [{entity, key, field, before, after}], "answer": [values]}``.
    Success needs every expected change, no other change, and every answer value
    mentioned in ``answer``. An entry whose ``before`` equals its ``after`` is a value the
    request pins (written, but to the value it already had): it must hold at the end.
    Rows created during the episode are matched up to a consistent renaming of their
    new ids (:func:`renamings`): creating the same rows in another order passes. The
    items reported are those of the first renaming under which every check holds, else
    those under the ids as written.
    Returns ``{"success": bool, "items": [...]}`` where each item is ``{"check", "ok",
    "detail"}``.

    >>> s0 = {"tables": {"A": {"a1": {"n": 1}}}, "counters": {"A": 2}}
    >>> s1 = {"tables": {"A": {"a1": {"n": 2}}}, "counters": {"A": 2}}
    >>> g = {"changes": [{"entity": "A", "key": "a1", "field": "n", "before": 1, "after": 2}]}
    >>> grade(s0, s1, g)["success"], grade(s0, s0, g)["success"]
    (True, False)
    """
    changes: list[dict[str, Any]] = list(goal.get("changes", []))
    actual = {(e, k, f): (x, y) for e, k, f, x, y in state_diff(initial, final)}
    first: list[GradeItem] | None = None
    for ren in renamings(initial, final, changes):
        renamed = rename_changes(changes, ren) if ren else changes
        if renamed is None:
            continue
        items = _change_items(final, renamed, actual)
        if first is None:
            first = items
        if all(i["ok"] for i in items):
            first = items
            break
    items = list(first or [])
    text = (answer or "").lower()
    for v in goal.get("answer", []):
        items.append(
            {
                "check": f"answer mentions {v!r}",
                "ok": _mentions(text, v),
                "detail": "" if answer else "no answer given",
            }
        )
    return {"success": all(i["ok"] for i in items), "items": items}


def _change_items(
    final: dict[str, Any],
    changes: list[dict[str, Any]],
    actual: dict[tuple[str, str, str], tuple[Any, Any]],
) -> list[GradeItem]:
    """The state checks: each expected change (or pinned value), then "no other changes"."""
    items: list[GradeItem] = []
    expected = {(c["entity"], c["key"], c["field"]): c for c in changes}
    for (e, k, f), c in sorted(expected.items()):
        if f != "*" and c.get("before") == c.get("after"):
            # A value the user specified that happens to equal the old one: it must
            # still hold at the end (the request pins it), though it is not a change.
            row = _rows(final).get(e, {}).get(k)
            now = "missing" if row is None else repr(row.get(f))
            items.append(
                {
                    "check": f"keep {e} {k} {f}",
                    "ok": row is not None and row.get(f) == c.get("after"),
                    "detail": f"want {c.get('after')!r}, got {now}",
                }
            )
            continue
        got = actual.get((e, k, f))
        ok = got is not None and got[1] == c.get("after")
        shown = "missing" if got is None else repr(got[1])
        items.append(
            {
                "check": f"change {e} {k} {f}",
                "ok": ok,
                "detail": f"want {c.get('after')!r}, got {shown}",
            }
        )
    extra = sorted(set(actual) - set(expected))
    items.append(
        {
            "check": "no other changes",
            "ok": not extra,
            "detail": ", ".join(f"{e} {k} {f}" for e, k, f in extra[:10]),
        }
    )
    return items


def expected_final(initial: dict[str, Any], goal: dict[str, Any]) -> dict[str, Any]:
    """The state the goal describes: ``initial`` with every expected change applied."""
    tables = {e: {k: dict(r) for k, r in t.items()} for e, t in _rows(initial).items()}
    for c in goal.get("changes", []):
        t = tables.setdefault(c["entity"], {})
        if c["field"] == "*":
            if c.get("after") is None:
                t.pop(c["key"], None)
            else:
                t[c["key"]] = dict(c["after"])
        else:
            t[c["key"]][c["field"]] = c.get("after")
    return {"tables": tables, "counters": dict(initial.get("counters", {}))}
