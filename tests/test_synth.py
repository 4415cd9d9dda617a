"""``graphgen synth``: deterministic, valid, plausible domains, and the pipeline driven
through them (check, generation with proofs, compilation, interpreter against compiled
code)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from graphgen.cli import app
from graphgen.load import loads_domain
from graphgen.synth import SynthError, SynthOptions, synth_spec, synth_yaml
from graphgen.types import EnumT
from tests.synth_drive import drive

runner = CliRunner()


def test_same_seed_same_bytes_other_seed_other_domain() -> None:
    assert synth_yaml(11) == synth_yaml(11)
    assert synth_yaml(11) != synth_yaml(12)
    opts = SynthOptions(entities=4, tools=18, rows=10)
    assert synth_yaml(11, opts) == synth_yaml(11, opts) != synth_yaml(11)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(min_value=0, max_value=10**9),
    entities=st.integers(min_value=2, max_value=12),
    tools=st.one_of(st.none(), st.integers(min_value=1, max_value=120)),
)
def test_every_synthesized_domain_loads_with_its_shape(
    seed: int, entities: int, tools: int | None
) -> None:
    """Any seed and options: the text loads and type-checks, and has what the synthesizer
    promises (references, a life cycle, bounded amounts, searches, guarded writes)."""
    text = synth_yaml(seed, SynthOptions(entities=entities, tools=tools))
    assert "&id" not in text and "*id" not in text  # no YAML aliases
    d = loads_domain(text)
    assert len(d.entities) == entities
    owner, *resources = d.entities.values()
    for r in resources:
        assert d.entity_of_ref(r.fields[owner.key].ty) == owner.name
        assert isinstance(r.fields["status"].ty, EnumT)
        amount = next(f for f in r.fields.values() if f.min is not None)
        assert amount.max is not None and amount.min < amount.max
        # Every resource can be found, shown, opened, and moved through its life cycle.
        names = set(d.tools)
        key = r.key.removesuffix("_id")
        assert {f"list_{key}s", f"find_{key}_by_title", f"get_{key}"} <= names
    assert all(t.requires and all(c.message for c in t.requires) for t in d.write_tools)
    assert all(t.intents for t in d.tools.values())
    if tools is not None:
        # At most the limit, unless the tools every domain keeps need more.
        kept = 2 + 4 * (entities - 1)
        assert len(d.tools) <= max(tools, kept)


def test_options_are_checked() -> None:
    for bad in ({"entities": 1}, {"entities": 13}, {"rows": 2}, {"tools": 0}):
        with pytest.raises(SynthError):
            SynthOptions(**bad)  # type: ignore[arg-type]
    spec = synth_spec(5, SynthOptions(entities=2, tools=1))
    assert len(spec["tools"]) == 6  # the searches and reads stay, and one write


def test_cli_synth_writes_files_and_refuses_to_overwrite(tmp_path: Path) -> None:
    res = runner.invoke(app, ["synth", "--seed", "7", "--count", "2", "-o", str(tmp_path)])
    assert res.exit_code == 0, res.output
    a = tmp_path / "synth_7.yaml"
    assert a.read_text() == synth_yaml(7)
    assert yaml.safe_load((tmp_path / "synth_8.yaml").read_text())["name"] == "synth_8"
    again = runner.invoke(app, ["synth", "--seed", "7", "-o", str(tmp_path)])
    assert again.exit_code == 2
    res = runner.invoke(
        app, ["synth", "--seed", "7", "--entities", "4", "-o", str(tmp_path), "--force"]
    )
    assert res.exit_code == 0 and a.read_text() == synth_yaml(7, SynthOptions(entities=4))


FAST_SEEDS = [0, 1, 2]


@pytest.mark.parametrize("seed", FAST_SEEDS)
def test_pipeline_on_a_few_seeds(seed: int, tmp_path: Path) -> None:
    """check clean (plain and strict), 20 proven tasks of at least two kinds, and the
    compiled code equal to the interpreter on 20 random call sequences."""
    r = drive(seed, tmp_path, sequences=20)
    assert not r.error, r.error
    assert r.check_ok and r.strict == []
    assert r.yields(20), (r.tasks, r.kinds, r.rejected)
    assert r.mismatches == [], r.mismatches[:2]
    assert r.calls == 200 and r.writes_ok > 0


@pytest.mark.slow
@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(min_value=3, max_value=10**6),
    entities=st.integers(min_value=2, max_value=4),
)
def test_pipeline_property(
    seed: int, entities: int, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """Random seeds and sizes: every stage goes through, and the interpreter and the
    compiled code never differ on 100 random call sequences."""
    r = drive(seed, tmp_path_factory.mktemp("synth"), options=SynthOptions(entities=entities))
    assert not r.error, r.error
    assert r.check_ok and r.strict == []
    assert r.tasks >= 15 and len(r.kinds) >= 2, (r.tasks, r.kinds, r.rejected)
    assert r.mismatches == [], r.mismatches[:2]
