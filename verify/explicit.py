"""Explicit-state search: the shortest chain that reaches a task's goal, found by running
the interpreter on concrete states, breadth first over every call the agent can make.

A second engine for the question :meth:`graphgen.verify.proofs.Prover.shortest` answers
with z3, written from the agent's side only: a call is possible when every argument it
passes is known (a given, or shown by an earlier output, :class:`~graphgen.tasks.plan.Knowledge`
and :func:`~graphgen.knowledge.reveal` exactly as the dry-run uses them); an
optional argument may always be left out; a call that raises changes nothing and shows
nothing, so it is never part of a shortest chain. The goal is checked after every
length with :func:`~graphgen.verify.proofs.goal_holds` (the grader's renaming of created
rows included).

It has no bound on strings, numbers or table sizes; its cost is the number of distinct
(state, knowledge, shown values) nodes, which grows with the branching (tools times known
values per parameter) to the power of the depth. Nodes reached by calls in another
order are one node (two reads in either order show the same values; two writes that
commute end in the same state), and so are nodes that differ only in what no later call,
target or answer can use (:meth:`Space.fingerprint`): the reductions that keep it small.
The deepest layer makes only the calls that can reach the goal (:func:`minimum`), and
no layer makes a call that cannot begin a chain reaching it in the calls left, by a
lower bound on what must still be learnt and done (:meth:`Space.useful`). It is exact
on small tasks and gives up, saying so, past ``max_nodes``: it never guesses.

Besides the shortest length, one breadth-first pass also yields what proof 5 needs: every
write call some shortest solution makes (:func:`minimum` keeps, per node, the writes of
every shortest chain reaching it), and :func:`other_final_state` looks for a chain of up
to the reference's length whose writes are among those that reaches the goal in another
final state: first over the sequences of those writes alone (a read changes no cell),
then, only if one of them ends elsewhere, over every chain. For a refusal,
:func:`enabling` asks whether the refused call itself can succeed after other calls,
and :func:`minimum` on the requested change whether any chain makes it (proof 6).
:class:`~graphgen.verify.proofs.Prover` asks these when the search is small (a call
budget, so the choice is deterministic) and z3 otherwise.

The two engines are cross-checked on random small tasks (``tests/test_explicit_search.py``):
any disagreement is a bug in one of them, as the z3 encoding's refusal of omitted
optional arguments was.

>>> from graphgen.domains import load_builtin
>>> from graphgen.stategen import generate_state
>>> from graphgen.tasks.model import Change, Given, Goal
>>> d = load_builtin("mock")
>>> s = generate_state(d, 0)
>>> key = sorted(s.tables["Account"])[0]
>>> row = s.tables["Account"][key]
>>> goal = Goal(changes=[Change(entity="Account", key=key, field="status",
...                             before=row["status"], after="locked")])
>>> r = shortest_chain(d, s, [Given(sort="field:Account.email", value=row["email"])], goal, 3)
>>> r.complete, r.min_calls, [c.tool for c in r.chain or []]
(True, 2, ['find_account', 'lock_account'])
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from graphgen import ir
from graphgen.domain import Domain, ToolDef, per_tool
from graphgen.errors import ToolError
from graphgen.footprint import COUNTER, ROWS, FieldRef, cells_read, cells_written, effect_writes
from graphgen.interp import call_or_fail, evaluate
from graphgen.knowledge import Reveal, Sort, param_sort, reveal
from graphgen.state import State
from graphgen.tasks.model import Call, Given, Goal, Task
from graphgen.tasks.plan import Executor, Knowledge
from graphgen.types import EnumT, ListT, OptT, PrimT, RefT, RowT, Ty, strip_opt
from graphgen.verify.bmc import (
    ChangesGoal,
    Recognition,
    comp_filter_params,
    relevance_levels,
    revealed_sorts,
    same_value,
    scalars,
)
from graphgen.verify.reachable import Reach
from graphgen.verify.relaxed import Need, Relaxed

#: Distinct nodes a search may expand before it gives up (``complete`` false).
MAX_NODES = 20_000


@dataclass(frozen=True)
class SearchResult:
    """The answer: ``min_calls`` and a witness ``chain`` (None and None when no chain of
    at most the bound reaches the goal), ``complete`` false when the search gave up
    before it could say, and the number of nodes it expanded."""

    min_calls: int | None
    chain: list[Call] | None
    complete: bool
    nodes: int


@dataclass(frozen=True)
class Minimum(SearchResult):
    """A :class:`SearchResult` whose last layer was searched whole: ``writes`` holds every
    write call (arguments in full, defaults included) some solution of exactly
    ``min_calls`` calls makes, in a fixed order."""

    writes: list[Call] = field(default_factory=list)
    #: When the search gave up: the most calls a chain it proved cannot reach the goal
    #: may have (every layer up to that depth was searched for a goal node, 0: only the
    #: root); None when it ended.
    none_within: int | None = None


@dataclass(frozen=True)
class FinalStates:
    """Proof 5's question answered: ``chain`` reaches the goal and ends in ``state``,
    none of the expected states (both None when no such chain exists), ``complete``
    false when the search gave up first."""

    chain: list[Call] | None
    complete: bool
    nodes: int
    state: State | None = None


@dataclass(frozen=True)
class _Written:
    """A write's outcome on one state (:meth:`Space._write`): the state it leaves, its
    result, what that shows, the writable tables' text after it and the call's key."""

    state: State
    result: Any
    shown: Reveal
    tables: str
    key: str  # the call's key (:func:`call_key`)


@dataclass(frozen=True)
class _Gain:
    """What one call's output adds to a node (:meth:`Space._gain`): the facts at the
    sorts the allowed tools take, the recognition atoms it shows and the indexes of the
    goal's answers among the scalars it shows."""

    facts: frozenset[tuple[Any, Any]]
    atoms: frozenset[tuple[str, Any]]
    answered: frozenset[int]


@dataclass
class _Node:
    state: State
    # what the agent knows (see :attr:`know`); None until first asked for
    known: Knowledge | None
    chain: list[Call]
    # the (field sort name, value) pairs recognising a target rests on that outputs showed
    seen: frozenset[tuple[str, Any]] = frozenset()
    # the write calls (keys) of every shortest chain found to end here
    writes: frozenset[str] = frozenset()
    # how often each allowed write call was made, then all writes (proof 5's bounds)
    made: tuple[int, ...] = ()
    # the parts of the fingerprint, kept up to date call by call: the writable tables
    # as text, the facts known (origins aside) at the sorts some allowed tool takes, and
    # which of the goal's answers outputs have shown (see :meth:`Space.fingerprint`)
    tables: str = ""
    facts: frozenset[tuple[Any, Any]] = frozenset()
    answered: frozenset[int] = frozenset()
    # the parent's knowledge, what this node's call showed and its origin: most nodes a
    # search makes are met before (another order of the same reads), and are dropped
    # on their fingerprint, which needs no knowledge; only a node kept learns
    pending: tuple[Knowledge, Reveal, int] | None = None
    # what is still to happen here (:meth:`Space._pending_at`), once asked
    todo: tuple[Need, ...] | None = None

    @property
    def know(self) -> Knowledge:
        """The values the agent knows here (givens and what outputs showed)."""
        if self.known is None:
            assert self.pending is not None
            parent, shown, origin = self.pending
            self.known = parent.copy()
            self.known.learn(shown, origin)
            self.pending = None
        return self.known


class Outcome(NamedTuple):
    """A successful call made at ``node`` (:meth:`Space.outcomes`): its tool, the call,
    its result and, for a write, what it did (its state, output and tables' text)."""

    node: _Node
    tool: ToolDef
    call: Call
    result: Any
    written: _Written | None = None


def moves(
    domain: Domain,
    know: Knowledge,
    tools: Sequence[str] | None = None,
    keep: Callable[[ToolDef, str, Any], bool] | None = None,
) -> Iterator[Call]:
    """Every call whose arguments are all known, tools (all, or ``tools``) and values in
    a fixed order; an optional parameter is also left out (its default). ``keep`` may
    leave out a parameter's value (one every call passing it fails with)."""
    for name in sorted(domain.tools) if tools is None else tools:
        tool = domain.tools[name]
        options: list[list[tuple[str, Any]]] = []
        for pname, sort, optional, _ in param_slots(domain, tool):
            vals: list[tuple[str, Any]] = [
                (pname, v)
                for v in sorted(know.values(sort), key=_order)
                if keep is None or keep(tool, pname, v)
            ]
            if optional:
                vals.append((pname, _OMIT))
            if not vals:
                break
            options.append(vals)
        else:
            for combo in itertools.product(*options):
                yield Call(tool=name, args={p: v for p, v in combo if v is not _OMIT})


@per_tool
def param_slots(domain: Domain, tool: ToolDef) -> tuple[tuple[str, Sort, bool, str | None], ...]:
    """Per parameter of ``tool``, in order: its name, the sort its argument is known at,
    whether it may be left out, and the entity it names a row of (None if none; an
    optional id is not one, as :func:`_recognised` reads it)."""
    return tuple(
        (
            p.name,
            param_sort(p),
            isinstance(p.ty, OptT),
            p.ty.entity if isinstance(p.ty, RefT) else None,
        )
        for p in tool.params.values()
    )


def call_key(domain: Domain, call: Call) -> str:
    """One text per distinct call: tool and arguments with defaults filled in, so leaving
    out an optional argument and passing its default are the same call."""
    tool = domain.tools[call.tool]
    return json.dumps([call.tool, tool.full_args(call.args)], sort_keys=True, default=str)


