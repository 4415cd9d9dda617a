"""The PDDL export: deterministic bytes, valid names, the fragment's limits, and (slow,
with the ``bench`` extra) Fast Downward's optimal plan as long as the proven minimum."""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import pytest

from graphgen.domains import load_builtin
from graphgen.envs.exports.pddl import (
    Outside,
    _build,
    _domain_text,
    encode_name,
    export_pddl,
    obj_name,
    pddl_problem,
)
from graphgen.tasks.taskset import read_taskset
from graphgen.types import PRIMS

DATA = Path(__file__).parent / "data"
NAME = re.compile(r"^[a-z][a-z0-9_-]*$")


def _export(tmp: Path, name: str) -> list[Path]:
    m, tasks = read_taskset(DATA / f"good_{name}.jsonl")
    return export_pddl([(m, tasks)], {m.domain: load_builtin(m.domain)}, tmp).files


def test_export_is_deterministic(tmp_path: Path) -> None:
    a = _export(tmp_path / "a", "mock")
    b = _export(tmp_path / "b", "mock")
    assert [p.name for p in a] == [p.name for p in b]
    assert any(p.name.startswith("problem-") for p in a)
    for x, y in zip(a, b, strict=True):
        assert x.read_bytes() == y.read_bytes()


def _balanced(text: str) -> bool:
    depth = 0
    for line in text.splitlines():
        for ch in line.split(";", 1)[0]:
            depth += {"(": 1, ")": -1}.get(ch, 0)
            if depth < 0:
                return False
    return depth == 0


def test_files_are_wellformed(tmp_path: Path) -> None:
    files = _export(tmp_path, "retail")
    dom = next(p for p in files if p.name == "domain.pddl").read_text()
    assert _balanced(dom)
    # tools outside the fragment are named in the domain's comment, not as actions
    assert ";   place_order:" in dom and "(:action place_order" not in dom
    assert "(:action get_user_details" in dom
    for p in files:
        if p.name.startswith("problem-"):
            text = p.read_text()
            assert _balanced(text) and "(:goal " in text
            for tok in re.findall(r"[(\s]([a-zA-Z][^\s()]*)", text.split("(:objects", 1)[1]):
                assert NAME.match(tok), tok


def test_refusals_and_int_tools_are_skipped_with_a_reason(tmp_path: Path) -> None:
    m, tasks = read_taskset(DATA / "good_mock.jsonl")
    res = export_pddl([(m, tasks)], {"mock": load_builtin("mock")}, tmp_path)
    assert res.skipped and all("deposit" in w or "pay" in w for w in res.skipped.values())
    assert res.tools_skipped["mock"]["deposit"] == "parameter 'amount' is of type int"
    rows = (tmp_path / "skipped.tsv").read_text().splitlines()
    assert len(rows) == len(res.skipped)
    m, tasks = read_taskset(DATA / "good_retail.jsonl")
    refusal = next(t for t in tasks if t.kind == "refusal")
    with pytest.raises(Outside, match="refusal"):
        pddl_problem(load_builtin("retail"), refusal)


def test_hostile_values_become_valid_distinct_names() -> None:
    vals = ['a "quoted" value', "O'Brien  ", "Zoë 東京", "A001", "a001", "-x-", "_a", ""]
    names = [obj_name(PRIMS["str"], v) for v in vals]
    assert all(NAME.match(n) for n in names), names
    assert len(set(names)) == len(vals)  # injective, though PDDL ignores case
    assert encode_name("A") != encode_name("a")


def _fd() -> Path | None:
    if importlib.util.find_spec("up_fast_downward") is None:
        return None
    import up_fast_downward  # type: ignore[import-untyped]

    return Path(up_fast_downward.__file__).parent / "downward" / "fast-downward.py"


@pytest.mark.slow
@pytest.mark.parametrize("name", ["mock"])
def test_optimal_plan_length_is_min_calls(tmp_path: Path, name: str) -> None:
    fd = _fd()
    if fd is None:
        pytest.skip("the bench extra (up-fast-downward) is not installed")
    _, tasks = read_taskset(DATA / f"good_{name}.jsonl")
    domain = load_builtin(name)
    ex = _build(domain)
    (tmp_path / "domain.pddl").write_text(_domain_text(ex))
    checked = 0
    for task in tasks:
        try:
            text = pddl_problem(domain, task, ex)
        except Outside:
            continue
        (tmp_path / "p.pddl").write_text(text)
        plan = tmp_path / "plan"
        plan.unlink(missing_ok=True)
        subprocess.run(
            [sys.executable, str(fd), "--plan-file", str(plan), "domain.pddl", "p.pddl",
             "--search", "astar(lmcut())"],
            cwd=tmp_path, capture_output=True, timeout=120, check=False,
        )  # fmt: skip
        steps = [ln for ln in plan.read_text().splitlines() if ln.startswith("(")]
        assert len(steps) == task.min_calls, (task.id, steps)
        checked += 1
    assert checked >= 1
