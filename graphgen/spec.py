"""The on-disk form of a domain: pydantic models that mirror the YAML file.

A domain is ``entities`` (typed tables), ``tools`` (typed parameters, preconditions,
effects, a return value and intent templates) and a ``policy`` text. These models only
validate the *shape* of the file; :func:`graphgen.load.elaborate_domain` parses the
expressions and type-checks them against the schema.

Shorthands accepted for a field or parameter type: ``int``, ``str``, ``bool``,
``date``, an entity name (a reference to it), ``list[Entity]``, ``Entity.field`` (for
parameters: a value of that field), or a mapping with ``type`` and options.

An entity may carry a ``generate:`` block (see :class:`GenerateSpec`) with ``derive``
(fields computed from the rest of the state) and ``require`` (conditions every
generated row satisfies), over the row variable ``x``.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator


def _type_shorthand(v: Any) -> Any:
    """``int`` → ``{type: int}``; ``{enum: [a, b]}`` → ``{type: enum, values: [a, b]}``."""
    if isinstance(v, str):
        return {"type": v}
    if isinstance(v, dict) and "type" not in v and "enum" in v and isinstance(v["enum"], list):
        return {**{k: x for k, x in v.items() if k != "enum"}, "type": "enum", "values": v["enum"]}
    if isinstance(v, dict) and "type" not in v and "enum" in v:
        return {**v, "type": "enum"}
    return v


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class FieldSpec(_Strict):
    """One field of an entity."""

    type: str = Field(description="int | str | bool | date | enum | <Entity> | list[<Entity>]")
    values: list[str] | None = Field(default=None, description="members, for enums")
    enum: str | None = Field(default=None, description="name of a shared enum")
    unique: bool = False
    givable: bool = Field(
        default=False, description="a user can know this value without calling a tool"
    )
    min: int | None = None
    max: int | None = None
    vocab: str | None = Field(default=None, description="value generator hint, e.g. 'email'")
    description: str = ""

    @model_validator(mode="before")
    @classmethod
    def _shorthand(cls, v: Any) -> Any:
        return _type_shorthand(v)


class KeySpec(_Strict):
    """The key of an entity: its name, the id prefix, and whether users know ids."""

    name: str
    prefix: str = ""
    width: int = Field(default=4, ge=1, le=12, description="zero-padded digits in new ids")
    givable: bool = False


class GenerateSpec(_Strict):
    """Business rules that generated initial states obey (the ``generate:`` block).

    The schema alone cannot say that an order's total is the sum of its items' prices
    or that a cabin is not oversold. These rules say it, for the state generator only:
    tools never read them. Every expression is over the row variable ``x`` (the row
    being generated, like a comprehension variable: ``x.field``, ``x.<key>``) and may
    use everything tool expressions can (lookups, comprehensions, aggregates)::

        generate:
          derive:
            total: "sum(i.price for i in Item if i.item_id in x.items)"
            balance: "x.balance if x.kind == 'gift_card' else 0"
          require:
            - "x.business_price > x.economy_price"
            - >-
              sum(r.passengers for r in Reservation if r.flight_id == x.flight_id
              and r.cabin == 'economy' and r.status == 'booked') <= x.economy_capacity

    ``derive`` maps a field to an expression of the field's type. After every table is
    drawn, the field of each row is replaced by the expression's value. A derive may
    read the field itself: that is the randomly drawn value (so ``x.f if c else 0``
    keeps the draw where ``c`` holds). Derives may read other derived fields, also of
    other tables; they are computed in dependency order and a cycle is an error.

    ``require`` lists bool conditions every generated row must satisfy. A row that
    breaks one has the fields the failing condition reads on ``x`` (non-key, non-ref
    scalars, or the inputs of derived fields it reads) re-drawn, deterministically and
    a bounded number of times; if that cannot satisfy it, generation fails naming the
    entity, the row and the condition. A condition about several rows (capacity over
    bookings) can be stated on both sides: the generator repairs either.
    """

    derive: dict[str, str] = Field(
        default_factory=dict, description="field -> expression over the row variable x"
    )
    require: list[str] = Field(
        default_factory=list, description="bool conditions over x every generated row meets"
    )

    @field_validator("require", mode="before")
    @classmethod
    def _one_require(cls, v: Any) -> Any:
        return [v] if isinstance(v, str) else v


class EntitySpec(_Strict):
    """A table of the state. ``generate`` holds rules for generated rows only."""

    key: KeySpec
    fields: dict[str, FieldSpec] = Field(default_factory=dict)
    description: str = ""
    size: int = Field(default=8, ge=0, description="default row count in generated states")
    display: str | None = Field(
        default=None, description="field used to name a row in instructions"
    )
    generate: GenerateSpec | None = Field(
        default=None, description="derive/require rules for generated initial states"
    )

    @field_validator("key", mode="before")
    @classmethod
    def _key_shorthand(cls, v: Any) -> Any:
        return {"name": v} if isinstance(v, str) else v


class ParamSpec(_Strict):
    """One tool parameter."""

    type: str
    values: list[str] | None = None
    enum: str | None = None
    description: str = ""
    min: int | None = None
    max: int | None = None
    vocab: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _shorthand(cls, v: Any) -> Any:
        return _type_shorthand(v)  # same shorthand grammar as fields


class CheckSpec(_Strict):
    """A precondition with an optional message shown to the agent when it fails."""

    check: str
    message: str = ""

    @model_validator(mode="before")
    @classmethod
    def _shorthand(cls, v: Any) -> Any:
        return {"check": v} if isinstance(v, str) else v


class ToolSpec(_Strict):
    """A tool: typed params, ``requires`` (all must hold), ``effects``, ``returns``."""

    description: str = ""
    params: dict[str, ParamSpec] = Field(default_factory=dict)
    requires: list[CheckSpec] = Field(default_factory=list)
    effects: list[str] = Field(default_factory=list)
    returns: str | None = None
    intents: list[str] = Field(
        default_factory=list,
        description="instruction templates; {param} placeholders are filled by tasks",
    )

    @field_validator("requires", mode="before")
    @classmethod
    def _one_check(cls, v: Any) -> Any:
        return [v] if isinstance(v, str | dict) else v

    @field_validator("effects", mode="before")
    @classmethod
    def _one_effect(cls, v: Any) -> Any:
        return [v] if isinstance(v, str) else v


class DomainSpec(_Strict):
    """A whole domain file."""

    name: str = Field(pattern=r"^[A-Za-z][A-Za-z0-9_]*$")
    description: str = ""
    policy: str = ""
    enums: dict[str, list[str]] = Field(default_factory=dict)
    entities: dict[str, EntitySpec]
    tools: dict[str, ToolSpec]