class Space:
    """The agent's moves on one task (the calls of ``tools``, default all), and what
    tells two nodes apart.

    A node's state is a copy of its parent's (rows are shared until a call writes one);
    only the tables some allowed tool can write are compared (the others never change),
    and the state part of a node's fingerprint is those tables."""

    def __init__(
        self,
        domain: Domain,
        initial: State,
        givens: Sequence[Given],
        goal: Goal | ChangesGoal,
        tools: Sequence[str] | None = None,
        recognize: Sequence[Recognition] = (),
        execute: Executor | None = None,
    ) -> None:
        self.domain = domain
        self.initial = initial
        self.givens = list(givens)
        self.want = (
            goal
            if isinstance(goal, ChangesGoal)
            else ChangesGoal(list(goal.changes), list(goal.answer))
        )
        self.changes = ChangesGoal(list(self.want.changes))
        self.tools = sorted(domain.tools) if tools is None else sorted(tools)
        self.write_tools = [n for n in self.tools if domain.tools[n].is_write]
        self.read_tools = [n for n in self.tools if not domain.tools[n].is_write]
        # A write that changes no cell the goal's changes read leaves them as they were:
        # from a node where they do not hold, its child is no goal node either.
        rel = self.changes.relevance(domain)
        self.goal_writes = [
            n
            for n in self.write_tools
            if rel is None or cells_written(domain, domain.tools[n]) & rel[0]
        ]
        self.other_calls = [n for n in self.write_tools if n not in self.goal_writes]
        self.other_calls += self.read_tools
        # with answers to show, a last call may be any read: no tool is cut by distance
        self._levels: list[frozenset[str]] | None = (
            [frozenset(self.goal_writes)] if rel is not None and not self.want.answers else None
        )
        self.writable = sorted(
            {c.entity for n in self.tools for c in cells_written(domain, domain.tools[n])}
        )
        self.recognize = list(recognize)
        # the writes :func:`_recognised` may refuse a call of: those naming a target's entity
        entities = {r.entity for r in self.recognize}
        self.picky = {
            n: domain.tools[n].is_write
            and any(
                isinstance(p.ty, RefT) and p.ty.entity in entities
                for p in domain.tools[n].params.values()
            )
            for n in self.tools
        }
        # Only these parts of what a node knows and saw can change what follows it: the
        # values of the sorts some allowed tool takes (its possible arguments), the
        # values recognising a target rests on, and the goal's answers.
        self.sorts = {param_sort(p) for n in self.tools for p in domain.tools[n].params.values()}
        self.atoms = {(f"{e}.{f}", _hashable(x)) for r in self.recognize for e, f, x in r.atoms}
        self.run = execute or call_or_fail
        self.calls: dict[str, Call] = {}  # each write call made, by its key
        self.calls_run = 0  # calls the searches on this space have made
        # A write's outcome is a function of the state it runs on (the writable tables'
        # text names that state) and the call: nodes that share a state make the same
        # writes, and a search meets the same (state, write) many times. Each is run
        # once; the state it leaves is shared, as no call changes a node's state in
        # place (a write runs on a copy). None: the write fails there.
        self._writes: dict[tuple[str, str, tuple[Any, ...]], _Written | None] = {}
        self._gains: dict[int, tuple[Reveal, _Gain]] = {}
        # Whether the goal's changes hold is a function of the writable tables (the
        # others never change), whose text a node carries: worked out once per state.
        # The answers a given already shows hold at every node; the others are those
        # an output showed (a node's ``answered``), not a scan of all it was shown,
        # which a listing of a large table makes long.
        self._held: dict[str, bool] = {}
        self._given_answers = frozenset(
            i
            for i, a in enumerate(self.want.answers)
            if any(same_value(g.value, a) for g in self.givens)
        )
        # The forward bound (:meth:`useful`): per allowed tool, the sorts of the
        # arguments it cannot do without and the sorts its output can make known (of
        # those some allowed tool takes); per change of an existing row's field, the
        # tools that write that field.
        tool_defs = [domain.tools[n] for n in self.tools]
        self._takes = {
            t.name: frozenset(
                param_sort(p) for p in t.params.values() if not isinstance(p.ty, OptT)
            )
            for t in tool_defs
        }
        self._shows = {t.name: revealed_sorts(domain, t) & self.sorts for t in tool_defs}
        # Per tool that shows one row by an id parameter (``returns: "E[p]"``), the
        # entity: a call of it shows that row's fields and nothing else, so which rows
        # hold a value says which of its calls can show it (:meth:`_key_moves`).
        self._row_of = {t.name: e for t in tool_defs if (e := _shows_row(t)) is not None}
        # Per tool whose output is rows of one entity filtered on fields equal to
        # arguments: (entity, its (field, parameter) pairs). Its calls are on rows too:
        # one passing some values shows only the rows holding them there
        # (:meth:`_filtered_moves`).
        self._filter = {t.name: by for t in tool_defs if (by := _filter_of(t)) is not None}
        # per tool with calls on rows, the parameters whose values name its call's row
        self._row_params = {
            **{n: tuple(p for _, p in by[1]) for n, by in self._filter.items()},
            **{n: (p,) for n in self._row_of if (p := _shown_param(domain.tools[n])) is not None},
        }
        self._moves_memo: dict[tuple[Any, ...], frozenset[str]] = {}
        # the fields of existing rows the space's tools edit, and the entities they create
        # rows of (:meth:`_atom_moves`)
        self._edited = {
            (st.effect.entity, st.effect.field)
            for t in tool_defs
            for st in t.effects
            if isinstance(st.effect, ir.Assign | ir.ListEdit)
        }
        self._created = {
            st.effect.entity
            for t in tool_defs
            for st in t.effects
            if isinstance(st.effect, ir.Create)
        }
        written = frozenset(
            (c.entity, domain.entities[c.entity].key if c.field == COUNTER else c.field)
            for t in tool_defs
            for c in cells_written(domain, t)
        )
        self._columns: dict[tuple[str, str], _Column] = {}
        self._showing = [
            frozenset(t.name for t in tool_defs if self._may_show(t, a, written))
            for a in self.want.answers
        ]
        # Per field of an existing row the goal changes, the tools that can write it
        # and what each of them needs first (:class:`_FieldNeed`); per value the goal
        # puts in a row it creates, the same (:class:`_ValueNeed`).
        self._targets = {(r.entity, _hashable(r.key)): r for r in self.recognize}
        self._field_changes: list[_FieldNeed] = []
        self._values: list[_ValueNeed] = []
        self._taken: list[_ValueNeed] = []
        self._reach: Reach | None = None  # made when a goal field's writer names its row
        for c in self.want.changes:
            if c.field == ROWS:
                if c.before is None and isinstance(c.after, dict):
                    self._values += self._placed(c.entity, c.key, c.after, tool_defs)
                continue
            if c.key not in initial.tables.get(c.entity, {}):
                continue
            needs: list[_WriterNeeds] = []
            meets: list[str] = []
            for t in tool_defs:
                how = _names_row(t, c.entity, c.field)
                if how is None or not _may_put(t, c.entity, c.field, c.after):
                    continue
                if self._never_on(t, c.entity, c.field, c.key):
                    continue
                meets.append(self._writes_on(t, c.entity, c.field, c.key))
                if how == _NOT_NAMED:  # which row it writes is the state's to say
                    needs.append((t.name, None, ()))
                    continue
                needs.append(self._writer_needs(t, t.params[how], c.entity, c.key))
            writers = frozenset(meets)
            self._field_changes.append(
                _FieldNeed(c.entity, c.key, c.field, c.after, writers, tuple(needs))
            )
            # the id it sets there, when a writer can only take it from an argument
            self._values += self._placed(
                c.entity, c.key, {c.field: c.after}, tool_defs, len(self._field_changes) - 1
            )
            # the ids it takes out of a list there, when a writer takes them by argument
            self._taken += self._taken_out(c.entity, c.key, c.field, c.after, tool_defs)
        # per tool and id parameter, the preconditions that read that parameter alone:
        # a value one of them is false for fails every call passing it
        self._unary: dict[str, dict[str, tuple[ir.Expr, ...]]] = {}
        for t in tool_defs:
            alone: dict[str, list[ir.Expr]] = {}
            for chk in t.requires:
                names = ir.free_vars(chk.expr)
                if len(names) == 1:
                    (name,) = names
                    param = t.params.get(name)
                    if param is not None and isinstance(param.ty, RefT):
                        alone.setdefault(name, []).append(chk.expr)
            if alone:
                self._unary[t.name] = {n: tuple(es) for n, es in alone.items()}
        self._viable: dict[tuple[str, str, str, Any], bool] = {}
        # the entities a tool of the space deletes rows of (see :meth:`_pending_at`)
        self._deletes = {
            st.effect.entity
            for t in tool_defs
            for st in t.effects
            if isinstance(st.effect, ir.Delete)
        }
        self._relaxed = Relaxed(self.tools, self._takes, self._shows)
        # Per write tool, the goal's field changes it makes from an argument on a row an
        # argument names: (the change's index, the row's parameter, the value's). A call
        # passing that row and another value leaves the change to be made (:meth:`wasted`).
        self._sets: dict[str, list[tuple[int, str, str]]] = {}
        for i, f in enumerate(self._field_changes):
            fd = domain.entities[f.entity].fields.get(f.field)
            if fd is None or not isinstance(strip_opt(fd.ty), PrimT | RefT | EnumT):
                continue  # a value that may be written in another form than it is stored
            for t in tool_defs:
                row = _names_row(t, f.entity, f.field) if t.is_write else None
                val = _puts(t, f.entity, f.field, None) if row else None
                if row and val is not None:
                    self._sets.setdefault(t.name, []).append((i, row, val.name))
        # per state: do the goal's changes hold, which of its fields are unwritten, which
        # values of rows it creates may still be to place, and which ids it takes out of
        # a list are still there
        self._pending: dict[
            str, tuple[bool, tuple[int, ...], tuple[int, ...], tuple[int, ...]]
        ] = {}
        self._sorts_known: dict[frozenset[tuple[Any, Any]], frozenset[Sort]] = {}
        # per (the goal's part at a state, known values, seen values, answers shown):
        # what is still to happen (:meth:`_pending_at`)
        self._todos: dict[tuple[Any, ...], tuple[Need, ...]] = {}
        # per (known sorts, needs, calls left): whether every tool, or none, can begin
        # a chain reaching the goal, else each tool's answer as it is asked
        self._useful: dict[
            tuple[frozenset[Sort], tuple[Need, ...], int], bool | dict[str, bool]
        ] = {}

    def _writes_on(self, tool: ToolDef, entity: str, field: str, key: Any) -> str:
        """The move by which a call of ``tool`` writes ``field`` of row ``key`` of
        ``entity``: a call on that row when the tool's output is the row it writes there
        (the row its other moves on rows are counted by), else a call on any row."""
        how = _names_row(tool, entity, field)
        on_row = how is not None and self._row_of.get(tool.name) == entity
        return f"{tool.name}@{key}" if on_row and _shown_param(tool) == how else tool.name

    def _writer_needs(self, tool: ToolDef, param: Any, entity: str, value: Any) -> _WriterNeeds:
        """What a call of ``tool`` passing ``value`` as ``param`` (an id of ``entity``)
        needs first: the value known (the tools that can show ids of its sort) and, when
        it names a target the agent must recognise, each value of the target's
        description shown (the tools that read that field)."""
        domain, tool_defs = self.domain, [self.domain.tools[n] for n in self.tools]
        sort = param_sort(param)
        revealers = frozenset(n for n, shows in self._shows.items() if sort in shows)
        target = self._targets.get((entity, _hashable(value)))
        described = target.atoms if target is not None and self.picky[tool.name] else ()
        atoms = tuple(
            (
                (f"{e}.{f}", _hashable(x)),
                self._atom_moves(
                    e,
                    f,
                    _hashable(x),
                    frozenset(u.name for u in tool_defs if FieldRef(e, f) in cells_read(domain, u)),
                    value if e == entity else None,
                ),
            )
            for e, f, x in described
        )
        return (tool.name, (sort, self._key_moves(sort, value, revealers)), atoms)

    def _key_moves(self, sort: Sort, value: Any, tools: frozenset[str]) -> frozenset[str]:
        """The moves (:func:`~graphgen.verify.relaxed.move_tool`) by which a call of
        ``tools`` (those that can show ids of ``sort``) can make ``value`` known first.

        A tool showing one row of entity ``E`` shows ``value`` only where that row holds
        it: as its key (which the call passed, so never first), or in a field that holds
        ids of the sort. A row the space holds may hold it there from the start. A value
        a call put in a row since from an argument of that sort (or a literal other than
        it) is never shown first: the agent passed it, so it knew it. So when every write
        of such a field, by any tool of the space, takes its value from those, only calls
        on the rows holding it at the start can show it first (none: the tool cannot);
        else, or for a tool showing something else, a call on any row can."""
        key = ("key", sort, value, tools)
        got = self._moves_memo.get(key)
        if got is not None:
            return got
        out: set[str] = set()
        for u in sorted(tools):
            ent = self._row_of.get(u)
            if ent is None and sort.kind == "key" and u in self._filter:
                ent = self._filter[u][0]
                fields = _fields_holding(self.domain, ent, sort.name)

                def holds(k: Any, row: dict[str, Any], own: bool = sort.name == ent) -> bool:
                    return (own and _hashable(k) == value) or any(
                        _holds(row.get(f), value)
                        for f in fields  # noqa: B023 (called now)
                    )

                by = self._filtered_moves(u, fields, holds)
                out.update([u] if by is None else by)
                continue
            if ent is None or sort.kind != "key":
                out.add(u)
                continue
            fields = _fields_holding(self.domain, ent, sort.name)
            if not all(self._only_given(ent, f, value, sort) for f in fields):
                out.add(u)
                continue
            if _overwrites(self.domain.tools[u], ent, fields):
                continue  # the row it shows holds, in those fields, what the call passed
            # its own key it shows too, but the call passed it: never first
            for k, row in self.initial.tables.get(ent, {}).items():
                if any(_holds(row.get(f), value) for f in fields):
                    out.add(f"{u}@{k}")
        got = self._moves_memo[key] = frozenset(out)
        return got

    def _atom_moves(
        self, ent: str, field: str, value: Any, tools: frozenset[str], target: Any
    ) -> frozenset[str]:
        """The moves by which a call of ``tools`` (those reading ``ent.field``) can show
        ``value`` in that field first, as the description of row ``target`` of ``ent``
        asks (None: a row of another entity).

        A tool showing one row of another entity never shows the field; one showing an
        ``ent`` row shows it where the row holds ``value``: a row holding it from the
        start, or a row a call creates. A field some tool of the space writes may come
        to hold it in any row; so may a field whose values do not compare as they are
        shown (only text, ids, members, whole numbers and truth values are compared). A
        write naming the target itself cannot show it first: the agent may name the
        target in a write only once its description was shown (:func:`_recognised`)."""
        key = ("atom", ent, field, value, tools, target)
        got = self._moves_memo.get(key)
        if got is not None:
            return got
        domain = self.domain
        fd = domain.entities[ent].fields.get(field)
        plain = fd is not None and isinstance(strip_opt(fd.ty), PrimT | RefT | EnumT)
        written = (ent, field) in self._edited
        created = ent in self._created
        out: set[str] = set()
        for u in sorted(tools):
            shown = self._row_of.get(u)
            if shown is None and plain and u in self._filter and self._filter[u][0] == ent:
                by = self._filtered_moves(
                    u,
                    [field],
                    lambda _k, row: _is_hashable(raw := row.get(field)) and _hashable(raw) == value,
                )
                out.update([u] if by is None else by)
                continue
            if shown is None or not plain or written:
                out.add(u)
                continue
            if shown != ent:
                continue  # its output is a row of another entity
            # a write naming the target waits for its description (None: names none)
            skip = target if domain.tools[u].is_write and self.picky[u] else None
            for k, row in self.initial.tables.get(ent, {}).items():
                raw = row.get(field)
                if _is_hashable(raw) and _hashable(raw) == value and (skip is None or k != skip):
                    out.add(f"{u}@{k}")
            if created:
                out.add(f"{u}@+")  # a row made since
        got = self._moves_memo[key] = frozenset(out)
        return got

    def _filtered_moves(
        self, tool: str, fields: Sequence[str], shows: Callable[[Any, dict[str, Any]], bool]
    ) -> set[str] | None:
        """The moves by which a call of ``tool``, a search of one entity's rows filtered
        on fields equal to arguments (:func:`_filter_of`), can show something held only
        by the rows ``shows`` is true of (given key and row): a call passing the filter
        values of one of them (``tool@v1|v2``, in the filter's order). None when any call
        may: the rows the filter picks, or what ``fields`` hold, can change (a tool of
        the space writes a filter field or one of ``fields``, or creates rows of the
        entity)."""
        ent, by = self._filter[tool]
        on = [f for f, _ in by]
        if ent in self._created or any((ent, f) in self._edited for f in (*on, *fields)):
            return None
        rows = self.initial.tables.get(ent, {})
        return {
            f"{tool}@{'|'.join(str(row.get(f)) for f in on)}"
            for k, row in rows.items()
            if shows(k, row)
        }

    def _only_given(self, ent: str, field: str, value: Any, sort: Sort) -> bool:
        """Does every write of ``ent.field`` by a tool of the space (an existing row's, or
        a created row's) put there an argument the call passed (no default) and knew at
        ``sort``, or a literal other than ``value``?"""
        domain = self.domain
        for n in self.tools:
            tool = domain.tools[n]
            for st in tool.effects:
                e = st.effect
                if isinstance(e, ir.Create):
                    if e.entity != ent:
                        continue
                    expr = dict(e.values).get(field)
                    if expr is not None and not _given_or_other(tool, expr, value, sort):
                        return False
                elif FieldRef(ent, field) in effect_writes(e):
                    if isinstance(e, ir.ListEdit):
                        if e.op != "remove" and not _given_or_other(tool, e.value, value, sort):
                            return False
                    elif not (
                        isinstance(e, ir.Assign)
                        and e.op == "="
                        and _given_or_other(tool, e.value, value, sort)
                    ):
                        return False
        return True

    def _placed(
        self,
        entity: str,
        key: Any,
        after: dict[str, Any],
        tool_defs: list[ToolDef],
        change: int | None = None,
    ) -> list[_ValueNeed]:
        """The values the goal puts in fields of a row (``after``: a created row's
        fields, or ``change``, the index of the field change it sets) that are ids of
        rows the state holds, each with the tools that can write its field and what a
        call putting it there from an argument needs first (:class:`_ValueNeed`)."""
        out: list[_ValueNeed] = []
        row = None if change is None else self.initial.tables.get(entity, {}).get(key)
        for name, held in sorted(after.items()):
            values = held if isinstance(held, list) else [held]
            writers = [
                t
                for t in tool_defs
                if FieldRef(entity, name) in cells_written(self.domain, t)
                and not (change is not None and self._never_on(t, entity, name, key))
            ]
            # a member an existing row's list holds already need not be put there
            had = row.get(name) if row is not None and isinstance(held, list) else None
            for at, value in enumerate(values):
                if not _is_hashable(value) or (isinstance(had, list) and value in had):
                    continue
                needs: list[_WriterNeeds] = []
                for t in writers:
                    param = _puts(t, entity, name, at if isinstance(held, list) else None)
                    ty = None if param is None else param.ty
                    if not (
                        isinstance(ty, RefT) and value in self.initial.tables.get(ty.entity, {})
                    ):
                        needs.append((t.name, None, ()))  # it may put the value there otherwise
                        continue
                    needs.append(self._writer_needs(t, param, ty.entity, value))
                if any(n[1] is not None for n in needs):
                    meets = frozenset(
                        t.name if change is None else self._writes_on(t, entity, name, key)
                        for t in writers
                    )
                    out.append(
                        _ValueNeed(
                            entity,
                            key,
                            name,
                            value,
                            meets,
                            tuple(needs),
                            change,
                        )
                    )
        return out

    def _never_on(self, tool: ToolDef, entity: str, field: str, key: Any) -> bool:
        """Does every call of ``tool`` that writes ``field`` of row ``key`` fail? Yes when
        it names the row by a parameter and has a check on that row that no value the
        row's fields can hold satisfies, after any chain (:meth:`Reach.never`, the
        argument proof 6 uses for a refused call): the exchange of a delivered order's
        item never changes a pending order, which no tool makes delivered."""
        how = _names_row(tool, entity, field)
        if how is None or how == _NOT_NAMED:
            return False
        if self._reach is None:
            self._reach = Reach(self.domain, self.initial)
        return self._reach.never(tool, {how: key}) is not None

    def _taken_out(
        self, entity: str, key: Any, field: str, after: Any, tool_defs: list[ToolDef]
    ) -> list[_ValueNeed]:
        """The ids the goal takes out of list field ``field`` of existing row ``key``
        (held there at the start, not in ``after``), each with the tools that can take
        a member out of that field and what each call needs first (:class:`_ValueNeed`,
        its value the id taken out). While the row holds the id, some call is still to
        take it out: a tool whose only way to do so is a ``remove`` of a parameter
        passes the id, so needs it known (and a target's description shown) first, as a
        writer putting a value there does; a tool assigning the field may take it out
        by any value."""
        had = self.initial.tables[entity][key].get(field)
        fd = self.domain.entities[entity].fields.get(field)
        ty = None if fd is None else strip_opt(fd.ty)
        if not (isinstance(had, list) and isinstance(after, list) and isinstance(ty, ListT)):
            return []
        elem = strip_opt(ty.elem)
        if not isinstance(elem, RefT):
            return []
        ids = self.initial.tables.get(elem.entity, {})
        gone = [v for v in dict.fromkeys(had) if _is_hashable(v) and v not in after and v in ids]
        takers = [
            (t, param)
            for t in tool_defs
            if (param := _takes_out(t, entity, field)) is not False
            and not self._never_on(t, entity, field, key)
        ]
        out: list[_ValueNeed] = []
        for value in gone:
            needs: list[_WriterNeeds] = [
                (t.name, None, ())
                if param is None
                else self._writer_needs(t, param, elem.entity, value)
                for t, param in takers
            ]
            if any(n[1] is not None for n in needs):
                meets = frozenset(self._writes_on(t, entity, field, key) for t, _ in takers)
                out.append(_ValueNeed(entity, key, field, value, meets, tuple(needs)))
        return out

    def within(self, left: int) -> frozenset[str]:
        """The tools a call of a shortest solution can have when ``left`` calls remain,
        itself included (``left`` >= 1): every tool of the space when the goal asks for
        answers or its reads are unknown.

        Level 1 is the writes of a cell the goal's changes read; level ``j + 1`` adds
        every tool that writes a cell a level-``j`` tool reads or shows a sort one takes
        or a target's description needs (:func:`~graphgen.verify.bmc.relevance_levels`
        from the goal's writes). A call of a shortest chain outside its level could be
        deleted: no later call would read a cell it wrote or pass a value only it
        showed, and no goal cell would change, so a shorter chain would reach the goal."""
        levels = self._levels
        if levels is None:
            return frozenset(self.tools)
        if len(levels) == 1:
            domain, first = self.domain, levels[0]
            cells = set().union(*(cells_read(domain, domain.tools[n]) for n in first))
            sorts = {param_sort(p) for n in first for p in domain.tools[n].params.values()}
            sorts |= {Sort("field", f"{e}.{f}") for r in self.recognize for e, f, _ in r.atoms}
            levels += [first | lv for lv in relevance_levels(domain, self.tools, cells, sorts)]
            if len(levels) == 1:
                levels.append(first)  # nothing more: computed once all the same
        return levels[min(left, len(levels)) - 1]

    def useful(self, node: _Node, tools: Sequence[str], left: int) -> list[str]:
        """The tools of ``tools`` a call of which at ``node`` can begin a chain of at most
        ``left`` calls (itself included) that reaches the goal.

        A lower bound on the calls after it, from what the node knows and what is still
        to happen, each a call some tool must still make: a field of an existing row the
        goal changes holds another value, and only a tool writing that field can give
        it; the goal creates a row no call has made yet, and each id it puts in the row
        that a create can only take from an argument must be known by the call that puts
        it there; the goal's changes do not hold, and only one of its writes
        (:attr:`goal_writes`) can change that; an answer has not been shown, and only a
        tool whose output can show it (:meth:`_may_show`) will. Such a call needs its
        required arguments known; a write that names a goal row or passes a goal value
        by an id needs that id known and, for a target, its description shown
        (:class:`_FieldNeed`). Relaxed (every call succeeds, and each tool shows every
        sort it ever can, :func:`~graphgen.verify.bmc.revealed_sorts`), the least number
        of calls that does all that is never above the real number
        (:meth:`~graphgen.verify.relaxed.Relaxed.fits`): a tool dropped here is in no
        chain of ``left`` calls that reaches the goal."""
        pending = self._pending_at(node)
        if not pending:
            return list(tools)
        known = self._sorts_at(node)
        # With ``j`` calls enough from here, they are enough after any first call (it
        # only adds to what is known and done): every tool is kept. With ``left`` too
        # few, no tool is. Only with exactly ``left`` does each tool's call count.
        relaxed, key = self._relaxed, (known, pending, left)
        verdicts = self._useful.get(key)
        if verdicts is None:
            if relaxed.fits(known, pending, left - 1):
                verdicts = True
            elif not relaxed.fits(known, pending, left):
                verdicts = False
            else:
                verdicts = {}
            self._useful[key] = verdicts
        if verdicts is True:
            return list(tools)
        if verdicts is False:
            return []
        out = []
        for t in tools:
            ok = verdicts.get(t)
            if ok is None:
                nxt = relaxed.after(known, pending, t)
                # a call that changes nothing relaxed leaves what was just found too long
                ok = verdicts[t] = (nxt[0] is not known or nxt[1] is not pending) and relaxed.fits(
                    *nxt, left - 1
                )
            if ok:
                out.append(t)
        return out

    def _sorts_at(self, node: _Node) -> frozenset[Sort]:
        """The sorts of the values known at ``node``, kept per set of facts (the relaxed
        problem's view of what is known)."""
        known = self._sorts_known.get(node.facts)
        if known is None:
            known = self._sorts_known[node.facts] = frozenset(s for s, _ in node.facts)
        return known

    def idle_on(self, node: _Node, call: Call, left: int) -> bool:
        """Is ``call``, at ``node``, a call on one row (its tool's row parameters: see
        :meth:`_key_moves` and :meth:`_filtered_moves`) that cannot begin a chain of at
        most ``left`` calls, itself included, reaching the goal? :meth:`useful` asks of
        a tool, relaxed as a call on any row, which makes every move of it; a call on
        one row makes that row's moves only
        (:meth:`~graphgen.verify.relaxed.Relaxed.after`), so a tool useful on some row
        may be useless on this one. Asked only where :meth:`useful` found no call to
        spare at the node (with one, every call is kept)."""
        move = self.move_of(call)
        if move is None:
            return False
        pending = self._pending_at(node)
        known = self._sorts_at(node)
        if not isinstance(self._useful.get((known, pending, left)), dict):
            return False
        relaxed = self._relaxed
        return not relaxed.fits(*relaxed.after(known, pending, move), left - 1)

    def move_of(self, call: Call) -> str | None:
        """The move on a row ``call`` makes (see :meth:`idle_on`), or None when it is not
        a call on one row: ``tool@key`` for a tool showing the row ``key`` names,
        ``tool@+`` when that row was made since (the needs name such rows so,
        :meth:`_atom_moves`), ``tool@v1|v2`` for a search filtered on the values
        passed."""
        params = self._row_params.get(call.tool)
        if params is None or any(p not in call.args for p in params):
            return None
        ent = self._row_of.get(call.tool)
        if ent is not None and call.args[params[0]] not in self.initial.tables.get(ent, {}):
            return f"{call.tool}@+"
        return f"{call.tool}@{'|'.join(str(call.args[p]) for p in params)}"

    def wasted(self, node: _Node, call: Call, left: int) -> bool:
        """Is ``call``, at ``node``, a write that cannot begin a chain of at most ``left``
        calls (itself included) reaching the goal? Asked before it is made, of a write
        putting in a goal row's field a value other than the goal's, where that change is
        still to be made: after it the change still is, so the needs left are at most
        those of a relaxed call of its tool that leaves that need (and the need for a
        goal write) in place (:meth:`~graphgen.verify.relaxed.Relaxed.after`, ``keep``).
        When no relaxed plan of ``left - 1`` calls meets those, no real chain does."""
        sets = self._sets.get(call.tool)
        if not sets:
            return False
        pending = self._pending_at(node)
        held, unwritten, _, _ = self._pending[node.tables]
        args = call.args
        keep = [
            1 + unwritten.index(i)
            for i, row, val in sets
            if i in unwritten
            and args.get(row) == self._field_changes[i].key
            and val in args
            and not same_value(args[val], self._field_changes[i].after)
        ]
        if not keep or held:
            return False
        known = self._sorts_at(node)
        relaxed = self._relaxed
        if relaxed.fits(known, pending, left - 1):
            return False  # slack enough for a call that changes nothing
        # position 0 is the need for some goal write: the changes still do not hold
        after = relaxed.after(known, pending, call.tool, frozenset([0, *keep]))
        return not relaxed.fits(*after, left - 1)

    def _pending_at(self, node: _Node) -> tuple[Need, ...]:
        """What is still to happen at ``node``, each as the tools that can make it happen
        and, per thing it needs first, the tools that can give it (see :meth:`useful`).
        Which goal fields are still to be written, and whether the rows the goal creates
        may have been made, is worked out once per state; the whole once per node (both
        of a layer's passes ask), and once for all nodes alike in that, in the values
        they know and have seen and in the answers shown."""
        if node.todo is not None:
            return node.todo
        got = self._pending.get(node.tables)
        if got is None:
            held, tables = self._held_at(node.tables, node.state), node.state.tables
            unwritten = tuple(
                i
                for i, f in enumerate(self._field_changes)
                if not held
                and (
                    (row := tables.get(f.entity, {}).get(f.key)) is None
                    or row.get(f.field) != f.after
                )
            )
            made = {
                v.entity
                for v in self._values
                if v.change is None and self._made_rows(node.state, v.entity)
            }
            unmade = tuple(
                i
                for i, v in enumerate(self._values)
                if not held
                and (v.entity not in made if v.change is None else v.change in unwritten)
            )
            # ids still in the list the goal takes them out of
            kept = tuple(
                i
                for i, v in enumerate(self._taken)
                if not held
                and (row := tables.get(v.entity, {}).get(v.key)) is not None
                and v.value in (row.get(v.field) or ())
            )
            got = self._pending[node.tables] = (held, unwritten, unmade, kept)
        # Nodes alike in these share their needs, as the same tuple: the forward
        # bound's answers are keyed by it, and a key met again then compares by identity.
        key = (got, node.facts, node.seen, node.answered)
        done = self._todos.get(key)
        if done is None:
            held, unwritten, unmade, kept = got
            todo: list[Need] = [] if held else [(frozenset(self.goal_writes), ())]
            for i in unwritten:
                f = self._field_changes[i]
                todo.append((f.writers, self._first(node, f.key, f.needs)))
            for i in unmade:
                v = self._values[i]
                todo.append((v.writers, self._first(node, v.value, v.needs)))
            for i in kept:
                v = self._taken[i]
                todo.append((v.writers, self._first(node, v.value, v.needs)))
            todo += [(self._showing[i], ()) for i in self._missing(node.answered)]
            done = self._todos[key] = tuple(todo)
        node.todo = done
        return done

    def _first(
        self, node: _Node, value: Any, needs: tuple[_WriterNeeds, ...]
    ) -> tuple[tuple[str, tuple[frozenset[str], ...]], ...]:
        """Per writer, what it still needs first at ``node`` to pass ``value``: the tools
        that can show it when it is not known, and those that can show each value of a
        target's description not seen yet."""
        first: list[tuple[str, tuple[frozenset[str], ...]]] = []
        for tool, key_need, atoms in needs:
            open_: list[frozenset[str]] = []
            if key_need is not None and (key_need[0], _hashable(value)) not in node.facts:
                open_.append(key_need[1])
            open_ += [tools for atom, tools in atoms if atom not in node.seen]
            if open_:
                first.append((tool, tuple(open_)))
        return tuple(first)

    def _made_rows(self, st: State, entity: str) -> bool:
        """May a call have made a row of ``entity`` on the way to ``st``? Yes when its id
        counter or its row count moved (a create moves one of them), or, when a tool of
        the space deletes rows of it, when a key the initial state lacks is there."""
        now, then = st.tables.get(entity, {}), self.initial.tables.get(entity, {})
        if now is then:
            return False
        if len(now) != len(then) or st.counters.get(entity) != self.initial.counters.get(entity):
            return True
        return entity in self._deletes and any(k not in then for k in now)

    def _may_show(self, tool: ToolDef, answer: Any, written: frozenset[tuple[str, str]]) -> bool:
        """Can an output of ``tool`` show ``answer`` among its scalars, on some state
        the space can reach? Yes when it computes a value (a count, a sum, an argument
        echoed) or a literal like it, or shows a field that holds a value like it in
        the space's rows or that an allowed tool writes (``written``; a created row's id
        as its key field). Loosely alike (equal, or the same text), so as to be never
        wrongly no."""
        fields, computed, lits = output_sources(self.domain, tool)
        if computed or any(_alike(x, answer) for x in lits):
            return True
        for entity, name in fields:
            if (entity, name) in written:
                return True
            same, texts, odd = self._column(entity, name)
            if str(answer) in texts or (_is_hashable(answer) and answer in same):
                return True  # equal values hash alike: ``in`` finds every equal one
            if any(_alike(x, answer) for x in odd):
                return True
        return False

    def _column(self, entity: str, name: str) -> _Column:
        """The values field ``name`` of ``entity`` holds in the space's rows (the keys,
        for its key field), as themselves and as text: what :meth:`_may_show` looks an
        answer up in, once per field, not once per tool showing it."""
        got = self._columns.get((entity, name))
        if got is None:
            rows = self.initial.tables.get(entity, {})
            if name == self.domain.entities[entity].key:
                vals: list[Any] = list(rows)
            else:
                vals = [x for row in rows.values() for x in scalars(row.get(name))]
            got = self._columns[(entity, name)] = (
                frozenset(x for x in vals if _is_hashable(x)),
                frozenset(str(x) for x in vals),
                tuple(x for x in vals if not _is_hashable(x)),
            )
        return got

    def key(self, call: Call) -> str:
        k = call_key(self.domain, call)
        self.calls.setdefault(k, call)
        return k

    def root(self) -> _Node:
        know = Knowledge.from_givens(self.givens)
        st = self._copy(self.initial)
        facts = frozenset((s, _hashable(v)) for s, v in know.facts_items() if s in self.sorts)
        return _Node(st, know, [], tables=self._tables_text(st), facts=facts)

    def _copy(self, st: State) -> State:
        return st.copy()  # rows are shared until a call writes them

    def _tables_text(self, st: State) -> str:
        return json.dumps(
            [[st.tables.get(e) for e in self.writable], st.counters], sort_keys=True, default=str
        )

    def goal(self, node: _Node) -> bool:
        """The goal holds at ``node``: its changes on the node's state, and each of its
        answers given or shown by an output on the way."""
        return self.node_changes_hold(node) and not self._missing(node.answered)

    def _missing(self, answered: frozenset[int]) -> list[int]:
        """The goal's answers (by index) neither given nor among ``answered``."""
        return [
            i
            for i in range(len(self.want.answers))
            if i not in self._given_answers and i not in answered
        ]

    def node_changes_hold(self, node: _Node) -> bool:
        """:meth:`changes_hold` on a node's state, once per state."""
        return self._held_at(node.tables, node.state)

    def _held_at(self, tables: str, st: State) -> bool:
        held = self._held.get(tables)
        if held is None:
            held = self._held[tables] = self.changes_hold(st)
        return held

    def changes_hold(self, st: State) -> bool:
        """The goal's state part (its changes, answers aside) holds on ``st``: a
        necessary condition of :meth:`goal` that no read can change."""
        from graphgen.verify.proofs import goal_holds  # proofs may use this module

        return goal_holds(self.changes, st, [], self.givens, self.initial)

    def _keep_at(self, node: _Node) -> Callable[[ToolDef, str, Any], bool]:
        """Does a value of a tool's id parameter pass the preconditions that read that
        parameter alone, on ``node``'s state? Worked out once per state."""
        unary, viable, tables, st = self._unary, self._viable, node.tables, node.state

        def keep(tool: ToolDef, param: str, value: Any) -> bool:
            exprs = unary.get(tool.name, {}).get(param)
            if exprs is None:
                return True
            key = (tables, tool.name, param, _hashable(value))
            got = viable.get(key)
            if got is None:
                try:
                    got = all(evaluate(e, st, {param: value}, self.domain) for e in exprs)
                except ToolError:
                    got = False  # the check cannot be evaluated: the call fails
                viable[key] = got
            return got

        return keep

    def outcomes(
        self,
        node: _Node,
        allow: Callable[[ToolDef, Call, _Node], bool] | None = None,
        tools: Sequence[str] | None = None,
    ) -> Iterator[Outcome]:
        """Every successful call at ``node`` by ``tools`` (default: all the space's),
        with its result and, for a write, its outcome; ``allow`` may veto a call first.
        Each call made counts in :attr:`calls_run`. :meth:`make` turns one into the
        node it leads to."""
        keep = self._keep_at(node)
        for call in moves(self.domain, node.know, self.tools if tools is None else tools, keep):
            tool = self.domain.tools[call.tool]
            if not _recognised(tool, call, self.recognize, node.seen):
                continue
            if allow is not None and not allow(tool, call, node):
                continue
            self.calls_run += 1
            if tool.is_write:
                done = self._write(node, call)
                if done is None:
                    continue  # a failing call changes nothing and shows nothing
                yield Outcome(node, tool, call, done.result, done)
                continue
            # a read has no effects: it runs on the node's own state, which it cannot change
            try:
                result = self.run(self.domain, node.state, call.tool, dict(call.args))
            except ToolError:
                continue
            yield Outcome(node, tool, call, result)

    def children(
        self,
        node: _Node,
        depth: int,
        allow: Callable[[ToolDef, Call, _Node], bool] | None = None,
        tools: Sequence[str] | None = None,
    ) -> Iterator[_Node]:
        """Every node one successful call away (:meth:`outcomes`, made)."""
        for out in self.outcomes(node, allow, tools):
            yield self.make(out, depth)

    def make(self, out: Outcome, depth: int) -> _Node:
        """The node ``out`` leads to, its call the ``depth``-th of its chain."""
        return self._child(out.tool, out.node, out.call, out.result, depth, out.written)

    def reaches(self, out: Outcome) -> bool:
        """Is the node ``out`` leads to a goal node? :meth:`goal` of that node, without
        making it: most nodes of a layer are not, and a layer holding a goal is the
        search's last."""
        at = out.node if out.written is None else out.written
        if not self._held_at(at.tables, at.state):
            return False
        missing = self._missing(out.node.answered)
        return len(self._answers_shown(out.tool, out.result, missing)) == len(missing)

    def _answers_shown(self, tool: ToolDef, result: Any, among: Iterable[int]) -> frozenset[int]:
        """Which of the goal's answers (by index, of ``among``) an output shows."""
        answers = self.want.answers
        among = list(among)
        if not among or tool.returns is None:
            return frozenset()
        new = list(scalars(result))  # each answer looks through all of them
        return frozenset(i for i in among if any(same_value(x, answers[i]) for x in new))

    def follow(self, chain: Sequence[Call], start: _Node | None = None) -> _Node | None:
        """The node ``chain`` leads to from the root (or from ``start``, a node of this
        space), or None when the agent cannot make it: a call of a tool outside the
        space, an argument not known by then (an optional one may be left out), a write
        naming a target not recognised yet, or a call that fails. The same rules
        :meth:`children` makes its calls by; the calls are not counted in
        :attr:`calls_run`, which is a search's budget."""
        node = self.root() if start is None else start
        for depth, call in enumerate(chain, len(node.chain) + 1):
            tool = self.domain.tools.get(call.tool)
            if tool is None or call.tool not in self.tools:
                return None
            know = node.know
            for p, pd in tool.params.items():
                if p in call.args:
                    if not know.knows(param_sort(pd), call.args[p]):
                        return None
                elif not isinstance(pd.ty, OptT):
                    return None
            if set(call.args) - set(tool.params):
                return None
            if not _recognised(tool, call, self.recognize, node.seen):
                return None
            if tool.is_write:
                done = self._write(node, call)
                if done is None:
                    return None
                node = self._child(tool, node, call, done.result, depth, done)
                continue
            try:
                result = self.run(self.domain, node.state, call.tool, dict(call.args))
            except ToolError:
                return None
            node = self._child(tool, node, call, result, depth)
        return node

    def _write(self, node: _Node, call: Call) -> _Written | None:
        """Write ``call`` made at ``node``: the state it leaves, its result, what it
        shows and the new tables' text (None if it fails), run once per state."""
        key = (node.tables, call.tool, tuple((p, _hashable(v)) for p, v in call.args.items()))
        if key in self._writes:
            return self._writes[key]
        st = self._copy(node.state)
        try:
            result = self.run(self.domain, st, call.tool, dict(call.args))
        except ToolError:
            done = None
        else:
            tool = self.domain.tools[call.tool]
            shown = reveal(self.domain, st, tool, call.args, result)
            done = _Written(st, result, shown, self._tables_text(st), self.key(call))
        self._writes[key] = done
        return done

    def calls_at(self, node: _Node, tools: Sequence[str]) -> int:
        """How many calls :meth:`children` makes at ``node`` by ``tools`` (with no
        ``allow``), counted without making one: per tool, the product of how many values
        each parameter can take (those :meth:`_keep_at` leaves, and for a write that may
        name a target, none naming one not recognised yet: :func:`_recognised` rules a
        call out for any one such argument, so the parameters still count apart)."""
        out = 0
        keep = self._keep_at(node)
        for name in tools:
            tool = self.domain.tools[name]
            picky = self.picky[name]
            n = 1
            for pname, sort, optional, entity in param_slots(self.domain, tool):
                vals = node.know.values(sort)
                if name in self._unary:
                    vals = [v for v in vals if keep(tool, pname, v)]
                if picky and entity is not None:
                    seen = node.seen
                    vals = [v for v in vals if not _unrecognised(self.recognize, entity, v, seen)]
                n *= len(vals) + optional
            out += n
        return out

    def _child(
        self,
        tool: ToolDef,
        node: _Node,
        call: Call,
        result: Any,
        depth: int,
        written: _Written | None = None,
    ) -> _Node:
        """The node ``call`` leads to from ``node``: a read's (``result``, on the node's
        own state) or a write's (``written``, its outcome)."""
        if written is None:
            st, shown = node.state, reveal(self.domain, node.state, tool, call.args, result)
        else:
            st, shown = written.state, written.shown
        gain = self._gain(tool, call, result, shown)
        child = _Node(
            st,
            None,
            [*node.chain, call],
            node.seen | gain.atoms if gain.atoms else node.seen,
            node.writes,
            node.made,
            node.tables,
            node.facts | gain.facts if gain.facts else node.facts,
            node.answered | gain.answered if gain.answered else node.answered,
            (node.know, shown, depth - 1),
        )
        if written is not None:
            child.tables = written.tables
            child.writes = node.writes | {written.key}
        return child

    def _gain(self, tool: ToolDef, call: Call, result: Any, shown: Reveal) -> _Gain:
        """What a call's output adds to a node's fingerprint, worked out once per
        output: a read's output is shared by every node on its state (the state's memo),
        and a write's by every node its outcome serves (:meth:`_write`)."""
        from graphgen.verify.proofs import search_facts  # proofs may use this module

        hit = self._gains.get(id(shown))
        if hit is not None and hit[0] is shown:
            return hit[1]
        facts = shown.fact_set
        atoms: frozenset[tuple[str, Any]] = frozenset()
        if self.atoms:
            shows = [(s.name, v) for s, v in facts if s.kind == "field"]
            shows += [(n, _hashable(v)) for n, v in search_facts(tool, call.args, result)]
            atoms = frozenset(a for a in shows if a in self.atoms)
        answered = self._answers_shown(tool, result, range(len(self.want.answers)))
        gain = _Gain(frozenset((s, v) for s, v in facts if s in self.sorts), atoms, answered)
        # the output is kept with its gain, so that its id names it while the entry lives
        self._gains[id(shown)] = (shown, gain)
        return gain

    def fingerprint(self, node: _Node) -> tuple[Any, ...]:
        """What decides a node's future, and nothing else: the writable tables; the
        known values (origins aside) of the sorts the allowed tools take, which are
        every argument a later call can pass; the values seen that recognising a target
        rests on; which of the goal's answers have been shown; and the write counts
        proof 5 bounds. Two nodes alike in these have the same calls open, the same
        results from them and the same goal verdict after them, whatever else they saw:
        one stands for both (a read showing only values no allowed call takes and no
        target or answer needs leads back to its parent's node)."""
        return node.tables, node.facts, node.answered, node.seen, node.made

    def same_state(self, st: State, other: State) -> bool:
        return all(st.tables.get(e) == other.tables.get(e) for e in self.writable)


