"""taskyard: a task scheduler and task-graph engine for Python.

The public API is what ``__all__`` lists; everything else is internal. Names
are imported on first use, so that worker child processes (which import
``taskyard.worker.child``) start without loading the database stack.
"""

from __future__ import annotations

# Not even typing or importlib: a worker's child process imports this package first.
TYPE_CHECKING = False  # typing.TYPE_CHECKING without loading typing
if TYPE_CHECKING:
    from typing import Any

    from taskyard.api.graph_builder import Graph as Graph
    from taskyard.api.handles import JobFailed as JobFailed
    from taskyard.api.handles import JobHandle as JobHandle
    from taskyard.api.yard import Yard as Yard
    from taskyard.core.states import JobState as JobState
    from taskyard.model.errors import Conflict as Conflict
    from taskyard.model.errors import InvalidInput as InvalidInput
    from taskyard.model.errors import NotFound as NotFound
    from taskyard.model.errors import SchemaMissing as SchemaMissing
    from taskyard.model.errors import StoreError as StoreError
    from taskyard.model.records import GraphRecord as GraphRecord
    from taskyard.model.records import JobRecord as JobRecord
    from taskyard.model.records import Prerequisite as Prerequisite
    from taskyard.model.records import TaskTypeSpec as TaskTypeSpec
    from taskyard.model.records import WorkerRecord as WorkerRecord
    from taskyard.worker.context import Fenced as Fenced
    from taskyard.worker.context import JobContext as JobContext
    from taskyard.worker.context import current_job as current_job
    from taskyard.worker.context import stage as stage

_WHERE = {
    "Conflict": "taskyard.model.errors",
    "Fenced": "taskyard.worker.context",
    "Graph": "taskyard.api.graph_builder",
    "GraphRecord": "taskyard.model.records",
    "InvalidInput": "taskyard.model.errors",
    "JobContext": "taskyard.worker.context",
    "JobFailed": "taskyard.api.handles",
    "JobHandle": "taskyard.api.handles",
    "JobRecord": "taskyard.model.records",
    "JobState": "taskyard.core.states",
    "NotFound": "taskyard.model.errors",
    "Prerequisite": "taskyard.model.records",
    "SchemaMissing": "taskyard.model.errors",
    "StoreError": "taskyard.model.errors",
    "TaskTypeSpec": "taskyard.model.records",
    "WorkerRecord": "taskyard.model.records",
    "Yard": "taskyard.api.yard",
    "current_job": "taskyard.worker.context",
    "stage": "taskyard.worker.context",
}
__all__ = [
    "Conflict",
    "Fenced",
    "Graph",
    "GraphRecord",
    "InvalidInput",
    "JobContext",
    "JobFailed",
    "JobHandle",
    "JobRecord",
    "JobState",
    "NotFound",
    "Prerequisite",
    "SchemaMissing",
    "StoreError",
    "TaskTypeSpec",
    "WorkerRecord",
    "Yard",
    "current_job",
    "stage",
]
__version__ = "0.1.0"


assert sorted(_WHERE) == sorted(__all__)


def __getattr__(name: str) -> Any:
    if name in _WHERE:
        from importlib import import_module  # noqa: PLC0415 - see the imports above

        value = getattr(import_module(_WHERE[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'taskyard' has no attribute {name!r}")
