"""The compiled, type-checked domain that every stage works from.

Built from a :class:`graphgen.spec.DomainSpec` by :func:`graphgen.load.elaborate_domain`.
Holds parsed IR, never raw strings to be parsed again.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from functools import cached_property, wraps
from typing import Any, TypeVar

from graphgen import ir
from graphgen.types import EnumT, ListT, OptT, RefT, Ty

Key = str | int  # a row id at run time: int for ``type: int`` keys, else str


@dataclass(frozen=True)
class FieldDef:
    name: str
    ty: Ty
    unique: bool = False
    givable: bool = False
    min: int | Decimal | None = None  # a Decimal for a decimal field or parameter
    max: int | Decimal | None = None
    vocab: str | None = None
    description: str = ""


@dataclass(frozen=True)
class Derive:
    """``field: expr`` of a ``generate.derive`` block: the field's value in generated
    states, an expression over the row variable ``x``."""

    field: str
    expr: ir.Expr
    source: str


@dataclass(frozen=True)
class Invariant:
    """An entry of an entity's ``invariants:`` list: a rule of the policy about every row
    (``expr`` over the row variable ``x``), true in every state an agent can be in."""

    name: str
    expr: ir.Expr
    source: str
    policy: str = ""


@dataclass(frozen=True)
class Lemma:
    """An entry of an entity's ``lemmas:`` list: on every row ``x`` that existed
    initially, in every reachable state, ``value <= potential`` and ``potential`` is at
    most its initial value. Proven per task, for the states its chains of up to ``k``
    calls reach, before use (:mod:`graphgen.verify.lemmas`)."""

    name: str
    value: ir.Expr
    potential: ir.Expr
    value_source: str
    potential_source: str
    note: str = ""


@dataclass(frozen=True)
class EntityDef:
    name: str
    key: str
    prefix: str
    width: int
    key_givable: bool
    fields: dict[str, FieldDef]
    description: str = ""
    size: int = 8
    display: str | None = None
    # Rules for generated states only (``generate:`` in the spec); tools ignore them.
    derive: tuple[Derive, ...] = ()
    require: tuple[ir.Check, ...] = ()
    # The policy's rules about rows: generated states obey them, accepted goals keep them.
    invariants: tuple[Invariant, ...] = ()
    # Bounds the proofs prove per task, then use to settle refusals.
    lemmas: tuple[Lemma, ...] = ()
    # How ids are made: "counter" (prefix + padded number), "int" (1, 2, ...) or "data"
    # (strings given by the data; a create names its key).
    key_kind: str = "counter"
    key_vocab: str | None = None

    @property
    def int_key(self) -> bool:
        """Ids of this table are ints (``key: {type: int}``)."""
        return self.key_kind == "int"

    @property
    def data_key(self) -> bool:
        """Ids of this table are strings given by the data (``key: {type: str}``)."""
        return self.key_kind == "data"

    def field_type(self, name: str) -> Ty | None:
        """Type of ``name``; the key is a field of type ``RefT(self.name)``."""
        if name == self.key:
            return RefT(self.name)
        f = self.fields.get(name)
        return f.ty if f else None

    def make_id(self, n: int) -> Key:
        """The deterministic id of the ``n``-th row ever created in this table (the
        number itself for int keys)."""
        if self.key_kind == "int":
            return n
        if self.key_kind == "data":  # a readable stand-in; generated states draw real ones
            return f"{self.name.lower()}-{n}"
        return f"{self.prefix}{n:0{self.width}d}"


@dataclass(frozen=True)
class ParamDef:
    name: str
    ty: Ty
    source: tuple[str, str] | None = None  # (entity, field) for ``Entity.field`` params
    description: str = ""
    min: int | Decimal | None = None  # a Decimal for a decimal field or parameter
    max: int | Decimal | None = None
    vocab: str | None = None
    # ``default:`` in the spec: the parameter may be left out and then takes ``default``.
    has_default: bool = False
    default: ir.Scalar = None


@dataclass(frozen=True)
class Case:
    """One outcome of a tool: when ``when`` holds (None: always) on the state after the
    ``requires`` checks, ``effects`` apply and ``returns`` is the result. A soft failure
    (``fails``) has no effects and counts as a failed call for tasks and proofs."""

    when: ir.Expr | None
    when_source: str | None
    fails: bool
    effects: tuple[ir.Stmt, ...]
    returns: ir.Expr | None
    returns_source: str | None


@dataclass(frozen=True)
class Intent:
    """An instruction template and its guard (``when``: a bool over the tool's
    parameters that must hold on the state for the template's claims to be true)."""

    text: str
    when: ir.Expr | None = None
    when_source: str | None = None


@dataclass(frozen=True)
class Phrase:
    """How a field or a parameter is said (see :class:`graphgen.spec.PhraseSpec`)."""

    form: str | None = None
    before: bool = False
    words: dict[str, str] = field(default_factory=dict)
    noun: bool = False
    relation: str | None = None
    name: str | None = None
    now: bool = False


@dataclass(frozen=True)
class ToolDef:
    name: str
    description: str
    params: dict[str, ParamDef]
    requires: tuple[ir.Check, ...]
    effects: tuple[ir.Stmt, ...]
    returns: ir.Expr | None
    returns_source: str | None
    intents: tuple[Intent, ...]
    # ``cases:`` in the spec. When set, ``effects`` is the union of the cases' effects and
    # ``returns`` a static view (``r1 if when1 else r2 ...``) for analyses that ask what a
    # tool may write or show; running a call goes through :attr:`branches`.
    cases: tuple[Case, ...] = ()

    def full_args(self, args: Mapping[str, Any]) -> dict[str, Any]:
        """``args`` with every absent parameter that has a default set to it."""
        out = {p.name: p.default for p in self.params.values() if p.has_default}
        out.update(args)
        return out

    def given_args(self, args: Mapping[str, Any]) -> dict[str, Any]:
        """``args`` without the arguments equal to their parameter's default: how a call
        is written in tasks (an absent argument is simply left out)."""
        out: dict[str, Any] = {}
        for name, v in args.items():
            p = self.params.get(name)
            if p is None or not p.has_default or v != p.default or type(v) is not type(p.default):
                out[name] = v
        return out

    @property
    def branches(self) -> tuple[Case, ...]:
        """The cases a call picks from, in order (a tool without ``cases:`` has one)."""
        if self.cases:
            return self.cases
        return (Case(None, None, False, self.effects, self.returns, self.returns_source),)

    def expressions(self) -> list[ir.Expr]:
        """Every expression a call may evaluate: the checks, then each case's guard,
        effects and return (functions and ``let`` names are inlined into them). The
        static ``returns`` view of a tool with cases is not one of them: it omits the
        guards of a tool whose cases return nothing, and of a lone case."""
        out = [c.expr for c in self.requires]
        for case in self.branches:
            if case.when is not None:
                out.append(case.when)
            out += [x for s in case.effects for x in ir.effect_exprs(s.effect)]
            if case.returns is not None:
                out.append(case.returns)
        return out

    @property
    def soft_fails(self) -> bool:
        """Some case is a soft failure."""
        return any(c.fails for c in self.cases)

    @property
    def is_write(self) -> bool:
        """A tool writes iff it has effects: derived, never declared."""
        return bool(self.effects)

    @property
    def return_ty(self) -> Ty | None:
        return self.returns.ty if self.returns is not None else None

    @cached_property
    def uses_old(self) -> bool:
        """Some effect or the return value reads the state before the call
        (``old(...)``, or a ``let:`` name): a call then keeps a copy of that state."""
        return reads_old(self.effects, self.returns)


def reads_old(effects: Sequence[ir.Stmt], returns: ir.Expr | None) -> bool:
    """Do ``effects`` or ``returns`` (a tool's, or one case's) read the state as it was
    before the call (``old(...)``, into which ``let:`` names are lowered)?"""
    exprs = [x for s in effects for x in ir.effect_exprs(s.effect)]
    if returns is not None:
        exprs.append(returns)
    return any(isinstance(n, ir.Old) for x in exprs for n in ir.walk(x))


@dataclass
class Domain:
    """A loaded domain. ``source`` is the file it came from (for messages)."""

    name: str
    description: str
    policy: str
    entities: dict[str, EntityDef]
    tools: dict[str, ToolDef]
    enums: dict[str, EnumT] = field(default_factory=dict)
    source: str = "<domain>"
    spec_json: str = ""  # canonical JSON of the spec, for hashing
    phrases: dict[str, Phrase] = field(default_factory=dict)  # "Entity.field" / "tool.param"
    # ``today: {from, to}``: the range a generated state's today is drawn from
    today_range: tuple[str, str] | None = None
    # facts analyses derive from the spec, computed once (:func:`per_domain`)
    derived: dict[Any, Any] = field(default_factory=dict, init=False, repr=False, compare=False)

    @cached_property
    def content_hash(self) -> str:
        """sha256 of the canonical spec: tasks record it to pin the domain version."""
        return hashlib.sha256(self.spec_json.encode()).hexdigest()[:16]

    def entity_of_ref(self, t: Ty) -> str | None:
        if isinstance(t, OptT):
            t = t.inner
        if isinstance(t, RefT):
            return t.entity
        if isinstance(t, ListT) and isinstance(t.elem, RefT):
            return t.elem.entity
        return None

    @cached_property
    def int_keys(self) -> frozenset[str]:
        """The entities whose ids are ints."""
        return frozenset(e for e, d in self.entities.items() if d.int_key)

    @property
    def read_tools(self) -> list[ToolDef]:
        return [t for t in self.tools.values() if not t.is_write]

    @property
    def write_tools(self) -> list[ToolDef]:
        return [t for t in self.tools.values() if t.is_write]

    def summary(self) -> dict[str, int]:
        return {
            "entities": len(self.entities),
            "tools": len(self.tools),
            "write_tools": len(self.write_tools),
            "read_tools": len(self.read_tools),
        }


_R = TypeVar("_R")


def per_domain(fn: Callable[[Domain], _R]) -> Callable[[Domain], _R]:
    """Memoise ``fn``, a pure function of a domain's spec, on the domain itself: every
    proof asks the same questions of the same tools (what they read, the literals they
    hold), and a loaded domain does not change. The result is shared, so it must not
    be mutated (return frozen values)."""

    key = fn.__module__ + "." + fn.__qualname__  # once: the wrapper is on hot paths

    @wraps(fn)
    def cached(domain: Domain) -> _R:
        memo = domain.derived
        if key not in memo:
            memo[key] = fn(domain)
        result: _R = memo[key]
        return result

    return cached


def per_tool(fn: Callable[[Domain, ToolDef], _R]) -> Callable[[Domain, ToolDef], _R]:
    """:func:`per_domain` for a function of a domain and one of its tools (a tool not
    in the domain, such as a hand-made one in a test, is not memoised)."""

    name = fn.__module__ + "." + fn.__qualname__

    @wraps(fn)
    def cached(domain: Domain, tool: ToolDef) -> _R:
        if domain.tools.get(tool.name) is not tool:
            return fn(domain, tool)
        key = (name, tool.name)
        memo = domain.derived
        if key not in memo:
            memo[key] = fn(domain, tool)
        result: _R = memo[key]
        return result

    return cached


def canonical_json(obj: object) -> str:
    """Stable JSON: sorted keys, no whitespace variance. Used for hashes and files."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def domain_enums(domain: Domain) -> dict[str, EnumT]:
    """Every enum type the domain declares (named enums, enum fields and parameters), by
    the name its ``enum:`` knowledge sort carries."""
    types: list[Ty] = list(domain.enums.values())
    for ent in domain.entities.values():
        types += [f.ty for f in ent.fields.values()]
    for tool in domain.tools.values():
        types += [p.ty for p in tool.params.values()]
    out: dict[str, EnumT] = {}
    for t in types:
        if isinstance(t, EnumT):
            out.setdefault(t.name, t)
    return out


def domain_enum_members(domain: Domain) -> list[str]:
    """Every enum member the domain declares (fields, parameters, named enums), once each."""
    members: list[str] = []
    for t in domain_enums(domain).values():
        members += [v for v in t.values if v not in members]
    return members