def minimum(
    space: Space,
    upto: int,
    *,
    max_nodes: int = MAX_NODES,
    max_calls: int | None = None,
    whole_layer: bool = True,
    within: int | None = None,
    witness_pass_calls: int = 0,
    forward: bool = True,
    max_pass_calls: int | None = None,
) -> Minimum:
    """The shortest chain of at most ``upto`` calls reaching the goal. Breadth first:
    every node at depth ``j`` ends some chain of ``j`` successful calls, so the first
    depth with a goal node is the minimum. With ``whole_layer`` that depth is searched to
    its end and every shortest chain's writes are collected; without, the search stops
    at the first goal node (``writes`` is then empty). It gives up past ``max_nodes``
    expanded nodes, or once the space's searches made more than ``max_calls`` calls, or
    would: before a pass whose calls, counted first, are more than the budget leaves.

    Each depth is taken in two passes. A read changes no cell, nor does a write change a
    cell the goal's changes read (:attr:`Space.goal_writes`), so such a call made where
    those changes do not hold cannot reach the goal: the first pass makes only the calls
    that can (the goal's writes, and every call of a node whose changes already hold,
    which may still lack an answer) and looks for the goal among their nodes. Only when
    none is there, and a deeper layer is to be searched, does the second pass make the
    remaining calls. The last layer, usually the largest, is then never read through: a
    task whose minimum is 4 makes the goal's writes at its third layer's nodes, not
    every call.

    ``within``: the length of a chain known to reach the goal (the interpreter's
    witness), so the minimum is at most that. At depth ``d`` a shortest solution has at
    most ``within - d + 1`` calls left, its call at ``d`` included, and only the tools
    :meth:`Space.within` that many levels from the goal are called there. The minimum
    and the writes found are the same; the layers nearest the witness's length make
    fewer calls.

    ``witness_pass_calls``: calls beyond ``max_calls`` the first pass at depth
    ``within`` may make. A goal node is met there (the witness's, or one like it), so
    the search ends with that pass: it only tests each call's outcome for the goal and
    makes no node to expand, and its cost is the count it is checked against. When a
    listing shows thousands of ids, that pass is wide but its work stays linear.

    ``forward``: make only the calls that can begin a chain of the calls left (to
    ``within``, else ``upto``) reaching the goal (:meth:`Space.useful` per tool, then
    :meth:`Space.idle_on` per call on a row and :meth:`Space.wasted` per write). A catalogue
    listing early in a search then adds its ids to the nodes after it, but no call
    branches on them unless one can still lead to the goal in time. The minimum and the
    writes found are the same; with ``within``, a search that meets no goal by then
    gives up (the witness would have been one).

    ``max_pass_calls``: the most calls one pass may make (the witness's pass aside). A
    pass that wide means the layers still grow faster than the forward bound cuts them,
    and the search would spend its budget without finishing: it gives up before it,
    having spent little, where the budget alone would let it go a layer or two deeper
    first.

    A search that gives up says how far it got (``none_within``): every depth up to
    that one was searched and held no goal node, so no chain of at most that many calls
    reaches the goal. With ``within`` below the minimum, that is the whole answer: no
    chain of at most ``within`` calls (the forward bound dropped every longer one)."""
    root = space.root()
    if space.goal(root):
        return Minimum(0, [], True, 1)
    seen = {space.fingerprint(root)}
    layer = [root]
    expanded = 0
    # no chain longer than this is looked for: a call that cannot start a chain of the
    # calls left to it reaching the goal (:meth:`Space.useful`) is not made
    longest = upto if within is None else min(upto, within)

    def grow(
        node: _Node,
        tools: list[str],
        depth: int,
        nxt: dict[tuple[Any, ...], _Node],
        cap: int | None,
        later: list[Outcome] | None = None,
    ) -> _Node | bool:
        """Add the node's children by calls of ``tools`` to ``nxt``: False when the call
        budget ran out, a goal node when one is enough (not ``whole_layer``), else True.
        With ``later``, only the goal nodes are made; the other calls' outcomes are put
        there, in order, to be made only if the layer holds no goal (when it does, the
        search ends with it)."""
        # calls left to a chain through this depth's call, that call included
        left = longest - depth + 1

        def allow(tool: ToolDef, call: Call, node: _Node) -> bool:
            if space.idle_on(node, call, left):
                return False
            return not (tool.is_write and space.wasted(node, call, left))

        for out in space.outcomes(node, allow if forward else None, tools):
            if cap is not None and space.calls_run > cap:
                return False
            if later is not None and not space.reaches(out):
                later.append(out)
                continue
            child = space.make(out, depth)
            if keep(child, nxt) and not whole_layer and space.goal(child):
                return child
        return True

    def gave_up(searched: int) -> Minimum:
        """The search gives up with every layer up to depth ``searched`` searched for a
        goal node and none found there. At a depth, the first pass makes every call
        that can reach the goal, so once it is through, the second pass's giving up
        leaves that depth searched."""
        return Minimum(None, None, False, expanded, none_within=searched)

    def keep(child: _Node, nxt: dict[tuple[Any, ...], _Node]) -> bool:
        """Put ``child`` in ``nxt`` unless a node like it is known; is it new?"""
        fp = space.fingerprint(child)
        if fp in nxt:
            # another chain of the same length ends here: its writes count too
            nxt[fp].writes |= child.writes
            return False
        if fp in seen:
            return False
        seen.add(fp)
        nxt[fp] = child
        return True

    for depth in range(1, upto + 1):
        if depth > longest:
            # past the witness's length with no goal met: the witness was not one, and
            # the bound dropped the calls of longer chains
            return gave_up(depth - 1)
        nxt: dict[tuple[Any, ...], _Node] = {}
        # the calls a shortest solution can make at this depth, when one of ``within``
        # calls is known
        fit = space.within(max(1, within - depth + 1)) if within is not None else None

        def only(tools: list[str], fit: frozenset[str] | None = fit) -> list[str]:
            return tools if fit is None else [n for n in tools if n in fit]

        # calls a chain through this depth's call may still make, that call included
        left = longest - depth + 1

        def fits(node: _Node, tools: list[str], left: int = left) -> list[str]:
            return space.useful(node, tools, left) if forward else tools

        # per node of the layer: is the goal's state part there already?
        ready = [space.node_changes_hold(node) for node in layer]
        first = [
            (node, fits(node, only(space.tools if whole else space.goal_writes)))
            for node, whole in zip(layer, ready, strict=True)
        ]
        # the witness's depth: the search ends with this pass (see the docstring)
        last = depth == within
        cap = max_calls + witness_pass_calls if last and max_calls is not None else max_calls
        if unaffordable(space, first, cap, None if last else max_pass_calls):
            return gave_up(depth - 1)
        later: list[Outcome] = []
        for node, tools in first:
            expanded += 1
            if expanded > max_nodes:
                return gave_up(depth - 1)
            got = grow(node, tools, depth, nxt, cap, later)
            if got is False:
                return gave_up(depth - 1)
            if isinstance(got, _Node):
                return Minimum(depth, got.chain, True, expanded)
        # only goal nodes are in ``nxt`` so far: the first made is the first a search
        # making every node would have met (none before it had its fingerprint)
        goals = list(nxt.values())
        if goals:
            keys = sorted(set().union(*(n.writes for n in goals)))
            calls = [space.calls[k] for k in keys]
            return Minimum(depth, goals[0].chain, True, expanded, calls)
        if depth == upto:
            break  # no deeper layer: its reads would reach nothing
        if last and witness_pass_calls:
            # no goal where the witness was: never expected, and what the pass spent
            # beyond the budget must not go on to a deeper layer
            return gave_up(depth)
        for out in later:
            keep(space.make(out, depth), nxt)
        others = only(space.other_calls)
        rest = [
            (node, fits(node, others))
            for node, whole in zip(layer, ready, strict=True)
            if not whole
        ]
        if unaffordable(space, rest, max_calls, max_pass_calls):
            return gave_up(depth)
        for node, tools in rest:
            if grow(node, tools, depth, nxt, max_calls) is False:
                return gave_up(depth)
        layer = undominated(list(nxt.values()))
        if not layer:
            break
    if longest < upto:
        # the forward bound dropped the calls of chains longer than ``within``: none of
        # at most that many calls reaches the goal, and no longer one was looked for
        return gave_up(longest)
    return Minimum(None, None, True, expanded)


