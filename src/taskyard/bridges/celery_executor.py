"""Runs the jobs placed on a celery-pool as Celery tasks: the
:class:`~taskyard.worker.executors.Executor` of ``taskyard celery-pool``.

Each attempt is sent as the Celery task its handler names (``celery:proj.tasks.add``,
swh's ``backend_name``) with the job's args as keyword arguments and a task id that
carries the attempt — the fence (:func:`~taskyard.bridges.celery_events.task_id`).
Starts and ends come back from Celery's event bus (:mod:`.celery_events`), or, for an
end the bus did not bring, from the result backend. Stopping an attempt revokes its
task (terminated if it runs). The worker's loop
(:class:`~taskyard.worker.daemon.WorkerDaemon`) does the rest, as for a worker: the
lease, the reports, self-fencing, the stop path.

Threads: the sender (the only one that talks to the broker to send and revoke, in
order), the event receiver, and the settler (result-backend lookups).
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Any

from taskyard.bridges.celery_events import CeleryEvents, Key, task_id
from taskyard.core.handlers import HandlerSpecError, parse_handler
from taskyard.model.records import ClaimedJob, Outcome, Started
from taskyard.worker.executors import Hooks
from taskyard.worker.tracing import AttemptSpans

log = logging.getLogger("taskyard.celery")
SETTLE_AFTER = 5.0
"""Seconds without news after which an attempt's end is looked up in the result
backend (an end the event bus did not bring)."""
EVENTS_WAIT = 30.0
"""Seconds the first task waits for a first event from the bus (a task sent before the
bus is followed may start unseen)."""


@dataclass
class Flight:
    """An attempt held by the executor (from submit until the loop releases it)."""

    task_id: str
    """The Celery task's id ("" for a job refused before it was sent)."""
    target: str
    checked_at: float
    """Monotonic time it was sent, or last looked up in the result backend."""
    started_at: float | None = None
    ended: bool = False


@dataclass
class CeleryStats:
    sent: int = 0
    revoked: int = 0


Order = tuple[str, str, ClaimedJob | None]
"""For the sender: ("send", task id, the job) or ("revoke", task id, None)."""


