"""Journals of long runs: one JSON line per finished item, on disk as soon as it is done.

``graphgen generate -o FILE`` and ``graphgen verify -o FILE`` write what they finish to
``FILE.partial`` (:func:`journal_path`) while they run, and the final ``FILE`` only at
the end (through :func:`graphgen.files.write_atomic`, then the journal is deleted). A
journal's first line is a header naming what the run was made from (domain hash, seed,
options, input file hash); ``--resume`` reopens the journal only when the new run's
header is the same, so a resumed run finishes exactly as an uninterrupted one would.

Each line is written with one ``write`` call and fsynced before the next item starts,
with SIGINT and SIGTERM held back meanwhile: a stop or a crash loses at most the item
in flight. A last line cut short (a crash of the machine mid-write) is dropped when the
journal is reopened. An open journal is locked (``flock``), so a second run on the same
output is refused instead of interleaving its lines.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from graphgen.files import OutputError, write_atomic

__all__ = ["JOURNAL_SUFFIX", "Journal", "JournalMismatch", "journal_path"]

JOURNAL_SUFFIX = ".partial"


class JournalMismatch(OutputError):
    """A journal was made by another run (other options, domain, input) than this one."""


def _open_locked(path: Path) -> int:
    """Open ``path`` for appending (created if missing) and take its lock: two runs
    writing the same output would interleave their lines."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o666)
    if sys.platform != "win32":
        import fcntl

        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            raise OutputError(
                f"another graphgen run is writing {path}; wait for it to end or stop it"
            ) from None
    return fd


def journal_path(output: str | Path) -> Path:
    """Where the journal of a run writing ``output`` lives: ``output`` + ``.partial``.

    >>> journal_path("out/tasks.jsonl").name
    'tasks.jsonl.partial'
    """
    p = Path(output)
    return p.with_name(p.name + JOURNAL_SUFFIX)


def _whole_lines(raw: bytes) -> tuple[list[dict[str, Any]], int]:
    """The records of the whole, readable lines at the start of ``raw``, and their
    length in bytes (what follows the last newline was cut short)."""
    records: list[dict[str, Any]] = []
    good = 0
    for chunk in raw.split(b"\n")[:-1]:
        try:
            rec = json.loads(chunk)
        except ValueError:
            break
        if not isinstance(rec, dict):
            break
        records.append(rec)
        good += len(chunk) + 1
    return records, good


def _same_header(path: Path, old: Any, header: dict[str, Any]) -> None:
    """Refuse a journal whose header is not ``header``, naming each difference."""
    if old == header:
        return
    was = old if isinstance(old, dict) else {}
    keys = sorted(set(was) | set(header), key=str)
    diff = [
        f"{k}: {was.get(k)!r} there, {header.get(k)!r} now"
        for k in keys
        if was.get(k) != header.get(k)
    ]
    raise JournalMismatch(
        f"cannot resume from {path}: it was made by a different run ("
        + "; ".join(diff)
        + "); run with the same options, or pass --force to start over"
    )


def _line(record: dict[str, Any]) -> bytes:
    return (
        json.dumps(record, sort_keys=True, ensure_ascii=False, separators=(",", ":")) + "\n"
    ).encode("utf-8")


@contextlib.contextmanager
def _signals_held() -> Iterator[None]:
    """SIGINT and SIGTERM wait until the block is over (where the platform allows)."""
    if not hasattr(signal, "pthread_sigmask"):
        yield
        return
    held = {signal.SIGINT, signal.SIGTERM}
    before = signal.pthread_sigmask(signal.SIG_BLOCK, held)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, before)


class Journal:
    """An open journal file: :meth:`create` a new one or :meth:`resume` an old one, then
    :meth:`append` one record per finished item and :meth:`finish` with the final file.

    >>> import tempfile
    >>> out = Path(tempfile.mkdtemp()) / "r.jsonl"
    >>> j = Journal.create(journal_path(out), {"seed": 1})
    >>> j.append({"item": 0})
    >>> j.close()
    >>> j, done = Journal.resume(journal_path(out), {"seed": 1})
    >>> done
    [{'item': 0}]
    >>> j.finish(out, "final\\n")
    >>> out.read_text(), journal_path(out).exists()
    ('final\\n', False)
    """

    def __init__(self, path: Path, fd: int) -> None:
        self.path = path
        self._fd: int | None = fd

    @classmethod
    def create(cls, path: str | Path, header: dict[str, Any]) -> Journal:
        """Start a new journal at ``path`` (an old one there is replaced)."""
        p = Path(path)
        p.parent.mkdir(parents=True, exist_ok=True)
        fd = _open_locked(p)
        os.ftruncate(fd, 0)
        journal = cls(p, fd)
        journal.append({"journal": header})
        return journal

    @classmethod
    def resume(
        cls, path: str | Path, header: dict[str, Any]
    ) -> tuple[Journal, list[dict[str, Any]]]:
        """Reopen the journal at ``path`` for appending; its records after the header.

        Raises :class:`JournalMismatch` if its header differs from ``header`` (naming
        each differing entry) or it is not a journal. A cut-short last line is dropped.
        """
        p = Path(path)
        fd = _open_locked(p)
        try:
            raw = p.read_bytes()
            records, good = _whole_lines(raw)
            if not records or "journal" not in records[0]:
                raise JournalMismatch(
                    f"{p} is not a graphgen journal; delete it or pass --force to start over"
                )
            _same_header(p, records[0]["journal"], header)
            if good < len(raw):
                os.ftruncate(fd, good)
        except BaseException:
            os.close(fd)
            raise
        return cls(p, fd), records[1:]

    def append(self, record: dict[str, Any]) -> None:
        """Add one record as one line, on disk before this returns."""
        if self._fd is None:
            raise ValueError(f"journal {self.path} is closed")
        data = _line(record)
        with _signals_held():
            view = memoryview(data)
            while view:
                view = view[os.write(self._fd, view) :]
            os.fsync(self._fd)

    def close(self) -> None:
        """Close the file; the journal stays for a later resume."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def finish(self, output: str | Path, text: str | bytes) -> None:
        """Write the final ``output`` (atomically), then delete the journal."""
        with _signals_held():
            write_atomic(output, text)
            self.path.unlink(missing_ok=True)  # while still holding its lock
            self.close()
