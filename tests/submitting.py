"""What the submit-path tests share: a Yard with one task type, and what they read."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from taskyard.api.yard import Yard
from taskyard.model.records import TaskTypeSpec
from taskyard.store import Store
from taskyard.store.clock import MovableClock

HANDLER = "python:tests.handlers_for_tests:echo"


@contextmanager
def yard_with_type(url: str, clock: MovableClock) -> Iterator[Yard]:
    """A Yard on ``url`` whose task type ``t`` runs :data:`HANDLER`."""
    y = Yard(url, clock=clock)
    y.store.task_types.put(TaskTypeSpec("t", HANDLER))
    try:
        yield y
    finally:
        y.close()


def pending_events(store: Store, job_id: int) -> int:
    return sum(1 for e in store.events.list()
               if e.topic == "job-pending" and e.payload.get("job_id") == job_id)


def state(store: Store, job_id: int) -> tuple[str, int, str | None]:
    job = store.jobs.get(job_id)
    assert job is not None
    return job.state, job.attempt, job.worker
