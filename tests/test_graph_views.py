"""Filtered views of the dependency graph (``--view enables``, ``--tool``) and the
GraphML and SVG exports."""

from __future__ import annotations

import json
from pathlib import Path

import networkx as nx
import pytest
from typer.testing import CliRunner

from graphgen.cli import app
from graphgen.domains import load_builtin
from graphgen.export import enables_view, to_graphml, tool_view
from graphgen.graph import build_graph

runner = CliRunner()


def _enables(g: nx.MultiDiGraph) -> set[tuple[str, str]]:
    return {(u, v) for u, v, k in g.edges(data="kind") if k == "enables"}


def test_enables_view_keeps_tools_and_enables_edges_only(tmp_path: Path) -> None:
    full = build_graph(load_builtin("retail"))
    out = tmp_path / "e.graphml"
    res = runner.invoke(
        app, ["graph", "retail", "--view", "enables", "-f", "graphml", "-o", str(out)]
    )
    assert res.exit_code == 0, res.output
    back = nx.read_graphml(out, force_multigraph=True)
    linked = {u for u, _ in _enables(full)} | {v for _, v in _enables(full)}
    assert set(back.nodes) == linked and all(n.startswith("tool:") for n in linked)
    assert {d["kind"] for *_, d in back.edges(data=True)} == {"enables"}
    assert {(u, v) for u, v in back.edges()} == _enables(full)
    assert back.number_of_edges() == len(_enables(full)) < full.number_of_edges() / 5
    # list attributes survive as text
    u, v = "tool:cancel_pending_order", "tool:return_delivered_order"
    if back.has_edge(u, v):
        assert "Order.status" in next(iter(back.get_edge_data(u, v).values()))["fields"]


def test_tool_view_is_the_neighbourhood_of_one_tool() -> None:
    full = build_graph(load_builtin("retail"))
    v = tool_view(full, "cancel_pending_order")
    node = "tool:cancel_pending_order"
    assert all(node in (a, b) for a, b in v.edges())
    assert set(v.nodes) == {node} | set(full.successors(node)) | set(full.predecessors(node))
    assert "key:Order" in v and "state:Order.status" in v
    assert v.number_of_edges() == len(full.in_edges(node)) + len(full.out_edges(node))
    with pytest.raises(KeyError, match="no tool 'cancel_order'"):
        tool_view(full, "cancel_order")


def test_enables_view_of_one_tool_and_a_wrong_tool_name(tmp_path: Path) -> None:
    out = tmp_path / "pay.json"
    res = runner.invoke(
        app, ["graph", "mock", "--view", "enables", "--tool", "pay", "-o", str(out)]
    )
    assert res.exit_code == 0, res.output
    back = nx.node_link_graph(json.loads(out.read_text()), edges="edges")
    assert sorted(back.edges()) == [("tool:deposit", "tool:pay"), ("tool:pay", "tool:deposit")]
    bad = runner.invoke(app, ["graph", "mock", "--tool", "pya", "-o", str(tmp_path / "x.json")])
    assert bad.exit_code == 1 and "no tool 'pya'" in bad.output and "'pay'" in bad.output
    bad = runner.invoke(app, ["graph", "mock", "--view", "hairball", "-o", str(out)])
    assert bad.exit_code == 2 and "unknown view" in bad.output


def test_graphml_of_the_whole_graph_is_deterministic_and_complete() -> None:
    g = build_graph(load_builtin("airline"))
    text = to_graphml(g)
    assert text == to_graphml(build_graph(load_builtin("airline")))
    back = nx.parse_graphml(text, force_multigraph=True)
    assert back.number_of_nodes() == g.number_of_nodes()
    assert back.number_of_edges() == g.number_of_edges()


@pytest.mark.slow
def test_svg_of_the_enables_view_is_deterministic(tmp_path: Path) -> None:
    a, b = tmp_path / "a.svg", tmp_path / "b.svg"
    for path in (a, b):
        res = runner.invoke(
            app, ["graph", "retail", "--view", "enables", "-f", "svg", "-o", str(path)]
        )
        assert res.exit_code == 0, res.output
    text = a.read_text()
    assert text.startswith("<?xml") and "<svg" in text
    assert "cancel_pending_order" in text  # labels stay text
    assert a.read_bytes() == b.read_bytes()
    mock = build_graph(load_builtin("mock"))
    assert sorted(enables_view(mock).nodes) == ["tool:deposit", "tool:pay"]
    assert "tool:lock_account" in enables_view(mock, keep=["lock_account"])
