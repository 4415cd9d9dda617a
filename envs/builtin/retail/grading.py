"""The one grading function: did the agent reach the goal, and nothing else?

Pure Python over plain dicts (the JSON form of states and goals), importing only the
standard library, so the environment compiler can ship this very module inside generated
environments: the pipeline and the environments grade with the same code.
"""

from __future__ import annotations

import re
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


def changes_hold(state: dict[str, Any], changes: list[dict[str, Any]]) -> bool:
    """Does every change's ``after`` hold on ``state``? A row change (field '*') holds
    when the row exists with exactly those values, or is absent if ``after`` is None."""
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
    Returns ``{"success": bool, "items": [...]}`` where each item is ``{"check", "ok",
    "detail"}``.

    >>> s0 = {"tables": {"A": {"a1": {"n": 1}}}, "counters": {"A": 2}}
    >>> s1 = {"tables": {"A": {"a1": {"n": 2}}}, "counters": {"A": 2}}
    >>> g = {"changes": [{"entity": "A", "key": "a1", "field": "n", "before": 1, "after": 2}]}
    >>> grade(s0, s1, g)["success"], grade(s0, s0, g)["success"]
    (True, False)
    """
    items: list[GradeItem] = []
    expected = {(c["entity"], c["key"], c["field"]): c for c in goal.get("changes", [])}
    actual = {(e, k, f): (x, y) for e, k, f, x, y in state_diff(initial, final)}
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
