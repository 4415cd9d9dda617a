"""Test-suite wiring shared by every test file.

Slow tests. Tests that take seconds to minutes each carry ``@pytest.mark.slow`` (the
marker is registered in pyproject.toml): long differential runs, fresh virtual
environments and wheel builds, mypy on generated code, notebooks, PNG export. CI runs
everything (``.venv/bin/python -m pytest``, also ``make test``); while editing,
``make test-fast`` (``-m "not slow"``) skips them. Mark a new test slow when it alone
takes more than a few seconds on two cores.

One namespace. The folders tasks/, verify/ and envs/ are the packages graphgen.tasks,
graphgen.verify and graphgen.envs (graphgen/ links to them). Imported under a bare name
as well, a module would exist twice, with two copies of every class, and isinstance
checks between the copies would quietly fail. The hook below stops the run when
collection has imported one of them under a bare name.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LINKED = ("tasks", "verify", "envs")


def bare_imports() -> list[str]:
    """Modules of this repository's tasks/, verify/ or envs/ imported under a bare name."""
    found = []
    for name, mod in list(sys.modules.items()):
        if name.split(".", 1)[0] not in LINKED:
            continue
        file = getattr(mod, "__file__", None)
        paths = [file] if file else list(getattr(mod, "__path__", []))
        if any(Path(p).resolve().is_relative_to(ROOT) for p in paths):
            found.append(name)
    return sorted(found)


def pytest_collection_finish(session: pytest.Session) -> None:
    """Fail early if test modules or doctests imported tasks/verify/envs a second time."""
    if found := bare_imports():
        raise pytest.UsageError(
            f"imported under a bare name: {', '.join(found)}; import graphgen.<name> "
            "instead (tasks/, verify/, envs/ are the packages graphgen.tasks, "
            "graphgen.verify, graphgen.envs)"
        )


@pytest.fixture
def wide_console(monkeypatch: pytest.MonkeyPatch) -> None:
    """A wide console for the command line, so messages and instructions are not wrapped
    across lines (use with ``pytest.mark.usefixtures("wide_console")``)."""
    from rich.console import Console

    import graphgen.cli as cli

    monkeypatch.setattr(cli, "out", Console(width=2000))
    monkeypatch.setattr(cli, "err", Console(width=2000, stderr=True))
