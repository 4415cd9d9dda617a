"""Optional values (``T | None``, ``None``, ``is None``, narrowing, parameter defaults) and
tool cases with soft failures, end to end: located errors for broken files, the
interpreter, the z3 encoding, the gate and the proofs (a soft failure is a failed call),
and task generation (an absent value is never said).

The codegen and z3 differential tests run the same test domain
(``tests/cases_domain.py``) in ``test_codegen.py`` and ``test_z3_encoding.py``.
"""

from __future__ import annotations

import re
from functools import cache

import pytest
import z3

from graphgen.domain import Domain
from graphgen.errors import DomainError, ToolError
from graphgen.footprint import FieldRef
from graphgen.interp import call_or_fail, call_tool, run_call
from graphgen.load import loads_domain
from graphgen.state import State
from graphgen.tasks.dryrun import check_task
from graphgen.tasks.model import Call, Task
from graphgen.tasks.taskset import generate
from graphgen.types import INT, OptT
from graphgen.verify.calls import encode_call
from graphgen.verify.concrete import run_concrete
from graphgen.verify.proofs import prove_task
from graphgen.verify.symstate import SymState
from graphgen.verify.terms import is_t
from graphgen.verify.universe import Universe
from tests.cases_domain import cases_domain
from tests.test_z3_encoding import interpret

DESK = cases_domain()


def desk_state(user: str | None = None) -> State:
    return State(
        {
            "User": {
                "U001": {"name": "Ann", "manager": None},
                "U002": {"name": "Bo", "manager": "U001"},
            },
            "Session": {"S1": {"user_id": user}},
            "Ticket": {
                "T001": {
                    "title": "a",
                    "priority": None,
                    "level": None,
                    "owner": "U001",
                    "due": None,
                    "closed": False,
                },
                "T002": {
                    "title": "b",
                    "priority": 5,
                    "level": "high",
                    "owner": None,
                    "due": "2026-01-02",
                    "closed": True,
                },
            },
        },
        {"User": 3, "Session": 2, "Ticket": 3},
    )


# ------------------------------------------------------------------ broken files

BASE = """
name: t
entities:
  T:
    key: {name: t_id, prefix: "T"}
    fields:
      p: "int | None"
      n: int
tools:
  x:
    params: {t_id: T, q: {type: "int | None", default: null}}
%s
"""


def _problem(tools_part: str) -> str:
    with pytest.raises(DomainError) as info:
        loads_domain(BASE % tools_part, "<t.yaml>")
    return str(info.value)


@pytest.mark.parametrize(
    ("part", "words", "expr", "col"),
    [
        (
            '    effects: ["T[t_id].n = 1 if T[t_id].p == None else 2"]',
            "compare with None using 'x is None', not '== None'",
            "T[t_id].n = 1 if T[t_id].p == None else 2",
            18,
        ),
        (
            '    effects: ["T[t_id].n = T[t_id].p + 1"]',
            "arithmetic needs int or decimal, got int | None "
            "(it may be None: test 'is not None' first",
            "T[t_id].n = T[t_id].p + 1",
            13,
        ),
        (
            '    effects: ["T[t_id].n = 1 if T[t_id].n is None else 2"]',
            "this value is never None (its type is int)",
            "T[t_id].n = 1 if T[t_id].n is None else 2",
            18,
        ),
        (
            '    effects: ["T[t_id].n = None"]',
            "None is not a int; declare the type as 'int | None'",
            "T[t_id].n = None",
            13,
        ),
        (
            '    effects: ["T[t_id].n = 1 if q is 3 else 2"]',
            "'is' only tests for None",
            "T[t_id].n = 1 if q is 3 else 2",
            18,
        ),
        (
            '    requires: ["q > 1"]\n    effects: ["T[t_id].n = 1"]',
            "> needs int, date or str, got int | None (it may be None",
            "q > 1",
            1,
        ),
    ],
)
def test_broken_expressions_are_located(part: str, words: str, expr: str, col: int) -> None:
    msg = _problem(part)
    assert re.search(r"<t\.yaml>:\d+:\d+: tool 'x' \(line 10\)", msg), msg
    assert words in msg
    assert f"in: {expr} (col {col})" in msg


