"""Celery tasks of the tests' Celery workers (``celery -A tests.bridges.celery_tasks worker``):
an existing fleet, which knows nothing of taskyard."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from celery import Celery

app = Celery("taskyard-tests", broker=os.environ.get("TASKYARD_TEST_CELERY_BROKER"),
             backend=os.environ.get("TASKYARD_TEST_CELERY_BACKEND"))
app.conf.broker_connection_retry_on_startup = True


@app.task(name="tests.add")
def add(x: int, y: int) -> int:
    return x + y


@app.task(name="tests.fail")
def fail(message: str) -> None:
    raise ValueError(message)


@app.task(name="tests.wait_for", bind=True)
def wait_for(self: Any, path: str, timeout: float = 120.0) -> dict[str, Any]:
    """Runs until ``path`` exists; says which task (so which attempt) it was."""
    deadline = time.monotonic() + timeout
    while not Path(path).exists():
        if time.monotonic() > deadline:
            raise TimeoutError(path)
        time.sleep(0.05)
    headers = self.request.headers or {}
    return {"task_id": self.request.id,
            "attempt": self.request.get("taskyard_attempt", headers.get("taskyard_attempt"))}


@app.task(name="tests.now")
def now() -> float:
    """When the task started (the benchmark's submit→start latency)."""
    return time.time()
