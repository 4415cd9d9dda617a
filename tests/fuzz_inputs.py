"""Mutators and oracles for fuzzing domain files and task files.

Shared by the hypothesis tests (``tests/test_fuzz_inputs.py``, small budgets) and
``benchmarks/bench_fuzz.py`` (large budgets). A mutator turns a seeded
:class:`random.Random` and a valid input into a hostile one; an oracle runs it through
graphgen and classifies the outcome:

* ``error`` — rejected with our own exception type and a message that names the input;
* ``accepted`` — taken, and then usable downstream (hash, state generation, generated
  code that compiles; for tasks, the dry-run gate), without an exception;

and raises :class:`Escaped` for anything else: a traceback, or an invalid input taken.
"""

from __future__ import annotations

import contextlib
import json
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from graphgen.domain import Domain
from graphgen.domains import builtin_path, load_builtin
from graphgen.envs.codegen import CodegenError, compile_domain_source
from graphgen.errors import DomainError, StateGenError
from graphgen.limits import SAFE_LOADER
from graphgen.load import loads_domain
from graphgen.state import State
from graphgen.stategen import generate_state
from graphgen.tasks.dryrun import check_candidate
from graphgen.tasks.validate import MAX_DEPTH, TaskSetError, scan_taskset

DATA = Path(__file__).parent / "data"
BUILTIN_YAML = {n: builtin_path(n).read_text(encoding="utf-8") for n in ("mock", "retail")}
BUILTIN_DATA = {n: json.dumps(yaml.load(t, Loader=SAFE_LOADER)) for n, t in BUILTIN_YAML.items()}
GOOD_LINES = (DATA / "good_mock.jsonl").read_text(encoding="utf-8").splitlines()


_DUMPER: Any = yaml.CSafeDumper if yaml.__with_libyaml__ else yaml.SafeDumper


class Escaped(Exception):
    """An input got past the checks: a traceback, or an invalid input accepted."""


# ------------------------------------------------------------------ domain files

HOSTILE_TEXT = [
    "{",
    "}",
    "{0}",
    "{x.__class__}",
    "\\N{BULLET}",
    "[",
    "]",
    "&a ",
    "*a",
    ": ",
    "- ",
    "'",
    '"',
    "\n",
    "  ",
    "\t",
    "#",
    "!!python/object:os.system ",
    "0x" + "f" * 40,
    "9" * 30,
    "\x00",
    "\\0",
    "\\ud800",
    "\uff44\uff42",  # fullwidth "db": folds to db under NFKC
    "\ufb01",  # the fi ligature
    "_x",
    "[/]",
    "$\\frac{a}{b}$",
    "é",
    "\u202e",
]


def _hostile_value(rng: random.Random) -> Any:
    return rng.choice(
        [
            None,
            True,
            -1,
            0,
            10**30,
            100_000_000,
            1.5,
            float("nan"),
            "",
            rng.choice(HOSTILE_TEXT),
            "x" * rng.choice([100, 30_000]),
            [],
            {},
            ["a", "a"],
            {"type": "int"},
            {"check": "1 +"},
            "any(any(a.balance > 0 for a in Account) for b in Account)",
            "Account[account_id].balance >= 0x" + "f" * 50,
        ]
    )


def _paths(data: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix]
    if isinstance(data, dict):
        for k, v in data.items():
            out += _paths(v, (*prefix, k))
    elif isinstance(data, list):
        for i, v in enumerate(data):
            out += _paths(v, (*prefix, i))
    return out


def _at(data: Any, path: tuple[Any, ...]) -> Any:
    for p in path:
        data = data[p]
    return data


def mutate_structure(rng: random.Random, data: Any) -> None:
    """One structural edit of loaded YAML data, in place: delete, replace, rename,
    duplicate or nest a randomly chosen entry."""
    path = rng.choice(_paths(data)[1:])
    parent, key = _at(data, path[:-1]), path[-1]
    op = rng.randrange(5)
    if op == 0:
        del parent[key]
    elif op == 1:
        parent[key] = _hostile_value(rng)
    elif op == 2 and isinstance(parent, dict):
        parent[f"{key}{rng.choice(HOSTILE_TEXT)}"] = parent.pop(key)
    elif op == 3 and isinstance(parent, dict):
        parent[f"{key}_copy"] = json.loads(json.dumps(parent[key]))
    else:
        parent[key] = [parent[key]] if rng.random() < 0.5 else {"x": parent[key]}


