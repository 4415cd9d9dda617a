"""Benchmark the z3 acceptance gate on the built-in domains (a script, not a test).

For each domain, candidate tasks are generated with the dry-run gate only
(:func:`graphgen.tasks.taskset.generate` without ``task_checks``), then every one goes
through :func:`graphgen.verify.certify.certify` (the z3-found minimum and every proof), and
the script prints

* throughput: tasks fully verified per second, wall clock, with ``--jobs`` worker
  processes (the pool is started and warmed up before the clock starts);
* latency: p50/p95/max ms per task of ``certify`` (timed inside the workers), wall
  clock and CPU time, and the CPU-equivalent rate: tasks per (CPU seconds / 2), what
  two idle cores would give (compare this one on a shared machine). With ``--repeat
  r`` each task is certified r times in its worker and its least time counts (the
  usual estimate on a machine whose load comes and goes: load only ever adds time);
  throughput is then the tasks over the sum of those least times;
* scaling: when every table of the state is ``--scales`` times its default size
  (states generated through ``GenOptions(sizes=...)``, ``--scale-n`` tasks on one
  state), beside the same figures at x1: p50 CPU ms per task of ``certify``, and CPU ms
  per task of candidate generation (the dry-run-only ``generate``, the CPU time of
  generating the state itself taken out and shown apart). Neither should grow with the
  tables: the proofs look only at the rows a chain can reach, and generation reads
  tables through indexes. ``--gen-scales`` measures generation alone at further
  factors (x1000: the proofs there would take hours), with its ratio to x1, and again
  for as many more tasks on a state already used once: a state's first use builds
  the indexes its lookups share, work that grows with the tables and is paid once per
  state, so that second figure is what each task costs on its own;
* the tool cut: how many of the domain's tools each task's proofs range over, on
  average (:meth:`graphgen.verify.proofs.Prover.tool_set`; every unrolling step encodes
  each one, and the explicit search branches over them);
* with ``--phases``, where certify's CPU goes, summed over the tasks: the explicit
  searches that answered and those that gave up (their calls are then spent for
  nothing), building the unrolling's steps, z3's checks, the value-flow slice, and
  the rest. Each part counts its own time only (a part inside another is taken out
  of it); measured with the parts wrapped, so the totals run a little slower. A second
  line splits the accepted tasks' wall time by proof, from the times their
  certificates record, the search for the minimum being what comes before them.

Tasks go to the workers as the generator sends them (:mod:`graphgen.tasks.parcels`):
each initial state's tables once, not once per task.

Usage::

    .venv/bin/python benchmarks/bench_verify.py [--n 40] [--seed 0] [--jobs 2] \\
        [--domain retail ...] [--scales 10,100] [--scale-n 10] [--engine auto] \\
        [--repeat 1] [--gen-scales 1000] [--phases] [--json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any
from unittest.mock import patch

from graphgen.domain import Domain
from graphgen.domains import builtin_names, load_builtin
from graphgen.state import State
from graphgen.stategen import generate_state
from graphgen.tasks import taskset
from graphgen.tasks.expand import GenOptions
from graphgen.tasks.model import Task
from graphgen.tasks.parcels import Parcel, StatePost, files, opened, read_file
from graphgen.tasks.taskset import generate
from graphgen.verify.proofs import Engine, Prover

_DOMAIN: Domain | None = None  # the domain of this worker process
_ENGINE: Engine = "auto"  # who answers the search questions (see Prover)
_REPEAT = 1  # runs per task, the least time counting (--repeat)
_PHASES: Phases | None = None  # where certify's CPU goes (--phases)

#: Keys of ``--phases``'s second breakdown: wall ms of accepted tasks by proof.
BY_PROOF = "proof: "

#: The parts of certify ``--phases`` tells apart, in the order printed ("other" last).
PHASES = (
    "explicit search, answered",
    "explicit search, gave up",
    "unrolling steps",
    "z3 check",
    "value-flow slice",
    "other",
)


class Phases:
    """CPU ms per part of certify, each part's own time only: a part entered inside
    another is taken out of the outer one (a stack of the parts running)."""

    def __init__(self) -> None:
        self.ms: dict[str, float] = dict.fromkeys(PHASES, 0.0)
        self._inner: list[float] = []  # per running part: CPU ms of parts inside it

    def timed(self, part: str | None, fn: Any, *args: Any, **kwargs: Any) -> Any:
        """``fn(*args, **kwargs)``, its CPU time added to ``part`` (None: a search,
        counted as answered or gave up by its result's ``complete``)."""
        self._inner.append(0.0)
        c0 = time.process_time()
        try:
            got = fn(*args, **kwargs)
        finally:
            spent = (time.process_time() - c0) * 1000
            inner = self._inner.pop()
            if self._inner:
                self._inner[-1] += spent
        if part is None:
            part = "explicit search, " + ("answered" if got.complete else "gave up")
        self.ms[part] += spent - inner
        return got

    def patches(self) -> list[Any]:
        """The wrappers that time the parts (context managers to enter)."""
        from graphgen.verify import bmc, proofs

        def wrap(owner: Any, name: str, part: str | None) -> Any:
            fn = getattr(owner, name)

            def timed(*args: Any, **kwargs: Any) -> Any:
                return self.timed(part, fn, *args, **kwargs)

            return patch.object(owner, name, timed)

        return [
            wrap(proofs, "minimum", None),
            wrap(proofs, "other_final_state", None),
            wrap(bmc.Bmc, "_step", "unrolling steps"),
            wrap(bmc.Bmc, "check", "z3 check"),
            wrap(proofs, "chain_flow", "value-flow slice"),
        ]


def _init_worker(name: str, engine: Engine = "auto", repeat: int = 1, phases: bool = False) -> None:
    global _DOMAIN, _ENGINE, _REPEAT, _PHASES
    _DOMAIN = load_builtin(name)
    _ENGINE = engine
    _REPEAT = repeat
    if phases:
        _PHASES = Phases()
        for p in _PHASES.patches():  # for the life of this worker process
            p.start()


def _warm(_: int) -> int:
    return 0


def _certify(parcel: Parcel) -> tuple[float, float, str, dict[str, float]]:
    """(wall ms, CPU ms, "" if accepted else the rejection reason, CPU ms per part of
    certify with ``--phases`` else {}, and then for an accepted task also the wall ms of
    each proof under keys starting :data:`BY_PROOF`) for one task, in a worker: the least of
    ``--repeat`` runs (the parts those of the run with the least CPU). CPU time is what
    to compare on a shared machine: others' load inflates wall."""
    from graphgen.verify.certify import certify

    assert _DOMAIN is not None
    task = opened(parcel, read_file)
    best: tuple[float, float, str, dict[str, float]] | None = None
    for _ in range(_REPEAT):
        if _PHASES is not None:
            _PHASES.ms = dict.fromkeys(PHASES, 0.0)
        t0 = time.perf_counter()
        c0 = time.process_time()
        got = certify(_DOMAIN, task, engine=_ENGINE)
        cpu = (time.process_time() - c0) * 1000
        ms = (time.perf_counter() - t0) * 1000
        why = got if isinstance(got, str) else ""
        parts: dict[str, float] = {}
        if _PHASES is not None:
            parts = dict(_PHASES.ms)
            parts["other"] = cpu - sum(parts.values())
            if not isinstance(got, str) and got.certificate is not None:
                # the certificate times each proof (wall); the rest of an accepted
                # task's certify is the search for its minimum, which runs first
                proofs = {BY_PROOF + p.name: p.ms for p in got.certificate.proofs}
                parts[BY_PROOF + "the minimum's search"] = ms - sum(proofs.values())
                parts.update(proofs)
        if best is not None and why != best[2]:
            raise RuntimeError(f"{task.id}: {why or 'accepted'} after {best[2] or 'accepted'}")
        if best is None:
            best = (ms, cpu, why, parts)
        else:
            least = parts if cpu < best[1] else best[3]
            best = (min(ms, best[0]), min(cpu, best[1]), why, least)
    assert best is not None
    return best


def _pct(xs: list[float], q: float) -> float:
    """The ``q`` quantile (nearest rank) of ``xs``; 0 for no data."""
    if not xs:
        return 0.0
    s = sorted(xs)
    return s[min(len(s) - 1, max(0, round(q * len(s) + 0.5) - 1))]


def candidates(
    domain: Domain,
    n: int,
    seed: int,
    scale: int = 1,
    on: State | None = None,
    states: list[State] | None = None,
) -> tuple[list[Task], float, float]:
    """``n`` tasks that passed the dry-run gate, every table ``scale`` times its size;
    with the CPU ms of generation per task, the states' own generation taken out (timed
    where the generator makes them), and the CPU seconds per state. With ``on``, every
    task is drawn on that state instead of generating any (its generation counts 0);
    ``states`` receives the states generated."""
    sizes = {e: ed.size * scale for e, ed in domain.entities.items()} if scale > 1 else {}
    opts = GenOptions(sizes=sizes)
    made: list[float] = []

    def timed_state(*args: Any, **kwargs: Any) -> Any:
        if on is not None:
            return on
        c0 = time.process_time()
        try:
            st = generate_state(*args, **kwargs)
        finally:
            made.append(time.process_time() - c0)
        if states is not None:
            states.append(st)
        return st

    c0 = time.process_time()
    with patch.object(taskset, "generate_state", timed_state):
        tasks = generate(domain, n, seed, opts).tasks
    total = time.process_time() - c0
    per_task = (total - sum(made)) * 1000 / max(1, len(tasks))
    return tasks, per_task, sum(made) / max(1, len(made))


def generation_at(domain: Domain, n: int, seed: int, scale: int) -> dict[str, float]:
    """Generation CPU ms per task at tables ``scale`` times their size, two ways: on
    fresh states (``cold``: what a run pays, the first use of each state included), and
    for ``n`` more tasks (another seed's draws) on the first of those states once used
    (``warm``). A state's first use builds what later lookups share (equality indexes
    over its tables, a read's output per state); that work grows with the tables and is
    done once per state, so ``cold - warm`` over the tasks a state serves is its cost
    per task, and ``warm`` is what each task costs on its own."""
    made: list[State] = []
    tasks, cold, state_s = candidates(domain, n, seed, scale, states=made)
    warm = candidates(domain, n, seed + 1, scale, on=made[0])[1] if made else cold
    first_use = (cold - warm) * len(tasks) / max(1, len(made))
    return {
        "cold": cold,
        "warm": warm,
        "first_use_ms": first_use,
        "state_s": state_s,
        "tasks": float(len(tasks)),
    }


def verify_all(
    name: str,
    tasks: list[Task],
    jobs: int,
    engine: Engine = "auto",
    repeat: int = 1,
    phases: dict[str, float] | None = None,
) -> tuple[float, list[float], list[float], Counter[str]]:
    """Certify ``tasks`` in ``jobs`` processes: (wall seconds, wall ms per task, CPU ms
    per task, outcomes); each task ``repeat`` times, its least times counting, and then
    the wall seconds are the sum of the least wall times over ``jobs``. With a
    ``phases`` dict, the parts of certify are timed and their CPU ms summed into it
    (with the accepted tasks' wall ms per proof, under :data:`BY_PROOF` keys)."""
    timed = phases is not None
    with (
        tempfile.TemporaryDirectory(prefix="bench-states-") as folder,
        ProcessPoolExecutor(
            max_workers=jobs, initializer=_init_worker, initargs=(name, engine, repeat, timed)
        ) as pool,
    ):
        list(pool.map(_warm, range(jobs * 2)))  # start and import in every worker
        post = StatePost(files(Path(folder)))
        parcels = [post.pack(t) for t in tasks]
        t0 = time.perf_counter()
        results = list(pool.map(_certify, parcels, chunksize=1))
        wall = time.perf_counter() - t0
    if repeat > 1:  # the clock ran through every run: the least runs, spread over jobs
        wall = sum(r[0] for r in results) / 1000 / jobs
    outcomes: Counter[str] = Counter(r[2] or "accepted" for r in results)
    if phases is not None:
        for r in results:
            for part, part_ms in r[3].items():
                phases[part] = phases.get(part, 0.0) + part_ms
    return wall, [r[0] for r in results], [r[1] for r in results], outcomes


def bench(
    name: str,
    n: int,
    seed: int,
    jobs: int,
    scales: list[int],
    scale_n: int,
    engine: Engine = "auto",
    repeat: int = 1,
    gen_scales: Sequence[int] = (),
    phases: bool = False,
) -> dict[str, Any]:
    """All the measures for built-in domain ``name``; ``gen_scales``: table size factors
    at which only candidate generation is measured (no proofs); ``phases``: time the
    parts of certify (``phases_ms``, summed over the tasks) and the accepted tasks' wall
    ms by proof (``proofs_ms``)."""
    domain = load_builtin(name)
    tasks, gen_ms, state_s = candidates(domain, n, seed)
    # the tools each task's proofs range over (every unrolling step encodes each one)
    kept = [len(Prover(domain, t).tool_set()) for t in tasks]
    parts: dict[str, float] | None = {} if phases else None
    wall, ms, cpu, outcomes = verify_all(name, tasks, jobs, engine, repeat, parts)
    cpu_s = sum(cpu) / 1000
    out: dict[str, Any] = {
        "domain": name,
        "n": len(tasks),
        "seed": seed,
        "jobs": jobs,
        "engine": engine,
        "repeat": repeat,
        "wall_s": round(wall, 3),
        "tasks_per_s": round(len(tasks) / wall, 1) if wall else None,
        "accepted_per_s": round(outcomes["accepted"] / wall, 1) if wall else None,
        "p50_ms": round(_pct(ms, 0.5), 1),
        "p95_ms": round(_pct(ms, 0.95), 1),
        "mean_ms": round(statistics.mean(ms), 1) if ms else 0.0,
        "max_ms": round(max(ms), 1) if ms else 0.0,
        # what two idle cores would give: tasks per (CPU seconds / 2)
        "cpu_equiv_per_s": round(len(tasks) / (cpu_s / 2), 1) if cpu_s else None,
        "cpu_s": round(cpu_s, 3),
        "cpu_p50_ms": round(_pct(cpu, 0.5), 1),
        "cpu_p95_ms": round(_pct(cpu, 0.95), 1),
        "cpu_max_ms": round(max(cpu), 1) if cpu else 0.0,
        "outcomes": dict(sorted(outcomes.items())),
        "gen_ms_per_task": round(gen_ms, 1),
        "state_gen_s": round(state_s, 2),
        "tools": len(domain.tools),
        "tools_kept_mean": round(float(statistics.mean(kept)), 1) if kept else 0.0,
        # per table-size factor: p50 certify CPU ms, generation CPU ms per task (the
        # state's own generation apart), state generation CPU s, tasks
        "scaling": {},
        # CPU ms per part of certify over all the tasks (--phases; {} without)
        "phases_ms": {
            k: round(v, 1) for k, v in (parts or {}).items() if not k.startswith(BY_PROOF)
        },
        "proofs_ms": {
            k.removeprefix(BY_PROOF): round(v, 1)
            for k, v in (parts or {}).items()
            if k.startswith(BY_PROOF)
        },
    }
    for f in [1, *scales] if scales else []:
        small, gen_f, state_f = candidates(domain, scale_n, seed, f)
        _, _, cpu_f, outcomes_f = verify_all(name, small, jobs, engine, repeat)
        out["scaling"][str(f)] = {
            "cpu_p50_ms": round(_pct(cpu_f, 0.5), 1),
            "gen_ms_per_task": round(gen_f, 1),
            "state_gen_s": round(state_f, 2),
            "tasks": len(small),
            # a p50 of proofs that give up is no p50 of proofs: say how many were proven
            "accepted": outcomes_f.get("accepted", 0),
        }
    # generation alone, against x1 on the same number of tasks: proofs at x1000 tables
    # would take hours where the generation takes seconds
    out["generation_scaling"] = {}
    if gen_scales:
        base = generation_at(domain, scale_n, seed, 1)
        for f in gen_scales:
            got = generation_at(domain, scale_n, seed, f)
            out["generation_scaling"][str(f)] = {
                "gen_ms_per_task": round(got["cold"], 1),
                "vs_x1": round(got["cold"] / base["cold"], 2) if base["cold"] else None,
                "x1_gen_ms_per_task": round(base["cold"], 1),
                # the same on a state used once already: each task's own work
                "warm_ms_per_task": round(got["warm"], 1),
                "warm_vs_x1": round(got["warm"] / base["warm"], 2) if base["warm"] else None,
                "x1_warm_ms_per_task": round(base["warm"], 1),
                # a state's first use, paid once per state: (cold - warm) x its tasks
                "first_use_ms_per_state": round(got["first_use_ms"]),
                "state_gen_s": round(got["state_s"], 2),
                "tasks": int(got["tasks"]),
            }
    return out


def _print(r: dict[str, Any]) -> None:
    least = f", least of {r['repeat']} runs per task" if r["repeat"] > 1 else ""
    print(
        f"== {r['domain']}  (n={r['n']}, seed={r['seed']}, jobs={r['jobs']}, "
        f"engine={r['engine']}{least})"
    )
    print(
        f"  verified             {r['n']} tasks in {r['wall_s']} s = {r['tasks_per_s']} tasks/s"
        f" ({r['accepted_per_s']} accepted/s)"
    )
    print(
        f"  certify per task     p50 {r['p50_ms']} ms, p95 {r['p95_ms']} ms, "
        f"max {r['max_ms']} ms, mean {r['mean_ms']} ms (wall)"
    )
    print(
        f"  CPU per task         p50 {r['cpu_p50_ms']} ms, p95 {r['cpu_p95_ms']} ms, "
        f"max {r['cpu_max_ms']} ms = {r['cpu_equiv_per_s']} tasks/s CPU-equivalent on 2 cores"
    )
    print("  outcomes             " + ", ".join(f"{k} {v}" for k, v in r["outcomes"].items()))
    print(
        f"  generation per task  {r['gen_ms_per_task']} ms CPU (dry-run only; "
        f"the state itself {r['state_gen_s']} s)"
    )
    print(
        f"  tool cut             {r['tools_kept_mean']} of {r['tools']} tools kept per task "
        f"(mean): the proofs' chains range over these"
    )
    if r["phases_ms"]:
        total = sum(r["phases_ms"].values()) or 1.0
        print(
            "  where certify's CPU goes (all tasks, parts timed) "
            + ", ".join(
                f"{k} {v / 1000:.2f} s ({100 * v / total:.0f}%)" for k, v in r["phases_ms"].items()
            )
        )
    if r["proofs_ms"]:
        whole = sum(r["proofs_ms"].values()) or 1.0
        print(
            "  by proof             (accepted tasks, wall) "
            + ", ".join(
                f"{k} {v / 1000:.2f} s ({100 * v / whole:.0f}%)"
                for k, v in sorted(r["proofs_ms"].items(), key=lambda kv: -kv[1])
            )
        )
    if r["scaling"]:
        print(
            "  as tables grow       certify CPU p50 | generation CPU per task | state | "
            "tasks (accepted)"
        )
        for k, v in r["scaling"].items():
            print(
                f"    x{k:<6} {v['cpu_p50_ms']:>9} ms | {v['gen_ms_per_task']:>9} ms | "
                f"{v['state_gen_s']:>7} s | {v['tasks']} ({v['accepted']})"
            )
    for k, v in r["generation_scaling"].items():
        print(
            f"  generation at x{k:<5} {v['gen_ms_per_task']} ms CPU per task = {v['vs_x1']}x "
            f"x1's {v['x1_gen_ms_per_task']} ms ({v['tasks']} tasks; the state itself "
            f"{v['state_gen_s']} s)"
        )
        print(
            f"    on a used state    {v['warm_ms_per_task']} ms CPU per task = "
            f"{v['warm_vs_x1']}x x1's {v['x1_warm_ms_per_task']} ms; a state's first use "
            f"(the indexes its lookups build) about {v['first_use_ms_per_state']} ms, "
            "once per state"
        )


def main(argv: list[str] | None = None) -> None:
    """Parse options, run every requested domain, print a report (or JSON lines)."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--n", type=int, default=40, help="tasks per domain (default 40)")
    ap.add_argument("--seed", type=int, default=0, help="generation seed (default 0)")
    ap.add_argument("--jobs", type=int, default=2, help="worker processes (default 2)")
    ap.add_argument(
        "--domain",
        action="append",
        choices=builtin_names(),
        help="a built-in domain (repeatable; default: mock, retail, airline)",
    )
    ap.add_argument(
        "--scales", default="10,100", help="table size factors for the scaling runs ('' for none)"
    )
    ap.add_argument(
        "--scale-n",
        type=int,
        default=None,
        help="tasks per scaling run, on one state (default: min(25, max(4, n // 4)))",
    )
    ap.add_argument(
        "--engine",
        choices=["auto", "z3", "explicit"],
        default="auto",
        help="who answers the search questions (default auto: the explicit search for "
        "small tasks, z3 for the rest)",
    )
    ap.add_argument(
        "--repeat",
        type=int,
        default=1,
        help="certify each task this many times and count its least time (default 1); "
        "the wall figures are then the least times' sum over the jobs",
    )
    ap.add_argument(
        "--gen-scales",
        default="",
        help="table size factors at which only candidate generation is measured, "
        "--scale-n tasks against as many at x1 (e.g. 1000; default none)",
    )
    ap.add_argument(
        "--phases",
        action="store_true",
        help="time the parts of certify (explicit searches answered or given up, "
        "unrolling, z3 checks, slicing, the rest) and print their CPU over all tasks",
    )
    ap.add_argument("--json", action="store_true", help="one JSON object per domain")
    args = ap.parse_args(argv)
    scales = [int(x) for x in args.scales.split(",") if x.strip()]
    scale_n = args.scale_n if args.scale_n is not None else min(25, max(4, args.n // 4))
    names = args.domain or [d for d in ("mock", "retail", "airline") if d in builtin_names()]
    for name in names:
        r = bench(
            name,
            args.n,
            args.seed,
            args.jobs,
            scales,
            scale_n,
            args.engine,
            args.repeat,
            [int(x) for x in args.gen_scales.split(",") if x.strip()],
            args.phases,
        )
        if args.json:
            print(json.dumps(r, sort_keys=True))
        else:
            _print(r)


if __name__ == "__main__":
    main()
