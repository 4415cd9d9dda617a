"""`graphgen schema`: the JSON Schema of a domain file accepts every built-in domain."""

from __future__ import annotations

import json
from typing import Any

import jsonschema
import pytest
import yaml
from typer.testing import CliRunner

from graphgen.cli import app
from graphgen.domains import builtin_names, builtin_path
from graphgen.schema import domain_json_schema

runner = CliRunner()


def _validator() -> jsonschema.Draft202012Validator:
    schema = domain_json_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def _errors(data: Any) -> list[str]:
    return [e.message for e in _validator().iter_errors(data)]


@pytest.mark.parametrize("name", builtin_names())
def test_builtin_domains_validate(name: str) -> None:
    data = yaml.safe_load(builtin_path(name).read_text(encoding="utf-8"))
    assert _errors(data) == []


def test_the_schema_rejects_what_the_loader_rejects() -> None:
    data = yaml.safe_load(builtin_path("mock").read_text(encoding="utf-8"))
    data["tools"]["pay"]["params"]["amount"]["colour"] = "red"  # unknown key
    best = jsonschema.exceptions.best_match(_validator().iter_errors(data))
    assert best is not None and "'colour' was unexpected" in best.message
    data = yaml.safe_load(builtin_path("mock").read_text(encoding="utf-8"))
    data["entities"]["Account"]["size"] = "many"
    assert _errors(data)
    del data["tools"]
    assert any("'tools' is a required property" in e for e in _errors(data))


def test_the_command_prints_it_with_descriptions() -> None:
    res = runner.invoke(app, ["schema"])
    assert res.exit_code == 0
    schema = json.loads(res.stdout)
    assert schema == json.loads(json.dumps(domain_json_schema()))
    assert schema["title"] == "graphgen domain file"
    tool = schema["$defs"]["ToolSpec"]["properties"]
    assert all(p.get("description") for p in tool.values()), tool
    assert runner.invoke(app, ["schema"]).stdout_bytes == res.stdout_bytes
