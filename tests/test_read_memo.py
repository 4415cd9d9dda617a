"""Reads answered once per state content (graphgen/interp.py ``run_call``,
graphgen/knowledge.py ``reveal``): a read's outcome and what it shows an agent are kept
in the state's memo, shared by copies until one writes, and never outlive the content
they were computed from. Listing a field's values and telling a described row apart
build no index they do not need (graphgen/tablebase.py, graphgen/tasks/referring.py)."""

from __future__ import annotations

import copy
import random

import pytest

from graphgen.domains import load_builtin
from graphgen.errors import ToolError
from graphgen.interp import call_tool
from graphgen.knowledge import Sort, facts_of_result, reveal, shown_cells
from graphgen.state import State, call_key
from graphgen.stategen import generate_state
from graphgen.tablebase import hashable
from graphgen.tasks.plan import Knowledge
from graphgen.tasks.referring import FEW_ROWS, _shared, describe

MOCK = load_builtin("mock")


def _active(s: State) -> str:
    return str(next(k for k, r in sorted(s.tables["Account"].items()) if r["status"] == "active"))


def test_a_read_is_answered_once_and_shared_by_copies_until_one_writes() -> None:
    s = generate_state(MOCK, 1)
    acc = _active(s)
    first = call_tool(MOCK, s, "get_account", {"account_id": acc})
    c = s.copy()
    assert call_tool(MOCK, c, "get_account", {"account_id": acc}) is first
    balance = first["balance"]
    call_tool(MOCK, c, "deposit", {"account_id": acc, "amount": 5})
    after = call_tool(MOCK, c, "get_account", {"account_id": acc})
    assert after is not first and after["balance"] == balance + 5
    # the original keeps its content, and its answer
    assert call_tool(MOCK, s, "get_account", {"account_id": acc}) is first
    assert first["balance"] == balance


def test_a_failing_or_malformed_read_raises_its_tool_error_every_time() -> None:
    s = generate_state(MOCK, 1)
    row = dict(s.tables["Account"][_active(s)])
    for _ in range(2):
        with pytest.raises(ToolError, match="A999"):
            call_tool(MOCK, s, "get_account", {"account_id": "A999"})
        with pytest.raises(ToolError):  # arguments that are no mapping: the checks say so
            call_tool(MOCK, s, "get_account", None)  # type: ignore[arg-type]
    s.put_row("Account", "A999", row)
    assert call_tool(MOCK, s, "get_account", {"account_id": "A999"})["email"] == row["email"]


def test_call_keys_tell_argument_types_apart() -> None:
    assert call_key("t", {"x": True}) != call_key("t", {"x": 1})
    assert call_key("t", {"x": 1}) != call_key("t", {"x": 1.0})
    assert call_key("t", {"x": 1}) != call_key("u", {"x": 1})
    assert call_key("t", {"x": [1, 2]}) == call_key("t", {"x": [1, 2]})
    assert call_key("t", {"x": [1, 2]}) != call_key("t", {"x": [2, 1]})
    assert call_key("t", {"x": {"a": 1}}) is None  # not hashable: never kept


def test_reveal_is_kept_for_reads_and_made_afresh_for_writes() -> None:
    retail = load_builtin("retail")
    s = generate_state(retail, 0)
    tool = retail.tools["list_products"]
    value = call_tool(retail, s, "list_products", {})
    shown = reveal(retail, s, tool, {}, value)
    assert reveal(retail, s.copy(), tool, {}, value) is shown
    # facts in one fixed order, grouped by sort
    assert list(shown.facts) == sorted(
        facts_of_result(retail, tool, value), key=lambda f: (f[0], repr(f[1]))
    )
    assert [(s_, v) for s_, vs in shown.by_sort for v in vs] == list(shown.facts)
    assert shown.fact_set == frozenset((s_, hashable(v)) for s_, v in shown.facts)
    assert shown.cells == frozenset(shown_cells(retail, tool, {}, value))
    # another domain object (a variant of the same name) is not served what this one
    # computed
    other = copy.copy(retail)
    assert reveal(other, s, other.tools["list_products"], {}, value) is not shown
    # another result for the same call (a compiled environment under check returns its
    # own) is described from itself, never from what the memo holds
    assert reveal(retail, s, tool, {}, copy.deepcopy(value)) is not shown
    fewer = reveal(retail, s, tool, {}, value[:1])
    assert fewer.facts == tuple(
        sorted(facts_of_result(retail, tool, value[:1]), key=lambda f: (f[0], repr(f[1])))
    )
    assert len(fewer.facts) < len(shown.facts)
    assert reveal(retail, s, tool, {}, value) is shown  # the memo kept the first
    write = retail.tools["modify_user_address"]
    assert write.is_write
    assert reveal(retail, s, write, {}, "ok") is not reveal(retail, s, write, {}, "ok")


@pytest.mark.parametrize("known_share", [0.0, 0.5])
def test_learning_a_reveal_keeps_what_was_known_and_adds_in_its_order(known_share: float) -> None:
    """A listing learned by a knowledge that knows little (a pass in C) or much of it
    already (one by one): either way the known values keep their origins and places and
    the new ones follow in the listing's order."""
    retail = load_builtin("retail")
    s = generate_state(retail, 0)
    tool = retail.tools["list_products"]
    shown = reveal(retail, s, tool, {}, call_tool(retail, s, "list_products", {}))
    one, other = Knowledge(), Knowledge()
    known = [shown.facts[3], *shown.facts[: int(len(shown.facts) * known_share)][::-1]]
    for k in (one, other):
        for fs, fv in known:
            k.add(fs, fv, -1)
    one.learn(shown, 4)
    for fs, fv in shown.facts:
        other.add(fs, fv, 4)
    assert one.facts == other.facts
    assert [list(d.items()) for d in one.facts.values()] == [
        list(d.items()) for d in other.facts.values()
    ]
    assert all(one.origin(fs, fv) == -1 for fs, fv in known)
    assert sum(1 for d in one.facts.values() for o in d.values() if o == 4) == len(
        set(shown.facts) - set(known)
    )


