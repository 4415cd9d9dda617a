"""``graphgen new NAME``: a commented starter domain and the test that runs it end to end.

The starter (``graphgen/starter/domain.yaml``) is a small but complete domain — two
entities with a reference, a status enum driving a state machine, a bounded numeric
resource, search, read and write tools with preconditions, intents and a policy — that
passes ``graphgen check --strict``. The test (``graphgen/starter/test_domain.py.tmpl``)
runs check → generate → verify → compile → oracle on it with the library API, so an
author who edits the domain keeps a test that says when the pipeline stops going
through.
"""

from __future__ import annotations

import re
from importlib import resources
from pathlib import Path

from graphgen.errors import GraphgenError
from graphgen.files import check_output_dir, check_output_file, write_atomic

__all__ = ["NAME_RE", "StarterError", "starter_files", "write_starter"]

NAME_RE = re.compile(r"^[a-z][a-z0-9_]{0,39}\Z")
"""A domain name ``new`` accepts: it becomes a file name, a module name and the name of
the compiled package (``NAME_env``)."""

_PLACEHOLDER = "__NAME__"


class StarterError(GraphgenError):
    """A name ``graphgen new`` cannot use."""


def starter_files(name: str) -> dict[str, str]:
    """File name → text of the starter domain ``name`` and its test.

    >>> files = starter_files("demo")
    >>> sorted(files)
    ['demo.yaml', 'test_demo.py']
    >>> files["demo.yaml"].splitlines()[12]
    'name: demo'
    >>> try:
    ...     starter_files("Demo")
    ... except StarterError as exc:
    ...     print(str(exc).split(":")[0])
    'Demo' is not a usable domain name
    """
    if not NAME_RE.match(name):
        raise StarterError(
            f"{name!r} is not a usable domain name: use lowercase letters, digits and _, "
            "starting with a letter (at most 40 characters)"
        )
    base = resources.files("graphgen") / "starter"
    domain = (base / "domain.yaml").read_text(encoding="utf-8")
    test = (base / "test_domain.py.tmpl").read_text(encoding="utf-8")
    return {
        f"{name}.yaml": domain.replace(_PLACEHOLDER, name),
        f"test_{name}.py": test.replace(_PLACEHOLDER, name),
    }


def write_starter(name: str, folder: str | Path = ".", *, force: bool = False) -> list[Path]:
    """Write the starter domain ``name`` and its test into ``folder`` (created if
    missing); the paths written. An existing file is replaced only with ``force``
    (:class:`~graphgen.files.OutputError` otherwise, before anything is written).

    >>> import tempfile
    >>> [p.name for p in write_starter("demo", tempfile.mkdtemp())]
    ['demo.yaml', 'test_demo.py']"""
    files = starter_files(name)
    out = check_output_dir(folder)
    paths = [check_output_file(out / fname, force=force) for fname in files]
    return [write_atomic(p, text) for p, text in zip(paths, files.values(), strict=True)]
