"""``graphgen export``: Hugging Face datasets, τ²-bench files, SFT conversations, MCP tools.

Each format is read back the way its consumer reads it (``datasets``, pydantic models
of τ²-bench's task schema, the compiled environment, the MCP SDK's types) and the
tasks must still be solvable there.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

import pytest
from pydantic import BaseModel, ConfigDict, ValidationError
from typer.testing import CliRunner

from graphgen import pipeline as pl
from graphgen.cli import app
from graphgen.domains import load_builtin
from graphgen.envs.agent import OracleAgent, env_task, run_episode
from graphgen.envs.exports import ExportError, TaskSet
from graphgen.envs.exports.hf import COLUMNS, export_hf
from graphgen.envs.exports.mcp import mcp_tools
from graphgen.envs.exports.sft import export_sft, oracle_conversation
from graphgen.envs.exports.tau2 import export_tau2
from graphgen.envs.load import load_env_module
from graphgen.envs.schemas import FINISH_NAME, openai_tools
from graphgen.grading import expected_final
from graphgen.tasks.model import Call, Task
from graphgen.tasks.taskset import generate, read_taskset, write_taskset

runner = CliRunner()


@pytest.fixture(scope="module")
def mock_set(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, TaskSet]:
    """A mock task set, written to a file (mock makes no refusal a hedge cannot pass:
    refusals are covered by the retail and airline tests)."""
    res = generate(load_builtin("mock"), 12, 0)
    assert {t.kind for t in res.tasks} == {"action", "information"}
    path = tmp_path_factory.mktemp("mock") / "mock.jsonl"
    write_taskset(path, res.manifest, res.tasks)
    return path, (res.manifest, res.tasks)


@pytest.fixture(scope="module")
def two_domains(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    """Retail and airline task sets, one file each."""
    folder = tmp_path_factory.mktemp("sets")
    files = []
    for name in ("retail", "airline"):
        res = generate(load_builtin(name), 12, 0)
        files.append(folder / f"{name}.jsonl")
        write_taskset(files[-1], res.manifest, res.tasks)
    return files


def _oracle_passes(task: Task) -> bool:
    env = load_env_module(load_builtin(task.domain)).Environment(max_steps=200)
    return run_episode(env, task, OracleAgent(), 100).success


# ------------------------------------------------------------------ Hugging Face


def _load_parquet(path: Path, cache: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    import datasets

    return datasets.load_dataset("parquet", data_files=str(path), cache_dir=str(cache))["train"]


@pytest.mark.slow
def test_hf_retail_and_airline_round_trip_through_datasets_into_reset(
    two_domains: list[Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    written = pl.export_tasks(two_domains, "hf", tmp_path / "hf")
    assert [p.relative_to(tmp_path / "hf").as_posix() for p in written] == [
        "data/train.parquet",
        "manifests.json",
        "README.md",
    ]
    originals = [t for f in two_domains for t in read_taskset(f)[1]]
    rows = _load_parquet(written[0], tmp_path / "cache", monkeypatch)
    assert rows.column_names == [c for c, _ in COLUMNS]
    assert len(rows) == len(originals) == 24
    for row, orig in zip(rows, originals, strict=True):
        task = Task.model_validate_json(row["task"])
        assert task == orig  # exact: no date, zip code or table turned into another type
        assert (row["id"], row["domain"], row["kind"], row["instruction"]) == (
            orig.id,
            orig.domain,
            orig.kind,
            orig.instruction,
        )
        assert (row["difficulty"], row["min_calls"]) == (orig.difficulty, orig.min_calls)
        env = load_env_module(load_builtin(task.domain)).Environment()
        first, info = env.reset(options={"task": row["task"]})  # the JSON text as it is
        assert first == orig.instruction and info["task_id"] == orig.id
        assert _oracle_passes(task), task.id
    manifests = json.loads(written[1].read_text())
    assert [m["domain"] for m in manifests] == ["retail", "airline"]
    card = written[2].read_text()
    assert card.startswith("---\n") and "path: data/train.parquet" in card
    assert "num_examples: 24" in card


def test_hf_export_is_deterministic_and_refuses_duplicate_ids(
    mock_set: tuple[Path, TaskSet], tmp_path: Path
) -> None:
    _, ts = mock_set
    a = export_hf([ts], tmp_path / "a")
    b = export_hf([ts], tmp_path / "b")
    for x, y in zip(a, b, strict=True):
        assert x.read_bytes() == y.read_bytes(), x.name
    with pytest.raises(ExportError, match="mock-0-00000"):
        export_hf([ts, ts], tmp_path / "c")


def test_hf_rows_hold_the_task_lines(mock_set: tuple[Path, TaskSet], tmp_path: Path) -> None:
    import pyarrow.parquet as pq

    _, (_, tasks) = mock_set
    (data, *_) = export_hf([mock_set[1]], tmp_path)
    table = pq.read_table(data)
    assert [str(f.type) for f in table.schema] == [ty for _, ty in COLUMNS]
    got = [Task.model_validate_json(s) for s in table.column("task").to_pylist()]
    assert got == tasks


# ------------------------------------------------------------------ τ²-bench
# Pydantic models mirroring τ²-bench's Task schema (its data model in
# tau2/data_model/tasks.py: Task, UserScenario, StructuredUserInstructions, Description,
# InitialState, InitializationData, EvaluationCriteria, Action, RewardType). τ²-bench
# needs Python >= 3.12, so its own classes cannot be imported here; extra="forbid" makes
# these stricter than the originals, so a field name of ours that τ² does not know fails.


class _T2(BaseModel):
    model_config = ConfigDict(extra="forbid")


class T2Instructions(_T2):
    domain: str
    reason_for_call: str
    known_info: str | None = None
    unknown_info: str | None = None
    task_instructions: str


class T2UserScenario(_T2):
    persona: str | None = None
    instructions: T2Instructions | str


class T2Description(_T2):
    purpose: str | None = None
    relevant_policies: str | None = None
    notes: str | None = None


class T2InitializationData(_T2):
    agent_data: dict[str, Any] | None = None
    user_data: dict[str, Any] | None = None


class T2EnvFunctionCall(_T2):
    env_type: Literal["user", "assistant"]
    func_name: str
    arguments: dict[str, Any]


class T2InitialState(_T2):
    initialization_data: T2InitializationData | None = None
    initialization_actions: list[T2EnvFunctionCall] | None = None
    message_history: list[dict[str, Any]] | None = None


class T2Action(_T2):
    action_id: str
    requestor: Literal["user", "assistant"] = "assistant"
    name: str
    arguments: dict[str, Any]
    info: str | None = None
    compare_args: list[str] | None = None


class T2EvaluationCriteria(_T2):
    actions: list[T2Action] | None = None
    env_assertions: list[dict[str, Any]] | None = None
    communicate_info: list[str] | None = None
    nl_assertions: list[str] | None = None
    reward_basis: list[Literal["DB", "ENV_ASSERTION", "NL_ASSERTION", "ACTION", "COMMUNICATE"]]


class T2Task(_T2):
    id: str
    description: T2Description | None = None
    user_scenario: T2UserScenario
    ticket: str | None = None
    initial_state: T2InitialState | None = None
    evaluation_criteria: T2EvaluationCriteria | None = None


def _merge(base: Any, update: Any) -> Any:
    """τ²-bench's database update: a deep merge of ``update`` onto ``base``."""
    if isinstance(base, dict) and isinstance(update, dict):
        out = dict(base)
        for k, v in update.items():
            out[k] = _merge(base.get(k), v) if k in base else v
        return out
    return update


