"""Graph expansion: candidate tasks from a domain and a concrete initial state.

Two strategies build action tasks, mixed by :attr:`GenOptions.walk_ratio`:

* **backward** — pick a write tool (coverage-guided: least used first), bind its
  arguments on the state so the precondition holds, then expand backwards over the data
  edges until every argument is a given, an enum member, or revealed by an earlier read;
* **walk** — a forward random walk from the user's givens: call tools whose arguments
  are already known, keep the writes that changed state and the reads they needed.

Information tasks ask for a field value a read reveals; refusal tasks ask for a write
whose precondition fails for the (unique) target. Everything is driven by one seeded
``random.Random`` per candidate, so output depends only on (domain, seed, options).
"""

from __future__ import annotations

import random
import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, assert_never

from pydantic import BaseModel, ConfigDict, Field

from graphgen import ir
from graphgen.domain import Domain, Intent, ToolDef
from graphgen.errors import ToolError
from graphgen.interp import (
    apply_unchecked,
    call_or_fail,
    check_args,
    evaluate,
    failed_check,
    footprint,
    precheck,
)
from graphgen.knowledge import Cell, Sort, param_sort, parse_sort, row_lookup
from graphgen.state import State, diff
from graphgen.tasks.dryrun import call_dependencies, order_problem
from graphgen.tasks.identity import identified_principals, principal_entity
from graphgen.tasks.model import Call, Change, Given, Goal, Target, TaskKind
from graphgen.tasks.narrowing import draw_narrowed, narrowings
from graphgen.tasks.plan import Executor, Planner, ReadCache
from graphgen.tasks.pools import Joined, first_in_random_order, in_random_order
from graphgen.tasks.referring import (
    MAX_CANDIDATES,
    absorb_givens,
    candidates_of,
    describe,
    field_name,
    humanize,
    relation_name,
    stated_facts,
    unseen_cells,
)
from graphgen.tasks.render import (
    NoTrueIntent,
    intent_text,
    join_intents,
    now_params,
    opener,
    stated,
    today_of,
    unsaid_givens,
)
from graphgen.tasks.shortcuts import contradicting, said, scalars
from graphgen.tasks.softrefusal import SoftReason, soft_reason
from graphgen.tasks.values import free_value
from graphgen.today import tool_uses_today
from graphgen.types import BOOL, DATE, INT, STR, EnumT, ListT, RefT, strip_opt

WRITE_TRIES = 60
#: The most writes one action task may chain (``GenOptions.max_intents``).
MAX_INTENTS = 6


class GenOptions(BaseModel):
    """Knobs of the generator; recorded in the task-set manifest."""

    model_config = ConfigDict(extra="forbid")
    max_intents: int = Field(default=3, ge=1, le=MAX_INTENTS, description="writes per action task")
    kinds: dict[str, float] = Field(
        default_factory=lambda: {"action": 0.6, "information": 0.25, "refusal": 0.15}
    )
    walk_ratio: float = Field(default=0.3, ge=0, le=1, description="action tasks by walk")
    tasks_per_state: int = Field(default=25, ge=1)
    sizes: dict[str, int] = Field(default_factory=dict)


@dataclass
class Candidate:
    """A task before the gate: everything needed to check and then emit it."""

    kind: TaskKind
    strategy: str
    initial: State
    chain: list[Call]
    givens: list[Given]
    targets: list[Target]
    instruction: str
    goal: Goal
    refused_call: Call | None = None
    intents: list[Call] = field(default_factory=list)
    ordered: bool = False


