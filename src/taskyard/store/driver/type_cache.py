"""Task types kept by a driver for one-job submits, with the version of their rows.

A submit needs its task type's spec (pools, cost, retry policy, lock templates) to
build the job's row; reading it costs a statement (on PostgreSQL a round trip) per
submit. Each driver keeps the specs it has read instead, with the version of the row
they were read at (PostgreSQL: ``xmin``; SQLite: the row itself), and inserts a job
built from one only while the row is still at that version (``InsertJobs.as_built``):
a type changed, deleted or re-created meanwhile, by any process, is read again.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from taskyard.model.records import TaskTypeSpec

CACHE_SIZE = 1024
"""Task types kept per driver; the cache starts over when it is full."""


class TypeCache:
    """Task type name → (row version, spec). Threads of one store share it: each reads
    and replaces whole entries, and a stale one only costs a write that is refused."""

    def __init__(self) -> None:
        self._types: dict[str, tuple[Any, TaskTypeSpec]] = {}

    def get(self, name: str, read: Callable[[], tuple[Any, TaskTypeSpec] | None],
            ) -> tuple[Any, TaskTypeSpec] | None:
        """The kept entry of ``name``, else ``read()`` kept (None: no such type)."""
        found = self._types.get(name)
        if found is None:
            found = read()
            if found is None:
                return None
            if len(self._types) >= CACHE_SIZE:
                self._types.clear()
            self._types[name] = found
        return found

    def forget(self, name: str) -> None:
        self._types.pop(name, None)
