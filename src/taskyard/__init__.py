"""taskyard: a task scheduler and task-graph engine for Python.

The public API is what ``__all__`` lists; everything else is internal.
"""

from taskyard.api.yard import Yard
from taskyard.core.states import JobState
from taskyard.store.errors import Conflict, InvalidInput, NotFound, StoreError
from taskyard.store.records import JobRecord, TaskTypeSpec, WorkerRecord

__all__ = [
    "Conflict",
    "InvalidInput",
    "JobRecord",
    "JobState",
    "NotFound",
    "StoreError",
    "TaskTypeSpec",
    "WorkerRecord",
    "Yard",
]
__version__ = "0.1.0"
