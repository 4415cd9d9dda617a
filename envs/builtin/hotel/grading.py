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


def _rows(state: dict[str, Any]) -> dict[str, dict[Any, dict[str, Any]]]:
    """The tables of ``state``, with the ids of the tables its ``int_keys`` lists as
    ints: JSON writes int id 3 as the object key "3", goals name it 3."""
    tables: dict[str, dict[Any, dict[str, Any]]] = state["tables"]
    ints = state.get("int_keys") or ()
    if not ints:
        return tables
    return {e: ({int(k): r for k, r in t.items()} if e in ints else t) for e, t in tables.items()}


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


_MONTHS = (
    "january", "february", "march", "april", "may", "june",
    "july", "august", "september", "october", "november", "december",
)  # fmt: skip
_ISO_DATE = re.compile(r"(\d{4})-(\d{2})-(\d{2})")
# A word that makes the mention after it a denial, in the same clause (no punctuation
# between): "not cancelled", "hasn't been delayed", "can no longer be changed" — not
# "no, 4, cancelled".
_NEGATED = re.compile(
    r"(?:\bnot|\bnever|\bno|\bnor|\bwithout|n't)(?:\s+\w+){0,2}(?:\s+\w+\s+(?:or|nor))?\s+$"
)
# A rule or a prospect, not the row's state: "only a pending order can be cancelled",
# "it will be delivered". (No "could/may/might be": those are what a hedge says.)
_MODAL = re.compile(r"\b(?:can|will|would|should|must)(?:\s+\w+)?\s+be(?:\s+\w+\s+(?:or|and))?\s+$")
# A verb, not a status: "scheduled to depart", "scheduled for 10:05" or "for May 20" (a
# plan and its time); but "delivered to your address" states it.
_INFINITIVE = re.compile(
    r"\s+to\s+(?!(?:the|a|an|your|my|his|her|their|our|its|this|that|you|me|us|them)\b|\d)\w"
    r"|\s+for\s+(?:\d|today\b|tomorrow\b|tonight\b|(?:" + "|".join(_MONTHS) + r")\b)"
)


def normalize_answer(answer: str) -> str:
    """The answer text as the mention patterns read it: lower case, and no thousands
    separators ("1,324" is 1324; "5,15" stays two numbers)."""
    return re.sub(r"(?<=\d),(?=\d{3}(?!\d))", "", answer.lower())


def _number_pattern(n: int) -> str:
    # "$324", "324", "324.00" all say 324; "1324", "32.4" and "3245" do not.
    sign = "-" if n < 0 else ""
    return rf"(?<![\w.]){sign}\$?{abs(n)}(?:\.0+)?(?!\d|[.,]\d)"


def _date_pattern(y: str, m: str, d: str) -> str:
    month = _MONTHS[int(m) - 1]
    names = f"(?:{month}|{month[:3]}{'|sept' if month == 'september' else ''})\\.?"
    day = rf"0?{int(d)}(?:st|nd|rd|th)?"
    forms = (
        rf"{y}-{m}-{d}",
        rf"{y}/{m}/{d}",
        rf"{names} {day},? {y}",
        rf"{day} (?:of )?{names},? {y}",
        rf"0?{int(m)}/0?{int(d)}/{y}",
    )
    return r"(?<![\w/-])(?:" + "|".join(forms) + r")(?![\w/-])"


def mention_pattern(value: Any) -> str:
    """The regular expression (over :func:`normalize_answer` text) for ``value`` said the
    way a person writes it.

    An enum member or word reads with ``_`` as a space or a hyphen ("gift card"); a whole
    number with an optional ``$`` and ``.00``; an ISO date also as "2026/05/20",
    "May 20, 2026", "20 May 2026" or "5/20/2026"; a flag as yes/no or true/false. Values
    stand alone: 5 is not in "15" nor in "5.9", "active" is not in "inactive".
    """
    if isinstance(value, bool):
        return r"\b(?:yes|true)\b" if value else r"\b(?:no|false)\b"
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, int):
        return _number_pattern(value)
    text = str(value).lower()
    date = _ISO_DATE.fullmatch(text)
    if date:
        return _date_pattern(*date.groups())
    parts = [re.escape(p) for p in re.split(r"[ _-]+", text)]
    return r"(?<!\w)" + r"[ _-]+".join(parts) + r"(?!\w)"


def _mentions(text: str, value: Any) -> bool:
    """Does the (normalized) answer text state ``value``, in any common form?"""
    return re.search(mention_pattern(value), text) is not None


