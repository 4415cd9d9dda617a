"""Domains proposed by a model and checked before use (``graphgen propose``).

A model is asked, through an OpenAI-compatible endpoint (:mod:`graphgen.llm`), for a
domain *spec* in YAML — never for code. The prompt carries the language reference
(``docs/domain-language.md``, shipped in the package as ``graphgen/reference``) and an
example domain (the built-in ``mock``). Each reply goes through the same checks as a
hand-written file, in order:

1. the YAML is taken from the reply (the first ```` ```yaml ```` block, else the first
   bare fenced block, else the whole reply when it reads as a YAML mapping);
2. it may carry no YAML tag at all (``!!python/object`` and friends are refused before
   any YAML is constructed; the loader is the safe one anyway);
3. :func:`graphgen.load.loads_domain` and :func:`graphgen.pipeline.check` — the loader
   and the analyses of ``graphgen check``; the expressions are parsed by graphgen's
   parser into its IR, never evaluated by Python;
4. with ``--from-tools``, the tools and parameters of the tool file must still be there
   with their types (:func:`graphgen.toolschema.seed_problems`);
5. a small generation run (dry-run gate and z3 proofs, as ``graphgen generate``) must
   yield tasks of all three kinds: action, information and refusal.

The located problems of a failed round go back to the model, which answers with the
whole domain again, for up to ``rounds`` repair rounds. A domain is accepted only when a
round passes every check; otherwise the proposal is rejected with the last round's
reasons. Nothing a model writes is executed.

Requests carry ``temperature`` and ``seed``; the transcript (every message, the
problems of every round, the task counts) is deterministic given the same replies.
"""

from __future__ import annotations

import importlib.resources
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from graphgen import __version__
from graphgen import pipeline as pl
from graphgen.domain import Domain
from graphgen.domains import builtin_path
from graphgen.errors import DomainError, GraphgenError, Located
from graphgen.files import check_output_file, write_atomic
from graphgen.limits import MAX_DOMAIN_BYTES, SAFE_LOADER, yaml_shape_problem
from graphgen.llm import API_KEY_ENV, Usage, api_key, openai_client
from graphgen.load import loads_domain
from graphgen.toolschema import SeedTool, seed_problems, seed_spec

if TYPE_CHECKING:
    from openai import OpenAI

KINDS = ("action", "information", "refusal")
"""The task kinds an accepted domain must yield."""

MAX_LISTED_PROBLEMS = 25
"""Most problems one repair message lists (the rest are counted): a model fixes the
first ones, and a long list only costs tokens."""


class ProposeError(GraphgenError):
    """The proposal could not be made at all (the endpoint failed, a bad argument)."""


@dataclass(frozen=True)
class ProposeOptions:
    """What ``graphgen propose`` asks and how it judges the answer.

    >>> ProposeOptions(model="m", base_url="http://127.0.0.1:1/v1").rounds
    3
    """

    model: str
    base_url: str
    api_key_env: str = API_KEY_ENV
    rounds: int = 3
    """Repair rounds after the first answer (so at most ``rounds + 1`` requests)."""
    temperature: float = 0.0
    seed: int = 0
    """Sent with every request, and the seed of the trial generation run."""
    tasks: int = 15
    """Tasks the trial generation run asks for."""
    timeout_s: float = 300.0
    retries: int = 2


@dataclass
class Round:
    """One request and what the checks made of its reply."""

    reply: str
    extracted: bool
    problems: list[str]
    by_kind: dict[str, int] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        """The round as the transcript records it."""
        return {
            "reply": self.reply,
            "yaml_found": self.extracted,
            "problems": self.problems,
            "tasks_by_kind": self.by_kind,
        }


@dataclass
class Proposal:
    """The outcome: accepted with its YAML text and domain, or rejected with reasons."""

    description: str
    accepted: bool
    text: str | None
    """The YAML of the last reply that had one (the accepted domain when accepted)."""
    domain: Domain | None
    reasons: list[str]
    rounds: list[Round]
    messages: list[dict[str, str]]
    usage: Usage
    options: ProposeOptions
    tools_file: str | None = None

    def transcript(self) -> dict[str, Any]:
        """Everything asked and answered, for audit; no clock, no endpoint address."""
        return {
            "graphgen_version": __version__,
            "description": self.description,
            "tools_file": self.tools_file,
            "model": self.options.model,
            "temperature": self.options.temperature,
            "seed": self.options.seed,
            "max_rounds": self.options.rounds,
            "trial_tasks": self.options.tasks,
            "accepted": self.accepted,
            "reasons": self.reasons,
            "rounds": [r.as_dict() for r in self.rounds],
            "messages": self.messages,
            "usage": self.usage.as_dict(),
        }


