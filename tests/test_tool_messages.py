"""Agent-facing tool errors: plain words, no rule language, no other customer's data.

Every failing precondition of every write tool of every built-in domain is reached (as
the first failing check of the real tool where random search finds it, else as the
tool's only check) and its error is held to the rules: the agent reads exactly the
check's ``message:`` with its placeholders filled, the developer detail (the condition
and the cells it read) stays in ``detail``, and the compiled package says the same.
"""

from __future__ import annotations

import dataclasses
import random
import re
import string
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from graphgen import ir
from graphgen.domain import Domain
from graphgen.domains import builtin_names, load_builtin
from graphgen.envs import runtime
from graphgen.envs.codegen import write_package
from graphgen.envs.schemas import openai_tools
from graphgen.errors import NO_MESSAGE, DomainError, StateGenError, ToolError
from graphgen.interp import check_args, evaluate, precheck
from graphgen.state import State
from graphgen.stategen import generate_state
from graphgen.vocabulary import indefinite_article
from tests.test_codegen import _import_package, initial_state, random_args

#: Rule-language tokens an agent must never read.
RULE_SYNTAX = re.compile(
    r"\[|\]|==|!=|<=|>=|\brequires\b|\bsum\(|\bcount\(|\bany\(|\bfor \w+ in\b|\b[a-z]+_[a-z_]+\b"
)


def _fields(template: str) -> list[str]:
    return [f for _, f, _, _ in string.Formatter().parse(template) if f is not None]


@pytest.mark.parametrize("name", builtin_names())
def test_every_check_has_a_plain_message_naming_only_parameters(name: str) -> None:
    dom = load_builtin(name)
    for tool in dom.tools.values():
        for i, chk in enumerate(tool.requires):
            where = f"{name}: {tool.name} requires[{i}]"
            # Only the terse mock domain leaves one out; the agent then reads NO_MESSAGE.
            assert chk.message.strip() or name == "mock", f"{where} has no message"
            assert set(_fields(chk.message)) <= set(tool.params), where
            shown = chk.message.format(**{p: "X" for p in tool.params})
            assert not RULE_SYNTAX.search(shown), (where, shown)


def _well_typed(dom: Domain, tool: str, st: State, rng: random.Random) -> dict[str, Any] | None:
    args = random_args(dom, tool, st, rng)
    try:
        return check_args(dom.tools[tool], args, st)
    except ToolError:
        return None


def _first_false(dom: Domain, tool: str, st: State, args: dict[str, Any]) -> int | None:
    for i, chk in enumerate(dom.tools[tool].requires):
        try:
            if not evaluate(chk.expr, st, args, dom):
                return i
        except ToolError:
            return None  # an unreadable condition is another error path
    return None


def _alone_false(dom: Domain, chk: ir.Check, st: State, args: dict[str, Any]) -> bool:
    try:
        return not evaluate(chk.expr, st, args, dom)
    except ToolError:
        return False


Case = tuple[State, dict[str, Any]]


def _failing_cases(dom: Domain) -> tuple[dict[tuple[str, int], Case], dict[tuple[str, int], Case]]:
    """(first-failing cases of the real tools, cases where a check alone is false)."""
    first: dict[tuple[str, int], Case] = {}
    alone: dict[tuple[str, int], Case] = {}
    wanted = {(t.name, i) for t in dom.write_tools for i in range(len(t.requires))}
    rng = random.Random(9)
    for seed in range(400):
        st = initial_state(dom, seed)
        missing = wanted - set(first) - (set(alone) if seed >= 40 else set())
        if not missing:
            break
        for tool in dom.write_tools:
            if not any(t == tool.name for t, _ in missing):
                continue
            for _ in range(60):
                args = _well_typed(dom, tool.name, st, rng)
                if args is None:
                    continue
                j = _first_false(dom, tool.name, st, args)
                if j is not None and (tool.name, j) not in first:
                    first[(tool.name, j)] = (st.copy(), args)
                for i, chk in enumerate(tool.requires):
                    if (tool.name, i) not in alone and _alone_false(dom, chk, st, args):
                        alone[(tool.name, i)] = (st.copy(), args)
    # A cap on rows per owner ("at most 8 payees") is false only in a crowded state.
    for st in _crowded_states(dom):
        missing = wanted - set(first) - set(alone)
        if not missing:
            break
        for tool_name, i in sorted(missing):
            chk = dom.tools[tool_name].requires[i]
            for _ in range(60):
                args = _well_typed(dom, tool_name, st, rng)
                if args is not None and _alone_false(dom, chk, st, args):
                    alone[(tool_name, i)] = (st.copy(), args)
                    break
    return first, alone


