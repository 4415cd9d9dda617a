"""Write the hostile-input corpus: domain files and task files that must be rejected.

Run ``python tests/data/hostile/make_hostile.py`` (``make regen`` does) after a change to
the mock domain or the task format. Each domain file starts with ``# expect: <words>`` (``a | b``: either);
``tasks/expected.json`` gives, per task file, the line and the words of its error.
Every case is a finding of the hostile-input review; ``tests/test_hostile_corpus.py``
checks each is rejected with its located message.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

HERE = Path(__file__).parent
ROOT = HERE.parents[2]
MOCK = (ROOT / "graphgen" / "domains" / "mock.yaml").read_text(encoding="utf-8")
GOOD = (ROOT / "tests" / "data" / "good_mock.jsonl").read_text(encoding="utf-8").splitlines()
OTHER = (ROOT / "tests" / "data" / "good_retail.jsonl").read_text(encoding="utf-8").splitlines()

LOCKED = "message: \"the account is locked\""


def _mock(old: str, new: str) -> str:
    assert old in MOCK, old
    return MOCK.replace(old, new, 1)


def _laughs(levels: int) -> str:
    lines = ['x-laughs:', '  l0: &l0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    for i in range(1, levels + 1):
        refs = ", ".join([f"*l{i - 1}"] * 8)
        lines.append(f"  l{i}: &l{i} [{refs}]")
    return MOCK + "\n".join(lines) + "\n"


NESTED_ANY = (
    "any(any(any(any(d.balance > 0 for d in Account) for c in Account) "
    "for b in Account) for a in Account)"
)

DOMAINS: dict[str, tuple[str, str]] = {
    # finding 5: message templates with braces
    "message-brace-set": (
        "placeholder {active, locked} is not a parameter",
        _mock(LOCKED, 'message: "must be one of {active, locked}"'),
    ),
    "message-positional": (
        "placeholder {0} is not a parameter",
        _mock(LOCKED, 'message: "account {0} is locked"'),
    ),
    "message-named-escape": (
        "placeholder {BULLET} is not a parameter",
        _mock(LOCKED, "message: 'locked \\N{BULLET} try later'"),
    ),
    "message-attribute": (
        "placeholder {account_id.__class__} is not a parameter",
        _mock(LOCKED, 'message: "{account_id.__class__} is locked"'),
    ),
    "message-format-spec": (
        "bad format spec",
        _mock(LOCKED, 'message: "{account_id:>999999999} is locked"'),
    ),
    # finding 7: alias expansion in the line tracker
    "alias-eight-levels": ("aliases expand the file past", _laughs(8)),
    # finding 9: a self-referencing alias, 20,000 '['
    "alias-self": ("an alias refers to a node that contains it", MOCK + "x-loop: &loop [*loop]\n"),
    "deep-brackets": ("nested deeper than", MOCK + "x-deep: " + "[" * 20000 + "\n"),
    # finding 6: a 3,700-digit hex literal
    "hex-literal": (
        "integer literal with more than",
        _mock(
            "\"Account[account_id].balance >= amount\"",
            '"Account[account_id].balance >= 0x' + "f" * 3700 + '"',
        ),
    ),
    "yaml-int-digits": (
        "integer with more than",
        _mock("size: 6", "size: 0x" + "f" * 3700),
    ),
    # finding 7: size: 100000000 ends in MemoryError
    "size-huge": ("must be at most 100000", _mock("size: 6", "size: 100000000")),
    # finding 7: nested aggregates unbounded
    "aggregate-cost": (
        "too costly",
        _mock("size: 6", "size: 40").replace(
            "requires: \"Account[account_id].status == 'active'\"", f'requires: "{NESTED_ANY}"'
        ),
    ),
    # finding 9: a 3,000-char vocab name
    "vocab-long-name": ("vocab hint", _mock("vocab: person_name", "vocab: " + "a" * 3000)),
    # finding 9: lone surrogates and NUL bytes in text
    "surrogate": (
        # PyYAML reads the escape as a lone surrogate, libyaml refuses it: either way.
        "lone surrogate U+D800 | invalid Unicode character escape",
        _mock('description: "The account id."', 'description: "The \\ud800 id."'),
    ),
    "nul-byte": (
        "control character U+0000",
        _mock('description: "The account id."', 'description: "The \\0 id."'),
    ),
    "long-text": (
        "characters; the limit is 20000",
        _mock('description: "The account id."', 'description: "' + "ab " * 7000 + '"'),
    ),
    "long-name": (
        "characters; the limit is",
        _mock("      owner: {type: str", "      " + "o" * 200 + ": {type: str"),
    ),
    # found by the fuzzer: "$" of a name pattern matched before a final newline
    "tool-name-newline": ("tool names must match", _mock("  deposit:\n", '  "deposit\\n":\n')),
    # finding 9: markup in shared enum names breaking the PNG export
    "enum-name-markup": (
        "enum names are identifiers",
        MOCK.replace("entities:\n", 'enums:\n  "$\\\\frac{[/]x}$": [a, b]\nentities:\n', 1),
    ),
}


def _task(i: int = 1) -> dict[str, Any]:
    obj: dict[str, Any] = json.loads(GOOD[i])
    return obj


def _lines(*tasks: dict[str, Any] | str, manifest: dict[str, Any] | None = None) -> str:
    head = json.loads(GOOD[0])
    if manifest is not None:
        head["manifest"].update(manifest)
    head["manifest"]["accepted"] = len(tasks)
    rows = [json.dumps(head, sort_keys=True)]
    rows += [t if isinstance(t, str) else json.dumps(t, sort_keys=True) for t in tasks]
    return "\n".join(rows) + "\n"


def _edit(path: str, value: Any, delete: bool = False) -> dict[str, Any]:
    t = _task()
    *parents, last = path.split(".")
    cur: Any = t
    for p in parents:
        cur = cur[int(p)] if isinstance(cur, list) else cur[p]
    if delete:
        del cur[last]
    elif isinstance(cur, list):
        cur[int(last)] = value
    else:
        cur[last] = value
    return t


def _first_account(t: dict[str, Any]) -> str:
    return sorted(t["initial_state"]["tables"]["Account"])[0]


def _tasks() -> dict[str, tuple[int, str, str | bytes]]:
    """name -> (line of the error, words of the error, file content)."""
    t = _task()
    acct = _first_account(t)
    other = json.loads(OTHER[1])
    deep = _task()
    dup = _task(2)
    twin = {**_task(), "id": "mock-1-twin"}
    bad_utf8 = _lines(_task()).encode("utf-8").replace(b'"instruction": "', b'"instruction": "\xff')
    action = next(json.loads(x) for x in GOOD[1:] if json.loads(x)["kind"] == "action")
    refused = {**action, "refused_call": action["chain"][-1]}
    return {
        # finding 4: wrong field type, missing field or counter, bad UTF-8, nesting
        "wrong-type": (2, "seed: input should be a valid integer", _lines(_edit("seed", "1"))),
        "missing-field": (2, "goal: field required", _lines(_edit("goal", None, delete=True))),
        "missing-counter": (
            2,
            "initial_state.counters: counters for ['Account']",
            _lines(_edit("initial_state.counters.Payment", None, delete=True)),
        ),
        "invalid-utf8": (2, "invalid UTF-8", bad_utf8),
        "deep-nesting": (2, "nested deeper than", _lines(json.dumps(deep)[:-1] + ',"x":' + "[" * 100_000 + "]" * 100_000 + "}")),
        # finding 4: what crashed eval
        "other-domain": (2, "a task of domain 'retail', not 'mock'", _lines(other)),
        "unknown-enum": (
            2,
            "expected one of 'active', 'locked'",
            _lines(_edit(f"initial_state.tables.Account.{acct}.status", "frozen")),
        ),
        "extra-table": (
            2,
            "Ledger: unknown table",
            _lines(_edit("initial_state.tables.Ledger", {})),
        ),
        "extra-field": (
            2,
            "nickname: unknown field",
            _lines(_edit(f"initial_state.tables.Account.{acct}.nickname", "x")),
        ),
        "nan": (2, "NaN is not a number JSON allows", _lines(json.dumps(t).replace('"seed": 1', '"seed": NaN'))),
        "infinity": (2, "Infinity is not a number JSON allows", _lines(json.dumps(t).replace('"seed": 1', '"seed": -Infinity'))),
        "huge-int": (2, "not valid JSON", _lines(json.dumps(t).replace('"seed": 1', '"seed": ' + "9" * 5000))),
        # finding 4: what verify accepted
        "duplicate-id": (3, "id repeats line 2", _lines(_task(), {**dup, "id": t["id"]})),
        "duplicate-body": (3, "the same task as line 2 (only the id differs)", _lines(_task(), twin)),
        "missing-row": (
            2,
            "Account 'A999' does not exist",
            _lines(_edit("initial_state.tables.Payment.P001.account_id", "A999")),
        ),
        "missing-table": (
            2,
            "Payment: missing table",
            _lines(_edit("initial_state.tables.Payment", None, delete=True)),
        ),
        "action-with-refused-call": (
            2,
            "an action task carries no refused call",
            _lines(refused),
        ),
        "wrong-manifest-hash": (
            1,
            "domain_hash '0000000000000000' is not the hash of domain 'mock'",
            _lines(manifest={"domain_hash": "0000000000000000"}),
        ),
        "change-wrong-type": (
            2,
            "goal.changes[0].after: 'locked!' must be one of",
            _lines(_edit("goal.changes.0.after", "locked!")),
        ),
    }


def main() -> None:
    for name, (expect, text) in DOMAINS.items():
        body = f"# expect: {expect}\n{text}"
        (HERE / "domains" / f"{name}.yaml").write_text(body, encoding="utf-8", errors="surrogatepass")
    expected: dict[str, dict[str, Any]] = {}
    for name, (line, words, content) in _tasks().items():
        path = HERE / "tasks" / f"{name}.jsonl"
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")
        expected[path.name] = {"line": line, "message": words}
    (HERE / "tasks" / "expected.json").write_text(
        json.dumps(expected, indent=1, sort_keys=True) + "\n", encoding="utf-8"
    )


if __name__ == "__main__":
    main()
