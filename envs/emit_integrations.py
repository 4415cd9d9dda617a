"""The integration files of a compiled package, one emitter each: ``trl_env.py`` (a class for
TRL's ``environment_factory``, one typed method per tool), ``integrations.py`` (the
Gymnasium, MCP and text adapters bound to the package's ``Environment``), ``__main__.py``
(``python -m <package> mcp``), ``pyproject.toml`` and ``README.md`` (so the folder
pip-installs).

The adapters hold no tool logic: each call goes through the package's ``Environment``
(``reset``/``step``/``grade``). The generic parts are verbatim modules
(:mod:`graphgen.envs.text`, :mod:`graphgen.envs.gymnasium_env`,
:mod:`graphgen.envs.mcp_server`); what is written here binds them to one domain.
"""

from __future__ import annotations

import keyword
import re
import textwrap
from typing import Any

from graphgen.domain import Domain
from graphgen.envs.layout import WIDTH, Lines, import_lines, py_str
from graphgen.envs.naming import AMBIGUOUS_NAMES, CodegenError
from graphgen.envs.schemas import FINISH_NAME, finish_tool, openai_tools

#: Names TRL gives a meaning to (``reset``, ``get_reward``) or that the TRL class defines.
TRL_RESERVED = frozenset({"reset", "get_reward", "env", "task"})
#: The version of every compiled package's distribution before its ``+<domain hash>``.
PACKAGE_VERSION = "1.0.0"


def import_name(domain: Domain) -> str:
    """The import name a compiled package is installed under: ``<domain>_env``.

    >>> from graphgen.domains import load_builtin
    >>> import_name(load_builtin("retail"))
    'retail_env'
    """
    return re.sub(r"\W", "_", domain.name).lower() + "_env"


def gym_id(domain: Domain) -> str:
    """The Gymnasium id a compiled package registers: ``graphgen/<domain>-v0``."""
    return f"graphgen/{domain.name}-v0"


# ============================================================================ trl_env.py


def _py_annotation(schema: dict[str, Any]) -> str:
    """The Python type hint of one parameter schema, as transformers reads it back."""
    if isinstance(schema["type"], list):  # ``T | None``: ["integer", "null"]
        inner = _py_annotation({**schema, "type": schema["type"][0]})
        return f"{inner} | None"
    if "enum" in schema:
        return "Literal[" + ", ".join(py_str(v) for v in schema["enum"]) + "]"
    return {"integer": "int", "boolean": "bool", "string": "str"}[schema["type"]]


def _py_param(name: str, schema: dict[str, Any]) -> str:
    """``name: T``, with ``= default`` for a parameter that may be left out."""
    if "default" in schema:
        return f"{name}: {_py_annotation(schema)} = {schema['default']!r}"
    return f"{name}: {_py_annotation(schema)}"


def _arg_text(name: str, schema: dict[str, Any]) -> str:
    """The description of a parameter in a Google-style ``Args:`` entry (bounds in words,
    since a type hint cannot carry them)."""
    text = schema.get("description") or name.replace("_", " ").capitalize() + "."
    lo, hi = schema.get("minimum"), schema.get("maximum")
    if lo is not None and hi is not None:
        text += f" From {lo} to {hi}."
    elif lo is not None:
        text += f" At least {lo}."
    elif hi is not None:
        text += f" At most {hi}."
    return str(text)


