"""The compiled environments (envs.codegen) against the reference interpreter.

The main test is differential: random call sequences (valid calls, wrong types, missing
and extra arguments, unknown ids and tools, failing preconditions and invariants) run
on the interpreter (graphgen.interp over graphgen.state.State) and on the generated
package side by side; results, error messages and kinds, and states after every call
must be identical. The other tests hold the generated code to its promises: importable
without graphgen, lint- and type-clean, deterministic, strict OpenAI schemas.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import importlib.util
import itertools
import json
import random
import re
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from decimal import Decimal
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from graphgen.decimals import dec_text
from graphgen.domain import Domain, ParamDef
from graphgen.domains import builtin_names, load_builtin
from graphgen.envs.codegen import CodegenError, compile_domain_source, write_package
from graphgen.envs.schemas import (
    ALLOWED_KEYWORDS,
    FINISH_NAME,
    TOOL_NAME,
    finish_tool,
    openai_tools,
)
from graphgen.errors import DomainError, ToolError
from graphgen.interp import call_tool
from graphgen.load import load_domain, loads_domain
from graphgen.state import State
from graphgen.today import today_of_state
from graphgen.types import BOOL, DATE, INT, STR, DecT, EnumT, ListT, OptT, RefT, Ty, strip_opt
from tests.cases_domain import CASES, cases_domain

ROOT = Path(__file__).resolve().parents[1]
VENV_BIN = ROOT / ".venv" / "bin"

# Every construct of the expression language, and names the generated code must rename.
SINK = """
name: sink
description: Shelves and boxes; a test domain that uses every construct of the IR.
policy: |
  Test policy line one.
  Line two, with "quotes" and a backslash \\ in it.
enums:
  Level: [low, mid, high]
entities:
  Shelf:
    description: A shelf.
    key: {name: shelf_id, prefix: "S{", width: 2}
    fields:
      label: {type: str, unique: true, description: "Shown on the shelf."}
      capacity: {type: int, min: 0, max: 50}
      level: {enum: Level}
      tags: "list[str]"
      open: bool
      since: date
  Box:
    key: {name: box_id, prefix: "B", width: 3}
    fields:
      shelf_id: Shelf
      weight: {type: int, min: 1, max: 30}
      neighbours: "list[Box]"
      level: {enum: Level}
      sealed: bool
tools:
  summary:
    description: Aggregates over a shelf's boxes.
    params: {shelf_id: Shelf}
    returns: >-
      {'max': max(b.weight for b in Box if b.shelf_id == shelf_id),
       'min': min(b.weight for b in Box if b.shelf_id == shelf_id),
       'n': count(b for b in Box if b.shelf_id == shelf_id),
       'sealed': all(b.sealed for b in Box if b.shelf_id == shelf_id),
       'any_heavy': any(b.weight * 2 > 20 for b in Box if b.shelf_id == shelf_id),
       'shelf': Shelf[shelf_id]}
  boxes:
    params: {level: {enum: Level}, l: int, zip: str}
    returns: "[b for b in Box if b.level == level and b.weight >= l or zip == 'all']"
  earliest:
    description: ""
    returns: "min(s.since for s in Shelf if s.open)"
  lightest:
    params: {shelf_id: Shelf}
    requires: "min(b.weight for b in Box if b.shelf_id == shelf_id) >= 1"
    returns: "-max(b.weight for b in Box) + len(Shelf[shelf_id].tags)"
  move_box:
    params: {box_id: Box, shelf_id: Shelf}
    requires:
      - {check: "not (Box[box_id].shelf_id == shelf_id)",
         message: "box {box_id} is already on {shelf_id}"}
      - {check: "Shelf[shelf_id].open == True"}
      - check: >-
          sum(b.weight for b in Box if b.shelf_id == shelf_id) + Box[box_id].weight
          <= Shelf[shelf_id].capacity
        message: "no room on {shelf_id!r} {{capacity}}"
    effects:
      - "Shelf[Box[box_id].shelf_id].capacity += Box[box_id].weight"
      - "Shelf[shelf_id].capacity -= Box[box_id].weight"
      - "Box[box_id].shelf_id = shelf_id"
    returns: "Shelf[Box[box_id].shelf_id].capacity"
  relabel:
    params: {shelf_id: Shelf, label: str}
    requires: {check: "'x' != label", message: "label {label} is reserved"}
    effects: "Shelf[shelf_id].label = label"
    returns: "Shelf[shelf_id].label"
  link:
    params: {box_id: Box, other: Box}
    requires: "not (other in Box[box_id].neighbours) and other != box_id"
    effects:
      - "Box[box_id].neighbours.append(other)"
      - "Box[other].neighbours.append(box_id)"
  unlink:
    params: {box_id: Box, other: Box}
    effects:
      - "Box[box_id].neighbours.remove(other)"
      - "Box[other].neighbours.remove(box_id)"
  tag:
    params: {shelf_id: Shelf, tag: str}
    effects: "Shelf[shelf_id].tags.append(tag)"
    returns: "Shelf[shelf_id].tags"
  pack:
    params: {shelf_id: Shelf, weight: int, sorted: bool}
    requires:
      - {check: "Shelf[shelf_id].level in ['mid', 'high'] or sorted",
         message: "weight {weight:>4} on {shelf_id}"}
    effects:
      - >-
        b = Box.create(shelf_id=shelf_id, weight=weight * 2 - 1,
                       level=Shelf[shelf_id].level, sealed=sorted)
      - "Shelf[shelf_id].capacity -= Box[b].weight"
    returns: "Box[b]"
  add_shelf:
    params: {label: str, since: date}
    effects: >-
      s = Shelf.create(label=label, capacity=10, level='low', open=True, since=since)
  scrap:
    params: {box_id: Box}
    requires: "Box[box_id].sealed == False and box_id in Box"
    effects:
      - "Shelf[Box[box_id].shelf_id].capacity += Box[box_id].weight"
      - "del Box[box_id]"
  scrap_and_touch:
    params: {box_id: Box, db: int}
    effects:
      - "del Box[box_id]"
      - "Box[box_id].weight = 1 if db > 0 else 2"
  set_since:
    params: {shelf_id: Shelf, since: date, db: int}
    requires: "(since > Shelf[shelf_id].since or -db < 0) and (db != 3 or since == '2024-01-01')"
    effects: "Shelf[shelf_id].since = since"
  neighbour_weights:
    params: {box_id: Box}
    returns: "[n.weight for n in Box if n.box_id in Box[box_id].neighbours]"
  shelf_of_neighbours:
    params: {box_id: Box}
    requires: "count(n for n in Box if n.box_id in Box[box_id].neighbours) > 0"
    returns: "[Shelf[n.shelf_id].label for n in Box if n.box_id in Box[box_id].neighbours]"
  deref:
    params: {box_id: Box}
    returns: >-
      {'exists': box_id in Box and not (box_id not in Box),
       'first': [b.box_id for b in Box if b.weight >= 3 and b.box_id != box_id],
       'lit': 'B001' in Box, 'no': not ('low' in ['mid', 'high'])}
  set_level:
    params: {box_id: Box, level: {enum: Level}, sealed: bool}
    requires:
      - "Box[box_id].level != level and sealed != Box[box_id].sealed or Box[box_id].weight < 3"
    effects:
      - "Box[box_id].level = level"
      - "Box[box_id].sealed = not sealed"
      - "Shelf[Box[box_id].shelf_id].capacity -= 0 if sealed else 5"
