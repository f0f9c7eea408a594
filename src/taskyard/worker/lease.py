"""A registered worker's lease, whatever its executor runs: kept, watched, given up.

Two threads. The heartbeat renews the lease on the database's clock and stops the
attempts the store says are no longer ours (canceled, timed out, fenced off). The
watchdog fences the worker itself when the lease has not been renewed for two thirds
of its length — the database unreachable or hanging: it stops every attempt, with a
grace short enough that none runs unowned once the lease expires, and asks the loop to
stop. An expelled worker (a renewal refused) is fenced alike.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from taskyard.store import Store
from taskyard.worker.executors import ABANDONED, Executor

log = logging.getLogger("taskyard.worker")


class Lease:
    """The lease of worker ``worker_id`` (see the module docstring)."""

    def __init__(self, store: Store, executor: Executor, *, name: str, seconds: float,
                 heartbeat_every: float, wake: Callable[[], None]) -> None:
        """``wake``: wakes the loop (it waits on its own event, not on ``stop``)."""
        self.store = store
        self.executor = executor
        self.name = name
        self.seconds = seconds
        self.heartbeat_every = heartbeat_every
        self.wake = wake
        self.worker_id: int | None = None
        self.fenced = threading.Event()
        self.leaving = threading.Event()
        """Set once the worker leaves: the heartbeat keeps the lease until then."""
        # Monotonic time until which the lease surely holds: the lease runs from the
        # database's clock at renewal, which is after we sent the request.
        self.until = time.monotonic() + seconds

    def granted(self, worker_id: int) -> None:
        """The worker registered as ``worker_id``: its lease runs from now."""
        self.worker_id = worker_id
        self.until = time.monotonic() + self.seconds - 0.1

    def threads(self, stop: threading.Event) -> list[threading.Thread]:
        """The heartbeat and the watchdog, not started; both end with ``stop``."""
        return [threading.Thread(target=self.heartbeat, args=(stop,), daemon=True),
                threading.Thread(target=self.watch, args=(stop,), daemon=True)]

    def heartbeat(self, stop: threading.Event) -> None:
        """Renew the lease until the worker has left (through its shutdown: its jobs
        stay its own until it hands them back), or is fenced."""
        assert self.worker_id is not None
        while not self.leaving.wait(self.heartbeat_every) and not self.fenced.is_set():
            sent = time.monotonic()
            try:
                status = self.store.workers.renew_lease(self.worker_id, self.seconds,
                                                        self.executor.running())
            except Exception as exc:
                log.error("event=heartbeat-failed worker=%s error=%s", self.name,
                          " ".join(str(exc).split())[:200])
                continue
            if status.renewed:
                self.until = sent + self.seconds
            if not status.renewed and self.leaving.is_set():
                return  # stop_worker ended the lease while this renewal was in flight
            if not status.renewed:
                log.error("event=expelled worker=%s", self.name)
                self.fence(stop)
                return
            for job_id, attempt in status.stop:
                if self.executor.stop(job_id, attempt):
                    log.info("event=stop-attempt job=%s attempt=%s", job_id, attempt)

    def watch(self, stop: threading.Event) -> None:
        """Self-fencing: stop every attempt while the lease still holds, if it cannot be
        renewed in time (a hanging call is caught too: this thread never blocks)."""
        margin = self.seconds / 3
        # It wakes when the lease would run short (each renewal moves that on), not in
        # slices: looking 10 times a second cost an idle fleet of 200 workers 2,000
        # wake-ups a second.
        while not stop.wait(max(0.01, self.until - margin - time.monotonic())):
            if time.monotonic() >= self.until - margin:
                log.error("event=self-fenced worker=%s reason=lease-not-renewed", self.name)
                self.fence(stop)
                break
        # The loop waits on its own event, not on ``stop`` (which a signal sets): wake
        # it now, or the worker would leave only at its next look, up to 0.5 s later.
        self.wake()

    def fence(self, stop: threading.Event) -> None:
        """Give the lease up: every attempt stopped (handlers gone before the lease
        expires: a short grace, then killed), and the loop told to stop."""
        self.fenced.set()
        self.executor.stop_all(ABANDONED, grace=self.seconds / 6)
        stop.set()
        self.wake()
