"""The library API (graphgen.pipeline) and its front doors: ``import graphgen``, the
command line and ``python -m graphgen``."""

from __future__ import annotations

import doctest
import inspect
import json
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

import graphgen
import graphgen.analysis
import graphgen.cli as cli
import graphgen.extras
from graphgen import pipeline as pl
from graphgen.extras import MissingExtraError
from graphgen.pipeline import DEFAULTS, Options, RunEvents
from graphgen.tasks.expand import GenOptions
from graphgen.verify.proofs import DEFAULT_TIMEOUT_MS

runner = CliRunner()
ROOT = Path(__file__).resolve().parents[1]  # run subprocesses here, so they import this tree


def _python(code: str) -> str:
    return subprocess.run(
        [sys.executable, "-c", code], check=True, capture_output=True, text=True, cwd=ROOT
    ).stdout


def _doctests(obj: object) -> doctest.TestResults:
    finder = doctest.DocTestFinder(recurse=False)
    runner_ = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    for test in finder.find(obj):
        runner_.run(test)
    return runner_.summarize(verbose=False)


# ------------------------------------------------------------------ import graphgen


def test_import_graphgen_is_light() -> None:
    """The pipeline is loaded on first use: the package and its IR import no solver,
    no model client and no plotting library."""
    heavy = ("z3", "openai", "matplotlib", "graphgen.pipeline", "graphgen.verify")
    code = f"import sys, graphgen, graphgen.ir\nprint([m for m in {heavy!r} if m in sys.modules])"
    assert _python(code).strip() == "[]"


def test_lazy_names_are_the_pipeline_functions() -> None:
    """Each lazy name is the pipeline's object, even after the subpackages are imported
    (a subpackage attribute such as ``graphgen.verify`` must not shadow one)."""
    import graphgen.envs.agent
    import graphgen.verify.satcheck

    for name in graphgen.__all__:
        got = getattr(graphgen, name)
        if name in pl.__all__:
            assert got is getattr(pl, name), name
    assert set(graphgen.__all__) <= set(dir(graphgen))
    with pytest.raises(AttributeError, match="no_such_thing"):
        graphgen.no_such_thing  # noqa: B018


def test_package_docstring_example_runs() -> None:
    """The five lines in graphgen's docstring: name -> proven task set on disk ->
    re-verified -> solved by the oracle."""
    res = _doctests(graphgen)
    assert res.attempted >= 5 and res.failed == 0


def test_package_example_as_plain_code(tmp_path: Path) -> None:
    path = tmp_path / "tasks.jsonl"
    tasks = graphgen.generate("mock", 4, output=path)
    assert graphgen.verify_tasks(path).ok
    assert graphgen.evaluate(path, "oracle").success_rate == 1.0
    assert len(tasks.tasks) == 4 and all(t.certificate for t in tasks.tasks)
    assert len(path.read_text(encoding="utf-8").splitlines()) == 5


def test_pipeline_docstring_examples_run() -> None:
    results = [
        _doctests(pl),
        _doctests(graphgen.analysis.report),
        _doctests(graphgen.extras.require),
    ]
    results += [_doctests(getattr(pl, name)) for name in pl.__all__ if callable(getattr(pl, name))]
    assert sum(r.attempted for r in results) >= 20
    assert sum(r.failed for r in results) == 0


# ------------------------------------------------------------------ one set of defaults


def test_defaults_come_from_one_place() -> None:
    gen = GenOptions()
    assert (DEFAULTS.max_intents, DEFAULTS.walk_ratio) == (gen.max_intents, gen.walk_ratio)
    assert DEFAULTS.timeout_ms == DEFAULT_TIMEOUT_MS
    assert DEFAULTS.prove is True  # the library proves unless told not to
    assert Options().gen_options() == gen
    # The command line takes its defaults from DEFAULTS, not from literals of its own.
    sig = inspect.signature(cli.generate)
    for name in ("seed", "max_intents", "walk_ratio", "prove", "jobs", "record_times"):
        assert sig.parameters[name].default == getattr(DEFAULTS, name), name
    assert inspect.signature(cli.verify_cmd).parameters["timeout_ms"].default == DEFAULTS.timeout_ms


def test_bad_options_are_refused_with_the_reason() -> None:
    with pytest.raises(pl.PipelineError, match="jobs must be at least 1"):
        Options(jobs=0)
    with pytest.raises(pl.PipelineError, match="max_intents"):
        Options(max_intents=0)
    with pytest.raises(pl.PipelineError, match="walk_ratio"):
        Options(walk_ratio=float("nan"))
    # The command line checks the option itself, before any work: a usage error.
    res = runner.invoke(cli.app, ["generate", "mock", "--walk-ratio", "2", "--no-prove"])
    assert res.exit_code == 2 and "--walk-ratio" in res.output


def test_cli_and_library_write_the_same_bytes(tmp_path: Path) -> None:
    """Same options, same file, byte for byte: the CLI is only a front end."""
    lib = tmp_path / "lib.jsonl"
    cli_file = tmp_path / "cli.jsonl"
    pl.generate("mock", 6, Options(seed=2, max_intents=2, jobs=1), output=lib)
    res = runner.invoke(
        cli.app,
        [
            "generate",
            "mock",
            "-n",
            "6",
            "--seed",
            "2",
            "--max-intents",
            "2",
            "-j",
            "2",
            "-o",
            str(cli_file),
        ],
    )
    assert res.exit_code == 0, res.output
    assert cli_file.read_bytes() == lib.read_bytes()
    first = json.loads(lib.read_text(encoding="utf-8").splitlines()[1])
    assert first["certificate"] is not None  # proven by default on both sides


