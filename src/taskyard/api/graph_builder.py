"""Task graphs built in Python: a :class:`Graph` whose :meth:`~Graph.task` returns the
task, to require it or refer to its job id and result from later tasks::

    g = Graph(routing="nightly")
    build = g.task("build", compile, {"target": "linux"}, reruns=2)
    g.task("test", "run-tests", {"artifact": build.result}, requires=[build])
    graph_id = yard.submit_graph(g)

Approvals, waits and sleeps hold no worker (see ``core/waits.py``)::

    approve = g.approval("approve", timeout="1h", requires=[build])
    ready = g.wait("ready", "deploy-ready", key="v2")
    g.task("deploy", "deploy", {"release": ready.result}, requires=[approve, ready])

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

    def approval(self, label: str, *, timeout: float | str | None = None,
                 requires: Iterable[Requirement] = (), **options: Any) -> GraphTask:
        """Add an approval: it awaits ``Yard.approve`` (succeeds) or ``Yard.deny`` (fails)
        once its requirements are met; past ``timeout`` (seconds or ``1h``) it fails."""
        body = {} if timeout is None else {"timeout": timeout}
        return self._wait(label, "approval", body, requires, options)

    def wait(self, label: str, signal: str, *, key: str | None = None,
             timeout: float | str | None = None, requires: Iterable[Requirement] = (),
             **options: Any) -> GraphTask:
        """Add a wait: it succeeds on the first ``Yard.signal(signal, key=…)`` sent after
        the graph was submitted (the signal's payload is its result); past ``timeout``
        it fails."""
        body: dict[str, Any] = {"signal": signal}
        if key is not None:
            body["key"] = key
        if timeout is not None:
            body["timeout"] = timeout
        return self._wait(label, "wait", body, requires, options)

    def sleep(self, label: str, duration: float | str, *,
              requires: Iterable[Requirement] = (), **options: Any) -> GraphTask:
        """Add a durable timer: it succeeds ``duration`` (seconds or ``10m``) after its
        requirements are met, holding no worker meanwhile."""
        return self._wait(label, "sleep", duration, requires, options)

    def _wait(self, label: str, kind: str, body: Any, requires: Iterable[Requirement],
              options: dict[str, Any]) -> GraphTask:
        """An approval, a wait or a sleep; ``options``: routing, requires_mode,
        convergence (it runs no handler)."""
        if label in self._tasks:
            raise InvalidInput(f"graph: task {label!r} is in the graph already")
        task: dict[str, Any] = {kind: body, **options}
        edges = [_edge(r) for r in requires]
        if edges:
            task["requires"] = edges
        self._tasks[label] = task
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


Requirement = GraphTask | str | tuple[GraphTask | str, str]
"""A task a task requires: the task, its label, or ``(task, "success"|"failure"|"always")``."""


def _edge(requirement: Requirement) -> str | dict[str, str]:
    if isinstance(requirement, tuple):
        task, on = requirement
        return {"label": _label(task), "on": on}
    return _label(requirement)


def _label(task: GraphTask | str) -> str:
    return task.label if isinstance(task, GraphTask) else task