def _crowded_states(dom: Domain) -> Iterator[State]:
    """States where one table holds 2x or 3x its default rows (those the invariants allow)."""
    for ent in sorted(dom.entities):
        for k in (2, 3):
            for seed in range(6):
                sizes = {e: d.size * k if e == ent else d.size for e, d in dom.entities.items()}
                try:
                    yield generate_state(dom, seed, sizes)
                except StateGenError:
                    continue


def _assert_plain(
    dom: Domain, st: State, tool: str, chk: ir.Check, args: dict[str, Any], exc: ToolError
) -> None:
    where = f"{dom.name}: {tool} {chk.source!r}"
    assert exc.kind == "precondition", where
    assert exc.message == f"{tool}: {chk.message.format(**args) or NO_MESSAGE}", where
    # Every id the agent reads is one it passed: no other row, so no other customer's.
    ids = {k for rows in st.tables.values() for k in rows}
    named = {str(v) for v in args.values()}
    shown = {tok for tok in re.findall(r"[A-Za-z0-9]+", exc.message) if tok in ids}
    assert shown <= named, (where, exc.message)
    assert exc.detail.startswith(f"requires {chk.source}"), where


@pytest.mark.parametrize("name", builtin_names())
def test_every_failing_check_of_every_write_shows_only_its_message(
    name: str, tmp_path: Path
) -> None:
    dom = load_builtin(name)
    write_package(dom, tmp_path / f"{name}_env")
    pkg = _import_package(tmp_path / f"{name}_env")
    compiled = __import__(pkg.__name__ + ".tools", fromlist=["call_tool"])
    models = __import__(pkg.__name__ + ".models", fromlist=["Db"])
    first, alone = _failing_cases(dom)
    for tool in dom.write_tools:
        for i, chk in enumerate(tool.requires):
            if (tool.name, i) in first:
                st, args = first[(tool.name, i)]
                with pytest.raises(ToolError) as err:
                    precheck(dom, st, tool.name, args)
                _assert_plain(dom, st, tool.name, chk, args, err.value)
                db = models.Db.from_state(st.to_dict())
                with pytest.raises(pkg.ToolError) as got:
                    compiled.call_tool(db, tool.name, args)
                assert (got.value.message, got.value.kind, got.value.detail) == (
                    err.value.message,
                    err.value.kind,
                    err.value.detail,
                ), (tool.name, i)
                continue
            # Not reached as the first failure: the same check as the tool's only one.
            assert (tool.name, i) in alone, (
                f"{name}: no state makes {tool.name} {chk.source!r} false"
            )
            st, args = alone[(tool.name, i)]
            solo = dataclasses.replace(tool, requires=(chk,))
            d2 = dataclasses.replace(dom, tools={**dom.tools, tool.name: solo})
            with pytest.raises(ToolError) as err:
                precheck(d2, st, tool.name, args)
            _assert_plain(dom, st, tool.name, chk, args, err.value)