def _method(out: Lines, fn: dict[str, Any], body: str) -> None:
    """One tool method: typed parameters, a Google-style docstring, ``body``."""
    props: dict[str, Any] = fn["parameters"]["properties"]
    # Parameters with a default go last (a Python signature needs it; TRL passes keywords).
    props = dict(sorted(props.items(), key=lambda kv: "default" in kv[1]))
    for p in props:
        if keyword.iskeyword(p) or p == "self":
            raise CodegenError(
                f"tool {fn['name']!r}: parameter {p!r} cannot be a Python parameter name"
            )
    if set(props) & AMBIGUOUS_NAMES:
        # The JSON name is the parameter's name (TRL calls method(**arguments)), so an
        # ambiguous one stays, on its own line with its exemption (RUF100 too: ruff's
        # default rule set does not flag the name, the project's does).
        out.lines.append(f"    def {fn['name']}(")
        out.lines.append("        self,")
        for p, s in props.items():
            noqa = "  # noqa: E741, RUF100" if p in AMBIGUOUS_NAMES else ""
            out.lines.append(f"        {_py_param(p, s)},{noqa}")
        out.lines.append("    ) -> str:")
    else:
        params = "".join(f", {_py_param(p, s)}" for p, s in props.items())
        out(4, f"def {fn['name']}(self{params}) -> str:")
    paras = [fn["description"]]
    if props:
        entries = ["Args:"]
        for p, s in props.items():
            wrapped = textwrap.wrap(
                f"{p}: {_arg_text(p, s)}",
                WIDTH - 8 - 4,
                subsequent_indent="        ",
                break_on_hyphens=False,
            )
            entries.extend("    " + w for w in wrapped)
        paras.append("\n".join(entries))
    paras.append("Returns:\n    The tool's result as JSON text, or an error starting with Error:.")
    out.docstring(8, paras)
    out(8, body)


def trl_source(domain: Domain, header: str) -> str:
    """``trl_env.py``: :class:`TrlEnvironment`, for ``GRPOTrainer(environment_factory=...)``."""
    tools = openai_tools(domain)
    for t in tools:
        if t["function"]["name"] in TRL_RESERVED:
            raise CodegenError(
                f"{domain.source}: tool {t['function']['name']!r} clashes with a name TRL's "
                "environment class uses (reset, get_reward, env, task)"
            )
    uses_literal = any(
        "enum" in s for t in tools for s in t["function"]["parameters"]["properties"].values()
    )
    out = Lines()
    out.docstring(
        0,
        [
            f"The {domain.name} environment for TRL's GRPOTrainer. {header}",
            "``GRPOTrainer(environment_factory=TrlEnvironment, ...)`` makes one instance per "
            "rollout and calls ``reset(**row)`` with the dataset row: its ``task`` column "
            "holds the task as JSON text, other columns are ignored. Every public method but "
            "``reset`` and ``get_reward`` is a tool the model may call; TRL reads each one's "
            "schema from its type hints and Google-style docstring. ``respond`` ends the "
            "episode with the final answer and ``get_reward`` reads the grade (1.0 on "
            "success). Needs nothing but the package: trl is only the caller.",
        ],
    )
    out(0)
    typing_names = ["Any", "Literal"] if uses_literal else ["Any"]
    out.lines += import_lines({"typing": typing_names}, {}, {".env": ["Environment"]})
    out(0)
    out(0, "class TrlEnvironment:")
    out.docstring(
        4,
        [
            f"The {domain.name} tools as methods; each call is one step of the package's "
            "``Environment``."
        ],
    )
    out(0)
    out(4, "def __init__(self) -> None:")
    out(8, "self.env = Environment()")
    out(8, "self.task: Any = None")
    out(0)
    out(4, "def reset(self, **row: Any) -> str:")
    out.docstring(
        8,
        [
            "Start the episode of ``row['task']`` (a task, or its JSON text); returns the "
            "user's instruction, which TRL appends to the prompt."
        ],
    )
    out(8, 'self.task = row.get("task")')
    out(8, "if self.task is None:")
    out(12, 'columns = ", ".join(sorted(row)) or "none"')
    out(12, 'raise ValueError(f"the dataset row has no task column (columns: {columns})")')
    out(8, 'observation, _ = self.env.reset(options={"task": self.task})')
    out(8, "return observation")
    out(0)
    out(4, "def get_reward(self) -> float:")
    out.docstring(8, ["1.0 if the episode's grade is a success, else 0.0 (0.0 before reset)."])
    out(8, "return 0.0 if self.env.db is None else self.env.get_reward()")
    out(0)
    out(4, "def _call(self, name: str, arguments: dict[str, Any]) -> str:")
    out(8, 'observation, *_ = self.env.step({"name": name, "arguments": arguments})')
    out(8, "return observation")
    for t in [*tools, finish_tool()]:
        fn = t["function"]
        out(0)
        args = ", ".join(f"{py_str(p)}: {p}" for p in fn["parameters"]["properties"])
        _method(out, fn, f"return self._call({py_str(fn['name'])}, {{{args}}})")
    return out.text()


