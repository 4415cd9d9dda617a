"""The worked example of docs/porting.md, replayed: a plain-Python tool API against its port.

``docs/porting/todo_service.py`` is a to-do service written as ordinary Python;
``docs/porting/todo.yaml`` is its port into the domain language. The same seeded random
call sequences — valid calls, unknown ids, invalid values, calls that fail softly — run on
the original, on the package the code generator compiles from the port (what a user gets
from ``graphgen compile``), and on the reference interpreter. After every call the three
must agree exactly: the same result (compared raw, types and key order included), the same
outcome (success, or an error of the same class: ``KeyError`` is a ``not_found`` error,
``ValueError`` any other) and the same state (the original's objects written out in the
state's JSON form).
"""

from __future__ import annotations

import importlib.util
import itertools
import json
import random
import re
import sys
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from graphgen.domain import Domain
from graphgen.envs.codegen import write_package
from graphgen.errors import ToolError
from graphgen.interp import call_tool
from graphgen.load import load_domain
from graphgen.state import State
from graphgen.stateimport import StateImportError, import_state

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "docs" / "porting"

SEQUENCES = 1000  # issue 10: at least 1,000 random sequences
FAST_SEQUENCES = 60
CALLS = 24  # calls per sequence

_unique = itertools.count()


def _import(name: str, init: Path, package: bool) -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        name, init, submodule_search_locations=[str(init.parent)] if package else None
    )
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


@dataclass
class Ported:
    """The three implementations of the to-do tools."""

    original: ModuleType  # todo_service.py
    domain: Domain  # todo.yaml, loaded
    package: ModuleType  # the compiled package: Db, call_tool, ToolError


@pytest.fixture(scope="module")
def ported(tmp_path_factory: pytest.TempPathFactory) -> Ported:
    original = _import(f"todo_service_{next(_unique)}", EXAMPLE / "todo_service.py", False)
    domain = load_domain(EXAMPLE / "todo.yaml")
    out = tmp_path_factory.mktemp("porting") / "todo_env"
    write_package(domain, out)
    package = _import(f"todo_env_{next(_unique)}", out / "__init__.py", True)
    return Ported(original, domain, package)


# ============================================================================ the original's state


def state_of(service: Any) -> dict[str, Any]:
    """The original's state in the JSON form of a graphgen state (``State.to_dict``)."""
    projects = {
        k: {"name": p.name, "archived": p.archived} for k, p in sorted(service.projects.items())
    }
    tasks = {
        k: {
            "project_id": t.project_id,
            "title": t.title,
            "due": t.due,
            "priority": t.priority,
            "done": t.done,
            "spent": str(t.spent),
        }
        for k, t in sorted(service.tasks.items())
    }
    out: dict[str, Any] = {
        "tables": {"Project": projects, "Task": tasks},
        "counters": {"Project": service.next_project_id, "Task": service.next_task_id},
    }
    # The tables whose ids are ints (JSON text writes them as strings): those with rows.
    if int_keys := [name for name, rows in out["tables"].items() if rows]:
        out["int_keys"] = int_keys
    return out


# ============================================================================ random calls

_WORDS = ["Garden", "garden", "Taxes", "Groceries", "Read", "Paint", "Straße", "İzmir", "ÉTÉ"]
_TITLES = [
    "Buy milk",
    "buy MILK and eggs",
    "Call the plumber",
    "File taxes",
    "Paint the fence",
    "Read 'Dune'",
    "Pay rent {now}",
    "Straße fegen",
    "x",
]
_BAD_TITLES = ["", "a" * 81]
_DATES = ["2026-01-31", "2026-02-28", "2026-12-01", "2027-06-15"]
_BAD_DATES = ["2026-02-30", "tomorrow", "2026-3-1", "20260301", "2026-13-01", "2026-W09-1"]
_HOURS = ["0.01", "0.5", "1", "1.25", "2.50", "7.75", "24.00", "24"]
_BAD_HOURS = ["0", "0.00", "-1", "24.01", "1.255", "100"]


