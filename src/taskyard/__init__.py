"""taskyard: a task scheduler and task-graph engine for Python.

The public API is what ``__all__`` lists; everything else is internal. Names
are imported on first use, so that worker child processes (which import
``taskyard.worker.child``) start without loading the database stack.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from taskyard.api.yard import Yard as Yard
    from taskyard.core.states import JobState as JobState
    from taskyard.store.errors import Conflict as Conflict
    from taskyard.store.errors import InvalidInput as InvalidInput
    from taskyard.store.errors import NotFound as NotFound
    from taskyard.store.errors import StoreError as StoreError
    from taskyard.store.records import GraphRecord as GraphRecord
    from taskyard.store.records import JobRecord as JobRecord
    from taskyard.store.records import Prerequisite as Prerequisite
    from taskyard.store.records import TaskTypeSpec as TaskTypeSpec
    from taskyard.store.records import WorkerRecord as WorkerRecord
    from taskyard.worker.context import Fenced as Fenced
    from taskyard.worker.context import JobContext as JobContext
    from taskyard.worker.context import current_job as current_job
    from taskyard.worker.context import stage as stage

_WHERE = {
    "Conflict": "taskyard.store.errors",
    "Fenced": "taskyard.worker.context",
    "GraphRecord": "taskyard.store.records",
    "InvalidInput": "taskyard.store.errors",
    "JobContext": "taskyard.worker.context",
    "JobRecord": "taskyard.store.records",
    "JobState": "taskyard.core.states",
    "NotFound": "taskyard.store.errors",
    "Prerequisite": "taskyard.store.records",
    "StoreError": "taskyard.store.errors",
    "TaskTypeSpec": "taskyard.store.records",
    "WorkerRecord": "taskyard.store.records",
    "Yard": "taskyard.api.yard",
    "current_job": "taskyard.worker.context",
    "stage": "taskyard.worker.context",
}
__all__ = [
    "Conflict",
    "Fenced",
    "GraphRecord",
    "InvalidInput",
    "JobContext",
    "JobRecord",
    "JobState",
    "NotFound",
    "Prerequisite",
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
        value = getattr(import_module(_WHERE[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'taskyard' has no attribute {name!r}")
