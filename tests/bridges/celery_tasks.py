"""Celery tasks of the tests' Celery workers (``celery -A tests.bridges.celery_tasks worker``):
an existing fleet, which knows nothing of taskyard."""

from __future__ import annotations

import os
import signal
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
def wait_for(self: Any, path: str, timeout: float = 120.0, pidfile: str | None = None,
             stubborn: bool = False) -> dict[str, Any]:
    """Runs until ``path`` exists; says which task (so which attempt) it was. Writes the
    process id of its pool process to ``pidfile``; ``stubborn``: ignores SIGTERM (what
    a revoke sends) meanwhile, and then marks its end in ``path.ended-<attempt>``."""
    if pidfile is not None:
        Path(pidfile).write_text(str(os.getpid()))
    if not stubborn:
        return _wait_for(self, path, timeout)
    previous = signal.signal(signal.SIGTERM, signal.SIG_IGN)
    try:
        return _wait_for(self, path, timeout)
    finally:  # the pool process serves other tests' tasks: revocable again
        signal.signal(signal.SIGTERM, signal.SIG_DFL if previous is None else previous)
        Path(f"{path}.ended-{_wait_for_attempt(self)}").touch()


def _wait_for_attempt(task: Any) -> Any:
    headers = task.request.headers or {}
    return task.request.get("taskyard_attempt", headers.get("taskyard_attempt"))


def _wait_for(self: Any, path: str, timeout: float) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while not Path(path).exists():
        if time.monotonic() > deadline:
            raise TimeoutError(path)
        time.sleep(0.05)
    return {"task_id": self.request.id, "attempt": _wait_for_attempt(self)}


@app.task(name="tests.now")
def now() -> float:
    """When the task started (the benchmark's submit→start latency)."""
    return time.time()


@app.task(name="tests.trace_headers", bind=True)
def trace_headers(self: Any) -> dict[str, Any]:
    """The W3C trace headers the task's message carried (tests/bridges/test_celery_tracing.py)."""
    headers = self.request.headers or {}
    return {name: self.request.get(name, headers.get(name))
            for name in ("traceparent", "tracestate")}
