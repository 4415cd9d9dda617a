"""An optional paraphrase step: a chat model rewrites an instruction, and the rewrite is
kept only if it says exactly what the original said.

Templates make instructions that are true but stiff. A model can make them read like a
customer wrote them, but it can also drop a value the agent needs, invent one the task
does not have ("my order from last week", "$20"), or leak an id. So a rewrite is
accepted only when all of these hold, checked in this order (the first failure is the
reason, counted in the task-set manifest; the original text is then kept):

``request_failed``
    the endpoint did not answer after :attr:`Paraphraser.retries` retries;
``empty_reply`` / ``too_long`` / ``meta_reply``
    the reply is empty, more than twice as long as the original plus :data:`SLACK`
    characters, or opens by talking about the task ("Sure! Here is the rewrite: …");
``given_not_stated``
    a given value is not stated as a whole token or in one of its spoken forms
    ("gift card" for ``gift_card``) — the gate's own check,
    :func:`graphgen.tasks.render.stated` with :func:`~graphgen.tasks.render.spoken_forms`;
``id_leak``
    a value token the original does not have is a key of an entity whose ids are not
    givable (in the initial state or created by the goal);
``new_value``
    the rewrite mentions a value the original does not (see :func:`values_in`);
``value_dropped``
    the original mentions a value the rewrite does not (a referring phrase's date or
    colour: the target must stay the one the proofs showed unique);
``order_dropped``
    the original states an order ("then", "once that's done", "first", …) and the
    rewrite has none of those words;
any reason of the dry-run gate
    :func:`graphgen.tasks.dryrun.check_candidate` is re-run in full with the new text
    (``answer_in_instruction``, ``id_leak``, ``ambiguous_target``, …).

The generator then runs the z3 proofs on the task with the accepted text; should they
reject it, the original is proven instead and the proof's reason is counted
(:func:`graphgen.tasks.taskset.generate`).

Replies are cached on disk by the sha256 of (model, prompt, instruction), holding the
model's raw reply, so a rerun makes no request and writes the same bytes; requests ask
for temperature 0 and a fixed seed, so even a cold cache reproduces on servers that honour
them. A network error never stops generation: after the retries the original is kept.
"""

from __future__ import annotations

import hashlib
import json
import re
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from graphgen.domain import Domain, domain_enum_members
from graphgen.files import write_atomic
from graphgen.interp import call_or_fail
from graphgen.llm import openai_client
from graphgen.tasks.dryrun import check_task
from graphgen.tasks.model import ParaphraseCounts, Task
from graphgen.tasks.plan import Executor
from graphgen.tasks.render import spoken_forms, stated, states_order
from graphgen.types import STR
from graphgen.vocabulary import airport_city, load_vocab

PARAPHRASE_SEED = 0
"""The seed every request carries (with temperature 0): servers that honour it answer
the same prompt with the same text."""

SLACK = 80
"""Characters a rewrite may add beyond twice the original's length."""

SYSTEM_PROMPT = (
    "You rewrite a customer's message to a customer-support agent so that it reads the way "
    "a real customer would write it: natural, polite, concise. Rules: keep every value "
    "listed under KEEP exactly as written, character for character; do not add any fact, "
    "number, amount, date, time, name, status or id that the message does not contain; keep "
    "every request and every detail that says which item, order or booking is meant; keep "
    "words that say in which order things must happen; do not answer the message. Reply "
    "with the rewritten message only, on one line."
)

