"""TrlEnvironment, the class every compiled package offers for TRL's
``GRPOTrainer(environment_factory=...)``.

TRL needs torch, too heavy for the test extra, so the fast tests reproduce its contract as
trl 1.16's GRPOTrainer implements it: the factory is called with no arguments; the tools are
the class's functions (``inspect.getmembers(type(env), inspect.isfunction)``) except ``reset``,
``get_reward`` and private names, each rendered with transformers' ``get_json_schema`` (the
real one: transformers installs without torch); ``reset(**row)`` gets the whole dataset row;
a tool is called as ``method(**arguments)`` and its result becomes ``str(result)``;
``get_reward()`` scores the rollout. The slow test drives the real trl when it is installed
(the ``trl`` extra) and is skipped otherwise.
"""

from __future__ import annotations

import inspect
import json
from typing import Any

import pytest

from graphgen.domains import builtin_names
from tests.oracle_calls import oracle_calls, package, task_json, tasks

transformers_utils = pytest.importorskip("transformers.utils")


def trl_tools(env: object) -> dict[str, Any]:
    """The tool methods of ``env`` as GRPOTrainer collects them."""
    return {
        name: getattr(env, name)
        for name, _ in inspect.getmembers(type(env), predicate=inspect.isfunction)
        if name not in ("reset", "get_reward") and not name.startswith("_")
    }


def _words(text: str) -> str:
    return " ".join(text.split())


@pytest.mark.parametrize("domain", builtin_names())
def test_tool_schemas_read_from_the_methods_match_the_strict_schemas(domain: str) -> None:
    """Names, descriptions, types, enums and required parameters that transformers reads from
    the methods are the package's strict schemas; bounds survive in the descriptions."""
    pkg = package(domain)
    tools = trl_tools(pkg.TrlEnvironment())
    strict = {t["function"]["name"]: t["function"] for t in [*pkg.TOOLS, pkg.FINISH_TOOL]}
    assert set(tools) == set(strict)
    for name, method in tools.items():
        got = transformers_utils.get_json_schema(method)["function"]
        want = strict[name]
        assert got["name"] == name
        assert _words(got["description"]) == _words(want["description"])
        params = got["parameters"]
        assert params.get("required", []) == want["parameters"]["required"]
        for p, schema in want["parameters"]["properties"].items():
            read = params["properties"][p]
            if isinstance(schema["type"], list):  # transformers reads T | None as nullable T
                inner = [t for t in schema["type"] if t != "null"]
                assert [read["type"]] == inner and read.get("nullable") is True, (name, p)
            else:
                assert read["type"] == schema["type"], (name, p)
            assert read.get("enum") == schema.get("enum"), (name, p)
            assert _words(read["description"]).startswith(_words(schema["description"]))
            for bound in ("minimum", "maximum"):
                if bound in schema:
                    assert str(schema[bound]) in read["description"], (name, p, bound)


@pytest.mark.parametrize("domain", builtin_names())
def test_the_oracle_reaches_reward_1_through_the_public_methods(domain: str) -> None:
    """reset(**row) with the row's other columns, one method call per reference call with
    the model's arguments, respond, then get_reward: 1.0 on every task."""
    pkg = package(domain)
    for task in tasks(domain, 4):
        env = pkg.TrlEnvironment()  # the factory takes no arguments
        tools = trl_tools(env)
        prompt = [{"role": "user", "content": ""}]
        instruction = env.reset(prompt=prompt, task=task_json(task), difficulty=3, id=task.id)
        assert instruction == task.instruction
        assert env.get_reward() == 0.0  # nothing done yet
        for name, arguments in oracle_calls(task):
            result = str(tools[name](**arguments))
            assert not result.startswith("Error:"), (task.id, name, result)
        assert env.get_reward() == 1.0, task.id


def test_a_wrong_episode_scores_0_and_errors_are_observations() -> None:
    pkg = package("retail")
    task = tasks("retail", 4)[0]
    env = pkg.TrlEnvironment()
    assert env.get_reward() == 0.0  # before any reset
    env.reset(task=task_json(task))
    assert env.get_order_details(order_id="no such order").startswith("Error:")
    env.respond(answer="I could not help.")
    assert env.get_reward() == 0.0
    assert env.get_order_details(order_id="O0001").startswith("Error: the episode is over")
    # a new episode on the same instance starts clean, as TRL reuses instances
    env.reset(task=json.loads(task_json(task)))
    assert env.get_reward() == 0.0


def test_a_row_without_a_task_is_refused_with_its_columns_named() -> None:
    env = package("mock").TrlEnvironment()
    with pytest.raises(ValueError, match=r"no task column.*prompt"):
        env.reset(prompt=[{"role": "user", "content": "hi"}])


@pytest.mark.slow
def test_real_trl_collects_the_tools_and_reward_of_the_class() -> None:
    """With trl installed (the ``trl`` extra; it needs torch, so the test is skipped
    without it): the installed GRPOTrainer still takes ``environment_factory`` and the
    class still passes the contract above."""
    grpo = pytest.importorskip("trl.trainer.grpo_trainer")
    assert "environment_factory" in inspect.signature(grpo.GRPOTrainer).parameters
    env = package("retail").TrlEnvironment()
    tools = trl_tools(env)
    assert all(
        transformers_utils.get_json_schema(t)["function"]["name"] == n for n, t in tools.items()
    )
    task = tasks("retail", 4)[0]
    env.reset(task=task_json(task), prompt=[{"role": "user", "content": ""}])
    for name, arguments in oracle_calls(task):
        tools[name](**arguments)
    assert env.get_reward() == 1.0
