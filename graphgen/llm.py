"""The one client for OpenAI-compatible chat endpoints (vLLM, SGLang, Ollama, a hosted API).

Evaluating a model (:class:`graphgen.envs.agent.OpenAIAgent`) and paraphrasing
instructions (:mod:`graphgen.tasks.paraphrase`) both talk to such an endpoint; both make
their client here, so the endpoint, the key's environment variable and the missing-extra
message are handled once. The ``openai`` package is the optional ``eval`` extra, so it is
imported only when a client is made.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

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