def unaffordable(
    space: Space,
    work: Iterable[tuple[_Node, Sequence[str]]],
    cap: int | None,
    wide: int | None = None,
) -> bool:
    """Would a pass making each node's calls of its tools (``work``) make more calls than
    the budget ``cap`` leaves (counted from the space's :attr:`~Space.calls_run`), or
    than ``wide``? A search would then give up inside it after spending all that is
    left, or spend it on layers that grow too fast to end in time: it gives up before
    it. The calls are counted, not made (:meth:`Space.calls_at`), and the count is the
    same on every machine."""
    limits = [n for n in (None if cap is None else cap - space.calls_run, wide) if n is not None]
    if not limits:
        return False
    left = min(limits)
    for node, tools in work:
        left -= space.calls_at(node, tools)
        if left < 0:
            return True
    return False


def undominated(layer: list[_Node]) -> list[_Node]:
    """The nodes of a layer (of one depth) no other node of it dominates, in their order.

    Node ``a`` dominates ``b`` when both have the same state, goal answers shown and
    write counts, and ``a`` knows every fact ``b`` does, has seen every described value
    ``b`` has, and ends every write ``b``'s chains made (:attr:`_Node.writes`). A call
    ``b`` can make, ``a`` can (its arguments are known, its targets recognised), with
    the same result on the same state, and after it ``a``'s child dominates ``b``'s: a
    chain from ``b`` reaching the goal is one from ``a``, as long and making the same
    writes, so dropping ``b`` changes neither the minimum nor the writes of shortest
    chains. The forward bound keeps every such chain from ``a`` too: it drops only
    calls no real chain in time follows. Knowledge only grows along a chain and the
    goal reads the state and the answers shown, never what is known, so more knowledge
    never hurts.

    Checked against the nodes kept so far, largest first, through the nodes holding
    each fact: a node is compared only with those holding its rarest one."""
    if len(layer) < 2:
        return layer
    groups: dict[tuple[Any, ...], list[int]] = {}
    for i, node in enumerate(layer):
        groups.setdefault((node.tables, node.answered, node.made), []).append(i)
    dropped: set[int] = set()
    for members in groups.values():
        if len(members) < 2:
            continue
        info = {
            i: frozenset(layer[i].facts)
            | {("seen", x) for x in layer[i].seen}
            | {("write", w) for w in layer[i].writes}
            for i in members
        }
        holding: dict[Any, list[int]] = {}
        kept: list[int] = []
        for i in sorted(members, key=lambda i: (-len(info[i]), i)):
            mine = info[i]
            rarest: list[int] | None = None
            for item in mine:
                got = holding.get(item)
                if got is None:
                    rarest = []
                    break
                if rarest is None or len(got) < len(rarest):
                    rarest = got
            if rarest is None:  # knows nothing: any node kept dominates it
                rarest = kept
            if any(mine <= info[j] for j in rarest):
                dropped.add(i)
                continue
            kept.append(i)
            for item in mine:
                holding.setdefault(item, []).append(i)
    return [n for i, n in enumerate(layer) if i not in dropped] if dropped else layer


