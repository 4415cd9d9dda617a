"""The MCP server of every compiled package (``mcp_server.py``, the ``mcp`` extra): the strict
tool schemas served verbatim with read/write hints, reset and grade, one episode per session.

The fast tests call the server's handlers in-process; the slow ones start the compiled
package as a separate process (``python -m retail_env mcp``) and talk to it with the mcp
SDK's client, over stdio and over streamable HTTP on 127.0.0.1."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from graphgen.domains import builtin_names, load_builtin
from graphgen.envs.codegen import write_package
from tests.oracle_calls import oracle_calls, package, task_json, tasks

pytest.importorskip("mcp")


@pytest.mark.parametrize("domain", builtin_names())
def test_tools_are_the_strict_schemas_verbatim_with_hints(domain: str) -> None:
    from graphgen.envs.mcp_server import mcp_tools

    pkg = package(domain)
    write_tools = package(domain, "schemas").WRITE_TOOLS
    tools = {t.name: t for t in mcp_tools(pkg.TOOLS, write_tools)}
    assert list(tools) == [t["function"]["name"] for t in pkg.TOOLS] + ["reset", "grade"]
    writes = {t.name for t in load_builtin(domain).tools.values() if t.is_write}
    assert (
        set(write_tools) == writes
        and writes
        and writes != {t["function"]["name"] for t in pkg.TOOLS}
    )
    for schema in pkg.TOOLS:
        fn = schema["function"]
        tool = tools[fn["name"]]
        assert tool.input_schema == fn["parameters"]  # descriptions, enums, bounds, patterns
        assert tool.description == fn["description"]
        hints = tool.annotations
        assert hints is not None
        assert hints.read_only_hint is (fn["name"] not in writes)
        assert hints.destructive_hint is (fn["name"] in writes)


def test_a_tool_named_like_an_episode_tool_is_refused() -> None:
    from graphgen.envs.mcp_server import mcp_tools

    clash = {"function": {"name": "grade", "description": "x", "parameters": {}}}
    with pytest.raises(ValueError, match=r"'grade'.*rename"):
        mcp_tools([clash], [])


def test_episodes_are_kept_per_session_and_graded() -> None:
    from graphgen.envs.mcp_server import Episodes

    pkg = package("retail")
    episodes = Episodes(pkg.Environment)
    task = tasks("retail", 3)[0]
    text, error = episodes.call("a", "get_order_details", {"order_id": "O0001"})
    assert error and "reset(task) first" in text
    assert episodes.call("a", "reset", {"task": "{}"})[1]  # not a task: an error result
    assert episodes.call("a", "reset", {"task": task_json(task)}) == (task.instruction, False)
    *chain, (_, final) = oracle_calls(task)
    for name, arguments in chain:
        text, error = episodes.call("a", name, arguments)
        assert not error, text
    # session b never started an episode: a's state is not visible there
    assert episodes.call("b", chain[0][0], chain[0][1])[1]
    grade = json.loads(episodes.call("a", "grade", final)[0])
    assert grade["reward"] == 1.0 and grade["success"]
    episodes.call("b", "reset", {"task": task_json(task)})
    assert json.loads(episodes.call("b", "grade", {"answer": "no"})[0])["reward"] == 0.0


def test_the_least_recently_used_session_is_dropped_past_the_limit() -> None:
    from graphgen.envs.mcp_server import Episodes

    pkg = package("mock")
    episodes = Episodes(pkg.Environment, max_sessions=2)
    task = task_json(tasks("mock", 3)[0])
    for key in ("a", "b"):
        episodes.call(key, "reset", {"task": task})
    episodes.get("a")  # a is used again: b is now the oldest
    episodes.get("c")
    assert list(episodes.envs) == ["a", "c"]
    assert episodes.call("b", "grade", {"answer": ""})[1]  # b's episode is gone


# ------------------------------------------------------------------ the real server


@pytest.fixture(scope="module")
def compiled(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder holding the compiled retail package as ``retail_env``."""
    root = tmp_path_factory.mktemp("mcp")
    write_package(load_builtin("retail"), root / "retail_env")
    return root


async def _replay(session: Any, task: Any) -> float:
    """List the tools, replay the oracle through the session, return the graded reward."""
    listed = {t.name: t for t in (await session.list_tools()).tools}
    schemas = package("retail", "schemas")
    assert set(listed) == {t["function"]["name"] for t in schemas.TOOLS} | {"reset", "grade"}
    for schema in schemas.TOOLS:
        fn = schema["function"]
        assert listed[fn["name"]].input_schema == fn["parameters"]
        write = fn["name"] in schemas.WRITE_TOOLS
        assert listed[fn["name"]].annotations.read_only_hint is not write
        assert listed[fn["name"]].annotations.destructive_hint is write
    res = await session.call_tool("reset", {"task": task_json(task)})
    assert res.content[0].text == task.instruction and not res.is_error
    # a call the tool rejects is an error result with the environment's own message
    res = await session.call_tool("get_order_details", {"order_id": 7})
    assert res.is_error and res.content[0].text.startswith("Error:")
    *chain, (_, final) = oracle_calls(task)
    for name, arguments in chain:
        res = await session.call_tool(name, arguments)
        assert not res.is_error, res.content[0].text
    res = await session.call_tool("grade", final)
    grade = json.loads(res.content[0].text)
    return float(grade["reward"])


@pytest.mark.slow
def test_stdio_session_lists_full_schemas_and_replays_to_reward_1(compiled: Path) -> None:
    import anyio
    from mcp import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    task = tasks("retail", 3)[0]
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "retail_env", "mcp"], cwd=str(compiled)
    )

    async def run() -> float:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            return await _replay(session, task)

    assert anyio.run(run) == 1.0


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def http_server(compiled: Path) -> Iterator[str]:
    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "retail_env", "mcp", "--http", "--port", str(port)],
        cwd=compiled,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert time.monotonic() < deadline, "the MCP HTTP server did not start"
                time.sleep(0.2)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.terminate()
        proc.wait(timeout=30)


@pytest.mark.slow
def test_streamable_http_keeps_one_episode_per_session(http_server: str) -> None:
    import anyio
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    task = tasks("retail", 3)[0]

    async def run() -> tuple[float, bool]:
        async with (
            streamable_http_client(http_server) as (r1, w1),
            ClientSession(r1, w1) as first,
            streamable_http_client(http_server) as (r2, w2),
            ClientSession(r2, w2) as second,
        ):
            await first.initialize()
            await second.initialize()
            reward = await _replay(first, task)
            # the second session has no episode of its own yet
            res = await second.call_tool("grade", {"answer": "x"})
            return reward, res.is_error

    reward, second_is_empty = anyio.run(run)
    assert reward == 1.0 and second_is_empty
