"""Who a task is about: one customer, identified by the instruction.

A domain's *principal* entity is the one a user *is* (:func:`principal_entity`: the
``User`` of retail and airline). A row is *owned* by the principal row its first
reference to the principal entity names (an order by its ``user_id``); rows of tables
without one (products, flights) are public. A principal row is *identified* by the
instruction when the givens at its own fields single it out: an email (a unique field),
or a first name, last name and zip code that match that user and no other.

The policies say "identify the customer, then act only on their own things". So a task
names exactly one customer (no generated task is about two: no intent template speaks
for two people), and every call of its chain and every change of its goal touches only
public rows or rows that customer owns. :func:`identity_problem` is the gate's check; the
expander runs the same check on its candidates so that it does not offer such tasks.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from graphgen.domain import Domain
from graphgen.knowledge import param_sort, parse_sort
from graphgen.state import State
from graphgen.tasks.model import Call, Given, Goal
from graphgen.types import RefT

__all__ = ["identified_principals", "identity_problem", "owner_of", "principal_entity"]


def principal_entity(domain: Domain) -> str | None:
    """The entity a user *is*: the one with a unique givable field most others reference."""
    best: tuple[int, str] | None = None
    for e in domain.entities.values():
        if not any(f.givable and f.unique for f in e.fields.values()):
            continue
        refs = sum(
            1
            for o in domain.entities.values()
            for f in o.fields.values()
            if domain.entity_of_ref(f.ty) == e.name
        )
        if best is None or refs > best[0]:
            best = (refs, e.name)
    return best[1] if best else None


def owner_of(domain: Domain, states: list[State], entity: str, key: Any) -> str | None:
    """The principal key that owns row ``key`` of ``entity`` (None: public, or unknown).

    ``states`` are searched in order (the initial state, then the final one, for rows
    the chain created).
    """
    p = principal_entity(domain)
    if p is None:
        return None
    if entity == p:  # a user owns itself (an id that names no row: no one)
        return str(key) if any(key in st.tables.get(p, {}) for st in states) else None
    owner_field = next(
        (
            f
            for f, fd in domain.entities[entity].fields.items()
            if isinstance(fd.ty, RefT) and fd.ty.entity == p
        ),
        None,
    )
    if owner_field is None:
        return None
    for st in states:
        row = st.tables.get(entity, {}).get(key)
        if row is not None:
            return str(row[owner_field])
    return None


def identified_principals(domain: Domain, state: State, givens: list[Given]) -> list[str]:
    """The principal rows the givens single out, in key order.

    A row is identified when the givens at the principal entity's fields that it
    matches are matched by no other row (one email; or name and zip together).
    """
    p = principal_entity(domain)
    if p is None:
        return []
    mine: list[tuple[str, Any]] = []
    for g in givens:
        s = parse_sort(g.sort)
        if s.kind == "field" and s.name.partition(".")[0] == p:
            mine.append((s.name.partition(".")[2], g.value))
    rows = state.tables.get(p, {})
    if not mine or not rows:
        return []
    # the rows holding each given (through the state's index: a table may be large)
    holders = [set(_holding(state, p, f, v)) for f, v in mine]
    out = []
    for key in sorted(set().union(*holders)):
        said = [h for h in holders if key in h]
        # singled out: no other row holds every value this one does
        if not set.intersection(*said) - {key}:
            out.append(str(key))  # as owner_of names owners: int keys too
    return out


def _holding(state: State, entity: str, field: str, value: Any) -> Sequence[Any]:
    """The keys of ``entity``'s rows whose ``field`` is ``value``."""
    try:
        return state.keys_where(entity, field, value)
    except (TypeError, KeyError):  # a list value, or rows without the field
        return [k for k, r in state.tables[entity].items() if r.get(field) == value]


def identity_problem(
    domain: Domain,
    initial: State,
    final: State,
    givens: list[Given],
    chain: list[Call],
    goal: Goal,
    refused_call: Call | None = None,
) -> tuple[str, str] | None:
    """(reason, detail) when the task is not about exactly the one customer the
    instruction identifies, else None.

    ``several_customers``: the givens identify more than one user.
    ``unidentified_owner``: a call (the refused one too) passes the id of a row, or the
    goal changes a row, owned by a user the instruction does not identify.
    """
    who = identified_principals(domain, initial, givens)
    if len(who) > 1:
        return "several_customers", f"the instruction identifies {', '.join(who)}"
    states = [initial, final]
    calls = [*chain, *([refused_call] if refused_call else [])]
    for i, c in enumerate(calls):
        tool = domain.tools.get(c.tool)
        if tool is None:
            continue
        for pname, v in c.args.items():
            if pname not in tool.params:
                continue
            s = param_sort(tool.params[pname])
            if s.kind != "key":
                continue
            o = owner_of(domain, states, s.name, v)
            if o is not None and o not in who:
                which = "the refused call" if i >= len(chain) else f"call {i}"
                return (
                    "unidentified_owner",
                    f"{which} ({c.tool}) uses {s.name} {v!r} of user {o}, whom the "
                    f"instruction does not identify"
                    + (f" (it identifies {who[0]})" if who else ""),
                )
    for ch in goal.changes:
        o = owner_of(domain, states, ch.entity, ch.key)
        if o is not None and o not in who:
            return (
                "unidentified_owner",
                f"the goal changes {ch.entity} {ch.key!r} of user {o}, whom the instruction "
                f"does not identify",
            )
    return None