"""


# ============================================================================ domains


# Int ticket ids, a record return, dict comprehensions keyed by id, literal int ids.
TICKETS = Path(__file__).parent / "data" / "lang" / "tickets.yaml"
# Airport codes given by the data (key type str, no prefix), creates naming their key.
AIRPORTS = Path(__file__).parent / "data" / "lang" / "airports.yaml"


def _sink() -> Domain:
    return loads_domain(SINK, source="<sink>")


def _builtin(name: str) -> Domain:
    """A built-in domain; skipped if it is missing or (while being written) broken."""
    if name not in builtin_names():
        pytest.skip(f"domain {name} is not there yet")
    try:
        return load_builtin(name)
    except DomainError as exc:
        pytest.skip(f"domain {name} does not load yet: {str(exc)[:200]}")


DOMAINS: dict[str, Callable[[], Domain]] = {
    "mock": lambda: _builtin("mock"),
    "retail": lambda: _builtin("retail"),
    "airline": lambda: _builtin("airline"),
    "sink": _sink,
    "desk": cases_domain,  # optional values, defaults, cases and soft failures
    "tickets": lambda: load_domain(TICKETS),
    "airports": lambda: load_domain(AIRPORTS),
}

# The built-ins written in language v2 (decimals, int ids, cases and soft failures,
# today(), functions): every built-in the table above leaves out, so a new one joins
# here. They run their own differential (below), not the tests over DOMAINS (1,000
# sequences each, mypy on the generated code).
V2 = [n for n in builtin_names() if n not in DOMAINS]

_unique = itertools.count()


def _import_package(path: Path) -> ModuleType:
    """Import a generated package from ``path`` under a fresh module name."""
    name = f"gg_compiled_{path.name}_{next(_unique)}"
    spec = importlib.util.spec_from_file_location(
        name, path / "__init__.py", submodule_search_locations=[str(path)]
    )
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


@dataclass
class Compiled:
    domain: Domain
    path: Path
    pkg: ModuleType
    tools: ModuleType = field(init=False)
    models: ModuleType = field(init=False)

    def __post_init__(self) -> None:
        self.tools = sys.modules[self.pkg.__name__ + ".tools"]
        self.models = sys.modules[self.pkg.__name__ + ".models"]


@pytest.fixture(scope="module")
def gen_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("compiled")


_CACHE: dict[str, Compiled] = {}


def _compiled(name: str, root: Path) -> Compiled:
    if name not in _CACHE:
        dom = DOMAINS[name]() if name in DOMAINS else _builtin(name)
        out = root / f"{name}_env"
        write_package(dom, out)
        _CACHE[name] = Compiled(dom, out, _import_package(out))
    return _CACHE[name]


@pytest.fixture(params=list(DOMAINS))
def compiled(request: pytest.FixtureRequest, gen_root: Path) -> Compiled:
    return _compiled(request.param, gen_root)


# ============================================================================ random states


_WORDS = ["a", "b", "x", "all", "low", "zz", "Ann", "B001"]
_DATES = ["2024-01-01", "2024-06-15", "2024-12-31", "2026-03-01"]


def _random_value(
    ty: Ty, keys: dict[str, list[str]], rng: random.Random, lo: int | None, hi: int | None
) -> Any:
    if isinstance(ty, OptT):
        return None if rng.random() < 0.3 else _random_value(ty.inner, keys, rng, lo, hi)
    if ty == INT:
        a = lo if lo is not None else -5
        b = hi if hi is not None else 60
        return rng.choice([a, b, a + 1, max(a, b - 1), rng.randint(a, b)])
    if ty == BOOL:
        return rng.random() < 0.5
    if ty == DATE:
        return rng.choice(_DATES)
    if ty == STR:
        return rng.choice(_WORDS)
    if isinstance(ty, EnumT):
        return rng.choice(ty.values)
    if isinstance(ty, RefT):
        return rng.choice(keys[ty.entity])
    if isinstance(ty, DecT):  # the JSON form, within the bounds
        a = int(Decimal(lo if lo is not None else -5).scaleb(ty.scale))
        b = int(Decimal(hi if hi is not None else 60).scaleb(ty.scale))
        return dec_text(Decimal(rng.choice([a, b, rng.randint(a, b)])).scaleb(-ty.scale), ty.scale)
    if isinstance(ty, ListT):
        pool = (
            keys[ty.elem.entity]
            if isinstance(ty.elem, RefT)
            else [_random_value(ty.elem, keys, rng, None, None) for _ in range(4)]
        )
        return sorted(set(rng.sample(pool, rng.randint(0, min(3, len(pool))))))
    raise AssertionError(ty)


def random_state(dom: Domain, rng: random.Random) -> State:
    """A small schema-valid state with values crowded at bounds and few distinct strings,
    so that preconditions, bounds and uniqueness are often at stake."""
    sizes = {e: rng.randint(1, 4) for e in dom.entities}
    keys = {e: [d.make_id(i) for i in range(1, sizes[e] + 1)] for e, d in dom.entities.items()}
    tables: dict[str, dict[str, dict[str, Any]]] = {}
    for e, d in dom.entities.items():
        rows: dict[str, dict[str, Any]] = {}
        for i, k in enumerate(keys[e]):
            row = {}
            for f in d.fields.values():
                v = _random_value(f.ty, keys, rng, f.min, f.max)
                if f.unique:
                    v = f"{v}{i}" if isinstance(v, str) else i + (f.min or 0)
                row[f.name] = v
            rows[k] = row
        tables[e] = rows
    return State.from_dict({"tables": tables, "counters": {e: n + 1 for e, n in sizes.items()}})


def initial_state(dom: Domain, seed: int) -> State:
    """Even seeds: graphgen.stategen (realistic, small); odd seeds: random_state."""
    if seed % 2 == 0:
        try:
            from graphgen.stategen import generate_state
        except ImportError:
            pass
        else:
            sizes = {e: min(d.size, 12) or 1 for e, d in dom.entities.items()}
            try:
                st = generate_state(dom, seed, sizes)
            except Exception:  # a generator in progress must not hide codegen results
                st = None
            if st is not None:
                return State.from_dict(st.to_dict())
    return random_state(dom, random.Random(seed))


# ============================================================================ random calls


def _column_values(st: State, ent: str, fld: str) -> list[Any]:
    edef_rows = st.tables.get(ent, {})
    return [k if fld == "*" else r.get(fld) for k, r in edef_rows.items()]


def text_variants(text: str) -> list[str]:
    """Other spellings of a text that case-insensitive lookups and substring searches
    still match (or just miss): other case, its first word, a piece of its middle."""
    words = text.split()
    return [text.lower(), text.upper(), words[0] if words else text, text[1:5]]


def near_today(st: State) -> list[str]:
    """The state's today and days just after it: the dates that rules about today
    (booked for a later day, on a weekday, not in the past) accept."""
    today = dt.date.fromisoformat(today_of_state(st))
    return [(today + dt.timedelta(days=d)).isoformat() for d in (0, 1, 2, 3, 6, 9)]


def random_args(dom: Domain, tool: str, st: State, rng: random.Random) -> Any:
    """Arguments for one call: mostly well-typed values seen in the state, sometimes not."""
    t = dom.tools[tool]
    args: dict[str, Any] = {}
    for p in t.params.values():
        roll = rng.random()
        if roll < 0.05:
            args[p.name] = rng.choice([None, 1.5, [1], {"a": 1}, True, "7", -1])
            continue
        if isinstance(p.ty, OptT):  # left out (takes its default), None, or a value
            if p.has_default and roll < 0.35:
                continue
            if roll < 0.5:
                args[p.name] = None
                continue
            p = replace(p, ty=p.ty.inner)
        if isinstance(p.ty, RefT):
            keys = list(st.tables[p.ty.entity])
            if roll < 0.12 or not keys:
                near = (
                    (keys[0].lower() if isinstance(keys[0], str) else str(keys[0])) if keys else "x"
                )
                args[p.name] = rng.choice(["NOPE", near, 3])  # for int ids, near is "1"
            else:
                args[p.name] = rng.choice(keys)
        elif p.source is not None and roll < 0.8:
            vals = _column_values(st, *p.source)
            v = rng.choice(vals) if vals else "none"
            if isinstance(v, str) and rng.random() < 0.3:
                v = rng.choice(text_variants(v))
            args[p.name] = v
        elif p.ty == INT:
            pool = [0, 1, 2, 3, 5, 10, 30, 100, -1]
            pool += [x for x in (p.min, p.max) if x is not None]
            pool += [x + d for x in (p.min, p.max) if x is not None for d in (-1, 1)]
            args[p.name] = rng.choice(pool)
        elif p.ty == DATE:
            bad = ["2024-02-30", "2024-1-1", "20240101", ""]
            args[p.name] = rng.choice([*_DATES, *near_today(st), *bad])
        elif isinstance(p.ty, DecT):
            args[p.name] = rng.choice(
                ["12.50", "0.01", "7", 3, 0.5, "0.015", "-1.00", "1000.00", "abc", "1e3", 2.25]
            )
        elif isinstance(p.ty, EnumT):
            args[p.name] = rng.choice([*p.ty.values, "bogus"]) if roll < 0.9 else "LOW"
        elif p.ty == BOOL:
            args[p.name] = rng.random() < 0.5
        else:
            vals = [
                v
                for e in st.tables
                for r in st.tables[e].values()
                for v in r.values()
                if isinstance(v, str)
            ]
            args[p.name] = rng.choice([*vals[:20], *_WORDS, "x"])
    roll = rng.random()
    if roll < 0.03:
        return rng.choice([None, [], "{}", 5])
    if roll < 0.07 and args:
        del args[rng.choice(sorted(args))]
    elif roll < 0.10:
        args["bogus_arg"] = 1
    return args


def _row_entity(p: ParamDef) -> str | None:
    """The entity whose rows a parameter's values come from: its ref or its source."""
    ty = strip_opt(p.ty)
    if isinstance(ty, RefT):
        return ty.entity
    return p.source[0] if p.source is not None else None


