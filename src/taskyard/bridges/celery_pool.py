"""``taskyard celery-pool``: a taskyard worker whose jobs existing Celery workers run.

It registers as a worker of its pools with a capacity and a lease, like ``taskyard
worker``, so placement, locks, capacity, priorities, timeouts and retries stay
taskyard's. Each job placed on it is sent as the Celery task its handler names
(``celery:proj.tasks.add``, swh's ``backend_name``) with the job's args as keyword
arguments and the task id ``taskyard-<job>-<attempt>``: the attempt — the fence —
travels with the task. Starts and ends come back on Celery's event bus
(:mod:`.celery_events`) and are reported with their attempt number through the same
unit of work as a worker's (``report_batch``), so the store refuses the late result
of an attempt that is no longer current. A canceled or timed-out job's task is
revoked (terminated if it runs).

Threads: the pump (reports, picks up placed jobs, sends and revokes tasks: the only
one that talks to Celery's broker for sending), the event receiver, a listener on
the pool's wake-up channel and a heartbeat (the lease; attempts to stop).
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from taskyard.bridges.celery_events import CeleryEvents, Key, task_id
from taskyard.core.handlers import HandlerSpecError, parse_handler
from taskyard.model.records import Assignment, ClaimedJob, Outcome, Started
from taskyard.store import Store, open_store
from taskyard.worker.reports import Placer, report_batch

log = logging.getLogger("taskyard.celery")
SETTLE_AFTER = 5.0
"""Seconds without news after which an attempt's end is looked up in the result
backend (an end the event bus did not bring)."""


@dataclass
class Flight:
    """An attempt sent to Celery and not reported ended yet."""

    task_id: str
    sent_at: float
    started: bool = False


@dataclass
class PoolStats:
    sent: int = 0
    completed: int = 0
    refused: int = 0
    revoked: int = 0
    reports: int = 0
    start_latency: list[float] = field(default_factory=list)


class CeleryPool:
    """Runs the jobs placed on it as Celery tasks of ``app`` (see the module docstring)."""

    def __init__(self, store: Store, app: Any, *, name: str | None = None,
                 pools: Sequence[str] = ("celery",), capacity: int = 16,
                 lease_seconds: float = 15.0, queue: str | None = None,
                 placer: Placer | None = None) -> None:
        self.store = store
        self.app = app
        self.name = name or f"{socket.gethostname()}-celery-{os.getpid()}"
        self.pools = tuple(pools)
        self.capacity = capacity
        self.lease_seconds = lease_seconds
        self.queue = queue
        self.placer = placer
        self.worker_id: int | None = None
        self.stats = PoolStats()
        self.fenced = threading.Event()
        self._lock = threading.Lock()
        self._flights: dict[Key, Flight] = {}
        self._tasks: dict[str, Key] = {}
        """The attempt of each task id in flight."""
        self._started: list[Started] = []
        self._ended: list[Outcome] = []
        self._stopping: list[Key] = []
        self._kick = threading.Event()
        self._woken = threading.Event()
        self._place_first = True
        """Run the cycle in the first report: jobs may wait for a pool like this one."""
        self.events = CeleryEvents(app, self.holds, self._on_start, self._on_end)

    # -- what the event bus reports -------------------------------------------------

    def holds(self, celery_id: str) -> Key | None:
        """The attempt a task of this pool runs (None: not one in flight here)."""
        with self._lock:
            return self._tasks.get(celery_id)

    def in_flight(self, key: Key) -> bool:
        with self._lock:
            return key in self._flights

    def _drop(self, key: Key) -> Flight | None:
        flight = self._flights.pop(key, None)
        if flight is not None:
            self._tasks.pop(flight.task_id, None)
        return flight

    def _on_start(self, started: Started) -> None:
        with self._lock:
            flight = self._flights.get((started.job_id, started.attempt))
            if flight is None or flight.started:
                return
            flight.started = True
            self.stats.start_latency.append(time.monotonic() - flight.sent_at - started.ago)
            self._started.append(started)
        self._kick.set()

    def _on_end(self, outcome: Outcome) -> None:
        with self._lock:
            flight = self._flights.get((outcome.job_id, outcome.attempt))
            if flight is None:
                return
            if not flight.started:  # its start was missed: reported with the end
                flight.started = True
                self._started.append(Started(outcome.job_id, outcome.attempt))
            self._ended.append(outcome)
        self._kick.set()

    # -- the pump ---------------------------------------------------------------------

    def register(self) -> int:
        record = self.store.workers.register(
            self.name, self.pools, self.capacity, lease_seconds=self.lease_seconds,
            hostname=socket.gethostname(), pid=os.getpid())
        self.worker_id = record.id
        log.info("event=celery-pool-started worker=%s id=%s pools=%s capacity=%s", self.name,
                 record.id, ",".join(self.pools), self.capacity)
        return record.id

    def pump(self, *, look: bool = True) -> None:
        """One round: report starts and ends, pick up what is placed here, send it, and
        revoke what is no longer ours."""
        assert self.worker_id is not None
        self._settle()
        with self._lock:
            started, self._started = self._started, []
            ended, self._ended = self._ended, []
            stopping, self._stopping = self._stopping, []
            held = set(self._flights)
        for key in stopping:
            self._revoke(key)
        place = self.placer if ended or self._place_first else None
        if started or ended or place is not None:
            try:
                report = report_batch(self.store, self.worker_id, started, ended,
                                      place=place, fetch=True, known=held)
            except Exception:
                with self._lock:  # reported with the next round
                    self._started[:0] = started
                    self._ended[:0] = ended
                raise
            self.stats.reports += 1
            self._place_first = False
            self._forget(ended, report.accepted)
            assignment = report.assignment
        elif look:
            assignment = self.store.attempts.fetch(self.worker_id, known=held)
        else:
            return
        self._take(assignment, held)

    def _forget(self, ended: Sequence[Outcome], accepted: Sequence[bool]) -> None:
        for outcome, ok in zip(ended, accepted, strict=True):
            with self._lock:
                self._drop((outcome.job_id, outcome.attempt))
            if ok:
                self.stats.completed += 1
            else:
                self.stats.refused += 1
                log.info("event=completion-refused job=%s attempt=%s state=%s",
                         outcome.job_id, outcome.attempt, outcome.state)

    def _take(self, assignment: Assignment, held: set[Key]) -> None:
        if assignment.active is not None:
            for key in held - assignment.active:
                self._revoke(key)  # canceled, timed out, or fenced off
        for job in assignment.jobs:
            self._send(job)

    def _send(self, job: ClaimedJob) -> None:
        key = (job.job_id, job.attempt)
        try:
            spec = parse_handler(job.handler)
        except HandlerSpecError as exc:
            self._refuse(key, str(exc))
            return
        if spec.kind != "celery":
            self._refuse(key, f"handler {job.handler!r} is not a Celery task: a celery-pool "
                              "runs only celery:TASK_NAME handlers")
            return
        celery_id = task_id(*key)
        with self._lock:  # before sending: its start may come back at once
            self._flights[key] = Flight(celery_id, time.monotonic())
            self._tasks[celery_id] = key
        options: dict[str, Any] = {} if self.queue is None else {"queue": self.queue}
        self.app.send_task(spec.target, kwargs=job.args, task_id=celery_id,
                           headers={"taskyard_job_id": job.job_id,
                                    "taskyard_attempt": job.attempt}, **options)
        self.stats.sent += 1
        log.debug("event=sent job=%s attempt=%s task=%s", job.job_id, job.attempt, spec.target)

    def _refuse(self, key: Key, why: str) -> None:
        log.error("event=job-refused job=%s attempt=%s error=%s", key[0], key[1], why)
        with self._lock:
            self._flights[key] = Flight("", time.monotonic(), started=True)
            self._started.append(Started(*key))
            self._ended.append(Outcome(*key, "error", error=why))
        self._kick.set()

    def _revoke(self, key: Key) -> None:
        with self._lock:
            flight = self._drop(key)
        if flight is None or not flight.task_id:
            return
        log.info("event=revoke job=%s attempt=%s task=%s", *key, flight.task_id)
        self.app.control.revoke(flight.task_id, terminate=True)
        self.stats.revoked += 1

    def _settle(self) -> None:
        """Ends the event bus did not bring, read from the result backend."""
        now = time.monotonic()
        with self._lock:
            quiet = [(k, f.task_id) for k, f in self._flights.items()
                     if f.task_id and now - f.sent_at > SETTLE_AFTER]
        for _, celery_id in quiet:
            outcome = self.events.settle(celery_id)
            if outcome is not None:
                self._on_end(outcome)
        with self._lock:
            for key, _ in quiet:
                if key in self._flights:
                    self._flights[key].sent_at = now  # look again later

    # -- the daemon -------------------------------------------------------------------

    def run(self, stop: threading.Event) -> int:
        """Register, then run until ``stop`` (or until fenced: exit code 1)."""
        self.register()
        receiver = threading.Thread(target=self.events.run, name="celery-events", daemon=True)
        receiver.start()
        if not self.events.ready.wait(30):
            log.warning("event=celery-events-silent worker=%s: no event from any Celery worker "
                        "yet (are workers running on this broker?); ends are read from the "
                        "result backend meanwhile", self.name)
        threads = [threading.Thread(target=self._heartbeat, args=(stop,), daemon=True),
                   threading.Thread(target=self._listen, args=(stop,), daemon=True)]
        for thread in threads:
            thread.start()
        failures = 0
        looked = 0.0
        try:
            while not stop.is_set() and not self.fenced.is_set():
                self._kick.wait(0.5)
                self._kick.clear()
                now = time.monotonic()
                look = self._woken.is_set() or now - looked >= 1.0
                self._woken.clear()
                try:
                    self.pump(look=look)
                    looked = now if look else looked
                    failures = 0
                except Exception as exc:
                    failures += 1
                    log.error("event=pump-failed worker=%s error=%s: %s", self.name,
                              type(exc).__name__, " ".join(str(exc).split())[:200])
                    stop.wait(min(0.05 * 2 ** failures, 2.0))
        finally:
            stop.set()
            self._shutdown()
            self.events.stop()
            for thread in [*threads, receiver]:
                thread.join(10)
        return 1 if self.fenced.is_set() else 0

    def _shutdown(self) -> None:
        """Report what ended, revoke the rest and (unless fenced) leave: the jobs are
        requeued at once (seed 001's suspend on SIGTERM)."""
        assert self.worker_id is not None
        try:
            self.pump(look=False)
        except Exception as exc:
            log.error("event=flush-failed worker=%s error=%s", self.name, exc)
        for key in list(self._flights):
            self._revoke(key)
        if not self.fenced.is_set():
            try:
                suspended = self.store.workers.stop(self.worker_id)
                log.info("event=celery-pool-stopping worker=%s suspended=%d", self.name,
                         suspended)
            except Exception:
                log.exception("event=stop-failed worker=%s (lease expiry will requeue)",
                              self.name)
        log.info("event=celery-pool-stopped worker=%s sent=%d completed=%d refused=%d "
                 "revoked=%d", self.name, self.stats.sent, self.stats.completed,
                 self.stats.refused, self.stats.revoked)

    def _heartbeat(self, stop: threading.Event) -> None:
        assert self.worker_id is not None
        every = max(0.2, self.lease_seconds / 5)
        while not stop.wait(every):
            try:
                with self._lock:
                    held = list(self._flights)
                status = self.store.workers.renew_lease(self.worker_id, self.lease_seconds,
                                                        held)
            except Exception as exc:
                log.error("event=heartbeat-failed worker=%s error=%s", self.name, exc)
                continue
            if not status.renewed:
                log.error("event=expelled worker=%s", self.name)
                self.fenced.set()
                self._kick.set()
                return
            if status.stop:
                with self._lock:
                    self._stopping += status.stop
                self._kick.set()

    def _listen(self, stop: threading.Event) -> None:
        assert self.worker_id is not None
        listener = self.store.listener(f"worker.{self.worker_id}")
        try:
            while not stop.is_set():
                try:
                    if listener.wait(0.5):
                        self._woken.set()
                        self._kick.set()
                except Exception as exc:  # a listener that failed reconnects on next wait
                    log.error("event=listen-failed worker=%s error=%s", self.name, exc)
                    stop.wait(0.5)
        finally:
            listener.close()


def celery_app(broker: str, result_backend: str | None) -> Any:
    """A Celery app that only sends tasks and follows events (no task of its own)."""
    from celery import Celery  # noqa: PLC0415 - the optional extra

    app = Celery("taskyard-celery-pool", broker=broker, backend=result_backend,
                 set_as_current=False)
    app.conf.broker_connection_retry_on_startup = True
    return app


def main_celery_pool(url: str, broker: str, stop: threading.Event, *,
                     result_backend: str | None, name: str | None, pools: Sequence[str],
                     capacity: int, lease_seconds: float, queue: str | None,
                     placer: Placer | None) -> int:
    """Run a celery-pool until ``stop`` (or until fenced: 1); used by ``taskyard
    celery-pool``."""
    store = open_store(url)
    try:
        pool = CeleryPool(store, celery_app(broker, result_backend), name=name, pools=pools,
                          capacity=capacity, lease_seconds=lease_seconds, queue=queue,
                          placer=placer)
        return pool.run(stop)
    finally:
        store.close()
