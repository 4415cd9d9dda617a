"""The compile cache of custom domains trusts nothing it finds (envs/load.py).

A planted or changed file, a half-written folder or a bytecode cache is detected and the
package rebuilt; another user's folder, or one others may write to, is refused; a newer
generator never reuses old code; concurrent cold loads of one domain never fail.
"""

from __future__ import annotations

import multiprocessing
import os
import stat
import traceback
from pathlib import Path
from typing import Any

import pytest
import yaml

from graphgen.domain import Domain
from graphgen.domains import builtin_path
from graphgen.envs import load as envload
from graphgen.envs.load import (
    MANIFEST,
    CacheError,
    is_intact,
    load_env_module,
    package_key,
    secure_dir,
)
from graphgen.load import domain_from_dict


def _custom(name: str = "custom_bank") -> Domain:
    data = yaml.safe_load(builtin_path("mock").read_text(encoding="utf-8"))
    data["name"] = name
    return domain_from_dict(data)


def _works(mod: Any) -> None:
    env = mod.Environment()
    state = {"tables": {"Account": {}, "Payment": {}}, "counters": {"Account": 1, "Payment": 1}}
    env.reset(options={"task": {"initial_state": state, "instruction": "hi"}})
    obs, *_, info = env.step({"name": "find_account", "arguments": {"email": "a@b.c"}})
    assert obs == "[]" and info["error"] is None


def test_cold_then_warm_load(tmp_path: Path) -> None:
    dom = _custom()
    mod = load_env_module(dom, tmp_path)
    _works(mod)
    pkg = tmp_path / package_key(dom)
    assert Path(str(mod.__file__)).parent == pkg and is_intact(pkg, dom)
    assert not (pkg / "__pycache__").exists()  # no unchecked bytecode beside the sources
    assert load_env_module(dom, tmp_path) is mod


@pytest.mark.parametrize(
    "tamper",
    ["planted_module", "changed_file", "pycache", "missing_file", "bad_manifest"],
)
def test_tampered_package_is_rebuilt(tmp_path: Path, tamper: str) -> None:
    dom = _custom(f"custom_{tamper}")
    load_env_module(dom, tmp_path)
    pkg = tmp_path / package_key(dom)
    planted = "raise SystemExit('planted code ran')\n"
    if tamper == "planted_module":
        (pkg / "evil.py").write_text(planted)
    elif tamper == "changed_file":
        (pkg / "tools.py").write_text(planted)
    elif tamper == "pycache":
        (pkg / "__pycache__").mkdir()
        (pkg / "__pycache__" / "tools.cpython-311.pyc").write_bytes(b"\0" * 16)
    elif tamper == "missing_file":
        (pkg / "env.py").unlink()
    else:
        (pkg / MANIFEST).write_text("{not json")
    assert not is_intact(pkg, dom)
    mod = load_env_module(dom, tmp_path)  # rebuilt, re-imported, the planted code never ran
    _works(mod)
    assert is_intact(pkg, dom)
    assert not (pkg / "evil.py").exists() and planted not in (pkg / "tools.py").read_text()


def test_half_written_folder_is_rebuilt(tmp_path: Path) -> None:
    """A build killed half-way (the old code wrote straight into the final folder)."""
    dom = _custom("custom_half")
    pkg = tmp_path / package_key(dom)
    pkg.mkdir()
    (pkg / "__init__.py").write_text("from .env import Environment\n")  # env.py never came
    leftover = tmp_path / f".{pkg.name}.abc123"  # a temporary folder of a killed build
    leftover.mkdir()
    (leftover / "tools.py").write_text("x = 1\n")
    _works(load_env_module(dom, tmp_path))
    assert is_intact(pkg, dom)


def test_new_generator_never_reuses_old_code(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    dom = _custom("custom_versions")
    load_env_module(dom, tmp_path)
    old = tmp_path / package_key(dom)
    monkeypatch.setattr(envload, "generator_version", lambda: "9.9.9+0123456789ab")
    new = tmp_path / package_key(dom)
    assert new != old and not is_intact(old, dom)  # the old manifest names the old generator
    _works(load_env_module(dom, tmp_path))
    assert is_intact(new, dom)


def test_generator_version_names_graphgen_and_the_sources() -> None:
    import graphgen

    version = envload.generator_version()
    head, _, digest = version.partition("+")
    assert head == graphgen.__version__ and len(digest) == 12
    assert all(c in "0123456789abcdef" for c in digest)


def test_cache_dir_is_private(tmp_path: Path) -> None:
    root = secure_dir(tmp_path / "fresh" / "cache")
    assert stat.S_IMODE(root.stat().st_mode) == 0o700


def test_group_or_world_writable_cache_is_refused(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    with pytest.raises(CacheError, match="may be written by other users"):
        load_env_module(_custom("custom_shared"), shared)
    assert list(shared.iterdir()) == []  # nothing compiled, nothing imported


@pytest.mark.skipif(os.getuid() != 0, reason="giving a folder to another user needs root")
def test_cache_of_another_user_is_refused(tmp_path: Path) -> None:
    theirs = tmp_path / "theirs"
    theirs.mkdir(mode=0o700)
    os.chown(theirs, 12345, 12345)
    with pytest.raises(CacheError, match="belongs to another user"):
        load_env_module(_custom("custom_theirs"), theirs)


def test_a_link_is_refused(tmp_path: Path) -> None:
    target = tmp_path / "target"
    target.mkdir(mode=0o700)
    (tmp_path / "link").symlink_to(target)
    with pytest.raises(CacheError, match="not a folder"):
        secure_dir(tmp_path / "link")


def _loader(root: str, rounds: int, barrier: Any, errors: Any) -> None:
    dom = _custom("custom_race")
    for r in range(rounds):
        barrier.wait()  # every process starts each round's cold load together
        try:
            _works(load_env_module(dom, Path(root) / f"round{r}"))
        except BaseException:
            errors.put(traceback.format_exc())


@pytest.mark.parametrize(
    ("procs", "rounds"),
    [(4, 2), pytest.param(8, 13, marks=pytest.mark.slow)],  # slow: 104 loads, ~7 s
)
def test_concurrent_cold_loads_never_fail(tmp_path: Path, procs: int, rounds: int) -> None:
    """``procs`` processes, ``rounds`` rounds, each round on a cold cache, all processes
    loading one custom domain at once: every load works, every package ends intact."""
    ctx = multiprocessing.get_context("fork")
    barrier, errors = ctx.Barrier(procs), ctx.Queue()
    for r in range(rounds):
        (tmp_path / f"round{r}").mkdir(mode=0o700)
    workers = [
        ctx.Process(target=_loader, args=(str(tmp_path), rounds, barrier, errors))
        for _ in range(procs)
    ]
    for w in workers:
        w.start()
    for w in workers:
        w.join(timeout=120)
    assert all(w.exitcode == 0 for w in workers), [w.exitcode for w in workers]
    failures = []
    while not errors.empty():
        failures.append(errors.get())
    assert failures == [], failures[0]
    dom = _custom("custom_race")
    for r in range(rounds):
        assert is_intact(tmp_path / f"round{r}" / package_key(dom), dom)
