"""The raw-text adapter of every compiled package (``text.py``): tool calls read from model text
in the Hermes/Qwen and OpenAI JSON forms, malformed calls turned into error observations,
results written back as text, and the verl, OpenRLHF and SkyRL shapes driving the package's
``Environment`` to reward 1 with the oracle's calls."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from graphgen.domains import builtin_names
from graphgen.envs import text
from graphgen.envs.text import ParsedCall, format_call, format_results, parse_tool_calls
from tests.oracle_calls import oracle_calls, package, task_json, tasks


def _calls(text: str) -> list[tuple[str, dict[str, Any] | None, str | None]]:
    return [
        (c.name, c.arguments if c.error is None else None, c.error) for c in parse_tool_calls(text)
    ]


def test_hermes_blocks_several_per_message_with_text_around() -> None:
    text = (
        "Let me look.\n<tool_call>\n"
        '{"name": "get_order", "arguments": {"order_id": "O1"}}\n</tool_call>\n'
        '<tool_call>{"name": "list_products", "arguments": {}}</tool_call> done'
    )
    assert _calls(text) == [
        ("get_order", {"order_id": "O1"}, None),
        ("list_products", {}, None),
    ]


@pytest.mark.parametrize(
    "text",
    [
        '{"name": "get_order", "arguments": {"order_id": "O1"}}',
        '{"name": "get_order", "arguments": "{\\"order_id\\": \\"O1\\"}"}',
        '{"type": "function", "function": {"name": "get_order", "arguments": '
        '"{\\"order_id\\": \\"O1\\"}"}}',
        '{"tool_calls": [{"id": "c1", "type": "function", "function": {"name": "get_order", '
        '"arguments": "{\\"order_id\\": \\"O1\\"}"}}]}',
        '```json\n[{"name": "get_order", "arguments": {"order_id": "O1"}}]\n```',
    ],
)
def test_openai_json_forms(text: str) -> None:
    assert _calls(text) == [("get_order", {"order_id": "O1"}, None)]


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("<tool_call>{not json}</tool_call>", "tool call 1: not valid JSON"),
        ('<tool_call>{"name": "a", "arguments": {}}', "tool call 1: <tool_call> is never closed"),
        ('<tool_call>{"arguments": {}}</tool_call>', 'needs a "name" string'),
        ('<tool_call>["x"]</tool_call>', "a tool call is a JSON object"),
        ('{"name": "a", "arguments": "{broken"}', "a: arguments are not valid JSON"),
        ('{"name": "a", "arguments": [1]}', "a: arguments must be a JSON object"),
        ('{"name": "a", "arguments": {}', "tool call: not valid JSON"),
    ],
)
def test_malformed_calls_are_errors_not_exceptions(text: str, error: str) -> None:
    (call,) = parse_tool_calls(text)
    assert call.error is not None and error in call.error


def test_one_bad_block_does_not_hide_the_good_ones() -> None:
    text = (
        '<tool_call>{"name": "a", "arguments": {}}</tool_call>'
        "<tool_call>{oops}</tool_call>"
        '<tool_call>{"name": "b", "arguments": {"x": 1}}</tool_call>'
    )
    got = _calls(text)
    assert [g[0] for g in got] == ["a", "", "b"]
    assert got[1][2] is not None and "tool call 2" in got[1][2]


def test_plain_text_holds_no_call() -> None:
    assert parse_tool_calls("Your order O0002 is pending. {not a call") == []


def test_results_are_written_back_as_tool_response_blocks() -> None:
    out = format_results([("a", '{"x": 1}'), ("b", "Error: no")])
    blocks = out.split("</tool_response>")
    assert len(blocks) == 3 and blocks[-1] == ""
    assert json.loads(blocks[1].split("<tool_response>")[1]) == {
        "name": "b",
        "content": "Error: no",
    }


def _session(domain: str) -> Any:
    return package(domain, "integrations").text_session()


@pytest.mark.parametrize("domain", builtin_names())
def test_a_whole_chain_in_one_message_reaches_reward_1(domain: str) -> None:
    """All reference calls in one Hermes message, then the answer as plain text."""
    for task in tasks(domain, 3):
        session = _session(domain)
        assert session.reset(task_json(task)) == task.instruction
        *chain, (_, final) = oracle_calls(task)
        out = session.step("I'll check.\n" + "\n".join(format_call(n, a) for n, a in chain))
        assert not out.done and out.reward == 0.0
        assert [c["tool"] for c in out.calls] == [n for n, _ in chain]
        assert all(c["error"] is None for c in out.calls), out.observation
        assert out.observation.count("<tool_response>") == len(chain)
        out = session.step(final["answer"])  # no call: the final answer
        assert out.done and out.reward == 1.0, task.id
        assert session.step("more").observation.startswith("Error: the episode is over")


def test_a_malformed_call_is_an_error_observation_and_the_episode_goes_on() -> None:
    task = tasks("retail", 3)[0]
    session = _session("retail")
    session.reset(task_json(task))
    out = session.step('<tool_call>{"name": "get_order_details", "arguments": {oops}</tool_call>')
    assert not out.done and "Error: tool call 1: not valid JSON" in out.observation
    assert out.calls == [{"tool": "", "error": "bad_call"}]
    out = session.step(format_call("get_order_details", {"order_id": 7}, "openai"))
    assert not out.done and out.calls[0]["error"] is not None  # the tool's own check
    assert "Error:" in out.observation


@pytest.mark.parametrize("domain", builtin_names())
def test_verl_openrlhf_and_skyrl_shapes_reach_reward_1(domain: str) -> None:
    integ = package(domain, "integrations")
    # verl's reward reads the state after the calls: an action task (no answer to give)
    task = next(t for t in tasks(domain, 3) if t.kind == "action")
    *chain, (_, final) = oracle_calls(task)
    config = integ.verl_tool_config()  # what verl's tool_config_path file holds
    assert [e["tool_schema"] for e in config["tools"]] == integ.Environment.tool_schemas
    assert {e["class_name"] for e in config["tools"]} == {f"{integ.__name__}.VerlTool"}

    async def verl() -> float:
        tools = {
            e["tool_schema"]["function"]["name"]: integ.VerlTool(e["config"], e["tool_schema"])
            for e in config["tools"]
        }
        first = tools[chain[0][0]]
        key = await first.create("traj-1", create_kwargs={"task": task_json(task)})
        for name, arguments in chain:
            await tools[name].create(key)  # joins the trajectory's episode
            observation, step_reward, metrics = await tools[name].execute(key, arguments)
            assert metrics["error"] is None and step_reward == 0.0, observation
        reward: float = await first.calc_reward(key)
        await first.release(key)
        assert key not in integ.VerlTool.sessions
        assert integ.VerlTool.sessions is not text.VerlTool.sessions  # one table per package
        return reward

    assert asyncio.run(verl()) == 1.0

    async def openrlhf() -> dict[str, Any]:
        agent = integ.AgentInstance()
        reset = await agent.reset({"label": task_json(task), "observation": "System: be kind.\n"})
        assert reset["observation"].endswith(task.instruction)
        message = "\n".join(format_call(n, a, "openai") for n, a in chain[:1])
        out = await agent.step({"action_text": message})
        assert not out["done"] and "<tool_response>" in out["environment_feedback"]
        for name, arguments in chain[1:]:
            out = await agent.step({"action_text": format_call(name, arguments)})
            assert not out["done"], out
        result: dict[str, Any] = await agent.step({"action_text": final["answer"]})
        return result

    last = asyncio.run(openrlhf())
    assert last["done"] and last["rewards"] == 1.0 and last["environment_feedback"] == ""

    env = integ.SkyRLTextEnv({}, {"task": task_json(task)})
    prompt, _ = env.init([{"role": "system", "content": "policy"}])
    assert prompt[-1] == {"role": "user", "content": task.instruction}
    for name, arguments in chain:
        step = env.step(format_call(name, arguments))
        assert not step["done"] and step["observations"][0]["role"] == "user"
    step = env.step(final["answer"])
    assert step["done"] and step["reward"] == 1.0 and step["observations"] == []


def test_verl_episodes_without_an_id_get_fresh_ones() -> None:
    integ = package("mock", "integrations")
    tool = integ.VerlTool({}, integ.Environment.tool_schemas[0])
    task = task_json(tasks("mock", 3)[0])

    async def run() -> list[str]:
        first = await tool.create(task=task)
        second = await tool.create(task=task)
        await tool.release(first)
        third = await tool.create(task=task)
        ids = [first, second, third]
        for key in ids[1:]:
            await tool.release(key)
        return ids

    ids = asyncio.run(run())
    assert len(set(ids)) == 3  # a released id's slot is not handed out again


def test_the_shapes_refuse_an_episode_without_a_task() -> None:
    integ = package("mock", "integrations")
    tool = integ.VerlTool({}, integ.Environment.tool_schemas[0])
    with pytest.raises(ValueError, match="needs the task"):
        asyncio.run(tool.create("t"))
    with pytest.raises(ValueError, match="extras"):
        integ.SkyRLTextEnv({}, {}).init([])


@pytest.mark.slow
def test_1000_reference_calls_round_trip_in_both_text_forms() -> None:
    """Every reference call of generated task sets (the chain and the final respond),
    written in each form, is read back as the same call and, run through the text session,
    gives the observation and reward the environment gives the call directly; at least
    1,000 calls per form."""
    counted = 0
    for domain, n in (("retail", 110), ("airline", 60), ("mock", 40)):
        env = package(domain).Environment()
        for task in tasks(domain, n, 7):
            chain = oracle_calls(task)
            want = []
            env.reset(options={"task": task_json(task)})
            for name, arguments in chain:
                want.append(env.step({"name": name, "arguments": arguments})[0])
            for style in ("hermes", "openai"):
                session = _session(domain)
                session.reset(task_json(task))
                for (name, arguments), observation in zip(chain, want, strict=True):
                    text = format_call(name, arguments, style)
                    assert parse_tool_calls(text) == [ParsedCall(name, arguments)]
                    out = session.step(text)
                    assert out.observation == format_results([(name, observation)])
                assert out.done and out.reward == 1.0, (task.id, style)
            counted += len(chain)
    assert counted >= 1000, counted
