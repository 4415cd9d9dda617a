"""Find or build the compiled environment package of a domain and import it.

Built-in domains are compiled into ``envs/builtin/<name>/`` and committed (a test fails
if they are stale). Any other domain is compiled on demand into a per-user cache, and
nothing found there is trusted:

- the cache folder (``platformdirs``' user cache dir, or ``cache_dir``) is created with
  mode 0700, and refused if another user owns it or others may write to it;
- a package is keyed by the domain's content hash *and* the generator's version
  (:data:`GENERATOR_VERSION`: graphgen's version and a hash of the code generator's
  sources), so a changed domain or a newer generator never reuses old code;
- it is written into a temporary folder beside its final place and renamed into place
  whole, with a manifest of the SHA-256 of every file;
- on every load each file is checked against the manifest, and a folder with a file
  missing, changed or added (a planted module, a ``__pycache__``) is rebuilt;
- an exclusive lock (``flock`` on a lock file) serialises the check, the build and the
  import, so concurrent processes loading one domain never see half a package.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import hashlib
import importlib
import importlib.util
import json
import os
import re
import shutil
import stat
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import platformdirs

import graphgen
from graphgen import explain, grading, unparse
from graphgen.domain import Domain
from graphgen.domains import builtin_names
from graphgen.envs import codegen, emit, environment, layout, naming, printer, runtime, schemas
from graphgen.envs.codegen import compile_domain_source
from graphgen.errors import GraphgenError

BUILTIN_DIR = Path(__file__).parent / "builtin"
#: The file in each cached package listing the SHA-256 of every other file.
MANIFEST = "graphgen-manifest.json"
#: The modules whose source decides the generated code: a change to any of them is a new
#: generator, whose packages never share a cache entry with the old one's.
GENERATOR_MODULES = (
    codegen,
    emit,
    layout,
    naming,
    printer,
    schemas,
    environment,
    runtime,
    grading,
    unparse,
    explain,
)


class CacheError(GraphgenError):
    """The compile cache cannot be used safely (another user's folder, or one that others
    may write to)."""


@functools.cache
def generator_version() -> str:
    """graphgen's version and a hash of the code generator's sources, e.g.
    ``0.1.0+3f2a9c01d4e5``."""
    h = hashlib.sha256()
    for mod in GENERATOR_MODULES:
        h.update(Path(str(mod.__file__)).read_bytes())
    return f"{graphgen.__version__}+{h.hexdigest()[:12]}"


def builtin_is_fresh(domain: Domain) -> bool:
    """Does the committed package of a built-in domain match what the compiler emits now?"""
    pkg = BUILTIN_DIR / domain.name
    for rel, text in compile_domain_source(domain).items():
        p = pkg / rel
        if not p.is_file() or p.read_text(encoding="utf-8") != text:
            return False
    return True


def default_cache_dir() -> Path:
    """The per-user folder of compiled custom domains."""
    return Path(platformdirs.user_cache_dir("graphgen")) / "envs"


def secure_dir(path: Path) -> Path:
    """``path`` created (mode 0700) if missing; a CacheError if it is not a folder owned by
    this user that only this user may write to."""
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    st = path.lstat()
    if not stat.S_ISDIR(st.st_mode):
        raise CacheError(f"compile cache {path} is not a folder (a link?); remove it")
    if st.st_uid != os.getuid():
        raise CacheError(
            f"compile cache {path} belongs to another user (uid {st.st_uid}); code found "
            "there is not used. Remove it or pass another cache folder"
        )
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        raise CacheError(
            f"compile cache {path} may be written by other users (mode "
            f"{stat.S_IMODE(st.st_mode):o}); code found there is not used. Run chmod 700 on "
            "it or remove it"
        )
    return path


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def package_key(domain: Domain) -> str:
    """The folder name of a domain's package in the cache: name, domain hash, generator."""
    name = re.sub(r"[^A-Za-z0-9_]", "_", domain.name)[:40]
    gen = generator_version().rpartition("+")[2]
    return f"{name}_{domain.content_hash}_{gen}"


