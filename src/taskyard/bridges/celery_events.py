"""What Celery says about the tasks a celery-pool sent: swh's listener, on the event bus.

Celery workers announce ``task-started``, ``task-succeeded``, ``task-failed`` and
``task-revoked`` on the broker's event exchange (the pool asks them to with
``enable_events``, as Celery's own monitors do). The task id names the job, the
attempt and the send (``taskyard-<job>-<attempt>-<nonce>``: job ids start again in
another database sharing the broker); events of tasks this pool did not send are
ignored. A result is read
from the result backend when there is one (the event carries only its ``repr``).
Events are not stored by the broker: what a pool misses while disconnected it reads
from the result backend instead (:meth:`CeleryEvents.settle`).
"""

from __future__ import annotations

import json
import logging
import re
import secrets
import threading
import time
from collections.abc import Callable
from typing import Any

from taskyard.model.records import JSON, Outcome, Started

log = logging.getLogger("taskyard.celery")
Key = tuple[int, int]
_TASK_ID = re.compile(r"^taskyard-(\d+)-(\d+)-[0-9a-f]+$")


def task_id(job_id: int, attempt: int) -> str:
    """A new Celery task id for an attempt: the attempt (the fence) travels with the task."""
    return f"taskyard-{job_id}-{attempt}-{secrets.token_hex(4)}"


def attempt_of(celery_id: str) -> Key | None:
    """(job, attempt) of a task id :func:`task_id` made; None for any other task."""
    match = _TASK_ID.match(celery_id or "")
    return (int(match[1]), int(match[2])) if match else None


def _json(value: Any) -> JSON:
    """A result taskyard can store: JSON as it is, anything else as its text."""
    try:
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError):
        return str(value)
    return value


class CeleryEvents:
    """The event bus of ``app``, followed in a thread: starts and ends of the tasks whose
    attempt ``holds(task id)`` gives (None: not this pool's), handed to ``on_start`` /
    ``on_end``."""

    def __init__(self, app: Any, holds: Callable[[str], Key | None],
                 on_start: Callable[[Started], None], on_end: Callable[[Outcome], None]) -> None:
        self.app = app
        self.holds = holds
        self.on_start = on_start
        self.on_end = on_end
        self.has_results = not type(app.backend).__name__.startswith("Disabled")
        self._receiver: Any = None
        self._stop = threading.Event()
        self.ready = threading.Event()
        """Set once an event came in: the bus is followed (tasks sent before may have
        started unseen)."""

    def run(self) -> None:
        """Follow the bus until :meth:`stop`, reconnecting after a failure."""
        failures = 0
        while not self._stop.is_set():
            try:
                with self.app.connection_for_read() as conn:
                    self._receiver = self.app.events.Receiver(conn, handlers={
                        "task-started": self._started, "task-succeeded": self._succeeded,
                        "task-failed": self._failed, "task-revoked": self._revoked,
                        "task-rejected": self._rejected, "*": self._other})
                    if self._stop.is_set():
                        return
                    # Ask the workers to send task events (they may run without -E).
                    self.app.control.enable_events()
                    # wakeup: the workers answer with a heartbeat event, which sets ready.
                    self._receiver.capture(limit=None, timeout=None, wakeup=True)
                    failures = 0
            except Exception as exc:
                failures += 1
                log.warning("event=celery-events-failed error=%s: %s", type(exc).__name__,
                            " ".join(str(exc).split())[:200])
                self._stop.wait(min(0.2 * 2 ** failures, 5.0))

    def stop(self) -> None:
        self._stop.set()
        if self._receiver is not None:
            self._receiver.should_stop = True

    def _key(self, event: dict[str, Any]) -> Key | None:
        self.ready.set()
        return self.holds(str(event.get("uuid", "")))

    def _other(self, _event: dict[str, Any]) -> None:
        self.ready.set()

    def _started(self, event: dict[str, Any]) -> None:
        key = self._key(event)
        if key is not None:
            ago = max(0.0, time.time() - float(event.get("timestamp") or time.time()))
            self.on_start(Started(*key, min(ago, 60.0)))

    def _succeeded(self, event: dict[str, Any]) -> None:
        key = self._key(event)
        if key is not None:
            result = (self._result(str(event["uuid"])) if self.has_results
                      else event.get("result"))
            self.on_end(Outcome(*key, "succeeded", 0, result))

    def _failed(self, event: dict[str, Any]) -> None:
        key = self._key(event)
        if key is not None:
            self.on_end(Outcome(*key, "failed", error=str(event.get("exception") or ""),
                                stderr_tail=str(event.get("traceback") or "")[-8192:]))

    def _revoked(self, event: dict[str, Any]) -> None:
        key = self._key(event)
        if key is not None:
            self.on_end(Outcome(*key, "canceled", error="revoked in Celery"))

    def _rejected(self, event: dict[str, Any]) -> None:
        key = self._key(event)
        if key is not None:
            self.on_end(Outcome(*key, "error", error="rejected by the Celery worker"))

    def _result(self, celery_id: str) -> JSON:
        return _json(self.app.AsyncResult(celery_id).result)

    def settle(self, celery_id: str) -> Outcome | None:
        """The end of a task read from the result backend (None: not ended, no backend,
        or not a task of ours): for the ends the bus did not bring."""
        key = attempt_of(celery_id)
        if not self.has_results or key is None:
            return None
        result = self.app.AsyncResult(celery_id)
        state = result.state
        if state == "SUCCESS":
            return Outcome(*key, "succeeded", 0, _json(result.result))
        if state == "FAILURE":
            return Outcome(*key, "failed", error=repr(result.result),
                           stderr_tail=str(result.traceback or "")[-8192:])
        if state == "REVOKED":
            return Outcome(*key, "canceled", error="revoked in Celery")
        return None
