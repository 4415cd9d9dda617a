"""A procedural domain synthesizer: random but plausible, valid domains from a seed.

:func:`synth_spec` draws a domain as plain data (what a YAML file holds) and
:func:`synth_yaml` writes it as text; the same seed and options give the same bytes.
A synthesized domain has

* an *owner* entity (a customer, member, patient, ...) that users name by a givable,
  unique email, with a bounded numeric resource (credits, points, ...);
* ``entities - 1`` *resource* entities (bookings, tickets, devices, ...), each
  referencing its owner, named by a givable title, with a givable category enum, a
  status enum that a life cycle moves between, and a bounded amount;
* a quota: an owner holds at most a few rows of each resource;
* search tools (owner by email, an owner's resources, a resource by title), read tools
  that show a row, and write tools whose preconditions match what they do: each life
  cycle step requires the status it leaves, amounts stay inside their bounds, opening
  a resource costs the owner a unit of the resource, and every write on a resource
  checks that it belongs to the owner named in the call;
* intents in the user's voice for every tool, phrases, and a policy stating each rule.

It is the stress test of the whole pipeline (check, generation, proofs, compilation,
interpreter against compiled code): ``tests/test_synth.py`` and
``benchmarks/bench_synth.py`` drive synthesized domains through every stage.

>>> a = synth_yaml(7)
>>> a == synth_yaml(7), a == synth_yaml(8)
(True, False)
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

import yaml

from graphgen.errors import GraphgenError
from graphgen.vocabulary import indefinite_article

__all__ = ["SynthError", "SynthOptions", "synth_spec", "synth_yaml"]


class SynthError(GraphgenError):
    """Options the synthesizer cannot honour."""


@dataclass(frozen=True)
class SynthOptions:
    """What to synthesize.

    ``entities`` counts the owner and the resources (2 to 6). ``tools`` is an upper
    bound on the number of tools: the search and read tools are always kept (every
    entity must be findable), the writes are trimmed to fit, at least one per resource.
    None keeps them all.
    """

    entities: int = 3
    tools: int | None = None
    rows: int = 8
    """Rows per resource table in generated states (the owner table has ``rows // 2``)."""

    def __post_init__(self) -> None:
        if not 2 <= self.entities <= len(_RESOURCES):
            raise SynthError(f"entities must be from 2 to {len(_RESOURCES)}, not {self.entities}")
        if not 4 <= self.rows <= 40:
            raise SynthError(f"rows must be from 4 to 40, not {self.rows}")
        if self.tools is not None and self.tools < 1:
            raise SynthError(f"tools must be at least 1, not {self.tools}")


# ------------------------------------------------------------------ vocabulary

# (entity name, plural word) of owners: people a service has as users.
_OWNERS = [
    ("Customer", "customers"),
    ("Member", "members"),
    ("Patient", "patients"),
    ("Student", "students"),
    ("Tenant", "tenants"),
    ("Subscriber", "subscribers"),
    ("Client", "clients"),
    ("Guest", "guests"),
    ("Driver", "drivers"),
    ("Traveler", "travelers"),
]

# A bounded resource an owner spends to open a resource row: (field, unit word). The
# names are ones the state generator knows as depletable, so some owners have none left
# (and opening can be refused).
_CURRENCIES = [
    ("credit_balance", "credit"),
    ("points", "point"),
    ("units", "unit"),
    ("miles", "mile"),
]

# Things a service keeps for its users.
_RESOURCES = [
    "Booking",
    "Ticket",
    "Device",
    "Claim",
    "Shipment",
    "Loan",
    "Project",
    "Appointment",
    "Subscription",
    "Vehicle",
    "Order",
    "Request",
]

# Amount fields: (field, bounds, how it is said).
_AMOUNTS = [
    ("quantity", (1, 20), "quantity"),
    ("priority", (1, 5), "priority"),
    ("budget", (10, 900), "budget"),
    ("duration", (1, 30), "duration in days"),
    ("seats", (1, 12), "number of seats"),
    ("weight", (1, 50), "weight in kilograms"),
]

# Categories users say ("my billing ticket"): (enum name suffix, members).
_CATEGORIES = [
    ("Kind", ["standard", "express", "premium", "basic"]),
    ("Channel", ["web", "phone", "email", "store", "partner"]),
    ("Region", ["north", "south", "east", "west", "central"]),
    ("Color", ["red", "blue", "green", "black", "white"]),
    ("Size", ["small", "medium", "large", "xlarge"]),
    ("Topic", ["billing", "technical", "account", "delivery", "other"]),
]

# Life cycles: (statuses, first status of a new row, steps (verb, from statuses, to),
# the statuses an amount may change in).
_Step = tuple[str, tuple[str, ...], str]
_LIFECYCLES: list[tuple[list[str], str, list[_Step], tuple[str, ...]]] = [
    (
        ["pending", "active", "suspended", "cancelled"],
        "pending",
        [
            ("activate", ("pending",), "active"),
            ("suspend", ("active",), "suspended"),
            ("resume", ("suspended",), "active"),
            ("cancel", ("pending", "suspended"), "cancelled"),
        ],
        ("pending", "active"),
    ),
    (
        ["draft", "submitted", "approved", "rejected", "archived"],
        "draft",
        [
            ("submit", ("draft",), "submitted"),
            ("approve", ("submitted",), "approved"),
            ("reject", ("submitted",), "rejected"),
            ("archive", ("approved", "rejected"), "archived"),
        ],
        ("draft",),
    ),
    (
        ["requested", "confirmed", "completed", "cancelled", "missed"],
        "requested",
        [
            ("confirm", ("requested",), "confirmed"),
            ("complete", ("confirmed",), "completed"),
            ("cancel", ("requested", "confirmed"), "cancelled"),
            ("mark_missed", ("confirmed",), "missed"),
        ],
        ("requested", "confirmed"),
    ),
    (
        ["open", "in_progress", "on_hold", "done", "dropped"],
        "open",
        [
            ("start", ("open",), "in_progress"),
            ("pause", ("in_progress",), "on_hold"),
            ("restart", ("on_hold",), "in_progress"),
            ("finish", ("in_progress",), "done"),
            ("drop", ("open", "on_hold"), "dropped"),
        ],
        ("open", "in_progress", "on_hold"),
    ),
]

# How a user asks for a life-cycle step; {r} is the resource's placeholder.
_ASK = [
    "Please {verb} {r}.",
    "Could you {verb} {r} for me?",
    "I'd like you to {verb} {r}.",
]


def _snake(name: str) -> str:
    return "".join("_" + c.lower() if c.isupper() else c for c in name).lstrip("_")


def _words(name: str) -> str:
    return name.replace("_", " ")


def _a(phrase: str) -> str:
    """``phrase`` with its indefinite article: "an active", "a pending"."""
    return f"{indefinite_article(phrase)} {phrase}"


# ------------------------------------------------------------------ the domain


def synth_spec(seed: int, options: SynthOptions | None = None) -> dict[str, Any]:
    """The domain of ``seed`` as plain data (the mapping a domain YAML file holds).

    >>> spec = synth_spec(3, SynthOptions(entities=2))
    >>> len(spec["entities"]), spec["name"]
    (2, 'synth_3')
    """
    opts = options or SynthOptions()
    rng = random.Random(f"graphgen-synth:{seed}")
    owner, owners = rng.choice(_OWNERS)
    o = _snake(owner)
    okey = f"{o}_id"
    currency, unit = rng.choice(_CURRENCIES)
    cap = rng.choice([5, 10, 20, 50])
    resources = rng.sample(_RESOURCES, opts.entities - 1)

    enums: dict[str, list[str]] = {}
    entities: dict[str, Any] = {
        owner: {
            "description": f"A registered {o.replace('_', ' ')} of the service.",
            "key": {"name": okey, "prefix": owner[0], "width": 3},
            "display": "email",
            "size": max(2, opts.rows // 2),
            "fields": {
                "email": {"type": "str", "unique": True, "givable": True, "vocab": "email"},
                "name": {"type": "str", "vocab": "person_name"},
                currency: {
                    "type": "int",
                    "min": 0,
                    "max": cap,
                    "description": f"{_words(currency).capitalize()} left to spend.",
                },
            },
        }
    }
    phrases: dict[str, Any] = {}
    tools: dict[str, Any] = {}
    writes: dict[str, list[str]] = {}  # resource -> its write tools, in order
    policy = [
        f"You help the {owners} of a service. Follow these rules.",
        f"- Identify the {_words(o)} by the email address they give before looking at or "
        f"changing anything, and act only on their own records.",
        f"- A {_words(o)} holds from 0 to {cap} {unit}s.",
    ]

    tools[f"find_{o}_by_email"] = {
        "description": f"Find the id of the {_words(o)} with this email address.",
        "params": {"email": {"type": f"{owner}.email", "description": "The email address."}},
        "returns": f"[x.{okey} for x in {owner} if x.email == email]",
        "intents": [rng.choice(["Hi, my email is {email}.", "My email address is {email}."])],
    }
    tools[f"get_{o}"] = {
        "description": f"Show a {_words(o)}'s name, email and {_words(currency)}.",
        "params": {okey: {"type": owner, "description": f"The {_words(o)} id."}},
        "returns": f"{owner}[{okey}]",
        "intents": [f"How many {unit}s do I have left?"],
    }
    top_up = f"add_{unit}s"
    tools[top_up] = {
        "description": f"Add {unit}s to a {_words(o)}'s {_words(currency)} (at most {cap}).",
        "params": {
            okey: {"type": owner, "description": f"The {_words(o)} id."},
            "amount": {"type": "int", "min": 1, "max": cap, "description": f"{unit}s to add."},
        },
        "requires": [
            {
                "check": f"{owner}[{okey}].{currency} + amount <= {cap}",
                "message": f"{_words(o)} {{{okey}}} would hold more than {cap} {unit}s",
            }
        ],
        "effects": [f"{owner}[{okey}].{currency} += amount"],
        "returns": f"{owner}[{okey}]",
        "intents": [f"Please add {{amount}} {{amount:{unit}}} to my balance."],
    }

    # Distinct category kinds while they last (more resources than kinds reuse some).
    categories = rng.sample(_CATEGORIES, min(len(resources), len(_CATEGORIES)))
    categories += [rng.choice(_CATEGORIES) for _ in resources[len(categories) :]]
    for res, (cat_suffix, cat_members) in zip(resources, categories, strict=True):
        r = _snake(res)
        rkey = f"{r}_id"
        statuses, first, steps, adjustable = rng.choice(_LIFECYCLES)
        status_enum = f"{res}Status"
        cat_enum = f"{res}{cat_suffix}"
        enums[status_enum] = list(statuses)
        members = rng.sample(cat_members, rng.randint(3, len(cat_members)))
        enums[cat_enum] = members
        cat_field = _snake(cat_suffix)
        amount, (lo, hi), amount_words = rng.choice(_AMOUNTS)
        cost = rng.choice([1, 1, 2])
        quota = rng.choice([2, 3])
        entities[res] = {
            "description": f"A {_words(r)} of one {_words(o)}.",
            "key": {"name": rkey, "prefix": res[:2].upper(), "width": 4},
            "display": "title",
            "size": opts.rows,
            "fields": {
                okey: {"type": owner, "description": f"The {_words(o)} it belongs to."},
                "title": {"type": "str", "givable": True, "vocab": "title"},
                cat_field: {"enum": cat_enum, "givable": True},
                "status": {"enum": status_enum},
                amount: {"type": "int", "min": lo, "max": hi},
            },
        }
        phrases[f"{res}.status"] = {"form": "{value}", "before": True}
        phrases[f"{res}.{cat_field}"] = {"form": "{value}", "before": True}
        phrases[f"{res}.title"] = "called {value}"
        phrases[f"{res}.{amount}"] = {"name": amount_words}

        owned = {
            "check": f"{res}[{rkey}].{okey} == {okey}",
            "message": f"{_words(r)} {{{rkey}}} does not belong to {_words(o)} {{{okey}}}",
        }
        two = {
            okey: {"type": owner, "description": f"The {_words(o)} id."},
            rkey: {"type": res, "description": f"The {_words(r)} id."},
        }
        tools[f"list_{r}s"] = {
            "description": f"List the ids of a {_words(o)}'s {_words(r)}s.",
            "params": {okey: two[okey]},
            "returns": f"[x.{rkey} for x in {res} if x.{okey} == {okey}]",
            "intents": [f"Which {_words(r)}s do I have?"],
        }
        tools[f"find_{r}_by_title"] = {
            "description": f"Find a {_words(o)}'s {_words(r)}s with this exact title.",
            "params": {
                okey: two[okey],
                "title": {"type": f"{res}.title", "description": "The title."},
            },
            "returns": f"[x.{rkey} for x in {res} if x.{okey} == {okey} and x.title == title]",
            "intents": [f"It's about my {_words(r)} called {{title}}."],
        }
        tools[f"get_{r}"] = {
            "description": f"Show a {_words(r)} ({_words(o)}, title, {cat_field}, status, "
            f"{amount}).",
            "params": {rkey: two[rkey]},
            "returns": f"{res}[{rkey}]",
            "intents": [f"What is the status of {{{rkey}}}?"],
        }
        mine: list[str] = []
        open_tool = f"open_{r}"
        tools[open_tool] = {
            "description": f"Open a new {_words(r)} for a {_words(o)}; costs {cost} "
            f"{unit if cost == 1 else unit + 's'}.",
            "params": {
                okey: two[okey],
                "title": {"type": "str", "vocab": "title", "description": "Its title."},
                cat_field: {"type": cat_enum, "description": f"Its {_words(cat_field)}."},
                amount: {"type": "int", "min": lo, "max": hi, "description": amount_words},
            },
            "requires": [
                {
                    "check": f"{owner}[{okey}].{currency} >= {cost}",
                    "message": f"{_words(o)} {{{okey}}} has fewer than {cost} "
                    f"{unit if cost == 1 else unit + 's'} left",
                },
                {
                    "check": f"count(x for x in {res} if x.{okey} == {okey}) < {quota}",
                    "message": f"{_words(o)} {{{okey}}} already has {quota} {_words(r)}s",
                },
            ],
            "effects": [
                f"{owner}[{okey}].{currency} -= {cost}",
                f"x = {res}.create({okey}={okey}, title=title, {cat_field}={cat_field}, "
                f"status='{first}', {amount}={amount})",
            ],
            "returns": "x",
            "intents": [
                f"Please open a {{{cat_field}}} {_words(r)} called {{title}} with "
                f"{amount_words} {{{amount}}}."
            ],
        }
        mine.append(open_tool)
        policy.append(
            f"- Opening a {_words(r)} costs {cost} {unit if cost == 1 else unit + 's'}, and a "
            f"{_words(o)} has at most {quota} {_words(r)}s; a new {_words(r)} is "
            f"{_words(first)}."
        )
        for verb, sources, target in steps:
            name = f"{verb}_{r}"
            if len(sources) == 1:
                check = f"{res}[{rkey}].status == '{sources[0]}'"
                said = _words(sources[0])
            else:
                check = f"{res}[{rkey}].status in [{', '.join(repr(s) for s in sources)}]"
                said = " or ".join(_words(s) for s in sources)
            tools[name] = {
                "description": f"{_words(verb).capitalize()} {_a(said)} {_words(r)}: it "
                f"becomes {_words(target)}.",
                "params": dict(two),
                "requires": [
                    owned,
                    {"check": check, "message": f"{_words(r)} {{{rkey}}} is not {said}"},
                ],
                "effects": [f"{res}[{rkey}].status = '{target}'"],
                "returns": f"{res}[{rkey}]",
                "intents": [rng.choice(_ASK).format(verb=_words(verb), r=f"{{{rkey}}}")],
            }
            mine.append(name)
            policy.append(f"- Only {_a(said)} {_words(r)} can become {_words(target)} ({verb}).")
        adjustable_said = " or ".join(_words(s) for s in adjustable)
        in_adjustable = (
            f"{res}[{rkey}].status == '{adjustable[0]}'"
            if len(adjustable) == 1
            else f"{res}[{rkey}].status in [{', '.join(repr(s) for s in adjustable)}]"
        )
        step = {"type": "int", "min": 1, "max": hi - lo, "description": "By how much."}
        for direction, op, bound_check, bound_word in (
            ("increase", "+=", f"{res}[{rkey}].{amount} + by <= {hi}", f"above {hi}"),
            ("decrease", "-=", f"{res}[{rkey}].{amount} - by >= {lo}", f"below {lo}"),
        ):
            name = f"{direction}_{r}_{amount}"
            tools[name] = {
                "description": f"{direction.capitalize()} the {amount_words} of "
                f"{_a(adjustable_said)} {_words(r)}.",
                "params": {**two, "by": step},
                "requires": [
                    owned,
                    {
                        "check": in_adjustable,
                        "message": f"{_words(r)} {{{rkey}}} can no longer be changed",
                    },
                    {
                        "check": bound_check,
                        "message": f"the {amount_words} of {{{rkey}}} cannot go {bound_word}",
                    },
                ],
                "effects": [f"{res}[{rkey}].{amount} {op} by"],
                "returns": f"{res}[{rkey}]",
                "intents": [f"Please {direction} the {amount_words} of {{{rkey}}} by {{by}}."],
            }
            mine.append(name)
        policy.append(
            f"- The {amount_words} of a {_words(r)} stays from {lo} to {hi} and can change "
            f"only while it is {adjustable_said}."
        )
        writes[res] = mine

    if opts.tools is not None:
        _trim(tools, writes, top_up, opts.tools, rng)
    policy.append("- If a rule forbids the request, say which rule and change nothing.")
    return {
        "name": f"synth_{seed}",
        "description": f"A synthesized service (seed {seed}): {owners} and their "
        + ", ".join(f"{_words(_snake(r))}s" for r in resources)
        + ".",
        "policy": "\n".join(policy) + "\n",
        "enums": enums,
        "entities": entities,
        "phrases": phrases,
        "tools": tools,
    }


def _trim(
    tools: dict[str, Any],
    writes: dict[str, list[str]],
    top_up: str,
    limit: int,
    rng: random.Random,
) -> None:
    """Drop write tools (never a resource's last one) until at most ``limit`` tools are
    left or only the tools every domain keeps remain."""
    droppable = [top_up] + [t for ws in writes.values() for t in ws[1:]]
    rng.shuffle(droppable)
    while len(tools) > limit and droppable:
        del tools[droppable.pop()]


class _Dumper(yaml.SafeDumper):
    """Writes a mapping used twice (a shared parameter) out again: no YAML aliases."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def _text(dumper: yaml.SafeDumper, data: str) -> yaml.ScalarNode:
    """A text of several lines (the policy) as a literal block, as a person writes it."""
    style = "|" if "\n" in data else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", data, style=style)


_Dumper.add_representer(str, _text)


def synth_yaml(seed: int, options: SynthOptions | None = None) -> str:
    """The domain of ``seed`` as YAML text, with a comment saying how it was made."""
    opts = options or SynthOptions()
    head = (
        f"# Synthesized by graphgen synth --seed {seed} --entities {opts.entities}"
        + (f" --tools {opts.tools}" if opts.tools is not None else "")
        + f" --rows {opts.rows}\n"
    )
    body = yaml.dump(
        synth_spec(seed, opts), Dumper=_Dumper, sort_keys=False, width=100, allow_unicode=True
    )
    return head + body
