"""The built-in domain library: YAML files shipped inside the package."""

from __future__ import annotations

from functools import cache
from pathlib import Path

from graphgen.domain import Domain

_DIR = Path(__file__).parent


def builtin_names() -> list[str]:
    """Names of the shipped domains, sorted."""
    return sorted(p.stem for p in _DIR.glob("*.yaml"))


def builtin_path(name: str) -> Path:
    """Path of a built-in domain file; ``KeyError`` naming the choices if unknown."""
    p = _DIR / f"{name}.yaml"
    if not p.is_file():
        raise KeyError(f"no built-in domain {name!r}; choose from {', '.join(builtin_names())}")
    return p


@cache
def load_builtin(name: str) -> Domain:
    """Load (and cache) a built-in domain by name."""
    from graphgen.load import load_domain

    return load_domain(builtin_path(name))


def resolve(name_or_path: str) -> Domain:
    """A built-in name or a path to a YAML file."""
    from graphgen.load import load_domain

    if name_or_path in builtin_names():
        return load_builtin(name_or_path)
    return load_domain(name_or_path)
