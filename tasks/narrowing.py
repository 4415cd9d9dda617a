"""Arguments for a write tool drawn through its precondition, one parameter at a time.

Drawn independently, the arguments of a tool whose precondition relates them rarely
bind: an item *of that order*, a variant *of the same product* that is in stock, an
order that is delivered. Each is a small share of its table, and the shares multiply,
so rejection sampling over whole tables never met some tools' preconditions and the
expander's single-write tasks skipped them.

A *narrowing* is a conjunct of the precondition that names the rows one parameter may
take once some other parameters are drawn: ``item_id in Order[order_id].items``,
``Item[new_item_id].product_id == Item[item_id].product_id``,
``Order[order_id].status == 'delivered'`` (none needed), or a flag such as
``Item[new_item_id].available``. They are the shapes the interpreter answers from the
state's indexes when it filters a comprehension (:func:`graphgen.interp.probe`), so a
parameter is treated as the variable of a comprehension over its entity whose
condition is the conjunct, and its rows come from the same lookups.

A draw takes, while it can, a parameter some narrowing gives rows for, and picks
uniformly among the rows every such narrowing allows; any other parameter comes from
its pool as before. The precondition is still checked whole afterwards, so narrowing
changes only how often a draw binds, never whether a bound call is valid. A refusal
draws through the narrowings that read another argument only (``relational``): its
request hangs together, and a condition on one row forbids it.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from graphgen import ir
from graphgen.domain import Domain, ToolDef
from graphgen.interp import probe, probed_keys
from graphgen.knowledge import param_sort
from graphgen.state import State
from graphgen.tablebase import hashable
from graphgen.types import BOOL, ListT, RefT, strip_opt

#: How many rows of the smallest narrowed set a draw tries against the other narrowings.
PICKS = 8


@dataclass(frozen=True, slots=True)
class Narrowing:
    """A conjunct that gives the rows a parameter may take once ``needs`` are drawn.

    ``comp`` is ``[param for param in Entity if conjunct]``; its probe names the rows.
    """

    needs: tuple[str, ...]
    comp: ir.Comp


Ways = dict[str, tuple[Narrowing, ...]]
_NARROWINGS: dict[int, tuple[ToolDef, Ways, Ways]] = {}


def narrowings(tool: ToolDef, relational: bool = False) -> Ways:
    """Each key parameter's narrowings in ``tool``'s precondition, in the order of the
    checks (parameters with none are left out); worked out once per tool.
    ``relational``: only those that read another argument (what a refusal draws by).

    >>> from graphgen.domains import load_builtin
    >>> tool = load_builtin("retail").tools["exchange_delivered_order_item"]
    >>> {p: [n.needs for n in ns] for p, ns in narrowings(tool).items()}
    ... # doctest: +NORMALIZE_WHITESPACE
    {'user_id': [('order_id',)], 'order_id': [('user_id',), ()],
     'item_id': [('order_id',), ('new_item_id',)], 'new_item_id': [('item_id',), ()]}
    """
    hit = _NARROWINGS.get(id(tool))
    if hit is not None and hit[0] is tool:
        return hit[2] if relational else hit[1]
    # An optional parameter may be left out, so it neither is narrowed nor narrows.
    params = {n for n, p in tool.params.items() if not p.has_default}
    out: dict[str, tuple[Narrowing, ...]] = {}
    for name, p in tool.params.items():
        s = param_sort(p)
        if s.kind != "key" or name not in params:
            continue
        found: list[Narrowing] = []
        for chk in tool.requires:
            for conj in ir.conjuncts(chk.expr):
                cond = _as_comparison(conj)
                comp = ir.Comp(name, s.name, cond, ir.Var(name, RefT(s.name)), ListT(RefT(s.name)))
                pr = probe(comp)
                if pr is None:
                    continue
                needs = ir.free_vars(pr.expr)
                if name in needs or not needs <= params:
                    continue  # reads itself, or a name only the call binds
                found.append(Narrowing(tuple(sorted(needs)), comp))
        if found:
            out[name] = tuple(found)
    if len(_NARROWINGS) > 10_000:  # domains made on the fly (synth, fuzzing) come and go
        _NARROWINGS.clear()
    linked = {p: kept for p, ws in out.items() if (kept := tuple(w for w in ws if w.needs))}
    _NARROWINGS[id(tool)] = (tool, out, linked)
    return linked if relational else out


def _as_comparison(e: ir.Expr) -> ir.Expr:
    """A flag conjunct (``Item[x].available``) as the comparison ``== True`` the probe
    looks rows up by; any other conjunct as it is."""
    if isinstance(e, ir.FieldOf) and strip_opt(e.ty) == BOOL:
        return ir.Compare("==", e, ir.Lit(True, BOOL), BOOL)
    return e


def draw_narrowed(
    domain: Domain,
    st: State,
    tool: ToolDef,
    pools: Mapping[str, Sequence[Any]],
    rng: random.Random,
    seen: dict[tuple[Any, ...], Sequence[Any] | None],
    relational: bool = False,
) -> dict[str, Any] | None:
    """One draw of ``tool``'s arguments (absent optional ones included, as in
    ``pools``): narrowed parameters first, from the rows their narrowings allow; the
    rest from ``pools``. None when some narrowed parameter has no row left.

    ``relational``: only the narrowings that read another argument (an item of the
    order, a variant of the item's product), for a request that hangs together but may
    fail a condition on one row (an order that is not delivered, a variant out of stock).

    ``seen`` keeps the rows each narrowing gave for the values it read, across the
    draws of one binding (the first parameter's rows are the same every time)."""
    ways = narrowings(tool, relational)
    args: dict[str, Any] = {}
    left = list(pools)
    while left:
        name, ready = _next(left, ways, args)
        left.remove(name)
        if not ready:
            args[name] = rng.choice(pools[name])
            continue
        rows = [_rows(domain, st, w, args, seen) for w in ready]
        known = sorted((r for r in rows if r is not None), key=len)
        if not known:
            args[name] = rng.choice(pools[name])
            continue
        smallest, rest = known[0], [set(r) for r in known[1:]]
        if not smallest:
            return None
        for _ in range(PICKS):
            v = rng.choice(smallest)
            if all(v in r for r in rest):
                args[name] = v
                break
        else:
            return None
    return args


def _next(
    left: list[str], ways: Mapping[str, tuple[Narrowing, ...]], args: Mapping[str, Any]
) -> tuple[str, list[Narrowing]]:
    """The first parameter some narrowing is ready for (all it needs drawn), with those
    narrowings; else the first parameter left, with none."""
    for name in left:
        ready = [w for w in ways.get(name, ()) if all(n in args for n in w.needs)]
        if ready:
            return name, ready
    return left[0], []


def _rows(
    domain: Domain,
    st: State,
    w: Narrowing,
    args: Mapping[str, Any],
    seen: dict[tuple[Any, ...], Sequence[Any] | None],
) -> Sequence[Any] | None:
    """The rows ``w`` allows for the drawn values it reads (None: it cannot tell)."""
    try:
        key: tuple[Any, ...] | None = (id(w), *(hashable(args[n]) for n in w.needs))
        hash(key)
    except TypeError:
        key = None
    if key is not None and key in seen:
        return seen[key]
    env = {n: args[n] for n in w.needs}
    got = probed_keys(w.comp, st, env, domain)
    if key is not None:
        seen[key] = got
    return got
