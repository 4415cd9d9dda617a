"""Split one task set over machines without a cluster, and join the parts.

``graphgen generate … -n N --shard i/k`` makes part ``i`` (0-based) of a set of ``N``
tasks split in ``k``: ``shard_size(N, i, k)`` tasks, drawn on states no other part uses
(part ``i`` takes the generator's state blocks ``i, i+k, i+2k, …``) and with a random
stream of its own, so the parts never repeat each other and can run on any machine in
any order. ``graphgen merge`` checks that the files are the ``k`` parts of one run (same
domain and content hash, seed, options and generator version; every part once) and
writes one set: the parts' tasks in part order, numbered as one set, with the counts of
the manifests added up. The same seed and ``k`` give the same merged bytes; a set made
in ``k`` parts is not the set made in one run (each part draws its own candidates), so
the merged manifest records ``shards: k``.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

from graphgen.tasks.model import Manifest, ParaphraseCounts, Task
from graphgen.tasks.validate import TaskSetError, task_fingerprint

_SHARD = re.compile(r"^\s*(\d+)\s*/\s*(\d+)\s*$")


def parse_shard(text: str) -> tuple[int, int]:
    """``"i/k"`` as ``(i, k)``: part ``i`` (0-based) of ``k``.

    >>> parse_shard("2/8")
    (2, 8)
    >>> parse_shard("8/8")
    Traceback (most recent call last):
    ...
    ValueError: shard '8/8': the part is 0 to 7 (parts are numbered from 0)
    """
    m = _SHARD.match(text)
    if m is None:
        raise ValueError(f"shard {text!r}: write it as PART/PARTS, e.g. 0/4")
    i, k = int(m.group(1)), int(m.group(2))
    if k < 1 or k > 10_000:
        raise ValueError(f"shard {text!r}: the number of parts is 1 to 10000")
    if i >= k:
        raise ValueError(f"shard {text!r}: the part is 0 to {k - 1} (parts are numbered from 0)")
    return i, k


def shard_size(n: int, part: int, parts: int) -> int:
    """How many of ``n`` tasks part ``part`` of ``parts`` makes (the first ``n % parts``
    parts make one more).

    >>> [shard_size(10, i, 4) for i in range(4)]
    [3, 3, 2, 2]
    """
    return n // parts + (1 if part < n % parts else 0)


def merge(parts: Sequence[tuple[str, Manifest, list[Task]]]) -> tuple[Manifest, list[Task]]:
    """Join the parts ``(source, manifest, tasks)`` of one sharded run into one set.

    Raises :class:`~graphgen.tasks.validate.TaskSetError` naming the file at fault when
    the files are not exactly the parts of one run.
    """
    if not parts:
        raise TaskSetError("merge needs the files of the parts to join")
    placed: dict[int, tuple[str, Manifest, list[Task]]] = {}
    count: int | None = None
    first_src, first, _ = parts[0]
    for src, m, tasks in parts:
        shard = m.options.get("shard")
        if not isinstance(shard, str):
            raise TaskSetError(f"{src}: not a part of a sharded run (its manifest has no shard)")
        i, k = parse_shard(shard)
        if count is None:
            count = k
        if k != count:
            raise TaskSetError(f"{src}: part of a run in {k} parts, {first_src} of {count}")
        for name in ("domain", "domain_hash", "seed", "generator_version"):
            if getattr(m, name) != getattr(first, name):
                raise TaskSetError(
                    f"{src}: {name} {getattr(m, name)!r} differs from {first_src}'s "
                    f"{getattr(first, name)!r}"
                )
        same = {x: v for x, v in m.options.items() if x not in ("n", "shard")}
        want = {x: v for x, v in first.options.items() if x not in ("n", "shard")}
        if same != want:
            diff = sorted(x for x in set(same) | set(want) if same.get(x) != want.get(x))
            raise TaskSetError(f"{src}: made with other options than {first_src}: {diff}")
        if i in placed:
            raise TaskSetError(f"{src}: part {i} is given twice (also {placed[i][0]})")
        placed[i] = (src, m, tasks)
    assert count is not None
    missing = [i for i in range(count) if i not in placed]
    if missing:
        raise TaskSetError(f"merge: part(s) {missing} of {count} are missing")
    merged: list[Task] = []
    seen: dict[str, str] = {}
    by_kind: Counter[str] = Counter()
    by_length: Counter[str] = Counter()
    rejected: Counter[str] = Counter()
    n = 0
    for i in range(count):
        src, m, tasks = placed[i]
        n += int(m.options.get("n", len(tasks)))
        by_kind.update(m.by_kind)
        by_length.update(m.by_length)
        rejected.update(m.rejected)
        for t in tasks:
            fp = task_fingerprint(t)
            if fp in seen:
                raise TaskSetError(f"{src}: task {t.id} repeats {seen[fp]}")
            seen[fp] = f"{src}: {t.id}"
            merged.append(
                t.model_copy(update={"id": f"{first.domain}-{first.seed}-{len(merged):05d}"})
            )
    paraphrase = None
    if first.paraphrase is not None:
        para = [placed[i][1].paraphrase for i in range(count)]
        if any(p is None or p.model != first.paraphrase.model for p in para):
            raise TaskSetError("merge: the parts were not all paraphrased by the same model")
        pr: Counter[str] = Counter()
        for p in para:
            assert p is not None
            pr.update(p.rejected)
        paraphrase = ParaphraseCounts(
            model=first.paraphrase.model,
            paraphrased=sum(p.paraphrased for p in para if p is not None),
            unchanged=sum(p.unchanged for p in para if p is not None),
            rejected=dict(sorted(pr.items())),
        )
    options = {x: v for x, v in first.options.items() if x != "shard"} | {
        "n": n,
        "shards": count,
    }
    manifest = first.model_copy(
        update={
            "options": options,
            "accepted": len(merged),
            "by_kind": dict(sorted(by_kind.items())),
            "by_length": dict(sorted(by_length.items(), key=lambda kv: int(kv[0]))),
            "rejected": dict(sorted(rejected.items())),
            "paraphrase": paraphrase,
        }
    )
    return manifest, merged


def merge_files(paths: Sequence[str | Path]) -> tuple[Manifest, list[Task]]:
    """:func:`merge` of task-set files (each read and checked for its shape)."""
    from graphgen.tasks.taskset import read_taskset

    return merge([(str(p), *read_taskset(p)) for p in paths])
