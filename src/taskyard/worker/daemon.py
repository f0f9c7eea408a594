"""The worker daemon: lease, claims, execution, batched completions, clean stop.

Threads: the main loop (wake-up → claim → start), a heartbeat (renews the
lease; stops attempts the store says are canceled or fenced), a lease watchdog
(self-fencing: when the lease has not been renewed for two thirds of its
length — database unreachable or hanging — it kills every child, so that no
job runs unowned once the lease expires), and a completer that reports
outcomes in batches (one transaction each: group commit).
"""

from __future__ import annotations

import logging
import os
import queue
import signal
import socket
import threading
import time
from collections.abc import Callable, Sequence
from types import FrameType

from taskyard.core.stages import StageReport
from taskyard.store import Store, open_store
from taskyard.store.errors import Conflict, InvalidInput
from taskyard.store.records import Outcome
from taskyard.worker.executor import Executor

log = logging.getLogger("taskyard.worker")
BATCH = 500
ABANDONED = "abandoned"
"""Stop state of the attempts a fenced worker kills. Their outcomes are not reported:
the worker gave its lease up, so they end as a lost worker's do (lease expiry, then the
scheduler requeues them). Reported as errors, they would be accepted if the database
came back before the lease ran out, failing jobs for a hiccup of the database."""


