"""``graphgen propose``: model-proposed domains, checked before use.

The model is :class:`tests.openai_stub.StubServer` on 127.0.0.1, reached through the real
``openai`` client; it serves the recorded proposals of ``tests/data/propose`` in order
(the n-th reply of a conversation is the n-th file of the scenario). Good proposals must
give verified task sets of all three kinds; each broken one must be repaired within the
round limit or rejected with its reasons; nothing a reply holds is ever executed.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from graphgen import pipeline as pl
from graphgen.cli import app
from graphgen.load import load_domain
from graphgen.propose import (
    NO_YAML,
    ProposeError,
    ProposeOptions,
    extract_yaml,
    output_paths,
    propose,
    reference_text,
    system_prompt,
    write_proposal,
)
from graphgen.toolschema import (
    SeedParam,
    SeedTool,
    ToolFileError,
    load_tools,
    parse_tools,
    seed_problems,
    seed_spec,
)
from tests.openai_stub import Scripted, StubServer, dead_base_url

DATA = Path(__file__).parent / "data" / "propose"
GOOD = "good_dental.reply.md"
DESCRIPTION = "a dental clinic with appointments, insurance claims and reminders"
SENTINEL = "PWNED_BY_PROPOSAL"
runner = CliRunner()


def _flat(text: str) -> str:
    """Command output without the line breaks rich puts in long messages."""
    return " ".join(text.split())


def _reply(name: str) -> str:
    return (DATA / name).read_text(encoding="utf-8")


def _script(names: list[str]) -> Any:
    """Serve the replies in order: the reply to a conversation with k assistant turns is
    the (k+1)-th file (the last one again past the end)."""
    replies = [_reply(n) for n in names]

    def script(body: dict[str, Any]) -> str:
        turn = sum(1 for m in body["messages"] if m["role"] == "assistant")
        return replies[min(turn, len(replies) - 1)]

    return script


@pytest.fixture
def serve() -> Iterator[Any]:
    servers: list[StubServer] = []

    def start(*names: str) -> StubServer:
        s = StubServer(_script(list(names)))
        s.__enter__()
        servers.append(s)
        return s

    yield start
    for s in servers:
        s.__exit__(None, None, None)


def _options(server: StubServer, **kw: Any) -> ProposeOptions:
    kw.setdefault("tasks", 10)  # a smaller trial run: the dental proposal still yields every kind
    return ProposeOptions(model="stub-model", base_url=server.base_url, retries=0, **kw)


# ------------------------------------------------------------------ good proposals


def test_good_proposal_gives_a_verified_task_set_of_every_kind(serve: Any, tmp_path: Path) -> None:
    server = serve(GOOD)
    res = propose(DESCRIPTION, _options(server, seed=7, temperature=0.0), source="dental.yaml")
    assert res.accepted and res.reasons == [] and len(res.rounds) == 1
    assert all(res.rounds[0].by_kind[k] > 0 for k in ("action", "information", "refusal"))
    # what was asked: the model, the sampling settings, the language and the example
    (body,) = server.requests
    assert body["model"] == "stub-model" and body["seed"] == 7 and body["temperature"] == 0.0
    system = body["messages"][0]["content"]
    assert reference_text() in system and "name: mock" in system
    assert DESCRIPTION in body["messages"][1]["content"]
    written = write_proposal(res, tmp_path / "dental.yaml")
    assert [p.name for p in written] == ["dental.yaml", "dental.transcript.json"]
    # the written domain goes through the pipeline as any hand-written file
    tasks = tmp_path / "tasks.jsonl"
    gen = pl.generate(tmp_path / "dental.yaml", 15, pl.Options(jobs=1), output=tasks)
    assert {t.kind for t in gen.tasks} == {"action", "information", "refusal"}
    check = pl.verify_tasks(tasks, tmp_path / "dental.yaml", pl.Options(jobs=1))
    assert check.ok and check.total == 15
    transcript = json.loads((tmp_path / "dental.transcript.json").read_text())
    assert transcript["accepted"] and transcript["rounds"][0]["reply"] == _reply(GOOD)
    assert transcript["usage"]["requests"] == 1


def test_the_prompt_ships_the_language_reference() -> None:
    """The reference comes from package data and is the docs page itself."""
    docs = Path(__file__).parents[1] / "docs" / "domain-language.md"
    assert reference_text() == docs.read_text(encoding="utf-8")
    assert "```yaml" in system_prompt()


# ------------------------------------------------------------------ repair paths

REPAIRS = [
    ("broken_invalid_yaml.reply.md", GOOD, ["YAML syntax error", "line 28"]),
    ("broken_no_yaml.reply.md", "good_dental_bare.reply.md", [NO_YAML]),
    ("broken_python_code.reply.md", GOOD, [NO_YAML]),
    (
        "broken_unknown_keys.reply.md",
        GOOD,
        [
            "unknown key 'preconditions' in tool 'confirm_appointment'",
            "'indexes'",
        ],
    ),
    (
        "broken_type_errors.reply.md",
        GOOD,
        [
            "tool 'file_claim' (line 89), requires[2]: cannot compare int with date",
            "'canceled' is not a member of enum Appointment.status",
        ],
    ),
    (
        "broken_unknown_entity.reply.md",
        GOOD,
        ["fields.dentist_id: unknown type 'Dentist'", "for a in Visit"],
    ),
    ("broken_no_refusal.reply.md", GOOD, ["yielded no refusal task", "no_refusal_target"]),
    ("broken_python_tag.reply.md", GOOD, ["the YAML tag '!!python/object/apply:os.system'"]),
    ("broken_expression_code.reply.md", GOOD, ["calls are not allowed: __import__"]),
]


@pytest.mark.parametrize(("broken", "fixed", "expected"), REPAIRS, ids=[r[0] for r in REPAIRS])
def test_broken_proposal_is_repaired_from_its_located_problems(
    serve: Any,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    broken: str,
    fixed: str,
    expected: list[str],
) -> None:
    monkeypatch.chdir(tmp_path)  # where a smuggled command would leave its file
    server = serve(broken, fixed)
    res = propose(DESCRIPTION, _options(server, rounds=1), source="dental.yaml")
    assert res.accepted and len(res.rounds) == 2, res.reasons
    first = res.rounds[0].problems
    for text in expected:
        assert any(text in p for p in first), (text, first)
    # the problems went back to the model in the repair request, located
    repair = server.requests[1]["messages"][-1]
    assert repair["role"] == "user"
    for text in expected:
        assert text in repair["content"]
    assert not (tmp_path / SENTINEL).exists()
    assert not list(tmp_path.iterdir())  # propose itself writes nothing


def test_unrepaired_proposal_is_rejected_with_its_reasons(serve: Any, tmp_path: Path) -> None:
    server = serve("broken_type_errors.reply.md")
    res = propose(DESCRIPTION, _options(server, rounds=2), source="dental.yaml")
    assert not res.accepted and res.domain is None and len(res.rounds) == 3
    assert len(server.requests) == 3
    assert any("cannot compare int with date" in r for r in res.reasons)
    assert write_proposal(res, tmp_path / "dental.yaml") == []
    assert not list(tmp_path.iterdir())
    kept = write_proposal(res, tmp_path / "dental.yaml", keep_rejected=True)
    assert [p.name for p in kept] == ["dental.rejected.yaml", "dental.rejected.transcript.json"]
    assert not (tmp_path / "dental.yaml").exists()


def test_a_tag_smuggling_reply_is_rejected_without_running_anything(
    serve: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    server = serve("broken_python_tag.reply.md", "broken_expression_code.reply.md")
    res = propose(DESCRIPTION, _options(server, rounds=1), source="dental.yaml")
    assert not res.accepted
    assert any("calls are not allowed" in r for r in res.reasons)
    assert "!!python" in res.rounds[0].problems[0]
    assert not (tmp_path / SENTINEL).exists()


def test_the_transcript_is_the_same_for_the_same_replies(serve: Any, tmp_path: Path) -> None:
    texts = []
    for run in ("a", "b"):
        server = serve("broken_unknown_keys.reply.md", GOOD)
        res = propose(DESCRIPTION, _options(server, rounds=1, seed=3), source="dental.yaml")
        out = tmp_path / run / "dental.yaml"
        write_proposal(res, out)
        texts.append((out.read_bytes(), output_paths(out)[1].read_bytes()))
    assert texts[0] == texts[1]
    assert b"127.0.0.1" not in texts[0][1]  # the endpoint's address is not recorded


def test_a_reply_without_text_is_no_yaml() -> None:
    """A reply with no content (tool calls, null) counts as a reply without YAML."""
    replies = [
        Scripted(message={"role": "assistant", "content": None}),
        Scripted([("write_domain", "{}")]),
        _reply(GOOD),
    ]

    def script(body: dict[str, Any]) -> Scripted | str:
        return replies[sum(1 for m in body["messages"] if m["role"] == "assistant")]

    with StubServer(script) as server:
        res = propose(DESCRIPTION, _options(server, rounds=2), source="dental.yaml")
    assert res.accepted and [r.problems for r in res.rounds[:2]] == [[NO_YAML], [NO_YAML]]


def test_reply_extraction() -> None:
    assert extract_yaml("```yml\na: 1\n```\n```yaml\nb: 2\n```") == "a: 1\n"
    assert extract_yaml("```\nname: x\n```") == "name: x\n"
    assert extract_yaml("# a comment\nname: x") == "# a comment\nname: x\n"
    assert extract_yaml("```json\n{}\n```") is None
    assert extract_yaml("") is None


def test_an_endpoint_that_is_down_is_an_error() -> None:
    opts = ProposeOptions(model="m", base_url=dead_base_url(), retries=0, timeout_s=5)
    with pytest.raises(ProposeError, match="failed"):
        propose(DESCRIPTION, opts)


def test_bad_arguments_are_refused() -> None:
    opts = ProposeOptions(model="m", base_url="http://127.0.0.1:9/v1", rounds=-1)
    with pytest.raises(ProposeError, match="repair rounds"):
        propose(DESCRIPTION, opts)
    with pytest.raises(ProposeError, match="describe the service"):
        propose("  ", ProposeOptions(model="m", base_url="http://127.0.0.1:9/v1"))


# ------------------------------------------------------------------ --from-tools


@pytest.mark.parametrize("tools_file", ["dental_tools.openai.json", "dental_tools.mcp.json"])
def test_from_tools_seeds_the_prompt_and_keeps_the_tools(serve: Any, tools_file: str) -> None:
    tools = load_tools(DATA / tools_file)
    assert [t.name for t in tools][:2] == ["find_patient", "list_appointments"]
    server = serve("broken_seed_dropped.reply.md", GOOD)
    res = propose("", _options(server, rounds=1), source="dental.yaml", tools=tools)
    assert res.accepted and len(res.rounds) == 2
    assert res.rounds[0].problems == [
        "dental.yaml: the tool 'send_reminder' of the tool file is missing; keep it"
    ]
    ask = server.requests[0]["messages"][1]["content"]
    assert "send_reminder:" in ask and "enum: [email, sms]" in ask
    assert "Appointment:" in ask and "key: {name: appointment_id" in ask


def test_tool_file_types_and_requirements() -> None:
    tools = parse_tools(
        [
            {
                "name": "book",
                "parameters": {
                    "type": "object",
                    "properties": {
                        "day": {"type": "string", "format": "date"},
                        "seats": {"type": "integer", "minimum": 1, "maximum": 9},
                        "price": {"type": "number"},
                        "wheelchair": {"type": "boolean"},
                        "note": {"type": ["string", "null"]},
                        "counts": {"type": "array", "items": {"type": "integer"}},
                        "room_id": {"type": "string"},
                        "guest_ids": {"type": "array", "items": {"type": "string"}},
                    },
                    "required": ["day", "seats"],
                },
            }
        ]
    )
    got = {p.name: (p.kind, p.ty, p.required) for p in tools[0].params}
    assert got == {
        "day": ("string", "date", True),
        "seats": ("integer", "int", True),
        "price": ("number", "int", False),
        "wheelchair": ("boolean", "bool", False),
        "note": ("string", "str", False),
        "counts": ("array", "list[int]", False),
        "room_id": ("string", "Room", False),
        "guest_ids": ("array", "list[Guest]", False),
    }
    entities = seed_spec(tools)["entities"]
    assert entities == {
        "Room": {"key": {"name": "room_id", "prefix": "RO", "width": 3}},
        "Guest": {"key": {"name": "guest_id", "prefix": "GU", "width": 3}},
    }
    assert tools[0].params[1].minimum == 1 and tools[0].params[1].maximum == 9


def test_a_bad_tool_file_lists_every_problem(tmp_path: Path) -> None:
    with pytest.raises(ToolFileError) as exc:
        load_tools(DATA / "bad_tools.mcp.json")
    text = "\n".join(exc.value.problems)
    for part in (
        "tool 'find-patient': a tool name is an identifier",
        "tool 'book': 'required' names 'dentist', which is not a property",
        "tool 'book', parameter 'slot': unsupported type \"object\"",
        "tool 'book': listed twice",
        "parameter 'method': enum members must be identifier-like strings",
        "parameter '_secret': the name '_secret' starts with '_'",
        "tools[4] has no 'name' string",
    ):
        assert part in text, part
    assert all(p.startswith(str(DATA / "bad_tools.mcp.json")) for p in exc.value.problems)
    bad = tmp_path / "t.json"
    bad.write_text('[{"name": "x",}]', encoding="utf-8")
    with pytest.raises(ToolFileError, match=r"not JSON: .* \(line 1, column 15\)"):
        load_tools(bad)
    bad.write_text('{"functions": []}', encoding="utf-8")
    with pytest.raises(ToolFileError, match="expected a list of OpenAI tools"):
        load_tools(bad)
    with pytest.raises(ToolFileError, match="cannot read"):
        load_tools(tmp_path / "missing.json")


def test_seed_problems_catch_a_changed_parameter_type() -> None:
    domain = load_domain(DATA / "good_dental.yaml")
    seeds = [
        SeedTool(
            "send_reminder",
            "",
            (
                SeedParam(
                    "channel",
                    "enum",
                    "enum [email, sms, phone]",
                    True,
                    "",
                    ("email", "sms", "phone"),
                ),
                SeedParam("patient_id", "integer", "int", True),
                SeedParam("urgent", "boolean", "bool", True),
                SeedParam("note", "string", "str", False),
            ),
        )
    ]
    problems = seed_problems(domain, seeds, "d.yaml")
    assert problems == [
        "d.yaml: tool 'send_reminder', parameter 'channel' is enum Channel{email, sms}, but "
        "the tool file declares it as enum (use enum [email, sms, phone])",
        "d.yaml: tool 'send_reminder', parameter 'patient_id' is Patient id, but the tool "
        "file declares it as integer (use int)",
        "d.yaml: tool 'send_reminder' lost its required parameter 'urgent'",
    ]


# ------------------------------------------------------------------ the command


def test_cli_accepts_and_writes(serve: Any, tmp_path: Path) -> None:
    server = serve("broken_unknown_entity.reply.md", GOOD)
    out = tmp_path / "dental.yaml"
    args = ["propose", DESCRIPTION, "--model", "m", "--base-url", server.base_url]
    res = runner.invoke(app, [*args, "-o", str(out), "--rounds", "1", "--seed", "5"])
    assert res.exit_code == 0, res.output
    assert "round 1: 2 problem(s)" in _flat(res.output) and "round 2: accepted" in _flat(res.output)
    assert out.read_text(encoding="utf-8") == extract_yaml(_reply(GOOD))
    assert server.requests[0]["seed"] == 5
    # an existing output is refused before any request
    again = runner.invoke(app, [*args, "-o", str(out)])
    assert again.exit_code == 2 and "already exists" in _flat(again.output)
    assert len(server.requests) == 2


def test_cli_rejects_and_writes_nothing(serve: Any, tmp_path: Path) -> None:
    server = serve("broken_no_yaml.reply.md")
    out = tmp_path / "dental.yaml"
    args = ["propose", DESCRIPTION, "--model", "m", "--base-url", server.base_url, "-o", str(out)]
    res = runner.invoke(app, [*args, "--rounds", "1"])
    assert res.exit_code == 1
    assert "rejected after 2 round(s)" in _flat(res.output) and "holds no YAML" in _flat(res.output)
    assert not list(tmp_path.iterdir())
    kept = runner.invoke(app, [*args, "--rounds", "0", "--keep-rejected"])
    assert kept.exit_code == 1
    transcript = json.loads((tmp_path / "dental.rejected.transcript.json").read_text())
    assert transcript["accepted"] is False and transcript["reasons"] == [NO_YAML]
    assert not (tmp_path / "dental.rejected.yaml").exists()  # the reply held no YAML


def test_cli_from_tools(serve: Any, tmp_path: Path) -> None:
    server = serve(GOOD)
    out = tmp_path / "dental.yaml"
    tools = str(DATA / "dental_tools.openai.json")
    base = ["propose", "--model", "m", "--base-url", server.base_url, "-o", str(out)]
    res = runner.invoke(app, [*base, "--from-tools", tools])
    assert res.exit_code == 0, res.output
    assert json.loads(output_paths(out)[1].read_text())["tools_file"] == "dental_tools.openai.json"
    bad = runner.invoke(app, [*base, "--from-tools", str(DATA / "bad_tools.mcp.json"), "--force"])
    assert bad.exit_code == 1 and "listed twice" in _flat(bad.output)
    assert len(server.requests) == 1
    missing = runner.invoke(app, ["propose", DESCRIPTION, "-o", str(out)])
    assert missing.exit_code == 2 and "--model" in _flat(missing.output)
