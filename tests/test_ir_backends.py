"""Every IR walker of every backend names every node of the closed unions.

``ir.Expr`` and ``ir.Effect`` are closed unions, and each walker dispatches with ``match``
ending in ``case _: assert_never(...)``, so mypy already rejects a walker that misses a
node. This test states the same per backend and per node, from the source text: a
walker whose match was replaced by an ``isinstance`` chain, or whose ``assert_never`` arm
was dropped, fails here with the backend and the node named.

:data:`WALKERS` is the table: backend → the walkers that must handle every node.
"""

from __future__ import annotations

import ast
import textwrap
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pytest

from graphgen import ir

ROOT = Path(__file__).resolve().parents[1]

EXPR = tuple(n.__name__ for n in ir.EXPR_NODES)
EFFECT = tuple(n.__name__ for n in ir.EFFECT_NODES)
IR_NODES = frozenset(EXPR + EFFECT)

# The backends the issue names; each must have at least one expression walker here.
BACKENDS = ("interpreter", "z3", "codegen", "slicing", "satcheck", "footprint", "unparse")


# ------------------------------------------------------------------ the checker


@dataclass(frozen=True)
class MatchReport:
    """What one walker's ``match`` on IR nodes covers."""

    named: frozenset[str]  # node classes named at the top of some case pattern
    missing: tuple[str, ...]  # nodes of the walker's set that no case names
    ends_in_assert_never: bool  # the last case is ``case _: assert_never(...)``

    @property
    def ok(self) -> bool:
        return not self.missing and self.ends_in_assert_never


def _find_function(tree: ast.Module, qualname: str) -> ast.FunctionDef | ast.AsyncFunctionDef:
    """The function or method ``qualname`` (``Class.method``, ``outer.inner``) of ``tree``."""
    scope: list[ast.stmt] = tree.body
    found: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | None = None
    for part in qualname.split("."):
        found = next(
            (
                n
                for n in scope
                if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
                and n.name == part
            ),
            None,
        )
        if found is None:
            raise LookupError(f"no {qualname!r} (missing {part!r})")
        scope = found.body
    if not isinstance(found, ast.FunctionDef | ast.AsyncFunctionDef):
        raise LookupError(f"{qualname!r} is not a function")
    return found


def _class_names(p: ast.pattern) -> set[str]:
    """The classes a case pattern names at its top (through ``|`` and ``as``)."""
    match p:
        case ast.MatchClass(cls=ast.Name(id=name)) | ast.MatchClass(cls=ast.Attribute(attr=name)):
            return {name}
        case ast.MatchOr(patterns=ps):
            return set().union(*(_class_names(q) for q in ps))
        case ast.MatchAs(pattern=q) if q is not None:
            return _class_names(q)
        case _:
            return set()


def _is_assert_never_arm(case: ast.match_case) -> bool:
    wildcard = (
        isinstance(case.pattern, ast.MatchAs)
        and case.pattern.pattern is None
        and case.pattern.name is None
        and case.guard is None
    )
    if not wildcard or len(case.body) != 1:
        return False
    stmt = case.body[0]
    if not (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call)):
        return False
    fn = stmt.value.func
    name = fn.id if isinstance(fn, ast.Name) else fn.attr if isinstance(fn, ast.Attribute) else ""
    # slicing's _unmodelled takes ``Never`` exactly like assert_never (mypy checks it the
    # same way) but gives up conservatively at run time instead of raising.
    return name in ("assert_never", "_unmodelled")


def check_walker(source: str, qualname: str, nodes: tuple[str, ...]) -> MatchReport:
    """Report how the ``match`` statement(s) of ``qualname`` in ``source`` cover ``nodes``.

    A match is on IR nodes when some case names a class of ``nodes``. Of those, the one
    naming the most is the walker's dispatch (others may pick out shapes, e.g.
    ``case ir.BoolOp(op="and")``); its coverage and last arm are reported. A function
    with no such match reports every node missing.
    """
    func = _find_function(ast.parse(source), qualname)
    best: MatchReport | None = None
    for m in ast.walk(func):
        if not isinstance(m, ast.Match):
            continue
        named = frozenset(set().union(*(_class_names(c.pattern) for c in m.cases)))
        if not named & set(nodes):
            continue
        report = MatchReport(
            named,
            tuple(n for n in nodes if n not in named),
            bool(m.cases) and _is_assert_never_arm(m.cases[-1]),
        )
        if best is None or len(report.missing) < len(best.missing):
            best = report
    return best or MatchReport(frozenset(), nodes, False)


@cache
def _report(path: str, qualname: str, nodes: tuple[str, ...]) -> MatchReport:
    return check_walker((ROOT / path).read_text(encoding="utf-8"), qualname, nodes)


# ------------------------------------------------------------------ the table


@dataclass(frozen=True)
class Walker:
    backend: str
    path: str  # repository path of the source file (top-level folders, not the links)
    qualname: str
    nodes: tuple[str, ...]  # EXPR or EFFECT

    @property
    def id(self) -> str:
        return f"{self.backend}:{self.qualname}"


