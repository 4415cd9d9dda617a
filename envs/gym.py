"""A ``gymnasium.Env`` over a compiled environment, for trainers built on Gymnasium.

Needs the ``gym`` extra (``pip install 'graphgen-envs[gym]'``); nothing else in graphgen
imports gymnasium. Observations and actions are text (``gymnasium.spaces.Text``): an
action is the JSON text of a tool call ``{"name": tool, "arguments": {...}}``, which the
compiled environment parses (malformed text is an ``Error:`` observation, as any bad call).

Importing this module registers every built-in domain under the id ``graphgen/<name>-v0``,
so ``gymnasium.make("graphgen/retail-v0", tasks=tasks)`` builds one (``tasks`` as the
compiled environment takes them, e.g. ``graphgen.envs.agent.env_task(task)``).

Gymnasium's Text spaces hold a fixed character set: here printable ASCII, newline and tab.
Any other character of an observation is written as its Python escape (``\\u00e9``), which
keeps the text readable and the observation inside the space.
"""

from __future__ import annotations

import string
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from graphgen.domains import builtin_names, resolve
from graphgen.envs.load import load_env_module

try:
    import gymnasium
    from gymnasium import spaces
except ImportError as exc:  # an optional extra: say which one
    raise ImportError(
        "graphgen.envs.gym needs gymnasium: install graphgen-envs with the "
        "`gym` extra (pip install 'graphgen-envs[gym]')"
    ) from exc

#: The characters of observations and actions.
CHARSET = frozenset(string.printable) - frozenset("\r\x0b\x0c")
#: The longest observation or action text; longer observations are cut (and say so).
MAX_LENGTH = 1 << 20
_CUT = "\n[observation cut]"


class TextEnvironment(Protocol):
    """The Gymnasium-shaped text interface of a compiled environment."""

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[str, dict[str, Any]]: ...

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]: ...

    def close(self) -> None: ...


def _in_space(text: str) -> str:
    """``text`` with every character outside CHARSET escaped, cut to MAX_LENGTH."""
    out = "".join(c if c in CHARSET else c.encode("unicode_escape").decode("ascii") for c in text)
    return out if len(out) <= MAX_LENGTH else out[: MAX_LENGTH - len(_CUT)] + _CUT


class GymEnvironment(gymnasium.Env[str, str]):
    """A compiled environment (``pkg.Environment()``) over a list of tasks, as a gymnasium.Env.

    ``reset(seed=..., options={"task": task})`` starts ``task``; without one it draws a task
    from ``tasks`` with the environment's seeded generator, so a seed fixes the episode.
    """

    metadata: dict[str, Any] = {"render_modes": []}  # no rendering: the observations are text

    def __init__(self, env: TextEnvironment, tasks: Sequence[Mapping[str, Any]]) -> None:
        if not tasks:
            raise ValueError("GymEnvironment needs at least one task to draw from")
        self.env = env
        self.tasks = [dict(t) for t in tasks]
        self.observation_space = spaces.Text(MAX_LENGTH, min_length=0, charset=CHARSET)
        self.action_space = spaces.Text(MAX_LENGTH, min_length=0, charset=CHARSET)

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[str, dict[str, Any]]:
        """Start an episode: ``options["task"]`` if given, else a task drawn with the seed."""
        super().reset(seed=seed)
        task = (options or {}).get("task")
        if task is None:
            task = self.tasks[int(self.np_random.integers(len(self.tasks)))]
        observation, info = self.env.reset(options={"task": task})
        return _in_space(observation), info

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        """Apply one action (the JSON text of a tool call)."""
        observation, reward, terminated, truncated, info = self.env.step(action)
        return _in_space(observation), reward, terminated, truncated, info

    def close(self) -> None:
        """Close the compiled environment."""
        self.env.close()


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
        ids.append(env_id(name))
        if ids[-1] not in gymnasium.registry:
            gymnasium.register(
                id=ids[-1],
                entry_point="graphgen.envs.gym:make_domain_env",
                kwargs={"domain": name},
            )
    return ids


register_builtins()
