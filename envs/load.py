"""Find or build the compiled environment package of a domain and import it.

Built-in domains are compiled into ``envs/builtin/<name>/`` and committed (a test fails
if they are stale). Any other domain is compiled on demand into a cache folder keyed by
the domain's content hash, so a changed domain file never reuses old code.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import tempfile
from pathlib import Path
from types import ModuleType

from graphgen.domain import Domain
from graphgen.domains import builtin_names
from graphgen.envs.codegen import compile_domain_source, write_package

BUILTIN_DIR = Path(__file__).parent / "builtin"


def builtin_is_fresh(domain: Domain) -> bool:
    """Does the committed package of a built-in domain match what the compiler emits now?"""
    pkg = BUILTIN_DIR / domain.name
    for rel, text in compile_domain_source(domain).items():
        p = pkg / rel
        if not p.is_file() or p.read_text(encoding="utf-8") != text:
            return False
    return True


def _import_path(name: str, path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        name, path / "__init__.py", submodule_search_locations=[str(path)]
    )
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import compiled environment from {path}")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


def load_env_module(domain: Domain, cache_dir: Path | None = None) -> ModuleType:
    """The compiled package of ``domain`` as an imported module (has ``Environment``)."""
    if domain.name in builtin_names() and builtin_is_fresh(domain):
        return importlib.import_module(f"graphgen.envs.builtin.{domain.name}")
    root = cache_dir or Path(tempfile.gettempdir()) / "graphgen-envs"
    pkg = root / f"{domain.name}_{domain.content_hash}"
    if not (pkg / "__init__.py").is_file():
        write_package(domain, pkg)
    return _import_path(f"graphgen_env_{domain.name}_{domain.content_hash}", pkg)
