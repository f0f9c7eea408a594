"""The scheduler's history keeper: a thread beside the cycle that keeps the history
rollups current (the event log folded in, the queue depth sampled, old buckets
forgotten) and adds the durations of the cycles this process ran to the histogram every
process shares — so that the charts and ``/metrics`` read stored history, the same on
every server, without Prometheus."""

from __future__ import annotations

import bisect
import logging
import threading
import time

from taskyard.scheduler.cycle import CycleReport
from taskyard.store import Store
from taskyard.store.transitions.history import add_durations, roll_up, sample_depth

log = logging.getLogger("taskyard.scheduler")
CYCLE_BOUNDS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5)
"""Upper bounds (seconds) of the scheduling cycles' histogram buckets."""
CYCLE_DURATIONS = "cycle_duration"
"""Its name among the shared histograms."""
SLICE = 250
"""Events folded per transaction. The fold is Python (about 20 µs of CPU an event):
10 seconds of 200 jobs/s (6,000 events) folded at once held the GIL for 55-110 ms,
and the cycle thread beside it, which needs the GIL back after each of its round
trips, waited up to the switch interval (5 ms) each time: its cycles took up to
18-23 ms instead of 0.5 (bench.history --beside-cycles), 43-58 ms in a fleet of 200
workers (bench.fleet)."""
REST = 1.0
"""After each slice the keeper rests this many times as long as the slice took."""
MOST_SLICES = 400
"""Slices per round at most (100,000 events); the rest waits for the next round."""


class HistoryKeeper:
    """Every ``every`` seconds: roll up, sample the queue depth, add the cycles timed."""

    def __init__(self, store: Store, *, every: float = 10.0) -> None:
        self.store = store
        self.every = every
        self._lock = threading.Lock()
        self._counts = [0] * (len(CYCLE_BOUNDS) + 1)
        self._total = 0.0

    def observe_cycle(self, report: CycleReport) -> None:
        """Time one cycle of this process (added at the next round)."""
        with self._lock:
            self._counts[bisect.bisect_left(CYCLE_BOUNDS, report.seconds)] += 1
            self._total += report.seconds

    def run(self, stop: threading.Event) -> None:
        """Until ``stop``; a failing round is logged and tried again at the next one."""
        while not stop.wait(self.every):
            self.round(stop)
        self.round(stop)  # what this process timed last

    def round(self, stop: threading.Event | None = None) -> None:
        """One round (see the class)."""
        try:
            self._roll_up(stop or threading.Event())
            sample_depth(self.store)
            with self._lock:
                counts, total = self._counts, self._total
                self._counts, self._total = [0] * len(counts), 0.0
            if any(counts):
                try:
                    add_durations(self.store, CYCLE_DURATIONS, CYCLE_BOUNDS, counts, total)
                except Exception:
                    with self._lock:  # kept for the next round
                        self._counts = [a + b for a, b in zip(self._counts, counts, strict=True)]
                        self._total += total
                    raise
        except Exception:  # the keeper must outlive a database hiccup
            log.exception("event=history-failed")

    def _roll_up(self, stop: threading.Event) -> None:
        """The events since the last round, a :data:`SLICE` at a time, resting after
        each slice as long as it took: the keeper takes at most half of a core and of
        the GIL while it catches up, in pieces short enough for the cycle to slip
        between (it keeps up while the events come at less than a core's half of
        folding, ~25,000 a second)."""
        read, caught_up = 0, False
        for _ in range(MOST_SLICES):
            began = time.monotonic()
            rolled = roll_up(self.store, batch=SLICE, batches=1)
            read += rolled.events
            rest = REST * (time.monotonic() - began)
            if rolled.caught_up or not rolled.events or stop.wait(rest):
                caught_up = rolled.caught_up
                break
        if read:
            log.debug("event=history-rolled-up events=%d caught_up=%s", read, caught_up)