def other_final_state(
    space: Space,
    horizon: int,
    writes: Sequence[Call],
    times: Sequence[int],
    total: int,
    expected: Sequence[State],
    *,
    max_nodes: int = MAX_NODES,
    max_calls: int | None = None,
) -> FinalStates:
    """A chain of at most ``horizon`` calls whose writes are all among ``writes`` (call
    ``i`` at most ``times[i]`` times, at most ``total`` writes in all; reads are free)
    that reaches the goal in a state none of ``expected`` is (compared on the tables the
    tools can write). Breadth first over every such chain, by distinct nodes; it gives up
    as :func:`minimum` does.

    Most often no search is needed: reads change no cell, so a chain's final state is
    that of its writes made in order, whatever reads come between. When every sequence
    of the allowed writes (within the bounds) either fails, or ends where the goal's
    changes do not hold, or ends in an expected state, no chain is a counterexample
    (:func:`writes_end_expected`), and the answer comes without making a read."""
    tried = writes_end_expected(space, horizon, writes, times, total, expected)
    if tried is not None:
        return FinalStates(None, True, tried)
    index = {call_key(space.domain, c): i for i, c in enumerate(writes)}

    def allow(tool: ToolDef, call: Call, node: _Node) -> bool:
        if not tool.is_write:
            return True
        i = index.get(call_key(space.domain, call))
        return i is not None and node.made[i] < times[i] and node.made[-1] < total

    root = space.root()
    root.made = (0,) * (len(writes) + 1)
    seen = {space.fingerprint(root)}
    layer = [root]
    expanded = 0
    for depth in range(0, horizon + 1):
        nxt: list[_Node] = []
        for node in layer:
            if space.goal(node) and not any(space.same_state(node.state, e) for e in expected):
                return FinalStates(node.chain, True, expanded, node.state)
            if depth == horizon:
                continue
            expanded += 1
            if expanded > max_nodes:
                return FinalStates(None, False, expanded)
            for child in space.children(node, depth + 1, allow):
                if max_calls is not None and space.calls_run > max_calls:
                    return FinalStates(None, False, expanded)
                if child.chain and space.domain.tools[child.chain[-1].tool].is_write:
                    made = list(node.made)
                    made[index[call_key(space.domain, child.chain[-1])]] += 1
                    made[-1] += 1
                    child.made = tuple(made)
                else:
                    child.made = node.made
                fp = space.fingerprint(child)
                if fp in seen:
                    continue
                seen.add(fp)
                nxt.append(child)
        # a dominated node reaches no final state its dominator cannot (:func:`undominated`)
        layer = undominated(nxt)
        if not layer:
            break
    return FinalStates(None, True, expanded)


