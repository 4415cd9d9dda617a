"""A compiled package stands alone: it imports with pydantic only (each framework is imported
by the adapter that needs it), its Gymnasium wrapper passes Gymnasium's checker, and its
``pyproject.toml`` builds a wheel that installs and imports as ``<domain>_env``."""

from __future__ import annotations

import os
import subprocess
import sys
import warnings
import zipfile
from pathlib import Path

import pytest

from graphgen.domains import builtin_names, load_builtin
from graphgen.envs.agent import env_task
from graphgen.envs.codegen import write_package
from graphgen.envs.emit_integrations import import_name
from tests.oracle_calls import package, tasks

# Importing any of these makes the script fail: the frameworks, and graphgen itself.
_BLOCK = ("gymnasium", "mcp", "trl", "transformers", "torch", "graphgen", "openai", "numpy")
_CHECK = """
import sys
for name in {block!r}:
    sys.modules[name] = None  # import name -> ImportError
import {pkg}
from {pkg} import integrations, text, trl_env
session = integrations.text_session()
env = {pkg}.TrlEnvironment()
try:
    integrations.make_gym_env([{{}}])
except ImportError as exc:
    assert "gym" in str(exc), exc
else:
    raise AssertionError("gymnasium was blocked")
try:
    integrations.mcp_server()
except ImportError as exc:
    assert "mcp" in str(exc), exc
else:
    raise AssertionError("mcp was blocked")
print("ok")
"""


def _python(code: str, cwd: Path, path: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(path or cwd)}
    return subprocess.run(
        [sys.executable, "-c", code], cwd=cwd, env=env, capture_output=True, text=True, timeout=120
    )


def test_a_compiled_package_imports_with_pydantic_alone(tmp_path: Path) -> None:
    domain = load_builtin("mock")
    write_package(domain, tmp_path / import_name(domain))
    code = _CHECK.format(block=_BLOCK, pkg=import_name(domain))
    res = _python(code, tmp_path)
    assert res.returncode == 0 and res.stdout.strip() == "ok", res.stderr
    # the check itself fails when a blocked module is needed
    res = _python(code + "import numpy\n", tmp_path)
    assert res.returncode != 0 and "import of numpy halted" in res.stderr


@pytest.mark.parametrize("domain", builtin_names())
def test_every_package_registers_a_gymnasium_env_that_passes_check_env(domain: str) -> None:
    import gymnasium
    from gymnasium.utils.env_checker import check_env

    integ = package(domain, "integrations")
    assert integ.register_gym() == f"graphgen/{domain}-v0" == integ.GYM_ID
    env = gymnasium.make(integ.GYM_ID, tasks=[env_task(t) for t in tasks(domain, 3)])
    inner = env.unwrapped
    assert isinstance(inner, gymnasium.Env) and inner.spec is not None
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check_env(inner)
    observation, _ = inner.reset(seed=5)
    assert inner.observation_space.contains(observation)
    _, reward, terminated, _, _ = inner.step('{"name": "respond", "arguments": {"answer": "?"}}')
    assert terminated and reward in (0.0, 1.0)


def test_python_dash_m_without_a_command_prints_usage(tmp_path: Path) -> None:
    domain = load_builtin("mock")
    write_package(domain, tmp_path / "mock_env")
    res = subprocess.run(
        [sys.executable, "-m", "mock_env"], cwd=tmp_path, capture_output=True, text=True
    )
    assert res.returncode == 2 and "usage: python -m <package> mcp" in res.stdout


@pytest.mark.slow
def test_the_package_builds_a_wheel_that_installs_and_imports(tmp_path: Path) -> None:
    """``pip wheel`` offline (no build isolation, as tests/test_packaging.py builds graphgen's
    own), then ``pip install --target`` of the wheel and an import of the installed copy."""
    domain = load_builtin("retail")
    src = tmp_path / "retail_env"
    write_package(domain, src)
    pip_env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": os.environ.get("HOME", "/tmp"),
        "PIP_CONFIG_FILE": os.devnull,
        "PIP_DISABLE_PIP_VERSION_CHECK": "1",
    }
    offline = ("--quiet", "--no-deps", "--no-index")
    dist = tmp_path / "dist"
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", *offline, "--no-build-isolation", "-w", dist, src],
        check=True,
        env=pip_env,
        cwd=tmp_path,
        timeout=300,
    )
    (wheel,) = dist.glob("*.whl")
    assert wheel.name == f"graphgen_env_retail-1.0.0+{domain.content_hash}-py3-none-any.whl"
    with zipfile.ZipFile(wheel) as zf:
        names = zf.namelist()
        meta_name = next(n for n in names if n.endswith(".dist-info/METADATA"))
        metadata = zf.read(meta_name).decode()
        entry_points = zf.read(meta_name.replace("METADATA", "entry_points.txt")).decode()
    assert "retail-env-mcp = retail_env.integrations:serve_mcp" in entry_points
    assert {n.split("/")[0] for n in names if not n.split("/")[0].endswith(".dist-info")} == {
        "retail_env"
    }
    assert {"retail_env/py.typed", "retail_env/mcp_server.py", "retail_env/__main__.py"} <= set(
        names
    )
    requires = [line for line in metadata.splitlines() if line.startswith("Requires-Dist:")]
    assert [r for r in requires if "extra ==" not in r] == ["Requires-Dist: pydantic>=2.7"]
    for extra in ("gym", "mcp", "trl"):
        assert f"Provides-Extra: {extra}" in metadata
    target = tmp_path / "site"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", *offline, "--target", target, wheel],
        check=True,
        env=pip_env,
        cwd=tmp_path,
        timeout=300,
    )
    code = _CHECK.format(block=_BLOCK, pkg="retail_env") + (
        "import retail_env, os\nprint(os.path.dirname(retail_env.__file__))\n"
    )
    res = _python(code, tmp_path / "dist", path=target)
    assert res.returncode == 0, res.stderr
    assert res.stdout.split() == ["ok", str(target / "retail_env")]
