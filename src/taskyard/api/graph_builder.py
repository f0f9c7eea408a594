"""Task graphs built in Python: a :class:`Graph` whose :meth:`~Graph.task` returns the
task, to require it or refer to its job id and result from later tasks::

    g = Graph(routing="nightly")
    build = g.task("build", compile, {"target": "linux"}, reruns=2)
    g.task("test", "run-tests", {"artifact": build.result}, requires=[build])
    graph_id = yard.submit_graph(g)

It builds the graph document of the YAML format (:meth:`Graph.document`); submitting
validates it as any graph document is validated (``core/graph.py``): nothing here
checks a graph a second way.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from taskyard.api.tasks import type_name_of
from taskyard.model.errors import InvalidInput


@dataclass(frozen=True, slots=True)
class GraphTask:
    """A task of a :class:`Graph`, by its label."""

    label: str

    @property
    def job_id(self) -> dict[str, str]:
        """Stands, in another task's args, for this task's job id (``$subs``)."""
        return {"$subs": f"taskId:{self.label}"}

    @property
    def result(self) -> dict[str, str]:
        """Stands, in the args of a task that requires this one, for its result
        (``$result``, filled in when that task is dispatched)."""
        return {"$result": self.label}


class Graph:
    """A task graph under construction: tasks, their requirements and options."""

    def __init__(self, routing: str = "") -> None:
        """``routing``: the post-fix of this graph's events' routing keys."""
        self.routing = routing
        self._tasks: dict[str, dict[str, Any]] = {}

    def task(self, label: str, type: str | Callable[..., Any],
             args: Mapping[str, Any] | None = None, *,
             requires: Iterable[GraphTask | str | tuple[GraphTask | str, str]] = (),
             **options: Any) -> GraphTask:
        """Add a task: its ``label``, its task type (a name, or a function declared with
        ``@yard.task_type()``), its ``args``, the tasks it ``requires`` (a task, a label,
        or ``(task, "success"|"failure"|"always")``) and the options of the graph
        format: ``reruns``, ``priority``, ``pools``, ``routing``, ``locks``,
        ``timeout``, ``requires_mode``, ``convergence``."""
        if label in self._tasks:
            raise InvalidInput(f"graph: task {label!r} is in the graph already")
        body: dict[str, Any] = {"type": type_name_of(type, f"task {label!r}")}
        if args:
            body["args"] = dict(args)
        edges = [_edge(r) for r in requires]
        if edges:
            body["requires"] = edges
        body.update((k, list(v) if isinstance(v, tuple) else v) for k, v in options.items())
        self._tasks[label] = body
        return GraphTask(label)

    @property
    def tasks(self) -> Sequence[GraphTask]:
        """The tasks added so far, in order."""
        return [GraphTask(label) for label in self._tasks]

    def document(self, *, tasks_only: bool = False) -> dict[str, Any]:
        """The graph document (the graph file's JSON form); ``tasks_only``: without the
        routing, as ``add-tasks`` takes it."""
        tasks = {label: dict(body) for label, body in self._tasks.items()}
        return {"tasks": tasks} if tasks_only else {"routing": self.routing, "tasks": tasks}


def _edge(requirement: GraphTask | str | tuple[GraphTask | str, str]) -> str | dict[str, str]:
    if isinstance(requirement, tuple):
        task, on = requirement
        return {"label": _label(task), "on": on}
    return _label(requirement)


def _label(task: GraphTask | str) -> str:
    return task.label if isinstance(task, GraphTask) else task
