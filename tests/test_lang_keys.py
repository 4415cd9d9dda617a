"""Int keys, records that show a row, and results keyed by id (language v2, items 1 and 9).

The test domain is ``tests/data/lang/tickets.yaml``: users with counter ids (``U001``),
tickets with int ids (``key: {name: ticket_id, type: int}``), a read returning a record
literal that holds the whole row, dict comprehensions keyed by ticket id, a delete and
literal int ids. The interpreter, z3 and generated-code differential tests run on it too
(``test_z3_encoding.py``, ``test_codegen.py``).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from graphgen import ir
from graphgen.errors import DomainError, ToolError
from graphgen.grading import changes_hold, grade
from graphgen.interp import call_tool, evaluate
from graphgen.keys import key_from_json, next_counter
from graphgen.knowledge import facts_of_result, key_sort, row_lookup, shown_cells
from graphgen.load import load_domain, loads_domain
from graphgen.parse import Elaborator
from graphgen.state import State
from graphgen.stategen import check_state, generate_state
from graphgen.types import INT, MapT, RefT
from graphgen.unparse import to_source

PATH = Path(__file__).parent / "data" / "lang" / "tickets.yaml"
TEXT = PATH.read_text(encoding="utf-8")
D = load_domain(PATH)
EL = Elaborator(D.entities)
KEYS = {n: e.key for n, e in D.entities.items()}


def _state() -> State:
    return State(
        {
            "User": {
                "U001": {"email": "a@x.io", "name": "Ann"},
                "U002": {"email": "b@x.io", "name": "Bo"},
            },
            "Ticket": {
                1: {"owner": "U001", "title": "Desk", "priority": 2, "status": "open"},
                2: {"owner": "U002", "title": "Lamp", "priority": 5, "status": "closed"},
                10: {"owner": "U001", "title": "Chair", "priority": 1, "status": "closed"},
            },
        },
        {"User": 3, "Ticket": 4},  # behind the largest id: creates must skip past 10
    )


# ------------------------------------------------------------------ keys


def test_int_key_domain_loads_and_types_literals() -> None:
    assert D.int_keys == frozenset({"Ticket"})
    assert D.entities["Ticket"].make_id(7) == 7
    assert D.entities["User"].make_id(7) == "U007"
    e = EL.expr("Ticket[3].status", {})
    assert isinstance(e, ir.FieldOf) and e.key == ir.Lit(3, RefT("Ticket"))
    c = EL.condition("ticket_id == 3", {"ticket_id": RefT("Ticket")})
    assert isinstance(c, ir.Compare) and c.right == ir.Lit(3, RefT("Ticket"))
    assert EL.condition("3 in Ticket", {}) == ir.Exists("Ticket", ir.Lit(3, RefT("Ticket")), c.ty)


@pytest.mark.parametrize(
    ("src", "fragment", "col"),
    [
        ("Ticket['3'].status", "Ticket ids are integers, got '3'", 8),
        ("ticket_id == 'T1'", "Ticket ids are integers, got 'T1'", 1),
        ("User[3].name", "User ids are strings, got 3", 6),
        ("'3' in Ticket", "Ticket ids are integers, got '3'", 1),
    ],
)
def test_literal_id_of_the_wrong_type_is_a_located_error(src: str, fragment: str, col: int) -> None:
    from graphgen.errors import ExprError

    with pytest.raises(ExprError) as info:
        EL.expr(src, {"ticket_id": RefT("Ticket")})
    assert fragment in info.value.message
    assert info.value.col == col


def test_broken_key_options_are_located() -> None:
    bad = TEXT.replace(
        "key: {name: ticket_id, type: int}", 'key: {name: ticket_id, type: int, prefix: "T"}'
    )
    with pytest.raises(DomainError) as info:
        loads_domain(bad, source="tickets.yaml")
    text = str(info.value)
    assert "an int key has no prefix" in text
    assert "tickets.yaml" in text and "entity 'Ticket'" in text and "key" in text
    bad = TEXT.replace("key: {name: ticket_id, type: int}", "key: {name: ticket_id, type: float}")
    with pytest.raises(DomainError, match="key type 'float' is not one of str, int"):
        loads_domain(bad, source="tickets.yaml")


def test_broken_literal_id_in_a_tool_names_tool_and_column() -> None:
    bad = TEXT.replace("Ticket[1].status if 1 in Ticket", "Ticket['1'].status if 1 in Ticket")
    with pytest.raises(DomainError) as info:
        loads_domain(bad, source="tickets.yaml")
    (prob,) = info.value.problems
    assert "Ticket ids are integers, got '1'" in prob.message
    assert "tool 'first_ticket'" in prob.where
    assert prob.col is not None and prob.expr[prob.col - 1 :].startswith("'1'")


def test_create_takes_the_next_free_int_never_below_the_largest_id() -> None:
    st = _state()
    assert next_counter(D.entities["Ticket"], st.tables["Ticket"], st.counters["Ticket"]) == 11
    new = call_tool(D, st, "open_ticket", {"user_id": "U001", "title": "Mug", "priority": 3})
    assert new == 11 and st.counters["Ticket"] == 12
    assert call_tool(D, st, "open_ticket", {"user_id": "U002", "title": "Pen", "priority": 1}) == 12
    # A delete does not give an id back.
    call_tool(D, st, "delete_ticket", {"user_id": "U002", "ticket_id": 2})
    assert call_tool(D, st, "open_ticket", {"user_id": "U002", "title": "Cup", "priority": 1}) == 13


def test_a_delete_does_not_give_its_id_back_when_the_counter_is_behind(tmp_path: Path) -> None:
    # Counter 4 is behind id 10 (an imported state may be). Deleting 10 left the
    # largest id at 2, so the interpreter and the compiled package gave the next ticket
    # id 4 while the z3 encoding, which takes the next id from the initial state, gave
    # 11: the proofs and the environment disagreed on the new row's id.
    from graphgen.envs.codegen import write_package
    from graphgen.verify.concrete import run_concrete
    from tests.test_codegen import _import_package

    chain = [
        ("delete_ticket", {"user_id": "U001", "ticket_id": 10}),
        ("open_ticket", {"user_id": "U002", "title": "Cup", "priority": 1}),
    ]
    st = _state()
    assert [call_tool(D, st, name, args) for name, args in chain][1] == 11
    assert st.counters["Ticket"] == 12
    assert run_concrete(D, _state(), chain) == ([True, True], st)
    write_package(D, tmp_path / "tickets_env")
    pkg = _import_package(tmp_path / "tickets_env")
    db = pkg.models.Db.from_state(_state().to_dict())
    assert [pkg.tools.call_tool(db, name, args) for name, args in chain][1] == 11
    assert db.to_state() == st.to_dict()
    # a call that fails after its delete puts the counter back with the row
    drop = (
        TEXT
        + """
  drop:
    params: {ticket_id: Ticket}
    effects: ["del Ticket[ticket_id]", "Ticket[1].priority = 99"]
