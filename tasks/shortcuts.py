"""Shortcut answers a fair task must not accept, and the values that expose them.

Two answers cost an agent nothing and prove nothing:

* **echo** — the instruction itself, with no call made;
* **hedge** — every enum member of the domain plus every scalar value the reference
  chain's reads show, in one text: whatever the right value is, it is in there.

:func:`echo_answer` and :func:`hedge_answer` build them (the gate grades a candidate's
goal against both, and scripted agents can reuse them). :func:`contradicting` lists the
values that make a hedge wrong: the other values an answer could have been.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable
from typing import Any

from graphgen import ir
from graphgen.domain import Domain, ToolDef
from graphgen.grading import mention_pattern, normalize_answer
from graphgen.state import State
from graphgen.tasks.model import Call
from graphgen.tasks.plan import Knowledge
from graphgen.tasks.referring import humanize
from graphgen.tasks.render import stated
from graphgen.types import EnumT, ListT, RefT, strip_opt


def echo_answer(instruction: str) -> str:
    """The answer of an agent that repeats the request and makes no call."""
    return instruction


def domain_enum_members(domain: Domain) -> list[str]:
    """Every member of every enum the domain declares or uses, in a stable order."""
    out: list[str] = []
    types: list[Any] = list(domain.enums.values())
    for e in domain.entities.values():
        types.extend(f.ty for f in e.fields.values())
    for t in domain.tools.values():
        types.extend(p.ty for p in t.params.values())
    for ty in types:
        while isinstance(ty, ListT):
            ty = ty.elem
        if isinstance(ty, EnumT):
            out.extend(v for v in ty.values if v not in out)
    return out


def scalars(value: Any) -> list[Any]:
    """The scalar values inside a read result (rows, records and lists taken apart)."""
    if isinstance(value, dict):
        return [x for v in value.values() for x in scalars(v)]
    if isinstance(value, list):
        return [x for v in value for x in scalars(v)]
    return [] if value is None else [value]


def hedge_answer(domain: Domain, results: Iterable[Any]) -> str:
    """One text naming every enum member and every scalar the reads showed."""
    # A dict keeps the first-seen order and dedups in O(1): a listing of a large table
    # shows tens of thousands of scalars.
    words: dict[str, None] = {}
    for v in [*domain_enum_members(domain), *(x for r in results for x in scalars(r))]:
        words.setdefault(("yes" if v else "no") if isinstance(v, bool) else str(v))
    return ", ".join(words)


def _same(a: Any, b: Any) -> bool:
    """Would an answer saying ``a`` also say ``b`` (or the other way round)?"""
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    return bool(
        re.search(mention_pattern(a), normalize_answer(str(b)))
        or re.search(mention_pattern(b), normalize_answer(str(a)))
    )


def said(text: str, value: Any) -> bool:
    """Does ``text`` state ``value`` in any form an answer would (so echoing it passes)?"""
    return (
        stated(text, value) or re.search(mention_pattern(value), normalize_answer(text)) is not None
    )


def tool_literals(tool: ToolDef) -> set[str]:
    """The string literals of a tool's preconditions and effects: the statuses and kinds
    its rules name ('pending', 'gift_card') and the ones it writes ('cancelled')."""
    exprs = [c.expr for c in tool.requires]
    exprs += [x for s in tool.effects for x in ir.effect_exprs(s.effect)]
    if tool.returns is not None:
        exprs.append(tool.returns)
    out: set[str] = set()
    for e in exprs:
        for n in ir.walk(e):
            if isinstance(n, ir.Lit) and isinstance(n.value, str):
                out.add(n.value)
    return out


def _policy_pattern(word: str) -> str:
    # Policy prose pluralises and capitalises ("credit cards", "PayPal accounts").
    parts = [re.escape(p) for p in re.split(r"[ _-]+", word.lower())]
    return r"(?<!\w)" + r"[ _-]+".join(parts) + r"(?:s|es)?(?!\w)"


def policy_rules(domain: Domain) -> list[str]:
    """The policy's rules, one per bullet (continuation lines joined), lower case, with
    the sentences that only define an enum ("An order is pending, processed, ... or
    exchanged": every member named) left out: they state no rule a refusal quotes."""
    bullets: list[str] = []
    for line in domain.policy.splitlines():
        s = line.strip()
        if s.startswith("- "):
            bullets.append(s[2:])
        elif s and bullets and line[:1].isspace():
            bullets[-1] += " " + s
        elif s:
            bullets.append(s)
    enums = [ty for ty in _enum_types(domain) if len(ty) > 1]
    out = []
    for b in bullets:
        kept = [
            sent
            for sent in re.split(r"(?<=[.!?])\s+", b.lower())
            if not any(_lists_members(sent, ty) for ty in enums)
        ]
        if kept:
            out.append(" ".join(kept))
    return out


def _lists_members(sentence: str, members: tuple[str, ...]) -> bool:
    """Does ``sentence`` name every member in one plain list ("pending, processed, ...
    or exchanged")? "regular 1, silver 2, gold 3" is a rule, not a list."""
    spans = []
    for m in members:
        hit = re.search(_policy_pattern(m), sentence)
        if hit is None:
            return False
        spans.append(hit.span())
    spans.sort()
    gaps = [sentence[a[1] : b[0]] for a, b in itertools.pairwise(spans)]
    return all(re.fullmatch(r"[\s,]*(?:(?:or|and)\s+)?", g) for g in gaps)


def _enum_types(domain: Domain) -> list[tuple[str, ...]]:
    types: list[Any] = list(domain.enums.values())
    for e in domain.entities.values():
        types.extend(f.ty for f in e.fields.values())
    out: list[tuple[str, ...]] = []
    for ty in types:
        while isinstance(ty, ListT):
            ty = ty.elem
        if isinstance(ty, EnumT) and ty.values not in out:
            out.append(tuple(ty.values))
    return out


# The endings a tool-name word takes in policy prose: cancel -> cancelled, cancellation;
# change -> changes; book -> bookings.
_INFLECTED = r"(?:e|es|s|ed|d|ing|ings|ion|ions|ation|led|ling|lation|ment|ments)?"


def rule_words(domain: Domain, tool: ToolDef) -> set[str]:
    """Enum members a careful agent may say when it explains why ``tool`` is refused:
    the tool's own literals, and every member named in a policy rule about the tool
    (one that names one of those literals or a word of the tool's name: "Only a pending
    order can be cancelled ... A processed order can no longer be changed or cancelled")."""
    lits = tool_literals(tool)
    entities = {humanize(e).lower() for e in domain.entities}
    words = [w for w in tool.name.split("_") if w not in entities and len(w) > 2]
    stems = [rf"\b{re.escape(w.removesuffix('e'))}{_INFLECTED}\b" for w in words]
    members = domain_enum_members(domain)
    out = {m for m in members if m in lits}
    return out | _named_with(domain, [_policy_pattern(v) for v in lits] + stems)


def reason_words(domain: Domain, values: Iterable[Any]) -> set[str]:
    """Enum members a careful agent may say when it explains ``values`` (the reasons or
    the answer): every member named in a policy rule that names one of them. Told that
    an exchanged order cannot be cancelled, an agent explains what "exchanged" means
    with the rule it comes from: "after a return or exchange the order is closed", so
    it "can no longer be cancelled, returned or exchanged"."""
    members = set(domain_enum_members(domain))
    keys = [_policy_pattern(v) for v in values if isinstance(v, str) and v in members]
    return _named_with(domain, keys)


def _named_with(domain: Domain, keys: list[str]) -> set[str]:
    """The enum members named in the policy rules that match one of the patterns
    ``keys``."""
    members = domain_enum_members(domain)
    out: set[str] = set()
    if not keys:
        return out
    for rule in policy_rules(domain):
        if any(re.search(k, rule) for k in keys):
            out.update(m for m in members if re.search(_policy_pattern(m), rule))
    return out


def chain_rows(domain: Domain, chain: Iterable[Call]) -> list[tuple[str, Any]]:
    """The rows the chain's calls name by id (every id argument)."""
    out: list[tuple[str, Any]] = []
    for call in chain:
        tool = domain.tools.get(call.tool)
        if tool is None:
            continue
        for name, v in call.args.items():
            p = tool.params.get(name)
            ty = strip_opt(p.ty) if p is not None else None
            if isinstance(ty, RefT) and v is not None and (ty.entity, v) not in out:
                out.append((ty.entity, v))
    return out


def interface_words(domain: Domain) -> str:
    """The names of every field and tool, as words ("economy price", "get flight
    status"): a careful agent names things with them, whatever the enums hold."""
    names = [f for e in domain.entities.values() for f in e.fields] + list(domain.tools)
    return " ".join(n.replace("_", " ") for n in names)


def visible_values(
    domain: Domain,
    st: State,
    principal: tuple[str, str] | None,
    know: Knowledge,
    rows: Iterable[tuple[str, Any]] = (),
) -> set[str]:
    """Enum values true of some row a careful agent could look at: the principal's own
    rows and ``rows`` (those the chain names), the rows they point to (two steps: an
    order's items, an item's product, a booking's flight, its airports), and every value
    the reference chain showed."""
    out = {str(v) for s, v in know.facts_items() if s.kind == "field" and isinstance(v, str)}
    seen: set[tuple[str, Any]] = {(e, k) for e, k in rows if k in st.tables.get(e, {})}
    if principal is not None:
        p_ent, p_key = principal
        seen.add((p_ent, p_key))
        for ent, edef in domain.entities.items():
            for fname, fd in edef.fields.items():
                if isinstance(fd.ty, RefT) and fd.ty.entity == p_ent:
                    seen.update((ent, k) for k in st.keys_where(ent, fname, p_key))
    for _ in range(2):
        for ent, key in list(seen):
            row = st.tables[ent].get(key)
            if row is None:
                continue
            for fname, fd in domain.entities[ent].fields.items():
                ty = fd.ty.elem if isinstance(fd.ty, ListT) else fd.ty
                if isinstance(ty, RefT):
                    vals = row[fname] if isinstance(row[fname], list) else [row[fname]]
                    seen.update((ty.entity, v) for v in vals if v in st.tables[ty.entity])
    for ent, key in seen:
        row = st.tables[ent][key]
        for fname, fd in domain.entities[ent].fields.items():
            if isinstance(fd.ty, EnumT):
                out.add(str(row[fname]))
    return out


def _required_values(e: ir.Expr) -> list[tuple[tuple[str, str], str]]:
    """((entity, field), value) for each ``E[k].f == 'v'`` and ``E[k].f in ['v', ...]``
    inside a precondition."""
    out: list[tuple[tuple[str, str], str]] = []
    for n in ir.walk(e):
        if isinstance(n, ir.Compare) and n.op == "==" and isinstance(n.left, ir.FieldOf):
            items: tuple[ir.Expr, ...] = (n.right,)
            place = (n.left.entity, n.left.field)
        elif (
            isinstance(n, ir.Contains)
            and not n.negated
            and isinstance(n.item, ir.FieldOf)
            and isinstance(n.container, ir.ListLit)
        ):
            items, place = n.container.items, (n.item.entity, n.item.field)
        else:
            continue
        out += [
            (place, x.value) for x in items if isinstance(x, ir.Lit) and isinstance(x.value, str)
        ]
    return out


def earlier_values(domain: Domain) -> dict[str, set[str]]:
    """Per enum value a tool writes, the values that field had before on the way there:
    ``return_delivered_order`` needs 'delivered' and writes 'returned', so a returned
    order *was* delivered, and "it was delivered, then returned" is true (transitively)."""
    step: dict[tuple[str, str], set[str]] = {}
    for tool in domain.write_tools:
        before: dict[tuple[str, str], set[str]] = {}
        for chk in tool.requires:
            for place, v in _required_values(chk.expr):
                before.setdefault(place, set()).add(v)
        for s in tool.effects:
            eff = s.effect
            if isinstance(eff, ir.Assign) and eff.op == "=" and isinstance(eff.value, ir.Lit):
                place = (eff.entity, eff.field)
                if isinstance(eff.value.value, str) and place in before:
                    step.setdefault((place[0] + "." + place[1], eff.value.value), set()).update(
                        before[place]
                    )
    out: dict[str, set[str]] = {}
    for (_, v), prev in step.items():
        out.setdefault(v, set()).update(prev)
    changed = True
    while changed:  # the transitive closure: at most a handful of statuses
        changed = False
        for v, prev in out.items():
            more = set().union(*(out.get(p, set()) for p in prev)) - prev - {v}
            if more:
                prev |= more
                changed = True
    return out


def contradicting(
    domain: Domain,
    st: State,
    know: Knowledge,
    values: list[Any],
    instruction: str,
    principal: tuple[str, str] | None,
    tools: Iterable[ToolDef] = (),
    chain: Iterable[Call] = (),
    explained: Iterable[Any] = (),
) -> list[str]:
    """Enum members a careful, truthful agent would never assert here: ``answer_not``.

    A member qualifies when no row in the agent's view has it, nor had it on the way to
    its current value (:func:`visible_values`, :func:`earlier_values`: saying it would
    be false of everything the agent could be talking about), the user
    did not say it, no field or tool is named with it (:func:`interface_words`: "economy
    price"), it is none of ``values`` (the right answer or reasons), no rule of
    ``tools`` names it (:func:`rule_words`: the refused call, or the tool a question
    asks), and no rule naming one of ``explained`` names it (:func:`reason_words`: a
    refusal's reasons, which an agent explains with the rule they come from). Numbers,
    dates and names are never listed: any value the agent was shown is true of some row
    ("your other gift card has $20"), and a hedge only says values it was shown. When
    nothing qualifies, a hedge passes and the gate rejects the task.
    """
    seen = visible_values(domain, st, principal, know, chain_rows(domain, chain))
    names = interface_words(domain)
    history = earlier_values(domain)
    # A row's earlier statuses are true of it too ("it was delivered, then returned").
    seen |= {p for v in seen | {str(x) for x in values} for p in history.get(v, set())}
    rules = reason_words(domain, explained)
    for t in tools:
        rules |= rule_words(domain, t)
    out: list[str] = []
    for m in domain_enum_members(domain):
        if m in seen or m in rules or said(instruction, m) or said(names, m):
            continue
        if any(not isinstance(v, bool) and _same(m, v) for v in values):
            continue
        out.append(m)
    return out


__all__ = [
    "chain_rows",
    "contradicting",
    "domain_enum_members",
    "earlier_values",
    "echo_answer",
    "hedge_answer",
    "interface_words",
    "policy_rules",
    "reason_words",
    "rule_words",
    "said",
    "scalars",
    "tool_literals",
    "visible_values",
]
