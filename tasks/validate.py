"""Validate task-set files line by line, and each task against its domain.

A task file is untrusted input: it may be hand-edited, truncated, made for another
domain or written to break the reader. Every check here turns a bad line into one
:class:`TaskProblem` naming the file, the line, the task id and the field at fault, so a
reader never meets a traceback and one bad task does not hide the good ones.

The checks, one function each, in the order they run on a line:

* :func:`decode_line` — size, UTF-8, JSON without ``NaN``/``Infinity``, nesting depth,
  no lone surrogate in any string;
* :func:`schema_problem` — the shape of a task (pydantic, strict types, no extra key);
* :func:`identity_problem` — the id's length and characters, the task's domain;
* :func:`kind_problem` — the fields each kind must (not) carry;
* :func:`state_problem` — the initial state against the domain's tables and fields (the
  state generator's own :func:`~graphgen.stategen.check_state`);
* :func:`calls_problem`, :func:`givens_problem`, :func:`goal_problem`,
  :func:`targets_problem` — tools, arguments, sorts, changes and targets typed by the
  domain (the interpreter's own :func:`~graphgen.interp.check_value`);

and across lines :func:`duplicate_problem` (ids, and tasks equal but for their id).
Whether a task is *solvable* is not checked here: ``graphgen verify`` proves that.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from graphgen.domain import Domain, domain_enums
from graphgen.errors import GraphgenError
from graphgen.interp import argument_problem, check_value
from graphgen.keys import key_problem
from graphgen.knowledge import parse_sort
from graphgen.state import State, StateModel
from graphgen.stategen import check_state
from graphgen.suggest import did_you_mean
from graphgen.tasks.fileformat import FormatError, StateTable, decode, is_state_line
from graphgen.tasks.model import Call, Manifest, Task
from graphgen.types import free_type

#: The longest task line read, in bytes (a large retail task is about 40 KB).
MAX_LINE_BYTES = 16 * 1024 * 1024
#: The deepest nesting of JSON arrays and objects in one line (real tasks reach 6).
MAX_DEPTH = 32
#: The longest task id, in characters.
MAX_ID_CHARS = 200


@dataclass(frozen=True)
class TaskProblem:
    """One bad line of a task file: where it is and what is wrong, in plain words."""

    file: str
    line: int
    task_id: str
    path: str
    message: str

    def __str__(self) -> str:
        who = f"task {self.task_id!r}: " if self.task_id else ""
        where = f"{self.path}: " if self.path else ""
        return f"{self.file}:{self.line}: {who}{where}{self.message}"


class TaskSetError(GraphgenError, ValueError):
    """A task-set file is malformed; each problem names the file, line, task and field."""

    def __init__(self, problems: list[TaskProblem] | str) -> None:
        self.problems: list[TaskProblem] = [] if isinstance(problems, str) else problems
        self.text = problems if isinstance(problems, str) else ""
        super().__init__(str(self))

    def __str__(self) -> str:
        if self.text:
            return self.text
        shown = [str(p) for p in self.problems[:20]]
        more = len(self.problems) - len(shown)
        return "\n".join(shown + ([f"... and {more} more bad lines"] if more > 0 else []))


class _Bad(Exception):
    """A check failed: the field path and the message (caught per line)."""

    def __init__(self, path: str, message: str) -> None:
        super().__init__(message)
        self.path = path
        self.message = message


@dataclass
class TaskFile:
    """What a task file holds: its manifest, the tasks that passed, the bad lines."""

    manifest: Manifest
    tasks: list[Task] = field(default_factory=list)
    lines: list[int] = field(default_factory=list)
    """The line of each task in ``tasks``."""
    problems: list[TaskProblem] = field(default_factory=list)


# ------------------------------------------------------------------ one line


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a number JSON allows")


def _depth_and_strings(obj: Any) -> Iterator[tuple[int, Any]]:
    """Every value of ``obj`` with its depth, without recursion (the depth is untrusted)."""
    stack: list[tuple[int, Any]] = [(1, obj)]
    while stack:
        depth, x = stack.pop()
        yield depth, x
        if isinstance(x, dict):
            stack.extend((depth + 1, k) for k in x)
            stack.extend((depth + 1, v) for v in x.values())
        elif isinstance(x, list):
            stack.extend((depth + 1, v) for v in x)


def decode_line(raw: bytes) -> Any:
    """The JSON value of one line, or :class:`_Bad` saying why it cannot be read."""
    if len(raw) > MAX_LINE_BYTES:
        raise _Bad("", f"line longer than {MAX_LINE_BYTES} bytes")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _Bad("", f"invalid UTF-8 at byte {exc.start}") from None
    try:
        obj = json.loads(text, parse_constant=_no_constant)
    except RecursionError:
        raise _Bad("", f"JSON nested deeper than {MAX_DEPTH} levels") from None
    except ValueError as exc:  # JSONDecodeError, NaN/Infinity, integers past 4300 digits
        raise _Bad("", f"not valid JSON: {exc}") from None
    for depth, x in _depth_and_strings(obj):
        if depth > MAX_DEPTH:
            raise _Bad("", f"JSON nested deeper than {MAX_DEPTH} levels")
        if isinstance(x, str) and not _encodable(x):
            raise _Bad("", f"text {x[:40]!r} holds a lone surrogate (not Unicode text)")
        if isinstance(x, float) and not math.isfinite(x):  # 1e999 parses as inf
            raise _Bad("", f"number {x} is not finite")
    return obj


def _encodable(s: str) -> bool:
    try:
        s.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _path(loc: Iterable[int | str]) -> str:
    out = ""
    for x in loc:
        out += f"[{x}]" if isinstance(x, int) else (f".{x}" if out else str(x))
    return out


M = TypeVar("M", bound=BaseModel)


def _validated(model: type[M], obj: Any, prefix: str = "") -> M:
    try:
        # Strict: a task file is read as written, "3" is not the number 3.
        return model.model_validate(obj, strict=True)
    except ValidationError as exc:
        first = exc.errors()[0]
        loc = _path([*([prefix] if prefix else []), *first["loc"]])
        raise _Bad(loc, first["msg"].lower()) from None


def schema_problem(obj: Any) -> Task:
    """The task a line's JSON value holds, or :class:`_Bad` at the first field at fault."""
    if not isinstance(obj, dict):
        raise _Bad("", "a task line is a JSON object")
    return _validated(Task, obj)


