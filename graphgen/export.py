"""Export the dependency graph: JSON (node-link), Graphviz DOT, GraphML, and a PNG or
SVG drawing; and the filtered views that keep a big graph readable.

All are deterministic: the same graph gives the same bytes (nodes and edges are
written in sorted order, the drawing's layout has no randomness and no timestamp).

A whole domain's graph is a hairball (retail has hundreds of edges). Two views cut it
down: :func:`enables_view` keeps the tools and the ``enables`` edges between them (which
write may make which call possible), :func:`tool_view` keeps one tool and the nodes one
edge away from it. Both return a new graph that every exporter takes.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import networkx as nx

from graphgen.extras import require

__all__ = [
    "DRAW_FORMATS",
    "EDGE_STYLE",
    "NODE_STYLE",
    "draw",
    "enables_view",
    "to_dot",
    "to_graphml",
    "to_json",
    "to_png",
    "tool_view",
]

#: Formats :func:`draw` writes (matplotlib backends).
DRAW_FORMATS = ("png", "svg")

# One palette for DOT and PNG, so the two pictures read the same way.
NODE_STYLE: dict[str, dict[str, str]] = {
    "tool": {"shape": "box", "fill": "#dbe8fb", "write_fill": "#fde0d0", "label": "tool"},
    "sort": {
        "shape": "ellipse",
        "fill": "#eeeeee",
        "givable_fill": "#d8f2d8",
        "label": "value sort",
    },
    "state": {"shape": "note", "fill": "#fff6cc", "label": "state field"},
}
EDGE_STYLE: dict[str, dict[str, str]] = {
    "data": {
        "color": "#333333",
        "dot": "solid",
        "mpl": "-",
        "label": "data (sort feeds param / tool reveals sort)",
    },
    "reads": {"color": "#1f5fbf", "dot": "dashed", "mpl": "--", "label": "reads (before commit)"},
    "queries": {"color": "#7aa6e0", "dot": "dotted", "mpl": ":", "label": "queries (return value)"},
    "writes": {"color": "#c62828", "dot": "bold", "mpl": "-", "label": "writes"},
    "enables": {"color": "#2e7d32", "dot": "dashed", "mpl": "-.", "label": "enables"},
}


def _edges(g: nx.MultiDiGraph) -> list[tuple[str, str, str, dict[str, Any]]]:
    return sorted(
        ((u, v, str(k), d) for u, v, k, d in g.edges(keys=True, data=True)),
        key=lambda e: (e[0], e[1], e[2]),
    )


# ------------------------------------------------------------------ views


def _copy_graph(
    g: nx.MultiDiGraph, nodes: list[str], edges: list[tuple[str, str, str]], view: str
) -> Any:
    out = nx.MultiDiGraph(**{**g.graph, "view": view})
    for n in sorted(nodes):
        out.add_node(n, **g.nodes[n])
    for u, v, k in sorted(edges):
        out.add_edge(u, v, key=k, **g.edges[u, v, k])
    return out


def enables_view(g: nx.MultiDiGraph, keep: Iterable[str] = ()) -> nx.MultiDiGraph:
    """The ``enables`` edges and the tools they link, nothing else (tools named in
    ``keep`` stay even without an enables edge).

    >>> from graphgen.domains import load_builtin
    >>> from graphgen.graph import build_graph
    >>> v = enables_view(build_graph(load_builtin("mock")))
    >>> sorted(v.edges()), v.graph["view"]
    ([('tool:deposit', 'tool:pay'), ('tool:pay', 'tool:deposit')], 'enables edges')
    """
    edges = [(u, v, str(k)) for u, v, k, d in g.edges(keys=True, data="kind") if d == "enables"]
    tools = {f"tool:{t}" for t in keep} | {u for u, _, _ in edges} | {v for _, v, _ in edges}
    return _copy_graph(g, sorted(tools), edges, "enables edges")


def tool_view(g: nx.MultiDiGraph, tool: str) -> nx.MultiDiGraph:
    """Tool ``tool``, every node one edge away from it (either direction), and the edges
    that touch the tool.

    Raises ``KeyError`` naming the domain's tools when ``tool`` is not one of them.

    >>> from graphgen.domains import load_builtin
    >>> from graphgen.graph import build_graph
    >>> v = tool_view(build_graph(load_builtin("mock")), "deposit")
    >>> needs = sorted(u for u, w in v.edges() if w == "tool:deposit")
    >>> needs[:3], "tool:pay" in needs, "tool:lock_account" in v
    (['free:int', 'key:Account', 'state:Account.*'], True, False)
    """
    node = f"tool:{tool}"
    if g.nodes.get(node, {}).get("kind") != "tool":
        names = sorted(str(a["name"]) for _, a in g.nodes(data=True) if a.get("kind") == "tool")
        raise KeyError(
            f"no tool {tool!r} in the graph of {g.graph.get('domain')!r}; tools: {', '.join(names)}"
        )
    edges = [(u, v, str(k)) for u, v, k in g.edges(keys=True) if node in (u, v)]
    nodes = {node} | {u for u, _, _ in edges} | {v for _, v, _ in edges}
    return _copy_graph(g, sorted(nodes), edges, f"neighbourhood of {tool}")


# ------------------------------------------------------------------ JSON


def to_json(g: nx.MultiDiGraph) -> str:
    """networkx node-link data (``edges="edges"``) as JSON text, nodes sorted by id,
    edges by (source, target, key), object keys sorted; ends with a newline.

    ``networkx.node_link_graph(json.loads(text), edges="edges")`` reads it back.
    """
    data = nx.node_link_data(g, edges="edges")
    data["nodes"] = sorted(data["nodes"], key=lambda n: str(n["id"]))
    data["edges"] = sorted(
        data["edges"], key=lambda e: (str(e["source"]), str(e["target"]), str(e["key"]))
    )
    return json.dumps(data, sort_keys=True, indent=1, ensure_ascii=False) + "\n"


# ------------------------------------------------------------------ GraphML


def to_graphml(g: nx.MultiDiGraph) -> str:
    """GraphML text (for Gephi, yEd, Cytoscape): nodes and edges sorted, list-valued
    attributes (``params``, ``via``, ``ops``, ``fields``, ...) joined with ``", "`` since
    GraphML holds scalars only; ends with a newline.

    >>> from graphgen.domains import load_builtin
    >>> from graphgen.graph import build_graph
    >>> "<graphml" in to_graphml(build_graph(load_builtin("mock")))
    True
    """

    def flat(attrs: dict[str, Any]) -> dict[str, Any]:
        return {
            k: ", ".join(str(x) for x in v) if isinstance(v, list | tuple) else v
            for k, v in sorted(attrs.items())
            if v is not None
        }

    flat_g = nx.MultiDiGraph(**flat(dict(g.graph)))
    for n in sorted(g.nodes):
        flat_g.add_node(n, **flat(g.nodes[n]))
    for u, v, k, d in _edges(g):
        flat_g.add_edge(u, v, key=k, **flat(d))
    return "\n".join(nx.generate_graphml(flat_g, prettyprint=True)) + "\n"


# ------------------------------------------------------------------ DOT


def _q(s: object) -> str:
    """A DOT double-quoted string."""
    text = str(s).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return f'"{text}"'


def _node_label(g: nx.MultiDiGraph, n: str) -> str:
    a = g.nodes[n]
    if a.get("kind") == "tool":
        return str(a.get("name", n))
    if a.get("kind") == "state":
        return n.removeprefix("state:")
    return n


def _dot_attrs(attrs: dict[str, str]) -> str:
    return ", ".join(f"{k}={_q(v)}" for k, v in attrs.items())


def _style(g: nx.MultiDiGraph, n: str) -> tuple[str, dict[str, str], str]:
    """(kind, style entry, fill colour) of node ``n``: one rule for DOT and PNG alike."""
    a = g.nodes[n]
    kind = str(a.get("kind", "sort"))
    st = NODE_STYLE.get(kind, NODE_STYLE["sort"])
    fill = st["fill"]
    if kind == "tool" and a.get("write"):
        fill = st["write_fill"]
    if kind == "sort" and a.get("givable"):
        fill = st["givable_fill"]
    return kind, st, fill


def to_dot(g: nx.MultiDiGraph) -> str:
    """Graphviz DOT text: tools as boxes (write tools shaded red), value sorts as
    ellipses (givable ones green), state fields as notes; edge colour and style by
    kind, parameter names on data edges. Sorted, so deterministic."""
    title = str(g.graph.get("domain", "graph"))
    lines = [
        f"digraph {_q(title)} {{",
        f"  graph [rankdir=LR, fontname=Helvetica, labelloc=t, "
        f"label={_q(title + ': typed dependency graph')}];",
        "  node [fontname=Helvetica, fontsize=10, style=filled];",
        "  edge [fontname=Helvetica, fontsize=8];",
    ]
    for n in sorted(g.nodes):
        kind, st, fill = _style(g, n)
        attrs = {"shape": st["shape"], "fillcolor": fill, "label": _node_label(g, n)}
        if kind == "tool":
            attrs["style"] = "rounded,filled"
            attrs["tooltip"] = str(g.nodes[n].get("description", ""))
        lines.append(f"  {_q(n)} [{_dot_attrs(attrs)}];")
    for u, v, _, d in _edges(g):
        kind = str(d.get("kind", "data"))
        es = EDGE_STYLE.get(kind, EDGE_STYLE["data"])
        attrs = {"color": es["color"], "style": es["dot"]}
        if kind == "data" and "param" in d:
            attrs["label"] = str(d["param"])
        if kind == "enables":
            attrs["constraint"] = "false"  # keep the data flow driving the layout
            attrs["tooltip"] = ", ".join(d.get("fields", []))
        if kind == "writes":
            attrs["label"] = " ".join(d.get("ops", []))
        lines.append(f"  {_q(u)} -> {_q(v)} [{_dot_attrs(attrs)}];")
    lines.append("}")
    return "\n".join(lines) + "\n"


# ------------------------------------------------------------------ PNG


def _only_tools(g: nx.MultiDiGraph) -> bool:
    """A view of tools alone (the enables view): drawn on a circle, not in columns."""
    return g.number_of_nodes() > 0 and all(k == "tool" for _, k in g.nodes(data="kind"))


def _circle(g: nx.MultiDiGraph) -> dict[str, tuple[float, float]]:
    """Tools on an ellipse that fills the drawing (reads first, then writes, clockwise
    from the top): in one column, the edges between neighbouring writes pile up."""
    tools = sorted(g.nodes, key=lambda n: (bool(g.nodes[n].get("write")), n))
    pos: dict[str, tuple[float, float]] = {}
    for i, n in enumerate(tools):
        a = math.pi / 2 - 2 * math.pi * i / len(tools)
        pos[n] = (1.0 + 0.95 * math.cos(a), 0.5 + 0.47 * math.sin(a))
    return pos


def _layout(g: nx.MultiDiGraph) -> dict[str, tuple[float, float]]:
    """Three columns — value sorts, tools, state fields — with tools sorted (reads
    first, then writes) and the other columns ordered by the mean row of the tools they
    touch, which shortens edges. Fully deterministic, so no seed is needed."""
    tools = sorted(
        (n for n, k in g.nodes(data="kind") if k == "tool"),
        key=lambda n: (bool(g.nodes[n].get("write")), n),
    )
    row = {t: i for i, t in enumerate(tools)}

    def order(kind: str) -> list[str]:
        nodes = [n for n, k in g.nodes(data="kind") if k == kind]

        def center(n: str) -> float:
            near = [row[m] for m in (*g.successors(n), *g.predecessors(n)) if m in row]
            return sum(near) / len(near) if near else float(len(tools))

        return sorted(nodes, key=lambda n: (center(n), n))

    cols = [order("sort"), tools, order("state")]
    pos: dict[str, tuple[float, float]] = {}
    for x, col in enumerate(cols):
        for i, n in enumerate(col):
            y = 1.0 - (i + 0.5) / max(len(col), 1)
            pos[n] = (float(x), y)
    return pos


def to_png(g: nx.MultiDiGraph, path: str | Path) -> Path:
    """Draw the graph to a PNG file with matplotlib's Agg canvas (no display, no pyplot
    global state); returns the path. Same graph, same bytes (no timestamp metadata).

    matplotlib is optional (the ``viz`` extra); without it this raises
    :class:`~graphgen.extras.MissingExtraError` naming the install command.
    """
    return draw(g, path, "png")


def draw(g: nx.MultiDiGraph, path: str | Path, fmt: str = "png") -> Path:
    """Draw the graph to ``path`` as ``fmt`` (``png`` or ``svg``, see :func:`to_png`);
    returns the path. The SVG has fixed element ids and no date, so it is deterministic
    too."""
    if fmt not in DRAW_FORMATS:
        raise ValueError(f"cannot draw a graph as {fmt!r}; use {', '.join(DRAW_FORMATS)}")
    require("matplotlib", "viz", f"drawing the graph as {fmt.upper()}")
    # Imported here so that the rest of graphgen works without matplotlib.
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    circle = _only_tools(g)
    pos = _circle(g) if circle else _layout(g)
    per_col: float = (
        max(
            sum(1 for _, k in g.nodes(data="kind") if k == kind)
            for kind in ("sort", "tool", "state")
        )
        if g.number_of_nodes()
        else 1
    )
    height = max(6.0, 0.34 * per_col + 2.0)
    top = 1.3 / height  # inches kept for the title and the legend
    fig = Figure(figsize=(16, height), dpi=100)
    FigureCanvasAgg(fig)
    ax = fig.add_axes((0.01, 0.01, 0.98, 0.98 - top))
    ax.set_xlim(-0.45, 2.45)
    ax.set_ylim(-0.02, 1.02)
    ax.axis("off")
    for col, head in enumerate(() if circle else ("value sorts", "tools", "state fields")):
        ax.text(col, 1.02, head, ha="center", va="bottom", fontsize=11, weight="bold")

    texts = {}
    for n in sorted(g.nodes):
        kind, _, fill = _style(g, n)
        box = {"tool": "round,pad=0.3", "sort": "round4,pad=0.3"}.get(kind, "square,pad=0.3")
        x, y = pos[n]
        texts[n] = ax.text(
            x,
            y,
            _node_label(g, n),
            ha="center",
            va="center",
            fontsize=8,
            zorder=4,
            parse_math=False,  # names are text: a '$' in an enum name is not TeX
            bbox={"boxstyle": box, "fc": fill, "ec": "#555555", "lw": 0.6},
        )
    # One draw sizes the label boxes, so the arrows below (drawn under the labels) can
    # end at the box borders.
    fig.canvas.draw()
    for u, v, _, d in _edges(g):
        kind = str(d.get("kind", "data"))
        es = EDGE_STYLE.get(kind, EDGE_STYLE["data"])
        same_col = pos[u][0] == pos[v][0] and not circle
        rad = 0.5 if same_col else {"reads": 0.06, "queries": 0.12, "writes": -0.06}.get(kind, 0.0)
        if kind == "data" and pos[u][0] > pos[v][0]:
            rad = -0.12  # tool → sort runs back leftwards; bend it off the sort → tool edges
        ax.annotate(
            "",
            xy=pos[v],
            xytext=pos[u],
            zorder=2,
            arrowprops={
                "arrowstyle": "-|>",
                "color": es["color"],
                "linestyle": es["mpl"],
                "lw": 1.4 if kind in ("writes", "enables") else 0.7,
                "alpha": 0.7,
                "mutation_scale": 8,
                "connectionstyle": f"arc3,rad={rad}",
                "patchA": texts[u].get_bbox_patch(),
                "patchB": texts[v].get_bbox_patch(),
                "shrinkA": 1,
                "shrinkB": 1,
            },
        )
    handles: list[Any] = [
        Patch(fc=NODE_STYLE["tool"]["fill"], ec="#555555", label="read tool"),
        Patch(fc=NODE_STYLE["tool"]["write_fill"], ec="#555555", label="write tool"),
        Patch(
            fc=NODE_STYLE["sort"]["givable_fill"],
            ec="#555555",
            label="value sort, known without a tool",
        ),
        Patch(fc=NODE_STYLE["sort"]["fill"], ec="#555555", label="value sort, from tools only"),
        Patch(fc=NODE_STYLE["state"]["fill"], ec="#555555", label="state field (E.* = rows)"),
    ]
    handles += [
        Line2D(
            [0],
            [0],
            color=es["color"],
            linestyle=es["mpl"],  # type: ignore[arg-type]
            lw=1.4,
            label=es["label"],
        )
        for es in EDGE_STYLE.values()
    ]
    title = str(g.graph.get("domain", "graph"))
    fig.suptitle(
        f"{title}: {g.graph.get('view', 'typed dependency graph')}",
        y=1 - 0.08 / height,
        fontsize=13,
        va="top",
    )
    fig.legend(
        handles=handles,
        loc="upper center",
        bbox_to_anchor=(0.5, 1 - 0.38 / height),
        ncol=5,
        fontsize=8,
        frameon=False,
    )
    out = Path(path)
    if fmt == "png":
        fig.savefig(out, format="png", metadata={"Software": None})
    else:
        import matplotlib

        # SVG element ids are salted hashes: a fixed salt makes them the same every run.
        with matplotlib.rc_context({"svg.hashsalt": "graphgen", "svg.fonttype": "none"}):
            fig.savefig(out, format="svg", metadata={"Date": None, "Creator": None})
    return out
