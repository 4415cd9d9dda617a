"""A small to-do service written as an ordinary Python tool API, with no graphgen in it.

It is the worked example of ``docs/porting.md``: ``todo.yaml`` next to it is its port into
the domain language, and ``tests/test_porting.py`` replays the same random call sequences
against this class and against the compiled domain package.

The methods are what an agent would be given as tools. Each takes and returns JSON-ready
values (ints, strings, ``None``, lists and dicts; time as a decimal string with two places),
raises ``KeyError`` for an id that does not exist and ``ValueError`` for a request that is
invalid, and answers ``{"success": False, "message": ...}`` when the request is valid but
there is nothing to do (completing a task that is already done).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date
from decimal import Decimal
from typing import Any

MAX_TITLE = 80
MAX_PRIORITY = 4
MAX_LOG = Decimal("24.00")
MAX_SPENT = Decimal("40.00")
CENT = Decimal("0.01")


@dataclass
class Project:
    name: str
    archived: bool = False


@dataclass
class Task:
    project_id: int
    title: str
    due: str | None  # an ISO date, YYYY-MM-DD
    priority: int  # 1 (highest) .. 4
    done: bool = False
    spent: Decimal = Decimal("0.00")  # hours logged, two places


def _check_title(title: str) -> None:
    if not 1 <= len(title) <= MAX_TITLE:
        raise ValueError(f"A title has 1 to {MAX_TITLE} characters")


def _check_due(due: str) -> None:
    # Only the YYYY-MM-DD form: date.fromisoformat alone also takes '20260301' and week dates.
    if not re.fullmatch(r"[0-9]{4}-[0-9]{2}-[0-9]{2}", due):
        raise ValueError(f"Due date {due!r} is not YYYY-MM-DD")
    date.fromisoformat(due)  # raises ValueError for 2026-02-30


def _check_priority(priority: int) -> None:
    if not 1 <= priority <= MAX_PRIORITY:
        raise ValueError(f"Priority must be 1 to {MAX_PRIORITY}")


class TodoService:
    """Projects holding tasks; tasks have a due date, a priority and hours logged."""

    def __init__(self) -> None:
        self.projects: dict[int, Project] = {}
        self.tasks: dict[int, Task] = {}
        self.next_project_id = 1
        self.next_task_id = 1

    def _project(self, project_id: int) -> Project:
        if project_id not in self.projects:
            raise KeyError(f"No project with id {project_id}")
        return self.projects[project_id]

    def _task(self, task_id: int) -> Task:
        if task_id not in self.tasks:
            raise KeyError(f"No task with id {task_id}")
        return self.tasks[task_id]

    # ------------------------------------------------------------------ projects

    def add_project(self, name: str) -> dict[str, Any]:
        """Create a project; names are unique regardless of case."""
        if not name:
            raise ValueError("A project needs a name")
        if any(p.name.lower() == name.lower() for p in self.projects.values()):
            raise ValueError(f"A project named {name!r} already exists")
        project_id = self.next_project_id
        self.next_project_id += 1
        self.projects[project_id] = Project(name)
        return {"success": True, "project_id": project_id, "message": f"Project {name} created."}

    def find_project(self, name: str) -> list[int]:
        """The id of the project called ``name`` (exactly), as a list: empty if none."""
        return [pid for pid, p in self.projects.items() if p.name == name]

    def archive_project(self, project_id: int) -> dict[str, Any]:
        """Archive a project: no new tasks can be added to it."""
        project = self._project(project_id)
        if project.archived:
            return {"success": False, "message": f"Project {project_id} is already archived."}
        project.archived = True
        return {"success": True, "message": f"Project {project_id} archived."}

    def project_summary(self, project_id: int) -> dict[str, Any]:
        """Open and done task counts and the hours logged in a project."""
        project = self._project(project_id)
        tasks = [t for t in self.tasks.values() if t.project_id == project_id]
        return {
            "name": project.name,
            "open": sum(1 for t in tasks if not t.done),
            "done": sum(1 for t in tasks if t.done),
            "hours": str(sum((t.spent for t in tasks), Decimal("0.00"))),
        }

    # ------------------------------------------------------------------ tasks

    def add_task(
        self, project_id: int, title: str, due: str | None = None, priority: int = 2
    ) -> dict[str, Any]:
        """Add a task to a project that is not archived."""
        project = self._project(project_id)
        if due is not None:
            _check_due(due)
        _check_priority(priority)
        _check_title(title)
        if project.archived:
            raise ValueError(f"Project {project_id} is archived")
        task_id = self.next_task_id
        self.next_task_id += 1
        self.tasks[task_id] = Task(project_id, title, due, priority)
        return {
            "success": True,
            "task_id": task_id,
            "message": f"Task {task_id} added to {project.name}.",
        }

    def get_task(self, task_id: int) -> dict[str, Any]:
        """A task's details."""
        t = self._task(task_id)
        return {
            "task_id": task_id,
            "project_id": t.project_id,
            "title": t.title,
            "due": t.due,
            "priority": t.priority,
            "done": t.done,
            "spent": str(t.spent),
        }

    def list_tasks(self, project_id: int, include_done: bool = False) -> list[int]:
        """The ids of a project's tasks, open ones only unless include_done."""
        self._project(project_id)
        return [
            task_id
            for task_id, t in self.tasks.items()
            if t.project_id == project_id and (include_done or not t.done)
        ]

    def search_tasks(self, query: str) -> list[int]:
        """The ids of the tasks whose title contains ``query``, ignoring case."""
        if len(query) < 2:
            raise ValueError("Search for at least 2 characters")
        return [task_id for task_id, t in self.tasks.items() if query.lower() in t.title.lower()]

    def edit_task(
        self,
        task_id: int,
        title: str | None = None,
        due: str | None = None,
        priority: int | None = None,
    ) -> dict[str, Any]:
        """Change the given fields of an open task; a field left out keeps its value."""
        t = self._task(task_id)
        if title is None and due is None and priority is None:
            raise ValueError("Nothing to change")
        if title is not None:
            _check_title(title)
        if due is not None:
            _check_due(due)
        if priority is not None:
            _check_priority(priority)
        if t.done:
            return {
                "success": False,
                "message": f"Task {task_id} is done; reopen it to edit it.",
            }
        if title is not None:
            t.title = title
        if due is not None:
            t.due = due
        if priority is not None:
            t.priority = priority
        return {"success": True, "message": f"Task {task_id} updated."}

    def complete_task(self, task_id: int) -> dict[str, Any]:
        """Mark a task done."""
        t = self._task(task_id)
        if t.done:
            return {"success": False, "message": f"Task {task_id} is already done."}
        t.done = True
        return {"success": True, "message": f"Task {task_id} marked as done."}

    def reopen_task(self, task_id: int) -> dict[str, Any]:
        """Mark a done task open again."""
        t = self._task(task_id)
        if not t.done:
            return {"success": False, "message": f"Task {task_id} is not done."}
        t.done = False
        return {"success": True, "message": f"Task {task_id} reopened."}

    def log_time(self, task_id: int, hours: Decimal) -> dict[str, Any]:
        """Add hours (0.01 to 24.00, two places at most) to a task's logged time."""
        t = self._task(task_id)
        if hours.as_tuple().exponent < -2:  # type: ignore[operator]
            raise ValueError("Hours have at most 2 decimal places")
        hours = hours.quantize(CENT)
        if not CENT <= hours <= MAX_LOG:
            raise ValueError(f"Log between {CENT} and {MAX_LOG} hours")
        total = t.spent + hours
        if total > MAX_SPENT:
            raise ValueError(f"A task holds at most {MAX_SPENT} hours")
        t.spent = total
        return {"success": True, "message": f"Logged {hours} h on task {task_id}; total {total} h."}

    def delete_task(self, task_id: int) -> dict[str, Any]:
        """Delete a task."""
        self._task(task_id)
        del self.tasks[task_id]
        return {"success": True, "message": f"Task {task_id} deleted."}
