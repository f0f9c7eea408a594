"""Jobs that wake-ups carry to a worker (PostgreSQL), so that it need not read them.

The dispatch that places a few jobs on a worker sends them in its wake-up (see
``cycle_pg.DISPATCH``). The same jobs can also reach the worker by a look at what is
placed on it (its periodic one, or one another wake-up asked for) before the wake-up
is read: each attempt is taken once, whichever way comes first.
"""

from __future__ import annotations

import collections
import threading
from collections.abc import Callable, Iterable, Sequence

from taskyard.model.records import ClaimedJob

Key = tuple[int, int]
REMEMBER = 4096
"""Attempts remembered as taken: a wake-up is read within moments of its dispatch."""


class Deliveries:
    """Jobs delivered by wake-ups, waiting for the pump; each attempt at most once."""

    def __init__(self, parse: Callable[[Sequence[str]], list[ClaimedJob] | None],
                 remember: int = REMEMBER) -> None:
        """``parse``: the jobs payloads carry, or None when one carries none."""
        self._parse = parse
        self._lock = threading.Lock()
        self._jobs: list[ClaimedJob] = []
        self._order: collections.deque[Key] = collections.deque()
        self._taken: set[Key] = set()
        self._remember = remember

    def add(self, payloads: Sequence[str]) -> bool:
        """Keep the jobs ``payloads`` carry; False when one carried none (or there was
        none): the worker must look at what is placed on it."""
        found = self._parse(payloads)
        if found is None:
            return False
        with self._lock:
            self._jobs += found
        return True

    def take(self) -> list[ClaimedJob]:
        """The delivered jobs not taken before, in placement order; now taken."""
        with self._lock:
            jobs, self._jobs = self._jobs, []
            fresh = [j for j in jobs if (j.job_id, j.attempt) not in self._taken]
            self._mark((j.job_id, j.attempt) for j in fresh)
        fresh.sort(key=lambda j: (-j.priority, j.job_id))
        return fresh

    def taken(self, keys: Iterable[Key]) -> None:
        """Attempts that reached the worker another way (a look)."""
        with self._lock:
            self._mark(keys)

    def _mark(self, keys: Iterable[Key]) -> None:
        for key in keys:
            if key not in self._taken:
                self._taken.add(key)
                self._order.append(key)
        while len(self._order) > self._remember:
            self._taken.discard(self._order.popleft())
