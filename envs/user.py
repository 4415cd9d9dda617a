"""User simulators: the other side of a multi-turn episode.

Without a simulator an episode has one user message, the instruction, and the agent's
first plain-text reply is its final answer. With one, the agent's plain-text messages go
to the simulated user, whose replies come back as user messages, until the user says
:data:`STOP` (or the agent calls the finishing tool, or the turns run out). The user
never sees tool calls or their results, only what the agent says.

Two simulators:

- :class:`ScriptedUser` is deterministic and needs no model. It holds back the sentences
  of the instruction that only state an identifying value (``My email is ...``), opens
  with the rest, and answers a question of the agent with the held-back sentence whose
  field name or value type the question mentions; anything else ends the conversation.
- :class:`ModelUser` is a chat model behind the same OpenAI-compatible endpoint, told
  the instruction (never the goal, the chain or the expected answer) and asked to reveal
  what it knows only when asked.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, Protocol

from graphgen.llm import Usage
from graphgen.tasks.model import Given, Task

if TYPE_CHECKING:
    from openai import OpenAI

STOP = "###STOP###"
"""What a simulated user says to end the conversation."""

#: The agent's words that ask for a value of a shape, beyond the field's own name.
_SHAPE_CUES: list[tuple[re.Pattern[str], frozenset[str]]] = [
    (re.compile(r"^\d{4}-\d{2}-\d{2}$"), frozenset({"date", "day", "when"})),
    (re.compile(r"@"), frozenset({"email", "mail"})),
    (re.compile(r"^-?\d+$"), frozenset({"number", "amount", "much", "many"})),
    (re.compile(r"^[A-Z]+\d+$"), frozenset({"id", "identifier", "number"})),
]

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
_WORD = re.compile(r"[a-z0-9]+")


class User(Protocol):
    """A simulated user: opens the conversation, then answers each agent message."""

    name: str

    def start(self, task: Task) -> str:
        """The first user message of ``task``'s episode."""
        ...

    def reply(self, conversation: list[dict[str, str]]) -> str:
        """The next user message; ``conversation`` holds the plain-text ``user`` and
        ``assistant`` messages so far, the agent's newest last. :data:`STOP` ends it."""
        ...


def sentences(text: str) -> list[str]:
    """``text`` cut after each ``.``, ``!`` or ``?`` followed by space.

    >>> sentences("Hi! My email is a@b.org. Lock my account.")
    ['Hi!', 'My email is a@b.org.', 'Lock my account.']
    """
    return [s for s in _SENTENCE_END.split(text.strip()) if s]


def _spoken(value: Any) -> list[str]:
    text = str(value).lower()
    return [text, text.replace("_", " ")]


def _mentions(sentence: str, given: Given) -> bool:
    if isinstance(given.value, bool) or given.value is None:
        return False
    low = sentence.lower()
    return any(
        form and re.search(rf"(?<![a-z0-9]){re.escape(form)}(?![a-z0-9])", low)
        for form in _spoken(given.value)
    )


def _cues(given: Given) -> frozenset[str]:
    """Words of an agent's question that ask for this given: the field's name and its
    parts, and the words for its value's shape."""
    field = given.sort.split(".")[-1].lower()
    words = {field, *(w for w in field.split("_") if len(w) >= 3)}
    for shape, cue in _SHAPE_CUES:
        if shape.search(str(given.value)):
            words |= cue
    return frozenset(words)