def related_args(dom: Domain, tool: str, st: State, rng: random.Random) -> dict[str, Any]:
    """Values for the tool's ref and ``Entity.field`` parameters taken from one row and
    the rows tied to it (the rows it names, the rows naming it, the rows naming what it
    names), so that arguments which must belong together do: an account of the customer
    named, a payee of the same customer, a username with its own password. Independent
    random picks rarely manage that on states of more than a few rows, which left such
    writes untested. Parameters of no entity are left to the caller."""
    params = dom.tools[tool].params
    anchors = sorted({e for p in params.values() if (e := _row_entity(p)) is not None})
    if not anchors:
        return {}
    anchor = rng.choice(anchors)
    if not st.tables[anchor]:
        return {}
    key = rng.choice(sorted(st.tables[anchor], key=repr))
    row = st.tables[anchor][key]
    own = {(anchor, key)}
    for f in dom.entities[anchor].fields.values():
        ty = strip_opt(f.ty)
        if isinstance(ty, RefT) and row.get(f.name) is not None:
            own.add((ty.entity, row[f.name]))

    def ties(ent: str, k: Any, r: dict[str, Any]) -> bool:
        """The row is the anchor, one it names, or one naming either (a sibling)."""
        if (ent, k) in own:
            return True
        for f in dom.entities[ent].fields.values():
            ty = strip_opt(f.ty)
            ty = ty.elem if isinstance(ty, ListT) else ty
            v = r.get(f.name)
            items = v if isinstance(v, list) else [v]
            if isinstance(ty, RefT) and any((ty.entity, x) in own for x in items):
                return True
        return False

    def tied(ent: str) -> list[tuple[Any, dict[str, Any]]]:
        rows = sorted(st.tables[ent].items(), key=lambda kr: repr(kr[0]))
        return [(k, r) for k, r in rows if ties(ent, k, r)]

    out: dict[str, Any] = {}
    for p in params.values():
        ent = _row_entity(p)
        rows = tied(ent) if ent is not None else []
        if not rows:
            continue
        k, r = rng.choice(rows)
        out[p.name] = k if p.source is None else r.get(p.source[1])
    return out