@pytest.mark.parametrize(
    ("part", "words"),
    [
        (
            "    cases:\n      - fails: true\n        effects: ['T[t_id].n = 1']\n"
            "        returns: \"'no'\"",
            "a soft failure ('fails: true') has no effects",
        ),
        (
            "    effects: ['T[t_id].n = 1']\n    cases:\n      - returns: \"'no'\"",
            "a tool has either cases or tool-level effects/returns, not both",
        ),
        (
            "    cases:\n      - when: 'q is None'\n        returns: \"'no'\"\n"
            "      - returns: '3'",
            "every case returns the same type: case 0 returns str, case 1 returns int",
        ),
        (
            "    cases:\n      - when: 'q is None'\n        returns: \"'no'\"\n"
            "      - effects: ['T[t_id].n = 1']",
            "either every case returns a value or none does (cases without returns: [1])",
        ),
        (
            "    cases:\n      - when: 'q + 1 > 2'\n        returns: \"'no'\"",
            "arithmetic needs int or decimal, got int | None",
        ),
    ],
)
def test_broken_cases_are_located(part: str, words: str) -> None:
    msg = _problem(part)
    assert re.search(r"<t\.yaml>:\d+:\d+: tool 'x' \(line 10\), cases", msg), msg
    assert words in msg, msg


def test_bad_optional_types_and_defaults_are_located() -> None:
    bad_bool = (
        BASE.replace('p: "int | None"', 'p: "bool | None"') % '    effects: ["T[t_id].n = 1"]'
    )
    with pytest.raises(DomainError, match=r"entity 'T'.*fields.p: bool cannot be optional"):
        loads_domain(bad_bool, "<t.yaml>")
    bad_default = BASE.replace(
        'q: {type: "int | None", default: null}', "q: {type: int, default: null}"
    )
    with pytest.raises(
        DomainError, match=r"tool 'x'.*params.q: default None needs the type 'int \| None'"
    ):
        loads_domain(bad_default % '    effects: ["T[t_id].n = 1"]', "<t.yaml>")
    wrong = BASE.replace("default: null", 'default: "x"')
    with pytest.raises(DomainError, match=r"params.q: default 'x' is not an integer"):
        loads_domain(wrong % '    effects: ["T[t_id].n = 1"]', "<t.yaml>")


# ------------------------------------------------------------------ types and narrowing


def test_narrowing_retypes_reads_inside_and_or_ifexp() -> None:
    tool = DESK.tools["edit_ticket"]
    # `priority is None or priority != ...`: the right operand reads priority as an int
    chk = tool.requires[2].expr
    assert chk.ty.show() == "bool"
    assert DESK.tools["edit_ticket"].params["priority"].ty == OptT(INT)
    src = DESK.tools["close"].cases[1].when
    assert src is not None
    ints = [n for n in _walk(src) if getattr(n, "field", None) == "priority"]
    assert {n.ty for n in ints} == {OptT(INT), INT}  # tested, then read as an int


def _walk(e: object) -> list[object]:
    from graphgen import ir

    assert isinstance(e, ir.ExprNode)
    return ir.walk(e)  # type: ignore[arg-type]


def test_builtin_domains_keep_their_hash_and_schema() -> None:
    from graphgen.domains import load_builtin

    # Cases and defaults are left out of the hashed spec when a domain does not use them.
    assert load_builtin("mock").content_hash == "c7edcb935140ceab"


# ------------------------------------------------------------------ interpreter


def test_soft_failure_returns_a_value_and_changes_nothing() -> None:
    st = desk_state(None)
    before = st.copy()
    out = run_call(DESK, st, "logout", {})
    assert out.soft_failed and out.value == {"success": False, "message": "Nobody is logged in."}
    assert st == before
    assert call_tool(DESK, st, "logout", {}) == out.value  # what the agent sees
    with pytest.raises(ToolError) as info:
        call_or_fail(DESK, st, "logout", {})  # what tasks and the gate see
    assert info.value.kind == "soft_failure"
    call_tool(DESK, st, "login", {"user_id": "U002"})
    assert run_call(DESK, st, "logout", {}) == run_call(DESK, desk_state("U002"), "logout", {})
    assert st.tables["Session"]["S1"]["user_id"] is None


