"""Instruction text from intent templates, givens and referring expressions.

No LLM: templates from the domain's ``intents`` are chosen with the task's seeded RNG and
filled in. Every given value is stated in the text; no internal id appears unless the
domain marks that id givable.
"""

from __future__ import annotations

import random
import re
import string
from typing import Any

from graphgen.domain import Domain, ToolDef
from graphgen.knowledge import Sort, param_sort, parse_sort
from graphgen.tasks.model import Given, Target
from graphgen.tasks.referring import humanize

# Each opener ends a sentence: what follows is capitalised ("Hi there. My email ...").
_OPENERS = ("Hi! ", "Hello. ", "Hi there. ", "", "Good day. ")
_LINKS = ("Then ", "After that, ", "Also, ", "Once that's done, ")


def stated(text: str, value: Any) -> bool:
    """Does ``text`` say ``value`` as a whole token? Size "S" is not stated by "Slow",
    nor 5 by "15": a substring test would let a given go unsaid. A flag is said the way
    :func:`speak` says it ("insurance: yes"), or literally."""
    if isinstance(value, bool):
        word = "yes" if value else "no"
        return (
            re.search(rf"\b{word}\b", text, re.IGNORECASE) is not None
            or re.search(rf"\b{value}\b", text) is not None
        )
    pat = rf"(?<![\w-]){re.escape(str(value))}(?![\w-])"
    return re.search(pat, text) is not None


def _fill(template: str, values: dict[str, str]) -> str:
    out = []
    for lit, fname, _spec, _conv in string.Formatter().parse(template):
        out.append(lit)
        if fname is not None:
            out.append(values[fname])
    return "".join(out)


def intent_text(
    domain: Domain,
    tool: ToolDef,
    args: dict[str, Any],
    rng: random.Random,
    targets: dict[tuple[str, str], Target],
    created: dict[str, str],
    principal: tuple[str, str] | None = None,
) -> str:
    """One intent sentence: a template of ``tool`` with its arguments spoken.

    The user the instruction speaks for (``principal``) is implied ("me"), never spelled.
    """
    spoken: dict[str, str] = {}
    implied: set[str] = set()
    for name, v in args.items():
        s = param_sort(tool.params[name])
        if principal is not None and s.kind == "key" and (s.name, v) == principal:
            spoken[name] = "me"
            implied.add(name)
            continue
        spoken[name] = speak(domain, s, v, targets, created)
    if tool.intents:
        tmpl = rng.choice(tool.intents)
        text = _fill(tmpl, spoken)
        missing = [n for n in tool.params if "{" + n + "}" not in tmpl]
    else:
        text = f"Please {tool.name.replace('_', ' ')}"
        missing = list(tool.params)
    # Arguments a template does not mention are stated, so nothing is left implicit.
    extra = [
        spoken[n] if param_sort(tool.params[n]).kind == "key" else f"{humanize(n)}: {spoken[n]}"
        for n in missing
        if n in spoken and n not in implied and not stated(text.lower(), spoken[n].lower())
    ]
    if extra:
        stop = text.rstrip()[-1:] if text.rstrip()[-1:] in ".?!" else "."
        text = text.rstrip().rstrip(".?!") + " (" + "; ".join(extra) + ")" + stop
    return text


def speak(
    domain: Domain, s: Sort, v: Any, targets: dict[tuple[str, str], Target], created: dict[str, str]
) -> str:
    """How a user says value ``v`` of sort ``s``."""
    if isinstance(v, bool):
        return "yes" if v else "no"
    if s.kind == "key":
        if v in created:
            return created[v]
        t = targets.get((s.name, v))
        if t is not None:
            return t.phrase
    return str(v)


def opener(
    domain: Domain, givens: list[Given], rng: random.Random, used: str, principal: str | None = None
) -> str:
    """Identify the user and state the givens not already said in the intents."""
    parts = []
    for g in givens:
        if stated(used, g.value):
            continue
        sort = parse_sort(g.sort)
        kind, name = sort.kind, sort.name
        if kind == "field":
            ent, _, fld = name.partition(".")
            if ent == principal:
                parts.append(f"my {humanize(fld)} is {g.value}")
            else:
                parts.append(f"the {humanize(ent)} {humanize(fld)} is {g.value}")
        elif kind == "key":
            parts.append(f"the {humanize(name)} id is {g.value}")
        else:
            parts.append(f"the {name} value is {g.value}")
    if not parts:
        return rng.choice(_OPENERS).strip()
    text = "; ".join(parts)
    return rng.choice(_OPENERS) + text[:1].upper() + text[1:] + "."


def join_intents(sentences: list[str], rng: random.Random) -> str:
    out = []
    for i, s in enumerate(sentences):
        s = s.strip()
        if i > 0:
            keep = s[:2] in ("I ", "I'") or s[1:2].isupper()
            s = rng.choice(_LINKS) + (s if keep else s[:1].lower() + s[1:])
        out.append(s if s.endswith((".", "?", "!")) else s + ".")
    return " ".join(out)