def guided_args(dom: Domain, tool: str, st: State, rng: random.Random, tries: int = 40) -> Any:
    """Arguments the interpreter accepts, if random search finds some (so that deep writes,
    whose preconditions random values rarely meet, get exercised too)."""
    for _ in range(tries):
        args = random_args(dom, tool, st, rng)
        if isinstance(args, dict) and rng.random() < 0.5:
            args.update(related_args(dom, tool, st, rng))
        try:
            call_tool(dom, st.copy(), tool, args)
        except ToolError:
            continue
        return args
    return random_args(dom, tool, st, rng)


@dataclass
class Tally:
    sequences: int = 0
    calls: int = 0
    ok: int = 0
    writes_ok: int = 0
    ok_tools: set[str] = field(default_factory=set)
    errors: dict[str, int] = field(default_factory=dict)
    mismatches: list[str] = field(default_factory=list)


def _outcome(fn: Callable[[], Any]) -> tuple[str, Any]:
    try:
        return "ok", fn()
    except ToolError as exc:  # the interpreter's error type
        return "err", (exc.message, exc.kind, exc.detail)


def run_differential(c: Compiled, seeds: range, calls: int, tally: Tally) -> None:
    dom = c.domain
    names = [*dom.tools, "no_such_tool"]
    compiled_error = c.pkg.ToolError
    for seed in seeds:
        rng = random.Random(seed * 7919 + 1)
        st = initial_state(dom, seed)
        db = c.models.Db.from_state(st.to_dict())
        assert db.to_state() == st.to_dict()
        tally.sequences += 1
        for step in range(calls):
            name = rng.choice(names)
            if name not in dom.tools:
                args: Any = {}
            elif rng.random() < 0.5:
                args = guided_args(dom, name, st, rng)
            else:
                args = random_args(dom, name, st, rng)
            expected = _outcome(lambda: call_tool(dom, st, name, args))  # noqa: B023
            try:
                got: tuple[str, Any] = ("ok", c.tools.call_tool(db, name, args))
            except compiled_error as exc:
                got = ("err", (exc.message, exc.kind, exc.detail))
            tally.calls += 1
            if expected[0] == "ok":
                tally.ok += 1
                tally.ok_tools.add(name)
                if name in dom.tools and dom.tools[name].is_write:
                    tally.writes_ok += 1
            else:
                kind = expected[1][1]
                tally.errors[kind] = tally.errors.get(kind, 0) + 1
            same = json.dumps(expected, sort_keys=True) == json.dumps(got, sort_keys=True)
            same_state = json.dumps(st.to_dict(), sort_keys=True) == json.dumps(
                db.to_state(), sort_keys=True
            )
            if not (same and same_state):
                tally.mismatches.append(
                    f"{dom.name} seed {seed} step {step}: {name}({args!r})\n"
                    f"  interpreter: {expected!r}\n  compiled:    {got!r}\n"
                    f"  states equal: {same_state}"
                )
                break  # the states have diverged; the rest of this sequence says nothing