def mutate_text(rng: random.Random, text: str) -> str:
    """One textual edit: insert hostile text, delete or duplicate a span, swap lines."""
    op = rng.randrange(4)
    if op == 0:
        i = rng.randrange(len(text) + 1)
        return text[:i] + rng.choice(HOSTILE_TEXT) + text[i:]
    if op == 1:
        i = rng.randrange(len(text))
        return text[:i] + text[i + rng.randrange(1, 40) :]
    lines = text.split("\n")
    i, j = rng.randrange(len(lines)), rng.randrange(len(lines))
    if op == 2:
        lines.insert(j, lines[i])
    else:
        lines[i], lines[j] = lines[j], lines[i]
    return "\n".join(lines)


def domain_case(rng: random.Random) -> str:
    """A mutated built-in domain file (mostly the small mock; retail, ten times its
    size, one case in fifty)."""
    name = "mock" if rng.random() < 0.98 else "retail"
    base = BUILTIN_YAML[name]
    if rng.random() < 0.5:
        data = json.loads(BUILTIN_DATA[name])
        for _ in range(rng.randint(1, 3)):
            mutate_structure(rng, data)
        try:
            return str(yaml.dump(data, Dumper=_DUMPER, allow_unicode=True, sort_keys=False))
        except yaml.YAMLError:
            return base
    text = base
    for _ in range(rng.randint(1, 4)):
        text = mutate_text(rng, text)
    return text


def run_domain_case(text: str) -> str:
    """``error`` or ``accepted``; :class:`Escaped` for a traceback or a domain that is
    taken but breaks a later step."""
    try:
        d = loads_domain(text, "fuzz.yaml")
    except DomainError as exc:
        if not exc.problems or not all(p.file == "fuzz.yaml" and p.message for p in exc.problems):
            raise Escaped(f"DomainError without a located message: {exc!r}") from exc
        return "error"
    except Exception as exc:
        raise Escaped(f"traceback while loading: {exc!r}") from exc
    try:
        _ = d.content_hash
        # StateGenError is a clear error of its own (a unique field with too few values).
        with contextlib.suppress(StateGenError):
            generate_state(d, 0)
        try:
            sources = compile_domain_source(d)
        except CodegenError:
            return "accepted"
        for name in ("models.py", "tools.py", "schemas.py", "env.py"):
            compile(sources[name], name, "exec")
    except Exception as exc:
        raise Escaped(f"accepted, then failed downstream: {exc!r}") from exc
    return "accepted"


# ------------------------------------------------------------------ task files

REQUIRED = {
    "id",
    "domain",
    "domain_hash",
    "seed",
    "kind",
    "instruction",
    "givens",
    "initial_state",
    "chain",
    "goal",
    "min_calls",
    "difficulty",
    "tools_used",
    "tables",
    "counters",
    "sort",
    "value",
    "entity",
    "key",
    "field",
    "tool",
    "phrase",
    "description",
    "k",
    "proofs",
    "z3_version",
    "checker_version",
    "name",
    "ok",
}
# Values of any type: a swap there may make a different task, not an invalid one.
UNTYPED = ("goal.answer", "goal.answer_any", "goal.answer_not")


def _kind(x: Any) -> str:
    if x is None or isinstance(x, bool):
        return repr(x) if x is None else "bool"
    return {int: "number", float: "number", str: "string", list: "array", dict: "object"}[type(x)]


SWAPS: list[Any] = [None, True, 7, "7", [], {}, [1, [2]], {"a": 1}, "A001", -1]


def _dotted(path: tuple[Any, ...]) -> str:
    return ".".join(str(p) for p in path)


