"""The dry-run acceptance gate: every broken candidate is rejected, with its reason.

Broken candidates are built two ways: by mutating real generated mock tasks (one defect
each, so the expected reason is the first check that fails), and by hand on a small mock
state. Each hand-built family has a valid twin that passes, so the rejection is due to
the defect and not to some other slip in the fixture.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from functools import cache
from typing import Any

import pytest

from graphgen.domain import Domain
from graphgen.domains import builtin_path
from graphgen.grading import state_diff
from graphgen.interp import call_tool
from graphgen.load import loads_domain
from graphgen.state import State
from graphgen.tasks.dryrun import (
    REASONS,
    GateResult,
    check_candidate,
    check_task,
    permitted_orders,
    replay,
)
from graphgen.tasks.model import Call, Change, Given, Goal, Target, Task
from graphgen.tasks.render import stated
from graphgen.tasks.taskset import generate

# The built-in mock's two statuses leave every refusal open to a hedge ('active' is the
# rule a careful agent quotes, 'locked' the reason), so the gate generates none there. A
# third status gives its refusals a value no careful agent would say: "frozen".
MOCK = loads_domain(
    builtin_path("mock")
    .read_text(encoding="utf-8")
    .replace("status: {enum: [active, locked]}", "status: {enum: [active, locked, frozen]}")
)


@cache
def _mock_tasks() -> tuple[Task, ...]:
    return tuple(generate(MOCK, 80, 11).tasks)


def _pick(pred: Callable[[Task], bool]) -> Task:
    for t in _mock_tasks():
        if pred(t):
            return t.model_copy(deep=True)
    raise AssertionError("no generated task fits; the fixture seed needs a look")


def _deposit_task() -> Task:
    """An action task whose last call is a deposit."""
    return _pick(lambda t: t.kind == "action" and t.chain[-1].tool == "deposit")


def _lock_task() -> Task:
    return _pick(
        lambda t: (
            t.kind == "action"
            and [c.tool for c in t.chain][-1] == "lock_account"
            and len(t.goal.changes) == 1
        )
    )


def _info_task() -> Task:
    """An information task whose answer is a number."""
    return _pick(
        lambda t: (
            t.kind == "information"
            and isinstance(t.goal.answer[0], int)
            and not isinstance(t.goal.answer[0], bool)
        )
    )


def _refusal_task() -> Task:
    return _pick(lambda t: t.kind == "refusal")


def _gate(task: Task, domain: Domain = MOCK, **over: Any) -> GateResult:
    return check_task(domain, task, **over)


def _account_of(task: Task) -> str:
    return next(
        str(c.args["account_id"])
        for c in [*task.chain, *filter(None, [task.refused_call])]
        if "account_id" in c.args
    )


# --------------------------------------------------------------------------- sanity


def test_generated_tasks_pass_the_gate_again() -> None:
    kinds = Counter(t.kind for t in _mock_tasks())
    assert set(kinds) == {"action", "information", "refusal"}
    for t in _mock_tasks():
        res = _gate(t)
        assert res.ok, (t.id, res)


# --------------------------------------------------------------------------- mutations
# Each builder returns (task, overrides for check_candidate); the table maps it to the
# reason that must be reported.


def _goal_already_true() -> tuple[Task, dict[str, Any]]:
    t = _deposit_task()
    acc = _account_of(t)
    bal = t.initial_state["tables"]["Account"][acc]["balance"]
    goal = Goal(changes=[Change(entity="Account", key=acc, field="balance", before=bal, after=bal)])
    return t, {"goal": goal}


def _goal_empty() -> tuple[Task, dict[str, Any]]:
    return _deposit_task(), {"goal": Goal()}


def _info_without_answer() -> tuple[Task, dict[str, Any]]:
    return _info_task(), {"goal": Goal(changes=[], answer=[])}


def _precondition_fails() -> tuple[Task, dict[str, Any]]:
    t = _deposit_task()
    state = State.from_dict(t.initial_state)
    state.set_field("Account", _account_of(t), "status", "locked")
    return t, {"initial": state}


def _unknown_tool() -> tuple[Task, dict[str, Any]]:
    t = _deposit_task()
    return t, {"chain": [*t.chain[:-1], Call(tool="teleport", args={})]}


def _unknown_param() -> tuple[Task, dict[str, Any]]:
    t = _deposit_task()
    last = t.chain[-1]
    return t, {"chain": [*t.chain[:-1], Call(tool="deposit", args={**last.args, "memo": "x"})]}


def _write_to_unknown_tool_in_refusal() -> tuple[Task, dict[str, Any]]:
    t = _refusal_task()
    return t, {"chain": [*t.chain, Call(tool="close_everything", args={})]}


def _refusal_without_refused_call() -> tuple[Task, dict[str, Any]]:
    return _refusal_task(), {"refused_call": None}


def _refused_call_malformed() -> tuple[Task, dict[str, Any]]:
    t = _refusal_task()
    assert t.refused_call is not None
    bad = Call(tool=t.refused_call.tool, args={**t.refused_call.args, "account_id": "A999"})
    return t, {"refused_call": bad}


def _id_without_lookup() -> tuple[Task, dict[str, Any]]:
    t = _deposit_task()
    assert t.chain[0].tool == "find_account"
    return t, {"chain": t.chain[1:]}  # the account id is used but never looked up


def _free_value_not_given() -> tuple[Task, dict[str, Any]]:
    t = _deposit_task()
    return t, {"givens": [g for g in t.givens if not g.sort.startswith("free:")]}


def _given_not_stated() -> tuple[Task, dict[str, Any]]:
    t = _deposit_task()
    email = next(str(g.value) for g in t.givens if g.sort == "field:Account.email")
    return t, {"instruction": t.instruction.replace(email, "my usual address")}


def _given_only_inside_another_number() -> tuple[Task, dict[str, Any]]:
    t = _deposit_task()
    amount = str(t.chain[-1].args["amount"])
    assert stated(t.instruction, amount)
    return t, {"instruction": t.instruction.replace(amount, "1" + amount + "0")}


def _id_leak() -> tuple[Task, dict[str, Any]]:
    t = _deposit_task()
    return t, {"instruction": t.instruction + f" (That is account {_account_of(t)}.)"}


def _refused_id_leak() -> tuple[Task, dict[str, Any]]:
    t = _refusal_task()
    return t, {"instruction": f"{_account_of(t)}: " + t.instruction}


def _nondeterministic_write() -> tuple[Task, dict[str, Any]]:
    t = _deposit_task()
    seen: Counter[str] = Counter()

    def flaky(domain: Domain, st: State, name: str, args: dict[str, Any]) -> Any:
        seen[name] += 1
        if name == "deposit" and seen[name] > 1:  # the second run deposits one more
            args = {**args, "amount": args["amount"] + 1}
        return call_tool(domain, st, name, args)

    return t, {"execute": flaky}


def _nondeterministic_read() -> tuple[Task, dict[str, Any]]:
    t = _info_task()
    seen: Counter[str] = Counter()

    def flaky(domain: Domain, st: State, name: str, args: dict[str, Any]) -> Any:
        seen[name] += 1
        out = call_tool(domain, st, name, args)
        if name == "get_account" and seen[name] > 1:
            out = {**out, "owner": "Somebody Else"}
        return out

    return t, {"execute": flaky}


def _fails_on_second_run() -> tuple[Task, dict[str, Any]]:
    t = _deposit_task()
    seen: Counter[str] = Counter()

    def flaky(domain: Domain, st: State, name: str, args: dict[str, Any]) -> Any:
        seen[name] += 1
        if name == "deposit" and seen[name] > 1:
            return call_tool(domain, st, name, {**args, "amount": 0})  # below min: error
        return call_tool(domain, st, name, args)

    return t, {"execute": flaky}


def _answer_in_instruction() -> tuple[Task, dict[str, Any]]:
    t = _info_task()
    return t, {"instruction": t.instruction + f" I think it is {t.goal.answer[0]}."}


def _answer_not_revealed() -> tuple[Task, dict[str, Any]]:
    t = _info_task()
    return t, {"goal": Goal(changes=[], answer=[987654321])}


def _echo_passes() -> tuple[Task, dict[str, Any]]:
    """The refusal's reason ("locked") said by the user in another case: not the literal
    token the instruction check looks for, but an echo of the request passes."""
    t = _pick(lambda t: t.kind == "refusal" and isinstance(t.goal.answer_any[0][0], str))
    reason = str(t.goal.answer_any[0][0])
    return t, {"instruction": t.instruction + f" I know it is {reason.upper()}."}


def _hedge_passes() -> tuple[Task, dict[str, Any]]:
    """Without the values that contradict the answer, naming every value seen passes."""
    t = _info_task()
    return t, {"goal": Goal(changes=[], answer=t.goal.answer)}


def _information_changes_state() -> tuple[Task, dict[str, Any]]:
    t = _info_task()
    acc = next(str(c.args["account_id"]) for c in t.chain if "account_id" in c.args)
    state = State.from_dict(t.initial_state)
    state.set_field("Account", acc, "status", "active")
    chain = [*t.chain, Call(tool="deposit", args={"account_id": acc, "amount": 77})]
    return t, {
        "initial": state,
        "chain": chain,
        "givens": [*t.givens, Given(sort="free:int", value=77)],
        "instruction": t.instruction + " Also deposit 77.",
    }


def _refusal_succeeds() -> tuple[Task, dict[str, Any]]:
    t = _refusal_task()
    state = State.from_dict(t.initial_state)
    state.set_field("Account", _account_of(t), "status", "active")
    state.set_field("Account", _account_of(t), "balance", 100_000)
    return t, {"initial": state}


def _wrong_expected_value() -> tuple[Task, dict[str, Any]]:
    t = _deposit_task()
    changes = [c.model_copy() for c in t.goal.changes]
    changes[0].after = changes[0].after + 1
    return t, {"goal": Goal(changes=changes)}


def _chain_stops_short() -> tuple[Task, dict[str, Any]]:
    t = _pick(
        lambda t: (
            t.kind == "action" and [c.tool for c in t.chain][-2:] == ["deposit", "lock_account"]
        )
    )
    return t, {"chain": t.chain[:-1]}  # the lock the instruction asks for never happens


def _goal_names_another_row() -> tuple[Task, dict[str, Any]]:
    t = _lock_task()
    acc = _account_of(t)
    other = next(
        k
        for k, r in sorted(t.initial_state["tables"]["Account"].items())
        if k != acc and r["status"] == "active"
    )
    ch = t.goal.changes[0]
    return t, {"goal": Goal(changes=[ch.model_copy(update={"key": other})])}


CASES: list[tuple[str, Callable[[], tuple[Task, dict[str, Any]]], str]] = [
    ("goal already true", _goal_already_true, "goal_already_true"),
    ("empty action goal", _goal_empty, "goal_already_true"),
    ("information without answer", _info_without_answer, "goal_already_true"),
    ("precondition fails", _precondition_fails, "call_failed"),
    ("unknown tool", _unknown_tool, "bad_chain"),
    ("unknown parameter", _unknown_param, "bad_chain"),
    ("unknown write in a refusal chain", _write_to_unknown_tool_in_refusal, "bad_chain"),
    ("refusal without refused call", _refusal_without_refused_call, "bad_chain"),
    ("refused call on a missing id", _refused_call_malformed, "bad_chain"),
    ("id used without lookup", _id_without_lookup, "unknown_argument"),
    ("free value not given", _free_value_not_given, "unknown_argument"),
    ("given not stated", _given_not_stated, "given_not_stated"),
    ("given only inside a longer number", _given_only_inside_another_number, "given_not_stated"),
    ("internal id in the text", _id_leak, "id_leak"),
    ("refused call's id in the text", _refused_id_leak, "id_leak"),
    ("write differs on re-run", _nondeterministic_write, "nondeterministic"),
    ("read differs on re-run", _nondeterministic_read, "nondeterministic"),
    ("re-run fails", _fails_on_second_run, "nondeterministic"),
    ("answer in the instruction", _answer_in_instruction, "answer_in_instruction"),
    ("answer not revealed", _answer_not_revealed, "answer_not_revealed"),
    ("echoing the instruction passes", _echo_passes, "echo_passes"),
    ("naming every value passes", _hedge_passes, "hedge_passes"),
    ("information task writes", _information_changes_state, "state_changed"),
    ("refused call would succeed", _refusal_succeeds, "refusal_succeeds"),
    ("wrong expected value", _wrong_expected_value, "goal_not_reached"),
    ("chain stops short of the goal", _chain_stops_short, "goal_not_reached"),
    ("goal names another row", _goal_names_another_row, "goal_not_reached"),
]


@pytest.mark.parametrize(
    ("build", "reason"), [(b, r) for _, b, r in CASES], ids=[n for n, _, _ in CASES]
)
def test_mutated_candidate_is_rejected(
    build: Callable[[], tuple[Task, dict[str, Any]]], reason: str
) -> None:
    task, over = build()
    assert _gate(task).ok, "the unmutated task must pass, or the test proves nothing"
    res = _gate(task, **over)
    assert not res.ok
    assert res.reason == reason, res
    assert res.reason in REASONS and res.detail


def test_every_reason_has_a_test() -> None:
    hand_built = {"ambiguous_target", "order_dependent", "order_not_stated", "stale_description"}
    # the policy and identity reasons: tests/test_invariants.py
    hand_built |= {"policy_violation", "several_customers", "unidentified_owner"}
    # Recognising a described target: small retail tasks in tests/test_knowledge_fair.py.
    recognition = {"too_many_candidates", "description_not_seen", "candidates_not_read"}
    tested = {r for _, _, r in CASES} | hand_built | recognition
    assert tested == set(REASONS)


def test_failed_call_is_located() -> None:
    task, over = _precondition_fails()
    res = _gate(task, **over)
    last = len(task.chain) - 1
    assert f"call {last} (deposit)" in res.detail and "locked" in res.detail


# --------------------------------------------------------------------------- by hand


def _row(email: str, owner: str, balance: int, status: str = "active") -> dict[str, Any]:
    return {"email": email, "owner": owner, "balance": balance, "status": status}


def _hand_state(second_owner: str = "Bo Chen") -> State:
    return State(
        {
            "Account": {
                "A001": _row("ann@example.com", "Ann Lee", 120),
                "A002": _row("bo@example.com", second_owner, 40, "locked"),
            },
            "Payment": {},
        },
        {"Account": 3, "Payment": 1},
    )


def _hand_info(state: State) -> GateResult:
    """Bo asks for the balance of "the account with owner Ann Lee" (a referring phrase)."""
    chain = [
        Call(tool="find_account", args={"email": "ann@example.com"}),
        Call(tool="get_account", args={"account_id": "A001"}),
    ]
    target = Target(
        entity="Account",
        key="A001",
        phrase="the account with owner Ann Lee",
        description="x.owner == 'Ann Lee'",
    )
    return check_candidate(
        MOCK,
        "information",
        state,
        chain,
        [Given(sort="field:Account.email", value="ann@example.com")],
        [target],
        "My email is ann@example.com. What is the balance of the account with owner Ann Lee?",
        # The account is active: a hedge naming "locked" too must not pass.
        Goal(changes=[], answer=[120], answer_not=["locked"]),
    )


def test_hand_built_information_task_passes() -> None:
    assert _hand_info(_hand_state()).ok


def test_referring_expression_matching_two_rows_is_ambiguous() -> None:
    res = _hand_info(_hand_state(second_owner="Ann Lee"))
    assert (res.ok, res.reason) == (False, "ambiguous_target")
    assert "matches 2" in res.detail


def test_unparsable_description_is_rejected() -> None:
    state = _hand_state()
    chain = [Call(tool="find_account", args={"email": "ann@example.com"})]
    target = Target(entity="Account", key="A001", phrase="the account", description="x.nope == 1")
    res = check_candidate(
        MOCK,
        "information",
        state,
        chain,
        [Given(sort="field:Account.email", value="ann@example.com")],
        [target],
        "My email is ann@example.com. Who owns the account?",
        Goal(answer=["Ann Lee"]),
    )
    assert (res.ok, res.reason) == (False, "ambiguous_target")


def _hand_deposit(state: State, amount: int = 10) -> GateResult:
    chain = [
        Call(tool="find_account", args={"email": "bo@example.com"}),
        Call(tool="deposit", args={"account_id": "A002", "amount": amount}),
    ]
    bal = state.tables["Account"]["A002"]["balance"]
    return check_candidate(
        MOCK,
        "action",
        state,
        chain,
        [
            Given(sort="field:Account.email", value="bo@example.com"),
            Given(sort="free:int", value=amount),
        ],
        [],
        f"My email is bo@example.com. Please deposit {amount} into my account.",
        Goal(
            changes=[
                Change(
                    entity="Account", key="A002", field="balance", before=bal, after=bal + amount
                )
            ]
        ),
    )


def test_hand_built_deposit_on_active_account_passes() -> None:
    state = _hand_state()
    state.set_field("Account", "A002", "status", "active")
    assert _hand_deposit(state).ok


def test_hand_built_deposit_on_locked_account_fails_its_precondition() -> None:
    res = _hand_deposit(_hand_state())
    assert (res.ok, res.reason) == (False, "call_failed")
    assert "call 1 (deposit)" in res.detail and "locked" in res.detail


def test_hand_built_id_given_without_lookup_is_unknown() -> None:
    state = _hand_state()
    chain = [Call(tool="get_account", args={"account_id": "A001"})]
    res = check_candidate(
        MOCK, "information", state, chain, [], [], "What is my balance?", Goal(answer=[120])
    )
    assert (res.ok, res.reason) == (False, "unknown_argument")
    assert "A001" in res.detail


def test_replay_leaves_the_initial_state_alone_and_locates_errors() -> None:
    state = _hand_state()
    state.set_field("Account", "A002", "status", "active")
    before = state.copy()
    run = replay(
        MOCK,
        state,
        [],
        [
            Call(tool="deposit", args={"account_id": "A002", "amount": 5}),
            Call(tool="get_account", args={"account_id": "A002"}),
        ],
    )
    assert state == before and run.complete
    assert run.final.tables["Account"]["A002"]["balance"] == 45
    assert run.results[1]["balance"] == 45
    known = [Given(sort="key:Account", value="A001"), Given(sort="free:int", value=500)]
    bad = replay(
        MOCK,
        state,
        known,
        [
            Call(tool="get_account", args={"account_id": "A001"}),
            Call(tool="pay", args={"account_id": "A001", "amount": 500}),
        ],
    )
    assert not bad.complete and bad.steps[1].ran and bad.steps[1].error
    assert "call 1 (pay) fails" in bad.first_problem()


def test_replay_records_every_step_so_each_caller_ranks_problems() -> None:
    """An unknown argument at call 0 and a failing call 1: the agent meets the unknown
    argument first (the proofs' order), the gate reports the failing call first."""
    state = _hand_state()
    chain = [
        Call(tool="get_account", args={"account_id": "A001"}),
        Call(tool="pay", args={"account_id": "A001", "amount": 500}),
    ]
    run = replay(MOCK, state, [], chain)
    assert [s.ran for s in run.steps] == [True, True]
    assert [u.param for u in run.steps[0].unknown] == ["account_id"]
    assert "is not known" in run.first_problem()
    res = check_candidate(MOCK, "information", state, chain, [], [], "Pay.", Goal(answer=[1]))
    assert res.reason == "call_failed"
    shape = replay(MOCK, state, [], [*chain, Call(tool="nope", args={})])
    assert shape.steps[2].bad_tool and not shape.steps[2].ran
    res = check_candidate(
        MOCK,
        "information",
        state,
        [*chain, Call(tool="nope", args={})],
        [],
        [],
        "Pay.",
        Goal(answer=[1]),
    )
    assert res.reason == "bad_chain"


# --------------------------------------------------------------------------- orders
# A careful agent may make the reference chain's calls in any order that keeps each
# argument's source first; every such order that runs cleanly must pass grading.

# The mock domain plus a write that does not commute with a deposit.
TINY = loads_domain(
    builtin_path("mock").read_text(encoding="utf-8")
    + """
  set_balance:
    description: Set an account's balance.
    params:
      account_id: {type: Account, description: "The account id."}
      amount: {type: int, min: 0, max: 100000, description: "The new balance."}
    effects: "Account[account_id].balance = amount"
    intents: ["Set my balance to {amount}."]
""",
    "tiny",
)
ANN = Given(sort="field:Account.email", value="ann@example.com")


def _two_writes(
    first: Call,
    second: Call,
    after: Any,
    text: str,
    ordered: bool = False,
    changes: list[Change] | None = None,
) -> GateResult:
    """Ann looks her account up, then asks for two writes (joined by "Also" unless the
    text states their order)."""
    chain = [Call(tool="find_account", args={"email": "ann@example.com"}), first, second]
    amounts = [Given(sort="free:int", value=c.args.get("amount")) for c in (first, second)]
    amounts = [g for g in amounts if g.value is not None]
    change = Change(entity="Account", key="A001", field="balance", before=120, after=after)
    return check_candidate(
        TINY,
        "action",
        _hand_state(),
        chain,
        [ANN, *amounts],
        [],
        f"My email is ann@example.com. {text}",
        Goal(changes=changes or [change]),
        ordered=ordered,
    )


def _deposit(n: int) -> Call:
    return Call(tool="deposit", args={"account_id": "A001", "amount": n})


def test_writes_that_do_not_commute_are_order_dependent() -> None:
    set50 = Call(tool="set_balance", args={"account_id": "A001", "amount": 50})
    res = _two_writes(_deposit(10), set50, 50, "Deposit 10. Also set my balance to 50.")
    assert (res.ok, res.reason) == (False, "order_dependent")
    assert "0:find_account, 2:set_balance, 1:deposit" in res.detail
    assert "want 50, got 60" in res.detail


_LOCK = Call(tool="lock_account", args={"account_id": "A001"})
_DEPOSIT_THEN_LOCK = [
    Change(entity="Account", key="A001", field="balance", before=120, after=130),
    Change(entity="Account", key="A001", field="status", before="active", after="locked"),
]


def test_an_order_in_which_a_write_fails_must_be_stated() -> None:
    """Locking first makes the deposit fail: the user asked for both, and that order
    cannot be made good, so "Also" (any order) is not a fair way to ask."""
    res = _two_writes(
        _deposit(10), _LOCK, None, "Deposit 10. Also lock my account.", changes=_DEPOSIT_THEN_LOCK
    )
    assert (res.ok, res.reason) == (False, "order_dependent")
    assert "2:lock_account, 1:deposit] call 1 (deposit) fails" in res.detail
    stated = _two_writes(
        _deposit(10),
        _LOCK,
        None,
        "First, deposit 10. Then lock my account.",
        ordered=True,
        changes=_DEPOSIT_THEN_LOCK,
    )
    assert stated.ok, stated


def test_an_ordered_task_must_say_its_order() -> None:
    res = _two_writes(
        _deposit(10),
        _LOCK,
        None,
        "Deposit 10. Also lock my account.",
        ordered=True,
        changes=_DEPOSIT_THEN_LOCK,
    )
    assert (res.ok, res.reason) == (False, "order_not_stated")


def test_a_stated_order_does_not_excuse_a_wrong_reference_order() -> None:
    """``ordered`` fixes the writes in the chain's order; that order must still work."""
    res = _two_writes(
        _LOCK,
        _deposit(10),
        None,
        "First, lock my account. Then deposit 10.",
        ordered=True,
        changes=_DEPOSIT_THEN_LOCK,
    )
    assert (res.ok, res.reason) == (False, "call_failed")


def test_a_description_that_a_first_request_makes_stale_is_rejected() -> None:
    """ "The account with balance 120" is A001 until the deposit; the second request,
    made after it, would look for an account the description no longer fits."""
    chain = [
        Call(tool="find_account", args={"email": "ann@example.com"}),
        Call(tool="get_account", args={"account_id": "A001"}),
        _deposit(10),
        _LOCK,
    ]
    target = Target(
        entity="Account",
        key="A001",
        phrase="the account with balance 120",
        description="x.balance == 120",
    )

    def gate(targets: list[Target]) -> GateResult:
        return check_candidate(
            TINY,
            "action",
            _hand_state(),
            chain,
            [ANN, Given(sort="free:int", value=10)],
            targets,
            "My email is ann@example.com. First, deposit 10 into the account with balance "
            "120. Then lock the account with balance 120.",
            Goal(changes=_DEPOSIT_THEN_LOCK),
            ordered=True,
        )

    res = gate([target])
    assert (res.ok, res.reason) == (False, "stale_description")
    assert "call 3 (lock_account)" in res.detail and "matches 0 Account rows" in res.detail
    # Described by what does not change, the same requests pass.
    owner = Target(
        entity="Account",
        key="A001",
        phrase="the account of Ann Lee",
        description="x.owner == 'Ann Lee'",
    )
    assert gate([owner]).ok


def test_writes_that_commute_pass_the_order_check() -> None:
    res = _two_writes(_deposit(10), _deposit(30), 160, "Deposit 10. Also deposit 30.")
    assert res.ok, res


def test_payments_made_in_either_order_pass_despite_swapped_ids() -> None:
    """Two payments create P001 and P002; the other order swaps which is which."""
    chain = [
        Call(tool="find_account", args={"email": "ann@example.com"}),
        Call(tool="pay", args={"account_id": "A001", "amount": 20}),
        Call(tool="pay", args={"account_id": "A001", "amount": 30}),
    ]
    state = _hand_state()
    givens = [ANN, Given(sort="free:int", value=20), Given(sort="free:int", value=30)]
    assert permitted_orders(TINY, state, givens, chain) == [[0, 1, 2], [0, 2, 1]]
    final = replay(TINY, state, givens, chain).final
    changes = [
        Change(entity=e, key=k, field=f, before=a, after=b)
        for e, k, f, a, b in state_diff(state.to_dict(), final.to_dict())
    ]
    assert {c.key for c in changes} == {"A001", "P001", "P002"}
    text = "My email is ann@example.com. Pay 20 from my account. Also pay 30."
    res = check_candidate(TINY, "action", state, chain, givens, [], text, Goal(changes=changes))
    assert res.ok, res


def test_permitted_orders_keep_each_source_before_its_use() -> None:
    """get_account needs the id find_account reveals; the deposit's id comes from the
    same lookup, so the deposit may move before get_account but never before the lookup."""
    chain = [
        Call(tool="find_account", args={"email": "ann@example.com"}),
        Call(tool="get_account", args={"account_id": "A001"}),
        _deposit(10),
        _deposit(30),
    ]
    givens = [ANN, Given(sort="free:int", value=10), Given(sort="free:int", value=30)]
    orders = permitted_orders(TINY, _hand_state(), givens, chain)
    assert orders[0] == [0, 1, 2, 3]
    assert all(o[0] == 0 for o in orders)
    assert len(orders) == 6  # 3! placements of the other three after the lookup
    assert orders[1][1:] != [1, 2, 3] and [o[1:] for o in orders[:2]] == [[1, 2, 3], [1, 3, 2]]
    assert len(permitted_orders(TINY, _hand_state(), givens, chain, limit=4)) == 4
