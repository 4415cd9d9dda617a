"""Untrusted agent actions against a compiled environment: any action gets an observation.

The compiled ``Environment.step`` must answer every action, however malformed or large,
with either a correct result (the reference interpreter's, on the same state) or an
``Error:`` observation naming the kind, and must never raise nor change the state on an
error. The hostile corpus in ``tests/data/hostile/actions/`` holds the inputs that once
crashed a run (a 5,000-digit integer, arguments nested 5,000 deep, a tool name that is a
list, ...); the hypothesis fuzzer below explores the rest.
"""

from __future__ import annotations

import json
import math
import random
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from graphgen.domains import load_builtin
from graphgen.envs.builtin.mock import environment as mock_environment
from graphgen.envs.builtin.mock import runtime as mock_runtime
from graphgen.envs.load import load_env_module
from graphgen.envs.schemas import FINISH_NAME
from graphgen.errors import ToolError
from graphgen.interp import call_tool
from graphgen.state import State
from graphgen.stategen import generate_state

CORPUS = Path(__file__).parent / "data" / "hostile" / "actions"
DOMAIN = load_builtin("mock")
ENV_CLS = load_env_module(DOMAIN).Environment
STATE = generate_state(DOMAIN, 3, {"Account": 4, "Payment": 2}).to_dict()
TASK = {"id": "fuzz", "initial_state": STATE, "instruction": "fuzz", "goal": None}
IDS = sorted(STATE["tables"]["Account"])
EMAILS = sorted(r["email"] for r in STATE["tables"]["Account"].values())
#: Error kinds decided before a tool runs (the action's shape and the limits).
PARSE_KINDS = {"bad_action", "bad_json", "bad_args", "limit"}
#: How many actions the fuzzers sent, for the report of the slow run.
SENT = {"actions": 0, "errors": 0, "results": 0}


@pytest.fixture(scope="module", autouse=True)
def _report_counts() -> Iterator[None]:
    """Print how many actions were sent (shown with ``pytest -s``)."""
    yield
    print(f"\nfuzzed actions: {SENT}")


def _env() -> Any:
    env = ENV_CLS(max_steps=10_000)
    env.reset(options={"task": TASK})
    return env


def _expected(state: dict[str, Any], name: str, arguments: Any) -> tuple[str, Any]:
    """What the reference interpreter makes of a call that passed the action checks."""
    st_ = State.from_dict(json.loads(json.dumps(state)))
    try:
        result = call_tool(DOMAIN, st_, name, arguments)
    except ToolError as exc:
        return "error", exc.kind
    observation = result if isinstance(result, str) else json.dumps(result, ensure_ascii=False)
    return observation, st_.to_dict()


def check_step(env: Any, action: object) -> dict[str, Any]:
    """Send ``action``; assert a correct result or a clean error; return the info."""
    before = env.db.to_state()
    out = env.step(action)
    SENT["actions"] += 1
    assert isinstance(out, tuple) and len(out) == 5
    observation, reward, terminated, truncated, info = out
    assert isinstance(observation, str) and isinstance(info, dict)
    assert reward in (0.0, 1.0) and isinstance(terminated, bool) and isinstance(truncated, bool)
    after = env.db.to_state()
    if info["error"] is not None:
        SENT["errors"] += 1
        assert observation.startswith("Error: "), observation[:200]
        assert len(observation) < 2_000, "an error never echoes a huge input"
        assert after == before, f"state changed on error {info['error']}: {observation}"
        assert info["error"] != "internal", info.get("detail")
        return dict(info)
    SENT["results"] += 1
    name = info["tool"]
    if name == FINISH_NAME:
        assert terminated and observation == "Episode finished." and after == before
        return dict(info)
    # A call the environment ran: the interpreter, on the state before, agrees.
    call = action
    if isinstance(call, str):
        call = json.loads(call)
    assert isinstance(call, Mapping)
    call = call.get("function", call)
    arguments = call.get("arguments", {})
    if isinstance(arguments, str):
        arguments = json.loads(arguments) if arguments.strip() else {}
    want_obs, want_state = _expected(before, name, arguments)
    assert want_obs != "error", f"interpreter rejected what the env accepted: {call}"
    assert observation == want_obs
    assert after == want_state
    return dict(info)