def is_intact(pkg: Path, domain: Domain) -> bool:
    """Does ``pkg`` hold exactly the files its manifest lists, each with its hash, for
    this domain and generator? Anything else (a half-written folder, a planted file, a
    bytecode cache) is not intact."""
    try:
        manifest = json.loads((pkg / MANIFEST).read_text(encoding="utf-8"))
        files: dict[str, str] = manifest["files"]
        if manifest.get("domain_hash") != domain.content_hash:
            return False
        if manifest.get("generator") != generator_version():
            return False
        present = {p.name for p in pkg.iterdir()}
        if present != {*files, MANIFEST}:
            return False
        return all(
            (pkg / name).is_file()
            and not (pkg / name).is_symlink()
            and _sha256((pkg / name).read_bytes()) == digest
            for name, digest in files.items()
        )
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return False


def build_package(domain: Domain, pkg: Path) -> None:
    """Write ``domain``'s package into a temporary folder beside ``pkg``, then rename it
    into place (an old folder there is moved aside and deleted first)."""
    files = {name: text.encode("utf-8") for name, text in compile_domain_source(domain).items()}
    tmp = Path(tempfile.mkdtemp(prefix=f".{pkg.name}.", dir=pkg.parent))
    try:
        for name, data in files.items():
            (tmp / name).write_bytes(data)
        manifest = {
            "domain": domain.name,
            "domain_hash": domain.content_hash,
            "generator": generator_version(),
            "files": {name: _sha256(data) for name, data in files.items()},
        }
        (tmp / MANIFEST).write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")
        if pkg.exists() or pkg.is_symlink():
            old = Path(tempfile.mkdtemp(prefix=f".{pkg.name}.old.", dir=pkg.parent))
            os.replace(pkg, old / "pkg")
            shutil.rmtree(old, ignore_errors=True)
        os.replace(tmp, pkg)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


@contextlib.contextmanager
def _locked(lock_path: Path) -> Iterator[None]:
    """An exclusive lock held by this process across the block (waits for others)."""
    fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing releases the lock


def _import_path(name: str, path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        name, path / "__init__.py", submodule_search_locations=[str(path)]
    )
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import compiled environment from {path}")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    # No bytecode next to the checked sources: a __pycache__ there would make the folder
    # fail its next check (and bytecode is not covered by the manifest).
    keep = sys.dont_write_bytecode
    sys.dont_write_bytecode = True
    try:
        spec.loader.exec_module(mod)
    except BaseException:
        for key in [k for k in sys.modules if k == name or k.startswith(name + ".")]:
            del sys.modules[key]
        raise
    finally:
        sys.dont_write_bytecode = keep
    return mod


def load_env_module(domain: Domain, cache_dir: Path | None = None) -> ModuleType:
    """The compiled package of ``domain`` as an imported module (has ``Environment``).

    A built-in domain whose committed package is fresh is imported from
    ``envs/builtin``; any other is compiled into the cache (``cache_dir``, by default
    :func:`default_cache_dir`), checked on every load and rebuilt when it is not intact.
    """
    if domain.name in builtin_names() and builtin_is_fresh(domain):
        return importlib.import_module(f"graphgen.envs.builtin.{domain.name}")
    root = secure_dir(Path(cache_dir) if cache_dir is not None else default_cache_dir())
    key = package_key(domain)
    pkg = root / key
    module_name = f"graphgen_env_{key}"
    with _locked(root / f".{key}.lock"):
        if not is_intact(pkg, domain):
            build_package(domain, pkg)
            for k in [
                k for k in sys.modules if k == module_name or k.startswith(module_name + ".")
            ]:
                del sys.modules[k]  # an earlier import in this process came from old files
        loaded = sys.modules.get(module_name)
        if loaded is not None and Path(str(loaded.__file__)).parent == pkg:
            return loaded
        return _import_path(module_name, pkg)
