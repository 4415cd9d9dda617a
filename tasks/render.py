"""Instruction text from intent templates, givens and referring expressions.

No LLM: templates from the domain's ``intents`` whose guards hold on the state are chosen
with the task's seeded RNG and filled in, with values said the way the domain's
``phrases`` say them. Every given value is stated in the text; no internal id appears
unless the domain marks that id givable.
"""

from __future__ import annotations

import datetime as dt
import random
import re
import string
from collections.abc import Sequence
from typing import Any, assert_never

from graphgen import ir
from graphgen.domain import Domain, ParamDef, ToolDef
from graphgen.errors import ToolError
from graphgen.interp import evaluate
from graphgen.knowledge import Sort, param_sort, parse_sort
from graphgen.state import State
from graphgen.tasks.model import Given, Target
from graphgen.tasks.referring import given_phrase, humanize, plural, words
from graphgen.today import today_of_state, uses_today
from graphgen.types import EnumT
from graphgen.vocabulary import KNOWN_VOCABS, canonical_vocab

# Each opener ends a sentence: what follows is capitalised ("Hi there. My email ...").
_OPENERS = ("Hi! ", "Hello. ", "Hi there. ", "", "Good day. ")
# Requests the instruction leaves unordered are joined with these; "Then" only joins a
# request that needs an earlier one's result (see :func:`join_intents`).
_ALSO = ("Also, ", "In addition, ")
_THEN = ("Then ", "After that, ")


class NoTrueIntent(Exception):
    """No intent template of the tool is true on the state: the request cannot be said."""


def spoken_forms(domain: Domain, sort: str, value: Any) -> list[str]:
    """Every way the instruction may state a given of ``sort`` besides the literal: the
    words of its enum member (``gift card``), a flag's words. The one list both the
    renderer's words and the gate's check (:func:`stated`) come from."""
    s = parse_sort(sort)
    out: list[str] = []
    if isinstance(value, bool):
        key = str(value).lower()
        out += [ph.words[key] for ph in domain.phrases.values() if key in ph.words]
    elif isinstance(value, str) and s.kind == "field":
        out.append(words(domain, s.name, value))
    elif isinstance(value, str) and s.kind == "enum":
        # A member given at its enum's sort ("my credit card", from a referring phrase)
        # is said in the words of any field or parameter of that enum type.
        out += [
            words(domain, f"{e.name}.{f}", value)
            for e in domain.entities.values()
            for f, fd in e.fields.items()
            if isinstance(fd.ty, EnumT) and fd.ty.name == s.name
        ]
        out.append(value.replace("_", " "))
    return [f for f in dict.fromkeys(out) if f != str(value)]


def stated(text: str, value: Any, forms: Sequence[str] = ()) -> bool:
    """Does ``text`` say ``value`` as a whole token? Size "S" is not stated by "Slow",
    nor 5 by "15": a substring test would let a given go unsaid. A flag is said the way
    :func:`speak` says it ("insurance: yes"), or literally. ``forms`` are other accepted
    spellings (:func:`spoken_forms`: "gift card" for ``gift_card``)."""
    for form in forms:
        if re.search(rf"(?<![\w-]){re.escape(form)}(?![\w-])", text, re.IGNORECASE):
            return True
    if isinstance(value, bool):
        word = "yes" if value else "no"
        return (
            re.search(rf"\b{word}\b", text, re.IGNORECASE) is not None
            or re.search(rf"\b{value}\b", text) is not None
        )
    pat = rf"(?<![\w-]){re.escape(str(value))}(?![\w-])"
    return re.search(pat, text) is not None


_ARTICLE = re.compile(r"(?:^|(?<=\s))(the|The|my|My) $")


