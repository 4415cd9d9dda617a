"""Generated code under hostile domains and faults: atomic calls, names that cannot clash,
long text laid out in linear time.

- ``tests/data/hostile/domains-codegen/``: each file says on its first line whether
  ``graphgen check`` must reject it (with which words) or whether it must compile, import
  and run (names that once broke the package: an entity ``Self``, a tool ``AccountRow``,
  fullwidth or ligature names Python folds into others, NUL bytes, lone surrogates).
- A property test injects an exception at a random point of a call (before or after an
  effect, in the invariant check, at commit) and checks that nothing is left behind.
- The string splitter cuts 50,000 characters without a space into literals that join
  back to the text.
"""

from __future__ import annotations

import ast
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import graphgen
from graphgen.domain import Domain
from graphgen.domains import builtin_path, load_builtin
from graphgen.envs.codegen import compile_domain_source
from graphgen.envs.layout import WIDTH, _string_chunks, literal_lines
from graphgen.envs.load import load_env_module
from graphgen.errors import DomainError
from graphgen.load import load_domain
from graphgen.stategen import generate_state

CORPUS = Path(__file__).parent / "data" / "hostile" / "domains-codegen"


def _cases() -> Iterator[tuple[str, str]]:
    for path in sorted(CORPUS.glob("*.yaml")):
        head = path.read_text(encoding="utf-8").splitlines()[0]
        assert head.startswith("# expect: "), f"{path.name}: first line must say what to expect"
        yield path.name, head.removeprefix("# expect: ")


@pytest.mark.parametrize(("name", "expect"), list(_cases()))
def test_hostile_domain_corpus(name: str, expect: str, tmp_path: Path) -> None:
    path = CORPUS / name
    if expect.startswith("rejected: "):
        with pytest.raises(DomainError) as info:
            graphgen.check(path)
        text = str(info.value)
        assert expect.removeprefix("rejected: ") in text and str(path) in text
        return
    assert expect == "compiles"
    graphgen.check(path)
    dom = load_domain(path)
    for file, source in compile_domain_source(dom).items():
        if file.endswith(".py"):
            compile(source, file, "exec")  # parses: no NUL, no clash turned into a syntax error
    env = load_env_module(dom, tmp_path).Environment()
    state = generate_state(dom, 1).to_dict()
    env.reset(options={"task": {"initial_state": state, "instruction": "go"}})
    for tool in dom.tools:
        obs, *_, info = env.step({"name": tool, "arguments": {}})
        assert obs.startswith("Error: ") and info["error"] == "bad_args"  # missing arguments


def test_corpus_has_the_reported_names() -> None:
    names = {n for n, _ in _cases()}
    assert {"zoo.yaml", "tool-named-like-row-class.yaml", "fullwidth-param.yaml"} <= names
    assert {"ligature-field.yaml", "underscore-tool.yaml", "nul-in-description.yaml"} <= names


# ---------------------------------------------------------------- atomic under any fault

ZOO = load_domain(CORPUS / "zoo.yaml")


