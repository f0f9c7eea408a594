"""Handles on submitted jobs, and waiting for them on a push rather than a polling loop.

A wait listens on the ``events`` channel, which every transaction that writes events
wakes when it commits (LISTEN/NOTIFY on PostgreSQL; SQLite's listener watches the
newest event id), and reads again on each wake-up. A job's every end writes an event,
so a waiter reads about once per burst of commits; a slow safety re-check covers a
wake-up lost with a connection.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from taskyard.core.states import JobState
from taskyard.model.errors import NotFound
from taskyard.model.records import JobRecord
from taskyard.store import Store

if TYPE_CHECKING:
    from taskyard.api.yard import Yard
    from taskyard.core.explain import Reason

T = TypeVar("T")
SAFETY_RECHECK = 5.0
"""Seconds between reads when nothing wakes the waiter."""


def wait_until(store: Store, read: Callable[[], T | None], timeout: float | None,
               what: str) -> T:
    """``read()`` until it returns something: now, then at each wake-up of the
    ``events`` channel and every :data:`SAFETY_RECHECK` seconds. TimeoutError (naming
    ``what``) after ``timeout`` seconds."""
    # Listening before the first read: no commit slips between. The listener is lent
    # (kept between waits): a wait opens no connection of its own.
    with store.borrow_listener("events") as listener:
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            found = read()
            if found is not None:
                return found
            left = SAFETY_RECHECK if deadline is None else deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"{what} after {timeout}s")
            listener.wait(min(left, SAFETY_RECHECK))


class JobFailed(Exception):
    """The job ended without succeeding (failed, error, canceled, dependency_failed,
    skipped); :attr:`job` is its record."""

    def __init__(self, job: JobRecord) -> None:
        why = f": {job.error}" if job.error else ""
        code = f" (exit code {job.exit_code})" if job.exit_code is not None else ""
        super().__init__(f"job {job.id} ({job.type}) ended {job.state}{code}{why}")
        self.job = job


class JobHandle:
    """One submitted job: its ``id``, and ways to follow it.

    ``handle.result(timeout=30)`` waits for the job to end and returns its result (or
    raises :class:`JobFailed`); ``state()``, ``record()``, ``wait()``, ``cancel()`` and
    ``explain()`` read or act on it now."""

    __slots__ = ("_yard", "id")

    def __init__(self, yard: Yard, job_id: int) -> None:
        self._yard = yard
        self.id = job_id

    def record(self) -> JobRecord:
        """The job as stored now, with its attempts."""
        return self._yard.get_job(self.id)

    def state(self) -> str:
        """Its state now (see :class:`~taskyard.JobState`)."""
        job = self._yard.store.jobs.get(self.id, attempts=False)
        if job is None:
            raise NotFound(f"no job {self.id}")
        return job.state

    def wait(self, timeout: float | None = None) -> JobRecord:
        """Block until the job has ended; its record. TimeoutError after ``timeout`` s."""
        return self._yard.wait(self.id, timeout)

    def result(self, timeout: float | None = None) -> Any:
        """Block until the job has ended; its result if it succeeded, else JobFailed.
        TimeoutError after ``timeout`` seconds (the job carries on)."""
        job = self.wait(timeout)
        if job.state != JobState.SUCCEEDED:
            raise JobFailed(job)
        return job.result

    def cancel(self) -> JobRecord:
        return self._yard.cancel(self.id)

    def explain(self) -> list[Reason]:
        """Why it is not running yet (empty once it runs or ended)."""
        return self._yard.explain(self.id)

    def __repr__(self) -> str:
        return f"JobHandle({self.id})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, JobHandle) and other.id == self.id

    def __hash__(self) -> int:
        return hash(self.id)