def _fill(template: str, values: dict[str, str], raw: dict[str, Any] | None = None) -> str:
    """Fill ``template``: ``{p}`` is the spoken value, ``{n:noun}`` the noun inflected
    for int ``n``, ``{b:yes|no}`` one of two phrases for bool ``b``. A phrase that has
    its own article ("the item ...", "my order") replaces one the template wrote before
    the placeholder ("The {item_id}" does not read "The the item")."""
    raw = raw or {}
    out: list[str] = []
    for lit, fname, spec, _conv in string.Formatter().parse(template):
        out.append(lit)
        if fname is None:
            continue
        v = raw.get(fname)
        if spec and isinstance(v, bool):
            yes, _, no = spec.partition("|")
            out.append(yes if v else no)
            continue
        if spec and isinstance(v, int):
            out.append(plural(spec, v))
            continue
        said = values[fname]
        text = "".join(out)
        m = _ARTICLE.search(text)
        if m and said.split(" ", 1)[0].lower() in ("the", "my", "me"):
            cap = m.group(1)[0].isupper()
            text = text[: m.start(1)]
            said = said[:1].upper() + said[1:] if cap else said
            out = [text]
        out.append(said)
    return "".join(out)


def _true_intents(domain: Domain, tool: ToolDef, args: dict[str, Any], state: State) -> list[str]:
    """The templates of ``tool`` whose guard holds for ``args`` on ``state``."""
    out = []
    # A guard reads a left-out argument as the call does: its default ("priority is None").
    env = {n: args.get(n, p.default) for n, p in tool.params.items()}
    for it in tool.intents:
        if it.when is not None:
            try:
                if evaluate(it.when, state, env, domain) is not True:
                    continue
            except ToolError:  # a guard that cannot be evaluated is not known to be true
                continue
        out.append(it.text)
    return out


def _names_absent(tmpl: str, tool: ToolDef, args: dict[str, Any]) -> bool:
    """Whether template ``tmpl`` has a placeholder for a parameter the call leaves out
    (or passes None: an absent value is never said)."""
    return any(
        ("{" + n + "}" in tmpl or "{" + n + ":" in tmpl) and (n not in args or args[n] is None)
        for n in tool.params
    )


def now_params(domain: Domain, tool: ToolDef) -> set[str]:
    """The parameters of ``tool`` that are today's date (``phrases: tool.p: {now: true}``)."""
    return {p for p in tool.params if (ph := domain.phrases.get(f"{tool.name}.{p}")) and ph.now}


def today_of(domain: Domain, state: State) -> str | None:
    """Today's date for a task on ``state``: the day after the latest date stored in any
    field a ``now`` parameter is written to (an order placed today is placed after every
    order on file), or None if the domain has no ``now`` parameter. One value per state,
    so every request of a task shares it and no date runs backwards.

    A state that carries its today (``State.today``; graphgen.today) has that one, and a
    domain that reads ``today()`` always has one: what the instructions call today is
    what the tools compute with."""
    if state.today is not None or uses_today(domain):
        return today_of_state(state)
    fields: set[tuple[str, str]] = set()
    for tool in domain.tools.values():
        nows = now_params(domain, tool)
        for stmt in tool.effects if nows else ():
            node = stmt.effect
            match node:
                case ir.Create():
                    fields |= {
                        (node.entity, f)
                        for f, v in node.values
                        if isinstance(v, ir.Var) and v.name in nows
                    }
                case ir.Assign():
                    if isinstance(node.value, ir.Var) and node.value.name in nows:
                        fields.add((node.entity, node.field))
                case ir.Delete() | ir.ListEdit():
                    pass
                case _:
                    assert_never(node)
    if not any(now_params(domain, t) for t in domain.tools.values()):
        return None
    dates = [str(row[f]) for e, f in sorted(fields) for row in state.tables[e].values() if row[f]]
    latest = max(dates, default="2026-01-01")
    return (dt.date.fromisoformat(latest) + dt.timedelta(days=1)).isoformat()


