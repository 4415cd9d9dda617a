"""Check that an environment keeps the interface agents and trainers rely on.

:func:`check_env` runs one ``check_*`` function per property of the Gymnasium-shaped
interface of a compiled environment (:mod:`graphgen.envs.environment`) and raises
:class:`EnvCheckError` naming the first property that does not hold. It is meant for
compiled packages and for anything that stands in for them (a wrapper, a remote proxy):
it uses only the public interface, on one task the caller supplies.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable, Mapping
from typing import Any

from graphgen.envs.schemas import FINISH_NAME

#: The task the checks run on; None means the task the environment last started.
Task = Mapping[str, Any] | None


class EnvCheckError(AssertionError):
    """An environment breaks a property of the interface; ``prop`` names the check."""

    def __init__(self, prop: str, message: str) -> None:
        super().__init__(f"{prop}: {message}")
        self.prop = prop


def _finish(answer: str = "") -> dict[str, Any]:
    return {"name": FINISH_NAME, "arguments": {"answer": answer}}


def _options(task: Task) -> dict[str, Any] | None:
    return None if task is None else {"task": task}


def _reset(env: Any, task: Task) -> tuple[Any, ...]:
    out = env.reset(options=_options(task))
    return tuple(out) if isinstance(out, tuple) else (out,)


def _step(env: Any, action: object) -> tuple[Any, ...]:
    out = env.step(action)
    return tuple(out) if isinstance(out, tuple) else (out,)


def _a_tool(env: Any) -> str:
    """A tool of the environment other than the finishing action (for probe calls)."""
    names = [t["function"]["name"] for t in env.tools]
    return next((n for n in names if n != FINISH_NAME), FINISH_NAME)


# ------------------------------------------------------------------ the properties


def check_interface(env: Any, task: Task) -> None:
    """``reset``, ``step``, ``tools`` (OpenAI tool schemas, the finishing action among them),
    ``policy`` (text) and ``max_steps`` (a positive int) are there."""
    for name in ("reset", "step"):
        if not callable(getattr(env, name, None)):
            raise EnvCheckError("check_interface", f"the environment has no {name}() method")
    tools = getattr(env, "tools", None)
    if not isinstance(tools, list) or not all(
        isinstance(t, Mapping)
        and isinstance(t.get("function"), Mapping)
        and isinstance(t["function"].get("name"), str)
        for t in tools
    ):
        raise EnvCheckError(
            "check_interface",
            "tools must be a list of OpenAI tool schemas "
            '({"type": "function", "function": {"name": ...}})',
        )
    if FINISH_NAME not in [t["function"]["name"] for t in tools]:
        raise EnvCheckError(
            "check_interface", f"tools must offer the finishing action {FINISH_NAME!r}"
        )
    if not isinstance(getattr(env, "policy", None), str):
        raise EnvCheckError("check_interface", "policy must be text")
    steps = getattr(env, "max_steps", None)
    if not isinstance(steps, int) or isinstance(steps, bool) or steps < 1:
        raise EnvCheckError("check_interface", "max_steps must be a positive int")


def check_reset_signature(env: Any, task: Task) -> None:
    """``reset`` takes keyword-only ``seed`` and ``options``, both defaulting to None."""
    params = inspect.signature(env.reset).parameters
    for name in ("seed", "options"):
        p = params.get(name)
        if p is None or p.kind is not inspect.Parameter.KEYWORD_ONLY or p.default is not None:
            raise EnvCheckError(
                "check_reset_signature",
                f"reset() must take a keyword-only {name}=None (reset(*, seed=None, options=None))",
            )
    required = [
        p.name
        for p in params.values()
        if p.default is inspect.Parameter.empty
        and p.kind not in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)
    ]
    if required:
        raise EnvCheckError(
            "check_reset_signature", f"reset() must need no argument, but requires {required}"
        )


def check_reset_return(env: Any, task: Task) -> None:
    """``reset(options={"task": task})`` returns ``(observation: str, info: dict)``."""
    out = _reset(env, task)
    if len(out) != 2 or not isinstance(out[0], str) or not isinstance(out[1], dict):
        got = ", ".join(type(x).__name__ for x in out)
        raise EnvCheckError(
            "check_reset_return", f"reset() must return (observation: str, info: dict); got ({got})"
        )


def check_step_return(env: Any, task: Task) -> None:
    """``step`` returns ``(observation: str, reward: float, terminated: bool, truncated: bool,
    info: dict)``, for a tool call and for the finishing action."""
    _reset(env, task)
    for action in ({"name": _a_tool(env), "arguments": {}}, _finish()):
        out = _step(env, action)
        kinds = (str, float, bool, bool, dict)
        if len(out) != 5 or not all(
            type(x) is k or (k is float and type(x) is int) for x, k in zip(out, kinds, strict=True)
        ):
            got = ", ".join(type(x).__name__ for x in out)
            raise EnvCheckError(
                "check_step_return",
                "step() must return (observation: str, reward: float, terminated: bool, "
                f"truncated: bool, info: dict); got a {len(out)}-tuple ({got})",
            )


def check_reset_determinism(env: Any, task: Task) -> None:
    """The same task (as a mapping, as JSON text, or again with a seed) gives the same first
    observation and info, and the same actions then give the same results."""
    actions = [{"name": _a_tool(env), "arguments": {}}, {"name": "no such tool"}, _finish("x")]
    runs = []
    as_text = None if task is None else {"task": json.dumps(task)}
    for options in (_options(task), as_text, _options(task)):
        first = env.reset(seed=0, options=options)
        runs.append([first, *(env.step(a) for a in actions)])
    if not runs[0] == runs[1] == runs[2]:
        raise EnvCheckError(
            "check_reset_determinism", "resetting to the same task did not repeat the same episode"
        )
    again = env.reset()
    if again != runs[0][0]:
        raise EnvCheckError(
            "check_reset_determinism", "reset() without options must restart the last task"
        )


def check_errors_are_observations(env: Any, task: Task) -> None:
    """A malformed action, an unknown tool or bad arguments come back as an ``Error:``
    observation with ``info["error"]`` set, and do not end the episode."""
    tool = _a_tool(env)
    bad: list[object] = [
        {"name": "no such tool", "arguments": {}},
        {"name": tool, "arguments": "{not json"},
        {"name": tool, "arguments": [1, 2]},
        {"name": tool, "arguments": {"no such argument": 1}},
        ["not", "an", "action"],
        "{not json",
        {"function": "not a call"},
    ]
    _reset(env, task)
    for action in bad:
        try:
            obs, _, terminated, truncated, info = env.step(action)
        except Exception as exc:
            raise EnvCheckError(
                "check_errors_are_observations",
                f"step({action!r}) raised {type(exc).__name__}: {exc}; a "
                "bad action must be an error observation",
            ) from exc
        if not (isinstance(obs, str) and obs.startswith("Error") and info.get("error")):
            raise EnvCheckError(
                "check_errors_are_observations",
                f"step({action!r}) must observe 'Error: ...' and set info['error']; got {obs!r}",
            )
        if terminated:
            raise EnvCheckError(
                "check_errors_are_observations", f"step({action!r}) ended the episode"
            )
        if truncated:
            break  # a tiny step budget; what was seen so far held


def check_finish_terminates(env: Any, task: Task) -> None:
    """The finishing action ends the episode (terminated, not truncated) with a grade in
    ``info``; later steps keep it ended and do not raise."""
    _reset(env, task)
    _, _, terminated, truncated, info = env.step(_finish("done"))
    if terminated is not True or truncated is not False:
        raise EnvCheckError(
            "check_finish_terminates",
            f"{FINISH_NAME!r} must give terminated=True, truncated=False; got "
            f"terminated={terminated!r}, truncated={truncated!r}",
        )
    if not isinstance(info.get("grade"), Mapping):
        raise EnvCheckError(
            "check_finish_terminates", "the last step's info must hold the episode's grade"
        )
    after = env.step({"name": _a_tool(env), "arguments": {}})
    if after[2] is not True:
        raise EnvCheckError(
            "check_finish_terminates", "a step after the end must report the episode as still ended"
        )


def check_truncation(env: Any, task: Task) -> None:
    """``max_steps`` steps without finishing truncate the episode (not terminated)."""
    _reset(env, task)
    for i in range(env.max_steps):
        _, _, terminated, truncated, _ = env.step({"name": "no such tool", "arguments": {}})
        last = i == env.max_steps - 1
        if terminated or truncated is not last:
            raise EnvCheckError(
                "check_truncation",
                f"step {i + 1} of max_steps={env.max_steps} gave "
                f"terminated={terminated!r}, truncated={truncated!r}",
            )


def check_reward_range(env: Any, task: Task) -> None:
    """The reward is 0.0 before the end and in [0, 1] at the end."""
    _reset(env, task)
    _, during, *_ = env.step({"name": "no such tool", "arguments": {}})
    _, final, *_ = env.step(_finish())
    if during != 0.0 or not 0.0 <= final <= 1.0:
        raise EnvCheckError(
            "check_reward_range",
            f"rewards must be 0.0 during an episode and in [0, 1] at its end; "
            f"got {during!r} then {final!r}",
        )


def check_info_is_json(env: Any, task: Task) -> None:
    """``info`` from reset and step is plain JSON data (trajectories are written as JSON)."""
    infos = [
        env.reset(options=_options(task))[1],
        env.step({"name": _a_tool(env), "arguments": {}})[4],
        env.step(_finish())[4],
    ]
    for info in infos:
        try:
            json.dumps(info, allow_nan=False)
        except (TypeError, ValueError) as exc:
            raise EnvCheckError(
                "check_info_is_json", f"info is not JSON data ({exc}): {info!r}"
            ) from exc


#: Every property, in the order :func:`check_env` checks them (shapes first).
CHECKS: tuple[Callable[[Any, Task], None], ...] = (
    check_interface,
    check_reset_signature,
    check_reset_return,
    check_step_return,
    check_errors_are_observations,
    check_reset_determinism,
    check_finish_terminates,
    check_truncation,
    check_reward_range,
    check_info_is_json,
)


def check_env(env: Any, task: Task = None) -> None:
    """Check every property of the environment interface on ``task``; raises
    :class:`EnvCheckError` naming the first that fails. Leaves ``env`` reset to ``task``.

    ``task`` is a task in the plain-dict form environments take (see
    :func:`graphgen.envs.agent.env_task`); the checks run a few short episodes on it.
    Without it they use the task ``env`` last started, so reset it on one first.
    """
    if task is None:
        try:
            env.reset()
        except Exception as exc:
            raise EnvCheckError(
                "check_env",
                "no task to check on: pass one, or reset the "
                f"environment on one first ({type(exc).__name__}: {exc})",
            ) from exc
    for check in CHECKS:
        try:
            check(env, task)
        except EnvCheckError:
            raise
        except Exception as exc:
            raise EnvCheckError(
                check.__name__,
                f"the check crashed the environment with {type(exc).__name__}: {exc}",
            ) from exc
    env.reset(options=_options(task))
