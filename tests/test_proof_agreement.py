"""The z3 encoding agrees with the dry-run where they once parted: an optional argument
left out needs no knowledge (the agent can always omit it), and case-insensitive tests
on strings that tools write are tabulated over the strings beneath the case mapping, so
``q.lower() in t.title.lower()`` is one table over (q, title), exact on every pair."""

from __future__ import annotations

import itertools

import pytest
import z3

from graphgen.domain import Domain
from graphgen.load import loads_domain
from graphgen.state import State
from graphgen.tasks.model import Call, Change, Given, Goal, Task
from graphgen.types import STR
from graphgen.verify import strings
from graphgen.verify.certify import certify
from graphgen.verify.proofs import Prover
from graphgen.verify.universe import Universe
from tests.test_z3_encoding import _task as make_task

NOTES_YAML = """
name: notes
description: Notes kept by users, found by a case-insensitive title search.
policy: Help users with their own notes.
enums:
  Status: [draft, final]
entities:
  User:
    key: {name: user_id, prefix: "U", width: 2}
    display: name
    size: 2
    fields:
      name: {type: str, unique: true, givable: true, vocab: person_name}
  Note:
    key: {name: note_id, prefix: "N", width: 2}
    size: 3
    fields:
      user_id: User
      title: {type: str, vocab: ticket_titles}
      status: {enum: Status}
      priority: {type: int, min: 1, max: 5}
tools:
  find_user:
    description: The id of the user with a name, ignoring case.
    params:
      name: {type: User.name, description: "The name."}
    returns: "[u.user_id for u in User if u.name.lower() == name.lower()]"
  list_notes:
    description: A user's notes, optionally only those with a status.
    params:
      user_id: {type: User, description: "The user."}
      status: {type: "Status | None", default: null, description: "Only this status."}
    returns: "[n for n in Note if n.user_id == user_id and (status is None or n.status == status)]"
  search_notes:
    description: A user's notes whose title contains the words, ignoring case.
    params:
      user_id: {type: User, description: "The user."}
      query: {type: Note.title, description: "Words of the title."}
    returns: "[n for n in Note if n.user_id == user_id and query.lower() in n.title.lower()]"
  edit_note:
    description: Change a note's title or priority; pass only what changes.
    params:
      note_id: {type: Note, description: "The note."}
      title: {type: "str | None", default: null, description: "New title."}
      priority: {type: "int | None", min: 1, max: 5, default: null, description: "New priority."}
    requires:
      - check: "title is not None or priority is not None"
        message: "nothing to change"
    effects:
      - "Note[note_id].title = title if title is not None else Note[note_id].title"
      - >-
        Note[note_id].priority = priority if priority is not None
        else Note[note_id].priority
"""

NEW_TITLE = "Printer Jams Daily"


@pytest.fixture(scope="module")
def notes() -> Domain:
    return loads_domain(NOTES_YAML, source="<notes>")


def _state() -> State:
    return State(
        {
            "User": {"U01": {"name": "Ann Lee"}, "U02": {"name": "Bo Park"}},
            "Note": {
                "N01": {
                    "user_id": "U01",
                    "title": "VPN drops every hour",
                    "status": "draft",
                    "priority": 2,
                },
                "N02": {"user_id": "U01", "title": "vpn setup", "status": "final", "priority": 2},
                "N03": {
                    "user_id": "U02",
                    "title": "Laptop will not boot",
                    "status": "draft",
                    "priority": 2,
                },
            },
        },
        {"User": 3, "Note": 4},
    )


def _task(chain: list[Call], givens: list[Given]) -> Task:
    """Retitle note N01 (its title found case-insensitively), through ``chain``."""
    change = Change(
        entity="Note", key="N01", field="title", before="VPN drops every hour", after=NEW_TITLE
    )
    return make_task(_state(), chain, Goal(changes=[change]), givens)


def _pinned(domain: Domain, task: Task, chain: list[Call]) -> str:
    p = Prover(domain, task)
    with p.z3:  # the terms built here go with the prover's
        bmc = p.build()
        assert bmc is not None, p.build_error
        pin = bmc.pinned(chain)
        assert pin is not None
        return p._check([pin, *bmc.length_is(len(chain))])[0]


# the user writes their name in lower case: only the case-insensitive lookup finds them
GIVENS = [
    Given(sort="field:User.name", value="ann lee"),
    Given(sort="free:str", value=NEW_TITLE),
]
FIND = Call(tool="find_user", args={"name": "ann lee"})
LIST = Call(tool="list_notes", args={"user_id": "U01"})  # the status filter left out
EDIT = Call(tool="edit_note", args={"note_id": "N01", "title": NEW_TITLE})


