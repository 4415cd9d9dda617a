"""What a compiled package says about itself (README) and refuses when a state loads."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest

from graphgen import pipeline as pl
from graphgen.domains import builtin_names, load_builtin
from graphgen.envs.emit_integrations import readme_source
from graphgen.stategen import generate_state


@pytest.mark.parametrize("name", builtin_names())
def test_readme_lists_every_tool_and_explains_grading(name: str) -> None:
    d = load_builtin(name)
    text = readme_source(d)
    assert text == readme_source(d)  # deterministic
    for t in d.tools.values():
        assert f"- `{t.name}(" in text
        assert ("(write)" if t.is_write else "(read)") in text.split(f"- `{t.name}(")[1]
    for section in ("## Running tasks", "## Tools", "## Grading", "pip install"):
        assert section in text
    assert f"graphgen generate {name} " in text


def test_compiled_readme_is_written(tmp_path: Path) -> None:
    files = pl.compile("mock", tmp_path / "pkg")
    readme = next(p for p in files if p.name == "README.md")
    assert readme.read_text(encoding="utf-8") == readme_source(load_builtin("mock"))


def _task(state: dict[str, object]) -> dict[str, object]:
    return {"initial_state": state, "instruction": "x", "goal": {"changes": [], "answer": []}}


def test_a_loaded_state_out_of_bounds_is_refused_at_reset() -> None:
    env = pl.make_env("mock")
    good = generate_state(load_builtin("mock"), 1).to_dict()
    env.reset(options={"task": _task(good)})  # a valid state loads
    bad = copy.deepcopy(good)
    first, second = sorted(bad["tables"]["Account"])[:2]
    bad["tables"]["Account"][first]["balance"] = -5
    bad["tables"]["Account"][second]["email"] = bad["tables"]["Account"][first]["email"]
    with pytest.raises(ValueError) as info:
        env.reset(options={"task": _task(bad)})
    msg = str(info.value)
    assert f"Account '{first}' balance is -5, below the minimum 0" in msg
    assert f"Account '{second}' email" in msg and f"already used by '{first}'" in msg