def test_facts_of_another_customer_stay_in_the_detail() -> None:
    # The retail case of the issue: Ana names Bo's processed order; the agent reads only
    # that it is not hers, the developer sees the owner and the status.
    dom = load_builtin("retail")
    st = State.empty(dom)
    st.tables["User"] = {
        u: dict(email=f"{u}@x.org", first_name=u, last_name=u, street="s", city="c", zip="1")
        for u in ("U0001", "U0002")
    }
    st.tables["PaymentMethod"] = {"PM0001": dict(user_id="U0002", kind="paypal", balance=0)}
    st.tables["Product"] = {"PR001": dict(name="Lamp")}
    st.tables["Item"] = {
        "IT0001": dict(product_id="PR001", color="red", size="M", price=5, available=True)
    }
    st.tables["Order"] = {
        "O0035": dict(
            user_id="U0002",
            status="cancelled",
            items=["IT0001"],
            total=5,
            payment_method_id="PM0001",
            street="s",
            city="c",
            zip="1",
            placed_on="2026-01-02",
        )
    }
    with pytest.raises(ToolError) as err:
        precheck(dom, st, "cancel_pending_order", {"user_id": "U0001", "order_id": "O0035"})
    assert err.value.message == "cancel_pending_order: order O0035 does not belong to user U0001"
    assert "U0002" in err.value.detail and "requires Order[order_id].user_id" in err.value.detail
    # Her own cancelled order: the status word comes from the message, not from a fact.
    st.set_field("Order", "O0035", "user_id", "U0001")
    with pytest.raises(ToolError) as err:
        precheck(dom, st, "cancel_pending_order", {"user_id": "U0001", "order_id": "O0035"})
    assert "'cancelled'" not in err.value.message and "requires" not in err.value.message
    assert err.value.located() == f"{err.value.message} ({err.value.detail})"
    assert "Order 'O0035' has status = 'cancelled'" in err.value.detail
    # Unexplained (the task expander's many draws): the same error but the facts read.
    with pytest.raises(ToolError) as quiet:
        precheck(
            dom,
            st,
            "cancel_pending_order",
            {"user_id": "U0001", "order_id": "O0035"},
            explain=False,
        )
    assert (quiet.value.message, quiet.value.kind) == (err.value.message, err.value.kind)
    assert quiet.value.detail == "requires Order[order_id].status == 'pending'"
    assert err.value.detail.startswith(quiet.value.detail + "; ")


def test_runtime_and_interpreter_share_the_words_for_a_check_without_message() -> None:
    assert runtime.NO_MESSAGE == NO_MESSAGE
    exc = runtime.precondition_failed("t", "", "x.a == 1", ["Row 'R1' has a = 2"])
    assert exc.message == f"t: {NO_MESSAGE}"
    assert exc.detail == "requires x.a == 1; Row 'R1' has a = 2"
    assert exc.within("t", unless_prefixed=True).detail == exc.detail


def test_the_environment_keeps_the_detail_out_of_the_observation(tmp_path: Path) -> None:
    dom = load_builtin("mock")
    write_package(dom, tmp_path / "mock_env")
    pkg = _import_package(tmp_path / "mock_env")
    rows = {
        "A001": dict(email="a@x.org", owner="Ana", balance=5, status="locked"),
    }
    task = {
        "initial_state": {"tables": {"Account": rows, "Payment": {}}, "counters": {}},
        "instruction": "Lock my account.",
        "goal": {"changes": [], "answer": []},
    }
    env = pkg.Environment()
    env.reset(options={"task": task})
    obs, _, _, _, info = env.step({"name": "lock_account", "arguments": {"account_id": "A001"}})
    assert obs == f"Error: lock_account: {NO_MESSAGE}"  # mock's check has no message
    assert info["error"] == "precondition"
    assert info["detail"].startswith("requires Account[account_id].status == 'active'")
    assert "'locked'" in info["detail"]


def test_schema_hints_use_the_right_article() -> None:
    hints = {
        p["description"].rsplit(". ", 1)[-1]
        for t in openai_tools(load_builtin("retail"))
        for p in t["function"]["parameters"]["properties"].values()
        if p["description"].endswith(" id.")
    }
    assert "A user id." in hints and "An order id." in hints and "An item id." in hints
    assert "A payment method id." in hints
    assert not any(h.startswith("An User") or h.startswith("An user") for h in hints)
    assert [indefinite_article(w) for w in ("user", "hour", "Airport", "unit", "unusual")] == [
        "a",
        "an",
        "an",
        "a",
        "an",
    ]


@pytest.mark.parametrize("name", ["retail", "airline"])
def test_refusals_are_not_for_a_stranger_drawn_as_the_customer(name: str) -> None:
    # The order and reservation writes take the customer's user id; a refusal candidate
    # binds it to the owner of the rows it names, so it is refused for a real reason,
    # never "does not belong to user ..." for a user id nobody would give.
    from graphgen.interp import failed_check
    from graphgen.stategen import generate_state
    from graphgen.tasks.expand import Expander, NoCandidate

    dom = load_builtin(name)
    exp = Expander(dom)
    st = generate_state(dom, 5, {e: d.size for e, d in dom.entities.items()})
    refusals = []
    for i in range(40):
        try:
            refusals.append(exp.refusal(st, random.Random(i)))
        except NoCandidate:
            continue
    assert len(refusals) >= 20, len(refusals)
    owned = 0
    for cand in refusals:
        assert cand.refused_call is not None
        call = cand.refused_call
        chk = failed_check(dom, st, call.tool, dict(call.args))
        assert chk is not None and "does not belong" not in chk.message, (call, chk)
        if "user_id" in call.args and ("order_id" in call.args or "reservation_id" in call.args):
            ent, key = (
                ("Order", "order_id") if name == "retail" else ("Reservation", "reservation_id")
            )
            assert st.tables[ent][call.args[key]]["user_id"] == call.args["user_id"]
            owned += 1
    assert owned > 0