#: Most write sequences :func:`writes_end_expected` runs before it leaves proof 5's
#: question to the search of every chain.
MAX_WRITE_SEQUENCES = 2_000


def writes_end_expected(
    space: Space,
    horizon: int,
    writes: Sequence[Call],
    times: Sequence[int],
    total: int,
    expected: Sequence[State],
    limit: int = MAX_WRITE_SEQUENCES,
) -> int | None:
    """How many write sequences it ran, when every sequence of ``writes`` (call ``i`` at
    most ``times[i]`` times, at most ``total`` and at most ``horizon`` in all) run in
    order from the initial state either fails, or misses the goal's changes, or ends in
    one of ``expected``; None when one does none of these (a chain making it may be a
    counterexample: the search decides) or there are more than ``limit`` sequences.

    Sound because the state after a chain depends only on its writes: a read changes no
    cell, and whether a call succeeds and what it writes depend on the state and the
    arguments, not on what the agent knows. Which chains can *make* a sequence (the
    arguments known, the targets recognised, the answers shown) is left out, so this
    over-approximates the chains and a "none" holds for every one."""
    bound = min(total, horizon)
    tried = 0
    # depth first over sequences, each with the state it leads to and its counts
    stack: list[tuple[State, tuple[int, ...]]] = [(space._copy(space.initial), (0,) * len(writes))]
    while stack:
        st, made = stack.pop()
        tried += 1
        if tried > limit:
            return None
        if space.changes_hold(st) and not any(space.same_state(st, e) for e in expected):
            return None
        if sum(made) >= bound:
            continue
        for i in reversed(range(len(writes))):
            if made[i] >= times[i]:
                continue
            nxt = space._copy(st)
            call = writes[i]
            try:
                space.run(space.domain, nxt, call.tool, dict(call.args))
            except ToolError:
                continue  # a failing call changes nothing: no chain makes it succeed here
            stack.append((nxt, (*made[:i], made[i] + 1, *made[i + 1 :])))
    return tried