class NoCandidate(Exception):
    """This attempt found nothing usable; ``reason`` is counted in the manifest."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class Expander:
    """Produces candidates; keeps per-tool usage counts for coverage-guided choice."""

    def __init__(
        self, domain: Domain, options: GenOptions | None = None, execute: Executor = call_or_fail
    ) -> None:
        self.domain = domain
        self.options = options or GenOptions()
        self.execute = execute
        self.usage: dict[str, int] = {t: 0 for t in domain.tools}
        self.principal = principal_entity(domain)
        self._principal_of: dict[str, tuple[ToolDef, list[str], list[tuple[str, str]]]] = {}
        self._reads_of: tuple[State, ReadCache] | None = None
        self.today: str | None = None  # today's date on the current state (render.today_of)

    # ----------------------------------------------------------------- helpers

    def _reads(self, initial: State) -> ReadCache:
        """The read cache shared by all candidates on ``initial`` (a generation run
        draws ~25 candidates per state, and most of their lookups repeat)."""
        if self._reads_of is None or self._reads_of[0] is not initial:
            self._reads_of = (initial, {})
            self.today = today_of(self.domain, initial)
        return self._reads_of[1]

    def _owner(self, st: State, entity: str, key: Any) -> tuple[str, str] | None:
        """The principal row that owns (entity, key), if the schema says so."""
        p = self.principal
        if p is None:
            return None
        if entity == p:
            return (p, key)
        row = st.tables[entity].get(key)
        if row is None:
            return None
        for fname, fd in self.domain.entities[entity].fields.items():
            if isinstance(fd.ty, RefT) and fd.ty.entity == p:
                return (p, row[fname])
        return None

    def _pick_tool(self, tools: list[ToolDef], rng: random.Random) -> list[ToolDef]:
        """Tools ordered for coverage: least used first, ties broken by the seeded RNG."""
        order = list(tools)
        rng.shuffle(order)
        order.sort(key=lambda t: self.usage[t.name])
        return order

    def _pools(
        self, tool: ToolDef, st: State, planner: Planner, rng: random.Random
    ) -> dict[str, Sequence[Any]]:
        pools: dict[str, Sequence[Any]] = {}
        nows = now_params(self.domain, tool)
        for name, p in tool.params.items():
            s = param_sort(p)
            if name in nows:
                pools[name] = [self.today]
            elif s.kind == "free":
                pools[name] = [free_value(self.domain, tool, p, rng, st) for _ in range(3)]
            else:
                vals = planner.candidates(s)
                known = [v for v in planner.know.values(s) if v in vals] if s.kind == "key" else []
                vals = in_random_order(rng, vals)
                pools[name] = Joined(known, vals) if rng.random() < 0.5 else Joined(vals, known)
        return _with_absent(tool, pools)

    def _bind(
        self,
        tool: ToolDef,
        st: State,
        planner: Planner,
        rng: random.Random,
        want_fail: bool = False,
        want_soft: bool = False,
    ) -> dict[str, Any] | None:
        """Arguments for ``tool`` whose precondition holds (or fails, ``want_fail``; or
        holds but the call soft-fails with a message, ``want_soft``)."""
        pools = self._pools(tool, st, planner, rng)
        if any(not v for v in pools.values()):
            return None
        # A call that should pass draws through its precondition (tasks/narrowing.py);
        # a refusal only through the parts that relate its arguments, so that it asks
        # for something coherent (an item of that order) that a condition on one row
        # forbids (the order is not delivered).
        narrow = bool(narrowings(tool, relational=want_fail))
        seen: dict[tuple[Any, ...], Sequence[Any] | None] = {}
        for _ in range(WRITE_TRIES):
            if narrow:
                drawn = draw_narrowed(self.domain, st, tool, pools, rng, seen, relational=want_fail)
                if drawn is None:
                    continue
                args = _drop_absent(drawn)
            else:
                args = _drop_absent({n: rng.choice(vals) for n, vals in pools.items()})
            # A customer acts on their own rows: the user id follows the rows the call
            # names. Drawn freely it would almost always be a stranger's, so writes that
            # check ownership would rarely bind and refusals would all be "not yours".
            self._align_principal(st, tool, args)
            try:
                precheck(self.domain, st, tool.name, args, explain=False)
            except ToolError as exc:
                if want_fail and exc.kind == "precondition":
                    return args
                continue
            if not want_fail:
                return args
            if want_soft and soft_reason(self.domain, st, tool.name, args) is not None:
                return args
        return None

    def _align_principal(self, st: State, tool: ToolDef, args: dict[str, Any]) -> None:
        """Set the principal's key parameters (``user_id``) to the one owner of the call's
        other id arguments, when they have exactly one."""
        if self.principal is None:
            return
        mine, others = self._principal_params(tool, self.principal)
        owners = {
            self._owner(st, entity, args[n])
            for n, entity in others
            # an optional id left out (or None) names no row, so no owner
            if args.get(n) is not None
        } - {None}
        owner = owners.pop() if mine and len(owners) == 1 else None
        if owner is not None:
            for n in mine:
                args[n] = owner[1]

    def _principal_params(
        self, tool: ToolDef, principal: str
    ) -> tuple[list[str], list[tuple[str, str]]]:
        """``tool``'s parameters that take the ``principal``'s key, and its other id
        parameters with their entities (asked once per argument drawn, so kept)."""
        got = self._principal_of.get(tool.name)
        if got is None or got[0] is not tool:
            key = Sort("key", principal)
            mine = [n for n, q in tool.params.items() if param_sort(q) == key]
            others = [
                (n, param_sort(q).name)
                for n, q in tool.params.items()
                if n not in mine and param_sort(q).kind == "key"
            ]
            got = self._principal_of[tool.name] = (tool, mine, others)
        return got[1], got[2]

    def _identify(
        self,
        planner: Planner,
        initial: State,
        tool: ToolDef,
        args: dict[str, Any],
        created: set[Any],
        rng: random.Random,
        targets: dict[tuple[str, str], Target],
        principal: tuple[str, str] | None,
        avoid: Collection[tuple[str, Any, str]] = (),
    ) -> bool:
        """Describe each id argument for the instruction and make the agent able to
        recognise it: the description's stated values become givens, the id is looked
        up, and every candidate the lookup listed is read until the chain has shown each
        one's described fields (:func:`~graphgen.tasks.referring.unseen_cells`).

        ``avoid`` holds (entity, key, field) cells the description should not state (a
        refusal's reasons); a row that cannot be told apart without them states them."""
        for name, v in args.items():
            s = param_sort(tool.params[name])
            if s.kind != "key" or v in created or (s.name, v) == principal:
                continue
            if (s.name, v) in targets:
                continue
            if self.domain.entities[s.name].key_givable:
                continue
            if v not in initial.tables[s.name]:
                return False
            avoided = {f for e, k, f in avoid if (e, k) == (s.name, v)}
            t = describe(self.domain, initial, s.name, v, rng, principal, avoided)
            if t is None and avoided:
                t = describe(self.domain, initial, s.name, v, rng, principal)
            if t is None:
                return False
            # Stated first: "my order with status pending" lets the lookup filter by it.
            for fs, fv in stated_facts(self.domain, initial, t):
                planner.give(fs, fv)
            if not self._recognise(planner, initial, t):
                return False
            targets[(s.name, v)] = t
        return True

    def _recognise(self, planner: Planner, initial: State, t: Target) -> bool:
        """Look ``t`` up and read the candidates it must be told apart from (at most
        :data:`MAX_CANDIDATES`; a narrower search is tried when a list is longer)."""
        s = Sort("key", t.entity)
        for narrow in (False, True):
            snap = planner.snapshot()
            if not planner.acquire(s, t.key, narrow=narrow):
                return False
            cands = candidates_of(
                self.domain,
                planner.chain,
                planner.results,
                planner.know.origin(s, t.key),
                t.key,
                t.entity,
            )
            if len(cands) <= MAX_CANDIDATES:
                break
            planner.restore(snap)
        else:
            return False
        for entity, key in dict.fromkeys(
            (e, k) for e, k, _ in unseen_cells(self.domain, initial, t, cands, planner.shown())
        ):
            if not planner.acquire(Sort("key", entity), key):
                return False
            self._reveal(planner, entity, key)
        return not unseen_cells(self.domain, initial, t, cands, planner.shown())

    def _recognising_reads(
        self, planner: Planner, initial: State, targets: list[Target]
    ) -> set[int]:
        """Indexes of the calls that show a cell some target's recognition needs (an
        exploratory read of the walk that did so must not be pruned)."""
        need: set[Cell] = set()
        for t in targets:
            origin = planner.know.origin(Sort("key", t.entity), t.key)
            cands = candidates_of(
                self.domain, planner.chain, planner.results, origin, t.key, t.entity
            )
            need.update(unseen_cells(self.domain, initial, t, cands, set()))
        return {i for i, shown in enumerate(planner.reveals) if shown.cells & need}

    def _absorb(
        self,
        initial: State,
        targets: dict[tuple[str, str], Target],
        givens: list[Given],
        principal: tuple[str, str] | None,
    ) -> dict[tuple[str, str], Target]:
        """The targets retold with the givens true of them (:func:`absorb_givens`), so
        "Standing Desk" is said of the item it is, not as a loose fact in the opener."""
        loose: list[tuple[str, str, Any]] = []
        for g in givens:
            s = parse_sort(g.sort)
            ent, _, fld = s.name.partition(".")
            if s.kind == "field" and ent != self.principal:
                loose.append((ent, fld, g.value))
        out = dict(targets)
        for k, t in targets.items():
            if not loose:
                break
            new, used = absorb_givens(self.domain, initial, t, loose, principal)
            out[k] = new
            loose = [x for i, x in enumerate(loose) if i not in used]
        return out

    def _reveal(self, planner: Planner, entity: str, key: Any) -> None:
        """Add a read that shows the whole row (so the agent can match the description)."""
        for t in self._pick_tool(self.domain.read_tools, planner.rng):
            row = row_lookup(t.returns)
            if row is None or row.entity != entity or len(t.params) != 1:
                continue
            assert isinstance(row.key, ir.Var)
            pname = row.key.name
            if any(c.tool == t.name and c.args.get(pname) == key for c in planner.chain):
                return
            planner.call(t.name, {pname: key})
            return

    # ----------------------------------------------------------------- kinds

    def action(self, initial: State, rng: random.Random, walk: bool) -> Candidate:
        st = initial.copy()
        planner = Planner(
            self.domain, st, rng, self.execute, self.usage, shared_reads=self._reads(initial)
        )
        explored: set[int] = set()
        if walk:
            self._walk_prefix(planner, initial, rng, explored)
        n = rng.randint(1, self.options.max_intents)
        intents: list[Call] = []
        targets: dict[tuple[str, str], Target] = {}
        created: dict[Any, str] = {}
        principal: tuple[str, str] | None = None
        intent_writes: list[set[tuple[str, str, str]]] = []
        said_on: list[State] = []  # the state each request is made in (for its guards)
        pinned: list[tuple[str, str, str]] = []  # every cell an intent writes
        for i in range(n):
            done = False
            for tool in self._pick_tool(self.domain.write_tools, rng):
                if walk:
                    args = self._bind_known(tool, st, planner, rng)
                else:
                    args = self._bind(tool, st, planner, rng)
                if args is None:
                    continue
                try:
                    owner = self._owner_of_args(st, tool, args)
                except NoCandidate:
                    continue
                if principal is not None and owner is not None and owner != principal:
                    continue
                if any(c.tool == tool.name and c.args == args for c in intents):
                    continue
                snap = planner.snapshot()
                before = st.copy()
                try:
                    cells = footprint(self.domain, st, tool.name, args)
                except ToolError:
                    continue
                ok_targets = dict(targets)
                if not self._identify(
                    planner, initial, tool, args, set(created), rng, ok_targets, principal or owner
                ):
                    planner.restore(snap)
                    continue
                ok, _ = planner.call(tool.name, args, stated=True)
                if not ok or st == before:
                    planner.restore(snap)  # failed or changed nothing: not an intent
                    continue
                if self._two_customers(initial, planner):
                    planner.restore(snap)  # reached through another customer's rows
                    st.assign(before)
                    planner.forget_reads()
                    continue
                written = {(e, k, f) for e, k, f, _, _ in diff(before, st)}
                if any(written & w for w in intent_writes):
                    planner.restore(snap)  # a later intent would hide an earlier one
                    st.assign(before)
                    planner.forget_reads()
                    continue
                intent_writes.append(written)
                said_on.append(before)
                pinned.extend(c for c in cells if c not in pinned)
                targets = ok_targets
                principal = principal or owner
                intents.append(Call(tool=tool.name, args=args))
                for s, v in _created(self.domain, before, st):
                    created[v] = f"the new {humanize(s).lower()}"
                done = True
                break
            if not done:
                if i == 0:
                    raise NoCandidate("no_valid_binding")
                break
        goal = Goal(changes=_changes(initial, st, pinned))
        explored -= self._recognising_reads(planner, initial, list(targets.values()))
        chain = prune_reads(self.domain, planner, explored)
        targets = self._absorb(initial, targets, planner.givens, principal)
        try:
            sentences = [
                intent_text(
                    self.domain,
                    self.domain.tools[c.tool],
                    c.args,
                    rng,
                    targets,
                    created,
                    principal,
                    said_on[i],
                )
                for i, c in enumerate(intents)
            ]
        except NoTrueIntent:
            raise NoCandidate("no_true_intent") from None
        depends = _intent_dependencies(self.domain, initial, planner.givens, chain, intents)
        # Requests that only work out in one order (a call refused, or another end state,
        # in some order the data allow) are all said in the chain's order.
        ordered = False
        if len(intents) > 1:
            orders = order_problem(
                self.domain, initial, planner.givens, chain, goal, execute=self.execute
            )
            ordered = bool(orders.problem) or not orders.complete
        if ordered:
            depends = [False] + [True] * (len(intents) - 1)
        body = join_intents(sentences, rng, depends)
        text = _with_opener(
            self.domain,
            planner.givens,
            rng,
            body,
            self.principal,
            _today(self.domain, intents, self.today),
        )
        return Candidate(
            "action",
            "walk" if walk else "backward",
            initial,
            chain,
            list(planner.givens),
            list(targets.values()),
            text,
            goal,
            intents=intents,
            ordered=ordered,
        )

    def _two_customers(self, initial: State, planner: Planner) -> bool:
        """Do the givens so far identify more than one customer? A task speaks for one
        (the gate rejects the others as ``several_customers``): an intent whose values
        could only be acquired through a second customer's rows is not taken."""
        return len(identified_principals(self.domain, initial, planner.givens)) > 1

    def _owner_of_args(
        self, st: State, tool: ToolDef, args: dict[str, Any]
    ) -> tuple[str, str] | None:
        """The one principal owning the call's id arguments.

        Raises NoCandidate("mixed_owners") when ids of two users are mixed: a user can
        only speak about their own things.
        """
        owners = set()
        for name, v in args.items():
            s = param_sort(tool.params[name])
            if s.kind == "key":
                o = self._owner(st, s.name, v)
                if o is not None:
                    owners.add(o)
        if len(owners) > 1:
            raise NoCandidate("mixed_owners")
        return owners.pop() if owners else None

    def _walk_prefix(
        self, planner: Planner, initial: State, rng: random.Random, explored: set[int]
    ) -> None:
        """Start a walk: the user states who they are, then a few exploratory reads.

        Indexes of the exploratory reads go to ``explored``; the ones whose output no
        later call needs are pruned from the final chain.
        """
        p = self.principal
        if p is None or not initial.tables[p]:
            return
        key = rng.choice(initial.sorted_keys(p))
        planner.acquire(Sort("key", p), key)
        for _ in range(rng.randint(1, 3)):
            options = []
            for t in self.domain.read_tools:
                args = self._bind_known(t, planner.state, planner, rng)
                if args is not None and not any(
                    c.tool == t.name and c.args == args for c in planner.chain
                ):
                    options.append((t, args))
            if not options:
                return
            options.sort(key=lambda ta: self.usage[ta[0].name])
            t, args = options[min(len(options) - 1, rng.randint(0, 2))]
            ok, _ = planner.call(t.name, args)
            if ok:
                explored.add(len(planner.chain) - 1)

    def _bind_known(
        self, tool: ToolDef, st: State, planner: Planner, rng: random.Random
    ) -> dict[str, Any] | None:
        """Arguments drawn only from what the walk already knows (plus free values, and
        any enum member for a write: its intent sentence will state it)."""
        pools: dict[str, Sequence[Any]] = {}
        nows = now_params(self.domain, tool)
        for name, p in tool.params.items():
            s = param_sort(p)
            if name in nows:
                pools[name] = [self.today]
            elif s.kind == "free":
                pools[name] = [free_value(self.domain, tool, p, rng, st) for _ in range(3)]
            elif s.kind == "enum" and tool.is_write:
                pools[name] = list(strip_opt(p.ty).values)  # type: ignore[attr-defined]
            else:
                pools[name] = planner.know.values(s)
            if not pools[name] and not p.has_default:
                return None
        pools = _with_absent(tool, pools)
        for _ in range(WRITE_TRIES // 2):
            args = _drop_absent({n: rng.choice(v) for n, v in pools.items()})
            try:
                precheck(self.domain, st, tool.name, args, explain=False)
            except ToolError:
                continue
            return args
        return None

    def information(self, initial: State, rng: random.Random) -> Candidate:
        ask = [t for t in self.domain.read_tools if _direct_answer(self.domain, t)]
        roll = rng.random()
        if ask and roll < 0.3:
            try:
                return self._ask(initial, rng, ask)
            except NoCandidate:
                pass
        elif roll < 0.45:
            try:
                return self._related_question(initial, rng)
            except NoCandidate:
                pass
        return self._row_question(initial, rng)

    def _ask(self, initial: State, rng: random.Random, tools: list[ToolDef]) -> Candidate:
        """A question one read answers with plain values (a price, a count)."""
        st = initial.copy()
        planner = Planner(
            self.domain, st, rng, self.execute, self.usage, shared_reads=self._reads(initial)
        )
        for tool in self._pick_tool(tools, rng):
            asked = _open_questions(tool)
            if asked is None:
                continue
            for _ in range(WRITE_TRIES // 3):
                snap = planner.snapshot()
                args: dict[str, Any] = {}
                for name, p in tool.params.items():
                    vals = planner.candidates(param_sort(p))
                    if not vals:
                        break
                    args[name] = rng.choice(vals)
                if len(args) != len(tool.params):
                    continue
                try:
                    result = planner.read(tool, args)
                    principal = self._owner_of_args(st, tool, args)
                except (ToolError, NoCandidate):
                    continue
                values = result if isinstance(result, list) else [result]
                if not values or len(values) > 3 or len(set(map(repr, values))) != len(values):
                    continue
                targets: dict[tuple[str, str], Target] = {}
                if not self._identify(planner, initial, tool, args, set(), rng, targets, principal):
                    planner.restore(snap)
                    continue
                ok, _ = planner.call(tool.name, args, stated=True)
                if not ok:
                    planner.restore(snap)
                    continue
                targets = self._absorb(initial, targets, planner.givens, principal)
                try:
                    body = intent_text(self.domain, asked, args, rng, targets, {}, principal, st)
                except NoTrueIntent:
                    planner.restore(snap)
                    continue
                if any(stated(body, v) for v in values):
                    planner.restore(snap)
                    continue
                text = _with_opener(self.domain, planner.givens, rng, body, self.principal)
                return Candidate(
                    "information",
                    "ask",
                    initial,
                    list(planner.chain),
                    list(planner.givens),
                    list(targets.values()),
                    text,
                    Goal(
                        changes=[],
                        answer=list(values),
                        answer_not=contradicting(
                            self.domain,
                            initial,
                            planner.know,
                            list(values),
                            text,
                            principal,
                            [asked],
                            planner.chain,
                        ),
                    ),
                )
        raise NoCandidate("no_information_target")

    def _row_tools(self) -> dict[str, ToolDef]:
        """Per entity, a read that shows a whole row given its id (the first such tool)."""
        out: dict[str, ToolDef] = {}
        for t in self.domain.read_tools:
            row = row_lookup(t.returns)
            if row is not None and len(t.params) == 1:
                out.setdefault(row.entity, t)
        return out

    def _related_question(self, initial: State, rng: random.Random) -> Candidate:
        """A question about a row the target points to: "What is the name of the product
        of the item with color navy?" — two row reads, the second on an id the first
        showed."""
        st = initial.copy()
        planner = Planner(
            self.domain, st, rng, self.execute, self.usage, shared_reads=self._reads(initial)
        )
        rows = self._row_tools()
        pairs = [
            (ent, f, fd.ty.entity)
            for ent in rows
            for f, fd in self.domain.entities[ent].fields.items()
            if isinstance(fd.ty, RefT) and fd.ty.entity in rows and fd.ty.entity != ent
        ]
        rng.shuffle(pairs)
        pairs.sort(key=lambda p: self.usage[rows[p[2]].name])
        for ent, fname, other in pairs[:4]:
            for key in first_in_random_order(rng, initial.sorted_keys(ent), 3):
                snap = planner.snapshot()
                u = initial.tables[ent][key][fname]
                odef = self.domain.entities[other]
                askable = [g for g, fd in odef.fields.items() if fd.ty in (INT, STR, DATE)]
                principal = self._owner(initial, ent, key)
                if u not in initial.tables[other] or not askable or principal == (other, u):
                    planner.restore(snap)
                    continue
                edef = self.domain.entities[ent]
                t1, t2 = rows[ent], rows[other]
                named: dict[tuple[str, str], Target] = {}
                # The same naming as for any id argument: describe, state, look up.
                if not self._identify(
                    planner, initial, t1, {next(iter(t1.params)): key}, set(), rng, named, principal
                ):
                    planner.restore(snap)
                    continue
                target = named.get((ent, key))
                gname = rng.choice(askable)
                value = initial.tables[other][u][gname]
                a1, a2 = {next(iter(t1.params)): key}, {next(iter(t2.params)): u}
                ok1 = any(c.tool == t1.name and c.args == a1 for c in planner.chain)
                if not ok1:  # naming the target did not need its row: read it now
                    ok1, _ = planner.call(t1.name, a1)
                ok2 = any(c.tool == t2.name and c.args == a2 for c in planner.chain)
                if ok1 and not ok2:
                    ok2, _ = planner.call(t2.name, a2)
                if target is not None:
                    target = self._absorb(initial, named, planner.givens, principal)[(ent, key)]
                subject = (
                    target.phrase
                    if target
                    else f"{humanize(ent)} {key}"
                    if edef.key_givable
                    else f"my {humanize(ent)}"
                )
                # The phrase names the relation it follows ("the departure airport of
                # flight GG4370"), and the related row's target description follows that
                # same field, so its uniqueness is proven for the phrase as written.
                rel = relation_name(self.domain, ent, fname)
                inner = (
                    re.sub(r"\bx\.", "y.", target.description)
                    if target
                    else f"y.{edef.key} == {key!r}"
                )
                related = Target(
                    entity=other,
                    key=u,
                    phrase=f"the {rel} of {subject}",
                    description=(f"any(y.{fname} == x.{odef.key} for y in {ent} if {inner})"),
                )
                body = rng.choice(
                    (
                        "What is the {g} of {r}?",
                        "Could you tell me the {g} of {r}?",
                    )
                ).format(g=field_name(self.domain, other, gname), r=related.phrase)
                text = _with_opener(self.domain, planner.givens, rng, body, self.principal)
                if not (ok1 and ok2) or stated(text, value):
                    planner.restore(snap)
                    continue
                return Candidate(
                    "information",
                    "related",
                    initial,
                    list(planner.chain),
                    list(planner.givens),
                    [*([target] if target else []), related],
                    text,
                    Goal(
                        changes=[],
                        answer=[value],
                        answer_not=contradicting(
                            self.domain,
                            initial,
                            planner.know,
                            [value],
                            text,
                            principal,
                            [t1, t2],
                            planner.chain,
                        ),
                    ),
                )
        raise NoCandidate("no_information_target")

    def _row_question(self, initial: State, rng: random.Random) -> Candidate:
        st = initial.copy()
        planner = Planner(
            self.domain, st, rng, self.execute, self.usage, shared_reads=self._reads(initial)
        )
        row_tools = [
            t
            for t in self.domain.read_tools
            if row_lookup(t.returns) is not None and len(t.params) == 1
        ]
        snap: tuple[Any, int, int] | None = None
        for tool in self._pick_tool(row_tools, rng):
            row = row_lookup(tool.returns)
            assert row is not None and isinstance(row.key, ir.Var)
            ent = row.entity
            pname = row.key.name
            for key in first_in_random_order(rng, initial.sorted_keys(ent), 5):
                if snap is not None:
                    planner.restore(snap)
                snap = planner.snapshot()
                principal = self._owner(initial, ent, key)
                edef = self.domain.entities[ent]
                # A user knows their own givable details (their name, their zip): asking
                # for them is not a question a customer would put.
                own = principal is not None and (ent, key) == principal
                askable = [
                    f
                    for f, fd in edef.fields.items()
                    if fd.ty in (INT, STR, DATE) and not fd.unique and not (own and fd.givable)
                ]
                if not askable:
                    break
                target = None
                if (ent, key) != principal and not edef.key_givable:
                    target = describe(self.domain, initial, ent, key, rng, principal)
                    if target is None:
                        continue
                    for fs, fv in stated_facts(self.domain, initial, target):
                        planner.give(fs, fv)
                    if not self._recognise(planner, initial, target):
                        continue
                elif not planner.acquire(Sort("key", ent), key):
                    continue
                fname = rng.choice(askable)
                value = initial.tables[ent][key][fname]
                if target is not None and f"x.{fname} ==" in target.description:
                    continue
                if any(str(g.value) == str(value) for g in planner.givens):
                    continue
                read = Call(tool=tool.name, args={pname: key})
                if read not in planner.chain:  # recognising the target may have read it
                    ok, _ = planner.call(tool.name, {pname: key})
                    if not ok:
                        continue
                if target is not None:
                    target = self._absorb(initial, {(ent, key): target}, planner.givens, principal)[
                        (ent, key)
                    ]
                if target is None and not edef.key_givable:
                    q = rng.choice(
                        ("What is my {f}?", "Could you tell me my {f}?", "I need to know my {f}.")
                    )
                    body = q.format(f=field_name(self.domain, ent, fname))
                else:
                    subject = target.phrase if target else f"{humanize(ent)} {key}"
                    q = rng.choice(
                        (
                            "What is the {f} of {s}?",
                            "Could you tell me the {f} of {s}?",
                            "I need to know the {f} of {s}.",
                        )
                    )
                    body = q.format(f=field_name(self.domain, ent, fname), s=subject)
                text = _with_opener(self.domain, planner.givens, rng, body, self.principal)
                return Candidate(
                    "information",
                    "backward",
                    initial,
                    list(planner.chain),
                    list(planner.givens),
                    [target] if target else [],
                    text,
                    Goal(
                        changes=[],
                        answer=[value],
                        answer_not=contradicting(
                            self.domain,
                            initial,
                            planner.know,
                            [value],
                            text,
                            principal,
                            [tool],
                            planner.chain,
                        ),
                    ),
                )
        raise NoCandidate("no_information_target")

    def _see(self, planner: Planner, entity: str, key: Any, fname: str, value: Any) -> bool:
        """Make the chain show ``entity[key].fname`` (a read of its row if no output has
        shown it yet); false if no read can."""
        fact = Sort("field", f"{entity}.{fname}")
        if planner.know.knows(fact, value):
            return True
        snap = planner.snapshot()
        if planner.acquire(Sort("key", entity), key):
            self._reveal(planner, entity, key)
            if planner.know.knows(fact, value):
                return True
        planner.restore(snap)
        return False

    def refusal(self, initial: State, rng: random.Random) -> Candidate:
        st = initial.copy()
        planner = Planner(
            self.domain, st, rng, self.execute, self.usage, shared_reads=self._reads(initial)
        )
        uncitable = hedged = unseen = stated = False
        refusable = [t for t in self.domain.write_tools if t.requires or t.soft_fails]
        for tool in self._pick_tool(refusable, rng):
            args = self._bind(tool, st, planner, rng, want_fail=True, want_soft=tool.soft_fails)
            if args is None:
                continue
            # A call that passes its requires but soft-fails is refused for the message
            # it returns (tasks/softrefusal.py); the agent sees it by making the call.
            soft: SoftReason | None = None
            if failed_check(self.domain, st, tool.name, args) is None:
                soft = soft_reason(self.domain, st, tool.name, args)
                if soft is None:
                    continue
                blocking: list[tuple[str, Any, str, Any]] = []
                counted: list[list[Any]] = []
            else:
                blocking = _blocking_values(self.domain, st, tool, args)
                if not blocking:
                    continue
                if _uncitable(self.domain, st, tool, args):
                    # A true reason a grader cannot recognise as a value ("that variant
                    # is out of stock": a flag) would fail a careful agent that gives it.
                    uncitable = True
                    continue
                counted = _aggregate_reasons(self.domain, st, tool, args)
            probe = st.copy()
            try:
                apply_unchecked(self.domain, probe, tool.name, args)
            except ToolError:
                continue
            if probe == st:
                continue  # asking for nothing: not a meaningful refusal
            try:
                principal = self._owner_of_args(st, tool, args)
            except NoCandidate:
                continue
            targets: dict[tuple[str, str], Target] = {}
            snap = planner.snapshot()
            planner.state_args(tool, args)  # the request states its enum values
            # The targets are described without their blocking fields where they can be
            # ("my order placed on ...", not "my delivered order"): a reason the request
            # states is no reason.
            reason_cells = [(e, k, f) for e, k, f, _ in blocking]
            if not self._identify(
                planner, initial, tool, args, set(), rng, targets, principal, reason_cells
            ):
                planner.restore(snap)
                continue
            if not all(
                planner.acquire(param_sort(tool.params[p]), a) for p, a in args.items()
            ) or self._two_customers(initial, planner):
                planner.restore(snap)
                continue
            targets = self._absorb(initial, targets, planner.givens, principal)
            try:
                body = intent_text(self.domain, tool, args, rng, targets, {}, principal, st)
            except NoTrueIntent:
                planner.restore(snap)
                continue
            # Every true reason counts, except one the request itself says ("pay with my
            # gift card" cannot be refused *because* it is a gift card: echoing passes).
            reasons = [b for b in blocking if not said(body, b[3])]
            # The agent must be able to *see* a reason before it gives it: read the row
            # that holds each one unless an earlier output already showed it. One seen
            # reason is enough; the others still count (an agent that read more may
            # give them).
            for b in reasons:
                self._see(planner, *b)
            text = _with_opener(
                self.domain,
                planner.givens,
                rng,
                body,
                self.principal,
                _today(self.domain, [Call(tool=tool.name, args=args)], self.today),
            )
            shown = {repr(v) for _, v in planner.know.facts_items()}
            shown |= {repr(x) for r in planner.results for x in scalars(r)}
            values = [b[3] for b in reasons]
            for group in counted:
                # A count ("only 2 seats left", "1 flown trip") is a reason too.
                values += group
            values = list({repr(v): v for v in values if not said(text, v)}.values())
            groups = [[v] for v in values]
            if soft is not None:
                if said(text, soft.message):
                    planner.restore(snap)
                    stated = True
                    continue
                groups = [g for g in soft.groups() if g == [soft.message] or not said(text, g[0])]
                if len(groups) == 1:
                    # Only the message itself is left to give, and an agent that puts it
                    # in its own words would fail: no fair refusal here.
                    planner.restore(snap)
                    stated = stated or bool(soft.values)
                    uncitable = uncitable or not soft.values
                    continue
                values = [soft.message]
                shown.add(repr(soft.message))  # the refused call shows it, changing nothing
            if not any(repr(v) in shown for v in values):
                planner.restore(snap)
                # Every reason already said ("buy a gift card with my gift card"): this
                # tool cannot be refused fairly here; another one may.
                if all(said(text, b[3]) for b in blocking) and not counted:
                    stated = True
                else:
                    unseen = True
                continue
            wrong = contradicting(
                self.domain,
                initial,
                planner.know,
                values,
                text,
                principal,
                [tool],
                planner.chain,
                explained=values,
            )
            if not wrong and soft is None:
                # Nothing a careful agent would never say: a hedge naming every value
                # passes (the gate's hedge_passes). Try another tool, uncounted.
                planner.restore(snap)
                hedged = True
                continue
            self.usage[tool.name] += 1
            return Candidate(
                "refusal",
                "backward",
                initial,
                list(planner.chain),
                list(planner.givens),
                list(targets.values()),
                text,
                Goal(changes=[], answer_any=groups, answer_not=wrong),
                refused_call=Call(tool=tool.name, args=args),
            )
        if hedged:
            raise NoCandidate("refusal_hedge_passes")
        if unseen:
            raise NoCandidate("refusal_reason_unseen")
        if stated:
            raise NoCandidate("refusal_reason_in_instruction")
        raise NoCandidate("refusal_reason_uncitable" if uncitable else "no_refusal_target")


class _Absent:
    """A pool entry meaning "leave this argument out" (it takes its default)."""

    def __repr__(self) -> str:
        return "ABSENT"


ABSENT = _Absent()


def _with_absent(tool: ToolDef, pools: dict[str, Sequence[Any]]) -> dict[str, Sequence[Any]]:
    """``pools`` where a parameter with a default may also be left out, about as often as
    given (a partial update names only what it changes). A left-out argument is never
    said: the call omits it and no template that names it is used."""
    out = dict(pools)
    for name, p in tool.params.items():
        if p.has_default:
            vals = [v for v in out.get(name, []) if v is not None]
            out[name] = vals + [ABSENT] * max(1, len(vals))
    return out


def _drop_absent(args: dict[str, Any]) -> dict[str, Any]:
    return {n: v for n, v in args.items() if v is not ABSENT}


def prune_reads(domain: Domain, planner: Planner, removable: set[int]) -> list[Call]:
    """The chain without the removable reads whose outputs no later call needed.

    A read of a tool that is still rare in the task set is kept: the chain stays valid
    (reads change nothing) and every reachable tool gets exercised somewhere.
    """
    if not removable:
        return list(planner.chain)
    removable = {i for i in removable if planner.usage.get(planner.chain[i].tool, 0) > 2}
    needed: set[int] = set()
    for c in planner.chain:
        tool = domain.tools[c.tool]
        for p, v in c.args.items():
            origin = planner.know.origin(param_sort(tool.params[p]), v)
            if origin is not None and origin >= 0:
                needed.add(origin)
    return [c for i, c in enumerate(planner.chain) if i not in removable or i in needed]


def _direct_answer(domain: Domain, tool: ToolDef) -> bool:
    """A read whose result is plain values (prices, counts) and whose arguments are all
    found on the state (no invented values)."""
    if tool.is_write or tool.return_ty is None or not tool.intents:
        return False
    t = tool.return_ty
    if isinstance(t, ListT):
        t = t.elem
    if t not in (INT, STR, DATE) and not isinstance(t, EnumT):
        return False
    return all(param_sort(p).kind != "free" for p in tool.params.values())


_YES_NO = re.compile(r"(?:is|are|was|were|has|have|had|do|does|did)\b", re.IGNORECASE)


def _open_questions(tool: ToolDef) -> ToolDef | None:
    """``tool`` with only the templates that ask an open question.

    "Has my flight been cancelled?" asks for yes or no, but the goal is the status: a
    truthful "No, it hasn't" would fail and "yes, scheduled" would pass. So yes/no
    templates are not used; a read of one field without an open template is asked as
    "What is the <field> of <its row>?", anything else is not asked (None).
    """
    open_ = tuple(t for t in tool.intents if not _YES_NO.match(t.text.lstrip()))
    if not open_ and isinstance(tool.returns, ir.FieldOf) and isinstance(tool.returns.key, ir.Var):
        field_name = humanize(tool.returns.field)
        open_ = (Intent(f"What is the {field_name} of {{{tool.returns.key.name}}}?"),)
    if not open_:
        return None
    return tool if open_ == tool.intents else replace(tool, intents=open_)


def _with_opener(
    domain: Domain,
    givens: list[Given],
    rng: random.Random,
    body: str,
    principal: str | None = None,
    today: Any = None,
) -> str:
    """The instruction: the opener, then the requests.

    Raises NoCandidate("loose_given") when a given is neither the user's own detail nor
    said by a request: "It's about the item in turquoise and in size XS. I'd like to
    order the item priced at $750" reads as one item described twice, while the first
    is only a row the chain searches through (a blind player ordered the wrong one)."""
    if unsaid_givens(domain, givens, body, principal, today)[1]:
        raise NoCandidate("loose_given")
    head = opener(domain, givens, rng, body, principal, today)
    return (head + " " + body).strip() if head else body


def _today(domain: Domain, calls: list[Call], today: str | None = None) -> Any:
    """The date the requests give as today (their ``now`` arguments), if any; else
    ``today`` (the state's) when a request's tool reads ``today()``."""
    for c in calls:
        for p in sorted(now_params(domain, domain.tools[c.tool])):
            if p in c.args:
                return c.args[p]
    if any(tool_uses_today(domain.tools[c.tool]) for c in calls):
        return today
    return None


def _intent_dependencies(
    domain: Domain, initial: State, givens: list[Given], chain: list[Call], intents: list[Call]
) -> list[bool]:
    """Per request, whether it needs an earlier request's result (transitively through
    the reads between them): the data dependencies the dry-run gate orders calls by
    (:func:`~graphgen.tasks.dryrun.call_dependencies`). Only such a request is said to
    come "then"; the others are in any order."""
    if len(intents) < 2:
        return [False] * len(intents)
    deps = call_dependencies(domain, initial, givens, chain)
    closure: list[set[int]] = []
    for d in deps:
        closure.append(set(d).union(*(closure[j] for j in d)))
    at: list[int] = []
    for c in intents:
        i = next((j for j, x in enumerate(chain) if x.tool == c.tool and x.args == c.args), -1)
        at.append(i)
    return [
        k > 0 and at[k] >= 0 and any(at[j] in closure[at[k]] for j in range(k) if at[j] >= 0)
        for k in range(len(intents))
    ]


def _created(domain: Domain, before: State, after: State) -> list[tuple[str, str]]:
    """The rows ``after`` has and ``before`` does not, in table order."""
    out = []
    for e in domain.entities:
        table, old = after.tables[e], before.tables[e]
        maybe = before.changed_keys(after, e)  # only a written row can be new
        if maybe is None:
            out += [(e, k) for k in table if k not in old]
            continue
        want = {k for k in maybe if k in table and k not in old}
        # A new row was put in last: read the table from its end until all are met.
        found = []
        for k in reversed(table):
            if not want:
                break
            if k in want:
                found.append(k)
                want.discard(k)
        out += [(e, k) for k in reversed(found)]
    return out


def _changes(a: State, b: State, pinned: Sequence[tuple[str, str, str]] = ()) -> list[Change]:
    """The diff from ``a`` to ``b``, plus the pinned cells that kept their value (a
    request "set the city to Barcelona" pins the city even when it already was)."""
    out = [Change(entity=e, key=k, field=f, before=x, after=y) for e, k, f, x, y in diff(a, b)]
    seen = {(c.entity, c.key, c.field) for c in out}
    for e, k, f in pinned:
        if f == "*" or (e, k, f) in seen:
            continue
        row_a, row_b = a.tables[e].get(k), b.tables[e].get(k)
        if row_a is not None and row_b is not None and row_a[f] == row_b[f]:
            out.append(Change(entity=e, key=k, field=f, before=row_a[f], after=row_b[f]))
    return sorted(out, key=lambda c: (c.entity, c.key, c.field))


def _blocking_values(
    domain: Domain, st: State, tool: ToolDef, args: dict[str, Any]
) -> list[tuple[str, Any, str, Any]]:
    """(entity, key, field, value) facts that make a precondition of ``tool`` fail: every
    true reason a refusal may cite.

    Every failing precondition counts, and within one every fact that makes it fail:
    both sides of a failed comparison, every operand of a failed ``or``, every failed
    operand of an ``and``. An id is cited by the display value of the row it names
    (a product's name); flags and lists are left out (no value to cite).
    """
    env = check_args(tool, args, st)
    out: list[tuple[str, Any, str, Any]] = []
    for chk in tool.requires:
        if _truth(chk.expr, st, env, domain) is not False:
            continue
        for leaf in _culprits(chk.expr, st, env, domain):
            for node in _fields_read(leaf):
                if node.ty == BOOL or isinstance(node.ty, ListT):
                    continue
                try:
                    key = evaluate(node.key, st, env, domain)
                    v = evaluate(node, st, env, domain)
                except ToolError:
                    continue
                fact = (node.entity, key, node.field, v)
                ref = strip_opt(node.ty)  # an optional reference names a row too
                if isinstance(ref, RefT):
                    # An id is no reason to cite, but what it names is: "that item is
                    # a different product" cites the product's display name.
                    other = domain.entities[ref.entity]
                    row = st.tables[other.name].get(v)
                    if other.display is None or row is None:
                        continue
                    fact = (other.name, v, other.display, row[other.display])
                    v = row[other.display]
                if not isinstance(v, list | dict) and v is not None and fact not in out:
                    out.append(fact)
    return out


def _failing_leaves(
    domain: Domain, st: State, tool: ToolDef, args: dict[str, Any]
) -> list[tuple[ir.Expr, dict[str, Any]]]:
    """The culprit conditions (:func:`_culprits`) of every failing precondition."""
    env = check_args(tool, args, st)
    return [
        (leaf, env)
        for chk in tool.requires
        if _truth(chk.expr, st, env, domain) is False
        for leaf in _culprits(chk.expr, st, env, domain)
    ]


def _uncitable(domain: Domain, st: State, tool: ToolDef, args: dict[str, Any]) -> bool:
    """Is some reason the call fails a flag or a list, with no value to cite ("the
    variant is out of stock", "the booking has no insurance")?"""
    return any(
        isinstance(leaf, ir.Contains) or (isinstance(leaf, ir.FieldOf) and leaf.ty == BOOL)
        for leaf, _ in _failing_leaves(domain, st, tool, args)
    )


def _aggregate_reasons(
    domain: Domain, st: State, tool: ToolDef, args: dict[str, Any]
) -> list[list[Any]]:
    """For each failing comparison over an aggregate, the numbers a careful agent may
    give for it: each aggregate's value (flown trips, seats taken) and, for a limit
    ``aggregates + request <= cap``, what is left (``cap`` minus the aggregates: "only 2
    seats left")."""
    out: list[list[Any]] = []
    for leaf, env in _failing_leaves(domain, st, tool, args):
        if not isinstance(leaf, ir.Compare) or not any(
            isinstance(n, ir.Agg) for n in ir.walk(leaf)
        ):
            continue
        group: list[Any] = []
        for side, other in ((leaf.left, leaf.right), (leaf.right, leaf.left)):
            aggs = _signed_aggregates(side, 1)
            if not aggs:
                continue
            try:
                taken = sum(sign * evaluate(a, st, env, domain) for sign, a in aggs)
                group += [evaluate(a, st, env, domain) for _, a in aggs]
                group.append(evaluate(other, st, env, domain) - taken)
            except (ToolError, TypeError):
                continue
        out.append([v for v in group if isinstance(v, int) and not isinstance(v, bool)])
    return out


def _signed_aggregates(e: ir.Expr, sign: int) -> list[tuple[int, ir.Expr]]:
    """The aggregates added (+1) or subtracted (-1) at the top of a sum."""
    if isinstance(e, ir.Agg):
        return [(sign, e)]
    if isinstance(e, ir.Arith) and e.op in ("+", "-"):
        back = sign if e.op == "+" else -sign
        return _signed_aggregates(e.left, sign) + _signed_aggregates(e.right, back)
    return []


def _truth(e: ir.Expr, st: State, env: dict[str, Any], domain: Domain) -> bool | None:
    """The value of condition ``e`` (None if it cannot be evaluated)."""
    try:
        return bool(evaluate(e, st, env, domain))
    except ToolError:
        return None


def _culprits(e: ir.Expr, st: State, env: dict[str, Any], domain: Domain) -> list[ir.Expr]:
    """The atomic conditions that give ``e`` its value: for a false ``and`` its false
    operands, for a false ``or`` all of them (each is a reason), through ``not``."""
    match e:
        case ir.BoolOp(op=op, values=operands):
            value = _truth(e, st, env, domain)
            decisive = (op == "and") != bool(value)  # only some operands decide it
            return [
                leaf
                for x in operands
                if (t := _truth(x, st, env, domain)) is not None and (not decisive or t == value)
                for leaf in _culprits(x, st, env, domain)
            ]
        case ir.Not(operand=x):
            return _culprits(x, st, env, domain)
        case (
            ir.Lit()
            | ir.Var()
            | ir.FieldOf()
            | ir.RowOf()
            | ir.Exists()
            | ir.Compare()
            | ir.Arith()
            | ir.Neg()
            | ir.Contains()
            | ir.Len()
            | ir.ListLit()
            | ir.Comp()
            | ir.Agg()
            | ir.IfExp()
            | ir.DictLit()
            | ir.IsNone()
            | ir.Old()
            | ir.DictComp()
            | ir.Round()
            | ir.StrOp()
            | ir.Index()
            | ir.Today()
        ):
            return [e]
        case _:
            assert_never(e)


def _fields_read(e: ir.Expr) -> list[ir.FieldOf]:
    """The single-row field reads in ``e`` (a comprehension reads many rows: none of
    them is one fact to cite)."""
    match e:
        case ir.Comp() | ir.Agg():
            return []
        case ir.FieldOf(key=k):
            return [e, *_fields_read(k)]
        case (
            ir.Lit()
            | ir.Var()
            | ir.RowOf()
            | ir.Exists()
            | ir.Compare()
            | ir.BoolOp()
            | ir.Not()
            | ir.Arith()
            | ir.Neg()
            | ir.Contains()
            | ir.Len()
            | ir.ListLit()
            | ir.IfExp()
            | ir.DictLit()
            | ir.IsNone()
            | ir.Old()
            | ir.DictComp()
            | ir.Round()
            | ir.StrOp()
            | ir.Index()
            | ir.Today()
        ):
            return [f for c in ir.children(e) for f in _fields_read(c)]
        case _:
            assert_never(e)


__all__ = ["Candidate", "Expander", "GenOptions", "NoCandidate", "principal_entity"]