# ------------------------------------------------------------------ the prompt


def reference_text() -> str:
    """The domain-language reference shipped in the package (docs/domain-language.md)."""
    ref = importlib.resources.files("graphgen").joinpath("reference/domain-language.md")
    return ref.read_text(encoding="utf-8")


def example_text() -> str:
    """The example domain the prompt shows: the built-in ``mock``."""
    return builtin_path("mock").read_text(encoding="utf-8")


_RULES = """\
You write domain files for graphgen, a system that turns a typed YAML spec of a service
(its tables, tools, preconditions and effects) into tool-use tasks for AI agents, and
proves every task solvable. You write data, never code: the expressions inside the YAML
are a small checked subset of Python syntax, listed in the reference below; anything
else (imports, calls other than the listed aggregates, YAML tags such as !!python/...)
is refused.

The domain you write is accepted only when
- it loads and type-checks (graphgen check),
- every tool can be reached and every write tool can succeed in some state,
- generating tasks from it yields all three kinds: action tasks (writes a user asks
  for), information tasks (a value a read tool shows) and refusal tasks (a write the
  current state forbids, whose reason a read tool shows).
What works well: a unique, givable field to look a customer up by (an email), read tools
that return whole rows (returns: "Entity[id]") and lists of a customer's rows, write
tools whose `requires` check ownership and a status enum with several members (each
check with a plain `message:`), a state machine on that status, user-voice `intents`
for every tool, and a policy that states the rules the preconditions enforce.

Reply with the complete domain file in one ```yaml fenced block and nothing else.
"""


def system_prompt() -> str:
    """The system message: the rules, the language reference and the example domain."""
    return (
        _RULES
        + "\n# The language reference\n\n"
        + reference_text()
        + "\n# An example domain (graphgen/domains/mock.yaml)\n\n```yaml\n"
        + example_text()
        + "```\n"
    )


def request_text(description: str, tools: list[SeedTool] | None = None) -> str:
    """The first user message: the service to model, and the seeded tools if any."""
    parts = [f"Write a graphgen domain for: {description.strip() or 'the service below'}."]
    if tools:
        seed = yaml.safe_dump(
            seed_spec(tools), sort_keys=False, allow_unicode=True, default_flow_style=None
        )
        parts.append(
            "The service already has these tools. They are translated below into the "
            "domain language: keep every tool, every parameter name and every parameter "
            "type (a parameter named like `order_id` refers to an entity `Order` whose "
            "key it is; rename the entity if a better name fits, but keep the parameter). "
            "Add what the tool list cannot say: the entities' fields (the state), each "
            "tool's `requires` (preconditions with messages), `effects` and `returns`, "
            "the `intents`, the enums, and a policy. The language has no optional "
            "parameters and no fractions: every parameter is required, numbers are whole.\n"
            f"\n```yaml\n{seed}```"
        )
    return "\n\n".join(parts)


def repair_text(problems: list[str]) -> str:
    """The user message that sends a round's problems back for repair."""
    shown = problems[:MAX_LISTED_PROBLEMS]
    more = len(problems) - len(shown)
    lines = "\n".join(f"- {p}" for p in shown)
    if more:
        lines += f"\n- ... and {more} more"
    return (
        "The domain is not accepted yet. The checks found:\n"
        f"{lines}\n\n"
        "Fix every problem and reply with the complete corrected domain file in one "
        "```yaml fenced block."
    )


# ------------------------------------------------------------------ reading a reply

_FENCE = re.compile(r"^[ \t]*```[ \t]*([A-Za-z0-9_+.-]*)[^\n]*\n(.*?)^[ \t]*```", re.S | re.M)
_MAPPING_START = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*[ \t]*:")

NO_YAML = "the reply holds no YAML domain: put the complete domain file in one ```yaml fenced block"


def extract_yaml(reply: str) -> str | None:
    """The YAML text of a reply, or None when it has none.

    The first block fenced as ``yaml``/``yml``, else the first fenced block without a
    language, else the whole reply when its first line that is not a comment opens a
    mapping. A reply whose only blocks are in another language (```` ```python ````)
    holds no YAML.

    >>> extract_yaml("Here it is:\\n```yaml\\nname: x\\n```\\nEnjoy.")
    'name: x\\n'
    >>> extract_yaml("name: x\\ntools: {}")
    'name: x\\ntools: {}\\n'
    >>> extract_yaml("```python\\nimport os\\n```") is None
    True
    >>> extract_yaml("I cannot help with that.") is None
    True
    """
    blocks = _FENCE.findall(reply)
    for lang, body in blocks:
        if lang.lower() in ("yaml", "yml"):
            return str(body)
    for lang, body in blocks:
        if not lang:
            return str(body)
    if blocks:
        return None
    text = reply.strip()
    first = next(
        (ln for ln in text.splitlines() if ln.strip() and not ln.lstrip().startswith("#")), ""
    )
    return text + "\n" if _MAPPING_START.match(first) else None