# ============================================================================ integrations.py


def integrations_source(domain: Domain, header: str) -> str:
    """``integrations.py``: the adapters bound to this package's ``Environment``."""
    out = Lines()
    out.docstring(
        0,
        [
            f"The {domain.name} environment in trainers' and tool servers' hands. {header}",
            "Each adapter drives the package's ``Environment``; the framework it serves is "
            "imported only when that adapter is used (gymnasium for the Gymnasium "
            "environment, the mcp SDK for the MCP server), so the package imports with "
            "pydantic alone.",
            "\n".join(
                line
                for item in (
                    f"- Gymnasium: ``register_gym()`` registers ``{gym_id(domain)}``; then "
                    f'``gymnasium.make("{gym_id(domain)}", tasks=tasks)``.',
                    "- MCP: ``mcp_server()``, or ``python -m "
                    f"{import_name(domain)} mcp [--http --port P]``.",
                    "- TRL: ``TrlEnvironment`` (``trl_env.py``).",
                    "- Raw model text: ``text_session()``, and ``VerlTool``, ``AgentInstance`` "
                    "and ``SkyRLTextEnv`` for verl, OpenRLHF and SkyRL.",
                )
                for line in textwrap.wrap(item, WIDTH - 3, subsequent_indent="  ")
            ),
        ],
    )
    out(0)
    out.lines += import_lines(
        {"collections.abc": ["Mapping", "Sequence"], "typing": ["TYPE_CHECKING", "Any"]},
        {},
        {
            ".": ["text"],
            ".env": ["Environment"],
            ".schemas": ["DOMAIN", "POLICY", "WRITE_TOOLS"],
            ".text": ["TextSession"],
            ".trl_env": ["TrlEnvironment"],
        },
        plain=["sys"],
    )
    out.lines += [
        "if TYPE_CHECKING:",
        "    from .gymnasium_env import GymEnvironment",
        "",
        f"GYM_ID = {py_str(gym_id(domain))}",
        "",
        "__all__ = [",
        '    "GYM_ID",',
        '    "AgentInstance",',
        '    "SkyRLTextEnv",',
        '    "TrlEnvironment",',
        '    "VerlTool",',
        '    "main",',
        '    "make_gym_env",',
        '    "mcp_server",',
        '    "register_gym",',
        '    "serve_mcp",',
        '    "text_session",',
        '    "verl_tool_config",',
        "]",
    ]
    out(0)
    out(0)
    out(0, "def make_gym_env(tasks: Sequence[Mapping[str, Any]]) -> GymEnvironment:")
    out.docstring(4, ["A ``gymnasium.Env`` over ``tasks`` (needs gymnasium: the ``gym`` extra)."])
    out(4, "from .gymnasium_env import GymEnvironment")
    out(0)
    out(4, "return GymEnvironment(Environment(), tasks)")
    out(0)
    out(0)
    out(0, "def register_gym() -> str:")
    out.docstring(4, ["Register GYM_ID with Gymnasium (idempotent); returns it."])
    out(4, "from .gymnasium_env import register")
    out(0)
    out(4, 'return register(GYM_ID, f"{__name__}:make_gym_env")')
    out(0)
    out(0)
    out(0, "def mcp_server() -> Any:")
    out.docstring(
        4,
        [
            "The MCP server (an ``mcp.server.Server``; needs the mcp SDK: the ``mcp`` "
            "extra), one episode per client session."
        ],
    )
    out(4, "from .mcp_server import build_server")
    out(0)
    out(4, 'return build_server(f"graphgen-{DOMAIN}", Environment, WRITE_TOOLS, POLICY)')
    out(0)
    out(0)
    out(0, "def text_session() -> TextSession:")
    out.docstring(4, ["An episode driven by raw model text (tool calls parsed from it)."])
    out(4, "return TextSession(Environment())")
    out(0)
    out(0)
    out(0, "def verl_tool_config() -> dict[str, Any]:")
    out.docstring(
        4,
        [
            "verl's tool configuration for this package (dump it as YAML for "
            "``actor_rollout_ref.rollout.multi_turn.tool_config_path``)."
        ],
    )
    out(4, 'return text.verl_tool_config(f"{__name__}.VerlTool", Environment.tool_schemas)')
    out(0)
    for cls, what in (
        ("VerlTool", "verl's BaseTool"),
        ("AgentInstance", "OpenRLHF's AgentInstanceBase"),
        ("SkyRLTextEnv", "SkyRL's BaseTextEnv"),
    ):
        out(0)
        out(0, f"class {cls}(text.{cls}):")
        out.docstring(4, [f"{what} shape over this package's ``Environment``."])
        out(0)
        out(4, "environment = Environment")
        out(0)
    out(0)
    out(0, "def serve_mcp(argv: Sequence[str] | None = None) -> int:")
    out.docstring(
        4,
        [
            "Serve the MCP server: ``[--http] [--host H] [--port P]`` (stdio by default); "
            "the ``<package>-mcp`` script."
        ],
    )
    out(4, "from .mcp_server import main as serve")
    out(0)
    out(4, "return serve(mcp_server(), list(sys.argv[1:] if argv is None else argv))")
    out(0)
    out(0)
    out(0, "def main(argv: Sequence[str] | None = None) -> int:")
    out.docstring(4, ["``python -m <package> mcp [--http] [--host H] [--port P]``."])
    out(4, "args = list(sys.argv[1:] if argv is None else argv)")
    out(4, 'if not args or args[0] != "mcp":')
    out(8, 'print("usage: python -m <package> mcp [--http] [--host H] [--port P]")')
    out(8, "return 2")
    out(4, "return serve_mcp(args[1:])")
    return out.text()