class ScriptedUser:
    """A deterministic user that reveals the instruction's identifying values on request.

    A sentence of the instruction is held back when it mentions a given of a field sort
    (``field:User.email``) and no other kind of given, and is not the last sentence (the
    request itself). The opening message is the instruction without those sentences. A
    later agent message with a ``?`` whose words name a held-back sentence's field (or the
    shape of its value: a date, an email, a number, an id) gets that sentence back, the
    first such in the instruction's order; any other message ends the conversation.

    >>> from graphgen.tasks.model import Goal
    >>> task = Task(id="t", domain="d", domain_hash="h", seed=0, kind="action",
    ...     instruction="Hi! My email is a@b.org. Lock my account.",
    ...     givens=[Given(sort="field:Account.email", value="a@b.org")], initial_state={},
    ...     chain=[], goal=Goal(), min_calls=0, difficulty=0, tools_used=[])
    >>> user = ScriptedUser()
    >>> user.start(task)
    'Hi! Lock my account.'
    >>> user.reply([{"role": "assistant", "content": "What is your email?"}])
    'My email is a@b.org.'
    >>> user.reply([{"role": "assistant", "content": "Done: it is locked."}])
    'Thank you, that is all. ###STOP###'
    """

    name = "scripted"

    def __init__(self) -> None:
        self.held: list[tuple[str, frozenset[str]]] = []

    def start(self, task: Task) -> str:
        parts = sentences(task.instruction)
        kept: list[str] = []
        self.held = []
        for i, sentence in enumerate(parts):
            said = [g for g in task.givens if _mentions(sentence, g)]
            if said and i < len(parts) - 1 and all(g.sort.startswith("field:") for g in said):
                cues: frozenset[str] = frozenset().union(*(_cues(g) for g in said))
                self.held.append((sentence, cues))
            else:
                kept.append(sentence)
        return " ".join(kept)

    def reply(self, conversation: list[dict[str, str]]) -> str:
        last = next((m["content"] for m in reversed(conversation) if m["role"] == "assistant"), "")
        if "?" in last:
            words = set(_WORD.findall(last.lower()))
            for i, (sentence, cues) in enumerate(self.held):
                if cues & words:
                    del self.held[i]
                    return sentence
        return f"Thank you, that is all. {STOP}"


USER_PROMPT = """You are a customer writing to a support agent. Your situation and request:

{instruction}

Rules:
- Write one short message at a time, as a customer would.
- Do not give all of your details at once: state your request, and give a detail (an
  email, a date, a name, an address) only when the agent asks for it.
- Only state facts given in your situation above; if asked for anything else, say you do
  not know.
- When your request is done, or the agent says it cannot be done, reply with exactly
  {stop} and nothing else."""

GREETING = "Hi! How can I help you today?"
"""The agent's greeting the model user answers with its first message (the greeting is
not part of the episode)."""


class ModelUser:
    """A chat model plays the user, told the instruction only (see :data:`USER_PROMPT`).

    The roles are swapped for it: the agent's messages are its ``user`` messages, its own
    are ``assistant`` messages. Requests and tokens are counted in ``usage``.
    """

    def __init__(
        self,
        model: str,
        client: OpenAI,
        temperature: float = 0.0,
        extra_body: dict[str, Any] | None = None,
    ) -> None:
        self.name = f"model:{model}"
        self.model = model
        self.client = client
        self.temperature = temperature
        self.extra_body = extra_body
        self.system = ""
        self.usage = Usage()

    def start(self, task: Task) -> str:
        self.system = USER_PROMPT.format(instruction=task.instruction, stop=STOP)
        return self._ask([])

    def reply(self, conversation: list[dict[str, str]]) -> str:
        return self._ask(conversation)

    def _ask(self, conversation: list[dict[str, str]]) -> str:
        swapped = [
            {"role": "assistant" if m["role"] == "user" else "user", "content": m["content"]}
            for m in conversation
        ]
        messages = [
            {"role": "system", "content": self.system},
            {"role": "user", "content": GREETING},
            *swapped,
        ]
        resp = self.client.chat.completions.create(
            model=self.model,
            messages=messages,  # type: ignore[arg-type]
            temperature=self.temperature,
            extra_body=self.extra_body,
        )
        self.usage.add_response(resp)
        content = resp.choices[0].message.content
        return content if isinstance(content, str) else ""
