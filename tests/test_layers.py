"""The stages form layers: core < tasks < verify < envs < pipeline and command line.

A module may import its own layer and the ones below, never one above, and that holds
for imports inside functions too (a lazy import is still a dependency). Only
``graphgen/pipeline.py``, ``graphgen/cli.py``, ``graphgen/__main__.py`` and
``graphgen/propose.py`` (which checks a proposal with the whole pipeline) sit on top;
``graphgen/__init__.py`` may name ``graphgen.pipeline`` only in its lazy ``__getattr__``
(and under ``if TYPE_CHECKING``). The stage folders are reached only as
``graphgen.tasks`` etc.: a bare ``import tasks`` would load a second copy of the module.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

LAYERS = {"core": 0, "tasks": 1, "verify": 2, "envs": 3, "top": 4}
TOP = {"graphgen.pipeline", "graphgen.cli", "graphgen.__main__", "graphgen.propose"}
STAGES = ("tasks", "verify", "envs")


def module_layer(module: str) -> str:
    """The layer of a dotted graphgen module name."""
    parts = module.split(".")
    if module in TOP or any(module.startswith(t + ".") for t in TOP):
        return "top"
    if len(parts) > 1 and parts[1] in STAGES:
        return parts[1]
    return "core"


def _imports(tree: ast.Module, package: str) -> list[tuple[str, int, list[ast.AST]]]:
    """(absolute module, line, enclosing nodes) of every import, however deeply nested."""
    found: list[tuple[str, int, list[ast.AST]]] = []

    def visit(node: ast.AST, stack: list[ast.AST]) -> None:
        if isinstance(node, ast.Import):
            found.extend((a.name, node.lineno, stack) for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative: resolve against the importing package
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                mod = ".".join([*base, *([node.module] if node.module else [])])
            else:
                mod = node.module or ""
            if mod == "graphgen":  # ``from graphgen import verify`` imports graphgen.verify
                found.extend((f"{mod}.{a.name}", node.lineno, stack) for a in node.names)
            else:
                found.append((mod, node.lineno, stack))
        for child in ast.iter_child_nodes(node):
            visit(child, [*stack, node])

    visit(tree, [])
    return found


def _lazy_hook(stack: list[ast.AST]) -> bool:
    """Inside ``def __getattr__`` or ``if TYPE_CHECKING:``."""
    for n in stack:
        if isinstance(n, ast.FunctionDef) and n.name == "__getattr__":
            return True
        if isinstance(n, ast.If) and isinstance(n.test, ast.Name) and n.test.id == "TYPE_CHECKING":
            return True
    return False


def check_source(module: str, source: str, is_package: bool = False) -> list[str]:
    """Layering violations of one module (dotted name under graphgen) given its source."""
    package = module if is_package else module.rpartition(".")[0]
    own = module_layer(module)
    problems = []
    for target, line, stack in _imports(ast.parse(source), package):
        head = target.split(".")[0]
        if head in STAGES:
            problems.append(f"{module}:{line}: bare import of {target!r}; use 'graphgen.{target}'")
            continue
        if head != "graphgen":
            continue
        layer = module_layer(target)
        if LAYERS[layer] <= LAYERS[own]:
            continue
        if module == "graphgen" and target == "graphgen.pipeline" and _lazy_hook(stack):
            continue
        problems.append(f"{module}:{line}: {own} module imports {target} ({layer})")
    return problems


def _module_name(rel: Path) -> tuple[str, bool]:
    parts = list(rel.with_suffix("").parts)
    is_package = parts[-1] == "__init__"
    if is_package:
        parts.pop()
    return ".".join(parts), is_package


def layer_violations(root: Path) -> list[str]:
    """Every violation under ``root`` (a checkout): ``graphgen/`` with the stage folders
    (the real top-level ones, not through the links), plus bare stage imports in
    ``tests/`` and ``benchmarks/``."""
    files: list[tuple[str, Path, bool]] = []
    for path in sorted((root / "graphgen").rglob("*.py")):
        rel = path.relative_to(root)
        if rel.parts[1] in STAGES:
            continue  # reached below through the real folder
        name, pkg = _module_name(rel)
        files.append((name, path, pkg))
    for stage in STAGES:
        for path in sorted((root / stage).rglob("*.py")):
            name, pkg = _module_name(Path("graphgen") / path.relative_to(root))
            files.append((name, path, pkg))
    problems = []
    for name, path, pkg in files:
        problems += check_source(name, path.read_text(encoding="utf-8"), pkg)
    for extra in ("tests", "benchmarks"):
        for path in sorted((root / extra).rglob("*.py")):
            rel = path.relative_to(root)
            src = path.read_text(encoding="utf-8")
            problems += [
                p
                for p in check_source(".".join(rel.with_suffix("").parts), src)
                if "bare import" in p
            ]
    return problems


def test_the_repository_respects_the_layers() -> None:
    assert layer_violations(ROOT) == []


def test_every_module_was_seen() -> None:
    """The scan covers the stage folders (a wrong root would pass vacuously)."""
    assert (ROOT / "verify" / "gate.py").is_file() or (ROOT / "verify" / "certify.py").is_file()
    assert module_layer("graphgen.verify.bmc") == "verify"
    assert module_layer("graphgen.envs.builtin.mock.env") == "envs"
    assert module_layer("graphgen.pipeline") == "top"
    assert module_layer("graphgen.analysis") == "core"


def test_checker_fails_on_a_planted_violation_inside_a_function(tmp_path: Path) -> None:
    """The checker is not vacuous: a lazy import of a later stage in a core module is
    caught, in a source string and in a planted copy of the tree."""
    bad = "def f():\n    from graphgen.verify import x\n    return x\n"
    assert check_source("graphgen.analysis", bad) == [
        "graphgen.analysis:2: core module imports graphgen.verify (verify)"
    ]
    (tmp_path / "graphgen").mkdir()
    for stage in STAGES:
        (tmp_path / stage).mkdir()
        (tmp_path / "tests").mkdir(exist_ok=True)
    (tmp_path / "graphgen" / "analysis.py").write_text(bad, encoding="utf-8")
    (tmp_path / "tasks" / "plan.py").write_text("import graphgen.envs.agent\n", encoding="utf-8")
    (tmp_path / "verify" / "ok.py").write_text(
        "from graphgen.tasks import model\n", encoding="utf-8"
    )
    (tmp_path / "tests" / "test_x.py").write_text("from verify.bmc import y\n", encoding="utf-8")
    assert layer_violations(tmp_path) == [
        "graphgen.analysis:2: core module imports graphgen.verify (verify)",
        "graphgen.tasks.plan:1: tasks module imports graphgen.envs.agent (envs)",
        "tests.test_x:1: bare import of 'verify.bmc'; use 'graphgen.verify.bmc'",
    ]


def test_checker_rules() -> None:
    # ``from graphgen import envs`` is an import of the envs stage
    assert check_source("graphgen.tasks.expand", "from graphgen import envs\n")
    # relative imports resolve: ``from ..envs import agent`` inside graphgen.verify.x
    assert check_source("graphgen.verify.x", "from ..envs import agent\n")
    assert not check_source("graphgen.verify.x", "from . import bmc\n")
    # the package may name the pipeline in its lazy hook only
    lazy = "def __getattr__(name):\n    from graphgen import pipeline\n"
    assert not check_source("graphgen", lazy, is_package=True)
    assert check_source("graphgen", "from graphgen import pipeline\n", is_package=True)
    assert check_source("graphgen", "def f():\n    from graphgen import cli\n", is_package=True)
    # only the top may import the top
    assert check_source("graphgen.envs.agent", "from graphgen.pipeline import run\n")
    assert not check_source("graphgen.cli", "from graphgen.envs import agent\n")