def _affirms(text: str, value: Any) -> bool:
    """Does the text mention ``value`` other than to deny it? "It is not exchanged"
    does not say that the order is exchanged; "it can be returned" and "scheduled to
    depart" still say what they name. A flag is never read as denied."""
    if isinstance(value, bool):
        return _mentions(text, value)
    return any(
        not _NEGATED.search(text[: m.start()]) for m in re.finditer(mention_pattern(value), text)
    )


def _asserts(text: str, value: Any) -> bool:
    """Does the text state ``value`` as a fact? Not when it denies it ("it hasn't been
    cancelled"), states a rule or a prospect with it ("only a pending order can be
    cancelled", "it will be delivered"), or uses it as a verb ("scheduled to depart").
    A flag is never read as denied."""
    if isinstance(value, bool):
        return _mentions(text, value)
    for m in re.finditer(mention_pattern(value), text):
        before = text[: m.start()]
        if _NEGATED.search(before) or _MODAL.search(before):
            continue
        if _INFINITIVE.match(text, m.end()):
            continue
        return True
    return False


def answer_items(goal: dict[str, Any], answer: str | None) -> list[GradeItem]:
    """The answer checks of :func:`grade`.

    ``goal["answer"]``: every value must be mentioned, and not only denied ("it is not
    exchanged" does not answer "exchanged"). ``goal["answer_any"]``: groups (each one
    true reason or answer); the values of at least one group must all be mentioned so.
    ``goal["answer_not"]``: values that contradict the right answer (another
    status, another row's value of the same field); asserting any of them fails, so an
    answer that lists every candidate does not pass.
    """
    text = normalize_answer(answer or "")
    missing = "" if answer else "no answer given"
    items: list[GradeItem] = []
    for v in goal.get("answer", []):
        items.append(
            {"check": f"answer mentions {v!r}", "ok": _affirms(text, v), "detail": missing}
        )
    groups = goal.get("answer_any") or []
    if groups:
        ok = any(all(_affirms(text, v) for v in g) for g in groups)
        shown = " | ".join(" + ".join(repr(v) for v in g) for g in groups)
        items.append({"check": f"answer mentions one of {shown}", "ok": ok, "detail": missing})
    wrong = goal.get("answer_not") or []
    if wrong:
        said = [v for v in wrong if _asserts(text, v)]
        items.append(
            {
                "check": "answer contradicts nothing",
                "ok": not said,
                "detail": ", ".join(f"states {v!r}" for v in said),
            }
        )
    return items


# Most renamings of created rows tried when grading (the product over entities of the
# permutations of their new keys). Ids of created rows come from per-table counters, so
# making the same rows in another order swaps their ids; the grader therefore accepts any
# consistent renaming of new ids. Beyond this many renamings only the ids as generated
# are tried (a task creating more than 5 rows of one entity would be needed to hit it).
MAX_RENAMINGS = 720

Renaming = dict[tuple[str, Any], Any]  # (entity, expected new key) -> actual new key


def _new_keys(initial: dict[str, Any], keys: dict[str, set[Any]]) -> dict[str, list[Any]]:
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
    wanted: dict[str, set[Any]] = {}
    for c in changes:
        wanted.setdefault(c["entity"], set()).add(c["key"])
    expected = _new_keys(initial, wanted)
    yield {}
    if not expected:
        return
    # a pass over every row of the final tables: only once the identity did not do
    actual = _new_keys(initial, {e: set(_rows(final).get(e, {})) for e in expected})
    if any(len(actual.get(e, [])) != len(ks) for e, ks in expected.items()):
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


def _renamed_value(v: Any, names: dict[Any, Any]) -> Any:
    # Int ids (``type: int`` keys) are renamed like string ids; a bool is no id even
    # though True == 1.
    if isinstance(v, str | int) and not isinstance(v, bool):
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
    names: dict[Any, Any] = {}
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

    ``goal`` is ``{"changes": [{entity, key, field, before, after}], "answer": [values]}``,
    optionally with ``answer_any`` and ``answer_not`` (:func:`answer_items`). Success
    needs every expected change, no other change, and the answer checks. An entry whose
    ``before`` equals its ``after`` is a value the request pins (written, but to the
    value it already had): it must hold at the end. Rows created during the episode are
    matched up to a consistent renaming of their new ids (:func:`renamings`): creating
    the same rows in another order passes. The items reported are those of the first
    renaming under which every check holds, else those under the ids as written.

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
    items.extend(answer_items(goal, answer))
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
