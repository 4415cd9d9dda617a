"""Values for free parameters (amounts, new addresses, dates) that a user states."""

from __future__ import annotations

import random
from dataclasses import replace
from decimal import Decimal
from typing import Any

from graphgen.decimals import from_units, units
from graphgen.domain import Domain, FieldDef, ParamDef, ToolDef
from graphgen.errors import GraphgenError
from graphgen.state import State
from graphgen.types import BOOL, DATE, INT, STR, DecT, OptT
from graphgen.vocabulary import load_vocab, resolve_vocab


def free_value(domain: Domain, tool: ToolDef, p: ParamDef, rng: random.Random, st: State) -> Any:
    """A realistic value for free parameter ``p`` of ``tool`` (seeded by ``rng``); for a
    ``T | None`` parameter a value of ``T`` (None is never said)."""
    if isinstance(p.ty, OptT):
        p = replace(p, ty=p.ty.inner)
    if isinstance(p.ty, DecT):
        # an everyday amount at the parameter's scale, in its JSON form ("12.50")
        lo_d = Decimal(p.min if p.min is not None else 1)
        hi_d = min(Decimal(p.max if p.max is not None else lo_d + 500), lo_d + 500)
        n = rng.randint(units(lo_d, p.ty.scale), units(hi_d, p.ty.scale))
        return from_units(n, p.ty.scale)
    if p.ty == INT:
        lo = int(p.min) if p.min is not None else 1
        hi = int(p.max) if p.max is not None else lo + 500
        hi = min(hi, lo + 500)  # users ask for everyday amounts
        return rng.randint(lo, hi)
    if p.ty == BOOL:
        return rng.random() < 0.5
    if p.ty == DATE:
        return f"2026-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"
    if p.ty == STR:
        vocab = resolve_vocab(tool.name, FieldDef(p.name, STR, vocab=p.vocab))
        if vocab == "zip":
            return f"{rng.randint(10000, 99999)}"
        if vocab in ("street", "address"):
            return f"{rng.randint(1, 999)} {rng.choice(load_vocab('streets'))}"
        for name in (_FILES.get(vocab, vocab), vocab + "s", "words"):
            try:
                return rng.choice(load_vocab(name))
            except GraphgenError:  # no such vocabulary file: try the next guess
                continue
    raise TypeError(f"no free value for {p.ty.show()}")


_FILES = {
    "city": "cities",
    "person_name": "first_names",
    "first_name": "first_names",
    "last_name": "last_names",
    "product": "products",
    "color": "colors",
    "size_label": "size_labels",
    "word": "words",
}