# ============================================================================ tests


SEQUENCES = 1000  # the envs issue asks for at least 1,000 random sequences per domain


@pytest.mark.slow
def test_differential_interpreter_vs_compiled(compiled: Compiled) -> None:
    """Same results, same error messages and kinds, same states, call after call."""
    tally = Tally()
    run_differential(compiled, range(SEQUENCES), 25, tally)
    dom = compiled.domain
    never = sorted(t.name for t in dom.write_tools if t.name not in tally.ok_tools)
    print(
        f"\n{dom.name}: {tally.sequences} sequences, {tally.calls} calls, "
        f"{tally.ok} ok ({tally.writes_ok} writes), errors {dict(sorted(tally.errors.items()))}"
        f", mismatches {len(tally.mismatches)}, writes never ok: {never}"
    )
    assert not tally.mismatches, "\n".join(tally.mismatches[:5])
    assert tally.calls == SEQUENCES * 25
    assert tally.writes_ok > 0, "no write call succeeded: the effects went untested"
    assert {"bad_args", "not_found", "unknown_tool"} <= set(tally.errors)
    if dom.name in ("mock", "sink"):  # stable domains: every write's effects ran
        assert never == (["scrap_and_touch"] if dom.name == "sink" else [])


@pytest.mark.parametrize("name", V2)
def test_v2_builtin_agrees_with_interpreter(name: str, gen_root: Path) -> None:
    """A few sequences on each v2 built-in in the fast suite; more in the slow one."""
    tally = Tally()
    run_differential(_compiled(name, gen_root), range(6), 20, tally)
    assert not tally.mismatches, "\n".join(tally.mismatches[:5])
    assert tally.writes_ok > 0


@pytest.mark.slow
@pytest.mark.parametrize("name", V2)
def test_v2_builtin_differential(name: str, gen_root: Path) -> None:
    """Same results, errors and states on 300 sequences of 25 calls (about 6 s a
    domain), in which every write tool succeeds at least once: its effects are compared
    too."""
    tally = Tally()
    c = _compiled(name, gen_root)
    run_differential(c, range(100, 400), 25, tally)
    assert not tally.mismatches, "\n".join(tally.mismatches[:5])
    never = sorted(t.name for t in c.domain.write_tools if t.name not in tally.ok_tools)
    never = [t for t in never if t not in SEARCHED.get(name, ())]
    assert never == [], f"no call of {never} succeeded: give the random arguments a way in"
    assert {"bad_args", "not_found", "unknown_tool", "precondition"} <= set(tally.errors)


# Writes random arguments do not reach on the differential's small states: they are
# compared on arguments found by search instead (test_searched_write_agrees), from
# candidates that fit together the way the tool needs.
def _section_switches(st: State) -> Iterator[dict[str, Any]]:
    for eid, e in sorted(st.tables["Enrollment"].items(), key=lambda kv: repr(kv[0])):
        for sid in sorted(st.tables["Section"], key=repr):
            yield {"student_id": e["student_id"], "enrollment_id": eid, "section_id": sid}


SEARCHED: dict[str, dict[str, Callable[[State], Iterator[dict[str, Any]]]]] = {
    "university": {"swap_section": _section_switches},
}


@pytest.mark.slow
@pytest.mark.parametrize(("name", "tool"), [(d, t) for d, ts in SEARCHED.items() for t in ts])
def test_searched_write_agrees(name: str, tool: str, gen_root: Path) -> None:
    """A write whose arguments must fit together in several ways (a section switch: an
    enrolled student's enrollment, another section of its course with a free seat and
    no clash) runs on a full-size generated state with the first arguments, over every
    combination of rows, that the interpreter accepts; the compiled package must give
    the same result and state."""
    from graphgen.stategen import generate_state

    c = _compiled(name, gen_root)
    dom = c.domain
    for seed in range(6):
        st = generate_state(dom, seed)
        for args in SEARCHED[name][tool](st):
            expected = _outcome(lambda: call_tool(dom, st, tool, args))  # noqa: B023
            if expected[0] != "ok":
                continue  # a failed call leaves the state as it was
            db = c.models.Db.from_state(generate_state(dom, seed).to_dict())
            got = c.tools.call_tool(db, tool, args)
            assert json.dumps(["ok", got], sort_keys=True) == json.dumps(
                list(expected), sort_keys=True
            ), (seed, args)
            assert db.to_state() == st.to_dict(), (seed, args)
            return
    pytest.fail(f"no arguments of {tool} succeed on {name} states of seeds 0-5")


def test_sink_covers_every_failure_kind(gen_root: Path) -> None:
    """The kitchen-sink domain reaches every error path the interpreter has."""
    tally = Tally()
    run_differential(_compiled("sink", gen_root), range(200, 320), 30, tally)
    assert not tally.mismatches, "\n".join(tally.mismatches[:5])
    assert set(tally.errors) == {
        "bad_args",
        "not_found",
        "unknown_tool",
        "precondition",
        "invariant",
        "empty",
    }