# Words that state a number or a date without digits. "one" is left out (it is mostly a
# pronoun: "the one I ordered"), and so is "May" (mostly a verb). Ordinals are left out
# because "first ... then" states an order, not a value.
_NUMBER_WORDS = frozenset(
    {
        "two",
        "three",
        "four",
        "five",
        "six",
        "seven",
        "eight",
        "nine",
        "ten",
        "eleven",
        "twelve",
        "thirteen",
        "fourteen",
        "fifteen",
        "sixteen",
        "seventeen",
        "eighteen",
        "nineteen",
        "twenty",
        "thirty",
        "forty",
        "fifty",
        "sixty",
        "seventy",
        "eighty",
        "ninety",
        "hundred",
        "thousand",
        "million",
        "dozen",
        "twice",
        "half",
    }
)
_TIME_WORDS = frozenset(
    {
        "today",
        "tomorrow",
        "yesterday",
        "tonight",
        "monday",
        "tuesday",
        "wednesday",
        "thursday",
        "friday",
        "saturday",
        "sunday",
        "january",
        "february",
        "march",
        "april",
        "june",
        "july",
        "august",
        "september",
        "october",
        "november",
        "december",
    }
)
# A reply that talks about the rewrite instead of being it.
_META = re.compile(
    r"^(?:sure|certainly|of course|okay|ok|here(?:'s| is| are))\b[^:]{0,60}:|"
    r"\b(?:rewrit(?:e|ten)|paraphrase[ds]?)\b",
    re.IGNORECASE,
)
_EMAIL = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")
_DIGIT_TOKEN = re.compile(r"[\w@.+$/:-]*\d[\w@.+$/:-]*")
_TOKEN_EDGE = ".,:;/+$-"
_QUOTES = "'\u2019"  # an apostrophe, typed or typographic
_RUN_BREAK = re.compile(rf"[^\w{_QUOTES}\- ]+")  # words joined only by spaces form one run
_POSSESSIVE = re.compile(rf"[{_QUOTES}]s$")
_GENERIC_VOCAB = {"words", "airport_codes"}  # generic words; codes come via airport_city


@dataclass(frozen=True)
class Lexicon:
    """The named values of a domain and state that a rewrite may not add or drop.

    ``exact`` holds entries written with capitals (matched as written: "Air Fryer",
    "Olivia"), ``folded`` lower-case entries by their lower-cased spoken forms (matched
    in any case: "cancelled", "gift card" for ``gift_card``); both map a form to the
    value it names. ``longest`` is the most words in one form.
    """

    exact: dict[str, str]
    folded: dict[str, str]
    longest: int


def _forms(value: str) -> list[str]:
    return sorted({value, value.replace("_", " "), value.replace("_", "-")})


@cache
def _vocab_entries() -> tuple[str, ...]:
    """Every entry of the shipped word lists except the generic ones."""
    names = sorted(
        p.name.removesuffix(".txt")
        for p in resources.files("graphgen").joinpath("vocab").iterdir()
        if p.name.endswith(".txt")
    )
    out: list[str] = []
    for name in names:
        if name not in _GENERIC_VOCAB:
            out += load_vocab(name)
    for code, city in airport_city().items():
        out += [code, city]
    return tuple(out)


def lexicon(domain: Domain, initial: dict[str, Any]) -> Lexicon:
    """The named values a rewrite is checked against: the domain's enum members, the
    shipped word lists' entries (names, products, cities, colours, sizes, streets,
    airport codes; not the generic word list) and every cell of a ``str`` field of the
    initial state without a digit (digit-bearing values are tokens anyway, see
    :func:`values_in`)."""
    exact: dict[str, str] = {}
    folded: dict[str, str] = {}

    def add(value: str) -> None:
        value = value.strip()
        if not value:
            return
        for form in _forms(value):
            if value == value.lower():
                folded.setdefault(form.lower(), value)
            else:
                exact.setdefault(form, value)

    for member in domain_enum_members(domain):
        add(member)
    for entry in _vocab_entries():
        add(entry)
    for ent, rows in initial.get("tables", {}).items():
        edef = domain.entities.get(ent)
        if edef is None:
            continue
        for row in rows.values():
            for fname, v in row.items():
                fd = edef.fields.get(fname)
                is_str = fd is not None and fd.ty == STR and isinstance(v, str)
                if is_str and not re.search(r"\d", v):
                    add(v)
    longest = max((len(f.split()) for f in [*exact, *folded]), default=1)
    return Lexicon(exact, folded, longest)


def _runs(text: str) -> Iterator[list[str]]:
    for run in _RUN_BREAK.split(text):
        words = [_POSSESSIVE.sub("", w).strip(_QUOTES + "-") for w in run.split()]
        if words:
            yield words