def intent_text(
    domain: Domain,
    tool: ToolDef,
    args: dict[str, Any],
    rng: random.Random,
    targets: dict[tuple[str, str], Target],
    created: dict[str, str],
    principal: tuple[str, str] | None = None,
    state: State | None = None,
) -> str:
    """One intent sentence: a template of ``tool`` whose guard holds on ``state`` (the
    state the request is made in), with its arguments spoken.

    The user the instruction speaks for (``principal``) is implied ("me"), never spelled.
    A parameter that is today's date is not said here (the opener states it once).
    Raises :class:`NoTrueIntent` when the tool has templates but none is true.
    """
    spoken: dict[str, str] = {}
    implied: set[str] = set(now_params(domain, tool))
    for name, v in args.items():
        s = param_sort(tool.params[name])
        if principal is not None and s.kind == "key" and (s.name, v) == principal:
            spoken[name] = "me"
            implied.add(name)
            continue
        spoken[name] = speak(domain, s, v, targets, created, f"{tool.name}.{name}")
        if _free_text(tool.params[name], s, v):
            # Quoted, so where the text ends is plain: "add the note: High floor." left
            # agents unsure whether the full stop belongs to the note.
            spoken[name] = f'"{spoken[name]}"'
    if tool.intents:
        usable = _true_intents(domain, tool, args, state) if state is not None else []
        if state is None:
            usable = [it.text for it in tool.intents if it.when is None]
        # A template that names a left-out argument would have to say an absent value.
        usable = [t for t in usable if not _names_absent(t, tool, args)]
        if not usable:
            raise NoTrueIntent(tool.name)
        tmpl = rng.choice(usable)
        text = _fill(tmpl, spoken, args)
        text = text[:1].upper() + text[1:]  # "{order_id} isn't ..." starts a sentence
        missing = [
            n for n in tool.params if "{" + n + "}" not in tmpl and "{" + n + ":" not in tmpl
        ]
    else:
        text = f"Please {tool.name.replace('_', ' ')}"
        missing = list(tool.params)
    # Arguments a template does not mention are stated, so nothing is left implicit.
    extra = [
        n
        for n in missing
        if n in spoken and n not in implied and not stated(text.lower(), spoken[n].lower())
    ]
    if extra:
        text = text.rstrip()
        text = text if text[-1:] in ".?!" else text + "."
        for n in extra:
            if param_sort(tool.params[n]).kind == "key":
                text += f" This is about {spoken[n]}."
            else:
                text += f" The {humanize(n)} is {spoken[n]}."
    return text


# Vocabularies of values that read as part of a sentence (a street, a person's name, a
# product): said as they are, even when several words long.
_INLINE_VOCABS = KNOWN_VOCABS - {"phrase", "title", "word"}


def _free_text(p: ParamDef, s: Sort, v: Any) -> bool:
    """Is ``v`` free text the user dictates (a note, a reason: three words or more, not
    an id, an enum member, an address or a name)? Such a value is quoted when spoken."""
    if not isinstance(v, str) or s.kind in ("key", "enum") or len(v.split()) < 3:
        return False
    return p.vocab is None or canonical_vocab(p.vocab) not in _INLINE_VOCABS


def speak(
    domain: Domain,
    s: Sort,
    v: Any,
    targets: dict[tuple[str, str], Target],
    created: dict[str, str],
    where: str = "",
) -> str:
    """How a user says value ``v`` of sort ``s`` (``where``: the ``tool.param`` or
    ``Entity.field`` it fills, for its words)."""
    if isinstance(v, bool):
        return words(domain, where, v)
    if s.kind == "key":
        if v in created:
            return created[v]
        t = targets.get((s.name, v))
        if t is not None:
            return t.phrase
        if isinstance(v, int) and not isinstance(v, bool):
            return f"{humanize(s.name)} {v}"  # an int id alone ("close 5") names nothing
    if s.kind == "enum":
        return words(domain, where, v)
    if s.kind == "field" and isinstance(v, str):
        return words(domain, s.name, v)
    return str(v)


def _identity(domain: Domain, principal: str, given: list[tuple[str, Any]]) -> str:
    """One sentence saying who the user is from the principal's given fields: "I'm
    Beatriz Park and my zip is 19908.", never one clause per field."""
    vals = dict(given)
    named = ""
    if "first_name" in vals and "last_name" in vals:
        named = f"{vals.pop('first_name')} {vals.pop('last_name')}"
    elif "name" in vals:
        named = str(vals.pop("name"))
    rest = [f"my {humanize(f)} is {words(domain, f'{principal}.{f}', v)}" for f, v in vals.items()]
    listed = ", ".join(rest[:-1]) + " and " + rest[-1] if len(rest) > 1 else "".join(rest)
    if named:
        return f"I'm {named}" + (f"; {listed}" if listed else "") + "."
    return listed + "."