def test_rollback_restores_everything(gen_root: Path) -> None:
    """A call failing after a delete and a create leaves the Db exactly as it was."""
    c = _compiled("sink", gen_root)
    st = random_state(c.domain, random.Random(5))
    box = sorted(st.tables["Box"])[0]
    db = c.models.Db.from_state(st.to_dict())
    before = db.to_state()
    with pytest.raises(c.pkg.ToolError) as info:
        c.tools.call_tool(db, "scrap_and_touch", {"box_id": box, "db": 1})
    assert info.value.message == f"scrap_and_touch: Box {box!r} not found"
    assert db.to_state() == before
    with pytest.raises(ToolError) as ref:
        call_tool(c.domain, st, "scrap_and_touch", {"box_id": box, "db": 1})
    assert ref.value.message == info.value.message


def test_generated_code_is_deterministic(gen_root: Path, tmp_path: Path) -> None:
    for name, make in DOMAINS.items():
        try:
            dom = make()
        except pytest.skip.Exception:
            continue
        first = compile_domain_source(dom)
        assert compile_domain_source(dom) == first
        assert compile_domain_source(loads_domain(_source_text(name), dom.source)) == first
        a = [p.read_bytes() for p in write_package(dom, tmp_path / "a" / name)]
        b = [p.read_bytes() for p in write_package(dom, tmp_path / "b" / name)]
        assert a == b == [first[k].encode() for k in sorted(first)]


def test_generated_code_ignores_hash_seed() -> None:
    """Set and dict orders never leak into the output: same bytes under any hash seed."""
    code = (
        "import hashlib\n"
        "from graphgen.domains import load_builtin\n"
        "from graphgen.envs.codegen import compile_domain_source\n"
        "src = compile_domain_source(load_builtin('mock'))\n"
        "print(hashlib.sha256(repr(sorted(src.items())).encode()).hexdigest())\n"
    )
    digests = {
        subprocess.run(
            [sys.executable, "-c", code],
            capture_output=True,
            text=True,
            check=True,
            timeout=60,
            cwd=ROOT,
            env={"PYTHONHASHSEED": seed},
        ).stdout
        for seed in ("1", "2")
    }
    assert len(digests) == 1 and len(next(iter(digests)).strip()) == 64


def _source_text(name: str) -> str:
    if name == "sink":
        return SINK
    if name == "desk":
        return CASES
    if name == "tickets":
        return TICKETS.read_text(encoding="utf-8")
    if name == "airports":
        return AIRPORTS.read_text(encoding="utf-8")
    from graphgen.domains import builtin_path

    return builtin_path(name).read_text(encoding="utf-8")


_FORBIDDEN = re.compile(
    r"^\s*(import|from)\s+(time|uuid|random|secrets|graphgen|envs)\b"
    r"|datetime\.now|date\.today|\btime\.time\b|uuid\d|os\.urandom",
    re.M,
)


def test_no_clock_uuid_random_or_graphgen(compiled: Compiled) -> None:
    for p in sorted(compiled.path.iterdir()):
        text = p.read_text(encoding="utf-8")
        assert not _FORBIDDEN.search(text), f"{p.name}: {_FORBIDDEN.search(text)}"
        for line in text.splitlines():
            assert len(line) <= 100 or line.endswith("# noqa: E501"), f"{p.name}: {line}"


def test_runs_without_graphgen(compiled: Compiled) -> None:
    """The package imports and runs a call with graphgen and envs made unimportable."""
    code = (
        "import json, sys\n"
        "sys.modules['graphgen'] = None\n"
        "sys.modules['envs'] = None\n"
        f"sys.path.insert(0, {str(compiled.path.parent)!r})\n"
        f"import {compiled.path.name} as pkg\n"
        "db = pkg.Db()\n"
        "try:\n"
        f"    pkg.call_tool(db, {next(iter(compiled.domain.tools))!r}, {{}})\n"
        "except pkg.ToolError as exc:\n"
        "    print(exc.kind)\n"
        "print(len(pkg.TOOLS), json.dumps(db.to_state()['counters'], sort_keys=True))\n"
    )
    res = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert res.returncode == 0, res.stderr
    assert str(len(compiled.domain.tools)) in res.stdout.splitlines()[-1]


def _all_compiled(root: Path) -> list[Compiled]:
    out = []
    for name in DOMAINS:
        with contextlib.suppress(pytest.skip.Exception):
            out.append(_compiled(name, root))
    return out


