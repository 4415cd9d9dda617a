"""The unrolling's tools share argument variables: at a step, the i-th parameter of a
sort is one variable whichever tool has it, and a tool's own parameters of one sort
stay apart. Sound because a step calls one tool: every constraint on a tool's
arguments holds only when it is the one chosen."""

from __future__ import annotations

from collections import Counter

from graphgen.domains import load_builtin
from graphgen.knowledge import param_sort
from graphgen.stategen import generate_state
from graphgen.tasks.model import Call, Change, Given, Goal
from graphgen.tasks.taskset import GenOptions, generate
from graphgen.verify.proofs import Prover
from tests.test_z3_encoding import _task as make_task


def test_same_sort_parameters_share_a_variable_and_a_tools_own_stay_apart() -> None:
    d = load_builtin("retail")
    task = next(t for t in generate(d, 6, 1, GenOptions()).tasks if t.kind == "action")
    p = Prover(d, task, engine="z3")
    with p.z3:
        bmc = p.build(2)
        assert bmc is not None, p.build_error
        bmc.ensure(2)
        for step in bmc.steps:
            per_var: dict[int, set[str]] = {}
            for tool, args in zip(bmc.tools, step.args, strict=True):
                mine = [a.ast.value for a in args.values()]
                assert len(set(mine)) == len(mine), f"{tool.name}: two parameters, one variable"
                for p_name, a in args.items():
                    per_var.setdefault(a.ast.value, set()).add(str(param_sort(tool.params[p_name])))
            # one sort per variable, and fewer variables than parameters
            assert all(len(sorts) == 1 for sorts in per_var.values())
            assert len(per_var) < sum(len(a) for a in step.args)
            users = Counter(
                a.ast.value
                for tool, args in zip(bmc.tools, step.args, strict=True)
                for n, a in args.items()
                if str(param_sort(tool.params[n])) == "key:User"
            )
            assert len(users) == 1 and sum(users.values()) > 1  # every user_id: one variable


def test_a_call_passing_two_different_items_is_still_expressible() -> None:
    """exchange_delivered_order_item's item_id and new_item_id are both Item ids: with
    their own variables, the reference chain swapping one item for another holds in
    the encoding (proof 1: z3 agrees with the dry-run)."""
    d = load_builtin("retail")
    tasks = generate(d, 60, 5, GenOptions()).tasks
    swaps = [
        t
        for t in tasks
        if any(
            c.tool in ("exchange_delivered_order_item", "modify_pending_order_item")
            for c in t.chain
        )
    ]
    assert swaps, "no task swaps an item"
    t = min(swaps, key=lambda x: len(x.chain))
    p = Prover(d, t, engine="z3")
    call = next(
        c
        for c in t.chain
        if c.tool in ("exchange_delivered_order_item", "modify_pending_order_item")
    )
    assert call.args["item_id"] != call.args["new_item_id"]
    got = p.reference_chain()
    assert got.ok and "z3 agrees" in got.detail, got.detail


def test_unchosen_tools_constrain_nothing_through_a_shared_variable() -> None:
    """Two tools of mock take an Account id; the chain calls one of them. Were the other
    tool's checks on the shared variable not guarded by its choice, the chain would be
    impossible in the encoding."""
    d = load_builtin("mock")
    s = generate_state(d, 0)
    key = sorted(s.tables["Account"])[0]
    row = s.tables["Account"][key]
    goal = Goal(
        changes=[
            Change(entity="Account", key=key, field="status", before=row["status"], after="locked")
        ]
    )
    chain = [
        Call(tool="find_account", args={"email": row["email"]}),
        Call(tool="lock_account", args={"account_id": key}),
    ]
    task = make_task(s, chain, goal, [Given(sort="field:Account.email", value=row["email"])])
    got = Prover(d, task, engine="z3").reference_chain()
    assert got.ok and "z3 agrees" in got.detail, got.detail