def shortened(space: Space, chain: Sequence[Call]) -> list[Call] | None:
    """``chain`` with calls left out, one at a time from the last, wherever what is left
    still runs for the agent (:meth:`Space.follow`) and reaches the goal; None if
    ``chain`` itself does not. An upper bound on the minimum, and a witness of it, for a
    few runs of the chain (each call's outcome is kept by the state's memo and the
    space's write cache), where a search proves the minimum layer by layer.

    Deleting calls greedily finds no shorter chain that needs other calls, so the result
    is not always a shortest one; on the first 86 retail action and information
    candidates of seed 0 it was on 79."""
    # the node after each prefix of the chain: calls are left out from the last, so
    # the calls before the one tried are still the chain's own, and each trial follows
    # on from there
    after = [space.root()]
    for call in chain:
        node = space.follow([call], after[-1])
        if node is None:
            return None
        after.append(node)
    if not space.goal(after[-1]):
        return None
    out = list(chain)
    for i in reversed(range(len(out))):
        node = space.follow(out[i + 1 :], after[i])
        if node is not None and space.goal(node):
            out = out[:i] + out[i + 1 :]
    return out


def enabling(
    space: Space,
    call: Call,
    before: int,
    *,
    max_nodes: int = MAX_NODES,
    max_calls: int | None = None,
) -> SearchResult:
    """The shortest chain of at most ``before`` calls after which the agent can make
    ``call`` itself (the same tool and arguments, :meth:`Space.follow`'s rules) and it
    succeeds: proof 6's question whether a refused call is refused only for the order
    of calls ("insufficient funds" where a deposit first would let the payment go
    through). ``chain`` None: no such chain (``complete``), or the search gave up first
    (past ``max_nodes`` expanded nodes or ``max_calls`` calls made).

    Breadth first, as :func:`minimum`, with the same merging of alike nodes and of
    dominated ones (a node knowing more can make every call one knowing less can, with
    the same outcome). The space's goal plays no part: at each depth only the tools
    :func:`~graphgen.verify.bmc.relevance_levels` puts within the calls left of the
    refused call's reads (its checks, effects and output) and its arguments' sorts are
    called. A call of a shortest such chain outside its level could be deleted: no
    later call, nor the refused one, would read a cell it wrote or pass a value only it
    showed, so a shorter chain would do."""
    domain = space.domain
    tool = domain.tools[call.tool]
    sorts = {param_sort(p) for p in tool.params.values()}
    sorts |= {Sort("field", f"{e}.{f}") for r in space.recognize for e, f, _ in r.atoms}
    levels = list(relevance_levels(domain, space.tools, cells_read(domain, tool), sorts))
    root = space.root()
    seen = {space.fingerprint(root)}
    layer = [root]
    expanded = 0
    for depth in range(before + 1):
        for node in layer:
            if space.follow([call], node) is not None:
                return SearchResult(depth, node.chain, True, expanded)
        if depth == before or not levels:
            break
        # the calls a shortest chain still makes, this one included
        fit = levels[min(before - depth, len(levels)) - 1]
        tools = [n for n in space.tools if n in fit]
        if unaffordable(space, ((node, tools) for node in layer), max_calls):
            return SearchResult(None, None, False, expanded)  # before it spends the rest
        nxt: dict[tuple[Any, ...], _Node] = {}
        for node in layer:
            expanded += 1
            if expanded > max_nodes:
                return SearchResult(None, None, False, expanded)
            for out in space.outcomes(node, None, tools):
                if max_calls is not None and space.calls_run > max_calls:
                    return SearchResult(None, None, False, expanded)
                child = space.make(out, depth + 1)
                fp = space.fingerprint(child)
                if fp not in seen:
                    seen.add(fp)
                    nxt[fp] = child
        layer = undominated(list(nxt.values()))
        if not layer:
            break
    return SearchResult(None, None, True, expanded)


def shortest_chain(
    domain: Domain,
    initial: State,
    givens: Sequence[Given],
    goal: Goal,
    upto: int,
    *,
    max_nodes: int = MAX_NODES,
    execute: Executor | None = None,
    recognize: Sequence[Recognition] = (),
    tools: Sequence[str] | None = None,
) -> SearchResult:
    """The shortest chain of at most ``upto`` calls after which ``goal`` holds (its
    changes, and each of its answers shown by an output or given).

    Breadth first: every node at depth ``j`` is the end of some chain of ``j``
    successful calls, so the first depth at which the goal holds is the minimum. A write
    may name a target of ``recognize`` only once outputs showed the values its
    description rests on (:func:`graphgen.verify.proofs.recognitions`), as in the
    proofs' model of the agent. ``tools`` limits the calls to those tools."""
    space = Space(domain, initial, givens, goal, tools, recognize, execute)
    r = minimum(space, upto, max_nodes=max_nodes, whole_layer=False)
    return SearchResult(r.min_calls, r.chain, r.complete, r.nodes)


def to_recognise(recognize: Sequence[Recognition], givens: Sequence[Given]) -> list[Recognition]:
    """The targets the agent must recognise: none whose id the user gives."""
    given_keys = {(g.sort, repr(g.value)) for g in givens}
    return [r for r in recognize if (f"key:{r.entity}", repr(r.key)) not in given_keys]


def _recognised(
    tool: ToolDef, call: Call, recognize: Sequence[Recognition], seen: frozenset[tuple[str, Any]]
) -> bool:
    """A write names no target whose description's values no output has shown yet."""
    if not tool.is_write or not recognize:
        return True
    for p, v in call.args.items():
        pd = tool.params[p]
        if isinstance(pd.ty, RefT) and _unrecognised(recognize, pd.ty.entity, v, seen):
            return False
    return True


def _unrecognised(
    recognize: Sequence[Recognition], entity: str, key: Any, seen: frozenset[tuple[str, Any]]
) -> bool:
    """Is row ``key`` of ``entity`` a target some value of whose description no output
    has shown (``seen``)? A write may not name it yet."""
    for r in recognize:  # loops, not any(): it runs for every call a search makes
        if r.entity == entity and r.key == key:
            for e, f, x in r.atoms:
                if (f"{e}.{f}", _hashable(x)) not in seen:
                    return True
    return False


@per_tool
def output_sources(
    domain: Domain, tool: ToolDef
) -> tuple[frozenset[tuple[str, str]], bool, tuple[Any, ...]]:
    """Where the scalars an output of ``tool`` shows come from: the (entity, field)
    pairs whose cells it shows (an id as the entity's key field), whether it also shows
    values it computes (counts, sums, comparisons, arguments echoed: anything else),
    and the literals it may show."""
    fields: set[tuple[str, str]] = set()
    lits: list[Any] = []

    def of_type(t: Ty) -> bool:
        t = strip_opt(t)
        if isinstance(t, ListT):
            return of_type(t.elem)
        if isinstance(t, RefT):
            fields.add((t.entity, domain.entities[t.entity].key))
            return False
        if isinstance(t, RowT):
            row(t.entity)
            return False
        return True

    def row(entity: str) -> None:
        edef = domain.entities[entity]
        fields.add((entity, edef.key))
        fields.update((entity, f) for f in edef.fields)

    def walk(e: ir.Expr) -> bool:
        match e:
            case ir.FieldOf(entity=ent, field=f):
                fields.add((ent, f))
                return False
            case ir.RowOf(entity=ent):
                row(ent)
                return False
            case ir.Comp(proj=p) | ir.Index(operand=p) | ir.Old(operand=p):
                return walk(p)
            case ir.DictComp(comp=c):
                fields.add((c.entity, domain.entities[c.entity].key))
                return walk(c.proj)
            case ir.DictLit(values=vs) | ir.ListLit(items=vs):
                return any([walk(v) for v in vs])
            case ir.IfExp(then=a, orelse=b):
                return any([walk(a), walk(b)])
            case ir.Lit(value=v):
                lits.append(v)
                return False
            case ir.Var(ty=t):
                return of_type(t)
            case _:
                return True

    computed = tool.returns is not None and walk(tool.returns)
    return frozenset(fields), computed, tuple(lits)


#: :func:`_names_row` of a tool that writes the field in some other way.
_NOT_NAMED = ""

