"""An attempt's outcome from its handler's run, whatever the run raised."""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from typing import Any

from taskyard.core.durations import iso
from taskyard.core.handlers import HandlerSpec, HandlerSpecError
from taskyard.core.handlers import parse_handler as _parse
from taskyard.core.lifecycle import TIMEOUT_EXIT_CODE
from taskyard.model.records import ClaimedJob, Outcome
from taskyard.worker.processes import ChildDied, Stopped


def outcome_of(job: ClaimedJob, call: Callable[[], dict[str, Any]],
               stop_state: Callable[[tuple[int, int]], str | None]) -> Outcome:
    """The attempt's outcome from ``call`` (a handler run); ``stop_state``: why the
    worker stopped the attempt, if it did (its end state)."""
    try:
        raw = call()
    except TimeoutError as exc:
        tails = exc.args[0] if exc.args else {}
        return Outcome(job.job_id, job.attempt, "failed", TIMEOUT_EXIT_CODE,
                       error=f"timed out after {job.timeout:g}s", **tails)
    except Stopped as exc:
        tails = exc.args[0] if exc.args else {}
        return Outcome(job.job_id, job.attempt,
                       stop_state((job.job_id, job.attempt)) or "canceled",
                       error="stopped", **tails)
    except ChildDied as exc:
        return Outcome(job.job_id, job.attempt, "error", error=str(exc))
    return Outcome(job.job_id, job.attempt, raw["state"], raw.get("exit_code"),
                   raw.get("result"), raw.get("error"), raw.get("stdout_tail"),
                   raw.get("stderr_tail"))


@functools.lru_cache(maxsize=256)
def parse_handler(text: str) -> HandlerSpec:
    """:func:`taskyard.core.handlers.parse_handler`, cached: the same few handlers run
    thousands of times."""
    return _parse(text)


CELERY_ELSEWHERE = ("handler {handler!r} is a Celery task: jobs of its type run through "
                   "`taskyard celery-pool`, not on a worker (give the type a pool that only "
                   "a celery-pool serves)")


def is_python(handler: str) -> bool:
    """A handler a Python child runs (a shell one runs in the slot's own thread)."""
    try:
        return parse_handler(handler).kind == "python"
    except HandlerSpecError:
        return False


_COMPACT = json.JSONEncoder(separators=(",", ":"))
"""json.dumps(..., separators=...) builds an encoder at each call (0.8 of its 1.6 µs)."""


def job_environment(job: ClaimedJob, worker_name: str) -> dict[str, str]:
    """What a handler's process sees of its job: ``TASKYARD_WORKER``, ``_JOB_ID``,
    ``_ATTEMPT``, ``_ARGS`` and, for a scheduled run, ``_LOGICAL_TIME``."""
    # Compact, as stored: the size a submit checked (core/handlers.py:SHELL_TEXT_MAX).
    args = _COMPACT.encode(job.args)
    env = {"TASKYARD_WORKER": worker_name, "TASKYARD_JOB_ID": str(job.job_id),
           "TASKYARD_ATTEMPT": str(job.attempt), "TASKYARD_ARGS": args}
    if job.logical_time is not None:  # the tick of its schedule it stands for
        env["TASKYARD_LOGICAL_TIME"] = iso(job.logical_time) or ""
    return env
