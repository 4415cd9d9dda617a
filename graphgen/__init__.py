"""graphgen: provably solvable tool-use tasks from a typed tool dependency graph.

From a built-in domain's name to a task set proven by z3, written to disk, re-checked
from scratch, and solved by the oracle agent in the compiled environment:

>>> import graphgen, pathlib, tempfile
>>> path = pathlib.Path(tempfile.mkdtemp()) / "tasks.jsonl"
>>> tasks = graphgen.generate("mock", 4, output=path)  # dry-run gate + z3 proofs
>>> graphgen.verify_tasks(path).ok  # every proof re-run, trusting nothing in the file
True
>>> graphgen.evaluate(path, "oracle").success_rate
1.0

The stage functions (:mod:`graphgen.pipeline`) load on first use, so importing
``graphgen`` (or ``graphgen.ir``) does not import z3, the environments, or openai.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from graphgen.domain import Domain
from graphgen.errors import DomainError, ToolError
from graphgen.load import elaborate_domain, load_domain, loads_domain
from graphgen.state import State

if TYPE_CHECKING:  # the lazy names below, for type checkers and editors
    from graphgen.pipeline import (
        Options,
        check,
        compile,
        coverage,
        evaluate,
        export_graph,
        export_tasks,
        generate,
        load_domain_ref,
        make_env,
        run,
        verify_tasks,
    )

__version__ = "0.1.0"

__all__ = [
    "Domain",
    "DomainError",
    "Options",
    "State",
    "ToolError",
    "__version__",
    "check",
    "compile",
    "coverage",
    "elaborate_domain",
    "evaluate",
    "export_graph",
    "export_tasks",
    "generate",
    "load_domain",
    "load_domain_ref",
    "loads_domain",
    "make_env",
    "run",
    "verify_tasks",
]


def __getattr__(name: str) -> Any:
    # PEP 562: the names of __all__ not defined above come from graphgen.pipeline, which
    # imports every later stage (and z3), so it loads on first use only.
    if name in __all__:
        from graphgen import pipeline

        return getattr(pipeline, name)
    raise AttributeError(f"module 'graphgen' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