#: A writer of a goal field: its tool, (the sort of the id it must pass, the moves that
#: can show that id first: :meth:`Space._key_moves`) when it takes one (None when the
#: state picks the row, or the value may come otherwise), and per value of a target's
#: description it must have seen, (the atom, the moves showing it first:
#: :meth:`Space._atom_moves`).
_WriterNeeds = tuple[
    str, tuple[Sort, frozenset[str]] | None, tuple[tuple[tuple[str, Any], frozenset[str]], ...]
]


@dataclass(frozen=True)
class _FieldNeed:
    """A field of an existing row the goal changes (see :meth:`Space._pending_at`): its
    after value, the moves that can write it (a tool whose output is the row it writes
    writes this one only by a call on it: :meth:`Space._writes_on`), and per such tool
    what its call needs first. A tool that names the row by an id parameter needs that
    id known (the tools that can show ids of its sort) and, for a target the agent must
    recognise, each value of the target's description shown (the tools that read that
    field: an output showing it, or a search filtered on it). A tool that writes the
    field of a row the state names needs neither."""

    entity: str
    key: Any
    field: str
    after: Any
    writers: frozenset[str]
    needs: tuple[_WriterNeeds, ...]


@dataclass(frozen=True)
class _ValueNeed:
    """An id the goal puts in field ``field`` of row ``key`` (of ``entity``; one per
    member of a created row's list), a row it creates or an existing one whose field it
    changes: the moves that can write that field (on an existing row as for
    :class:`_FieldNeed`), and per such tool what its call needs first. A tool whose only
    write of the field sets it to a parameter (a create, or a
    plain assignment) needs the id known (and a target's description shown) before it
    can put it there; any other writer needs nothing (see :func:`_puts`)."""

    entity: str
    key: Any
    field: str
    value: Any
    writers: frozenset[str]
    needs: tuple[_WriterNeeds, ...]
    # the field change (by index) of an existing row that sets the value, None for a
    # created row's
    change: int | None = None


def _takes_out(tool: ToolDef, entity: str, field: str) -> Any:
    """How a call of ``tool`` can take a member out of list field ``field`` of an
    ``entity`` row: False when it cannot (it never writes the field, or only appends);
    the parameter it takes out, when its only such write is a ``remove`` of that
    parameter (without a default); else None, it may take out any member."""
    taking = [
        st.effect
        for st in tool.effects
        if FieldRef(entity, field) in effect_writes(st.effect)
        and not (isinstance(st.effect, ir.ListEdit) and st.effect.op == "append")
    ]
    if not taking:
        return False
    if len(taking) != 1:
        return None
    match taking[0]:
        case ir.ListEdit(op="remove", value=ir.Var(name=name)):
            param = tool.params.get(name)
            return param if param is not None and not param.has_default else None
    return None


def _puts(tool: ToolDef, entity: str, field: str, at: int | None) -> Any:
    """The parameter whose value a call of ``tool`` puts in ``field`` of an ``entity``
    row: when the tool's only effect writing that field sets it to that parameter (a
    plain assignment, or a create, whose list member ``at`` it may be), and it has no
    default; else None, the value may come from anywhere."""
    writing = [
        st.effect
        for st in tool.effects
        if FieldRef(entity, field) in effect_writes(st.effect)
        # taking a member out puts none in
        and not (isinstance(st.effect, ir.ListEdit) and st.effect.op == "remove")
    ]
    if len(writing) != 1:
        return None
    match writing[0]:
        case ir.Create(entity=e, values=values) if e == entity:
            expr: ir.Expr | None = dict(values).get(field)
            if at is not None:
                items = expr.items if isinstance(expr, ir.ListLit) else ()
                expr = items[at] if at < len(items) else None
        case ir.Assign(op="=", value=value) if at is None:
            expr = value
        case ir.ListEdit(op="append", value=value) if at is not None:
            expr = value  # the one member it adds, wherever the list has it in the end
        case _:
            return None
    param = tool.params.get(expr.name) if isinstance(expr, ir.Var) else None
    # a parameter left out takes its default, which the agent need not have known
    return param if param is not None and not param.has_default else None


def _shows_row(tool: ToolDef) -> str | None:
    """The entity of the one row ``tool`` returns, when its output is ``E[p]`` for an id
    parameter ``p`` of ``E`` that every call passes; else None."""
    e = tool.returns
    if not (isinstance(e, ir.RowOf) and isinstance(e.key, ir.Var)):
        return None
    p = tool.params.get(e.key.name)
    if p is None or p.has_default or isinstance(p.ty, OptT):
        return None  # the row may be one the agent did not name
    return e.entity if isinstance(p.ty, RefT) and p.ty.entity == e.entity else None


def _filter_of(tool: ToolDef) -> tuple[str, tuple[tuple[str, str], ...]] | None:
    """``(E, ((field, p), ...))`` when ``tool`` returns ``[proj for x in E if cond]``,
    ``proj`` showing ``x``'s own row only (``x``, ``E[x]`` or ``x.g``) and ``cond``
    requiring ``x.field == p`` for each pair, ``p`` a parameter every call passes whose
    value is an id, a member or text (shown and compared as stored); else None (no such
    pair). A call then shows only rows holding its values of those parameters there.

    >>> from graphgen.domains import load_builtin
    >>> tools = load_builtin("retail").tools
    >>> _filter_of(tools["find_product_items_by_color"])
    ('Item', (('product_id', 'product_id'), ('color', 'color')))
    >>> _filter_of(tools["get_item_details"]) is None
    True
    """
    e = tool.returns
    if not isinstance(e, ir.Comp):
        return None
    proj: ir.Expr | None = e.proj
    if isinstance(proj, ir.RowOf | ir.FieldOf):
        proj = proj.key if proj.entity == e.entity else None
    if not (isinstance(proj, ir.Var) and proj.name == e.var):
        return None
    pairs: list[tuple[str, str]] = []
    for ref, name in comp_filter_params(e):
        p = tool.params.get(name)
        if p is None or p.has_default or not isinstance(p.ty, RefT | EnumT | PrimT):
            continue
        if isinstance(p.ty, PrimT) and p.ty.name != "str":
            continue
        pair = (ref.partition(".")[2], name)
        if pair not in pairs:
            pairs.append(pair)
    return (e.entity, tuple(pairs)) if pairs else None


def _shown_param(tool: ToolDef) -> str | None:
    """The parameter naming the row ``tool`` returns, when it returns one (``E[p]``)."""
    e = tool.returns
    return e.key.name if isinstance(e, ir.RowOf) and isinstance(e.key, ir.Var) else None


def _overwrites(tool: ToolDef, ent: str, fields: list[str]) -> bool:
    """Does ``tool``, whose output is the ``ent`` row it names (:func:`_shows_row`), set
    every one of ``fields`` of that row to an argument the call passes? Its output then
    shows there only values the agent passed."""
    if not tool.is_write or not fields:
        return False
    shown = _shown_param(tool)
    for f in fields:
        param = _puts(tool, ent, f, None)
        if param is None or shown is None or _names_row(tool, ent, f) != shown:
            return False
    return True


def _fields_holding(domain: Domain, ent: str, target: str) -> list[str]:
    """The fields of ``ent`` that hold ids of ``target``: a reference, or a list of them."""
    out = []
    for name, fd in domain.entities[ent].fields.items():
        t = strip_opt(fd.ty)
        if isinstance(t, ListT):
            t = strip_opt(t.elem)
        if isinstance(t, RefT) and t.entity == target:
            out.append(name)
    return out


def _holds(held: Any, value: Any) -> bool:
    """Does a field's value ``held`` (a list's members included) hold ``value``?"""
    if isinstance(held, list):
        return any(_holds(x, value) for x in held)
    return _is_hashable(held) and _hashable(held) == value


def _given_or_other(tool: ToolDef, expr: ir.Expr, value: Any, sort: Sort) -> bool:
    """Is ``expr`` an argument of ``tool`` the call must pass (no default) and know at
    ``sort``, a literal other than ``value``, or a list of those?"""
    if isinstance(expr, ir.Var):
        p = tool.params.get(expr.name)
        return p is not None and not p.has_default and param_sort(p) == sort
    if isinstance(expr, ir.Lit):
        return not _holds(expr.value, value)
    if isinstance(expr, ir.ListLit):
        return all(_given_or_other(tool, x, value, sort) for x in expr.items)
    return False


def _names_row(tool: ToolDef, entity: str, field: str) -> str | None:
    """How ``tool`` writes ``entity.field`` of an existing row: None if it never does,
    the parameter whose row it writes if every such effect writes ``entity[param]``
    (a plain id parameter), else :data:`_NOT_NAMED`. A create writes a new row only."""
    named: set[str] = set()
    for stmt in tool.effects:
        e = stmt.effect
        if isinstance(e, ir.Assign | ir.ListEdit) and (e.entity, e.field) == (entity, field):
            p = tool.params.get(e.key.name) if isinstance(e.key, ir.Var) else None
            ok = p is not None and isinstance(p.ty, RefT) and p.ty.entity == entity
            named.add(p.name if ok and p is not None else _NOT_NAMED)
    if not named:
        return None
    return named.pop() if len(named) == 1 else _NOT_NAMED


def _may_put(tool: ToolDef, entity: str, field: str, value: Any) -> bool:
    """Can a call of ``tool`` leave ``value`` in ``entity.field``? Not when each of its
    writes there sets a literal other than it: a cancel that sets an order's status to
    "cancelled" never makes it "returned", so it meets no need for that."""
    for stmt in tool.effects:
        e = stmt.effect
        if isinstance(e, ir.Assign | ir.ListEdit) and (e.entity, e.field) == (entity, field):
            if not (isinstance(e, ir.Assign) and e.op == "=" and isinstance(e.value, ir.Lit)):
                return True
            if same_value(e.value.value, value):
                return True
    return False


#: A field's values in a space's rows: the hashable ones, every one as text, the others.
_Column = tuple[frozenset[Any], frozenset[str], tuple[Any, ...]]


def _is_hashable(v: Any) -> bool:
    try:
        hash(v)
    except TypeError:
        return False
    return True


def _alike(shown: Any, answer: Any) -> bool:
    return bool(shown == answer) or str(shown) == str(answer)


class _Omit:
    def __repr__(self) -> str:
        return "<omitted>"


_OMIT = _Omit()


def _order(v: Any) -> tuple[str, str]:
    return (type(v).__name__, repr(v))


def _hashable(v: Any) -> Any:
    try:
        hash(v)
    except TypeError:
        return json.dumps(v, sort_keys=True, default=str)
    return v


def task_shortest(
    domain: Domain, task: Task, upto: int | None = None, *, max_nodes: int = MAX_NODES
) -> SearchResult:
    """:func:`shortest_chain` for ``task`` as the proofs see it: the agent's givens
    (enum members the instruction states included, :func:`~graphgen.verify.proofs.agent_givens`),
    its targets to recognise (none for a target whose id the user gives), and at most
    ``upto`` calls (default: the reference chain's length)."""
    from graphgen.verify.proofs import agent_givens, recognitions

    initial = State.from_dict(task.initial_state, domain)
    givens = agent_givens(domain, task)
    recognize = to_recognise(recognitions(domain, task.targets, initial), givens)
    bound = len(task.chain) if upto is None else upto
    return shortest_chain(
        domain, initial, givens, task.goal, bound, max_nodes=max_nodes, recognize=recognize
    )
