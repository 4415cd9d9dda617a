"""The on-disk form of a domain: pydantic models that mirror the YAML file.

A domain is ``entities`` (typed tables), ``tools`` (typed parameters, preconditions,
effects, a return value and intent templates) and a ``policy`` text. These models only
validate the *shape* of the file; :func:`graphgen.load.elaborate_domain` parses the
expressions and type-checks them against the schema.

Shorthands accepted for a field or parameter type: ``int``, ``str``, ``bool``,
``date``, an entity name (a reference to it), ``list[Entity]``, ``Entity.field`` (for
parameters: a value of that field), or a mapping with ``type`` and options.

Intents may carry guards (:class:`IntentSpec`), and a top-level ``phrases:`` block
(:class:`PhraseSpec`) says how fields and parameters are said in instructions.

An entity may carry a ``generate:`` block (see :class:`GenerateSpec`) with ``derive``
(fields computed from the rest of the state) and ``require`` (conditions every
generated row satisfies), over the row variable ``x``, and a list of ``invariants``
(see :class:`InvariantSpec`): the policy's rules about states, which generated states
satisfy *and* every accepted task's goal keeps.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from graphgen.limits import MAX_TABLE_SIZE


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
    min: int | str | None = Field(default=None, description='a number; "0.00" for decimals')
    max: int | str | None = Field(default=None, description='a number; "5000.00" for decimals')
    vocab: str | None = Field(default=None, description="value generator hint, e.g. 'email'")
    description: str = ""
    scale: int | None = Field(default=None, ge=0, le=12, description="places, for decimal")

    @model_validator(mode="before")
    @classmethod
    def _shorthand(cls, v: Any) -> Any:
        return _type_shorthand(v)


class KeySpec(_Strict):
    """The key of an entity: its name, the id prefix, and whether users know ids.

    Two kinds of key (see ``docs/domain-language.md``, "Keys"):

    * a formatted counter (the default, or ``type: str``): ``prefix`` + ``width``
      zero-padded digits (``prefix: ""`` allowed);
    * ``type: int``: int ids, numbered from 1, a ``create`` takes the next free int;
    * ``type: str`` with neither ``prefix`` nor ``width``: string ids given by the data
      (an imported state; generated states draw them from ``vocab``), and a ``create``
      names its key explicitly.
    """

    name: str
    prefix: str = ""
    width: int = Field(default=4, ge=1, le=12, description="zero-padded digits in new ids")
    givable: bool = False
    type: str = Field(default="str", description="str | int: the runtime type of the ids")
    vocab: str | None = Field(
        default=None, description="vocabulary generated ids are drawn from (data-given keys)"
    )

    @property
    def kind(self) -> str:
        """``counter`` (prefix + padded number), ``int``, or ``data`` (``type: str`` with
        no ``prefix``/``width``: ids given by the data)."""
        if self.type == "int":
            return "int"
        given = self.model_fields_set
        if "type" in given and not given & {"prefix", "width"}:
            return "data"
        return "counter"


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


class InvariantSpec(_Strict):
    """A rule of the policy about states: a bool condition over the row variable ``x``
    that holds for every row of the entity in every state a policy-abiding agent can be
    in (an entry of an entity's ``invariants:`` list)::

        invariants:
          - name: paid_by_owner
            check: "PaymentMethod[x.payment_method_id].user_id == x.user_id"
            policy: "Only act on the identified customer's own orders, payment methods"

    Unlike ``generate.require`` (plausibility of generated rows, which tools may
    legitimately break: a refund can lift a gift card past what it was sold for), an
    invariant is *policy*: the state generator enforces it on every generated state, the
    dry-run gate checks it on each candidate's initial state and on the final state of
    every order of its writes it replays, and a task whose goal breaks one is rejected
    (``policy_violation``). A bare string is the ``check``.
    """

    check: str
    name: str = Field(default="", pattern=r"^([A-Za-z_][A-Za-z0-9_]*)?$")
    policy: str = Field(default="", description="the policy sentence the rule encodes")

    @model_validator(mode="before")
    @classmethod
    def _shorthand(cls, v: Any) -> Any:
        return {"check": v} if isinstance(v, str) else v


class LemmaSpec(_Strict):
    """A claim about every row ``x`` of the entity that the proofs may use once they
    have proven it (an entry of an entity's ``lemmas:`` list)::

        lemmas:
          - name: gift_card_funds
            value: "x.balance"
            potential: "x.balance + sum(o.total for o in Order if ...)"

    The claim: in every state a chain of calls reaches, ``value <= potential`` on every
    row that existed initially, and ``potential`` is never above what it was in the
    initial state (no call raises it). Nothing trusts it: per task the verifier proves
    it by induction over the tools (``verify/lemmas.py``) and uses it only then, to
    show that a refused call can never be made to succeed.
    """

    name: str = Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")
    value: str = Field(description="a number over x: the quantity bounded")
    potential: str = Field(description="a number over x that no call raises, never below value")
    note: str = Field(default="", description="why it holds, in words")


class EntitySpec(_Strict):
    """A table of the state. ``generate`` holds rules for generated rows only;
    ``invariants`` the policy's rules about its rows, in every state; ``lemmas``
    claims about its rows that the proofs prove and then use."""

    key: KeySpec
    fields: dict[str, FieldSpec] = Field(default_factory=dict)
    description: str = ""
    size: int = Field(
        default=8, ge=0, le=MAX_TABLE_SIZE, description="default row count in generated states"
    )
    display: str | None = Field(
        default=None, description="field used to name a row in instructions"
    )
    generate: GenerateSpec | None = Field(
        default=None, description="derive/require rules for generated initial states"
    )
    invariants: list[InvariantSpec] = Field(
        default_factory=list, description="policy rules over x that every state obeys"
    )
    lemmas: list[LemmaSpec] = Field(
        default_factory=list, description="bounds over x the proofs prove, then use"
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
    min: int | str | None = Field(default=None, description='a number; "0.00" for decimals')
    max: int | str | None = Field(default=None, description='a number; "5000.00" for decimals')
    vocab: str | None = None
    default: int | str | bool | None = Field(
        default=None,
        description="value an absent argument takes (null: None); makes the parameter optional",
    )
    scale: int | None = Field(default=None, ge=0, le=12, description="places, for decimal")

    @model_validator(mode="before")
    @classmethod
    def _shorthand(cls, v: Any) -> Any:
        return _type_shorthand(v)  # same shorthand grammar as fields

    @property
    def has_default(self) -> bool:
        """Whether ``default:`` was written (``default: null`` counts)."""
        return "default" in self.model_fields_set


class CheckSpec(_Strict):
    """A precondition with an optional message shown to the agent when it fails."""

    check: str
    message: str = ""

    @model_validator(mode="before")
    @classmethod
    def _shorthand(cls, v: Any) -> Any:
        return {"check": v} if isinstance(v, str) else v


class IntentSpec(_Strict):
    """One instruction template of a tool, with an optional guard.

    ``text`` is the template (``{param}`` placeholders). ``when`` is a bool expression over
    the tool's parameters, like a ``requires`` check: every factual claim the text makes
    ("My flight was cancelled") is stated as a guard, and the template is used only when
    the guard holds on the state the request is made in. A bare string is an intent with
    no guard (it must claim nothing that could be false).
    """

    text: str
    when: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _shorthand(cls, v: Any) -> Any:
        return {"text": v} if isinstance(v, str) else v


class PhraseSpec(_Strict):
    """How a field (``Entity.field``) or a tool parameter (``tool.param``) is said.

    * ``form``: how a referring atom on the field reads after the noun, ``{value}`` being
      the spoken value ("placed on {value}", "with ${value} on it", "in {value}");
    * ``before``: the atom goes before the noun instead ("my pending order");
    * ``words``: enum members (or ``true``/``false`` of a bool) as words
      (``gift_card: gift card``); members not listed are said with spaces for ``_``;
    * ``noun``: an enum field whose word names the row ("my credit card" for a payment
      method of kind credit_card) instead of the entity's name; or a reference field
      naming what the row is of, said in every description of the row ("the Picnic
      Basket item in white" for an item's product);
    * ``relation``: for a reference field, what the referenced row is to this one
      ("departure airport" for ``Flight.origin``): "the code of the departure airport
      of flight GG4370", never the ambiguous "the airport of the flight";
    * ``name``: what the field is called in a question ("available credit" for
      ``PaymentMethod.available``); default: the field's name with spaces;
    * ``now``: a date parameter that is today's date. A task has one today, later than
      every date stored in the fields the tool writes it to; the instruction states it
      once, first ("Today is 2026-05-10."), never inside a request.
    """

    form: str | None = None
    before: bool = False
    words: dict[str, str] = Field(default_factory=dict)
    noun: bool = False
    relation: str | None = None
    name: str | None = None
    now: bool = False

    @model_validator(mode="before")
    @classmethod
    def _shorthand(cls, v: Any) -> Any:
        return {"form": v} if isinstance(v, str) else v

    @field_validator("words", mode="before")
    @classmethod
    def _bool_keys(cls, v: Any) -> Any:
        # YAML reads `true:` as a bool key; words are keyed by the value's text.
        if isinstance(v, dict):
            return {(str(k).lower() if isinstance(k, bool) else str(k)): w for k, w in v.items()}
        return v


class CaseSpec(_Strict):
    """One case of a tool (an entry of ``cases:``): when ``when`` holds (after the
    ``requires`` checks; a case without ``when`` always holds), its ``effects`` apply and
    ``returns`` is the result. The first case whose ``when`` holds is the one that runs.
    ``fails: true`` marks a soft failure: no effects, a result instead of an error."""

    when: str | None = None
    fails: bool = False
    effects: list[str] = Field(default_factory=list)
    returns: str | None = None

    @field_validator("effects", mode="before")
    @classmethod
    def _one_effect(cls, v: Any) -> Any:
        return [v] if isinstance(v, str) else v


class ToolSpec(_Strict):
    """A tool: typed params, ``requires`` (all must hold), ``effects``, ``returns``;
    or, instead of ``effects``/``returns``, a list of ``cases``."""

    description: str = ""
    params: dict[str, ParamSpec] = Field(default_factory=dict)
    requires: list[CheckSpec] = Field(default_factory=list)
    effects: list[str] = Field(default_factory=list)
    returns: str | None = None
    intents: list[IntentSpec] = Field(
        default_factory=list,
        description="instruction templates; {param} placeholders are filled by tasks",
    )
    cases: list[CaseSpec] = Field(
        default_factory=list,
        description="guarded outcomes (when -> effects + returns), first true wins",
    )
    let: dict[str, str] = Field(
        default_factory=dict,
        description="name -> expression on the state before the call, in order; "
        "visible in requires, cases, effects and returns",
    )

    @field_validator("requires", mode="before")
    @classmethod
    def _one_check(cls, v: Any) -> Any:
        return [v] if isinstance(v, str | dict) else v

    @field_validator("effects", mode="before")
    @classmethod
    def _one_effect(cls, v: Any) -> Any:
        return [v] if isinstance(v, str) else v


class ConstantSpec(_Strict):
    """A named constant of the domain (``constants:``), inlined where it is used: a typed
    literal (``value:``, used by name: ``MAX_OPEN``) or a constant table (``key:`` and
    ``values:``, looked up: ``RATE[Account[a].currency]``)."""

    type: str = Field(description="int | str | bool | date | decimal (of the values)")
    value: Any = None
    scale: int | None = Field(default=None, ge=0, le=12, description="places, for decimal")
    key: str | None = Field(
        default=None, description="a table's key type: a shared enum, int, str or an entity"
    )
    values: dict[Any, Any] | None = Field(default=None, description="a table's key -> value")
    default: Any = Field(
        default=None, description="a table's value for every other key (not for full enums)"
    )
    description: str = ""


class FunctionSpec(_Strict):
    """A pure helper function (``functions:``): typed parameters, a return type and a
    body in the expression language over its parameters, the constants and the
    functions declared before it. No table reads, no recursion: a call is expanded
    inline where it is written."""

    params: dict[str, str] = Field(default_factory=dict, description="name -> type")
    returns: str
    body: str
    description: str = ""


class TodaySpec(_Strict):
    """The range the state generator draws a state's today from (``today()``)."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)
    start: str = Field(alias="from", description="first date, YYYY-MM-DD")
    end: str = Field(alias="to", description="last date, YYYY-MM-DD")


class DomainSpec(_Strict):
    """A whole domain file."""

    name: str = Field(pattern=r"^[A-Za-z][A-Za-z0-9_]*$")
    description: str = ""
    policy: str = ""
    enums: dict[str, list[str]] = Field(default_factory=dict)
    entities: dict[str, EntitySpec]
    tools: dict[str, ToolSpec]
    phrases: dict[str, PhraseSpec] = Field(
        default_factory=dict, description="Entity.field or tool.param -> how it is said"
    )
    constants: dict[str, ConstantSpec] = Field(
        default_factory=dict, description="NAME -> typed value, usable in every expression"
    )
    functions: dict[str, FunctionSpec] = Field(
        default_factory=dict, description="pure helper functions, expanded inline"
    )
    today: TodaySpec | None = Field(
        default=None, description="the range a generated state's today() is drawn from"
    )