def test_ruff_clean(gen_root: Path) -> None:
    """Clean under ruff's defaults and under this project's rule set."""
    dirs = [str(c.path) for c in _all_compiled(gen_root)]
    ruff = str(VENV_BIN / "ruff")
    for extra in (
        [],
        ["--select", "E,F,W,I,B,UP,SIM,RUF", "--line-length", "100", "--target-version", "py311"],
    ):
        res = subprocess.run(
            [ruff, "check", "--no-cache", "--isolated", *extra, *dirs],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert res.returncode == 0, res.stdout + res.stderr


_TWO_CASES = """
name: counter
description: A counter with two outcomes.
policy: Count.
entities:
  Counter:
    key: {name: counter_id, prefix: "C"}
    fields:
      value: {type: int, min: 0, max: 1000}
tools:
  bump:
    params: {counter_id: Counter, by: {type: int, min: 1, max: 10}}
    let:
      was: "Counter[counter_id].value"
    cases:
      - when: "by > 5"
        effects: ["Counter[counter_id].value += 5 if by > 8 else by"]
        returns: "f'capped, was {was}'"
      - effects: ["Counter[counter_id].value += 1"]
        returns: "'one'"
"""


def test_a_case_that_reads_no_earlier_state_keeps_no_copy(tmp_path: Path) -> None:
    """Only the case whose result reads a ``let`` (the state before its effects) copies
    the state; the other case made an unused copy before (ruff F841)."""
    out = tmp_path / "counter_env"
    write_package(loads_domain(_TWO_CASES, "counter.yaml"), out)
    tools = (out / "tools.py").read_text(encoding="utf-8")
    assert tools.count("model_copy(deep=True)") == 1, tools
    res = subprocess.run(
        [str(VENV_BIN / "ruff"), "check", "--no-cache", "--isolated", "--select", "F,UP", str(out)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert res.returncode == 0, res.stdout + res.stderr


# Case 0 copies the state for old(); the guard and the read-only result of case 1 read
# old() too, where it is the state as it is (no effect has run).
_OLD_IN_LATER_CASES = """
name: counter
entities:
  Counter:
    key: {name: counter_id, prefix: "C"}
    size: 2
    fields:
      value: {type: int, min: 0, max: 1000}
tools:
  bump:
    params: {counter_id: Counter, by: {type: int, min: 1, max: 10}}
    let:
      was: "Counter[counter_id].value"
    cases:
      - when: "by > 5"
        effects: ["Counter[counter_id].value += by"]
        returns: "was"
      - when: "old(Counter[counter_id].value) >= 0 and was >= 0"
        returns: "old(Counter[counter_id].value) + was"
"""


def test_old_in_a_later_case_reads_the_state_as_it_is(tmp_path: Path) -> None:
    """A guard or a read-only result after a case that copied the state read that
    case's copy, which does not exist when the case did not run (UnboundLocalError)."""
    dom = loads_domain(_OLD_IN_LATER_CASES, "counter.yaml")
    write_package(dom, tmp_path / "counter_env")
    c = Compiled(dom, tmp_path / "counter_env", _import_package(tmp_path / "counter_env"))
    st = State({"Counter": {"C0001": {"value": 7}}}, {"Counter": 2})
    db = c.models.Db.from_state(st.to_dict())
    assert c.tools.call_tool(db, "bump", {"counter_id": "C0001", "by": 2}) == 14
    assert call_tool(dom, st, "bump", {"counter_id": "C0001", "by": 2}) == 14
    tally = Tally()
    run_differential(c, range(6), 10, tally)
    assert not tally.mismatches and tally.ok > 0, tally


# The only decimal of the domain is in the guard of a lone case, and of cases that
# return nothing: the two places the tool's static views (effects, returns) leave out.
_DECIMAL_IN_GUARDS = """
name: guards
entities:
  Box:
    key: {name: box_id, prefix: "B", width: 1}
    size: 2
    fields: {label: str, n: int}
tools:
  check_label:
    params: {box_id: Box}
    cases:
      - when: "Box[box_id].label.startswith(str(0.50))"
        fails: true
        returns: "'no'"
  bump:
    params: {box_id: Box}
    cases:
      - when: "round(Box[box_id].n / 3, 1) > 1.5"
        effects: ["Box[box_id].n += 1"]
      - effects: ["Box[box_id].n -= 1"]
"""


def test_a_decimal_only_in_case_guards_ships_the_decimal_helpers(tmp_path: Path) -> None:
    """The package imports its decimal helpers where a guard uses them (it imported a
    decimals.py it did not ship: ModuleNotFoundError on import)."""
    dom = loads_domain(_DECIMAL_IN_GUARDS, "guards.yaml")
    write_package(dom, tmp_path / "guards_env")
    assert (tmp_path / "guards_env" / "decimals.py").exists()
    c = Compiled(dom, tmp_path / "guards_env", _import_package(tmp_path / "guards_env"))
    tally = Tally()
    run_differential(c, range(4), 10, tally)
    assert not tally.mismatches and tally.writes_ok > 0, tally


@pytest.mark.slow
def test_mypy_strict_clean(gen_root: Path) -> None:
    dirs = [str(c.path) for c in _all_compiled(gen_root)]
    res = subprocess.run(
        [
            str(VENV_BIN / "mypy"),
            "--strict",
            "--no-error-summary",
            "--cache-dir",
            str(gen_root / ".mypy_cache"),
            *dirs,
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        cwd=gen_root,
    )
    assert res.returncode == 0, res.stdout + res.stderr


def test_schemas_are_strict(compiled: Compiled) -> None:
    tools = openai_tools(compiled.domain)
    assert tools == compiled.pkg.TOOLS  # the generated literal is the same data
    assert [t["function"]["name"] for t in tools] == list(compiled.domain.tools)
    for t in [*tools, finish_tool()]:
        assert set(t) == {"type", "function"} and t["type"] == "function"
        f = t["function"]
        assert set(f) == {"name", "description", "strict", "parameters"}
        params = f["parameters"]
        # A parameter with a default may be left out: such a tool cannot be strict.
        defaulted = [n for n, p in params["properties"].items() if "default" in p]
        assert TOOL_NAME.match(f["name"]) and f["strict"] is not defaulted and f["description"]
        assert params["type"] == "object" and params["additionalProperties"] is False
        assert params["required"] == [n for n in params["properties"] if n not in defaulted]
        for prop in params["properties"].values():
            base = prop["type"]
            if isinstance(base, list):  # T | None
                assert len(base) == 2 and base[1] == "null", prop
                base = base[0]
            assert set(prop) - {"default"} <= ALLOWED_KEYWORDS[base], prop
            if "enum" in prop:
                assert prop["enum"] and all(isinstance(v, str) for v in prop["enum"])
            if "minimum" in prop and "maximum" in prop:
                assert prop["minimum"] <= prop["maximum"]
        assert '"format":' not in json.dumps(t)  # a keyword strict mode restricts


def test_schema_shapes() -> None:
    dom = _sink()
    props = {
        t["function"]["name"]: t["function"]["parameters"]["properties"] for t in openai_tools(dom)
    }
    assert props["boxes"]["level"] == {"type": "string", "enum": ["low", "mid", "high"]}
    assert props["add_shelf"]["since"]["pattern"] == r"^\d{4}-\d{2}-\d{2}$"
    assert "YYYY-MM-DD" in props["add_shelf"]["since"]["description"]
    assert props["pack"]["sorted"] == {"type": "boolean"}
    assert props["move_box"]["box_id"] == {"type": "string", "description": "A box id."}
    mock = {t["function"]["name"]: t["function"] for t in openai_tools(load_builtin("mock"))}
    assert mock["pay"]["parameters"]["properties"]["amount"] == {
        "type": "integer",
        "minimum": 1,
        "maximum": 5000,
        "description": "Whole units to pay.",
    }
    assert mock["pay"]["parameters"]["required"] == ["account_id", "amount"]


def test_environment_episode(gen_root: Path) -> None:
    """reset / step / respond / reward on the mock domain, graded against the interpreter."""
    c = _compiled("mock", gen_root)
    st = initial_state(c.domain, 0)
    acct = next(k for k, r in sorted(st.tables["Account"].items()) if r["status"] == "active")
    email = st.tables["Account"][acct]["email"]
    final = st.copy()
    call_tool(c.domain, final, "deposit", {"account_id": acct, "amount": 7})
    bal = st.tables["Account"][acct]["balance"]
    goal = {
        "changes": [
            {"entity": "Account", "key": acct, "field": "balance", "before": bal, "after": bal + 7}
        ],
        "answer": [acct],
    }
    task = {"initial_state": st.to_dict(), "instruction": f"I am {email}; deposit 7.", "goal": goal}

    env = c.pkg.Environment()
    assert env.reset(options={"task": task}) == (task["instruction"], {"task_id": None, "step": 0})
    obs, reward, terminated, truncated, _ = env.step(
        {"name": "find_account", "arguments": json.dumps({"email": email})}
    )
    assert json.loads(obs) == [acct] and reward == 0.0 and not terminated and not truncated
    obs, _, _, _, info = env.step({"function": {"name": "deposit", "arguments": "{bad"}})
    assert obs.startswith("Error: deposit: arguments are not valid JSON") and info["error"]
    obs, _, _, _, info = env.step({"name": "nope", "arguments": {}})
    assert obs.startswith("Error: unknown tool 'nope'") and info["error"] == "unknown_tool"
    obs, _, _, _, info = env.step('["not an action"]')
    assert obs.startswith("Error: an action is") and info["error"] == "bad_action"
    obs, _, _, _, info = env.step("{not json")
    assert "action is not valid JSON" in obs and info["error"] == "bad_action"
    obs, *_ = env.step(
        json.dumps({"name": "deposit", "arguments": {"account_id": acct, "amount": 7}})
    )
    assert obs == "ok"
    assert env.get_reward() == 0.0  # no answer given yet
    obs, reward, terminated, truncated, info = env.step(
        {"name": FINISH_NAME, "arguments": {"answer": f"Done for {acct}."}}
    )
    assert terminated and not truncated and reward == 1.0
    assert info["grade"]["success"] is True
    assert all(item["ok"] for item in info["grade"]["items"])
    assert env.step({"name": FINISH_NAME, "arguments": {}})[2:4] == (True, False)

    env.reset()  # the same task again; wrong final state: nothing was deposited
    _, reward, terminated, _, info = env.step({"name": FINISH_NAME, "arguments": {"answer": acct}})
    assert terminated and reward == 0.0 and info["grade"]["success"] is False
    failed = [i["check"] for i in info["grade"]["items"] if not i["ok"]]
    assert failed == [f"change Account {acct} balance"]

    env = c.pkg.Environment(max_steps=2)
    env.reset(options={"task": json.dumps(task)})
    assert env.step({"name": "get_account", "arguments": {"account_id": acct}})[2:4] == (
        False,
        False,
    )
    _, reward, terminated, truncated, _ = env.step(
        {"name": "get_account", "arguments": {"account_id": acct}}
    )
    assert truncated and not terminated and reward == 0.0


def test_generated_tool_is_readable(gen_root: Path) -> None:
    """Preconditions keep their source as a comment and in the message; typed signature."""
    text = (_compiled("mock", gen_root).path / "tools.py").read_text(encoding="utf-8")
    assert "def pay(db: Db, account_id: str, amount: int) -> str:" in text
    assert "    # requires: Account[account_id].balance >= amount\n" in text
    assert "        Args:\n" not in text and "    Args:\n" in text
    sink = (_compiled("sink", gen_root).path / "tools.py").read_text(encoding="utf-8")
    # Names that would shadow what the generated code uses are renamed.
    assert "def pack(db: Db, shelf_id: str, weight: int, sorted_: bool)" in sink
    assert "def scrap_and_touch(db: Db, box_id: str, db_: int)" in sink
    assert "l_: int, zip: str" in sink


def test_codegen_rejects_unusable_names() -> None:
    bad_field = SINK.replace("      sealed: bool\n", "      json: list[str]\n      sealed: bool\n")
    with pytest.raises(CodegenError, match=r"Box\.json"):
        compile_domain_source(loads_domain(bad_field, "<bad>"))
    bad_tool = SINK.replace("  earliest:\n", f"  {FINISH_NAME}:\n")
    with pytest.raises(CodegenError, match=FINISH_NAME):
        compile_domain_source(loads_domain(bad_tool, "<bad>"))
