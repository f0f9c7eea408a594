"""Node affinity per pool, kept up to date as work is placed and released.

The rule (seed 000's node affinity decider, see :mod:`taskyard.core.placement`): in a
pool, the idle worker with the largest remaining capacity; else the busy worker with the
largest remaining capacity >= the job's cost; only then queued in a prefetch window, on
the worker with the fewest queued per slot, the least ``(queued + 1) / capacity``, queued
being the cost placed beyond its capacity, among those with room left, if the job fits in
that room; else on the worker with the largest room >= the cost. Ties go to the lowest
worker id; a worker of capacity 0 takes nothing.

A batch thus fills the windows level by level, each slot as much as the next; a window
caps what its worker holds but does not draw work to it. The rule was the largest room: a
batch then went first to the widest windows, which differed widely between equal workers
(1 to 499), and a few of them took most of it (bench.fleet: 25-2,033 jobs per worker for
a fair 400). Filling in proportion to the windows (capacity + window) left a worker whose
window happened to be narrow (80 against 499: one slow handler run on a loaded machine)
with 17 jobs for a fair 100.

Scanning a pool's workers for each job costs O(workers) per placement: 500 ms for a
cycle that places 1,000 jobs on 500 workers, and most of a simulated million-job day.
This index answers in O(log workers): per pool, four heaps keyed by what the rule
compares, whose entries carry the worker's version at the time they were pushed. A
worker that changes gets a new version and new entries; stale ones are dropped when they
reach the top, and a heap that holds far more stale entries than workers is rebuilt.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field

_Entry = tuple[float, int, int]
"""(key, worker id, version): the heap's least entry is the best worker."""


Load = tuple[int, int, int, int]
"""What the rule reads of one worker: (capacity, cost placed on it, jobs on it, prefetch
window). A plain tuple: it is built at every placement and release."""


def _free(load: Load) -> int:
    """What a worker may still take: its room (capacity and window left), 1 when idle."""
    capacity, used, jobs, prefetch = load
    return max(capacity + prefetch - used, 0 if jobs else 1)


@dataclass(slots=True)
class _PoolHeaps:
    idle: list[_Entry] = field(default_factory=list)
    fit: list[_Entry] = field(default_factory=list)
    """Busy workers by remaining capacity."""
    queue: list[_Entry] = field(default_factory=list)
    """Busy workers with a prefetch window, by room (capacity + window - used)."""
    soonest: list[_Entry] = field(default_factory=list)
    """Busy workers with room left in their window, by cost queued per slot: (used -
    capacity + 1) / capacity."""
    members: set[int] = field(default_factory=set)


