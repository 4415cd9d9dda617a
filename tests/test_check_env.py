"""The environment interface: every compiled built-in passes graphgen's check_env, a
broken environment is rejected with the property named, and the Gymnasium wrapper passes
Gymnasium's own checker without a warning."""

from __future__ import annotations

import warnings
from typing import Any

import pytest

from graphgen.domains import builtin_names, load_builtin
from graphgen.envs.agent import env_task
from graphgen.envs.check import EnvCheckError, check_env
from graphgen.envs.load import load_env_module
from graphgen.tasks.taskset import generate

BUILTINS = builtin_names()


def _task(name: str) -> dict[str, Any]:
    return env_task(generate(load_builtin(name), 3, 2).tasks[0])


@pytest.fixture(scope="module")
def mock_task() -> dict[str, Any]:
    return _task("mock")


def _mock_env(max_steps: int = 30) -> Any:
    return load_env_module(load_builtin("mock")).Environment(max_steps=max_steps)


@pytest.mark.parametrize("name", BUILTINS)
def test_every_builtin_package_passes_check_env(name: str) -> None:
    env = load_env_module(load_builtin(name)).Environment(max_steps=12)
    check_env(env, _task(name))


class _Proxy:
    """A faithful stand-in for a compiled environment; each subclass breaks one property."""

    def __init__(self, env: Any) -> None:
        self.env = env
        self.tools, self.policy, self.max_steps = env.tools, env.policy, env.max_steps

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[str, dict[str, Any]]:
        return self.env.reset(seed=seed, options=options)  # type: ignore[no-any-return]

    def step(self, action: Any) -> Any:
        return self.env.step(action)


class _OldStep(_Proxy):
    """The pre-Gymnasium step: (observation, reward, done, info)."""

    def step(self, action: Any) -> Any:
        obs, reward, terminated, truncated, info = self.env.step(action)
        return obs, reward, terminated or truncated, info


class _OldReset(_Proxy):
    """The pre-Gymnasium reset: the task is a required positional argument."""

    def reset(self, task: Any) -> Any:  # type: ignore[override]
        return self.env.reset(options={"task": task})


class _Raising(_Proxy):
    """An unknown tool is an exception instead of an observation."""

    def step(self, action: Any) -> Any:
        if isinstance(action, dict) and action.get("name") == "no such tool":
            raise KeyError(action["name"])
        return self.env.step(action)


class _Nondeterministic(_Proxy):
    """Counts episodes in info, so the same task does not give the same reset."""

    calls = 0

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[str, dict[str, Any]]:
        obs, info = self.env.reset(seed=seed, options=options)
        self.calls += 1
        return obs, {**info, "episode": self.calls}


class _NeverTerminates(_Proxy):
    """The finishing action does not end the episode."""

    def step(self, action: Any) -> Any:
        obs, reward, _, truncated, info = self.env.step(action)
        return obs, reward, False, truncated, info


@pytest.mark.parametrize(
    ("broken", "prop"),
    [
        (_OldStep, "check_step_return"),
        (_OldReset, "check_reset_signature"),
        (_Raising, "check_errors_are_observations"),
        (_Nondeterministic, "check_reset_determinism"),
        (_NeverTerminates, "check_finish_terminates"),
    ],
)
def test_check_env_rejects_a_broken_env(
    broken: type[_Proxy], prop: str, mock_task: dict[str, Any]
) -> None:
    with pytest.raises(EnvCheckError, match=prop) as info:
        check_env(broken(_mock_env()), mock_task)
    assert info.value.prop == prop


def test_check_env_without_a_task_uses_the_last_one(mock_task: dict[str, Any]) -> None:
    env = _mock_env()
    with pytest.raises(EnvCheckError, match="no task to check on"):
        check_env(env)
    env.reset(options={"task": mock_task})
    check_env(env)
    with pytest.raises(EnvCheckError, match="check_step_return"):
        check_env(_OldStep(env))


def test_the_checked_env_still_works(mock_task: dict[str, Any]) -> None:
    env = _mock_env()
    check_env(env, mock_task)
    obs, _, terminated, truncated, _ = env.step({"name": "no such tool"})
    assert obs.startswith("Error") and not terminated and not truncated


def test_gymnasium_wrapper_passes_gymnasium_check_env(mock_task: dict[str, Any]) -> None:
    import gymnasium
    from gymnasium.utils.env_checker import check_env as gym_check_env

    from graphgen.envs.gym import GymEnvironment, env_id

    tasks = [env_task(t) for t in generate(load_builtin("mock"), 6, 4).tasks]
    made = gymnasium.make(env_id("mock"), tasks=tasks)
    env = made.unwrapped
    assert isinstance(env, GymEnvironment) and env.spec is not None
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        gym_check_env(env)
    first, _ = env.reset(seed=3)
    assert env.reset(seed=3)[0] == first and env.observation_space.contains(first)
    obs, reward, terminated, truncated, _ = env.step('{"name": "respond", "arguments": {}}')
    assert terminated and not truncated and reward in (0.0, 1.0)
    assert env.observation_space.contains(obs)


def test_gym_wrapper_escapes_text_outside_its_space() -> None:
    from graphgen.envs.gym import GymEnvironment, _in_space

    assert _in_space("caf\u00e9\r") == "caf\\xe9\\r"
    with pytest.raises(ValueError, match="at least one task"):
        GymEnvironment(_mock_env(), [])


@pytest.mark.parametrize(
    ("module", "missing", "extra"),
    [
        ("graphgen.envs.gym", "gymnasium", "`gym` extra"),
        ("graphgen.envs.agent", "openai", "`eval` extra"),
    ],
)
def test_optional_dependencies_are_named_when_missing(
    module: str, missing: str, extra: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    import importlib
    import sys

    monkeypatch.setitem(sys.modules, missing, None)  # makes `import missing` fail
    if module == "graphgen.envs.gym":
        monkeypatch.delitem(sys.modules, module, raising=False)
        with pytest.raises(ImportError, match=extra):
            importlib.import_module(module)
    else:
        from graphgen.envs.agent import OpenAIAgent

        with pytest.raises(ImportError, match=extra):
            OpenAIAgent("m", "http://127.0.0.1:9", "k")