class Fault:
    """Raises ``exc`` at the ``at``-th call of any wrapped function, before or after it
    ran (after: its change is already made, as with a late invariant failure)."""

    def __init__(self, at: int, after: bool, exc: BaseException) -> None:
        self.at, self.after, self.exc, self.calls, self.fired = at, after, exc, 0, False

    def wrap(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        def wrapped(*args: Any, **kwargs: Any) -> Any:
            self.calls += 1
            hit = self.calls == self.at
            if hit and not self.after:
                self.fired = True
                raise self.exc
            out = fn(*args, **kwargs)
            if hit:
                self.fired = True
                raise self.exc
            return out

        return wrapped


def _inject(pkg: Any, fault: Fault, mp: pytest.MonkeyPatch) -> None:
    """Wrap every helper the generated tools call while effects are applied."""
    journal = pkg.runtime.Journal
    for method in ("set", "append", "remove", "create", "delete", "commit"):
        mp.setattr(journal, method, fault.wrap(getattr(journal, method)))
    mp.setattr(pkg.models.Db, "check_invariants", fault.wrap(pkg.models.Db.check_invariants))
    if hasattr(pkg.models, "check_bounds"):
        mp.setattr(pkg.models, "check_bounds", fault.wrap(pkg.models.check_bounds))


def _calls(dom: Domain, state: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """Calls that succeed on ``state`` and touch several rows or make new ones."""
    t = state["tables"]
    if dom.name == "zoo":
        s1 = min(t["Self"], key=lambda k: -t["Self"][k]["n"])
        z = min(t["Zed"], key=lambda k: t["Zed"][k]["m"])
        amount = max(1, min(t["Self"][s1]["n"], 100 - t["Zed"][z]["m"], 60))
        return [
            ("move", {"self_id": s1, "zed_id": z, "amount": amount, "label": "fresh-label"}),
            ("ok", {"sorted_id": sorted(t["Sorted"])[0], "tag": "new-tag"}),
            ("exc", {"len_id": sorted(t["Len"])[0], "max": 1}),
            ("row", {"for_id": sorted(t["For"])[0]}),
        ]
    acct = next(k for k, r in sorted(t["Account"].items()) if r["status"] == "active")
    return [
        ("pay", {"account_id": acct, "amount": 1}),
        ("deposit", {"account_id": acct, "amount": 5}),
        ("lock_account", {"account_id": acct}),
    ]


_EXCEPTIONS = [
    KeyError("counter"),
    AttributeError("Self"),
    ValueError("Exceeds the limit (4300 digits)"),
    RecursionError(),
    TypeError("boom"),
    KeyboardInterrupt(),
]
_SETUPS: dict[str, tuple[Domain, Any, dict[str, Any]]] = {}


def _setup(name: str, cache: Path) -> tuple[Domain, Any, dict[str, Any]]:
    if name not in _SETUPS:
        dom = ZOO if name == "zoo" else load_builtin(name)
        pkg = load_env_module(dom, cache)
        state = generate_state(dom, 2).to_dict()
        if name == "zoo":  # room for a move: a Self row with n > 0, a Zed row below 100
            first = sorted(state["tables"]["Self"])[0]
            state["tables"]["Self"][first]["n"] = 50
            for row in state["tables"]["Zed"].values():
                row["m"] = min(row["m"], 40)
        _SETUPS[name] = (dom, pkg, state)
    return _SETUPS[name]


@settings(
    max_examples=200,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    domain=st.sampled_from(["zoo", "mock"]),
    call=st.integers(0, 3),
    at=st.integers(1, 12),
    after=st.booleans(),
    exc=st.sampled_from(_EXCEPTIONS),
)
def test_injected_faults_leave_nothing_behind(
    tmp_path_factory: pytest.TempPathFactory,
    domain: str,
    call: int,
    at: int,
    after: bool,
    exc: BaseException,
) -> None:
    dom, pkg, state = _setup(domain, tmp_path_factory.getbasetemp() / "fault-cache")
    calls = _calls(dom, state)
    name, args = calls[call % len(calls)]
    clean = pkg.models.Db.from_state(state)
    assert pkg.tools.call_tool(clean, name, args) is not None  # the call works without faults
    db = pkg.models.Db.from_state(state)
    before = db.to_state()
    fault = Fault(at, after, exc)
    with pytest.MonkeyPatch.context() as mp:
        _inject(pkg, fault, mp)
        try:
            pkg.tools.call_tool(db, name, args)
        except BaseException as raised:
            assert fault.fired and raised is exc
            assert db.to_state() == before, f"{name} kept a change after {exc!r}"
            return
    assert not fault.fired
    assert db.to_state() == clean.to_state()  # no fault reached: the normal result


def test_counters_missing_a_table_roll_back() -> None:
    """A state without a counter for Payment: pay fails at the create, after the balance
    was lowered; the balance must be back."""
    dom = load_builtin("mock")
    pkg = load_env_module(dom)
    state = generate_state(dom, 2).to_dict()
    del state["counters"]["Payment"]
    env = pkg.Environment()
    env.reset(options={"task": {"initial_state": state, "instruction": "x"}})
    acct = next(k for k, r in sorted(state["tables"]["Account"].items()) if r["status"] == "active")
    before = env.db.to_state()
    obs, *_, info = env.step({"name": "pay", "arguments": {"account_id": acct, "amount": 1}})
    assert info["error"] == "internal" and "KeyError" in info["detail"]
    assert obs == "Error: pay: the call failed and was undone" and env.db.to_state() == before


def test_a_result_too_large_to_show_is_undone() -> None:
    """A write whose result could not be written as JSON is rejected inside the call."""
    dom = load_builtin("mock")
    pkg = load_env_module(dom)
    state = generate_state(dom, 2).to_dict()
    acct = next(k for k, r in sorted(state["tables"]["Account"].items()) if r["status"] == "active")
    db = pkg.models.Db.from_state(state)
    before = db.to_state()
    journal = pkg.runtime.Journal(db.counters)
    row = db.get_account(acct)
    journal.set("Account", acct, row, "balance")
    row.balance = 10**4000  # what a run of multiplications could reach
    with pytest.raises(pkg.runtime.ToolError, match="more than 100 digits"):
        journal.commit("ok")
    journal.rollback()
    assert db.to_state() == before


# ---------------------------------------------------------------- the string splitter


@pytest.mark.parametrize("unit", ["a", "\u754c", "'\"\\\x00\ud800\u00e9", "word-"])
def test_long_text_without_spaces_splits_and_rejoins(unit: str) -> None:
    text = (unit * 50_000)[:50_000]
    room = WIDTH - 8
    chunks = _string_chunks(text, room)
    assert "".join(ast.literal_eval(c) for c in chunks) == text
    assert all(len(c) <= room for c in chunks)
    assert len(chunks) >= len(text.encode("unicode_escape")) // room  # really cut, not kept


def test_long_policy_literal_round_trips() -> None:
    policy = "\u754c" * 8_000 + " end\n" + "x" * 16_000
    lines = literal_lines(policy, 0, "POLICY = ")
    tree = ast.parse("\n".join(lines))
    assert isinstance(tree.body[0], ast.Assign)
    assert ast.literal_eval(tree.body[0].value) == policy
    assert all(len(line) <= WIDTH for line in lines)


def test_domain_with_huge_unbroken_text_compiles() -> None:
    raw = (
        builtin_path("mock")
        .read_text(encoding="utf-8")
        .replace(
            "description: Bank accounts that can be looked up by email, topped up, locked and "
            "paid from.",
            # as long as a domain text may be (MAX_TEXT_CHARS), with no space to break at
            "description: " + json.dumps("\u754c" * 10_000 + "a" * 9_999),
        )
    )
    dom = graphgen.loads_domain(raw, source="huge.yaml")
    files = compile_domain_source(dom)
    scope: dict[str, Any] = {}
    exec(compile(files["schemas.py"], "schemas.py", "exec"), scope)
    assert scope["DESCRIPTION"] == "\u754c" * 10_000 + "a" * 9_999