def _pick_id(rng: random.Random, ids: list[int]) -> int:
    if ids and rng.random() < 0.85:
        return rng.choice(ids)
    return rng.choice([0, -1, max(ids, default=0) + 1, 10**6])


def _query(rng: random.Random, titles: list[str]) -> str:
    r = rng.random()
    if r < 0.1:
        return rng.choice(["", "q"])
    titles = [t for t in titles if t]
    if r < 0.7 and titles:
        t = rng.choice(titles)
        i = rng.randrange(len(t))
        q = t[i : i + rng.randint(2, 6)]
        return rng.choice([q, q.upper(), q.lower(), q.swapcase()])
    return rng.choice(["milk", "zz", "the", "STRASSE", "i̇z", "ét"])


def random_call(rng: random.Random, service: Any) -> tuple[str, dict[str, Any]]:
    """A call of one tool with Python arguments; optional arguments are left out or ``None``."""
    pids = list(service.projects)
    tids = list(service.tasks)
    tool = rng.choice(
        [
            "add_project",
            "find_project",
            "archive_project",
            "project_summary",
            "add_task",
            "add_task",
            "add_task",
            "get_task",
            "list_tasks",
            "search_tasks",
            "edit_task",
            "edit_task",
            "complete_task",
            "reopen_task",
            "log_time",
            "log_time",
            "delete_task",
        ]
    )
    args: dict[str, Any] = {}
    if tool == "add_project":
        r = rng.random()
        if r < 0.1:
            args["name"] = ""
        elif r < 0.3 and service.projects:
            name = rng.choice(list(service.projects.values())).name
            args["name"] = rng.choice([name, name.upper(), name.lower()])
        else:
            args["name"] = f"{rng.choice(_WORDS)} {rng.randint(1, 99)}"
    elif tool == "find_project":
        names = [p.name for p in service.projects.values()]
        args["name"] = rng.choice(names) if names and rng.random() < 0.7 else rng.choice(_WORDS)
    elif tool in ("archive_project", "project_summary"):
        args["project_id"] = _pick_id(rng, pids)
    elif tool == "list_tasks":
        args["project_id"] = _pick_id(rng, pids)
        if rng.random() < 0.6:
            args["include_done"] = rng.random() < 0.5
    elif tool == "search_tasks":
        args["query"] = _query(rng, [t.title for t in service.tasks.values()])
    elif tool == "add_task":
        args["project_id"] = _pick_id(rng, pids)
        args["title"] = rng.choice(_TITLES if rng.random() < 0.9 else _BAD_TITLES)
        if rng.random() < 0.5:
            args["due"] = rng.choice(_DATES if rng.random() < 0.85 else _BAD_DATES)
        elif rng.random() < 0.2:
            args["due"] = None
        if rng.random() < 0.6:
            args["priority"] = rng.randint(0, 5) if rng.random() < 0.2 else rng.randint(1, 4)
    elif tool == "edit_task":
        args["task_id"] = _pick_id(rng, tids)
        for name, good, bad in (
            ("title", _TITLES, _BAD_TITLES),
            ("due", _DATES, _BAD_DATES),
            ("priority", [1, 2, 3, 4], [0, 5, -3]),
        ):
            r = rng.random()
            if r < 0.35:
                args[name] = rng.choice(good if rng.random() < 0.85 else bad)
            elif r < 0.45:
                args[name] = None
    elif tool == "log_time":
        args["task_id"] = _pick_id(rng, tids)
        args["hours"] = Decimal(rng.choice(_HOURS if rng.random() < 0.85 else _BAD_HOURS))
    else:  # get_task, complete_task, reopen_task, delete_task
        args["task_id"] = _pick_id(rng, tids)
    return tool, args


def json_args(args: dict[str, Any]) -> dict[str, Any]:
    """The same call as a JSON object, as an agent sends it (a decimal as a string)."""
    return {k: str(v) if isinstance(v, Decimal) else v for k, v in args.items()}