def main_source(domain: Domain, header: str) -> str:
    """``__main__.py``: ``python -m <package> mcp`` serves the MCP server."""
    out = Lines()
    out.docstring(0, [f"``python -m {import_name(domain)} mcp``: the MCP server. {header}"])
    out(0)
    out.lines += import_lines({}, {}, {".integrations": ["main"]})
    out(0, "raise SystemExit(main())")
    return out.text()


# ============================================================================ packaging


def pyproject_source(domain: Domain) -> str:
    """``pyproject.toml``: the folder is the package ``<domain>_env``; pydantic is its only
    dependency, each framework an extra."""
    pkg = import_name(domain)
    dist = f"graphgen-env-{domain.name}".replace("_", "-").lower()
    return textwrap.dedent(
        f"""\
        # Generated by graphgen from domain {domain.name!r} (spec {domain.content_hash});
        # do not edit.
        [build-system]
        requires = ["setuptools>=77"]
        build-backend = "setuptools.build_meta"

        [project]
        name = "{dist}"
        version = "{PACKAGE_VERSION}+{domain.content_hash}"
        description = "The {domain.name} tool-use environment compiled by graphgen."
        readme = "README.md"
        requires-python = ">=3.11"
        dependencies = ["pydantic>=2.7"]

        [project.optional-dependencies]
        gym = ["gymnasium>=1.0"]
        mcp = ["mcp>=2.3"]
        trl = ["trl>=1.16"]

        [project.scripts]
        {pkg.replace("_", "-")}-mcp = "{pkg}.integrations:serve_mcp"

        # This folder is the package itself.
        [tool.setuptools]
        packages = ["{pkg}"]
        package-dir = {{"{pkg}" = "."}}

        [tool.setuptools.package-data]
        {pkg} = ["py.typed"]
        """
    )


