"""Optional dependencies: check for one before a feature needs it, with a clear fix.

The core installs without matplotlib (only the PNG graph drawing uses it) and without
openai (only evaluating a model uses it); they come with the extras ``viz`` and ``eval``.
"""

from __future__ import annotations

import importlib.util

from graphgen.errors import GraphgenError

DISTRIBUTION = "graphgen-envs"


class MissingExtraError(GraphgenError, ImportError):
    """A feature needs an optional dependency that is not installed."""


def require(module: str, extra: str, feature: str) -> None:
    """Raise :class:`MissingExtraError` naming the pip command unless ``module`` imports.

    >>> require("json", "none", "reading JSON")
    """
    if importlib.util.find_spec(module) is None:
        raise MissingExtraError(
            f"{feature} needs {module}, which is not installed: "
            f"pip install '{DISTRIBUTION}[{extra}]'"
        )