# ------------------------------------------------------------------ stages


def test_unknown_builtin_name_suggests_the_closest() -> None:
    with pytest.raises(pl.UnknownDomainError, match=r"did you mean 'retail'\?"):
        pl.load_domain_ref("retial")
    res = runner.invoke(cli.app, ["generate", "airlines", "--no-prove"])
    assert res.exit_code == 1 and "did you mean 'airline'" in res.output
    with pytest.raises(graphgen.DomainError, match="cannot read file"):
        pl.load_domain_ref("no/such/file.yaml")


def test_check_passes_the_sat_checker_explicitly() -> None:
    assert pl.check("mock").sat_checked
    assert not graphgen.analysis.report(pl.load_domain_ref("mock")).sat_checked
    assert not hasattr(graphgen.analysis, "register_sat_checker")


def test_verify_reports_a_tampered_file(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    pl.generate("mock", 3, Options(prove=False), output=path)
    lines = path.read_text(encoding="utf-8").splitlines()
    path.write_text("\n".join(lines[:-1]) + "\n", encoding="utf-8")  # drop one task
    seen: list[tuple[int, int]] = []
    res = pl.verify_tasks(path, options=Options(jobs=1), progress=lambda d, t: seen.append((d, t)))
    assert not res.ok and res.outcomes == {"ok": 2, "manifest_count_mismatch": 1}
    assert seen == [(1, 2), (2, 2)]


def test_evaluate_agents_and_trajectories(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    pl.generate("mock", 4, Options(prove=False), output=path)
    traj = tmp_path / "oracle.jsonl"
    ev = pl.evaluate(path, "oracle", limit=3, trajectories=traj)
    assert ev.agent == "oracle" and len(ev.episodes) == 3 and ev.success_rate == 1.0
    assert [json.loads(x)["task_id"] for x in traj.read_text().splitlines()] == [
        e.task_id for e in ev.episodes
    ]
    assert pl.evaluate(path, "random", Options(seed=1)).agent == "random"
    with pytest.raises(pl.PipelineError, match="base_url"):
        pl.evaluate(path, "some-model")


def test_missing_extras_name_the_install_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without matplotlib only the PNG fails, without openai only a model evaluation."""
    path = tmp_path / "t.jsonl"
    pl.generate("mock", 2, Options(prove=False), output=path)
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    monkeypatch.setitem(sys.modules, "openai", None)
    with pytest.raises(MissingExtraError, match=r"pip install 'graphgen-envs\[viz\]'"):
        pl.export_graph("mock", tmp_path / "g.png", "png")
    pl.export_graph("mock", tmp_path / "g.dot", "dot")
    with pytest.raises(MissingExtraError, match=r"pip install 'graphgen-envs\[eval\]'"):
        pl.evaluate(path, "some-model", base_url="http://127.0.0.1:9")
    assert pl.evaluate(path, "oracle").success_rate == 1.0
    res = runner.invoke(cli.app, ["graph", "mock", "-f", "png", "-o", str(tmp_path / "x.png")])
    assert res.exit_code == 1 and "graphgen-envs[viz]" in res.output


def test_run_reports_every_stage(tmp_path: Path) -> None:
    class Record(RunEvents):
        def __init__(self) -> None:
            self.seen: list[str] = []

        def stage(self, step: int, total: int, title: str) -> None:
            self.seen.append(f"{step}/{total}")

        def evaluated(self, result: pl.Evaluation) -> None:
            self.seen.append(result.agent)

    rec = Record()
    res = pl.run("mock", 3, tmp_path / "out", Options(jobs=1), events=rec)
    assert rec.seen == ["1/6", "2/6", "3/6", "4/6", "5/6", "6/6", *pl.BASELINES]
    assert res.verification.ok and res.evaluations["oracle"].success_rate == 1.0
    assert (tmp_path / "out" / "mock_env" / "tools.py").is_file()


# ------------------------------------------------------------------ command line


def test_version_once() -> None:
    res = runner.invoke(cli.app, ["--version"])
    assert res.exit_code == 0 and res.stdout.strip() == f"graphgen {graphgen.__version__}"
    # Written once: pyproject reads it from graphgen.__version__ instead of repeating it.
    text = (Path(graphgen.__file__).parent.parent / "pyproject.toml").read_text()
    assert f'"{graphgen.__version__}"' not in text


def test_python_dash_m_graphgen() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "graphgen", "--version"],
        check=True,
        capture_output=True,
        text=True,
        cwd=ROOT,
    ).stdout
    assert out.strip() == f"graphgen {graphgen.__version__}"
    helptext = subprocess.run(
        [sys.executable, "-m", "graphgen", "--help"],
        check=True,
        capture_output=True,
        text=True,
        cwd=ROOT,
    ).stdout
    assert "generate" in helptext and "verify" in helptext
