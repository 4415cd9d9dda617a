"""``graphgen new``: the starter domain and its test, which must pass unchanged."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from graphgen.cli import app
from graphgen.load import load_domain
from graphgen.pipeline import check, strict_check

runner = CliRunner()


def test_new_writes_a_clean_domain_and_a_test(tmp_path: Path) -> None:
    res = runner.invoke(app, ["new", "demo", "-o", str(tmp_path / "d")])
    assert res.exit_code == 0, res.output
    domain, test = tmp_path / "d" / "demo.yaml", tmp_path / "d" / "test_demo.py"
    assert domain.is_file() and test.is_file()
    d = load_domain(domain)
    assert d.name == "demo" and len(d.entities) >= 2 and d.write_tools and d.read_tools
    assert check(d).ok
    assert strict_check(d) == []
    # Every write has a precondition with a message, and the domain keeps its comments.
    assert all(t.requires and all(c.message for c in t.requires) for t in d.write_tools)
    assert domain.read_text().count("#") > 10


def test_new_is_deterministic_and_refuses_to_overwrite(tmp_path: Path) -> None:
    assert runner.invoke(app, ["new", "demo", "-o", str(tmp_path / "a")]).exit_code == 0
    assert runner.invoke(app, ["new", "demo", "-o", str(tmp_path / "b")]).exit_code == 0
    for name in ("demo.yaml", "test_demo.py"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()
    (tmp_path / "a" / "demo.yaml").write_text("# mine\n")
    again = runner.invoke(app, ["new", "demo", "-o", str(tmp_path / "a")])
    assert again.exit_code == 2 and "--force" in again.output
    assert (tmp_path / "a" / "demo.yaml").read_text() == "# mine\n"
    forced = runner.invoke(app, ["new", "demo", "-o", str(tmp_path / "a"), "--force"])
    assert forced.exit_code == 0
    assert (tmp_path / "a" / "demo.yaml").read_bytes() == (
        tmp_path / "b" / "demo.yaml"
    ).read_bytes()


@pytest.mark.parametrize("bad", ["Demo", "1demo", "my-domain", "a" * 41, ""])
def test_new_refuses_unusable_names(tmp_path: Path, bad: str) -> None:
    res = runner.invoke(app, ["new", bad, "-o", str(tmp_path)])
    assert res.exit_code == 1 and "not a usable domain name" in res.output
    assert list(tmp_path.iterdir()) == []


@pytest.mark.slow
def test_generated_test_passes_unchanged(tmp_path: Path) -> None:
    """check -> generate -> verify -> compile -> oracle, as the author will run it."""
    assert runner.invoke(app, ["new", "demo", "-o", str(tmp_path)]).exit_code == 0
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_demo.py"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert "3 passed" in proc.stdout
