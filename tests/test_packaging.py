"""The wheel: one top-level name, graphgen, so it installs beside any distribution that
owns the names envs, tasks or verify, and ships py.typed, its data files and the licence.

Both tests build and install offline: the wheel is built with the running environment's
setuptools (no build isolation), and the fresh virtual environment installs from local
files only (--no-index); it reaches the runtime dependencies through a .pth line naming
this environment's site-packages.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import venv
import zipfile
from pathlib import Path

import pytest

from graphgen.domains import builtin_names

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
LINKED = ("envs", "tasks", "verify")
# Not part of the source tree; .git and .venv can be large.
UNTRACKED = (".git", ".venv", "build", "dist", "out", "*.egg-info", "__pycache__", ".*_cache")
PIP = (sys.executable, "-m", "pip")
OFFLINE = ("--quiet", "--no-deps", "--no-index")
PIP_ENV = {
    "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
    "HOME": os.environ.get("HOME", "/tmp"),
    # this machine's pip configuration must not add indexes or find-links
    "PIP_CONFIG_FILE": os.devnull,
    "PIP_DISABLE_PIP_VERSION_CHECK": "1",
    "PIP_NO_INPUT": "1",
}


def _run(*cmd: str | Path, cwd: Path) -> str:
    args = [str(c) for c in cmd]
    res = subprocess.run(args, cwd=cwd, env=PIP_ENV, capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, f"{' '.join(args)}\n{res.stdout}\n{res.stderr}"
    return res.stdout


def _build_wheels(sources: list[Path], out: Path) -> list[Path]:
    """Wheels of the projects in ``sources``, built offline into ``out``."""
    _run(*PIP, "wheel", *OFFLINE, "--no-build-isolation", "-w", out, *sources, cwd=out.parent)
    return sorted(out.glob("*.whl"))


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The project's wheel, built from a copy of the tree: setuptools builds in place, and
    a build/ folder left by an older tree would ship modules that no longer exist."""
    tmp = tmp_path_factory.mktemp("wheel")
    src = tmp / "src"
    skip = shutil.ignore_patterns(*UNTRACKED)
    shutil.copytree(ROOT, src, symlinks=True, ignore=skip)
    (wheel,) = _build_wheels([src], tmp / "dist")
    return wheel


def test_wheel_holds_only_graphgen(wheel: Path) -> None:
    """top_level.txt and RECORD name graphgen alone; the linked folders are real package
    folders inside it, each with py.typed; data files and the licence are there."""
    with zipfile.ZipFile(wheel) as zf:
        names = zf.namelist()
        dist_info = next(n.split("/")[0] for n in names if n.endswith(".dist-info/RECORD"))
        top_level = zf.read(f"{dist_info}/top_level.txt").decode().split()
        record = zf.read(f"{dist_info}/RECORD").decode().splitlines()
        metadata = zf.read(f"{dist_info}/METADATA").decode()
    assert dist_info.startswith("graphgen_envs-")
    assert top_level == ["graphgen"]
    roots = {line.split(",")[0].split("/")[0] for line in record if line}
    assert roots == {"graphgen", dist_info}
    for pkg in ("graphgen", *(f"graphgen/{name}" for name in LINKED)):
        assert f"{pkg}/__init__.py" in names and f"{pkg}/py.typed" in names, pkg
    assert "graphgen/domains/retail.yaml" in names
    # the language reference graphgen propose sends to the model, a file, not a link
    assert "graphgen/reference/domain-language.md" in names
    with zipfile.ZipFile(wheel) as zf:
        reference = zf.read("graphgen/reference/domain-language.md").decode()
    assert reference == (ROOT / "docs" / "domain-language.md").read_text(encoding="utf-8")
    assert any(n.startswith("graphgen/vocab/") for n in names)
    assert f"{dist_info}/licenses/LICENSE" in names
    assert "Name: graphgen-envs" in metadata
    assert "License-Expression: Apache-2.0" in metadata
    lines = metadata.splitlines()
    requires = [ln.removeprefix("Requires-Dist: ") for ln in lines if "Requires-Dist" in ln]
    hard = {r.split(">")[0].split("=")[0].strip() for r in requires if "extra ==" not in r}
    assert not hard & {"matplotlib", "openai", "gymnasium"}, hard
    for extra in ("viz", "eval", "gym", "dev"):
        assert f"Provides-Extra: {extra}" in metadata, extra


