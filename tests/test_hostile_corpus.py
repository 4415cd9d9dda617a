"""The hostile-input corpus (``tests/data/hostile/``): every case is rejected with its
located message, never a traceback.

``domains/*.yaml`` must fail to load with a :class:`DomainError` naming the file and the
words after ``# expect:`` on its first line (``a | b``: either); ``tasks/*.jsonl`` must
hold a bad line that :func:`graphgen.pipeline.read_tasks` (or, for the manifest,
``verify``) reports at the line and with the words ``tasks/expected.json`` gives.
Rebuild the corpus with ``tests/data/hostile/make_hostile.py``.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from graphgen import pipeline as pl
from graphgen.errors import DomainError
from graphgen.load import load_domain
from graphgen.tasks.validate import TaskSetError

HOSTILE = Path(__file__).parent / "data" / "hostile"
DOMAIN_FILES = sorted((HOSTILE / "domains").glob("*.yaml"))
TASK_FILES = sorted((HOSTILE / "tasks").glob("*.jsonl"))
EXPECTED = json.loads((HOSTILE / "tasks" / "expected.json").read_text(encoding="utf-8"))
CASES = [("domains", p) for p in DOMAIN_FILES] + [("tasks", p) for p in TASK_FILES]


def _expect_of(path: Path) -> str:
    first = path.read_text(encoding="utf-8", errors="replace").split("\n", 1)[0]
    assert first.startswith("# expect: "), f"{path.name}: no '# expect:' line"
    return first.removeprefix("# expect: ")


def _domain_case(path: Path) -> None:
    started = time.perf_counter()
    with pytest.raises(DomainError) as info:
        load_domain(path)
    assert time.perf_counter() - started < 5, "a hostile file must fail fast"
    expect = _expect_of(path)
    hits = [p for p in info.value.problems if any(e in str(p) for e in expect.split(" | "))]
    assert hits, f"{path.name}: {expect!r} not in {info.value}"
    assert all(p.file == str(path) for p in hits)
    # Located: the tool, entity, key path or line it is about, not just the file.
    assert all(p.where for p in hits), [str(p) for p in hits]


def _tasks_case(path: Path) -> None:
    want = EXPECTED[path.name]
    prefix = f"{path}:{want['line']}:"
    if want["line"] == 1:  # the manifest: verify compares it with the domain
        res = pl.verify_tasks(path, options=pl.Options(jobs=1))
        assert not res.ok
        assert any(want["message"] in why for _, why in res.failures), res.failures
        return
    got, _ = pl.read_tasks(path)
    hits = [p for p in got.problems if want["message"] in str(p)]
    assert hits, f"{path.name}: {want['message']!r} not in {[str(p) for p in got.problems]}"
    assert all(str(p).startswith(prefix) for p in hits), [str(p) for p in hits]
    # The bad line is reported, not taken: the reader that needs every task refuses.
    with pytest.raises(TaskSetError, match=f"^{prefix.replace('.', '[.]')}"):
        pl.evaluate(path, "noop")


def test_the_corpus_covers_both_kinds() -> None:
    assert len(DOMAIN_FILES) >= 15 and len(TASK_FILES) >= 15
    assert {p.name for p in TASK_FILES} == set(EXPECTED)


@pytest.mark.parametrize(("kind", "path"), CASES, ids=[f"{k}/{p.stem}" for k, p in CASES])
def test_hostile_input_is_rejected_with_a_located_message(kind: str, path: Path) -> None:
    if kind == "domains":
        _domain_case(path)
    else:
        _tasks_case(path)
