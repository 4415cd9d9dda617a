"""graphgen: provably solvable tool-use tasks from a typed tool dependency graph."""

from graphgen.domain import Domain
from graphgen.errors import DomainError, ToolError
from graphgen.load import compile_domain, load_domain, loads_domain
from graphgen.state import State

__version__ = "0.1.0"
__all__ = [
    "Domain",
    "DomainError",
    "State",
    "ToolError",
    "__version__",
    "compile_domain",
    "load_domain",
    "loads_domain",
]