def seed_service(original: ModuleType, rng: random.Random) -> Any:
    """A service with a few projects and tasks, made through its own methods."""
    service = original.TodoService()
    for i in range(rng.randint(1, 3)):
        service.add_project(f"{rng.choice(_WORDS)} {i}")
    for _ in range(rng.randint(0, 7)):
        pid = rng.choice(list(service.projects))
        due = rng.choice([None, *_DATES])
        out = service.add_task(pid, rng.choice(_TITLES), due, rng.randint(1, 4))
        if rng.random() < 0.3:
            service.complete_task(out["task_id"])
        if rng.random() < 0.3:
            service.log_time(out["task_id"], Decimal(rng.choice(_HOURS)))
    if rng.random() < 0.3:
        service.archive_project(rng.choice(list(service.projects)))
    return service


# ============================================================================ comparing


def same(a: Any, b: Any) -> bool:
    """Equal values of the same types, dicts with keys in the same order: no normalisation."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def _error_class(kind: str) -> str:
    return "KeyError" if kind == "not_found" else "ValueError"


Outcome = tuple[str, Any]


def _run(fn: Callable[..., Any], args: tuple[Any, ...], error: type[BaseException]) -> Outcome:
    try:
        return "ok", fn(*args)
    except error as exc:
        return "err", _error_class(exc.kind)  # type: ignore[attr-defined]


@dataclass
class Tally:
    calls: int = 0
    outcomes: Counter[tuple[str, str]] = field(default_factory=Counter)
    differences: list[str] = field(default_factory=list)


def replay(p: Ported, seeds: range, tally: Tally, interpreter: bool = True) -> None:
    """Run one random sequence per seed on all implementations, comparing after each call."""
    for seed in seeds:
        rng = random.Random(seed)
        service = seed_service(p.original, rng)
        start = state_of(service)
        db = p.package.Db.from_state(start)
        st = State.from_dict(start, p.domain)
        for step in range(CALLS):
            tool, args = random_call(rng, service)
            try:
                expected: Outcome = ("ok", getattr(service, tool)(**args))
            except (KeyError, ValueError) as exc:
                expected = ("err", type(exc).__name__)
            sent = json_args(args)
            got = {"compiled": _run(p.package.call_tool, (db, tool, sent), p.package.ToolError)}
            if interpreter:
                got["interpreter"] = _run(call_tool, (p.domain, st, tool, sent), ToolError)
            want_state = state_of(service)
            states = {"compiled": db.to_state()}
            if interpreter:
                states["interpreter"] = st.to_dict()
            tally.calls += 1
            soft = (
                expected[0] == "ok"
                and isinstance(expected[1], dict)
                and expected[1].get("success") is False
            )
            tally.outcomes[(tool, "soft" if soft else expected[0])] += 1
            bad = [f"{who}: {out!r}" for who, out in got.items() if not same(expected, out)] + [
                f"{who} state differs" for who, s in states.items() if not same(want_state, s)
            ]
            if bad:
                tally.differences.append(
                    f"seed {seed} step {step}: {tool}({args!r})\n  original: {expected!r}\n  "
                    + "\n  ".join(bad)
                )
                break  # the states have parted; the rest of this sequence says nothing


def _check(tally: Tally, sequences: int) -> None:
    assert not tally.differences, (
        f"{len(tally.differences)} of {sequences} sequences differ; first ones:\n"
        + "\n".join(tally.differences[:5])
    )
    # Not vacuous: every tool succeeded and failed, and the soft failures were met.
    for tool in ("add_project", "add_task", "edit_task", "log_time", "delete_task"):
        assert tally.outcomes[(tool, "ok")] > 0, tool
        assert tally.outcomes[(tool, "err")] > 0, tool
    for tool in ("archive_project", "edit_task", "complete_task", "reopen_task"):
        assert tally.outcomes[(tool, "soft")] > 0, tool


def test_original_replays_on_the_port_fast(ported: Ported) -> None:
    """A few dozen sequences: the edit-run loop's version of the test below."""
    tally = Tally()
    replay(ported, range(FAST_SEQUENCES), tally)
    _check(tally, FAST_SEQUENCES)