class WorkerDaemon:
    def __init__(
        self, store: Store, *, name: str | None = None, pools: Sequence[str] = ("default",),
        capacity: int | None = None, lease_seconds: float = 15.0,
        heartbeat_every: float | None = None, kill_grace: float = 5.0,
        after_complete: Callable[[], object] | None = None,
    ) -> None:
        """``after_complete`` runs after each batch of completions is committed: the
        CLI passes the scheduling cycle, so freed capacity is refilled at once
        (seed 000 runs schedule() on job completion) instead of after a wake-up."""
        self.store = store
        self.name = name or f"{socket.gethostname()}-{os.getpid()}"
        self.pools = tuple(pools)
        self.capacity = capacity if capacity is not None else (os.cpu_count() or 1)
        self.lease_seconds = lease_seconds
        self.heartbeat_every = heartbeat_every or max(0.2, lease_seconds / 5)
        self._outcomes: queue.SimpleQueue[Outcome | None] = queue.SimpleQueue()
        self.executor = Executor(self.capacity, on_done=self._outcomes.put,
                                 on_stage=self._report_stage, kill_grace=kill_grace,
                                 env={"TASKYARD_WORKER": self.name})
        self.worker_id: int | None = None
        self.after_complete = after_complete
        self._fenced = threading.Event()
        self._draining = threading.Event()
        # Monotonic time until which our lease surely holds: the lease runs from the
        # database's clock at renewal, which is after we sent the request.
        self._lease_until = time.monotonic() + lease_seconds
        self.stats = {"claimed": 0, "completed": 0, "refused": 0}

    def run(self, stop: threading.Event) -> None:
        """Serve until ``stop`` is set (or the lease is lost), then leave cleanly."""
        record = self.store.register_worker(
            self.name, self.pools, self.capacity, lease_seconds=self.lease_seconds,
            hostname=socket.gethostname(), pid=os.getpid(),
        )
        self.worker_id = record.id
        self._lease_until = time.monotonic() + self.lease_seconds - 0.1
        log.info("event=worker-started worker=%s id=%s pools=%s capacity=%s", self.name,
                 record.id, ",".join(self.pools), self.capacity)
        listener = self.store.listener(f"worker.{record.id}")
        threads = [threading.Thread(target=self._heartbeat, args=(stop,), daemon=True),
                   threading.Thread(target=self._watch_lease, args=(stop,), daemon=True),
                   threading.Thread(target=self._complete, daemon=True)]
        for thread in threads:
            thread.start()
        try:
            while not stop.is_set() and not self._fenced.is_set():
                free = self.capacity - self.executor.busy()
                if free > 0:
                    try:
                        for job in self.store.claim_dispatched(record.id, free):
                            self.stats["claimed"] += 1
                            self.executor.start(job)
                    except Exception:
                        log.exception("event=claim-failed worker=%s", self.name)
                        stop.wait(0.5)
                listener.wait(0.5)
        finally:
            listener.close()
            self._shutdown(stop)
            for thread in threads:
                thread.join(10)

    def _shutdown(self, stop: threading.Event) -> None:
        stop.set()
        assert self.worker_id is not None
        if not self._fenced.is_set():
            # Seed 001: on SIGTERM suspend our jobs so they are requeued at once.
            # Leave first, then kill: a killed child's outcome is then refused.
            try:
                suspended = self.store.stop_worker(self.worker_id)
                log.info("event=worker-stopping worker=%s suspended=%d", self.name, suspended)
            except Exception:
                log.exception("event=stop-failed worker=%s (lease expiry will requeue)",
                              self.name)
        self._draining.set()
        if self._fenced.is_set():
            # Again: a job claimed while the fence went up was not marked yet.
            self.executor.stop_all(ABANDONED)
        self.executor.shutdown(kill=not self._fenced.is_set())
        self._outcomes.put(None)
        log.info("event=worker-stopped worker=%s claimed=%d completed=%d refused=%d",
                 self.name, self.stats["claimed"], self.stats["completed"],
                 self.stats["refused"])

    def _report_stage(self, job_id: int, attempt: int, report: StageReport) -> bool:
        """Record a stage (fenced); a refusal stops the attempt. A database error is not a
        refusal: the stage is then not recorded and a later attempt runs it again."""
        assert self.worker_id is not None
        try:
            return self.store.report_stage(self.worker_id, job_id, attempt, report.name,
                                           report.state, result=report.result)
        except InvalidInput as exc:
            log.warning("event=stage-invalid job=%s attempt=%s error=%s", job_id, attempt, exc)
            return True
        except Exception as exc:
            log.error("event=stage-report-failed job=%s attempt=%s error=%s", job_id, attempt,
                      " ".join(str(exc).split())[:200])
            return True

    def _heartbeat(self, stop: threading.Event) -> None:
        assert self.worker_id is not None
        while not stop.wait(self.heartbeat_every):
            sent = time.monotonic()
            try:
                status = self.store.renew_lease(self.worker_id, self.lease_seconds,
                                                self.executor.running())
            except Exception as exc:
                log.error("event=heartbeat-failed worker=%s error=%s", self.name,
                          " ".join(str(exc).split())[:200])
                continue
            if status.renewed:
                self._lease_until = sent + self.lease_seconds
            if not status.renewed:
                log.error("event=expelled worker=%s", self.name)
                self._fence(stop)
                return
            for job_id, attempt in status.stop:
                log.info("event=stop-attempt job=%s attempt=%s", job_id, attempt)
                self.executor.stop(job_id, attempt)

    def _watch_lease(self, stop: threading.Event) -> None:
        """Self-fencing: kill the children while the lease still holds, if it cannot be
        renewed in time (a hanging call is caught too: this thread never blocks)."""
        margin = self.lease_seconds / 3
        while not stop.wait(min(0.1, self.heartbeat_every)):
            if time.monotonic() >= self._lease_until - margin:
                log.error("event=self-fenced worker=%s reason=lease-not-renewed", self.name)
                self._fence(stop)
                return

    def _fence(self, stop: threading.Event) -> None:
        self._fenced.set()
        # Children must be gone before the lease expires: a short grace then SIGKILL.
        self.executor.kill_grace = min(self.executor.kill_grace, self.lease_seconds / 6)
        self.executor.stop_all(ABANDONED)
        stop.set()

    def _complete(self) -> None:
        assert self.worker_id is not None
        done = False
        while not done:
            first = self._outcomes.get()
            batch = [] if first is None else [first]
            done = first is None
            while len(batch) < BATCH:
                try:
                    more = self._outcomes.get_nowait()
                except queue.Empty:
                    break
                if more is None:
                    done = True
                    break
                batch.append(more)
            given_up = [o for o in batch if o.state == ABANDONED]
            if given_up:
                log.warning("event=abandoned worker=%s jobs=%s (requeued once the lease "
                            "runs out)", self.name, ",".join(str(o.job_id) for o in given_up))
                batch = [o for o in batch if o.state != ABANDONED]
            if batch:
                self._report(batch)

    def _report(self, batch: list[Outcome]) -> None:
        assert self.worker_id is not None
        delay = 0.05
        for _ in range(20):
            try:
                accepted = self.store.complete_attempts(self.worker_id, batch)
                break
            except Exception:
                log.exception("event=complete-failed worker=%s jobs=%d", self.name, len(batch))
                time.sleep(delay)
                delay = min(delay * 2, 2.0)
        else:
            log.error("event=outcomes-dropped worker=%s jobs=%d (the lease will requeue them)",
                      self.name, len(batch))
            return
        if self.after_complete is not None and any(accepted) and not self._draining.is_set():
            try:
                self.after_complete()
            except Exception:  # the scheduler daemon's periodic cycle covers for it
                log.exception("event=inline-cycle-failed worker=%s", self.name)
        for outcome, ok in zip(batch, accepted, strict=True):
            if ok:
                self.stats["completed"] += 1
            else:
                self.stats["refused"] += 1
                log.info("event=completion-refused job=%s attempt=%s state=%s",
                         outcome.job_id, outcome.attempt, outcome.state)


def main_worker(url: str, *, name: str | None, pools: Sequence[str], capacity: int | None,
                lease_seconds: float = 15.0,
                after_complete: Callable[[Store], object] | None = None) -> int:
    """Run a worker until SIGTERM/SIGINT; used by ``taskyard worker``."""
    stop = threading.Event()

    def on_signal(signum: int, _frame: FrameType | None) -> None:
        log.info("event=signal signal=%s", signal.Signals(signum).name)
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    store = open_store(url)
    try:
        daemon = WorkerDaemon(
            store, name=name, pools=pools, capacity=capacity, lease_seconds=lease_seconds,
            after_complete=None if after_complete is None else (lambda: after_complete(store)),
        )
        try:
            daemon.run(stop)
        except Conflict:
            # A live worker holds that name (e.g. one killed moments ago whose lease
            # has not run out): join under a name of our own instead of failing.
            daemon.name = f"{daemon.name}-{os.getpid()}"
            daemon.executor.env["TASKYARD_WORKER"] = daemon.name
            log.warning("event=name-taken worker=%s", daemon.name)
            daemon.run(stop)
        return 1 if daemon._fenced.is_set() else 0
    finally:
        store.close()
