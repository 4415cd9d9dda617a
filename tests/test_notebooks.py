"""The notebooks run top to bottom (executed with a real kernel), say what we expect and
show their figures; the committed copies hold their executed outputs."""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

NOTEBOOKS = sorted((Path(__file__).parent.parent / "notebooks").glob("*.ipynb"))
COVERAGE = Path(__file__).parent.parent / "notebooks" / "coverage.ipynb"

#: Figures the coverage notebook draws: tool usage, branches, enables bars, the
#: enables-only graph, tasks per state, chain lengths, proven minimum.
COVERAGE_FIGURES = 7


def _images(nb: nbformat.NotebookNode) -> int:
    """Outputs that carry a PNG image (what a reader sees as a figure)."""
    return sum(
        1
        for c in nb.cells
        if c.cell_type == "code"
        for o in c.get("outputs", [])
        if "image/png" in o.get("data", {})
    )


@pytest.mark.slow
@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_notebook_executes(path: Path, tmp_path: Path) -> None:
    nb = nbformat.read(path, as_version=4)
    NotebookClient(
        nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
    ).execute()
    errors = [
        o
        for c in nb.cells
        if c.cell_type == "code"
        for o in c.get("outputs", [])
        if o.get("output_type") == "error"
    ]
    assert not errors, errors
    text = "\n".join(
        o.get("text", "") + str(o.get("data", {}).get("text/plain", ""))
        for c in nb.cells
        if c.cell_type == "code"
        for o in c.get("outputs", [])
    )
    if path.name == "coverage.ipynb":
        assert "200 tasks" in text
        cov = re.search(r"tool coverage (\d\.\d\d)", text)
        assert cov is not None and float(cov.group(1)) >= 0.9, text[:500]
        assert re.search(r"\d+ of \d+ enables edges exercised", text)
        assert re.search(r"refusals exercise \d+ of \d+ write-tool preconditions", text)
        assert re.search(r"\d+ of 12 proven tasks have a shorter solution", text)
        assert _images(nb) == COVERAGE_FIGURES, "the figures must render under nbclient"


def test_committed_coverage_notebook_holds_its_figures() -> None:
    """The committed copy is the executed one: a reader on the web sees the figures."""
    nb = nbformat.read(COVERAGE, as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert all(c.get("execution_count") for c in code), "commit the executed notebook"
    assert not [o for c in code for o in c.get("outputs", []) if o["output_type"] == "error"]
    assert _images(nb) == COVERAGE_FIGURES
    assert "%matplotlib inline" in code[0].source  # Agg alone shows no figure


def test_there_is_a_notebook() -> None:
    assert NOTEBOOKS, "notebooks/ should hold the coverage analysis"
