"""The notebooks run top to bottom (executed with a real kernel) and say what we expect."""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

NOTEBOOKS = sorted((Path(__file__).parent.parent / "notebooks").glob("*.ipynb"))


@pytest.mark.slow
@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_notebook_executes(path: Path, tmp_path: Path) -> None:
    nb = nbformat.read(path, as_version=4)
    NotebookClient(
        nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
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


def test_there_is_a_notebook() -> None:
    assert NOTEBOOKS, "notebooks/ should hold the coverage analysis"