def test_tau2_fixture_models_reject_what_tau2_would(mock_set: tuple[Path, TaskSet]) -> None:
    from graphgen.envs.exports.tau2 import tau2_task

    good = tau2_task(mock_set[1][1][0])
    T2Task.model_validate(good)
    for broken in (
        {k: v for k, v in good.items() if k != "user_scenario"},
        {**good, "evaluation_criteria": {**good["evaluation_criteria"], "reward_basis": ["X"]}},
        {**good, "goal": {}},
        {**good, "evaluation_criteria": {"actions": [{"tool": "x", "args": {}}]}},
    ):
        with pytest.raises(ValidationError):
            T2Task.model_validate(broken)


def _tau2_check(folder: Path, tasks: list[Task]) -> None:
    """Every exported task validates and its actions reach the goal from db.json merged
    with its initialization data."""
    d = load_builtin(folder.name)
    exported = json.loads((folder / "tasks.json").read_text())
    assert [e["id"] for e in exported] == [t.id for t in tasks]
    db = json.loads((folder / "db.json").read_text())
    assert json.loads((folder / "tools.json").read_text()) == openai_tools(d)
    assert d.policy.strip() in (folder / "policy.md").read_text()
    env = load_env_module(d).Environment(max_steps=200)
    for raw, task in zip(exported, tasks, strict=True):
        t2 = T2Task.model_validate(raw)
        assert t2.evaluation_criteria is not None and t2.initial_state is not None
        assert t2.evaluation_criteria.reward_basis == ["DB", "COMMUNICATE"]
        data = t2.initial_state.initialization_data
        assert data is not None and data.agent_data is not None
        state = _merge(db, data.agent_data)
        assert state == task.initial_state
        actions = t2.evaluation_criteria.actions or []
        env.reset(options={"task": {**env_task(task), "initial_state": state}})
        for a in actions:
            obs, *_ = env.step({"name": a.name, "arguments": a.arguments})
            assert not obs.startswith("Error"), (task.id, a.name, obs)
        final = env.db.to_state()["tables"]  # id counters are not part of the goal
        goal = task.goal.model_dump(mode="json")
        assert final == expected_final(task.initial_state, goal)["tables"], task.id
        said = t2.evaluation_criteria.communicate_info or []
        if task.kind == "action":
            assert said == []
        else:  # what τ² looks for is what a right answer says
            assert said and all(s in OracleAgentText.of(task) for s in said)
        if task.kind == "refusal":
            assert task.refused_call is not None
            assert task.refused_call.tool not in [a.name for a in actions]


