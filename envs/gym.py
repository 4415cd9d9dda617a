"""Gymnasium registration of the built-in domains, for trainers built on Gymnasium.

Needs the ``gym`` extra (``pip install 'graphgen-envs[gym]'``); nothing else in graphgen
imports gymnasium. The wrapper itself, :class:`GymEnvironment`, lives in
:mod:`graphgen.envs.gymnasium_env`, which every compiled package ships as its own
``gymnasium_env.py``.

Importing this module registers every built-in domain under the id ``graphgen/<name>-v0``,
so ``gymnasium.make("graphgen/retail-v0", tasks=tasks)`` builds one (``tasks`` as the
compiled environment takes them, e.g. ``graphgen.envs.agent.env_task(task)``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from graphgen.domains import builtin_names, resolve
from graphgen.envs.load import load_env_module

try:
    import gymnasium  # noqa: F401  (fail here, naming graphgen's extra)
except ImportError as exc:  # an optional extra: say which one
    raise ImportError(
        "graphgen.envs.gym needs gymnasium: install graphgen-envs with the "
        "`gym` extra (pip install 'graphgen-envs[gym]')"
    ) from exc

from graphgen.envs.gymnasium_env import (
    CHARSET,
    MAX_LENGTH,
    GymEnvironment,
    TextEnvironment,
    _in_space,
    register,
)

__all__ = [
    "CHARSET",
    "MAX_LENGTH",
    "GymEnvironment",
    "TextEnvironment",
    "_in_space",
    "env_id",
    "make_domain_env",
    "register_builtins",
]


def make_domain_env(domain: str, tasks: Sequence[Mapping[str, Any]]) -> GymEnvironment:
    """A :class:`GymEnvironment` over the compiled package of ``domain`` (a built-in name or a
    domain file): the entry point behind the registered ``graphgen/<name>-v0`` ids."""
    package = load_env_module(resolve(domain))
    return GymEnvironment(package.Environment(), tasks)


def env_id(domain: str) -> str:
    """The Gymnasium id a built-in domain is registered under."""
    return f"graphgen/{domain}-v0"


def register_builtins() -> list[str]:
    """Register every built-in domain with Gymnasium (idempotent); returns the ids."""
    ids = []
    for name in builtin_names():
        ids.append(register(env_id(name), "graphgen.envs.gym:make_domain_env", {"domain": name}))
    return ids


register_builtins()