def readme_source(domain: Domain) -> str:
    """``README.md``: what the package is and how each integration is used."""
    pkg = import_name(domain)
    gid = gym_id(domain)
    summary = textwrap.fill(" ".join(domain.description.split()) or f"The {domain.name} tools.", 88)
    return textwrap.dedent(
        """\
        # {pkg}

        {summary}

        Compiled by graphgen from domain `{name}` (spec `{hash}`); do not edit. It needs
        only pydantic; each integration's framework is an extra.

        ```bash
        pip install ./{pkg}            # or './{pkg}[gym,mcp]'
        ```

        ```python
        from {pkg} import Environment

        env = Environment()
        observation, info = env.reset(options={{"task": task}})  # a graphgen task (dict or JSON)
        observation, reward, terminated, truncated, info = env.step(
            {{"name": "{finish}", "arguments": {{"answer": "..."}}}})
        ```

        - TRL `GRPOTrainer`: `environment_factory={pkg}.TrlEnvironment`, with the task as
          JSON text in a `task` column.
        - Gymnasium: `{pkg}.integrations.register_gym()`, then
          `gymnasium.make("{gid}", tasks=tasks)`.
        - MCP: `python -m {pkg} mcp` (stdio) or `python -m {pkg} mcp --http --port 8000`.
        - Raw model text: `{pkg}.integrations.text_session()` reads `<tool_call>` blocks and
          OpenAI JSON calls; `VerlTool`, `AgentInstance` and `SkyRLTextEnv` in the same module
          have the shapes verl, OpenRLHF and SkyRL call.

        The MCP server lists every tool with its strict JSON schema, plus `reset(task)` and
        `grade(answer)`; read tools carry `readOnlyHint`, writes `destructiveHint`.
        """
    ).format(
        pkg=pkg,
        summary=summary,
        name=domain.name,
        hash=domain.content_hash,
        finish=FINISH_NAME,
        gid=gid,
    ) + _readme_more(domain)


def _md(text: str) -> str:
    """One line of plain text for a Markdown list item."""
    return " ".join(text.split()).replace("|", "\\|")


def _readme_more(domain: Domain) -> str:
    """The README's sections on running tasks, the tools and grading."""
    from graphgen.domains import builtin_names

    pkg = import_name(domain)
    ref = domain.name if domain.name in builtin_names() else f"path/to/{domain.name}.yaml"
    out = [
        "",
        "## Running tasks",
        "",
        "Tasks come from graphgen (each carries its initial state, instruction and goal):",
        "",
        "```bash",
        f"graphgen generate {ref} -n 100 -o tasks.jsonl   # proven solvable",
        f"graphgen eval tasks.jsonl --model oracle          # a baseline in {pkg}",
        "```",
        "",
        "## Tools",
        "",
    ]
    for t in domain.tools.values():
        params = ", ".join(f"{p.name}: {p.ty.show()}" for p in t.params.values())
        kind = "write" if t.is_write else "read"
        desc = _md(t.description) or "(no description)"
        item = f"- `{t.name}({params})` ({kind}): {desc}"
        out.append(
            textwrap.fill(
                item, 88, subsequent_indent="  ", break_long_words=False, break_on_hyphens=False
            )
        )
    out.append(f"- `{FINISH_NAME}(answer: str)`: ends the episode with the answer to the user.")
    out += [
        "",
        "A call that breaks a precondition, names a missing row or passes a bad argument is",
        "an error observation; it changes nothing.",
        "",
        "## Grading",
        "",
        "The reward is 0.0 until the episode ends, then 1.0 if the grade is a success, else",
        "0.0. A success needs every change the task's goal lists (rows created under any new",
        "ids), no other change to the state, and every value the goal's answer lists named in",
        f'the final `{FINISH_NAME}` answer. `info["grade"]` itemises each check. A task\'s',
        "initial state is checked when it is loaded: a value outside its field's bounds or a",
        "repeated unique value is refused there.",
        "",
    ]
    return "\n".join(out)
