"""The scheduler daemon: runs the cycle periodically and whenever woken."""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
from collections.abc import Callable

from taskyard.core.durations import duration_text
from taskyard.scheduler.cycle import CycleReport, schedule
from taskyard.scheduler.history import HistoryKeeper
from taskyard.store import Listener, Store
from taskyard.store.transitions.retention import prune

log = logging.getLogger("taskyard.scheduler")
RATE_SLACK = 0.005
"""Seconds past the moment a rate limit reopens that the scheduler wakes (clocks of
the host and the database tick apart)."""
BUSY_RETRY = (0.01, 0.5)
"""Seconds before the scheduler tries again when another process's cycle held the lock:
the first retry, and the most it backs off to (doubling)."""
FROZEN_CHECK = 1.0
"""Seconds the lock must have been found busy, without a cycle of our own between, before
the scheduler looks for a holder frozen in the middle of a pipeline; and between two
looks (Store.end_frozen_cycle_holder: the server's own limit cannot end that one)."""
AGING_PERIOD = 600.0
"""Default anti-starvation aging: +1 priority per 10 minutes a job has waited."""


class SchedulerDaemon:
    """Calls :func:`schedule` every ``interval`` seconds and on submit/completion wake-ups.

    Either trigger alone is enough for correctness (seed 000's hybrid scheduler).
    """

    def __init__(
        self, store: Store, *, interval: float = 1.0, wakeups: bool = True,
        holder: str | None = None, stall_after: float | None = 600.0,
        cancel_stalled: bool = False, retain: float | None = None,
        prune_every: float = 600.0, aging: float | None = AGING_PERIOD,
        on_cycle: Callable[[CycleReport], None] | None = None,
        history_every: float | None = 10.0,
    ) -> None:
        """``aging``: a pending job gains 1 priority per this many seconds waited (None
        turns aging off); ``retain``: prune finished work older than that many seconds;
        ``on_cycle``: called with each cycle's report; ``history_every``: seconds between
        rounds of the history keeper (:class:`HistoryKeeper`; None: none)."""
        self.store = store
        self.interval = interval
        self.wakeups = wakeups
        self.holder = holder or f"{socket.gethostname()}-{os.getpid()}"
        self.stall_after = stall_after
        self.cancel_stalled = cancel_stalled
        self.retain = retain
        self.prune_every = prune_every
        self._last_prune = -1e18
        self.aging = aging
        self._last_aging = -1e18
        self.on_cycle = on_cycle
        self.history = None if history_every is None else HistoryKeeper(
            store, every=history_every)
        self._busy_since: float | None = None
        self._frozen_check = -1e18

    def _maybe_age(self) -> None:
        """Anti-starvation aging, at most every tenth of a period (and every minute)."""
        if self.aging is None or time.monotonic() - self._last_aging < min(60.0, self.aging / 10):
            return
        self._last_aging = time.monotonic()
        try:
            aged = self.store.aging.age_pending(self.aging)
            if aged:
                log.info("event=aged jobs=%d", aged)
        except Exception:
            log.exception("event=aging-failed")

    def _maybe_prune(self) -> None:
        """Retention (``--retain``): prune at most every ``prune_every`` seconds."""
        if self.retain is None or time.monotonic() - self._last_prune < self.prune_every:
            return
        self._last_prune = time.monotonic()
        try:
            report = prune(self.store, self.retain)
            if report.jobs or report.events or report.graphs:
                log.info("event=pruned jobs=%d graphs=%d events=%d", report.jobs,
                         report.graphs, report.events)
        except Exception:
            log.exception("event=prune-failed")

    def _maybe_end_frozen(self) -> None:
        """While the lock has been busy for FROZEN_CHECK seconds or more, at most every
        FROZEN_CHECK seconds: end the session of a holder frozen mid-pipeline."""
        now = time.monotonic()
        if self._busy_since is None:
            self._busy_since = now
        if now - self._busy_since < FROZEN_CHECK or now - self._frozen_check < FROZEN_CHECK:
            return
        self._frozen_check = now
        try:
            ended = self.store.end_frozen_cycle_holder()
        except Exception as exc:  # e.g. no right to signal the holder's backend
            self._frozen_check = now + 60.0  # said once a minute, not at every retry
            log.warning("event=frozen-check-failed error=%s", str(exc).splitlines()[0])
            return
        if ended:
            log.warning("event=frozen-holder-ended sessions=%s busy_s=%.1f",
                        ",".join(map(str, ended)), now - self._busy_since)

    def run(self, stop: threading.Event) -> None:
        """Run until ``stop`` is set."""
        listener = self.store.listener("scheduler") if self.wakeups else None
        log.info("event=scheduler-started holder=%s interval=%s retain=%s", self.holder,
                 self.interval, "off" if self.retain is None else duration_text(self.retain))
        failures = busy = 0
        due_at: float | None = None  # when the next delayed job is due (monotonic clock)
        periodic = True  # the first cycle, and every timer tick, does all the steps
        # A woken cycle reads when the next delayed job is due, even when it does not
        # maintain: what woke it may be a job for later (the transitions that delay a job
        # wake the scheduler). Those that follow a cycle that changed something need not.
        woken = True
        keeper = None if self.history is None else threading.Thread(
            target=self.history.run, args=(stop,), name="history", daemon=True)
        if keeper is not None:
            keeper.start()
        try:
            while not stop.is_set():
                try:
                    report = schedule(self.store, holder=self.holder,
                                      stall_after=self.stall_after,
                                      cancel_stalled=self.cancel_stalled,
                                      maintenance_every=0.0 if periodic else 0.25,
                                      read_delayed=woken)
                    failures = 0
                except Exception:  # the daemon must outlive a database hiccup
                    failures += 1
                    log.exception("event=cycle-failed attempt=%d", failures)
                    stop.wait(min(0.1 * 2**failures, 5.0))
                    continue
                if report is None:
                    # Another process's cycle holds the lock. It may have read before
                    # what woke us committed (a worker that registered, a submit whose
                    # own cycle found the lock busy): look again once it is done, not a
                    # whole interval later. A retry after a tick still does all steps.
                    wait = min(BUSY_RETRY[0] * 2**min(busy, 8), BUSY_RETRY[1], self.interval)
                    busy += 1
                    log.debug("event=cycle-busy retry_in=%.3f", wait)
                    self._maybe_end_frozen()
                    stop.wait(wait)
                    continue
                busy = 0
                self._busy_since = None
                woken = False
                if report.delayed_read:  # what it read of the delayed jobs is the latest
                    due_at = None if report.delayed_wait is None \
                        else time.monotonic() + report.delayed_wait
                if self.on_cycle is not None:
                    self.on_cycle(report)
                if self.history is not None:
                    self.history.observe_cycle(report)
                # Rate-limited by time, not by idleness: a busy system needs them too.
                self._maybe_prune()
                self._maybe_age()
                if report.changed:
                    # Placement alone is the steady state: keep it out of the INFO log.
                    maintenance = (report.expelled or report.timed_out or report.requeued
                                   or report.stalled or report.scheduled or report.awaited)
                    log.log(
                        logging.INFO if maintenance else logging.DEBUG,
                        "event=cycle placed=%d expelled=%d timed_out=%d requeued=%d "
                        "scheduled=%d awaited=%d stalled=%d staged=%d scanned=%d "
                        "held_back=%d ms=%.2f",
                        len(report.placed), len(report.expelled), len(report.timed_out),
                        report.requeued, len(report.scheduled), len(report.awaited),
                        len(report.stalled), report.staged,
                        report.scanned, report.held_back, report.seconds * 1000,
                    )
                    # Something changed: look again at once (more may be placeable) —
                    # with the maintenance again after a staging, which is bounded
                    # (more delayed jobs may be due).
                    periodic = report.staged > 0
                    continue
                # A job held by a rate limit may start before the next periodic cycle:
                # the cycle then places it (the time-driven steps wait for their tick).
                wait = self.interval if report.rate_wait is None \
                    else min(self.interval, report.rate_wait + RATE_SLACK)
                # Nor does a delayed job wait for the tick: the cycle at its due time
                # maintains, and so makes it placeable (and places it).
                timed = False
                if due_at is not None:
                    due = max(0.0, due_at - time.monotonic()) + RATE_SLACK
                    if due < wait:
                        wait, timed = due, True
                woken = self._sleep(listener, stop, wait)
                periodic = (wait >= self.interval or timed) and not woken
        finally:
            if listener is not None:
                listener.close()
            if keeper is not None:
                keeper.join(30.0)
            log.info("event=scheduler-stopped holder=%s", self.holder)

    @staticmethod
    def _sleep(listener: Listener | None, stop: threading.Event, seconds: float) -> bool:
        """Wait ``seconds``, or less: until a wake-up (then True) or ``stop``."""
        if listener is None:
            stop.wait(seconds)
            return False
        deadline = time.monotonic() + seconds
        while not stop.is_set() and time.monotonic() < deadline:
            if listener.wait(min(0.25, deadline - time.monotonic())):
                return True
        return False
