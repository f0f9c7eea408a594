"""Jobs by state for ``/metrics`` and the dashboard's overview, cheap at any history.

The unfinished states (pending, running …) are counted at every read: an index range
per state, as long as the work in flight. The ended states hold the whole history: their
count reads every ended job (about a second at 10,000,000 jobs on SQLite,
`python -m bench.ops_history`). A count that took longer than :data:`COSTLY` is answered
again for :data:`SHARE` times as long as it took (at most :data:`LONGEST`): a server
spends at most a twentieth of its time counting the history, however often it is
scraped; a small history is counted at every read, exactly."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from taskyard.core.states import JobState
from taskyard.store.reads.metrics import ended_by_state, unfinished_by_state

if TYPE_CHECKING:
    from taskyard.store import Store

COSTLY = 0.1
"""Seconds: a count of the ended states that took longer is kept for a while."""
SHARE = 20.0
"""A costly count is kept for this many times as long as it took…"""
LONGEST = 60.0
"""… and at most this many seconds."""


class StateCounts:
    """Every job state with its number of jobs (the ended ones, on a large history, up
    to :data:`LONGEST` seconds old)."""

    def __init__(self, store: Store, *, clock: Callable[[], float] = time.monotonic) -> None:
        self._store = store
        self._clock = clock
        self._lock = threading.Lock()
        self._ended: dict[str, int] | None = None
        self._kept_until = 0.0

    def read(self) -> dict[str, int]:
        """The counts, in the order of :class:`JobState`."""
        unfinished = unfinished_by_state(self._store)
        with self._lock:  # one count at a time: the others take its result
            started = self._clock()
            if self._ended is None or started >= self._kept_until:
                self._ended = ended_by_state(self._store)
                took = self._clock() - started
                self._kept_until = started + (min(took * SHARE, LONGEST)
                                              if took > COSTLY else 0.0)
            ended = self._ended
        return {s.value: unfinished.get(s.value, ended.get(s.value, 0)) for s in JobState}
