"""Count unnatural or false instruction text in task sets (a script, not a test).

Each pattern is one defect of issue 9 (items 5, 9, 10): a phrase a customer would not
write, a relation left ambiguous, or a factual claim the task's own initial state
contradicts. Claims are checked against the state, not the wording: "My flight was
cancelled" is false when the booked flight's status is not ``cancelled``.

Usage::

    .venv/bin/python benchmarks/instruction_text.py FILE.jsonl [FILE.jsonl ...] [--worst 10]
"""

from __future__ import annotations

import argparse
import json
import re
from collections import Counter
from collections.abc import Callable
from typing import Any

Task = dict[str, Any]

# (name, regex over the instruction); a task counts once per pattern.
TEXT_PATTERNS: list[tuple[str, str]] = [
    ("repeated 'X is' clause", r"(?P<c>\b(?:my|the) [a-z ]+? is)\b.*(?P=c)\b"),
    ("identity in several clauses", r"\bmy first name is\b|\bmy last name is\b"),
    ("'Once that's done'", r"Once that's done"),
    ("'with kind <enum>'", r"\bwith kind\b"),
    ("'payment method with balance'", r"payment method with balance"),
    ("'(s)' plural", r"\(s\)"),
    ("bool as 'yes'/'no' value", r"insurance:? (?:yes|no)\b"),
    ("raw enum member with '_'", r"\b(?:gift_card|credit_card|travel_certificate)\b"),
    ("parenthetical referent", r"\((?:my|the) [^)]*\)"),
    ("asks for own given detail", r"\bmy (?:first name|last name|email|zip|name)\b[?.]"),
    (
        "'with <field> <value>' atom",
        r"\b(?:item|order|flight|reservation) with (?!my\b)[a-z_]+ \S+",
    ),
    ("duplicated article", r"\b(?:[Tt]he|[Mm]y) (?:the|my)\b"),
    ("'Today is' inside a request", r"(?<!^)(?<![.!] )(?<!^Hi! )\b[Tt]oday is\b"),
    ("ambiguous 'the airport of'", r"\bthe airport of\b"),
    ("lower-case sentence start", r"[.!?] [a-z]"),
]


def _row(t: Task, ent: str, key: Any) -> dict[str, Any]:
    row: dict[str, Any] = t["initial_state"]["tables"][ent].get(key, {})
    return row


def _writes(t: Task, tool: str) -> list[dict[str, Any]]:
    calls = [c for c in t["chain"] if c["tool"] == tool]
    if t.get("refused_call") and t["refused_call"]["tool"] == tool:
        calls.append(t["refused_call"])
    return [c["args"] for c in calls]


def _cancelled_claim(t: Task) -> bool | None:
    if "My flight was cancelled" not in t["instruction"]:
        return None
    for a in _writes(t, "change_flight"):
        res = _row(t, "Reservation", a["reservation_id"])
        return _row(t, "Flight", res.get("flight_id")).get("status") == "cancelled"
    return False


def _later_claim(t: Task) -> bool | None:
    if "later flight on the same route" not in t["instruction"]:
        return None
    for a in _writes(t, "change_flight"):
        res = _row(t, "Reservation", a["reservation_id"])
        old, new = _row(t, "Flight", res.get("flight_id")), _row(t, "Flight", a["new_flight_id"])
        same = (old.get("origin"), old.get("destination")) == (
            new.get("origin"),
            new.get("destination"),
        )
        return same and str(new.get("date")) > str(old.get("date"))
    return False


def _upgrade_claim(t: Task) -> bool | None:
    m = re.search(r"can I get (\w+) status", t["instruction"])
    return None if m is None else m.group(1) != "regular"


def _fit_claim(t: Task) -> bool | None:
    if "doesn't fit" not in t["instruction"]:
        return None
    for a in _writes(t, "exchange_delivered_order_item"):
        return _row(t, "Item", a["item_id"]).get("size") != _row(t, "Item", a["new_item_id"]).get(
            "size"
        )
    return False


def _today_consistent(t: Task) -> bool | None:
    days = re.findall(r"[Tt]oday is (\d{4}-\d\d-\d\d)", t["instruction"])
    if not days:
        return None
    if len(set(days)) > 1:
        return False
    placed = [
        str(r["placed_on"])
        for r in t["initial_state"]["tables"].get("Order", {}).values()
        if r.get("placed_on")
    ]
    return all(days[0] > p for p in placed)


CLAIMS: list[tuple[str, Callable[[Task], bool | None]]] = [
    ("'My flight was cancelled'", _cancelled_claim),
    ("'a later flight on the same route'", _later_claim),
    ("'can I get X status' (X a downgrade)", _upgrade_claim),
    ("'doesn't fit' (same size)", _fit_claim),
    ("'Today is' (two days, or before an order)", _today_consistent),
]


def badness(t: Task) -> int:
    """How many patterns a task's instruction shows (false claims count double)."""
    n = sum(1 for _, p in TEXT_PATTERNS if re.search(p, t["instruction"]))
    return n + sum(2 for _, f in CLAIMS if f(t) is False)


def report(path: str, worst: int) -> None:
    """Print the counts of every pattern and claim in one task set, and its worst texts."""
    with open(path, encoding="utf-8") as fh:
        lines = fh.read().splitlines()
    tasks = [json.loads(x) for x in lines[1:]]
    print(f"== {path}: {len(tasks)} tasks")
    for name, pat in TEXT_PATTERNS:
        n = sum(1 for t in tasks if re.search(pat, t["instruction"]))
        print(f"  {n:4d}  {name}")
    for name, check in CLAIMS:
        res = Counter(check(t) for t in tasks)
        print(f"  {res[False]:4d}  false of {res[True] + res[False]:3d}  {name}")
    print(f"  worst {worst}:")
    for t in sorted(tasks, key=lambda t: (-badness(t), t["id"]))[:worst]:
        print(f"   [{badness(t)}] {t['id']}: {t['instruction']}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("files", nargs="+")
    ap.add_argument("--worst", type=int, default=10)
    args = ap.parse_args()
    for f in args.files:
        report(f, args.worst)


if __name__ == "__main__":
    main()