class AffinityIndex:
    """The best worker of each pool for a job of a given cost, as the loads change."""

    def __init__(self) -> None:
        self._pools: dict[str, _PoolHeaps] = {}
        self._loads: dict[int, Load] = {}
        self._pools_of: dict[int, tuple[str, ...]] = {}
        """Per worker, the pools it serves (each once)."""
        self._heaps_of: dict[int, list[_PoolHeaps]] = {}
        """The same as this index's heaps (found again after a copy)."""
        self._version: dict[int, int] = {}
        self._pushes = 0
        """Entries pushed since the last rebuild (most of them stale by now)."""
        self.free = 0
        """Over the workers, what each may still take: its room (capacity and window
        left), 1 when idle (what a cycle sizes its page of candidates by)."""

    def put(self, worker_id: int, pools: tuple[str, ...], load: Load) -> None:
        """Add the worker (``pools``: those it serves), or record its new load."""
        version = self._version[worker_id] = self._version.get(worker_id, 0) + 1
        old = self._loads.get(worker_id)
        self._loads[worker_id] = load
        self.free += _free(load) - (0 if old is None else _free(old))
        capacity, used, jobs, prefetch = load
        heaps_of = self._heaps_of.get(worker_id)
        if heaps_of is None:
            names = self._pools_of.get(worker_id)
            if names is None:
                names = self._pools_of[worker_id] = tuple(dict.fromkeys(pools))
            heaps_of = self._heaps_of[worker_id] = [self._join(pool, worker_id)
                                                    for pool in names]
        if capacity <= 0:
            return  # drained: takes no job, not even the one an idle worker may
        # This runs at every placement and release: one entry shared by the pools.
        entry = (used - capacity, worker_id, version)
        push = heapq.heappush
        if jobs == 0:
            for heaps in heaps_of:
                push(heaps.idle, entry)
        else:
            for heaps in heaps_of:
                push(heaps.fit, entry)
            if prefetch > 0:
                # Without a window a worker's room is its remaining capacity: it can
                # only be chosen as a fit, so it need not be in these heaps.
                queued = (entry[0] - prefetch, worker_id, version)
                for heaps in heaps_of:
                    push(heaps.queue, queued)
                if queued[0] < 0:  # room left
                    soon = ((used - capacity + 1) / capacity, worker_id, version)
                    for heaps in heaps_of:
                        push(heaps.soonest, soon)
        self._pushes += len(heaps_of)
        if self._pushes > 4 * len(self._loads) + 64:
            self._rebuild()

    def copy(self) -> AffinityIndex:
        """An index with the same workers and loads, changed apart from this one."""
        new = AffinityIndex()
        pools = {name: _PoolHeaps(h.idle[:], h.fit[:], h.queue[:], h.soonest[:],
                                  set(h.members)) for name, h in self._pools.items()}
        new._pools, new._loads, new._version = pools, dict(self._loads), dict(self._version)
        new._pools_of = dict(self._pools_of)  # the heaps of a worker: found at its next put
        new._pushes, new.free = self._pushes, self.free
        return new

    def _join(self, pool: str, worker_id: int) -> _PoolHeaps:
        heaps = self._pools.get(pool)
        if heaps is None:
            heaps = self._pools[pool] = _PoolHeaps()
        heaps.members.add(worker_id)
        return heaps

    def remove(self, worker_id: int) -> None:
        """The worker left: it is no longer chosen."""
        self._version[worker_id] = self._version.get(worker_id, 0) + 1
        old = self._loads.pop(worker_id, None)
        self.free -= 0 if old is None else _free(old)
        self._heaps_of.pop(worker_id, None)
        for pool in self._pools_of.pop(worker_id, ()):
            self._pools[pool].members.discard(worker_id)

    def choose(self, pool: str, cost: int) -> int | None:
        """The worker of ``pool`` that takes a job of ``cost`` by node affinity, or None."""
        heaps = self._pools.get(pool)
        if heaps is None:
            return None
        best = self._top(heaps.idle)
        if best is not None:
            return best
        best = self._top(heaps.fit)
        if best is not None:
            capacity, used, _, _ = self._loads[best]
            if capacity - used >= cost:
                return best
        best = self._top(heaps.soonest)
        if best is not None:
            capacity, used, _, prefetch = self._loads[best]
            if capacity + prefetch - used >= cost:
                return best
        # A job costlier than the room of the least queued (or of cost 0, where no
        # window has room left): the largest room.
        best = self._top(heaps.queue)
        if best is not None:
            capacity, used, _, prefetch = self._loads[best]
            if capacity + prefetch - used >= cost:
                return best
        return None

    def _top(self, heap: list[_Entry]) -> int | None:
        version = self._version
        while heap:
            _, worker_id, pushed = heap[0]
            if version[worker_id] == pushed:
                return worker_id
            heapq.heappop(heap)
        return None

    def _rebuild(self) -> None:
        """Drop the stale entries: one current entry per member of each pool."""
        self._pushes = 0
        for heaps in self._pools.values():
            idle: list[_Entry] = []
            fit: list[_Entry] = []
            queue: list[_Entry] = []
            soonest: list[_Entry] = []
            for worker_id in heaps.members:
                capacity, used, jobs, prefetch = self._loads[worker_id]
                if capacity <= 0:
                    continue
                entry = (used - capacity, worker_id, self._version[worker_id])
                if jobs == 0:
                    idle.append(entry)
                    continue
                fit.append(entry)
                if prefetch > 0:
                    queue.append((entry[0] - prefetch, worker_id, entry[2]))
                    if used - capacity < prefetch:
                        soonest.append(((used - capacity + 1) / capacity, worker_id,
                                        entry[2]))
            for found in (idle, fit, queue, soonest):
                heapq.heapify(found)
            heaps.idle, heaps.fit, heaps.queue, heaps.soonest = idle, fit, queue, soonest
