"""Error types shared by every stage.

Two families matter to users:

* :class:`DomainError` — the domain file is wrong. It always says which file, which
  tool (or entity), which expression and which column, so a domain author can fix it
  without reading our code.
* :class:`ToolError` — a tool call failed at run time (precondition, missing entity,
  bound violated). Its ``message`` is written for an LLM agent: plain words (a failed
  precondition's ``message:`` with its placeholders filled), never the rule language, a
  Python traceback or values read from rows the agent did not name; its ``detail`` keeps
  the located developer view (the condition's source and the cells it read).
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Located:
    """One located problem in a domain file."""

    message: str
    file: str = "<domain>"
    where: str = ""  # e.g. "tool 'cancel_order', requires[0]"
    expr: str = ""  # the expression text at fault, if any
    col: int | None = None  # 1-based column inside ``expr`` (on its line ``expr_line``)
    line: int | None = None  # 1-based line of the offending node in the file
    column: int | None = None  # 1-based column of that node (of the culprit itself)
    expr_line: int = 1  # 1-based line inside a multi-line ``expr`` that ``col`` is on

    def __str__(self) -> str:
        parts = [self.file if self.line is None else f"{self.file}:{self.line}:{self.column}"]
        if self.where:
            parts.append(self.where)
        head = ": ".join(parts)
        if self.expr:
            caret = ""
            if self.col is not None:
                on = f"line {self.expr_line}, " if self.expr_line > 1 else ""
                caret = f" ({on}col {self.col})"
            shown = self.expr.strip().replace("\n", "\n        ")  # under the first line
            return f"{head}: {self.message}\n    in: {shown}{caret}"
        return f"{head}: {self.message}"


class GraphgenError(Exception):
    """Base class of all errors raised on purpose by graphgen."""


@dataclass
class DomainError(GraphgenError):
    """A domain file (or in-memory spec) failed to load or type-check.

    ``problems`` holds every located problem found, so one run reports all of them.
    """

    problems: list[Located] = field(default_factory=list)

    def __str__(self) -> str:
        n = len(self.problems)
        head = f"{n} problem{'s' if n != 1 else ''} in domain"
        return head + ":\n" + "\n".join(f"  - {p}" for p in self.problems)


class ExprError(GraphgenError):
    """An expression could not be parsed or typed.

    Carries the 1-based column of the culprit and the 1-based line it is on inside the
    expression text (an expression written over several lines of a YAML block).
    """

    def __init__(self, message: str, col: int | None = None, line: int = 1) -> None:
        super().__init__(message)
        self.message = message
        self.col = col
        self.line = line


class StateGenError(GraphgenError):
    """A state cannot be generated for this domain (e.g. a required ref has no target)."""


#: What the agent reads when a failed precondition has no ``message:`` of its own (the
#: compiled environments' runtime carries the same words).
NO_MESSAGE = "the request is not possible in the current state"


class ToolError(GraphgenError):
    """A tool call was rejected: precondition failed, unknown entity, bad argument.

    ``message`` is the tool's observation for the agent; ``detail`` (empty unless a
    precondition failed) is for developers: ``requires <condition>; <Entity 'id' has
    field = value>; ...``. :meth:`located` joins the two.
    """

    def __init__(
        self, message: str, *, tool: str = "", kind: str = "precondition", detail: str = ""
    ) -> None:
        super().__init__(message)
        self.message = message
        self.tool = tool
        self.kind = kind
        self.detail = detail

    def __str__(self) -> str:
        return self.message

    def located(self) -> str:
        """The message with the developer detail in parentheses (for logs and gate reasons)."""
        return f"{self.message} ({self.detail})" if self.detail else self.message