def tag_problems(text: str, source: str) -> list[str]:
    """Every explicit YAML tag in ``text``, as a problem: a domain is plain data.

    Only the scanner runs (no node is constructed), so a tag naming a Python object
    is found before anything could build it.

    >>> tag_problems("a: !!python/object/apply:os.system ['ls']", "d.yaml")  # doctest: +ELLIPSIS
    ["d.yaml: line 1, column 4: the YAML tag '!!python/object/apply:os.system' is not ...
    >>> tag_problems("a: 1", "d.yaml")
    []
    """
    out: list[str] = []
    try:
        shape = yaml_shape_problem(text)
        if shape is not None:
            shape.file = source
            return [str(shape)]
        for tok in yaml.scan(text, Loader=SAFE_LOADER):
            if isinstance(tok, yaml.TagToken):
                handle, suffix = tok.value
                tag = f"{handle or ''}{suffix}"
                mark = tok.start_mark
                out.append(
                    f"{source}: line {mark.line + 1}, column {mark.column + 1}: the YAML tag "
                    f"{tag!r} is not allowed: a domain is plain data (mappings, lists, "
                    "strings, numbers), never objects or code"
                )
    except yaml.YAMLError:
        pass  # a syntax error: the loader reports it with its location
    return out


# ------------------------------------------------------------------ judging a domain


@dataclass
class Verdict:
    """What the checks made of one YAML text."""

    domain: Domain | None
    problems: list[str]
    by_kind: dict[str, int] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        """Accepted: no problem, and the domain loaded."""
        return self.domain is not None and not self.problems


_KIND_HINTS = {
    "action": (
        "add write tools a user would ask for, each with `intents` in the user's voice "
        "that can be true in generated states"
    ),
    "information": (
        "add read tools that return whole rows or fields a user would ask about "
        '(returns: "Entity[id]"), reachable from what the user knows'
    ),
    "refusal": (
        "add write tools whose `requires` fail on some generated rows (a status enum "
        "with several members, an ownership check), with the blocking value shown by a "
        "read tool"
    ),
}


def _located(problems: list[Located]) -> list[str]:
    return [str(p) for p in problems]


def judge(
    text: str,
    source: str,
    *,
    tools: list[SeedTool] | None = None,
    tasks: int = ProposeOptions.tasks,
    seed: int = 0,
) -> Verdict:
    """Run every check on a proposed domain's YAML ``text`` (see the module docstring).

    ``source`` names the file in the problems (the output path the domain would get).
    """
    tags = tag_problems(text, source)
    if tags:
        return Verdict(None, tags)
    try:
        domain = loads_domain(text, source=source)
        report = pl.check(domain)
    except DomainError as exc:
        return Verdict(None, _located(exc.problems))
    problems: list[str] = []
    for t in report.unreachable_tools:
        problems.append(
            f"{source}: tool {t!r} is unreachable: no chain of calls can supply its "
            "parameters from what a user knows (make a field it needs givable, or add a "
            "lookup tool)"
        )
    for t in report.unsatisfiable_writes:
        problems.append(
            f"{source}: write tool {t!r} can never succeed: no state satisfies its "
            "requires together with the field bounds"
        )
    if tools is not None:
        problems += seed_problems(domain, tools, source)
    if problems:
        return Verdict(domain, problems)
    try:
        res = pl.generate(domain, tasks, pl.Options(seed=seed, jobs=1))
    except GraphgenError as exc:
        return Verdict(domain, [f"{source}: generating tasks failed: {exc}"])
    except Exception as exc:  # an untrusted proposal is rejected, never a crash
        return Verdict(
            domain,
            [f"{source}: graphgen could not generate tasks from it ({type(exc).__name__}: {exc})"],
        )
    by_kind = {k: res.manifest.by_kind.get(k, 0) for k in KINDS}
    rejected = ", ".join(f"{k} {v}" for k, v in sorted(res.manifest.rejected.items()))
    for kind in KINDS:
        if not by_kind[kind]:
            why = f"; rejected candidates: {rejected}" if rejected else ""
            problems.append(
                f"{source}: a trial run of {tasks} tasks yielded no {kind} task "
                f"({len(res.tasks)} accepted{why}): {_KIND_HINTS[kind]}"
            )
    return Verdict(domain, problems, by_kind)


# ------------------------------------------------------------------ asking the model

Ask = Callable[[list[dict[str, str]]], str]
"""Sends the conversation, returns the reply's text."""