# A check that always fails, so that its message is written with the arguments given.
FORMATS = """
name: formats
entities:
  Ticket:
    key: {name: ticket_id, type: int}
    size: 2
    fields:
      title: str
tools:
  t:
    params:
      ticket_id: Ticket
      amt: decimal
      opt: {type: "int | None", default: null}
    requires: {check: "False", message: "MESSAGE"}
    returns: "1"
"""


@pytest.mark.parametrize(
    ("message", "words"),
    [
        # None takes no format spec: an optional parameter is converted first
        ("{opt:>4}", "opt may be None, which takes no format spec: write {opt!s:>4}"),
        ("{opt!s:>4}|{opt!r}", None),
        ("{opt:d}", "may be None"),
        # an int id is an int: 's' does not fit it, a width does
        ("{ticket_id:s}", "bad format spec for Ticket id"),
        ("{ticket_id:>3}", None),
        # a decimal is a Decimal: fixed point fits it
        ("{amt:.1f}|{amt:>8}", None),
        ("{amt:d}", "bad format spec for decimal"),
    ],
)
def test_message_format_specs_fit_every_value_a_parameter_takes(
    message: str, words: str | None, tmp_path: Path
) -> None:
    # The check tried a spec on one sample per parameter ("x" for all but ints and
    # bools), so {opt:>4} with opt absent, or {ticket_id:s} with an int id, loaded and
    # then crashed the call (a TypeError, not a ToolError) in every backend.
    from graphgen.load import loads_domain

    text = FORMATS.replace("MESSAGE", message)
    if words is not None:
        with pytest.raises(
            DomainError, match=r"tool 't' \(line \d+\), requires\[0\]\.message"
        ) as e:
            loads_domain(text)
        assert words in str(e.value)
        return
    dom = loads_domain(text)
    write_package(dom, tmp_path / "formats_env")
    pkg = _import_package(tmp_path / "formats_env")
    tools = __import__(pkg.__name__ + ".tools", fromlist=["call_tool"])
    state = generate_state(dom, 0)
    for args in ({"ticket_id": 1, "amt": "2.50"}, {"ticket_id": 2, "amt": 3, "opt": 7}):
        with pytest.raises(ToolError) as want:
            precheck(dom, state, "t", args)
        db = pkg.models.Db.from_state(state.to_dict())
        with pytest.raises(pkg.ToolError) as got:
            tools.call_tool(db, "t", args)
        assert got.value.message == want.value.message
    assert want.value.message.startswith("t: ")


NEEDLE_FIRST = """
name: needle
entities:
  Member:
    key: {name: code, type: str}
    size: 2
    fields:
      nick: str
tools:
  t:
    params:
      code: Member
    requires:
      - check: "Member['gone-1'].nick in Member['gone-2'].nick"
        message: "not a part"
    returns: "1"
"""


def test_a_substring_test_reads_the_needle_first_in_every_backend(tmp_path: Path) -> None:
    """``a in b`` on text is held as (haystack, needle); evaluated in that order, the
    interpreter named the haystack's missing row where the compiled code, evaluating
    Python's ``a in b``, named the needle's. Both name the needle's now."""
    from graphgen.load import loads_domain

    dom = loads_domain(NEEDLE_FIRST)
    state = generate_state(dom, 0)
    args = {"code": next(iter(state.tables["Member"]))}
    with pytest.raises(ToolError) as want:
        precheck(dom, state, "t", args)
    assert "gone-1" in want.value.message and "gone-2" not in want.value.message
    write_package(dom, tmp_path / "needle_env")
    pkg = _import_package(tmp_path / "needle_env")
    tools = __import__(pkg.__name__ + ".tools", fromlist=["call_tool"])
    db = pkg.models.Db.from_state(state.to_dict())
    with pytest.raises(pkg.ToolError) as got:
        tools.call_tool(db, "t", args)
    assert got.value.message == want.value.message