"""
    )
    d2 = loads_domain(drop)
    st = _state()
    with pytest.raises(ToolError, match="priority"):
        call_tool(d2, st, "drop", {"ticket_id": 10})
    assert st == _state()
    write_package(d2, tmp_path / "drop_env")
    pkg = _import_package(tmp_path / "drop_env")
    db = pkg.models.Db.from_state(_state().to_dict())
    with pytest.raises(pkg.ToolError, match="priority"):
        pkg.tools.call_tool(db, "drop", {"ticket_id": 10})
    assert db.to_state() == _state().to_dict()


def test_int_id_arguments_are_checked_by_type() -> None:
    st = _state()
    with pytest.raises(ToolError) as info:
        call_tool(D, st, "get_ticket", {"ticket_id": "1"})
    assert info.value.kind == "bad_args"
    assert "must be an integer (Ticket id), got '1'" in info.value.message
    with pytest.raises(ToolError) as info:
        call_tool(D, st, "get_ticket", {"ticket_id": 99})
    assert info.value.kind == "not_found" and "Ticket 99 not found" in info.value.message
    with pytest.raises(ToolError, match="must be an integer"):
        call_tool(D, st, "get_ticket", {"ticket_id": True})


def test_state_json_round_trip_keeps_int_ids() -> None:
    st = _state()
    text = st.to_json()
    data = json.loads(text)
    assert data["int_keys"] == ["Ticket"]
    assert set(data["tables"]["Ticket"]) == {"1", "2", "10"}
    back = State.from_dict(data)
    assert back == st and list(back.tables["Ticket"]) == [1, 2, 10]  # number order
    assert State.from_dict(data, D) == st  # the domain says the same
    assert back.to_json() == text
    # A state of a domain without int ids keeps its bytes: no int_keys entry.
    plain = State({"User": {"U001": {"email": "a", "name": "b"}}}, {"User": 2})
    assert "int_keys" not in plain.to_dict()


def test_state_json_rejects_a_key_that_is_not_an_int() -> None:
    data = json.loads(_state().to_json())
    data["tables"]["Ticket"]["01"] = data["tables"]["Ticket"].pop("1")
    with pytest.raises(ValueError, match="table Ticket: '01' is not an integer id"):
        State.from_dict(data)
    with pytest.raises(ValueError):
        key_from_json(True, "x")
    assert key_from_json(False, "007") == "007"


def test_generated_states_number_int_ids_from_one() -> None:
    st = generate_state(D, 3)
    assert list(st.tables["Ticket"]) == list(range(1, D.entities["Ticket"].size + 1))
    assert st.counters["Ticket"] == D.entities["Ticket"].size + 1
    assert check_state(D, st) == []
    bad = st.copy()
    bad.put_row("Ticket", "7", bad.tables["Ticket"][1])
    bad.delete_row("Ticket", 1)
    assert any("Ticket ids are integers" in p for p in check_state(D, bad))


def test_grading_matches_created_int_ids_up_to_renaming() -> None:
    st = _state()
    initial = json.loads(st.to_json())  # as a task file holds it: "1", "2", "10"
    a = {"owner": "U001", "title": "Mug", "priority": 3, "status": "open"}
    b = {"owner": "U002", "title": "Pen", "priority": 1, "status": "open"}
    goal = {
        "changes": [
            {"entity": "Ticket", "key": 11, "field": "*", "before": None, "after": a},
            {"entity": "Ticket", "key": 12, "field": "*", "before": None, "after": b},
        ],
        "answer": [],
    }
    # The agent made the same two tickets in the other order: ids swapped.
    call_tool(D, st, "open_ticket", {"user_id": "U002", "title": "Pen", "priority": 1})
    call_tool(D, st, "open_ticket", {"user_id": "U001", "title": "Mug", "priority": 3})
    final = st.to_dict()  # in memory: int ids
    assert not changes_hold(final, goal["changes"])  # not under the ids as written
    assert changes_hold(final, goal["changes"], initial)
    assert grade(initial, json.loads(json.dumps(final)), goal)["success"]
    wrong = {**goal, "changes": [goal["changes"][0]]}
    assert not grade(initial, final, wrong)["success"]  # an extra row is an extra change


# ------------------------------------------------------------------ records and maps


def test_record_literal_with_a_row_is_a_row_read() -> None:
    r = row_lookup(D.tools["get_ticket"].returns)
    assert r is not None and r.entity == "Ticket"
    assert row_lookup(D.tools["delete_ticket"].returns) is None  # no whole row in it
    st = _state()
    got = call_tool(D, st, "get_ticket", {"ticket_id": 1})
    assert got == {"ticket": {"ticket_id": 1, **st.tables["Ticket"][1]}}
    cells = shown_cells(D, D.tools["get_ticket"], {"ticket_id": 1}, got)
    assert ("Ticket", 1, "title") in cells


def test_dict_comprehension_is_keyed_by_id_strings() -> None:
    st = _state()
    got = call_tool(D, st, "user_tickets", {"user_id": "U001"})
    assert list(got) == ["1", "10"]  # JSON object keys, rows in id order
    assert got["10"] == {"ticket_id": 10, **st.tables["Ticket"][10]}
    assert json.loads(json.dumps(got)) == got
    pr = call_tool(D, st, "open_priorities", {"user_id": "U001"})
    assert pr == {"1": 2}
    e = D.tools["open_priorities"].returns
    assert isinstance(e, ir.DictComp) and e.ty == MapT(RefT("Ticket"), INT)
    # The knowledge model learns the keys as ids (int 1, not "1") and the values.
    facts = facts_of_result(D, D.tools["open_priorities"], pr)
    assert (key_sort("Ticket"), 1) in facts
    cells = shown_cells(D, D.tools["open_priorities"], {"user_id": "U001"}, pr)
    assert {("Ticket", 1, "priority"), ("Ticket", 1, "owner"), ("Ticket", 1, "status")} <= cells


def test_dict_comprehension_round_trips_and_rejects_other_keys() -> None:
    scope = {"user_id": RefT("User")}
    src = "{t.ticket_id: t.priority for t in Ticket if t.owner == user_id}"
    e = EL.expr(src, scope)
    assert to_source(e, keys=KEYS) == src
    assert EL.expr(to_source(e, keys=KEYS), scope) == e
    assert evaluate(e, _state(), {"user_id": "U002"}, D) == {"2": 5}
    from graphgen.errors import ExprError

    with pytest.raises(ExprError) as info:
        EL.expr("{t.title: t for t in Ticket}", {})
    assert "keyed by the row's id: {t.ticket_id: ... for t in Ticket}" in info.value.message
    assert info.value.col == 2
    with pytest.raises(ExprError, match="exactly one 'for'"):
        EL.expr("{t.ticket_id: t for t in Ticket for u in User}", {})


def test_broken_dict_comprehension_in_a_file_is_located() -> None:
    bad = TEXT.replace("{t.ticket_id: t for t in Ticket", "{t.title: t for t in Ticket")
    with pytest.raises(DomainError) as info:
        loads_domain(bad, source="tickets.yaml")
    (prob,) = info.value.problems
    assert "tool 'user_tickets'" in prob.where
    assert "a dict comprehension is keyed by the row's id" in prob.message
    assert prob.col is not None and prob.expr[prob.col - 1 :].startswith("t.title")


def test_scalar_pick_out_of_a_lookup() -> None:
    st = _state()
    assert call_tool(D, st, "ticket_status", {"ticket_id": 10}) == "closed"
    got = call_tool(D, st, "first_ticket", {"ticket_id": 2})
    assert got == {"first": False, "status": "open"}


def test_index_picks_one_item() -> None:
    st = _state()
    assert call_tool(D, st, "latest_ticket", {"user_id": "U001"}) == 10  # [-1]: the last
    assert call_tool(D, st, "first_open_title", {"user_id": "U001"}) == "Desk"
    with pytest.raises(ToolError) as info:
        call_tool(D, st, "first_open_title", {"user_id": "U002"})  # no open ticket
    assert info.value.kind == "empty"
    assert info.value.message == "first_open_title: index 0 is outside a list of 0"
    e = D.tools["latest_ticket"].returns
    assert isinstance(e, ir.Index) and e.ty == RefT("Ticket")
    assert to_source(e, keys=KEYS) == "[t.ticket_id for t in Ticket if t.owner == user_id][-1]"
    # The id it returns is a revealed Ticket id.
    assert (key_sort("Ticket"), 10) in facts_of_result(D, D.tools["latest_ticket"], 10)


@pytest.mark.parametrize(
    ("src", "fragment"),
    [
        ("Ticket[1].title[0]", "only a table or a list can be indexed"),
        ("[t.title for t in Ticket][0:2]", "slices are not allowed"),
        ("[t.title for t in Ticket]['a']", "a list index is an int position, got str"),
    ],
)
def test_bad_index_is_an_error(src: str, fragment: str) -> None:
    from graphgen.errors import ExprError

    with pytest.raises(ExprError, match=fragment):
        EL.expr(src, {})


@pytest.mark.slow
def test_record_and_map_reads_give_information_tasks() -> None:
    """The record literal ``{'ticket': Ticket[ticket_id]}`` and the dict comprehensions
    feed information tasks (a record return once gave none: no_information_target)."""
    from graphgen.tasks.expand import GenOptions
    from graphgen.tasks.taskset import generate

    opts = GenOptions(kinds={"information": 1.0})
    ts = generate(D, 8, 0, opts)
    assert len(ts.tasks) >= 6, ts.manifest
    used = {c.tool for t in ts.tasks for c in t.chain}
    assert "get_ticket" in used


def test_task_files_with_int_ids_validate_and_a_string_id_is_rejected() -> None:
    from graphgen.tasks.taskset import generate
    from graphgen.tasks.validate import task_problem

    tasks = [json.loads(t.model_dump_json()) for t in generate(D, 4, 0).tasks]
    for t in tasks:
        task_problem(t, D)  # as read back from a file: "3" keys, int_keys, int args
    bad = next(t for t in tasks if any("ticket_id" in c["args"] for c in t["chain"]))
    call = next(c for c in bad["chain"] if "ticket_id" in c["args"])
    call["args"]["ticket_id"] = str(call["args"]["ticket_id"])
    with pytest.raises(Exception, match=r"must be an integer \(Ticket id\)"):
        task_problem(bad, D)


def test_a_givable_int_id_is_said_with_its_noun() -> None:
    import re

    from graphgen.tasks.taskset import generate

    text = TEXT.replace(
        "key: {name: ticket_id, type: int}", "key: {name: ticket_id, type: int, givable: true}"
    )
    d = loads_domain(text, source="tickets.yaml")
    said = " ".join(t.instruction for t in generate(d, 6, 4).tasks)
    assert re.search(r"\bticket \d+\b", said), said
    assert not re.search(r"\b(close|delete|of) \d+\b", said), said  # never a bare number
