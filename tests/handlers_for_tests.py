"""Handlers the integration tests run in real worker child processes."""

from __future__ import annotations

import os
import sys
import time
from typing import Any


def echo(**kwargs: Any) -> dict[str, Any]:
    print("hello from", os.environ.get("TASKYARD_JOB_ID"))
    return {"args": kwargs, "job_id": os.environ.get("TASKYARD_JOB_ID"),
            "attempt": os.environ.get("TASKYARD_ATTEMPT"), "pid": os.getpid()}


def boom(message: str = "boom") -> None:
    print("about to fail", file=sys.stderr)
    raise ValueError(message)


def sleepy(seconds: float = 0.1, log: str | None = None) -> float:
    start = time.time()
    if log:
        with open(log, "a") as fh:
            fh.write(f"start {start} {os.environ['TASKYARD_JOB_ID']}\n")
    time.sleep(seconds)
    end = time.time()
    if log:
        with open(log, "a") as fh:
            fh.write(f"end {end} {os.environ['TASKYARD_JOB_ID']}\n")
    return end - start


def not_json() -> object:
    return object()


def die() -> None:
    os._exit(3)


def staged(log: str, marker: str) -> dict[str, Any]:
    """Three stages; the last fails on the first attempt (while ``marker`` is absent), so
    a retry must skip the first two and receive their results."""
    from taskyard import current_job, stage

    def step(name: str, value: Any) -> Any:
        with open(log, "a") as fh:
            fh.write(f"{name} {os.environ['TASKYARD_ATTEMPT']}\n")
        return value

    def load(total: int) -> int:
        if not os.path.exists(marker):
            open(marker, "w").close()
            raise RuntimeError("flaky load")
        return step("load", total)

    rows = stage("fetch", step, "fetch", [1, 2, 3])
    total = stage("transform", lambda: step("transform", sum(rows)))
    loaded = stage("load", load, total)
    job = current_job()
    assert job is not None
    return {"rows": rows, "total": total, "loaded": loaded, "attempt": job.attempt}


def pid_then_sleep(path: str, seconds: float) -> None:
    with open(path, "w") as fh:
        fh.write(str(os.getpid()))
    time.sleep(seconds)
