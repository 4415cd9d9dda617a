"""A domain's tools as a Model Context Protocol tool list.

The list has the shape of MCP's ``tools/list`` result: ``{"tools": [...]}``, each tool
with ``name``, ``description``, ``inputSchema`` (the strict JSON schema of its
parameters, exactly as the compiled environment offers it to a chat model, descriptions
and bounds included) and ``annotations``: read tools are ``readOnlyHint``, write tools
``destructiveHint`` (they change the state). No tool reaches outside the domain's
database, so ``openWorldHint`` is false. The finishing ``respond`` action belongs to an
episode, not to the domain, and is left out.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from graphgen.domain import Domain
from graphgen.envs.schemas import tool_schema

__all__ = ["export_mcp", "mcp_tools"]


def mcp_tools(domain: Domain) -> dict[str, Any]:
    """The MCP tool list of ``domain``.

    >>> from graphgen.domains import load_builtin
    >>> tools = mcp_tools(load_builtin("mock"))["tools"]
    >>> [(t["name"], t["annotations"]["readOnlyHint"]) for t in tools[:3]]
    [('find_account', True), ('get_account', True), ('deposit', False)]
    """
    out = []
    for tool in domain.tools.values():
        fn = tool_schema(tool, domain.int_keys)["function"]
        write = tool.is_write
        out.append(
            {
                "name": fn["name"],
                "description": fn["description"],
                "inputSchema": fn["parameters"],
                "annotations": {
                    "title": tool.name.replace("_", " "),
                    "readOnlyHint": not write,
                    "destructiveHint": write,
                    "idempotentHint": not write,
                    "openWorldHint": False,
                },
            }
        )
    return {"tools": out}


def export_mcp(domains: Sequence[Domain], output: str | Path) -> list[Path]:
    """Write ``<domain>.mcp.json`` for each domain under ``output``; the files written.

    >>> import tempfile
    >>> from graphgen.domains import load_builtin
    >>> [p.name for p in export_mcp([load_builtin("mock")], Path(tempfile.mkdtemp()))]
    ['mock.mcp.json']
    """
    out = Path(output)
    out.mkdir(parents=True, exist_ok=True)
    files = []
    for d in domains:
        path = out / f"{d.name}.mcp.json"
        path.write_text(json.dumps(mcp_tools(d), indent=2, ensure_ascii=False) + "\n", "utf-8")
        files.append(path)
    return files
