"""The cycle's reads as the planner's values (``core/placement.py``): live workers, what
is dispatched or running, the task types' limits, candidates. Shared by the cycle
(transitions/cycle.py) and PostgreSQL's submit that places its job from the last
cycle's snapshot (postgresql/jobs.py)."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from taskyard.core.locks import decode_claim
from taskyard.core.placement import ActiveJob, Candidate, WorkerSlot, without_paused
from taskyard.core.prefetch import provisional_windows
from taskyard.core.rate_limits import RateLimit, parse_rate_limit
from taskyard.model.records import loads
from taskyard.store.driver.cycle_params import Snapshot


@dataclass(frozen=True, slots=True)
class TypeLimits:
    """Per task type, its max queue length and its rate limit (those that have one)."""

    queue: dict[str, int]
    rates: dict[str, RateLimit]

    @classmethod
    def of(cls, rows: Sequence[Sequence[Any]]) -> TypeLimits:
        """From rows of (name, max_queue_length, rate_limit)."""
        return cls({name: int(n) for name, n, _ in rows if n is not None},
                   {name: _rate(r) for name, _, r in rows if r is not None})


_rate = functools.lru_cache(maxsize=256)(parse_rate_limit)


def planner_values(snapshot: Snapshot) -> tuple[list[WorkerSlot], list[ActiveJob], TypeLimits]:
    """The snapshot's rows as the planner takes them (workers serving no paused pool, and
    lent a window until they declare one)."""
    workers = [WorkerSlot(w, name, pools_of(pools), capacity, prefetch, unpaced)
               for w, name, pools, capacity, prefetch, unpaced in snapshot.workers]
    if snapshot.paused:  # rare: the simulator, which pauses none, calls it never either
        workers = without_paused(workers, frozenset(snapshot.paused))
    return (provisional_windows(workers),
            [ActiveJob(holder, type_, worker, int(cost), claims(locks), int(count))
             for holder, type_, worker, cost, locks, count in snapshot.active],
            TypeLimits.of(snapshot.limits))


def to_candidates(rows: Sequence[Sequence[Any]]) -> list[Candidate]:
    """Candidates from rows of (id, type, priority, pools, cost, locks, rate_key)."""
    return [Candidate(job, type_, priority, pools_of(text), cost, claims(locks), rate_key)
            for job, type_, priority, text, cost, locks, rate_key in rows]


@functools.lru_cache(maxsize=4096)
def claims(text: str) -> tuple[Any, ...]:
    # Cached: the same few lock and pool texts recur across thousands of jobs.
    return tuple(decode_claim(c) for c in loads(text))


@functools.lru_cache(maxsize=4096)
def pools_of(text: str) -> tuple[str, ...]:
    return tuple(loads(text))