# ---------------------------------------------------------------- the hostile corpus


def _corpus() -> Iterator[tuple[str, str, str | None]]:
    expected = json.loads((CORPUS / "expected.json").read_text(encoding="utf-8"))
    for name, kind in sorted(expected.items()):
        yield name, (CORPUS / f"{name}.json").read_text(encoding="utf-8"), kind


@pytest.mark.parametrize(("case", "text", "kind"), list(_corpus()), ids=lambda x: str(x)[:40])
def test_hostile_action_corpus(case: str, text: str, kind: str | None) -> None:
    env = _env()
    info = check_step(env, text)
    assert info["error"] == kind, case
    # The same action as a Python object (when the JSON parser can read it) fares the same.
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        return
    env = _env()
    assert check_step(env, data)["error"] == kind, case


def test_corpus_covers_every_reported_crash() -> None:
    names = {case for case, _, _ in _corpus()}
    for needed in ("int-5000-digits", "nested-5000-deep", "name-is-a-list", "action-is-a-list"):
        assert needed in names


def test_errors_state_the_limits() -> None:
    env = _env()
    obs, *_, info = env.step('{"name": "deposit", "arguments": {"amount": ' + "9" * 5000 + "}}")
    assert info["error"] == "limit" and f"{mock_runtime.MAX_INT_DIGITS} digits" in obs
    deep = "[" * 5000 + "]" * 5000
    obs, *_, info = env.step({"name": "deposit", "arguments": '{"a": ' + deep + "}"})
    assert info["error"] == "limit" and f"{mock_runtime.MAX_DEPTH} levels" in obs
    obs, *_, info = env.step("x" * (mock_runtime.MAX_ACTION_CHARS + 1))
    assert info["error"] == "limit" and f"{mock_runtime.MAX_ACTION_CHARS:,}" in obs
    long = "y" * (mock_runtime.MAX_STRING_CHARS + 1)
    obs, *_, info = env.step({"name": "find_account", "arguments": {"email": long}})
    assert info["error"] == "limit" and f"{mock_runtime.MAX_STRING_CHARS:,}" in obs
    # Just within every limit: a normal call.
    owner = next(k for k, r in STATE["tables"]["Account"].items() if r["email"] == EMAILS[0])
    ok = env.step({"name": "find_account", "arguments": {"email": EMAILS[0]}})
    assert ok[4]["error"] is None and json.loads(ok[0]) == [owner]


class _Raising(Mapping[str, Any]):
    """A mapping whose every access fails (a hostile adapter's action object)."""

    def __getitem__(self, key: str) -> Any:
        raise RuntimeError("boom")

    def __iter__(self) -> Iterator[str]:
        raise RuntimeError("boom")

    def __len__(self) -> int:
        return 1


def _deep_list(depth: int) -> list[Any]:
    root: list[Any] = []
    cur = root
    for _ in range(depth):
        nxt: list[Any] = []
        cur.append(nxt)
        cur = nxt
    return root


def test_python_object_actions() -> None:
    """Actions that are not JSON at all (an adapter may pass anything) get errors too."""
    cyclic: dict[str, Any] = {"email": "a"}
    cyclic["self"] = cyclic
    cases: list[tuple[object, str]] = [
        (None, "bad_action"),
        (42, "bad_action"),
        ({"deposit"}, "bad_action"),
        (object(), "bad_action"),
        (b"\xff\xfe", "bad_action"),
        (_Raising(), "bad_action"),
        ({"name": ["deposit"]}, "bad_action"),
        ({"name": "deposit", "arguments": {1: 2}}, "bad_args"),
        ({"name": "deposit", "arguments": {"account_id": {"a", "b"}}}, "bad_args"),
        ({"name": "find_account", "arguments": cyclic}, "limit"),
        ({"name": "deposit", "arguments": {"amount": 10**5000}}, "limit"),
        ({"name": "deposit", "arguments": {"amount": _deep_list(100_000)}}, "limit"),
        ({"name": "deposit", "arguments": {"amount": math.nan}}, "limit"),
        ({"name": FINISH_NAME, "arguments": [1]}, "bad_args"),
    ]
    for action, kind in cases:
        env = _env()
        assert check_step(env, action)["error"] == kind, repr(action)[:80]