class OracleAgentText:
    """The oracle's final answer of a task (what the environment grades as right)."""

    @staticmethod
    def of(task: Task) -> str:
        agent = OracleAgent()
        agent.start(task)
        return agent.final


def test_tau2_mock_export_validates_and_replays(
    mock_set: tuple[Path, TaskSet], tmp_path: Path
) -> None:
    files = export_tau2([mock_set[1]], {"mock": load_builtin("mock")}, tmp_path)
    assert [p.relative_to(tmp_path).as_posix() for p in files] == [
        "mock/tasks.json",
        "mock/policy.md",
        "mock/tools.json",
        "mock/db.json",
    ]
    _tau2_check(tmp_path / "mock", mock_set[1][1])


@pytest.mark.slow
def test_tau2_retail_and_airline_validate_and_replay(
    two_domains: list[Path], tmp_path: Path
) -> None:
    pl.export_tasks(two_domains, "tau2", tmp_path)
    for f in two_domains:
        _tau2_check(tmp_path / f.stem, read_taskset(f)[1])


# ------------------------------------------------------------------ SFT


def _replay_conversation(conv: dict[str, Any], task: Task) -> float:
    """Make the conversation's calls in a fresh environment: every observation must be
    the one recorded, and the final answer must earn the reward."""
    env = load_env_module(load_builtin(task.domain)).Environment(max_steps=200)
    first, _ = env.reset(options={"task": env_task(task)})
    msgs = conv["messages"]
    assert msgs[0]["role"] == "system" and msgs[1] == {"role": "user", "content": first}
    pending: dict[str, str] = {}
    for m in msgs[2:-1]:
        if m["role"] == "assistant":
            assert m["tool_calls"], "only the last assistant message has no call"
            for c in m["tool_calls"]:
                assert isinstance(c["function"]["arguments"], dict)
                obs, *_ = env.step(c["function"])
                pending[c["id"]] = obs
        else:
            assert m["role"] == "tool" and pending.pop(m["tool_call_id"]) == m["content"]
    assert not pending
    last = msgs[-1]
    assert last["role"] == "assistant" and "tool_calls" not in last and last["content"]
    _, reward, terminated, _, _ = env.step(
        {"name": FINISH_NAME, "arguments": {"answer": last["content"]}}
    )
    assert terminated
    return reward