def test_no_applicable_case_is_a_hard_failure() -> None:
    st = desk_state("U001")
    call_tool(DESK, st, "edit_ticket", {"ticket_id": "T001", "owner": "U001"})
    st.set_field("Ticket", "T001", "owner", None)
    with pytest.raises(ToolError, match="close: no case applies") as info:
        call_tool(DESK, st, "close", {"ticket_id": "T001"})
    assert info.value.kind == "no_case"


def test_defaults_and_partial_update() -> None:
    st = desk_state("U001")
    row = call_tool(DESK, st, "edit_ticket", {"ticket_id": "T001", "priority": 2})
    assert row["priority"] == 2 and row["level"] is None  # absent: kept
    row = call_tool(DESK, st, "edit_ticket", {"ticket_id": "T001", "level": "mid"})
    assert row["priority"] == 2 and row["level"] == "mid"
    new = call_tool(DESK, st, "open_ticket", {"title": "c"})
    assert st.tables["Ticket"][new]["priority"] == 3  # default: 3
    assert st.tables["Ticket"][new]["due"] is None  # default: null
    with pytest.raises(ToolError, match="missing argument"):
        call_tool(DESK, st, "edit_ticket", {"priority": 2})
    assert call_tool(DESK, st, "close", {"ticket_id": "T001"}) == "closed"
    assert call_tool(DESK, st, "close", {"ticket_id": "T001"}) == "already closed"


# ------------------------------------------------------------------ z3


@cache
def _uni(user: str | None) -> tuple[Universe, SymState]:
    st = desk_state(user)
    uni = Universe.build(DESK, st, {"Ticket": 1})
    return uni, SymState.from_state(uni, st)


@pytest.mark.parametrize("user", [None, "U001"])
def test_encoding_marks_soft_failures_as_not_ok(user: str | None) -> None:
    uni, sym = _uni(user)
    enc = encode_call(uni, sym, DESK.tools["logout"], {})
    soft = is_t(z3.simplify(enc.soft))
    assert is_t(z3.simplify(enc.ok)) == (user is not None)
    assert soft == (user is None)  # a soft failure: not ok, and told apart from a hard one


def test_encoding_of_no_case_and_optional_arguments() -> None:
    uni, sym = _uni("U001")
    close = DESK.tools["close"]
    args = {"ticket_id": uni.encode_arg(close.params["ticket_id"].ty, "T001")}
    args["note"] = uni.encode_arg(close.params["note"].ty, None)
    enc = encode_call(uni, sym, close, args)
    assert is_t(z3.simplify(enc.ok))
    st = desk_state("U001")
    st.set_field("Ticket", "T001", "owner", None)
    uni2 = Universe.build(DESK, st)
    enc = encode_call(uni2, SymState.from_state(uni2, st), close, args)
    assert not is_t(z3.simplify(enc.ok)) and not is_t(z3.simplify(enc.soft))  # no case


def test_encoding_fails_a_call_whose_message_shows_an_absent_narrowed_argument() -> None:
    # The f-string reads the arguments a check showed present; when a check fails
    # because one is absent, the encoding still folds the text on that failing path.
    # Decoding None's sentinel as an enum member or a string (IndexError), or a decimal
    # computed from it (InvalidOperation), crashed it where the interpreter just fails
    # the call.
    d = loads_domain(
        """
name: shown
enums: {Tier: [bronze, gold]}
entities:
  Item:
    key: {name: item_id, type: int}
    size: 2
    fields: {label: str}
tools:
  tag:
    params:
      item: Item
      level: {type: "Tier | None", default: null}
      word: {type: "str | None", default: null}
      other: {type: "Item | None", default: null}
      num: {type: "int | None", default: null}
    requires: ["level is not None", "word is not None", "other is not None", "num is not None"]
    returns: "f'{item} is {level}, {word}, {other}, {num * 10.00}'"
""",
        source="<shown>",
    )
    st = State({"Item": {1: {"label": "a"}, 2: {"label": "b"}}}, {"Item": 3})
    given = {"level": "gold", "word": "a", "other": 2, "num": 3}
    for n in range(5):
        chain = [("tag", {"item": 1, **dict(list(given.items())[:n])})]
        for via_template in (False, True):
            got = run_concrete(d, st, chain, via_template=via_template)
            assert got == ([n == 4], st), (n, via_template)