# ------------------------------------------------------------------ against the domain


def identity_problem(task: Task, domain: Domain) -> None:
    """The id is short printable text; the task belongs to ``domain``."""
    if not task.id or len(task.id) > MAX_ID_CHARS:
        raise _Bad("id", f"an id has 1 to {MAX_ID_CHARS} characters")
    if not task.id.isprintable():
        raise _Bad("id", "an id holds no control characters")
    if task.domain != domain.name:
        raise _Bad("domain", f"a task of domain {task.domain!r}, not {domain.name!r}")


def kind_problem(task: Task) -> None:
    """Each kind carries its own fields: only a refusal has a ``refused_call``."""
    if task.kind == "refusal" and task.refused_call is None:
        raise _Bad("refused_call", "a refusal task needs the call it refuses")
    if task.kind != "refusal" and task.refused_call is not None:
        raise _Bad("refused_call", f"an {task.kind} task carries no refused call")
    if task.kind == "action" and not task.goal.changes:
        raise _Bad("goal.changes", "an action task changes the state")
    if task.kind != "action" and task.goal.changes:
        raise _Bad("goal.changes", f"an {task.kind} task changes nothing")
    if task.kind == "action" and not task.chain:
        raise _Bad("chain", "an action task has a reference chain")
    if task.min_calls < 0 or task.difficulty < 0:
        raise _Bad("min_calls", "call counts are not negative")


def state_problem(task: Task, domain: Domain) -> State:
    """The initial state has exactly the domain's tables, counters and fields, each
    value of its field's type, every reference to an existing row."""
    _validated(StateModel, task.initial_state, "initial_state")  # strictly: "7" is no counter
    try:  # the domain says which tables have int ids ("3" is id 3 there)
        st = State.from_dict(task.initial_state, domain)
    except ValueError as exc:
        raise _Bad("initial_state.tables", str(exc).splitlines()[0]) from None
    if set(st.counters) != set(domain.entities):
        raise _Bad(
            "initial_state.counters",
            f"counters for {sorted(st.counters)}, the domain's tables are "
            f"{sorted(domain.entities)}",
        )
    problems = check_state(domain, st)
    if problems:
        raise _Bad("initial_state", problems[0])
    return st


def _call_problem(call: Call, domain: Domain, path: str) -> None:
    tool = domain.tools.get(call.tool)
    if tool is None:
        near = did_you_mean(call.tool, domain.tools)
        raise _Bad(f"{path}.tool", f"{call.tool!r} is not a tool of {domain.name!r}{near}")
    why = argument_problem(tool, call.args, int_keys=domain.int_keys)
    if why is not None:
        raise _Bad(f"{path}.args", why[1])