def values_in(text: str, lex: Lexicon) -> set[tuple[str, str]]:
    """The values ``text`` mentions, as (kind, value) pairs: the definition of "a value"
    the paraphrase checks use on both texts.

    * ``email``: every e-mail address, as written;
    * ``token``: every other token with a digit (numbers, amounts, dates, times, ids,
      zip codes, flight numbers), with leading/trailing ``.,:;/+$-`` stripped: "$150."
      is ``150``, "2026-04-20" stays whole;
    * ``word``: number words ("two" … "twenty", "hundred", "dozen", "twice", "half")
      and day/month words ("today", "Monday", "June"), in any case;
    * ``named``: a :class:`Lexicon` entry spoken as whole words (a run of up to
      ``lex.longest`` words not broken by punctuation), as written or, for lower-case
      entries, in any case.

    >>> lex = Lexicon({"Air Fryer": "Air Fryer"}, {"gift card": "gift_card"}, 2)
    >>> sorted(values_in("Pay $150 for my Air Fryer by Gift card on 2026-04-20.", lex))
    [('named', 'Air Fryer'), ('named', 'gift_card'), ('token', '150'), ('token', '2026-04-20')]
    """
    found: set[tuple[str, str]] = set()
    for m in _EMAIL.finditer(text):
        found.add(("email", m.group()))
    rest = _EMAIL.sub(" ", text)
    for m in _DIGIT_TOKEN.finditer(rest):
        tok = m.group().strip(_TOKEN_EDGE)
        if tok:
            found.add(("token", tok))
    for words in _runs(rest):
        for w in words:
            if w.lower() in _NUMBER_WORDS or w.lower() in _TIME_WORDS:
                found.add(("word", w.lower()))
        for i in range(len(words)):
            for n in range(1, min(lex.longest, len(words) - i) + 1):
                form = " ".join(words[i : i + n])
                if form in lex.exact:
                    found.add(("named", lex.exact[form]))
                if form.lower() in lex.folded:
                    found.add(("named", lex.folded[form.lower()]))
    return found


def _internal_ids(domain: Domain, task: Task) -> set[str]:
    ids = set()
    for ent, rows in task.initial_state.get("tables", {}).items():
        edef = domain.entities.get(ent)
        if edef is not None and not edef.key_givable:
            ids |= set(rows)
    for c in task.goal.changes:
        edef = domain.entities.get(c.entity)
        if edef is not None and not edef.key_givable:
            ids.add(c.key)
    return ids


def _keep_list(task: Task, lex: Lexicon) -> list[str]:
    """The values the prompt asks the model to keep verbatim, in text order: the givens
    and every other value the original mentions."""
    spans: list[tuple[int, str]] = []
    text = task.instruction

    def where(v: str) -> int:  # unspoken forms ("gift card" for gift_card) go last
        at = text.lower().find(v.lower())
        return at if at >= 0 else len(text)

    for g in task.givens:
        if not isinstance(g.value, bool):
            spans.append((where(str(g.value)), str(g.value)))
    for kind, v in values_in(text, lex):
        if kind != "word":
            spans.append((where(v), v))
    seen: list[str] = []
    for _, v in sorted(spans):
        if v not in seen:
            seen.append(v)
    return seen


def user_message(instruction: str, keep: list[str]) -> str:
    """The user turn of a paraphrase request."""
    lines = [f"MESSAGE: {instruction}", "KEEP:"]
    lines += [f"- {v}" for v in keep] or ["(nothing)"]
    return "\n".join(lines)


def cache_key(model: str, prompt: list[str], instruction: str) -> str:
    """sha256 of (model, prompt, instruction): the name of a cached reply."""
    blob = json.dumps(
        {"instruction": instruction, "model": model, "prompt": prompt},
        sort_keys=True,
        ensure_ascii=False,
    )
    return hashlib.sha256(blob.encode()).hexdigest()


def clean_reply(reply: str) -> str:
    """One line, single spaces, without quotes around the whole text.

    >>> clean_reply('  "Hi,\\n  please cancel it."  ')
    'Hi, please cancel it.'
    """
    text = " ".join(reply.split())
    for a, b in (('"', '"'), ("“", "”"), ("'", "'")):
        if len(text) >= 2 and text.startswith(a) and text.endswith(b):
            text = text[1:-1].strip()
    return text


