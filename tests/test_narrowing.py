"""Arguments drawn through a write tool's precondition (graphgen.tasks.narrowing): the
expander's draws for retail's relational writes bind where independent draws never
did, every drawn value lies in the rows its narrowings allow, a bound call still passes
its whole precondition, and an optional parameter neither is narrowed nor narrows."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from graphgen.domain import Domain
from graphgen.domains import load_builtin
from graphgen.errors import ToolError
from graphgen.interp import precheck
from graphgen.load import loads_domain
from graphgen.state import State
from graphgen.stategen import generate_state
from graphgen.tasks import expand
from graphgen.tasks.expand import Expander
from graphgen.tasks.narrowing import draw_narrowed, narrowings
from graphgen.tasks.plan import Planner

#: retail's writes whose preconditions relate two arguments (an item of that order, a
#: variant of that product) or pick a few rows (delivered orders).
RELATIONAL = (
    "exchange_delivered_order_item",
    "modify_pending_order_item",
    "return_delivered_order",
    "modify_pending_order_payment",
)


def _binds(d: Domain, states: list[State], tool: str, tries: int) -> int:
    """How many of ``tries`` calls of ``Expander._bind`` per state return arguments;
    each returned call is checked to pass its precondition."""
    exp = Expander(d)
    got = 0
    for i, st in enumerate(states):
        for j in range(tries):
            rng = random.Random(f"{i}:{j}")
            planner = Planner(d, st, rng, usage=exp.usage)
            args = exp._bind(d.tools[tool], st, planner, rng)
            if args is not None:
                precheck(d, st, tool, args)  # raises if the draw broke the precondition
                got += 1
    return got


@pytest.fixture(scope="module")
def retail() -> tuple[Domain, list[State]]:
    d = load_builtin("retail")
    return d, [generate_state(d, seed) for seed in range(3)]


@pytest.mark.parametrize("tool", RELATIONAL)
def test_relational_writes_bind(retail: tuple[Domain, list[State]], tool: str) -> None:
    """Each of retail's relational writes binds on most tries (3 states, 10 tries each)."""
    d, states = retail
    assert _binds(d, states, tool, 10) >= 24


def test_without_narrowing_the_exchange_never_binds(
    retail: tuple[Domain, list[State]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same draws made independently (no narrowing) bind no exchange: an item of
    the order and a variant of its product are each a small share of their tables."""
    d, states = retail
    monkeypatch.setattr(expand, "narrowings", lambda tool, relational=False: {})
    assert _binds(d, states, "exchange_delivered_order_item", 10) == 0


def test_drawn_values_lie_in_their_narrowed_rows(retail: tuple[Domain, list[State]]) -> None:
    """Over 200 draws of an exchange: the order is delivered and the user's, the item is
    the order's, and the new item is an in-stock variant of the same product."""
    d, states = retail
    tool = d.tools["exchange_delivered_order_item"]
    st = states[0]
    pools = {
        "user_id": list(st.tables["User"]),
        "order_id": list(st.tables["Order"]),
        "item_id": list(st.tables["Item"]),
        "new_item_id": list(st.tables["Item"]),
    }
    rng = random.Random(0)
    seen: dict[tuple[object, ...], object] = {}
    drawn = Counter[bool]()
    for _ in range(200):
        args = draw_narrowed(d, st, tool, pools, rng, seen)  # type: ignore[arg-type]
        drawn[args is not None] += 1
        if args is None:
            continue
        order = st.tables["Order"][args["order_id"]]
        item, new = st.tables["Item"][args["item_id"]], st.tables["Item"][args["new_item_id"]]
        assert order["status"] == "delivered" and order["user_id"] == args["user_id"]
        assert args["item_id"] in order["items"]
        assert new["product_id"] == item["product_id"] and new["available"]
    assert drawn[True] >= 100
    # the delivered orders and the items in stock are each looked up once, not per draw
    assert sum(1 for k in seen if len(k) == 1) == 2


OPTIONAL_YAML = """
name: shelf
description: Books on shelves.
policy: Move books only to open shelves.
entities:
  Shelf:
    key: {name: shelf_id, prefix: "S", width: 2}
    size: 4
    fields:
      open: bool
      note: {type: str, vocab: person_name}
  Book:
    key: {name: book_id, prefix: "B", width: 2}
    size: 8
    fields:
      shelf_id: Shelf
      flagged: bool
tools:
  flag_book:
    description: Flag a book on a shelf (the first shelf unless told).
    params:
      book_id: {type: Book, description: "The book."}
      shelf_id: {type: Shelf, default: "S01", description: "Its shelf."}
    requires:
      - check: "Book[book_id].shelf_id == shelf_id"
      - check: "Book[book_id].flagged == False"
    effects:
      - "Book[book_id].flagged = True"
    intents: ["Please flag {book_id}."]
  close_shelf:
    description: Close the shelf a book is on.
    params:
      shelf_id: {type: Shelf, description: "The shelf."}
      book_id: {type: Book, description: "A book on it."}
    requires:
      - check: "Book[book_id].shelf_id == shelf_id"
      - check: "Shelf[shelf_id].open"
    effects:
      - "Shelf[shelf_id].open = False"
    intents: ["Please close {shelf_id}."]
"""


def test_an_optional_parameter_neither_is_narrowed_nor_narrows() -> None:
    """A parameter with a default may be left out of a call, so no narrowing targets
    it or reads it; required ones are narrowed by what the others allow."""
    d = loads_domain(OPTIONAL_YAML, source="<shelf>")
    # only the flag narrows the book; the shelf, which may be left out, does not
    assert [w.needs for w in narrowings(d.tools["flag_book"])["book_id"]] == [()]
    assert "shelf_id" not in narrowings(d.tools["flag_book"])
    got = {p: [w.needs for w in ws] for p, ws in narrowings(d.tools["close_shelf"]).items()}
    assert got == {"shelf_id": [("book_id",), ()], "book_id": [("shelf_id",)]}


def test_a_refusal_asks_for_something_coherent_that_one_row_forbids(
    retail: tuple[Domain, list[State]],
) -> None:
    """Refusals draw through the narrowings that relate arguments only: each exchange
    drawn to fail names an item of the user's own order, and fails a condition on one
    row (the order's status, the variant's stock, the card's balance), never the
    ownership or the item's membership. Drawn independently, most named an item the
    order does not hold."""
    d, states = retail
    tool = d.tools["exchange_delivered_order_item"]
    exp = Expander(d)
    failed: Counter[str] = Counter()
    for i, st in enumerate(states):
        for j in range(10):
            rng = random.Random(f"{i}:{j}")
            args = exp._bind(tool, st, Planner(d, st, rng, usage=exp.usage), rng, want_fail=True)
            assert args is not None
            order = st.tables["Order"][args["order_id"]]
            assert order["user_id"] == args["user_id"] and args["item_id"] in order["items"]
            with pytest.raises(ToolError) as info:
                precheck(d, st, tool.name, args)
            failed[info.value.detail.split(";")[0]] += 1
    assert failed and all("user_id" not in why and "item_id in" not in why for why in failed)
    assert any("status" in why for why in failed), failed
