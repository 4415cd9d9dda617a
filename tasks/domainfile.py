"""Which domain file a task set was made from, and finding it again.

A task set of a built-in domain names the domain; any other domain lives in a file the
user wrote, so the manifest also records that file (:class:`~graphgen.tasks.model.
DomainFile`): its path relative to the task-set file's folder (the same bytes wherever
the two are copied together) and the sha256 of its bytes. Every later step (verify,
eval, coverage, export, play) finds the domain through it, and says ``--domain`` when it
cannot: the file is gone, or it no longer defines the domain the tasks were made for.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from graphgen.domain import Domain
from graphgen.domains import builtin_names, builtin_path
from graphgen.errors import GraphgenError
from graphgen.tasks.model import DomainFile, Manifest


class DomainFileError(GraphgenError, LookupError):
    """The domain of a task set cannot be found, or its file changed."""


def is_builtin(domain: Domain) -> bool:
    """Whether ``domain`` was loaded from the shipped file of a built-in domain."""
    if domain.name not in builtin_names():
        return False
    try:
        return Path(domain.source).resolve() == builtin_path(domain.name).resolve()
    except OSError:
        return False


def file_sha256(path: Path) -> str:
    """The sha256 of a file's bytes, as hex."""
    return hashlib.sha256(path.read_bytes()).hexdigest()


def domain_file_record(domain: Domain, tasks_file: str | Path) -> DomainFile | None:
    """What a task set written to ``tasks_file`` records of its domain's file: None for a
    built-in domain or one not read from a file (built in Python)."""
    if is_builtin(domain):
        return None
    src = Path(domain.source)
    if not src.is_file():
        return None
    folder = Path(tasks_file).resolve().parent
    try:
        rel = os.path.relpath(src.resolve(), folder)
    except ValueError:  # another drive (Windows): only an absolute path can say where
        rel = str(src.resolve())
    return DomainFile(path=Path(rel).as_posix(), sha256=file_sha256(src))


def with_domain_file(manifest: Manifest, domain: Domain, tasks_file: str | Path) -> Manifest:
    """``manifest`` recording the file of ``domain`` (unchanged for a built-in)."""
    rec = domain_file_record(domain, tasks_file)
    if rec is None:
        return manifest
    return manifest.model_copy(update={"domain_file": rec})


def manifest_domain(manifest: Manifest, tasks_file: str | Path) -> Domain:
    """The domain a task set was made for, found through its manifest alone: the
    built-in of that name, or the domain file the manifest records.

    Raises :class:`DomainFileError` naming ``--domain`` when the recorded file is gone
    or now defines another domain (its spec hash is not the manifest's); a file whose
    bytes changed but whose spec did not (a comment, the layout) is still the domain.
    """
    from graphgen.load import load_domain

    rec = manifest.domain_file
    if rec is None:
        if manifest.domain in builtin_names():
            from graphgen.domains import load_builtin

            return load_builtin(manifest.domain)
        raise DomainFileError(
            f"{tasks_file}: the task set is of domain {manifest.domain!r}, which is not "
            "built in, and its manifest records no domain file; pass the domain file "
            "with --domain FILE"
        )
    path = Path(rec.path)
    if path.suffix not in (".yaml", ".yml"):
        # the manifest is untrusted text: never load (and quote errors from) a file that
        # is not a domain file by its name
        raise DomainFileError(
            f"{tasks_file}: the manifest's domain file {rec.path!r} is not a .yaml or .yml "
            "file; pass the domain file with --domain FILE"
        )
    if not path.is_absolute():
        path = Path(os.path.normpath(Path(tasks_file).resolve().parent / path))
    if not path.is_file():
        raise DomainFileError(
            f"{tasks_file}: the task set was made from the domain file {rec.path} "
            f"(looked for at {path}), which is not there any more; pass the domain file "
            "with --domain FILE"
        )
    domain = load_domain(path)
    if file_sha256(path) != rec.sha256 and domain.content_hash != manifest.domain_hash:
        raise DomainFileError(
            f"{tasks_file}: the domain file {path} changed since the task set was made "
            f"(domain hash {domain.content_hash}, the task set's is {manifest.domain_hash}); "
            "pass the domain file the tasks were made from with --domain FILE"
        )
    return domain
