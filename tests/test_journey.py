"""The custom-domain journey: a domain file outside the package, from `check` to `eval`.

The task set's manifest records the domain file, so every later step finds it without
``--domain``; when the file is gone or defines another domain, the error says
``--domain``.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from graphgen import pipeline as pl
from graphgen.cli import app
from graphgen.domains import builtin_path
from graphgen.tasks.domainfile import DomainFileError

runner = CliRunner()


def _my_domain(folder: Path) -> Path:
    """The mock domain under another name, in a folder of its own."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "my_domain.yaml"
    text = builtin_path("mock").read_text(encoding="utf-8")
    path.write_text(text.replace("name: mock", "name: my_tickets", 1), encoding="utf-8")
    return path


def _manifest(tasks_file: Path) -> dict[str, object]:
    first = tasks_file.read_text(encoding="utf-8").splitlines()[0]
    got: dict[str, object] = json.loads(first)["manifest"]
    return got


def test_manifest_records_the_domain_file_and_later_steps_find_it(tmp_path: Path) -> None:
    dom = _my_domain(tmp_path / "domains")
    out = tmp_path / "sets" / "t.jsonl"
    pl.generate(dom, 3, pl.Options(prove=False, jobs=1), output=out)
    rec = _manifest(out)["domain_file"]
    assert isinstance(rec, dict)
    assert rec["path"] == "../domains/my_domain.yaml"  # relative: same bytes when moved along
    assert len(str(rec["sha256"])) == 64
    # no --domain anywhere
    assert pl.verify_tasks(out, options=pl.Options(jobs=1)).ok
    assert pl.coverage(out).tasks == 3
    assert pl.evaluate(out, "oracle").success_rate == 1.0
    res = runner.invoke(app, ["verify", str(out), "-j", "1"])
    assert res.exit_code == 0, res.output
    # the two folders copied together still work
    shutil.copytree(tmp_path, tmp_path.parent / "copy")
    assert pl.coverage(tmp_path.parent / "copy" / "sets" / "t.jsonl").tasks == 3


def test_builtin_sets_record_no_domain_file(tmp_path: Path) -> None:
    out = tmp_path / "t.jsonl"
    pl.generate("mock", 2, pl.Options(prove=False, jobs=1), output=out)
    assert "domain_file" not in _manifest(out)


def test_moved_or_changed_domain_file_says_domain_option(tmp_path: Path) -> None:
    dom = _my_domain(tmp_path / "d")
    out = tmp_path / "t.jsonl"
    pl.generate(dom, 2, pl.Options(prove=False, jobs=1), output=out)
    # a comment changes the bytes, not the domain: still accepted
    dom.write_text(dom.read_text(encoding="utf-8") + "# a note\n", encoding="utf-8")
    assert pl.coverage(out).tasks == 2
    # another spec: refused, naming --domain
    original = dom.read_text(encoding="utf-8")
    dom.write_text(original.replace("Bank accounts", "Bank ledgers", 1), encoding="utf-8")
    with pytest.raises(DomainFileError, match="--domain"):
        pl.verify_tasks(out, options=pl.Options(jobs=1))
    # gone: refused, naming --domain; the command line says it too
    moved = dom.with_name("elsewhere.yaml")
    dom.write_text(original, encoding="utf-8")
    dom.rename(moved)
    with pytest.raises(DomainFileError, match=r"not there any more.*--domain"):
        pl.coverage(out)
    res = runner.invoke(app, ["eval", str(out), "--model", "oracle"])
    assert res.exit_code == 1 and "--domain" in res.output
    # and --domain finds it
    assert pl.coverage(out, domain=moved).tasks == 2


def test_check_takes_a_builtin_name_or_a_path(tmp_path: Path) -> None:
    assert runner.invoke(app, ["check", "mock"]).exit_code == 0
    assert runner.invoke(app, ["check", str(_my_domain(tmp_path))]).exit_code == 0
    res = runner.invoke(app, ["check", "mokc"])
    assert res.exit_code == 1 and "did you mean 'mock'" in res.output


@pytest.mark.slow
def test_run_a_domain_file_outside_the_package_through_all_six_steps(tmp_path: Path) -> None:
    dom = _my_domain(tmp_path / "elsewhere")
    out = tmp_path / "out"
    res = runner.invoke(app, ["run", str(dom), "-n", "50", "-o", str(out)])
    assert res.exit_code == 0, res.output
    assert "6/6" in res.output and (out / "my_tickets_env" / "README.md").is_file()
    assert len((out / "tasks.jsonl").read_text(encoding="utf-8").splitlines()) == 51
    oracle = (out / "trajectories_oracle.jsonl").read_text(encoding="utf-8").splitlines()
    assert len(oracle) == 50 and all(json.loads(x)["success"] for x in oracle)
    # every later command finds the domain from the manifest alone
    again = runner.invoke(app, ["verify", str(out / "tasks.jsonl")])
    assert again.exit_code == 0, again.output


def test_a_manifest_naming_a_file_that_is_no_domain_file_is_refused(tmp_path: Path) -> None:
    dom = _my_domain(tmp_path)
    out = tmp_path / "t.jsonl"
    pl.generate(dom, 2, pl.Options(prove=False, jobs=1), output=out)
    lines = out.read_text(encoding="utf-8").splitlines()
    first = json.loads(lines[0])
    first["manifest"]["domain_file"]["path"] = "/etc/passwd"
    out.write_text("\n".join([json.dumps(first), *lines[1:]]) + "\n", encoding="utf-8")
    with pytest.raises(DomainFileError, match=r"not a \.yaml or \.yml file.*--domain"):
        pl.coverage(out)