def test_sft_conversations_execute_and_end_with_the_answer(
    mock_set: tuple[Path, TaskSet], tmp_path: Path
) -> None:
    _, ts = mock_set
    chats, shared = export_sft([ts], {"mock": load_builtin("mock")}, tmp_path)
    lines = [json.loads(x) for x in chats.read_text().splitlines()]
    assert [x["id"] for x in lines] == [t.id for t in ts[1]]
    for line, task in zip(lines, ts[1], strict=True):
        names = [t["function"]["name"] for t in line["tools"]]
        assert FINISH_NAME not in names and sorted(names) == sorted(load_builtin("mock").tools)
        assert _replay_conversation(line, task) == 1.0, task.id
        calls = [c for m in line["messages"] for c in m.get("tool_calls", [])]
        assert [c["function"]["name"] for c in calls] == [c.tool for c in task.chain]
    for raw, line in zip(shared.read_text().splitlines(), lines, strict=True):
        sg = json.loads(raw)
        turns = sg["conversations"]
        assert turns[0]["from"] == "human" and turns[-1]["from"] == "gpt"
        assert turns[-1]["value"] == line["messages"][-1]["content"]
        assert sg["system"] == line["messages"][0]["content"]
        assert json.loads(sg["tools"]) == line["tools"]
        kinds = [t["from"] for t in turns]
        for i, k in enumerate(kinds):  # every call is answered by its observation
            if k == "function_call":
                assert kinds[i + 1] == "observation"
                json.loads(turns[i]["value"])["arguments"]


def test_sft_export_refuses_a_task_the_oracle_fails(mock_set: tuple[Path, TaskSet]) -> None:
    _, (_, tasks) = mock_set
    task = next(t for t in tasks if t.kind == "action")
    write = task.chain[-1]
    bad = task.model_copy(update={"chain": [*task.chain[:-1], Call(tool=write.tool, args={})]})
    env = load_env_module(load_builtin("mock")).Environment()
    with pytest.raises(ExportError, match=task.id):
        oracle_conversation(env, bad)


@pytest.mark.slow
def test_sft_retail_and_airline_conversations_execute(
    two_domains: list[Path], tmp_path: Path
) -> None:
    chats, _ = pl.export_tasks(two_domains, "sft", tmp_path)
    tasks = {t.id: t for f in two_domains for t in read_taskset(f)[1]}
    lines = [json.loads(x) for x in chats.read_text().splitlines()]
    assert len(lines) == len(tasks) == 24
    for line in lines:
        assert _replay_conversation(line, tasks[line["id"]]) == 1.0, line["id"]


# ------------------------------------------------------------------ MCP


def test_mcp_tool_list_matches_the_sdk_and_the_strict_schemas() -> None:
    import mcp.types

    for name in ("mock", "retail"):
        d = load_builtin(name)
        listed = mcp.types.ListToolsResult.model_validate(mcp_tools(d))
        assert [t.name for t in listed.tools] == list(d.tools)
        strict = {s["function"]["name"]: s["function"] for s in openai_tools(d)}
        for t in listed.tools:
            tool = d.tools[t.name]
            assert t.annotations is not None
            assert t.annotations.read_only_hint is (not tool.is_write)
            assert t.annotations.destructive_hint is tool.is_write
            # served verbatim: descriptions and bounds survive
            assert t.input_schema == strict[t.name]["parameters"]
            assert t.description == strict[t.name]["description"]
    pay = mcp_tools(load_builtin("mock"))["tools"][3]
    assert pay["inputSchema"]["properties"]["amount"]["maximum"] == 5000
    with pytest.raises(ValidationError):
        mcp.types.ListToolsResult.model_validate({"tools": [{"name": "x"}]})


# ------------------------------------------------------------------ the command


def test_export_command_writes_each_format_and_rejects_bad_ones(
    mock_set: tuple[Path, TaskSet], tmp_path: Path
) -> None:
    path, _ = mock_set
    for fmt, first in (("mcp", "mock.mcp.json"), ("tau2", "tasks.json"), ("sft", "messages.jsonl")):
        res = runner.invoke(app, ["export", str(path), "--to", fmt, "-o", str(tmp_path / fmt)])
        assert res.exit_code == 0, res.output
        assert first in res.output
    res = runner.invoke(app, ["export", str(path), "--to", "csv", "-o", str(tmp_path / "x")])
    assert res.exit_code == 2 and "hf, tau2, sft, mcp" in res.output
    res = runner.invoke(app, ["export", str(tmp_path / "nope.jsonl"), "--to", "hf", "-o", "x"])
    assert res.exit_code == 1 and "nope.jsonl" in res.output
