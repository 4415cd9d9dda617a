"""Keys given by the data and creates that name their key (language v2, item 1).

The test domain is ``tests/data/lang/airports.yaml``: airports keyed by their code
(``key: {name: code, type: str}``, no prefix: ids come from the data), int-keyed routes
between them, and ``add_airport``, whose create names the new row's key. The
interpreter-vs-compiled differential test runs on it (``test_codegen.py``), and the
interpreter-vs-z3 one on it without ``add_airport`` (``test_z3_encoding.py``): the
proofs refuse a create that names its key, as tested here.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from graphgen.errors import DomainError, ToolError
from graphgen.interp import call_tool
from graphgen.load import load_domain, loads_domain
from graphgen.state import State
from graphgen.stategen import generate_state
from graphgen.stateimport import StateImportError, import_state
from graphgen.verify.concrete import run_concrete
from graphgen.verify.terms import EncodeError

PATH = Path(__file__).parent / "data" / "lang" / "airports.yaml"
TEXT = PATH.read_text(encoding="utf-8")
D = load_domain(PATH)


def _state() -> State:
    return State(
        {
            "Airport": {
                "SFO": {"city": "San Francisco", "open": True},
                "LAX": {"city": "Los Angeles", "open": True},
            },
            "Route": {1: {"origin": "SFO", "dest": "LAX", "price": 120}},
        },
        {"Airport": 1, "Route": 2},
    )


def _problem(text: str) -> str:
    with pytest.raises(DomainError) as info:
        loads_domain(text, source="airports.yaml")
    return str(info.value)


# ------------------------------------------------------------------ loading


def test_a_str_key_without_prefix_is_given_by_the_data() -> None:
    assert D.entities["Airport"].data_key
    assert not D.entities["Route"].data_key
    # A prefix (even "") or a width keeps the formatted counter of v1.
    counter = TEXT.replace(
        "key: {name: code, type: str, givable: true, vocab: airport_code}",
        'key: {name: code, type: str, prefix: ""}',
    ).replace("Airport.create(code=code, ", "Airport.create(")
    assert not loads_domain(counter, source="airports.yaml").entities["Airport"].data_key


def test_generated_ids_come_from_the_key_vocab_distinct_and_seeded() -> None:
    a, b = generate_state(D, 3), generate_state(D, 3)
    ids = list(a.tables["Airport"])
    assert ids == list(b.tables["Airport"])
    assert len(set(ids)) == len(ids) == 5
    assert all(len(k) == 3 and k.isupper() for k in ids)  # airport codes
    assert ids != list(generate_state(D, 4).tables["Airport"])
    # Routes refer to those ids.
    assert all(r["origin"] in a.tables["Airport"] for r in a.tables["Route"].values())
    plain = loads_domain(TEXT.replace(", vocab: airport_code}", "}", 1), source="airports.yaml")
    assert list(generate_state(plain, 3).tables["Airport"])[:2] == ["airport-1", "airport-2"]


def test_broken_create_without_the_key_of_a_data_keyed_entity_is_located() -> None:
    bad = TEXT.replace("Airport.create(code=code, ", "Airport.create(")
    with pytest.raises(DomainError) as info:
        loads_domain(bad, source="airports.yaml")
    prob = info.value.problems[0]  # (the next one: the returns' name was never bound)
    assert "Airport ids are given by the data" in prob.message
    assert "Airport.create(code=..., ...)" in prob.message
    assert "tool 'add_airport'" in prob.where
    assert "airports.yaml" in str(info.value)
    assert prob.col is not None


def test_broken_key_vocab_is_located() -> None:
    text = _problem(TEXT.replace("vocab: airport_code}", "vocab: airprot_code}", 1))
    assert "unknown vocabulary 'airprot_code'" in text and "entity 'Airport'" in text
    text = _problem(TEXT.replace("vocab: airport_code}", "vocab: email}", 1))
    assert "makes values, not a list of words" in text
    counter = TEXT.replace(
        "key: {name: route_id, type: int}", 'key: {name: route_id, prefix: "R", vocab: words}'
    )
    assert "only a key given by the data" in _problem(counter)


def test_broken_key_of_the_wrong_type_in_a_create_is_located() -> None:
    bad = TEXT.replace(
        "r = Route.create(origin=origin", "r = Route.create(route_id=origin, origin=origin"
    )
    text = _problem(bad)
    assert "tool 'add_route'" in text and "expected Route id, got Airport" in text


# ------------------------------------------------------------------ calls


def test_create_with_a_named_key_inserts_under_it() -> None:
    st = _state()
    assert call_tool(D, st, "add_airport", {"code": "JFK", "city": "New York"}) == "JFK"
    assert st.tables["Airport"]["JFK"] == {"city": "New York", "open": True}
    assert st.counters["Airport"] == 1  # a named key does not move the counter


def test_create_with_a_taken_key_fails_with_kind_exists_and_changes_nothing() -> None:
    st = _state()
    before = json.dumps(st.to_dict(), sort_keys=True)
    with pytest.raises(ToolError) as info:
        call_tool(D, st, "add_airport", {"code": "SFO", "city": "Elsewhere"})
    assert info.value.kind == "exists"
    assert "Airport 'SFO' already exists" in info.value.message
    with pytest.raises(ToolError) as info:
        call_tool(D, st, "add_airport", {"code": "", "city": "Nowhere"})
    assert info.value.kind == "bad_args"
    assert json.dumps(st.to_dict(), sort_keys=True) == before


def test_a_named_int_key_keeps_later_creates_past_it() -> None:
    text = TEXT.replace(
        "r = Route.create(origin=origin", "r = Route.create(route_id=price, origin=origin"
    )
    d = loads_domain(text, source="airports.yaml")
    st = _state()
    args = {"origin": "LAX", "dest": "SFO", "price": 50}
    assert call_tool(d, st, "add_route", args) == 50
    with pytest.raises(ToolError, match="already exists"):
        call_tool(d, st, "add_route", args)
    plain = D  # the plain create takes the next free int, past the named 50
    assert call_tool(plain, st, "add_route", {**args, "price": 60}) == 51


# ------------------------------------------------------------------ state import


def test_import_keeps_str_ids_given_by_the_data() -> None:
    data = {
        "tables": {
            "Airport": {
                "BOS": {"city": "Boston", "open": True},
                "ORD": {"city": "Chicago", "open": False},
            },
            "Route": {"7": {"origin": "BOS", "dest": "ORD", "price": 300}},
        },
        "counters": {"Airport": 1, "Route": 8},
        "int_keys": ["Route"],
    }
    st = import_state(D, data)
    assert list(st.tables["Airport"]) == ["BOS", "ORD"]
    assert st.tables["Route"][7]["origin"] == "BOS"
    call_tool(D, st, "close_airport", {"code": "BOS"})
    assert st.tables["Airport"]["BOS"]["open"] is False
    bad = json.loads(json.dumps(data))
    bad["tables"]["Route"]["7"]["dest"] = "XXX"
    with pytest.raises(StateImportError) as info:
        import_state(D, bad)
    assert "XXX" in str(info.value) and "Route" in str(info.value)


# ------------------------------------------------------------------ proofs


def test_the_proofs_refuse_a_create_that_names_its_key() -> None:
    st = _state()
    # Without the named-key create the encoding runs and agrees with the interpreter.
    oks, final = run_concrete(D, st, [("close_airport", {"code": "SFO"})], via_template=False)
    assert oks == [True] and final.tables["Airport"]["SFO"]["open"] is False
    with pytest.raises(EncodeError, match="names its key"):
        run_concrete(
            D, st, [("add_airport", {"code": "JFK", "city": "New York"})], via_template=False
        )


def test_generation_rejects_tasks_needing_a_named_key_create_as_not_encodable() -> None:
    from graphgen.tasks.taskset import generate
    from graphgen.verify.certify import proof_check

    res = generate(D, 6, 0, task_checks=[proof_check], max_attempts=120)
    assert res.rejected["not_encodable"] > 0
    assert res.tasks, "tasks that do not add airports are still proved"
    assert all("add_airport" not in t.tools_used for t in res.tasks)
