"""The unrolling's tools share argument variables: at a step, the i-th parameter of a
sort is one variable whichever tool has it, and a tool's own parameters of one sort
stay apart. Sound because a step calls one tool: every constraint on a tool's
arguments holds only when it is the one chosen."""

from __future__ import annotations

from collections import Counter

import z3

from graphgen.domains import load_builtin
from graphgen.knowledge import param_sort
from graphgen.stategen import generate_state
from graphgen.tasks.model import Call, Change, Given, Goal
from graphgen.tasks.taskset import GenOptions, generate
from graphgen.verify.proofs import Prover
from graphgen.verify.symstate import exists_at, read_field
from graphgen.verify.templates import Substitution, substitute_together
from graphgen.verify.terms import same
from graphgen.verify.values import ListVal
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


def _retail_unrolling() -> Prover:
    d = load_builtin("retail")
    task = next(t for t in generate(d, 6, 1, GenOptions()).tasks if t.kind == "action")
    return Prover(d, task, engine="z3")


def test_templates_take_the_steps_argument_slots_and_share_their_reads() -> None:
    """A tool's template is built over the same slot variables whichever tool has the
    parameter, so two tools reading ``Order[order_id].status`` read one term, built once
    (the universe keeps each column read at a key), and a different column or key is a
    different read."""
    p = _retail_unrolling()
    with p.z3:
        bmc = p.build(1)
        assert bmc is not None, p.build_error
        built = [(tool, bmc.template(j)) for j, tool in enumerate(bmc.tools)]
        per_slot: dict[str, set[int]] = {}
        for tool, tpl in built:
            for name, var in tpl.args.items():
                per_slot.setdefault(str(param_sort(tool.params[name])), set()).add(var.ast.value)
        assert per_slot["key:Order"] and all(len(v) <= 2 for v in per_slot.values())
        assert len(per_slot["key:User"]) == 1  # every user_id of every template: one variable
        order = next(iter(per_slot["key:Order"]))
        key = next(v for _, tpl in built for v in tpl.args.values() if v.ast.value == order)
        pre = bmc.shared_pre()
        first = read_field(bmc.uni, pre, "Order", key, "status")
        again = read_field(bmc.uni, pre, "Order", key, "status")
        other = read_field(bmc.uni, pre, "Order", key, "user_id")
        assert isinstance(first, z3.ExprRef) and first is again
        assert not same(first, other)
        items = read_field(bmc.uni, pre, "Order", key, "items")
        again_items = read_field(bmc.uni, pre, "Order", key, "items")
        assert isinstance(items, ListVal) and isinstance(again_items, ListVal) and items.items
        assert all(a[0] is b[0] for a, b in zip(items.items, again_items.items, strict=True))
        assert exists_at(bmc.uni, pre, "Order", key) is exists_at(bmc.uni, pre, "Order", key)
        assert not same(exists_at(bmc.uni, pre, "Order", key), exists_at(bmc.uni, pre, "User", key))


def test_one_substitution_for_every_template_gives_each_its_own_instance() -> None:
    """Substituting every template's outputs in one pass yields, per tool, the very
    terms substituting its own alone does."""
    p = _retail_unrolling()
    with p.z3:
        bmc = p.build(3)
        assert bmc is not None, p.build_error
        bmc.ensure(3)
        st = bmc.states[2]  # after two calls: more tools have knowable arguments
        cur = st.terms()
        args = bmc.steps[2].args
        js = [j for j, tpl in enumerate(bmc.templates) if tpl is not None]
        assert len(js) > 3
        pre = bmc.shared_pre().terms()
        pairs = [(pre[i], cur[i]) for i in bmc._mask]
        seen: set[int] = set()
        for j in js:
            for n, v in bmc.template(j).args.items():
                if v.ast.value not in seen:
                    seen.add(v.ast.value)
                    pairs.append((v, args[j][n]))
        apps = [bmc.template(j).packed(bmc._extra[j]) for j in js]
        insts = substitute_together(apps, Substitution(pairs))
        assert len(insts) == len(js) + 1
        for j, inst in zip(js, insts[1:], strict=True):
            tpl = bmc.template(j)
            ok, post, extra = tpl.unpack(inst, bmc._extra[j], cur)
            ok1, post1, extra1 = tpl.instantiate(st, args[j], bmc._extra[j], cur)
            assert same(ok, ok1), bmc.tools[j].name
            assert all(same(a, b) for a, b in zip(post, post1, strict=True))
            assert all(same(a, b) for a, b in zip(extra, extra1, strict=True))
        assert substitute_together([], Substitution(pairs)) == [None]


def _fresh_x(t: z3.ExprRef) -> bool:
    """Is ``t`` a constant the unrolling made for a written cell (named ``x!…``)?"""
    return z3.is_const(t) and t.decl().name().startswith("x!")


def test_a_written_cells_next_value_is_its_term_not_a_constant_equated_to_it() -> None:
    """Each step's written cells are the if-then-else of the tools that may write them,
    over the cell before: no fresh constant, and no equation defining one, which the
    incremental solver could not eliminate (its assumptions come only during search).
    Unchanged cells stay the very term of the step before."""
    d = load_builtin("retail")
    task = next(t for t in generate(d, 6, 1, GenOptions()).tasks if t.kind == "action")
    p = Prover(d, task, engine="z3")
    n = len(task.chain)
    with p.z3:
        bmc = p.build(n)
        assert bmc is not None, p.build_error
        bmc.ensure(n)
        before, after = bmc.states[0].terms(), bmc.states[n].terms()
        changed = [a for b, a in zip(before, after, strict=True) if not same(a, b)]
        assert changed, "the reference chain's length of steps can change some cell"
        assert not any(_fresh_x(a) for a in after)
        assert any(z3.is_app_of(a, z3.Z3_OP_ITE) for a in changed)
        for c in bmc.added:
            if z3.is_eq(c):
                assert not any(_fresh_x(side) for side in c.children()), c
        # the constraints still define the same chains: a model of the first step's
        # choice decodes to a state the interpreter can reach (the differential tests
        # check this in depth); here, the solver accepts the unrolling as it is
        status, _, _ = bmc.check([bmc.steps[0].act])
        assert status == "sat"