@dataclass
class Paraphraser:
    """Rewrites instructions through an OpenAI-compatible endpoint, with a reply cache.

    ``requests`` counts the requests sent over the network (cache hits send none). After
    ``give_up_after`` tasks in a row whose requests all failed, no more requests are
    sent in this run (each task then counts as ``request_failed``), so a dead endpoint
    costs a bounded time.
    """

    model: str
    base_url: str
    api_key: str
    cache_dir: Path
    retries: int = 2
    backoff_s: float = 0.5
    timeout_s: float = 60.0
    give_up_after: int = 3
    requests: int = field(default=0, init=False)
    _failures_in_a_row: int = field(default=0, init=False, repr=False)
    _client: Any = field(default=None, init=False, repr=False)

    def _ask(self, messages: list[dict[str, str]]) -> str | None:
        if self._failures_in_a_row >= self.give_up_after:
            return None
        if self._client is None:
            self._client = openai_client(
                self.base_url,
                self.api_key,
                timeout=self.timeout_s,
                max_retries=0,
                feature="--paraphrase",
            )
        from openai import OpenAIError

        for attempt in range(self.retries + 1):
            if attempt:
                time.sleep(self.backoff_s * attempt)
            self.requests += 1
            try:
                resp = self._client.chat.completions.create(
                    model=self.model,
                    messages=messages,
                    temperature=0.0,
                    seed=PARAPHRASE_SEED,
                )
            except OpenAIError:  # connection refused, timeout, 5xx, 4xx: retry, then give up
                continue
            self._failures_in_a_row = 0
            content = resp.choices[0].message.content if resp.choices else None
            return content or ""
        self._failures_in_a_row += 1
        return None

    def reply(self, instruction: str, keep: list[str]) -> str | None:
        """The model's raw reply for ``instruction`` (from the cache if there), or None
        when the endpoint could not be reached."""
        prompt = [SYSTEM_PROMPT, user_message(instruction, keep)]
        path = self.cache_dir / f"{cache_key(self.model, prompt, instruction)}.json"
        try:
            cached = json.loads(path.read_text(encoding="utf-8"))
            if isinstance(cached, dict) and isinstance(cached.get("reply"), str):
                return str(cached["reply"])
        except (OSError, ValueError):  # no entry yet, or a torn one: ask again
            pass
        messages = [
            {"role": "system", "content": prompt[0]},
            {"role": "user", "content": prompt[1]},
        ]
        got = self._ask(messages)
        if got is None:
            return None
        entry = {"instruction": instruction, "model": self.model, "prompt": prompt, "reply": got}
        # Atomic: a reader never sees half an entry.
        write_atomic(path, json.dumps(entry, sort_keys=True, ensure_ascii=False))
        return got

    def apply(
        self, domain: Domain, task: Task, execute: Executor = call_or_fail
    ) -> tuple[Task, str]:
        """``task`` with its instruction rewritten, and ""; or ``task`` itself and the
        reason the rewrite was refused (see the module docstring). A reply equal to the
        instruction gives ``task`` itself and ""."""
        lex = lexicon(domain, task.initial_state)
        raw = self.reply(task.instruction, _keep_list(task, lex))
        if raw is None:
            return task, "request_failed"
        text = clean_reply(raw)
        why = rewrite_problem(domain, task, text, lex)
        if why:
            return task, why
        if text == task.instruction:
            return task, ""
        gate = check_task(domain, task, execute, instruction=text)
        if not gate.ok:
            return task, gate.reason
        return task.model_copy(update={"instruction": text}), ""


def counts_for(model: str, counts: Counter[str]) -> ParaphraseCounts:
    """Outcome counts ("paraphrased", "unchanged" or a reason) as the manifest records them."""
    rejected = {k: v for k, v in counts.items() if k not in ("paraphrased", "unchanged")}
    return ParaphraseCounts(
        model=model,
        paraphrased=counts["paraphrased"],
        unchanged=counts["unchanged"],
        rejected=dict(sorted(rejected.items())),
    )


def rewrite_problem(domain: Domain, task: Task, text: str, lex: Lexicon | None = None) -> str:
    """Why ``text`` may not replace ``task.instruction`` by the text checks ("" if it may):
    ``empty_reply``, ``too_long``, ``meta_reply``, ``given_not_stated``, ``id_leak``, ``new_value``,
    ``value_dropped`` or ``order_dropped``. The gate's own checks come after these
    (:meth:`Paraphraser.apply`)."""
    lex = lex or lexicon(domain, task.initial_state)
    if not text:
        return "empty_reply"
    if len(text) > 2 * len(task.instruction) + SLACK:
        return "too_long"
    if _META.search(text) and not _META.search(task.instruction):
        return "meta_reply"
    if any(not stated(text, g.value, spoken_forms(domain, g.sort, g.value)) for g in task.givens):
        return "given_not_stated"
    before, after = values_in(task.instruction, lex), values_in(text, lex)
    added = after - before
    ids = _internal_ids(domain, task)
    if any(kind == "token" and v in ids for kind, v in added):
        return "id_leak"
    if added:
        return "new_value"
    if before - after:
        return "value_dropped"
    if states_order(task.instruction) and not states_order(text):
        return "order_dropped"
    return ""