def _asker(options: ProposeOptions, usage: Usage) -> Ask:
    client: OpenAI = openai_client(
        options.base_url,
        api_key(options.api_key_env),
        timeout=options.timeout_s,
        max_retries=options.retries,
        feature="graphgen propose",
    )
    from openai import OpenAIError

    def ask(messages: list[dict[str, str]]) -> str:
        try:
            resp = client.chat.completions.create(
                model=options.model,
                messages=messages,  # type: ignore[arg-type]
                temperature=options.temperature,
                seed=options.seed,
            )
        except OpenAIError as exc:
            raise ProposeError(
                f"the model endpoint {options.base_url} failed: {type(exc).__name__}: {exc}"
            ) from None
        usage.add_response(resp)
        choices = getattr(resp, "choices", None) or []
        content = choices[0].message.content if choices else None
        return content if isinstance(content, str) else ""

    return ask


def propose(
    description: str,
    options: ProposeOptions,
    *,
    source: str = "domain.yaml",
    tools: list[SeedTool] | None = None,
    tools_file: str | None = None,
    ask: Ask | None = None,
    progress: Callable[[int, Round], None] | None = None,
) -> Proposal:
    """Ask for a domain, check it, send the problems back, up to ``options.rounds``
    repairs. ``ask`` replaces the endpoint (tests); ``progress(i, round)`` is called
    after each round.
    """
    if options.rounds < 0:
        raise ProposeError(f"the number of repair rounds is 0 or more, not {options.rounds}")
    if not description.strip() and not tools:
        raise ProposeError("describe the service, or give a tool file to start from")
    usage = Usage()
    send = ask if ask is not None else _asker(options, usage)
    messages = [
        {"role": "system", "content": system_prompt()},
        {"role": "user", "content": request_text(description, tools)},
    ]
    rounds: list[Round] = []
    text: str | None = None
    verdict: Verdict | None = None
    for i in range(options.rounds + 1):
        reply = send(messages)
        messages.append({"role": "assistant", "content": reply})
        got = extract_yaml(reply) if len(reply) <= 2 * MAX_DOMAIN_BYTES else None
        if got is None:
            verdict = Verdict(None, [NO_YAML])
        else:
            text = got
            verdict = judge(got, source, tools=tools, tasks=options.tasks, seed=options.seed)
        rounds.append(Round(reply, got is not None, verdict.problems, verdict.by_kind))
        if progress is not None:
            progress(i, rounds[-1])
        if verdict.ok:
            break
        if i < options.rounds:
            messages.append({"role": "user", "content": repair_text(verdict.problems)})
    assert verdict is not None
    return Proposal(
        description=description,
        accepted=verdict.ok,
        text=text,
        domain=verdict.domain if verdict.ok else None,
        reasons=[] if verdict.ok else verdict.problems,
        rounds=rounds,
        messages=messages,
        usage=usage,
        options=options,
        tools_file=tools_file,
    )


# ------------------------------------------------------------------ writing


def output_paths(output: str | Path, *, rejected: bool = False) -> tuple[Path, Path]:
    """The domain file and its transcript: ``domain.yaml`` and ``domain.transcript.json``;
    for a kept rejected proposal ``domain.rejected.yaml`` and
    ``domain.rejected.transcript.json``.

    >>> [p.name for p in output_paths("out/clinic.yaml", rejected=True)]
    ['clinic.rejected.yaml', 'clinic.rejected.transcript.json']
    """
    p = Path(output)
    stem = p.stem + (".rejected" if rejected else "")
    return p.with_name(stem + (p.suffix or ".yaml")), p.with_name(stem + ".transcript.json")


def check_outputs(output: str | Path, *, keep_rejected: bool, force: bool) -> None:
    """Refuse unusable output paths before any request is sent."""
    for p in output_paths(output):
        check_output_file(p, force=force)
    if keep_rejected:
        for p in output_paths(output, rejected=True):
            check_output_file(p, force=force)


def write_proposal(
    proposal: Proposal, output: str | Path, *, keep_rejected: bool = False
) -> list[Path]:
    """Write an accepted domain and its transcript; a rejected one only with
    ``keep_rejected``, under the ``.rejected`` names. Returns the files written."""
    if not proposal.accepted and not keep_rejected:
        return []
    domain_path, transcript_path = output_paths(output, rejected=not proposal.accepted)
    written: list[Path] = []
    if proposal.text is not None:
        written.append(write_atomic(domain_path, proposal.text))
    transcript = json.dumps(proposal.transcript(), indent=1, sort_keys=True, ensure_ascii=False)
    written.append(write_atomic(transcript_path, transcript + "\n"))
    return written