@pytest.mark.slow
def test_original_replays_on_the_port(ported: Ported) -> None:
    """1,000 sequences, 0 differences in results, outcomes and states."""
    tally = Tally()
    replay(ported, range(SEQUENCES), tally)
    _check(tally, SEQUENCES)
    assert tally.calls == SEQUENCES * CALLS


def test_replay_notices_a_difference(ported: Ported) -> None:
    """The comparison is not blind: an original with a changed message is caught."""
    broken = _import(f"todo_service_{next(_unique)}", EXAMPLE / "todo_service.py", False)

    def complete_task(self: Any, task_id: int) -> dict[str, Any]:
        out: dict[str, Any] = broken.TodoService._complete(self, task_id)
        if out["success"]:
            out["message"] = out["message"].replace("marked as done", "done")
        return out

    broken.TodoService._complete = broken.TodoService.complete_task
    broken.TodoService.complete_task = complete_task
    p = Ported(broken, ported.domain, ported.package)
    tally = Tally()
    replay(p, range(FAST_SEQUENCES), tally, interpreter=False)
    assert tally.differences
    assert "complete_task" in tally.differences[0]


def test_same_is_strict() -> None:
    """``same`` tells apart what a normalising comparison would merge."""
    assert same({"a": 1, "b": [2]}, {"a": 1, "b": [2]})
    assert not same({"a": 1, "b": 2}, {"b": 2, "a": 1})
    assert not same(1, True)
    assert not same("1.50", Decimal("1.50"))
    assert not same([1], [1, 2])
    assert not same(json.loads('{"x": 1}'), {"x": 1.0})


def test_week_dates_are_not_dates() -> None:
    """A date is spelt YYYY-MM-DD: Python's fromisoformat also reads '2026-W09-1' (a week
    date, 2026-02-23), which would then be compared as text with real dates."""
    from graphgen.envs.runtime import is_iso_date as runtime_is_date
    from graphgen.parse import is_iso_date

    for check in (is_iso_date, runtime_is_date):
        assert check("2026-02-23")
        assert not check("2026-W09-1")
        assert not check("20260223")
        assert not check("2026-02-30")


def _blocks(text: str, lang: str) -> list[str]:
    return re.findall(rf"^```{lang}\n(.*?)^```$", text, flags=re.S | re.M)


def test_porting_doc_quotes_the_example() -> None:
    """docs/porting.md quotes the example files verbatim (python and yaml blocks)."""
    doc = (ROOT / "docs" / "porting.md").read_text(encoding="utf-8")
    for lang, name in (("python", "todo_service.py"), ("yaml", "todo.yaml")):
        source = (EXAMPLE / name).read_text(encoding="utf-8")
        blocks = _blocks(doc, lang)
        assert len(blocks) >= 4, lang
        for block in blocks:
            assert block in source, f"docs/porting.md quotes {name} wrongly:\n{block}"


def test_the_originals_state_imports(ported: Ported) -> None:
    """A state written out of the original imports as it is (int ids from JSON text,
    decimals at their scale); a wrong one is refused with every problem named."""
    service = seed_service(ported.original, random.Random(7))
    home = service.add_project("Home")["project_id"]
    service.add_task(home, "Water the plants", "2026-05-01", 3)
    text = json.dumps(state_of(service))  # JSON text: int id 3 is written "3"
    st = import_state(ported.domain, json.loads(text))
    assert same(st.to_dict(), state_of(service))

    bad = json.loads(text)
    row = bad["tables"]["Task"][str(service.next_task_id - 1)]
    row["spent"], row["priority"], row["due"] = "1.5", 9, "2026-W09-1"
    bad["tables"]["Task"]["T1"] = dict(row)
    with pytest.raises(StateImportError) as info:
        import_state(ported.domain, bad)
    problems = str(info.value)
    for words in ("2 places, not '1.5'", "9 is above the maximum 4", "'2026-W09-1'", "T1"):
        assert words in problems, problems
