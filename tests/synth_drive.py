"""One synthesized domain through the whole pipeline, measured: what ``tests/test_synth.py``
asserts and ``benchmarks/bench_synth.py`` counts over many seeds.

Stages: the text loads and ``check`` is clean (no unreachable or unsatisfiable tool) and
so is ``check --strict``; generation with the z3 proofs yields tasks (their kinds
counted); the domain compiles to a package, and the interpreter and the compiled code
agree on random call sequences (:func:`tests.test_codegen.run_differential`: results,
error messages and kinds, states, call after call).
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from graphgen import pipeline as pl
from graphgen.envs.codegen import write_package
from graphgen.load import loads_domain
from graphgen.synth import SynthOptions, synth_yaml
from tests.test_codegen import Compiled, Tally, _import_package, run_differential


@dataclass
class Drive:
    """What one seed gave."""

    seed: int
    check_ok: bool = False
    strict: list[str] = field(default_factory=list)
    tasks: int = 0
    kinds: dict[str, int] = field(default_factory=dict)
    rejected: dict[str, int] = field(default_factory=dict)
    sequences: int = 0
    calls: int = 0
    writes_ok: int = 0
    mismatches: list[str] = field(default_factory=list)
    error: str = ""
    seconds: float = 0.0

    @property
    def clean(self) -> bool:
        """``check`` and ``check --strict`` both clean."""
        return self.check_ok and not self.strict and not self.error

    def yields(self, n: int) -> bool:
        """At least ``n`` verified tasks, of at least two kinds."""
        return self.tasks >= n and len(self.kinds) >= 2


def drive(
    seed: int,
    workdir: Path,
    *,
    options: SynthOptions | None = None,
    n_tasks: int = 20,
    sequences: int = 100,
    calls: int = 10,
) -> Drive:
    """Run seed ``seed``'s domain through every stage; a stage that raises is recorded in
    ``error`` (and the later stages are skipped), never raised."""
    r = Drive(seed)
    t0 = time.perf_counter()
    try:
        text = synth_yaml(seed, options)
        path = workdir / f"synth_{seed}.yaml"
        path.write_text(text, encoding="utf-8")
        dom = loads_domain(text, source=str(path))
        r.check_ok = pl.check(dom).ok
        r.strict = [f"{f.where}: {f.check}" for f in pl.strict_check(dom)]
        res = pl.generate(dom, n_tasks, pl.Options(seed=0, jobs=1))
        r.tasks = len(res.tasks)
        r.kinds = dict(Counter(t.kind for t in res.tasks))
        r.rejected = dict(res.rejected)
        if sequences:
            out = workdir / f"synth_{seed}_env"
            write_package(dom, out)
            tally = Tally()
            run_differential(
                Compiled(dom, out, _import_package(out)), range(sequences), calls, tally
            )
            r.sequences, r.calls, r.writes_ok = tally.sequences, tally.calls, tally.writes_ok
            r.mismatches = tally.mismatches
    except Exception as exc:  # a crash is a finding of the stress test, not an abort
        r.error = f"{type(exc).__name__}: {exc}"
    r.seconds = time.perf_counter() - t0
    return r