def test_a_copy_of_knowledge_and_its_original_learn_apart() -> None:
    """A copy shares its original's facts until either learns more; what one learns
    after (a listing, one added value, a new sort) the other does not know, and what
    both knew keeps its origin in each. A copy of a copy is as independent."""
    retail = load_builtin("retail")
    s = generate_state(retail, 0)
    tool = retail.tools["list_products"]
    shown = reveal(retail, s, tool, {}, call_tool(retail, s, "list_products", {}))
    (fs, fv), (gs, gv) = shown.facts[0], shown.facts[-1]
    base = Knowledge()
    base.add(fs, fv, -1)
    before = {k: dict(d) for k, d in base.facts.items()}
    one = base.copy()
    base.add(fs, "later in base", 1)  # a sort both hold: each changes its own
    assert base.knows(fs, "later in base") and not one.knows(fs, "later in base")
    one.add(fs, "later in one", 3)
    assert one.knows(fs, "later in one") and not base.knows(fs, "later in one")
    one.learn(shown, 2)
    assert one.knows(gs, gv) and not base.knows(gs, gv)
    assert base.facts == {fs: {**before[fs], "later in base": 1}}
    assert one.origin(fs, fv) == -1
    two = one.copy()
    base.add(gs, "only in base", 0)
    two.add(gs, "only in two", 5)
    assert base.knows(gs, "only in base") and not one.knows(gs, "only in base")
    assert two.knows(gs, "only in two") and not one.knows(gs, "only in two")
    assert not base.knows(gs, "only in two") and not two.knows(gs, "only in base")
    new_sort = Sort("field", "Product.nickname")  # a sort none of them knew
    two.add(new_sort, "fresh", 6)
    assert not one.knows(new_sort, "fresh") and two.origin(new_sort, "fresh") == 6
    assert one.values(new_sort) == [] and new_sort not in one.facts
    assert one.values(gs) == [v for v in two.values(gs) if v != "only in two"]


def test_listing_a_fields_values_builds_no_index() -> None:
    s = generate_state(MOCK, 3, {"Account": 40, "Payment": 30})
    vals = list(s.field_values("Account", "email"))
    assert not s.indexed("Account", "email")
    want = sorted({r["email"] for r in s.tables["Account"].values()} - {None}, key=repr)
    assert vals == want
    s.keys_where("Account", "email", vals[0])
    assert s.indexed("Account", "email")


def _shared_by_scan(s: State, entity: str, key: str, fields: list[str]) -> bool:
    row = s.tables[entity][key]
    return any(
        k != key and all(r.get(f) == row[f] for f in fields) for k, r in s.tables[entity].items()
    )


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_telling_a_row_apart_reads_few_rows_rather_than_build_an_index(seed: int) -> None:
    retail = load_builtin("retail")
    s = generate_state(retail, seed, {"User": 60, "PaymentMethod": 150})
    rng = random.Random(seed)
    for key in rng.sample(sorted(s.tables["PaymentMethod"]), 20):
        for fields in (["user_id", "kind"], ["user_id", "kind", "balance"], ["kind", "balance"]):
            assert _shared(s, "PaymentMethod", key, fields) == _shared_by_scan(
                s, "PaymentMethod", key, fields
            )
    # a fresh state: the owner's index narrows a card to a few rows, so no index of
    # the other fields is built
    s = generate_state(retail, seed, {"User": 60, "PaymentMethod": 150})
    s.keys_where("PaymentMethod", "user_id", "U0001")
    key = sorted(s.tables["PaymentMethod"])[0]
    owner = s.tables["PaymentMethod"][key]["user_id"]
    assert len(s.keys_where("PaymentMethod", "user_id", owner)) <= FEW_ROWS
    _shared(s, "PaymentMethod", key, ["kind", "balance", "user_id"])
    assert not s.indexed("PaymentMethod", "kind") and not s.indexed("PaymentMethod", "balance")
    # a description picked on such a state is still unique
    target = describe(retail, s, "PaymentMethod", key, rng, principal=("User", owner))
    assert target is not None


def test_a_new_date_is_a_new_answer() -> None:
    """``today`` is set on a state without a write: a read that depends on the date is
    answered again when it moves, as on a state that never read it."""
    rental = load_builtin("rental")
    s = generate_state(rental, 0)
    cust = sorted(s.tables["Customer"])[0]
    args = {"customer_id": cust, "vehicle_class": "suv", "days": 3, "insurance": True}
    first = call_tool(rental, s, "get_quote", args)
    assert call_tool(rental, s, "get_quote", args) is first
    s.today = "2099-06-10"  # every customer is past 25 by then
    later = call_tool(rental, s, "get_quote", args)
    fresh = generate_state(rental, 0)
    fresh.today = "2099-06-10"
    assert later is not first and later == call_tool(rental, fresh, "get_quote", args)
    assert later["young_driver"] is False
