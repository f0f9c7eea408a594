"""taskyard: a task scheduler and task-graph engine for Python.

The public API is what ``__all__`` lists; everything else is internal. Names
are imported on first use, so that worker child processes (which import
``taskyard.worker.child``) start without loading the database stack.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from taskyard.api.yard import Yard
    from taskyard.core.states import JobState
    from taskyard.store.errors import Conflict, InvalidInput, NotFound, StoreError
    from taskyard.store.records import (
        GraphRecord,
        JobRecord,
        Prerequisite,
        TaskTypeSpec,
        WorkerRecord,
    )

_WHERE = {
    "Conflict": "taskyard.store.errors",
    "GraphRecord": "taskyard.store.records",
    "InvalidInput": "taskyard.store.errors",
    "JobRecord": "taskyard.store.records",
    "JobState": "taskyard.core.states",
    "NotFound": "taskyard.store.errors",
    "Prerequisite": "taskyard.store.records",
    "StoreError": "taskyard.store.errors",
    "TaskTypeSpec": "taskyard.store.records",
    "WorkerRecord": "taskyard.store.records",
    "Yard": "taskyard.api.yard",
}
__all__ = sorted(_WHERE)
__version__ = "0.1.0"


def __getattr__(name: str) -> Any:
    if name in _WHERE:
        value = getattr(import_module(_WHERE[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'taskyard' has no attribute {name!r}")
