"""The prefetch window a worker declares: how many jobs it accepts queued beyond its
capacity, chosen from how long its jobs take.

Queued jobs start without a round trip through the database, which is what makes
short jobs fast; but a job queued behind long ones waits while another worker may
be idle. So a worker opens the window only as wide as the work it will start within
``WINDOW`` seconds at its recent pace, and closes it (0) as soon as its jobs are long.

The pace is the handlers' own time (a Python job's is measured in the child that runs it),
not the round trips around them: those grow on a loaded machine and shrink in a pipeline,
so a pace that counted them kept shut the windows of the workers that happened to run
jobs one by one, which then got little of a burst (bench.fleet; see core.affinity). A
handler's first run in its child is no pace either: it carries what the handler does once
(first touches of its code, lazy imports and connections, an async handler's event loop),
and as the first duration it would weigh most in the average (worker/child.py).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from taskyard.core.placement import WorkerSlot

WINDOW = 0.05
"""Seconds of work a worker may hold queued (head-of-line delay it may cause)."""
ALPHA = 0.2
"""Weight of the newest duration in the moving average: one long job closes the
window at once; a return to short jobs reopens it over a few completions."""
MIN_DURATION = 1e-4
DEFAULT_PREFETCH = 512
"""Most jobs a worker accepts queued beyond its capacity (while its jobs are short)."""


def prefetch_window(capacity: int, mean_duration: float | None, limit: int,
                    window: float = WINDOW) -> int:
    """Jobs to accept beyond ``capacity``: 0 until a duration is known, at most ``limit``.

    Keeps ``capacity`` slots busy for ``window`` seconds when jobs take
    ``mean_duration`` seconds each.
    """
    if mean_duration is None or limit <= 0 or capacity <= 0:
        return 0
    in_flight = capacity * window / max(mean_duration, MIN_DURATION)
    # Rounded first: binary fractions make 3 * 0.05 / 0.05 come out as 3.0000000000000004,
    # which ceil would turn into one job queued behind jobs as long as the window.
    return max(0, min(limit, math.ceil(round(in_flight, 6)) - capacity))


def provisional_windows(workers: list[WorkerSlot]) -> list[WorkerSlot]:
    """The workers as placement sees them, a worker that knows no pace yet (``unpaced``)
    given the window its pools' other workers declared: per pool it serves, the median
    of their windows (the lower one of an even count); the least over its pools, 0 for a
    pool where none has declared one; at most its own limit.

    Such a worker has run no job. With no window at all it took one job of a burst while
    the workers that had run jobs queued the rest: 73 of 200 workers got 1 job of 20,000
    where the others got 157 (bench.fleet, run 51). Its pool's windows are the best guess
    of how long the pool's jobs take, and one closed by long jobs stays closed for it too;
    its own window replaces the guess as soon as its first paced job ends (a handler's
    first run in a child is not one)."""
    if all(w.unpaced is None for w in workers):
        return workers  # the usual case: one pass, nothing built
    declared: dict[str, list[int]] = {}
    for worker in workers:
        if worker.unpaced is None and worker.capacity > 0:
            for pool in worker.pools:
                declared.setdefault(pool, []).append(worker.prefetch)
    median = {pool: sorted(windows)[(len(windows) - 1) // 2]
              for pool, windows in declared.items()}
    return [w if w.unpaced is None else
            replace(w, prefetch=min([w.unpaced, *(median.get(p, 0) for p in w.pools)]))
            for w in workers]


def worth_declaring(window: int, declared: int | None, *, loaded: bool = True) -> bool:
    """Declare a new prefetch window when it opens or closes, or moves by a quarter
    while the worker is ``loaded`` (it held more than one job since its last report):
    every declaration is a write, and the window follows a moving average. A worker
    that runs lone jobs keeps the window it declared, unless the new one is at least
    twice as wide: a window that moved with each of them would change the snapshot that
    lets a submit place its job in one round trip (store/postgresql/jobs.py), but one
    opened narrow by a first job that happened to be slow, and kept, got that worker
    18 of a 20,000-job burst where the others got 407 each (bench.fleet, 50 workers).
    ``declared`` None: none declared yet (call it once the pace is known): declare,
    even a window of 0, so that placement stops lending one (provisional_windows)."""
    if declared is None:
        return True
    if window == declared:
        return False
    if window == 0 or declared == 0:
        return True
    if loaded:
        return abs(window - declared) * 4 >= declared
    return window >= 2 * declared


@dataclass
class PaceTracker:
    """Exponentially weighted mean of job durations (seconds)."""

    mean: float | None = None

    def observe(self, seconds: float | None) -> None:
        """A job's duration; None: a run that is no pace (a handler's first in its
        child, see the module docstring), left out."""
        if seconds is None:
            return
        seconds = max(0.0, seconds)
        self.mean = seconds if self.mean is None else self.mean + ALPHA * (seconds - self.mean)