def task_case(rng: random.Random) -> tuple[bytes, bool, str]:
    """A task file whose second line is a mutated valid task: (bytes, whether it must
    be rejected, what was done)."""
    head = GOOD_LINES[0]
    task = json.loads(rng.choice(GOOD_LINES[1:]))
    op = rng.choice(["swap", "delete", "extra", "nan", "nest", "utf8", "surrogate", "unicode"])
    must = True
    what = op
    raw: bytes | None = None
    if op in ("swap", "delete", "extra"):
        paths = [p for p in _paths(task)[1:]]
        path = rng.choice(paths)
        parent, key = _at(task, path[:-1]), path[-1]
        what = f"{op} {_dotted(path)}"
        if op == "swap":
            old = parent[key]
            new = rng.choice([v for v in SWAPS if _kind(v) != _kind(old)])
            parent[key] = new
            optional = new is None and key in ("certificate", "refused_call")
            must = not _dotted(path).startswith(UNTYPED) and not optional
        elif op == "delete":
            del parent[key]
            must = (isinstance(key, str) and key in REQUIRED) or (
                len(path) >= 2 and path[-2] == "args"
            )
            if len(path) == 5 and path[:2] == ("initial_state", "tables"):
                must = True  # a field of a row
            if _dotted(path).startswith(UNTYPED):
                must = False
        else:
            target = _at(
                task, rng.choice([p for p in _paths(task) if isinstance(_at(task, p), dict)])
            )
            target["zz_extra"] = rng.choice(SWAPS)
    elif op == "nan":
        text = json.dumps(task).replace(
            '"seed": ', f'"seed": {rng.choice(["NaN", "Infinity", "-Infinity", "1e999"])}, "_": ', 1
        )
        raw = text.encode()
    elif op == "nest":
        depth = rng.choice([MAX_DEPTH + 1, 500, 5000, 100_000])
        task["goal"]["answer"] = []
        text = json.dumps(task).replace('"answer": []', '"answer": ' + "[" * depth + "]" * depth)
        raw = text.encode()
    elif op == "utf8":
        raw = json.dumps(task, ensure_ascii=False).encode()
        i = rng.randrange(len(raw))
        raw = raw[:i] + rng.choice([b"\xff", b"\xc3", b"\xed\xa0\x80"]) + raw[i:]
    elif op == "surrogate":
        raw = json.dumps(task).replace('"instruction": "', '"instruction": "\\udc80', 1).encode()
    else:
        task["instruction"] = rng.choice(HOSTILE_TEXT) + task["instruction"]
        must = False
    if raw is None:
        raw = json.dumps(task, ensure_ascii=rng.random() < 0.5).encode()
    return head.encode() + b"\n" + raw + b"\n", must, what


def run_task_case(data: bytes, must_reject: bool, domain: Domain, what: str = "") -> str:
    """``error`` or ``accepted``; :class:`Escaped` for a traceback, an error that is not
    located at line 2, or an invalid line accepted."""
    try:
        got = scan_taskset(data, "fuzz.jsonl", lambda m: domain)
    except TaskSetError as exc:
        raise Escaped(f"{what}: the manifest line was not touched: {exc}") from exc
    except Exception as exc:
        raise Escaped(f"{what}: traceback while reading: {exc!r}") from exc
    if got.problems:
        if [p.line for p in got.problems] != [2] or not str(got.problems[0]).startswith(
            "fuzz.jsonl:2:"
        ):
            raise Escaped(f"{what}: problem not located at line 2: {got.problems}")
        return "error"
    if must_reject:
        raise Escaped(f"{what}: an invalid task was accepted")
    (task,) = got.tasks
    try:
        check_candidate(
            domain,
            task.kind,
            State.from_dict(task.initial_state),
            task.chain,
            task.givens,
            task.targets,
            task.instruction,
            task.goal,
            task.refused_call,
        )
    except Exception as exc:
        raise Escaped(f"{what}: accepted, then the dry-run failed: {exc!r}") from exc
    return "accepted"


def mock_domain() -> Domain:
    """The domain of the task lines mutated here."""
    return load_builtin("mock")


Runner = Callable[[random.Random], str]