class CeleryExecutor:
    """Attempts as Celery tasks of ``app`` (see the module docstring)."""

    def __init__(self, app: Any, hooks: Hooks, *, queue_name: str | None = None,
                 worker_name: str = "", settle_after: float = SETTLE_AFTER) -> None:
        """``queue_name``: the Celery queue tasks are sent to (None: Celery's routing)."""
        self.app = app
        self.spans = AttemptSpans(lambda: self.worker_name)  # ends with the task's outcome
        self.hooks = replace(hooks, on_done=self.spans.ending(hooks.on_done))
        self.queue_name = queue_name
        self.worker_name = worker_name
        self.settle_after = settle_after
        self.stats = CeleryStats()
        self._lock = threading.Lock()
        self._flights: dict[Key, Flight] = {}
        self._tasks: dict[str, Key] = {}
        """The attempt of each task id held."""
        self._started: list[tuple[int, int, float]] = []
        self._refusing = False
        self._closing = threading.Event()
        self._orders: queue.SimpleQueue[Order | None] = queue.SimpleQueue()
        self.events = CeleryEvents(app, self._holds, self._on_start, self._on_end)
        self._threads = [
            threading.Thread(target=self._send_orders, name="celery-sender", daemon=True),
            threading.Thread(target=self.events.run, name="celery-events", daemon=True),
            threading.Thread(target=self._settle, name="celery-settler", daemon=True)]
        for thread in self._threads:
            thread.start()

    # -- what the loop asks -----------------------------------------------------------

    def submit(self, jobs: Iterable[ClaimedJob]) -> None:
        refused: list[Outcome] = []
        with self._lock:
            if self._refusing:
                return
            now = time.monotonic()
            for job in jobs:
                key = (job.job_id, job.attempt)
                if key in self._flights:
                    continue
                why = self._refusal(job)
                if why is not None:  # started and ended at once: reported as an error
                    log.error("event=job-refused job=%s attempt=%s error=%s", *key, why)
                    self._flights[key] = Flight("", "", now, now, ended=True)
                    self._started.append((*key, now))
                    refused.append(Outcome(*key, "error", error=why))
                    continue
                celery_id = task_id(*key)
                # Held before it is sent: its start may come back at once.
                self._flights[key] = Flight(celery_id, parse_handler(job.handler).target, now)
                self._tasks[celery_id] = key
                self._orders.put(("send", celery_id, job))
        for outcome in refused:
            self.hooks.on_start()
            self.hooks.on_done(outcome, 0.0)

    @staticmethod
    def _refusal(job: ClaimedJob) -> str | None:
        try:
            spec = parse_handler(job.handler)
        except HandlerSpecError as exc:
            return str(exc)
        if spec.kind != "celery":
            return (f"handler {job.handler!r} is not a Celery task: a celery-pool runs only "
                    "celery:TASK_NAME handlers")
        return None

    def stop(self, job_id: int, attempt: int, *, state: str = "canceled") -> bool:
        with self._lock:
            if (job_id, attempt) not in self._flights:
                return False
            ended = self._end_flight((job_id, attempt), state)
        if ended is not None:
            self.hooks.on_done(*ended)
        return True

    def stop_all(self, state: str = "error", *, grace: float | None = None) -> None:
        # No grace to give: Celery terminates a revoked task at once (best effort).
        with self._lock:
            self._refusing = True
            ended = [self._end_flight(key, state) for key in list(self._flights)]
        for item in ended:
            if item is not None:
                self.hooks.on_done(*item)

    def _end_flight(self, key: Key, state: str) -> tuple[Outcome, float] | None:
        """Revoke the attempt's task; its outcome (``state``) if it had started. A task
        that had not started is dropped: it never ran, nothing to report. Lock held."""
        flight = self._flights[key]
        if flight.ended:
            return None
        flight.ended = True
        if flight.task_id:
            self._orders.put(("revoke", flight.task_id, None))
        if flight.started_at is None:
            self._drop(key)
            return None
        seconds = time.monotonic() - flight.started_at
        return Outcome(*key, state, error="revoked in Celery"), seconds

    def release(self, keys: Iterable[Key]) -> None:
        with self._lock:
            for key in keys:
                self._drop(key)

    def _drop(self, key: Key) -> None:
        flight = self._flights.pop(key, None)
        if flight is not None:
            self._tasks.pop(flight.task_id, None)

    def take_started(self) -> list[tuple[int, int, float]]:
        with self._lock:
            started, self._started = self._started, []
        return started

    def running(self) -> list[Key]:
        with self._lock:
            return list(self._flights)

    def busy(self) -> int:
        with self._lock:
            return len(self._flights)

    def queued(self) -> int:
        with self._lock:
            return sum(1 for f in self._flights.values()
                       if f.started_at is None and not f.ended)

    def shutdown(self, *, kill: bool = False, timeout: float = 10.0) -> None:
        """Send the revokes ordered so far, then stop the threads."""
        if kill:
            self.stop_all("error")
        self._orders.put(None)
        self._closing.set()
        self.events.stop()
        deadline = time.monotonic() + timeout
        for thread in self._threads:
            thread.join(max(0.0, deadline - time.monotonic()))

    # -- what Celery says ---------------------------------------------------------------

    def _holds(self, celery_id: str) -> Key | None:
        """The attempt a task runs, while it may still end here (None: not ours)."""
        with self._lock:
            key = self._tasks.get(celery_id)
            return key if key is not None and not self._flights[key].ended else None

    def _on_start(self, started: Started) -> None:
        with self._lock:
            flight = self._flights.get((started.job_id, started.attempt))
            if flight is None or flight.ended or flight.started_at is not None:
                return
            flight.started_at = time.monotonic() - started.ago
            self._started.append((started.job_id, started.attempt, flight.started_at))
        self.hooks.on_start()

    def _on_end(self, outcome: Outcome) -> None:
        key = (outcome.job_id, outcome.attempt)
        with self._lock:
            flight = self._flights.get(key)
            if flight is None or flight.ended:
                return  # not ours, or stopped already (its end was handed in then)
            now = time.monotonic()
            missed = flight.started_at is None
            if flight.started_at is None:  # its start was missed: reported with the end
                flight.started_at = now
                self._started.append((*key, now))
            flight.ended = True
            seconds = now - flight.started_at
        if missed:
            self.hooks.on_start()
        self.hooks.on_done(outcome, seconds)

    # -- threads ------------------------------------------------------------------------

    def _send_orders(self) -> None:
        self._await_events()
        while (order := self._orders.get()) is not None:
            what, celery_id, job = order
            try:
                if job is not None:
                    self._send(celery_id, job)
                else:
                    log.info("event=revoke task=%s", celery_id)
                    self.app.control.revoke(celery_id, terminate=True)
                    self.stats.revoked += 1
            except Exception as exc:
                log.error("event=celery-%s-failed task=%s error=%s: %s", what, celery_id,
                          type(exc).__name__, " ".join(str(exc).split())[:200])
                if job is not None:  # never sent: the attempt ends in error
                    self._on_end(Outcome(job.job_id, job.attempt, "error",
                                         error=f"could not send the Celery task: {exc}"))

    def _await_events(self) -> None:
        """Wait (at most :data:`EVENTS_WAIT`) until the event bus is followed."""
        deadline = time.monotonic() + EVENTS_WAIT
        while not self.events.ready.wait(0.1):
            if self._closing.is_set():
                return
            if time.monotonic() > deadline:
                log.warning("event=celery-events-silent worker=%s: no event from any Celery "
                            "worker yet (are workers running on this broker?); ends are read "
                            "from the result backend meanwhile", self.worker_name)
                return

    def _send(self, celery_id: str, job: ClaimedJob) -> None:
        with self._lock:
            flight = self._flights.get((job.job_id, job.attempt))
            if flight is None or flight.ended:
                return  # stopped before it was sent
            target = flight.target
        options: dict[str, Any] = {} if self.queue_name is None else {"queue": self.queue_name}
        # The task carries its attempt span's context (W3C ``traceparent``, where Celery's
        # OpenTelemetry instrumentation reads it: the message's headers).
        self.app.send_task(target, kwargs=job.args, task_id=celery_id,
                           headers={"taskyard_job_id": job.job_id,
                                    "taskyard_attempt": job.attempt,
                                    **self.spans.start(job)}, **options)
        self.stats.sent += 1
        log.debug("event=sent job=%s attempt=%s task=%s", job.job_id, job.attempt, target)

    def _settle(self) -> None:
        """Ends the event bus did not bring, read from the result backend."""
        while not self._closing.wait(min(1.0, self.settle_after / 5)):
            now = time.monotonic()
            with self._lock:
                quiet = [f for f in self._flights.values() if f.task_id and not f.ended
                         and now - f.checked_at > self.settle_after]
                for flight in quiet:
                    flight.checked_at = now  # looked up now: again later if not ended
            for flight in quiet:
                try:
                    outcome = self.events.settle(flight.task_id)
                except Exception as exc:
                    log.warning("event=celery-settle-failed task=%s error=%s",
                                flight.task_id, " ".join(str(exc).split())[:200])
                    continue
                if outcome is not None:
                    self._on_end(outcome)
