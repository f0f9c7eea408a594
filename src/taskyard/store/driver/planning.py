"""The cycle's reads as the planner's values (``core/placement.py``): live workers, what
is dispatched or running, the task types' limits, candidates. Shared by the cycle
(transitions/cycle.py) and PostgreSQL's submit that places its job from the last
cycle's snapshot (postgresql/jobs.py)."""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from taskyard.core.locks import decode_claim
from taskyard.core.placement import ActiveJob, Candidate, Planner, WorkerSlot, without_paused
from taskyard.core.prefetch import provisional_windows
from taskyard.core.rate_limits import RateBook, RateLimit, parse_rate_limit
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
    lent a window until they declare one). The workers' list is shared: not to be changed."""
    return (_KEPT.workers(snapshot),
            [ActiveJob(holder, type_, worker, int(cost), claims(locks), int(count))
             for holder, type_, worker, cost, locks, count in snapshot.active],
            TypeLimits.of(snapshot.limits))


def planner_of(workers: list[WorkerSlot], active: Sequence[ActiveJob],
               queue_limits: Mapping[str, int], rates: RateBook | None) -> Planner:
    """``Planner.from_snapshot(workers, active, queue_limits, rates)``: copied from the
    planner kept for ``workers`` when they are the list :func:`planner_values` gave."""
    return _KEPT.planner(workers, active, queue_limits, rates)


class _Kept(NamedTuple):
    rows: list[Any]
    paused: list[Any]
    workers: list[WorkerSlot]
    base: Planner | None
    """``Planner.from_snapshot(workers, [])``, once a cycle has asked for it: only
    copied (Planner.loaded), never changed."""


class _KeptWorkers:
    """The live workers of the last snapshot, as the planner takes them, and a planner of
    them alone: kept by the process from cycle to cycle while the snapshot's workers read
    the same (they change when a worker joins, leaves or declares a new window).

    Building both cost a cycle that places anything 0.58 ms of Python at 200 live workers
    and 3.4 ms at 1,000 (a value and heap entries per worker; a copy: 0.10 and 0.46 ms
    with the snapshot's parse), and the cycle runs inline in every submit and report.
    Each cycle still compares the rows it read with the kept ones, so what is kept never
    decides anything on its own: a cycle whose rows differ builds afresh. Threads share
    it: each reads one reference to a tuple whose values nobody changes, and the last one
    built replaces it."""

    __slots__ = ("_last",)

    def __init__(self) -> None:
        self._last: _Kept | None = None

    def workers(self, snapshot: Snapshot) -> list[WorkerSlot]:
        last = self._last
        if last is not None and last.rows == snapshot.workers and last.paused == snapshot.paused:
            return last.workers
        workers = [WorkerSlot(w, name, pools_of(pools), capacity, prefetch, unpaced)
                   for w, name, pools, capacity, prefetch, unpaced in snapshot.workers]
        if snapshot.paused:  # rare: the simulator, which pauses none, calls it never either
            workers = without_paused(workers, frozenset(snapshot.paused))
        workers = provisional_windows(workers)
        self._last = _Kept(snapshot.workers, snapshot.paused, workers, None)
        return workers

    def planner(self, workers: list[WorkerSlot], active: Sequence[ActiveJob],
                queue_limits: Mapping[str, int], rates: RateBook | None) -> Planner:
        last = self._last
        if last is None or last.workers is not workers:
            return Planner.from_snapshot(workers, active, queue_limits, rates)
        base = last.base
        if base is None:
            base = Planner.from_snapshot(workers, [])
            self._last = last._replace(base=base)
        return base.loaded(active, queue_limits, rates)


_KEPT = _KeptWorkers()


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