WALKERS: tuple[Walker, ...] = (
    Walker("interpreter", "graphgen/interp.py", "_compile", EXPR),
    Walker("interpreter", "graphgen/interp.py", "apply_effect", EFFECT),
    Walker("unparse", "graphgen/unparse.py", "Printer.expr", EXPR),
    Walker("unparse", "graphgen/unparse.py", "precedence", EXPR),
    # The code generator prints expressions with the unparse Printer (its subclass
    # overrides leaves only); effects have their own walker.
    Walker("codegen", "envs/printer.py", "PyPrinter.expr", EXPR),
    Walker("codegen", "envs/printer.py", "_node_may_raise", EXPR),
    Walker("codegen", "envs/emit.py", "ToolEmitter.emit_effect", EFFECT),
    Walker("z3", "verify/evaluator.py", "Evaluator._evaluate_node", EXPR),
    Walker("z3", "verify/evaluator.py", "canon", EXPR),
    Walker("z3", "verify/calls.py", "_apply", EFFECT),
    Walker("slicing", "verify/slicing.py", "_check_modelled", EXPR),
    Walker("slicing", "verify/slicing.py", "_Flow.value_of", EXPR),
    Walker("slicing", "verify/slicing.py", "_Flow.error_free", EXPR),
    Walker("slicing", "verify/slicing.py", "_Flow.effect", EFFECT),
    Walker("satcheck", "verify/satcheck.py", "_Abstraction.encode", EXPR),
    Walker("footprint", "graphgen/footprint.py", "reads", EXPR),
    Walker("footprint", "graphgen/footprint.py", "fail_reads", EXPR),
    Walker("footprint", "graphgen/footprint.py", "effect_writes", EFFECT),
    Walker("footprint", "graphgen/footprint.py", "effect_op", EFFECT),
    Walker("footprint", "graphgen/footprint.py", "effect_reads", EFFECT),
    # Core walkers every backend relies on.
    Walker("ir", "graphgen/ir.py", "children", EXPR),
    Walker("ir", "graphgen/ir.py", "effect_exprs", EFFECT),
    Walker("ir", "graphgen/ir.py", "free_vars", EXPR),
    Walker("interpreter", "graphgen/explain.py", "explained_fields", EXPR),
    Walker("knowledge", "graphgen/knowledge.py", "_expr_sorts", EXPR),
    Walker("knowledge", "graphgen/knowledge.py", "_item_expr", EXPR),
    Walker("parse", "graphgen/parse.py", "Elaborator._coerce", EXPR),
    Walker("staterules", "graphgen/staterules.py", "rule_reads", EXPR),
    Walker("staterules", "graphgen/staterules.py", "_table_nodes", EXPR),
)


def _param(w: Walker, *rest: str) -> object:
    return pytest.param(w, *rest, id="-".join((w.id, *rest)))


@pytest.mark.parametrize(("walker", "node"), [_param(w, n) for w in WALKERS for n in w.nodes])
def test_walker_names_node(walker: Walker, node: str) -> None:
    report = _report(walker.path, walker.qualname, walker.nodes)
    assert node in report.named, (
        f"{walker.backend}: {walker.path}::{walker.qualname} has no case for ir.{node}"
    )


@pytest.mark.parametrize("walker", [_param(w) for w in WALKERS])
def test_walker_ends_in_assert_never(walker: Walker) -> None:
    report = _report(walker.path, walker.qualname, walker.nodes)
    assert report.ends_in_assert_never, (
        f"{walker.backend}: {walker.path}::{walker.qualname} does not end in "
        "`case _: assert_never(...)`"
    )


def test_every_backend_walks_expressions_and_the_unions_are_listed() -> None:
    expr_backends = {w.backend for w in WALKERS if w.nodes == EXPR}
    assert set(BACKENDS) <= expr_backends
    assert len(set(EXPR)) == len(EXPR) >= 19 and len(set(EFFECT)) == len(EFFECT) == 4
    assert "IsNone" in EXPR and "Index" in EXPR
    for w in WALKERS:
        assert (ROOT / w.path).is_file(), f"{w.id}: no file {w.path}"


# ------------------------------------------------------------------ the checker itself

_PLANTED = textwrap.dedent("""
    from typing import assert_never
    from graphgen import ir
    from graphgen.ir import Create, Delete

    def complete(eff):
        match eff:
            case ir.Assign() | ir.ListEdit(op="append") as x:
                return x
            case ir.ListEdit():
                return None
            case Create() | Delete():
                return None
            case _:
                assert_never(eff)

    def misses_delete(eff):
        match eff:
            case ir.Assign() | ir.ListEdit():
                return 1
            case ir.Create():
                return 2
            case _:
                assert_never(eff)

    class Walk:
        def no_assert_never(self, eff):
            match eff:
                case ir.Assign() | ir.ListEdit() | ir.Create() | ir.Delete():
                    return 1
                case _:
                    raise TypeError(eff)

    def isinstance_chain(eff):
        if isinstance(eff, ir.Assign):
            return 1
        return 2

    def shapes_then_dispatch(eff):
        match eff:
            case ir.Assign(op="="):
                pass
        match eff:
            case ir.Assign() | ir.ListEdit() | ir.Create() | ir.Delete():
                return 1
            case _:
                assert_never(eff)
""")


def test_checker_accepts_a_complete_walker() -> None:
    assert check_walker(_PLANTED, "complete", EFFECT).ok
    # a partial match next to the dispatching one does not hide it
    assert check_walker(_PLANTED, "shapes_then_dispatch", EFFECT).ok


def test_checker_reports_a_missing_node() -> None:
    report = check_walker(_PLANTED, "misses_delete", EFFECT)
    assert report.missing == ("Delete",)
    assert report.ends_in_assert_never and not report.ok


def test_checker_reports_a_missing_assert_never() -> None:
    report = check_walker(_PLANTED, "Walk.no_assert_never", EFFECT)
    assert report.missing == () and not report.ends_in_assert_never and not report.ok


def test_checker_reports_a_walker_without_match() -> None:
    report = check_walker(_PLANTED, "isinstance_chain", EFFECT)
    assert report.missing == EFFECT and not report.ok


def test_checker_names_an_unknown_walker() -> None:
    with pytest.raises(LookupError, match=r"Walk\.nope"):
        check_walker(_PLANTED, "Walk.nope", EFFECT)