def calls_problem(task: Task, domain: Domain) -> None:
    """Every call names a tool of the domain with well-typed arguments."""
    for i, call in enumerate(task.chain):
        _call_problem(call, domain, f"chain[{i}]")
    if task.refused_call is not None:
        _call_problem(task.refused_call, domain, "refused_call")
    unknown = sorted(set(task.tools_used) - set(domain.tools))
    if unknown:
        raise _Bad("tools_used", f"not tools of {domain.name!r}: {', '.join(unknown)}")


def _sort_type_problem(sort: str, value: Any, domain: Domain) -> str | None:
    s = parse_sort(sort)
    if s.kind == "key":
        edef = domain.entities.get(s.name)
        return None if edef is not None and key_problem(edef, value) is None else "an id"
    if s.kind == "field":
        ent, _, fname = s.name.partition(".")
        edef = domain.entities.get(ent)
        if edef is None or edef.field_type(fname) is None:
            return f"a field of the domain (no field {s.name!r})"
        if fname == edef.key:
            return None if key_problem(edef, value) is None else "an id"
        return check_value(edef.fields[fname].ty, value, domain.int_keys)
    if s.kind == "enum":
        enum = domain_enums(domain).get(s.name)
        if enum is None:
            return f"an enum of the domain (no enum {s.name!r})"
        return check_value(enum, value)
    free = free_type(s.name) if s.kind == "free" else None
    if free is not None:
        return check_value(free, value)
    return f"a sort key:, field:, enum: or free: of the domain, not {sort!r}"


def givens_problem(task: Task, domain: Domain) -> None:
    """Every given is at a sort of the domain and has that sort's type."""
    for i, g in enumerate(task.givens):
        why = _sort_type_problem(g.sort, g.value, domain)
        if why is not None:
            raise _Bad(f"givens[{i}]", f"{g.sort} value {g.value!r} must be {why}")


def goal_problem(task: Task, domain: Domain, st: State) -> None:
    """Every change names a table, an id of its key type, a field and values of the
    field's type; a change to an existing row names a row of the initial state."""
    for i, c in enumerate(task.goal.changes):
        path = f"goal.changes[{i}]"
        edef = domain.entities.get(c.entity)
        if edef is None:
            raise _Bad(f"{path}.entity", f"{c.entity!r} is not a table of {domain.name!r}")
        # a created row is in no state to look its id up in: its type is checked here
        why = key_problem(edef, c.key)
        if why is not None:
            raise _Bad(f"{path}.key", why)
        if c.field == "*":
            for side, row in (("before", c.before), ("after", c.after)):
                if row is None:
                    continue
                if not isinstance(row, dict) or set(row) != set(edef.fields):
                    raise _Bad(f"{path}.{side}", f"a whole {c.entity} row with its fields")
                for fname, v in row.items():
                    why = check_value(edef.fields[fname].ty, v, domain.int_keys)
                    if why:
                        raise _Bad(f"{path}.{side}.{fname}", f"{v!r} must be {why}")
            if c.before is None and c.after is None:
                raise _Bad(path, "a row change creates or deletes a row")
            if c.before is not None and c.key not in st.tables[c.entity]:
                raise _Bad(f"{path}.key", f"no {c.entity} {c.key!r} in the initial state")
            continue
        f = edef.fields.get(c.field)
        if f is None:
            raise _Bad(f"{path}.field", f"{c.entity} has no field {c.field!r}")
        for side, v in (("before", c.before), ("after", c.after)):
            why = check_value(f.ty, v, domain.int_keys)
            if why:
                raise _Bad(f"{path}.{side}", f"{v!r} must be {why}")
        row = st.tables[c.entity].get(c.key)
        if row is None:
            raise _Bad(f"{path}.key", f"no {c.entity} {c.key!r} in the initial state")
        if row[c.field] != c.before:
            raise _Bad(f"{path}.before", f"the initial state has {row[c.field]!r}")


def targets_problem(task: Task, domain: Domain, st: State) -> None:
    """Every target is a row of the initial state."""
    for i, tg in enumerate(task.targets):
        if tg.entity not in domain.entities:
            raise _Bad(f"targets[{i}].entity", f"{tg.entity!r} is not a table of {domain.name!r}")
        if tg.key not in st.tables[tg.entity]:
            raise _Bad(f"targets[{i}].key", f"no {tg.entity} {tg.key!r} in the initial state")