def test_omitted_optional_arguments_need_no_knowledge(notes: Domain) -> None:
    """list_notes without its status filter and edit_note without a priority were refused
    by the encoding (None was not a known value) while the dry-run accepted them; the
    chain is now valid in both, and proven."""
    task = _task([FIND, LIST, EDIT], GIVENS)
    assert _pinned(notes, task, [FIND, LIST]) == "sat"
    got = certify(notes, task)
    assert not isinstance(got, str), got
    assert got.min_calls == 3


def test_arguments_passed_must_still_be_known(notes: Domain) -> None:
    """Leaving an argument out is free; naming a value nobody showed is not: a note id
    before any listing, or a status filter the user never stated."""
    task = _task([FIND, LIST, EDIT], GIVENS)
    assert _pinned(notes, task, [FIND, EDIT]) == "unsat"
    final = Call(tool="list_notes", args={"user_id": "U01", "status": "final"})
    assert _pinned(notes, task, [FIND, final]) == "unsat"
    # an unknown user id passed to the optional-argument tool is refused as well
    assert _pinned(notes, task, [Call(tool="list_notes", args={"user_id": "U02"})]) == "unsat"


def test_case_insensitive_search_reaches_the_goal(notes: Domain) -> None:
    """The search by a title in other case ('vpn drops every hour') finds the note: a
    chain through it is proven, with the given query the only way to the id."""
    query = "vpn drops EVERY hour"
    search = Call(tool="search_notes", args={"user_id": "U01", "query": query})
    givens = [*GIVENS, Given(sort="field:Note.title", value=query)]
    got = certify(notes, _task([FIND, search, EDIT], givens))
    assert not isinstance(got, str), got
    assert got.min_calls == 3


@pytest.mark.parametrize("op", ["contains", "startswith", "endswith", "=="])
def test_tables_over_case_mappings_are_exact_on_every_pair(notes: Domain, op: str) -> None:
    """``op(lower(x), lower(y))``, ``op(lower(x), y)`` and ``op(x, lower(lower(y)))``
    with symbolic x and y give
    Python's answer for every pair of table strings, and are false off the table."""
    st = _state()
    extra = [(STR, s) for s in ("VPN", "vpn DROPS", "", "Hour", "laptop will NOT boot")]
    uni = Universe.build(notes, st, extra=extra)
    x, y = z3.Int("x"), z3.Int("y")

    def lower(t: z3.ArithRef) -> z3.ArithRef:
        return strings.evaluate(uni, "lower", [(t, STR)], "test")  # type: ignore[no-any-return]

    def apply(a: z3.ArithRef, b: z3.ArithRef) -> z3.BoolRef:
        if op == "==":
            got = strings.equal(uni, a, b, "test")
            assert got is not None  # a case mapping is tabulated, never compared as is
            return got  # type: ignore[no-any-return]
        args = [(a, STR), (b, STR)]
        return strings.evaluate(uni, op, args, "test")  # type: ignore[no-any-return]

    def want(a: str, b: str) -> bool:
        if op == "==":
            return a == b
        if op == "contains":
            return b in a
        return bool(getattr(a, op)(b))

    n = len(uni.strings)
    assert n >= 10
    shapes = [
        (apply(lower(x), lower(y)), lambda s, t: want(s.lower(), t.lower())),
        (apply(lower(x), y), lambda s, t: want(s.lower(), t)),
        (apply(x, lower(lower(y))), lambda s, t: want(s, t.lower())),
    ]
    solver = z3.Solver()
    for term, expect in shapes:
        for i, j in itertools.product(range(n), repeat=2):
            solver.push()
            solver.add(x == i, y == j)
            assert solver.check() == z3.sat
            got = z3.is_true(solver.model().eval(term, model_completion=True))
            assert got == expect(uni.strings[i], uni.strings[j]), (op, i, j)
            solver.pop()
        # an index outside the table is no string: no test holds of it
        assert z3.Solver().check(term, x == n + 5) == z3.unsat


def test_a_string_test_is_one_table_per_shape(notes: Domain) -> None:
    """The same shape of test on other terms reuses its table: the cost of a search is
    paid once per universe, not once per row and step."""
    uni = Universe.build(notes, _state())
    pairs = [(z3.Int(f"q{k}"), z3.Int(f"t{k}")) for k in range(5)]
    for q, t in pairs:
        lq = strings.evaluate(uni, "lower", [(q, STR)], "test")
        lt = strings.evaluate(uni, "lower", [(t, STR)], "test")
        strings.evaluate(uni, "contains", [(lt, STR), (lq, STR)], "test")
    shapes = {key[0] for key in uni.str_tables}
    assert shapes == {"lower", "contains"}
    assert len(uni.str_tables) == 2
