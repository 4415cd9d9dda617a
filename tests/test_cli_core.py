"""The foundation commands: domains, state, graph."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from graphgen.cli import app
from graphgen.domains import builtin_names, load_builtin

runner = CliRunner()


def test_domains_lists_every_builtin_with_counts() -> None:
    res = runner.invoke(app, ["domains"])
    assert res.exit_code == 0, res.output
    for name in builtin_names():
        s = load_builtin(name).summary()
        # the name cell opens its row; a description may mention another domain's name
        row = next(line for line in res.output.splitlines() if line.startswith(f"│ {name} "))
        cells = [c.strip() for c in row.split("│")]
        assert cells[2:4] == [str(s["entities"]), str(s["tools"])], row


@pytest.mark.parametrize("name", builtin_names())
def test_state_same_seed_same_bytes_other_seed_differs(name: str) -> None:
    a = runner.invoke(app, ["state", name, "--seed", "3"])
    b = runner.invoke(app, ["state", name, "--seed", "3"])
    c = runner.invoke(app, ["state", name, "--seed", "4"])
    assert a.exit_code == b.exit_code == c.exit_code == 0
    assert a.stdout_bytes == b.stdout_bytes
    assert a.stdout_bytes != c.stdout_bytes
    data = json.loads(a.stdout)
    assert set(data["tables"]) == set(load_builtin(name).entities)


def test_state_size_override_and_bad_size() -> None:
    res = runner.invoke(app, ["state", "mock", "--size", "Account=40"])
    assert res.exit_code == 0
    assert len(json.loads(res.stdout)["tables"]["Account"]) == 40
    bad = runner.invoke(app, ["state", "mock", "--size", "Nope=3"])
    assert bad.exit_code == 2 and "Account" in bad.output


def test_state_scale_multiplies_every_table_and_size_wins() -> None:
    res = runner.invoke(app, ["state", "mock", "--scale", "3", "--size", "Payment=4"])
    assert res.exit_code == 0, res.output
    tables = json.loads(res.stdout)["tables"]
    assert len(tables["Account"]) == 3 * load_builtin("mock").entities["Account"].size
    assert len(tables["Payment"]) == 4
    big = runner.invoke(app, ["state", "mock", "--scale", "100000"])
    assert big.exit_code == 2 and "bad --scale 100000" in big.output


def test_generate_on_scaled_tables_records_the_sizes(tmp_path: Path) -> None:
    mock = load_builtin("mock")
    out = tmp_path / "big.jsonl"
    args = ["generate", "mock", "-n", "2", "--no-prove", "-j", "1", "-o", str(out)]
    res = runner.invoke(app, [*args, "--scale", "3", "--size", "Payment=5"])
    assert res.exit_code == 0, res.output
    manifest, *tasks = (json.loads(line) for line in out.read_text().splitlines())
    want = {"Account": 3 * mock.entities["Account"].size, "Payment": 5}
    assert manifest["manifest"]["options"]["sizes"] == want
    for t in tasks:
        assert {e: len(rows) for e, rows in t["initial_state"]["tables"].items()} == want
    # the default sizes are recorded as no sizes at all, as before the option
    plain = tmp_path / "plain.jsonl"
    res = runner.invoke(app, [*args[:-1], str(plain)])
    assert res.exit_code == 0, res.output
    assert json.loads(plain.read_text().splitlines()[0])["manifest"]["options"]["sizes"] == {}
    bad = runner.invoke(app, [*args, "--size", "Nope=3", "--force"])
    assert bad.exit_code == 2 and "Account, Payment" in " ".join(bad.output.split())


@pytest.mark.parametrize("fmt", ["json", "dot", pytest.param("png", marks=pytest.mark.slow)])
def test_graph_exports(fmt: str, tmp_path: Path) -> None:
    out = tmp_path / f"g.{fmt}"
    res = runner.invoke(app, ["graph", "retail", "--format", fmt, "-o", str(out)])
    assert res.exit_code == 0, res.output
    data = out.read_bytes()
    if fmt == "json":
        nodes = {n["id"] for n in json.loads(data)["nodes"]}
        assert "tool:cancel_pending_order" in nodes and "key:Order" in nodes
    elif fmt == "dot":
        assert data.startswith(b"digraph") and b"cancel_pending_order" in data
    else:
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 10_000


def test_unknown_domain_and_format_fail_cleanly(tmp_path: Path) -> None:
    res = runner.invoke(app, ["graph", "nope", "-o", str(tmp_path / "x")])
    assert res.exit_code == 1 and "nope" in res.output
    res = runner.invoke(app, ["graph", "mock", "--format", "gif", "-o", str(tmp_path / "x")])
    assert res.exit_code == 2 and "unknown format" in res.output


def test_run_does_the_whole_pipeline(tmp_path: Path) -> None:
    out = tmp_path / "out"
    res = runner.invoke(app, ["run", "mock", "-n", "8", "-o", str(out), "-j", "1"])
    assert res.exit_code == 0, res.output
    for name in (
        "graph.json",
        "graph.png",
        "tasks.jsonl",
        "mock_env/tools.py",
        "trajectories_oracle.jsonl",
        "trajectories_noop.jsonl",
    ):
        assert (out / name).is_file(), name
    assert len((out / "tasks.jsonl").read_text().splitlines()) == 9  # manifest + 8 tasks
    oracle = [json.loads(x) for x in (out / "trajectories_oracle.jsonl").read_text().splitlines()]
    noop = [json.loads(x) for x in (out / "trajectories_noop.jsonl").read_text().splitlines()]
    assert all(e["success"] for e in oracle) and not any(e["success"] for e in noop)
