"""The bytes of a task-set file: the plain layout, the compact layout and gzip.

A task carries the whole initial state its chain runs on, and most of a plain file is
those states: tasks generated from one seed share a few dozen states between hundreds
of tasks. The *compact* layout writes each distinct state once, on a line of its own
before the first task that uses it, and the task names it by content hash::

    {"manifest": {...}}
    {"state": {"id": "<sha256 of the state's canonical JSON>", "data": {...}}}
    {"id": "retail-0-00001", ..., "initial_state": {"$state": "<sha256>"}}

Readers accept both layouts (a file may even mix them) and hand out tasks with their
states expanded, so nothing downstream sees the difference. A file whose name ends in
``.gz`` is gzip-compressed, with a zero timestamp and no file name in the header so the
same tasks give the same bytes; readers recognise gzip by its magic bytes, whatever the
name. A state line whose id is not the hash of its data, a reference to a state no
earlier line defines and a file that expands past :data:`MAX_EXPANDED_BYTES` are errors.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import zlib
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from graphgen.tasks.model import Manifest, Task

STATE_REF = "$state"
# A gzip file is expanded in memory before it is read; this bounds a hostile one (a few
# KB of gzip can expand to gigabytes).
MAX_EXPANDED_BYTES = 1024 * 1024 * 1024
_GZIP_MAGIC = b"\x1f\x8b"


def dumps(obj: Any) -> str:
    """Canonical JSON: sorted keys, no spaces, UTF-8 text (same value, same bytes)."""
    return json.dumps(obj, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def state_id(state: dict[str, Any]) -> str:
    """The content hash that names a state in the compact layout.

    >>> state_id({"tables": {}, "counters": {}}) == state_id({"counters": {}, "tables": {}})
    True
    """
    return hashlib.sha256(dumps(state).encode("utf-8")).hexdigest()


def taskset_lines(manifest: Manifest, tasks: Sequence[Task], *, compact: bool) -> list[str]:
    """The lines of a task-set file (without newlines), plain or compact."""
    # Sets made without a paraphrase model keep the manifest they always had.
    skip = {"paraphrase"} if manifest.paraphrase is None else set()
    # Likewise sets of built-in domains record no domain file.
    if manifest.domain_file is None:
        skip.add("domain_file")
    lines = [dumps({"manifest": manifest.model_dump(mode="json", exclude=skip or None)})]
    written: set[str] = set()
    for t in tasks:
        body = t.model_dump(mode="json")
        if compact:
            sid = state_id(body["initial_state"])
            if sid not in written:
                written.add(sid)
                lines.append(dumps({"state": {"id": sid, "data": body["initial_state"]}}))
            body["initial_state"] = {STATE_REF: sid}
        lines.append(dumps(body))
    return lines


def encode(text: str, path: str | Path | None) -> bytes:
    """The bytes written for ``text`` at ``path``: gzip when the name ends in ``.gz``.

    >>> encode("x\\n", "a.jsonl.gz") == encode("x\\n", "b.jsonl.gz")  # no name, no time
    True
    >>> decode(encode("x\\n", "a.jsonl.gz"), "a.jsonl.gz")
    b'x\\n'
    """
    raw = text.encode("utf-8")
    if path is not None and str(path).endswith(".gz"):
        return gzip.compress(raw, mtime=0)
    return raw


class FormatError(ValueError):
    """The bytes of a file cannot be read as a task set (bad gzip, too large)."""


def decode(data: bytes, source: str) -> bytes:
    """The plain bytes of a file: gunzipped when it is gzip, bounded in size."""
    if not data.startswith(_GZIP_MAGIC):
        return data
    out = zlib.decompressobj(wbits=31)  # 31: a gzip header and trailer
    try:
        raw = out.decompress(data, MAX_EXPANDED_BYTES)
        if out.unconsumed_tail:
            raise FormatError(
                f"{source}: expands past {MAX_EXPANDED_BYTES} bytes; not read (a task set "
                "that large should be split with --shard)"
            )
        if not out.eof:
            raise FormatError(f"{source}: the gzip data is cut short")
    except zlib.error as exc:
        raise FormatError(f"{source}: not valid gzip data: {exc}") from None
    return raw


class StateTable:
    """The states a compact file has defined so far, and the expansion of references."""

    def __init__(self) -> None:
        self._states: dict[str, dict[str, Any]] = {}

    def define(self, obj: Any) -> str | None:
        """Record the state line ``obj``; a reason when it is malformed, else None."""
        entry = obj.get("state") if isinstance(obj, dict) else None
        if not isinstance(entry, dict) or set(entry) != {"id", "data"}:
            return 'a state line is {"state": {"id": ..., "data": {...}}}'
        sid, data = entry["id"], entry["data"]
        if not isinstance(sid, str) or not isinstance(data, dict):
            return "a state line's id is a string and its data an object"
        if state_id(data) != sid:
            return f"state {sid[:12]}… does not match its data (the id is the data's hash)"
        self._states[sid] = data
        return None

    def expand(self, obj: Any) -> str | None:
        """Replace a task's state reference by the state; a reason when it cannot."""
        if not isinstance(obj, dict):
            return None
        st = obj.get("initial_state")
        if not (isinstance(st, dict) and set(st) == {STATE_REF}):
            return None
        sid = st[STATE_REF]
        data = self._states.get(sid) if isinstance(sid, str) else None
        if data is None:
            return f"initial_state refers to state {str(sid)[:12]}…, which no earlier line defines"
        obj["initial_state"] = data
        return None


def is_state_line(obj: Any) -> bool:
    """Whether a decoded line is a state line of the compact layout."""
    return isinstance(obj, dict) and set(obj) == {"state"}


def distinct_states(tasks: Iterable[Task]) -> int:
    """How many distinct initial states ``tasks`` hold (what a compact file writes once)."""
    return len({state_id(t.model_dump(mode="json")["initial_state"]) for t in tasks})