def unsaid_givens(
    domain: Domain,
    givens: list[Given],
    used: str,
    principal: str | None = None,
    today: Any = None,
) -> tuple[list[tuple[str, Any]], list[Given]]:
    """The givens the requests (``used``) do not state: the principal's own fields, as
    (field, value), and every other one, which only an "It's about ..." clause could say.

    >>> from graphgen.domains import load_builtin
    >>> d = load_builtin("retail")
    >>> gs = [Given(sort="field:User.email", value="a@b.c"),
    ...       Given(sort="field:Item.color", value="teal")]
    >>> unsaid_givens(d, gs, "Please order the Soccer Ball item.", "User")
    ([('email', 'a@b.c')], [Given(sort='field:Item.color', value='teal')])
    """
    mine: list[tuple[str, Any]] = []
    other: list[Given] = []
    for g in givens:
        if g.value == today or stated(used, g.value, spoken_forms(domain, g.sort, g.value)):
            continue
        sort = parse_sort(g.sort)
        ent, _, fld = sort.name.partition(".")
        if sort.kind == "field" and ent == principal:
            mine.append((fld, g.value))
        else:
            other.append(g)
    return mine, other


def opener(
    domain: Domain,
    givens: list[Given],
    rng: random.Random,
    used: str,
    principal: str | None = None,
    today: Any = None,
) -> str:
    """Identify the user and state the givens not already said in the intents.

    Today's date (``today``), when a request needs it, comes first and once; then one
    identity sentence; then what the requests are about (:func:`unsaid_givens`; the
    generator does not build tasks that need this clause, as it reads as if it named
    the target)."""
    head = [f"Today is {today}."] if today is not None else []
    mine, other = unsaid_givens(domain, givens, used, principal, today)
    about: list[str] = []
    loose: dict[str, list[list[tuple[str, Any]]]] = {}  # entity -> rows of unsaid givens
    for g in other:
        sort = parse_sort(g.sort)
        if sort.kind == "field":
            ent, _, fld = sort.name.partition(".")
            # a second value of the same field is another row ("the airport in
            # Austin and the airport in Orlando", not "in Austin and in Orlando")
            groups = loose.setdefault(ent, [[]])
            if any(f == fld for f, _ in groups[-1]):
                groups.append([])
            groups[-1].append((fld, g.value))
        else:
            about.append(f"{humanize(sort.name)} {g.value}")
    about[:0] = [given_phrase(domain, e, vals) for e, gs in loose.items() for vals in gs]
    parts = list(head)
    if mine and principal is not None:
        parts.append(_identity(domain, principal, mine))
    if about:
        listed = ", ".join(about[:-1]) + " and " + about[-1] if len(about) > 1 else about[0]
        parts.append(f"It's about {listed}.")
    if not parts:
        return rng.choice(_OPENERS).strip()
    text = " ".join(p[:1].upper() + p[1:] for p in parts)
    return rng.choice(_OPENERS) + text


# Words that state an order between requests ("First, … Then …", "Once that's done");
# "first" only as "first," or "first of all", so "my first name" states none.
_ORDER = re.compile(r"\b(?:then|after|afterwards|once|before|next|first(?=,| of all))\b", re.I)


def states_order(text: str) -> bool:
    """Does ``text`` state an order between requests?

    >>> states_order("First, cancel my order. Then refund it.")
    True
    >>> states_order("Cancel my order. Also, update my address.")
    False
    >>> states_order("My first name is Ann. Also, update my address.")
    False
    """
    return _ORDER.search(text) is not None


def join_intents(sentences: list[str], rng: random.Random, depends: Sequence[bool] = ()) -> str:
    """Join request sentences. ``depends[i]`` says request ``i`` must come after the
    earlier ones (it needs an earlier one's result, or the requests only work out in
    this order): only then is an order stated ("First, ... Then ..."); requests in any
    order are joined with "Also"."""
    ordered = any(depends)
    out = []
    for i, s in enumerate(sentences):
        s = s.strip()
        keep = s[:2] in ("I ", "I'") or s[1:2].isupper()
        low = s if keep else s[:1].lower() + s[1:]
        if i == 0:
            s = "First, " + low if ordered and len(sentences) > 1 else s
        else:
            dep = i < len(depends) and depends[i]
            s = rng.choice(_THEN if dep else _ALSO) + low
        out.append(s if s.endswith((".", "?", "!")) else s + ".")
    return " ".join(out)