def test_encoding_knows_the_strings_of_guards_of_cases_that_return_nothing() -> None:
    # The string universe took its constant texts ('a' + 'b') and case mappings from
    # the tool's static return view, which has no guards when no case returns: the
    # encoding then refused these calls as comparing a computed string.
    d = loads_domain(
        """
name: guards
entities:
  Box:
    key: {name: box_id, prefix: "B", width: 1}
    fields: {label: str, n: int}
tools:
  bump:
    params: {box_id: Box, word: str}
    cases:
      - when: "word.lower() == Box[box_id].label"
        effects: ["Box[box_id].n += 1"]
      - when: "('a' + 'b') == word"
        effects: ["Box[box_id].n -= 1"]
""",
        source="<guards>",
    )
    st = State({"Box": {"B1": {"label": "abc", "n": 0}}}, {"Box": 2})
    for word, ok in (("ABC", True), ("ab", True), ("zz", False)):
        chain = [("bump", {"box_id": "B1", "word": word})]
        want = interpret(d, st, chain)
        assert want[0] == [ok]
        for via_template in (False, True):
            assert run_concrete(d, st, chain, via_template=via_template) == want, word


# ------------------------------------------------------------------ tasks, gate, proofs


@cache
def desk_tasks() -> list[Task]:
    return generate(DESK, 10, 0).tasks


def test_generated_tasks_never_say_an_absent_value() -> None:
    tasks = desk_tasks()
    assert len(tasks) == 10
    for t in tasks:
        assert not re.search(r"\bNone\b|\bnull\b", t.instruction), t.instruction
        for c in t.chain:
            tool = DESK.tools[c.tool]
            # a left-out argument is omitted, never passed as None
            assert all(v is not None for v in c.args.values()), c
            assert set(tool.params) - set(c.args) <= {
                p for p, d in tool.params.items() if d.has_default
            }
    left_out = [c for t in tasks for c in t.chain if set(DESK.tools[c.tool].params) - set(c.args)]
    assert left_out, "no task left an argument out: the partial-update idiom went untested"


def _relying_on_soft_failure() -> tuple[Task, Task]:
    task = desk_tasks()[0]
    tickets = task.initial_state["tables"]["Ticket"]
    closed = next(k for k, row in sorted(tickets.items()) if row["closed"])
    # closing a closed ticket is a soft failure: the chain relies on a call that fails
    bad = task.model_copy(
        update={"chain": [Call(tool="close", args={"ticket_id": closed}), *task.chain]}
    )
    return task, bad


def test_gate_rejects_a_chain_with_a_soft_failed_call() -> None:
    good, bad = _relying_on_soft_failure()
    assert check_task(DESK, good).ok
    verdict = check_task(DESK, bad)
    assert not verdict.ok and verdict.reason == "call_failed"
    assert "soft failure" in verdict.detail
    # with the agent's view (a soft failure is a result) the call would pass
    assert check_task(DESK, bad, execute=call_tool).ok


def test_proofs_reject_a_chain_with_a_soft_failed_call() -> None:
    good, bad = _relying_on_soft_failure()
    assert all(p.ok for p in prove_task(DESK, good).proofs)
    failed = {p.name: p.detail for p in prove_task(DESK, bad).proofs if not p.ok}
    assert "reference_chain" in failed and "soft failure" in failed["reference_chain"]
    assert "write_orders" in failed


def test_desk_domain_is_a_domain() -> None:
    assert isinstance(DESK, Domain)
    assert [t.name for t in DESK.tools.values() if t.soft_fails] == ["login", "logout", "close"]


def test_graph_enabling_goes_through_case_guards() -> None:
    from graphgen.graph import enabling_fields

    session = {FieldRef("Session", "user_id")}
    assert enabling_fields(DESK, DESK.tools["login"], DESK.tools["logout"]) == {"cases": session}
    assert enabling_fields(DESK, DESK.tools["logout"], DESK.tools["login"]) == {"cases": session}
    assert enabling_fields(DESK, DESK.tools["whoami"], DESK.tools["logout"]) == {}  # a read


def test_footprint_of_cases() -> None:
    from graphgen.footprint import tool_reads, writes

    close = DESK.tools["close"]
    assert writes(close) == {FieldRef("Ticket", "closed"), FieldRef("Ticket", "priority")}
    assert "when" in tool_reads(DESK, close)[FieldRef("Ticket", "owner")]