def task_problem(obj: Any, domain: Domain | None) -> Task:
    """The task of one decoded line, checked against ``domain`` (shape only without one)."""
    task = schema_problem(obj)
    kind_problem(task)
    if domain is None:
        return task
    identity_problem(task, domain)
    st = state_problem(task, domain)
    calls_problem(task, domain)
    givens_problem(task, domain)
    goal_problem(task, domain, st)
    targets_problem(task, domain, st)
    return task


def duplicate_problem(task: Task, seen: dict[str, int], bodies: dict[str, int]) -> None:
    """A task id used twice, or a task equal to an earlier one but for its id."""
    first = seen.get(task.id)
    if first is not None:
        raise _Bad("id", f"id repeats line {first}")
    first = bodies.get(task_fingerprint(task))
    if first is not None:
        raise _Bad("", f"the same task as line {first} (only the id differs)")


def task_fingerprint(task: Task) -> str:
    """A hash of the task without its id and certificate (canonical JSON): two tasks
    with the same fingerprint ask the same thing."""
    body = task.model_dump(mode="json", exclude={"id", "certificate"})
    text = json.dumps(body, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def manifest_problem(obj: Any, domain: Domain | None) -> Manifest:
    """The manifest of the first line (and, with ``domain``, that it is of it)."""
    if not isinstance(obj, dict) or not isinstance(obj.get("manifest"), dict):
        raise _Bad("manifest", 'the first line is the manifest: {"manifest": {...}}')
    if set(obj) != {"manifest"}:
        raise _Bad("", "the manifest line holds the manifest only")
    m = _validated(Manifest, obj["manifest"], "manifest")
    if domain is not None and m.domain != domain.name:
        raise _Bad("manifest.domain", f"a task set of domain {m.domain!r}, not {domain.name!r}")
    return m


# ------------------------------------------------------------------ a whole file


def _raw_lines(data: bytes) -> Iterator[tuple[int, bytes]]:
    for i, raw in enumerate(data.split(b"\n"), 1):
        if raw.strip():
            yield i, raw


DomainOf = Callable[[Manifest], Domain | None]
"""The domain a file's tasks are checked against, chosen from its manifest."""


def scan_taskset(data: bytes, source: str, domain_of: DomainOf | None = None) -> TaskFile:
    """Read a task file's bytes: the manifest, then every task line on its own.

    Plain, compact and gzip files are all read (:mod:`graphgen.tasks.fileformat`); the
    tasks come back with their initial states expanded.

    ``domain_of(manifest)`` gives the domain to check the tasks against (None: shape
    only). A bad manifest raises :class:`TaskSetError`; a bad task line becomes a
    :class:`TaskProblem` in the result and the lines after it are still read.
    """
    try:
        data = decode(data, source)
    except FormatError as exc:
        raise TaskSetError(str(exc)) from None
    lines = _raw_lines(data)
    first = next(lines, None)
    if first is None:
        raise TaskSetError(f"{source}: empty file (no manifest line)")
    lineno, raw = first
    try:
        obj = decode_line(raw)
        manifest = manifest_problem(obj, None)
        domain = domain_of(manifest) if domain_of is not None else None
        if domain is not None:
            manifest_problem(obj, domain)
    except _Bad as bad:
        raise TaskSetError([TaskProblem(source, lineno, "", bad.path, bad.message)]) from None
    out = TaskFile(manifest)
    seen: dict[str, int] = {}
    bodies: dict[str, int] = {}
    states = StateTable()  # the compact layout's shared states (fileformat.py)
    for lineno, raw in lines:
        tid = ""
        try:
            obj = decode_line(raw)
            if is_state_line(obj):
                why = states.define(obj)
                if why:
                    raise _Bad("state", why)
                continue
            if isinstance(obj, dict) and isinstance(obj.get("id"), str):
                tid = obj["id"]
            why = states.expand(obj)
            if why:
                raise _Bad("initial_state", why)
            task = task_problem(obj, domain)
            duplicate_problem(task, seen, bodies)
        except _Bad as bad:
            out.problems.append(TaskProblem(source, lineno, tid, bad.path, bad.message))
            continue
        seen[task.id] = lineno
        bodies[task_fingerprint(task)] = lineno
        out.tasks.append(task)
        out.lines.append(lineno)
    return out