def test_nesting_is_counted_outside_strings() -> None:
    depth = mock_environment.nesting_depth
    assert depth('{"a": "[[[[\\"[[{{"}', 99) == 1
    assert depth('[[["]]]"]]]', 99) == 3
    assert depth("[" * 10_000, 5) == 6  # stops counting past the limit
    assert depth('"unterminated [[[', 99) == 0


def test_a_failing_tool_is_an_error_observation(monkeypatch: pytest.MonkeyPatch) -> None:
    """A fault inside a tool (not a ToolError) is an observation, the state unchanged."""
    env = _env()
    before = env.db.to_state()

    def broken(*args: Any) -> Any:
        raise ZeroDivisionError("bug")

    monkeypatch.setattr(env, "run_tool", broken)
    obs, _, _, _, info = env.step({"name": "deposit", "arguments": {}})
    assert info["error"] == "internal" and obs == "Error: deposit: the call failed and was undone"
    assert "ZeroDivisionError" in info["detail"] and env.db.to_state() == before


# ---------------------------------------------------------------- the fuzzer

_leaf = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**6), max_value=10**6),
    st.integers(min_value=10**95, max_value=10**105),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=12),
    st.sampled_from(IDS + EMAILS + ["active", "locked", "", "A999"]),
)
_json = st.recursive(
    _leaf,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=6,
)
_names = st.one_of(
    st.sampled_from([*DOMAIN.tools, FINISH_NAME]),
    st.text(max_size=8),
    _json,
)
_good_args = st.one_of(
    st.fixed_dictionaries({"email": st.sampled_from([*EMAILS, "nobody@x.org"])}),
    st.fixed_dictionaries({"account_id": st.sampled_from([*IDS, "A999", 5])}),
    st.fixed_dictionaries(
        {
            "account_id": st.sampled_from(IDS),
            "amount": st.one_of(st.integers(-5, 6000), st.sampled_from([10**99, 10**100, 2.0])),
        }
    ),
    st.fixed_dictionaries({"answer": st.one_of(st.text(max_size=20), _json)}),
)


def _mangle(text: str, data: st.DataObject) -> str:
    """``text`` with a slice cut out or a hostile piece put in (an almost-JSON reply)."""
    i = data.draw(st.integers(0, len(text)))
    piece = data.draw(st.sampled_from(["", "[" * 40, "9" * 150, '"', "\\", "\ud800", "NaN", "}"]))
    j = data.draw(st.integers(i, len(text)))
    return text[:i] + piece + text[j:]


@st.composite
def actions(draw: st.DrawFn) -> object:
    """An action of one of eight shapes; each draws only what its shape needs."""
    kind = draw(st.integers(0, 7))
    if kind == 0:
        return draw(_json)  # anything at all
    if kind == 1:
        return draw(st.text(max_size=40))
    if kind == 7:
        good = draw(st.sampled_from(list(DOMAIN.tools)))
        return {"name": good, "arguments": draw(_good_args)}
    name = draw(_names)
    args: Any = draw(st.one_of(_good_args, _json))
    if kind == 2:
        return {"name": name, "arguments": args}
    if kind == 3:
        return {"function": {"name": name, "arguments": json.dumps(args)}}
    if kind == 4:
        return json.dumps({"name": name, "arguments": args})
    if kind == 5:
        return _mangle(json.dumps({"name": name, "arguments": args}), draw(st.data()))
    return {"name": name, "arguments": _mangle(json.dumps(args), draw(st.data()))}


# Hypothesis' structured strategies cost a few milliseconds per example to draw; the
# second fuzzer draws only a seed and builds its actions with the same shapes from
# ``random`` (a seed that fails is reported and replayed by hypothesis like any other
# example), so the normal suite can send thousands of actions in a few seconds.
_TEXTS = ["", "deposit", "respond", "A001", "\x00", "\ud800", "\u202e", "{", "[", '"', "9" * 120]


