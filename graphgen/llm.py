"""The one client for OpenAI-compatible chat endpoints (vLLM, SGLang, Ollama, a hosted API).

Evaluating a model (:class:`graphgen.envs.agent.OpenAIAgent`) and paraphrasing
instructions (:mod:`graphgen.tasks.paraphrase`) both talk to such an endpoint; both make
their client here, so the endpoint, the key's environment variable and the missing-extra
message are handled once. The ``openai`` package is the optional ``eval`` extra, so it is
imported only when a client is made.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from graphgen.extras import DISTRIBUTION, MissingExtraError

if TYPE_CHECKING:
    from openai import OpenAI

API_KEY_ENV = "OPENAI_API_KEY"
"""The environment variable the API key is read from unless another is named."""


def api_key(env_var: str = API_KEY_ENV) -> str:
    """The API key in ``env_var``; local servers need none, so "EMPTY" when unset.

    >>> api_key("GRAPHGEN_NO_SUCH_VARIABLE")
    'EMPTY'
    """
    return os.environ.get(env_var, "EMPTY")


def openai_client(
    base_url: str,
    key: str,
    *,
    timeout: float = 120.0,
    max_retries: int = 2,
    feature: str = "a model client",
) -> OpenAI:
    """An ``openai.OpenAI`` client for ``base_url``; raises :class:`MissingExtraError`
    (an ``ImportError``) naming the ``eval`` extra when openai is not installed."""
    try:
        from openai import OpenAI
    except ImportError as exc:  # the model client is an optional extra
        raise MissingExtraError(
            f"{feature} needs the openai package: install {DISTRIBUTION} "
            f"with the `eval` extra (pip install '{DISTRIBUTION}[eval]')"
        ) from exc
    return OpenAI(base_url=base_url, api_key=key, timeout=timeout, max_retries=max_retries)


@dataclass
class Usage:
    """Requests made and tokens spent, as the endpoint reported them in ``usage``.

    >>> u = Usage()
    >>> u.add_response({"usage": {"prompt_tokens": 10, "completion_tokens": 3}})
    >>> u.add_response({"usage": None})
    >>> u.as_dict()
    {'requests': 2, 'prompt_tokens': 10, 'completion_tokens': 3}
    >>> u.cost(price_in=2.0, price_out=10.0)
    5e-05
    """

    requests: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0

    def add_response(self, response: Any) -> None:
        """Count one response; a missing or malformed ``usage`` counts as no tokens
        (servers differ, and a bad count must not end a run)."""
        self.requests += 1
        usage = _get(response, "usage")
        self.prompt_tokens += _count(_get(usage, "prompt_tokens"))
        self.completion_tokens += _count(_get(usage, "completion_tokens"))

    def add(self, other: Usage | dict[str, Any]) -> None:
        """Add another usage (or its :meth:`as_dict` form)."""
        data = other.as_dict() if isinstance(other, Usage) else other
        self.requests += _count(data.get("requests"))
        self.prompt_tokens += _count(data.get("prompt_tokens"))
        self.completion_tokens += _count(data.get("completion_tokens"))

    def as_dict(self) -> dict[str, int]:
        """The counts as a JSON-ready mapping."""
        return {
            "requests": self.requests,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
        }

    def cost(self, price_in: float, price_out: float) -> float:
        """The cost at ``price_in`` / ``price_out`` per million prompt / completion tokens."""
        return (self.prompt_tokens * price_in + self.completion_tokens * price_out) / 1_000_000


def _get(obj: Any, name: str) -> Any:
    """A field of a response object or of its plain-JSON form."""
    if isinstance(obj, dict):
        return obj.get(name)
    return getattr(obj, name, None)


def _count(value: Any) -> int:
    """A token count as reported; anything but a non-negative int is 0."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0
