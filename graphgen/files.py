"""Output files that are never left half-written, and output paths checked before work.

Every file graphgen writes (task sets, reports, graph exports, compiled packages, play
sessions) goes through :func:`write_atomic` or :func:`atomic_path`: the bytes go to a
temporary name in the same folder, are flushed to disk, and the temporary file is then
renamed over the target. A rename within one folder is atomic on POSIX and Windows, so
a reader (or a later run) sees either the old file whole or the new one whole: a full
disk, a size limit, a crash or a kill during the write leaves the previous file as it
was. Whole folders (compiled packages) are built beside the target and swapped in with
:func:`replace_dir`.

:func:`check_output_file` and :func:`check_output_dir` run before any work starts, so a
bad ``-o`` costs nothing: the target is not a folder where a file is expected (or the
reverse), its folder exists or can be made and is writable, and an existing file is
replaced only when the caller says ``force``.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

from graphgen.errors import GraphgenError

__all__ = [
    "OutputError",
    "atomic_path",
    "check_output_dir",
    "check_output_file",
    "replace_dir",
    "write_atomic",
]


class OutputError(GraphgenError):
    """An output path cannot be used as asked (exists without ``force``, is a folder, is
    not writable). Raised before any work is done; the command line exits 2."""


def _fsync_dir(folder: Path) -> None:
    """Make a rename in ``folder`` durable (a no-op where folders cannot be opened)."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


@contextlib.contextmanager
def atomic_path(path: str | Path) -> Iterator[Path]:
    """A temporary path beside ``path`` to write to; renamed onto ``path`` when the block
    ends normally, deleted when it raises (``path`` is then untouched).

    For writers that want a file name rather than bytes (matplotlib's ``savefig``; the
    temporary name ends in ``.tmp``, so give such writers the format explicitly).

    >>> import tempfile
    >>> d = Path(tempfile.mkdtemp())
    >>> with atomic_path(d / "a.txt") as tmp:
    ...     _ = tmp.write_text("new")
    >>> (d / "a.txt").read_text(), sorted(p.name for p in d.iterdir())
    ('new', ['a.txt'])
    """
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    os.close(fd)
    tmp = Path(name)
    try:
        yield tmp
        with tmp.open("rb+") as fh:  # the writer may not have synced its bytes
            os.fsync(fh.fileno())
        if target.exists():  # keep the mode of the file being replaced
            shutil.copymode(target, tmp)
        else:
            os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    _fsync_dir(target.parent)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_atomic(path: str | Path, data: str | bytes) -> Path:
    """Write ``data`` (text is UTF-8) to ``path`` through a temporary file and a rename;
    on any failure the previous file at ``path`` is left exactly as it was.

    >>> import tempfile
    >>> p = Path(tempfile.mkdtemp()) / "sub" / "f.txt"
    >>> write_atomic(p, "é\\n") == p, p.read_bytes()
    (True, b'\\xc3\\xa9\\n')
    """
    raw = data.encode("utf-8") if isinstance(data, str) else data
    with atomic_path(path) as tmp, tmp.open("wb") as fh:
        fh.write(raw)
    return Path(path)


def _writable_folder(folder: Path, what: Path) -> None:
    """``folder`` exists or can be made, and files can be created in it."""
    probe = folder
    while not probe.exists():
        if probe.parent == probe:
            break
        probe = probe.parent
    if not probe.is_dir():
        raise OutputError(f"cannot write {what}: {probe} is a file, not a folder")
    if not os.access(probe, os.W_OK | os.X_OK):
        raise OutputError(f"cannot write {what}: no permission to write in {probe}")


def check_output_file(path: str | Path, *, force: bool = False) -> Path:
    """Check that ``path`` can take a new file before the work that makes it starts.

    Refuses (:class:`OutputError`) a folder, a folder that cannot be made or written, and
    an existing file unless ``force``.

    >>> import tempfile
    >>> d = Path(tempfile.mkdtemp())
    >>> check_output_file(d / "new.jsonl") == d / "new.jsonl"
    True
    >>> try:
    ...     check_output_file(d)
    ... except OutputError as exc:
    ...     print(str(exc).split(": ")[1])
    it is a folder; give a file name
    """
    p = Path(path)
    if p.is_dir():
        raise OutputError(f"cannot write {p}: it is a folder; give a file name")
    if p.exists() or p.is_symlink():
        if not force:
            raise OutputError(f"{p} already exists; pass --force to overwrite it")
        if not p.is_file():
            raise OutputError(f"cannot write {p}: it is not a regular file")
    _writable_folder(p.parent, p)
    return p


def check_output_dir(path: str | Path) -> Path:
    """Check that ``path`` is a folder or can be made one, in a writable place (what is
    inside it is the caller's business: see :func:`replace_dir`)."""
    p = Path(path)
    if p.exists() and not p.is_dir():
        raise OutputError(f"cannot write into {p}: it is a file, not a folder")
    _writable_folder(p if p.exists() else p.parent, p)
    if p.exists() and not os.access(p, os.W_OK | os.X_OK):
        raise OutputError(f"cannot write into {p}: no permission")
    return p


def replace_dir(target: str | Path, files: dict[str, bytes]) -> list[Path]:
    """Make ``target`` a folder holding exactly ``files`` ({relative name: bytes}).

    The new folder is built beside ``target`` under a temporary name, then renamed into
    place; an old ``target`` is first renamed aside and deleted after the swap. A failure
    while building leaves the old folder untouched. Between the two renames (two system
    calls) ``target`` is briefly missing; a crash exactly there leaves the old folder
    under a ``.<name>.old-*`` name beside it. The caller decides beforehand whether the
    old contents may go (:func:`check_output_dir` checks only the path).
    """
    dest = Path(target)
    dest.parent.mkdir(parents=True, exist_ok=True)
    new = Path(tempfile.mkdtemp(dir=dest.parent, prefix=f".{dest.name}.new-"))
    old: Path | None = None
    try:
        for rel, raw in files.items():
            write_atomic(new / rel, raw)
        os.chmod(new, 0o777 & ~_umask())  # mkdtemp makes it private; a package is not
        if dest.exists():
            old = Path(tempfile.mkdtemp(dir=dest.parent, prefix=f".{dest.name}.old-"))
            os.replace(dest, old / "x")
        try:
            os.replace(new, dest)
        except BaseException:
            if old is not None:  # put the old folder back
                os.replace(old / "x", dest)
            raise
    except BaseException:
        shutil.rmtree(new, ignore_errors=True)
        if old is not None and not (old / "x").exists():
            shutil.rmtree(old, ignore_errors=True)
        raise
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)
    _fsync_dir(dest.parent)
    return [dest / rel for rel in files]