def _rand_json(rng: random.Random, depth: int = 0) -> Any:
    roll = rng.randrange(10 if depth < 3 else 7)
    if roll == 0:
        return None
    if roll == 1:
        return rng.random() < 0.5
    if roll == 2:
        return rng.choice([rng.randint(-9, 6000), 10 ** rng.randint(90, 110), -(10**101)])
    if roll == 3:
        return rng.choice([0.5, math.inf, -math.inf, math.nan, 1e308])
    if roll in (4, 5):
        return rng.choice(_TEXTS + IDS + EMAILS)
    if roll == 6:
        return "".join(rng.choice('ab[]{}"\\ \u00e9\u754c') for _ in range(rng.randint(0, 12)))
    if roll in (7, 8):
        return [_rand_json(rng, depth + 1) for _ in range(rng.randint(0, 3))]
    keys = ["account_id", "amount", "email", "answer", "name", "arguments", "x"]
    return {rng.choice(keys): _rand_json(rng, depth + 1) for _ in range(rng.randint(0, 3))}


def _rand_args(rng: random.Random) -> Any:
    if rng.random() < 0.15:
        return _rand_json(rng)
    args: dict[str, Any] = {}
    if rng.random() < 0.8:
        args["account_id"] = rng.choice([*IDS, "A999", 7])
    if rng.random() < 0.7:
        args["amount"] = rng.choice([1, 5, 4999, 5000, 5001, 0, -1, 10**99, 10**100, "5"])
    if rng.random() < 0.3:
        args["email"] = rng.choice([*EMAILS, "x"])
    if rng.random() < 0.1:
        args[rng.choice(["answer", "extra"])] = _rand_json(rng)
    return args


def _rand_action(rng: random.Random) -> object:
    name = rng.choice(
        [*DOMAIN.tools, *DOMAIN.tools, FINISH_NAME, rng.choice(_TEXTS), _rand_json(rng)]
    )
    args = _rand_args(rng)
    text = json.dumps({"name": name, "arguments": args})
    cut = rng.randint(0, len(text))
    shapes = [
        lambda: {"name": rng.choice(list(DOMAIN.tools)), "arguments": _rand_args(rng)},
        lambda: {"name": rng.choice(list(DOMAIN.tools)), "arguments": _rand_args(rng)},
        lambda: {"name": name, "arguments": args},
        lambda: {"function": {"name": name, "arguments": json.dumps(args)}},
        lambda: text,
        lambda: text[:cut] + rng.choice([*_TEXTS, "[" * 40, "{" * 40]) + text[cut:],
        lambda: "[" * rng.randint(30, 3000) + "]" * rng.randint(0, 3000),
        lambda: _rand_json(rng),
    ]
    return rng.choice(shapes)()


def _fuzz(action_lists: list[object]) -> None:
    env = _env()
    for action in action_lists:
        if env.terminated:
            env = _env()
        check_step(env, action)


_HEALTH = [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much]


@settings(max_examples=200, deadline=None, suppress_health_check=_HEALTH, database=None)
@given(st.lists(actions(), min_size=1, max_size=4))
def test_fuzz_actions(action_list: list[object]) -> None:
    _fuzz(action_list)


@settings(max_examples=2_000, deadline=None, suppress_health_check=_HEALTH, database=None)
@given(st.integers(0, 2**64))
def test_fuzz_actions_seeded(seed: int) -> None:
    rng = random.Random(seed)
    _fuzz([_rand_action(rng) for _ in range(3)])


@pytest.mark.slow
@settings(max_examples=3_000, deadline=None, suppress_health_check=_HEALTH, database=None)
@given(st.lists(actions(), min_size=1, max_size=6))
def test_fuzz_actions_long(action_list: list[object]) -> None:
    _fuzz(action_list)


@pytest.mark.slow
@settings(max_examples=20_000, deadline=None, suppress_health_check=_HEALTH, database=None)
@given(st.integers(0, 2**64))
def test_fuzz_actions_seeded_long(seed: int) -> None:
    rng = random.Random(seed)
    _fuzz([_rand_action(rng) for _ in range(5)])