def _dummy_project(root: Path, name: str) -> Path:
    """A minimal distribution named ``name`` whose one package is also ``name``."""
    proj = root / name
    (proj / name).mkdir(parents=True)
    (proj / name / "__init__.py").write_text(f'WHO = "dummy {name}"\n', encoding="utf-8")
    (proj / "pyproject.toml").write_text(
        '[build-system]\nrequires = ["setuptools>=77"]\n'
        'build-backend = "setuptools.build_meta"\n\n'
        f'[project]\nname = "{name}"\nversion = "1.0"\n\n'
        f'[tool.setuptools]\npackages = ["{name}"]\n',
        encoding="utf-8",
    )
    return proj


CHECK = """
import importlib.metadata, json, sys
import envs, tasks, verify
import graphgen, graphgen.envs, graphgen.tasks, graphgen.verify
from graphgen.domains import builtin_names, load_builtin
mods = {m.__name__: m.__file__ for m in (envs, tasks, verify, graphgen, graphgen.envs,
                                         graphgen.tasks, graphgen.verify)}
print(json.dumps({
    "files": mods,
    "who": [envs.WHO, tasks.WHO, verify.WHO],
    "builtins": [load_builtin(n).name for n in builtin_names()],
    "top_level": importlib.metadata.distribution("graphgen-envs").read_text("top_level.txt"),
    "editable": [m for m in sys.modules if "editable" in m]
                + [repr(f) for f in sys.meta_path if "editable" in getattr(f, "__module__", "")],
}))
"""


def test_installs_beside_envs_tasks_verify(wheel: Path, tmp_path: Path) -> None:
    """In a new virtual environment, the wheel and three distributions named envs, tasks
    and verify install together, and each import name gives its own package."""
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=False).create(env_dir)
    py = env_dir / "bin" / "python"
    where = "import sysconfig; print(sysconfig.get_paths()['purelib'])"
    site = Path(_run(py, "-c", where, cwd=tmp_path).strip())
    # Runtime dependencies from this environment. A path line in a .pth file only extends
    # sys.path; .pth files inside that folder (the editable install's finder) do not run.
    shared = sysconfig.get_paths()["purelib"]
    (site / "shared_deps.pth").write_text(shared + "\n", encoding="utf-8")

    dummies = [_dummy_project(tmp_path / "dummies", name) for name in LINKED]
    wheels = [wheel, *_build_wheels(dummies, tmp_path / "dummy_dist")]
    assert len(wheels) == 4
    _run(*PIP, "--python", py, "install", *OFFLINE, *wheels, cwd=tmp_path)

    run_dir = tmp_path / "empty"  # the current folder is on sys.path: keep it empty
    run_dir.mkdir()
    got = json.loads(_run(py, "-c", CHECK, cwd=run_dir))
    for name, file in got["files"].items():
        assert Path(file).is_relative_to(site), (name, file)
    assert got["files"]["envs"] == str(site / "envs" / "__init__.py")
    assert got["who"] == [f"dummy {name}" for name in LINKED]
    assert got["builtins"] == builtin_names()
    assert got["top_level"].split() == ["graphgen"]
    assert got["editable"] == []
    for name in LINKED:
        folder = site / "graphgen" / name
        assert folder.is_dir() and not folder.is_symlink(), folder
    out = _run(env_dir / "bin" / "graphgen", "domains", cwd=run_dir)
    assert all(name in out for name in got["builtins"])
