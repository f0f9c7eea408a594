"""Placement: which pending jobs go to which workers in one scheduling cycle.

Seed 000's task manager, as a pure function over values:

* candidates arrive highest priority first, then oldest first;
* a candidate whose lock claims conflict with held locks, or with a pending
  job *ahead of it* that was not placed, is skipped (blocked groups run in
  creation order; jobs that conflict with nothing flow past);
* a type at its max queue length is skipped, and so is a job whose rate-limit key
  has had its starts in the window (:mod:`taskyard.core.rate_limits`);
* the job's pools are tried in order of preference; within a pool the idle
  worker with the largest remaining capacity wins, else the worker with the
  largest remaining capacity >= the job's cost. An idle worker always takes
  one job, even one costlier than its capacity.

Capacity is derived from the active jobs in the snapshot, so it cannot leak.

The daemons build a :class:`Planner` per cycle (copied from one of the same workers:
:meth:`Planner.loaded`); the simulator keeps one for a whole run and tells it what changes
(:meth:`Planner.release`, ``add_worker``, ``remove_worker``, ``forget_ahead``).

A worker may also declare a *prefetch* window: jobs the cycle may place on it
beyond its capacity. It queues them and starts each as soon as running ones leave
room, so that short jobs do not wait for a round trip through the database
between two runs. Workers open the window only while their jobs are short (see
:mod:`taskyard.core.prefetch`); what a worker *runs* at once never exceeds its
capacity, which the worker enforces.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import NamedTuple

from taskyard.core.affinity import AffinityIndex
from taskyard.core.locks import LockClaim
from taskyard.core.rate_limits import RateBook


@dataclass(frozen=True, slots=True)
class WorkerSlot:
    """A live worker as the cycle sees it."""

    id: int
    name: str
    pools: tuple[str, ...]
    capacity: int
    prefetch: int = 0
    """Cost the worker accepts queued beyond ``capacity``."""
    unpaced: int | None = None
    """While the worker has declared no window (it knows no pace yet): the most it
    accepts queued; ``prefetch`` is then provisional (core.prefetch.provisional_windows)."""

    @property
    def budget(self) -> int:
        """What may be placed on it at once: running plus queued."""
        return self.capacity + self.prefetch


@dataclass(frozen=True, slots=True)
class ActiveJob:
    """A dispatched or running job: it uses capacity and holds its locks. It may stand
    for ``jobs`` lock-free jobs of one type on one worker, ``cost`` being their sum."""

    id: int
    type: str
    worker_id: int
    cost: int
    locks: tuple[LockClaim, ...] = ()
    jobs: int = 1


@dataclass(slots=True)  # not frozen: built by the thousand per second in the cycle
class Candidate:
    """A pending job whose run_after has passed, in placement order."""

    id: int
    type: str
    priority: int
    pools: tuple[str, ...]
    cost: int = 1
    locks: tuple[LockClaim, ...] = ()
    rate_key: str | None = None
    """Its rate-limit key, rendered when it was submitted (None: its type's only key)."""


class Placement(NamedTuple):
    """Place ``job_id`` on ``worker_id`` (a named tuple: one is built per candidate)."""

    job_id: int
    worker_id: int


class SkipReason(StrEnum):
    LOCK_HELD = "lock_held"
    LOCK_WANTED_AHEAD = "lock_wanted_ahead"
    QUEUE_FULL = "queue_full"
    NO_WORKER = "no_worker"
    NO_CAPACITY = "no_capacity"
    RATE_LIMITED = "rate_limited"


class Skip(NamedTuple):
    """Why a candidate was not placed; ``detail`` names the lock, pools or type."""

    job_id: int
    reason: SkipReason
    detail: str = ""
    blocker: int | None = None
    """The job holding (or, ahead in order, wanting) the conflicting lock."""


@dataclass
class Planner:
    """Working state of one cycle: feed candidates in order with :meth:`offer`."""

    workers: dict[int, WorkerSlot]
    queue_limits: Mapping[str, int] = field(default_factory=dict)
    rates: RateBook | None = None
    """The rate limits of the cycle (None: no type has one)."""
    _used: Counter[int] = field(default_factory=Counter)
    _jobs_on: Counter[int] = field(default_factory=Counter)
    _held: dict[str, list[tuple[LockClaim, int]]] = field(default_factory=dict)
    _ahead: dict[str, list[tuple[LockClaim, int]]] = field(default_factory=dict)
    _queued: Counter[str] = field(default_factory=Counter)
    _by_pool: dict[str, list[WorkerSlot]] = field(default_factory=dict)
    _affinity: AffinityIndex = field(default_factory=AffinityIndex)
    _open: set[int] = field(default_factory=set)
    """Workers that could take a job now (see :meth:`open`)."""
    _open_in: dict[str, int] = field(default_factory=dict)
    """Per pool, how many of its workers are open."""

    @classmethod
    def from_snapshot(
        cls,
        workers: Iterable[WorkerSlot],
        active: Iterable[ActiveJob],
        queue_limits: Mapping[str, int] | None = None,
        rates: RateBook | None = None,
    ) -> Planner:
        planner = cls({w.id: w for w in workers}, dict(queue_limits or {}), rates)
        for worker in planner.workers.values():
            for pool in worker.pools:
                planner._by_pool.setdefault(pool, []).append(worker)
        for job in active:
            planner._occupy(job.id, job.type, job.worker_id, job.cost, job.locks, jobs=job.jobs,
                            touch=False)
        for worker_id in planner.workers:
            planner._touch(worker_id)
        return planner

    def loaded(self, active: Iterable[ActiveJob], queue_limits: Mapping[str, int] | None = None,
               rates: RateBook | None = None) -> Planner:
        """A copy (this one unchanged) with ``active`` occupying their workers: what
        ``from_snapshot(workers, active, …)`` is when this is ``from_snapshot(workers, [])``,
        touching only the workers with active jobs (what costs per worker), not all."""
        planner = Planner(
            dict(self.workers), dict(queue_limits or {}), rates, Counter(self._used),
            Counter(self._jobs_on), {key: held[:] for key, held in self._held.items()},
            {key: ahead[:] for key, ahead in self._ahead.items()}, Counter(self._queued),
            {pool: workers[:] for pool, workers in self._by_pool.items()},
            self._affinity.copy(), set(self._open), dict(self._open_in))
        jobs = list(active)
        for job in jobs:
            planner._occupy(job.id, job.type, job.worker_id, job.cost, job.locks, jobs=job.jobs,
                            touch=False)
        for worker_id in {job.worker_id for job in jobs} & planner.workers.keys():
            planner._touch(worker_id)
        return planner

    def _occupy(
        self, job_id: int, type_: str, worker_id: int, cost: int, locks: Iterable[LockClaim],
        *, jobs: int = 1, touch: bool = True,
    ) -> None:
        self._used[worker_id] += cost
        self._jobs_on[worker_id] += jobs
        self._queued[type_] += jobs
        for claim in locks:
            self._held.setdefault(claim.key, []).append((claim, job_id))
        if touch:
            self._touch(worker_id)

    def _touch(self, worker_id: int) -> None:
        """The worker's load changed: update its place in the index and the open counts."""
        worker = self.workers[worker_id]
        capacity, used, jobs = worker.capacity, self._used[worker_id], self._jobs_on[worker_id]
        self._affinity.put(worker_id, worker.pools, (capacity, used, jobs, worker.prefetch))
        # open(), inlined: this runs at every placement and release.
        now_open = capacity > 0 and (jobs == 0 or capacity + worker.prefetch - used > 0)
        if now_open != (worker_id in self._open):
            self._count_open(worker, now_open)

    def _count_open(self, worker: WorkerSlot, now_open: bool) -> None:
        step = 1 if now_open else -1
        if now_open:
            self._open.add(worker.id)
        else:
            self._open.discard(worker.id)
        open_in = self._open_in
        for pool in worker.pools:  # a pool listed twice counts twice, on and off alike
            open_in[pool] = open_in.get(pool, 0) + step

    def release(
        self, job_id: int, type_: str, worker_id: int, cost: int, locks: Iterable[LockClaim],
        *, jobs: int = 1,
    ) -> None:
        """A job placed earlier (or in the snapshot) ended or left its worker: its
        capacity, queue-length count and locks are free. The inverse of placing it."""
        self._used[worker_id] -= cost
        self._jobs_on[worker_id] -= jobs
        self._queued[type_] -= jobs
        for claim in locks:
            holders = self._held[claim.key]
            # By job id: comparing the claims (dataclasses) would cost more, and a job's
            # entries under one key are all its own to remove.
            del holders[next(n for n, (_, holder) in enumerate(holders) if holder == job_id)]
            if not holders:
                del self._held[claim.key]
        if worker_id in self.workers:  # a snapshot may hold jobs of a worker that left
            self._touch(worker_id)

    def add_worker(self, worker: WorkerSlot) -> None:
        """A worker joined (nothing placed on it yet), or changed its prefetch window."""
        old = self.workers.get(worker.id)
        if old is not None:
            self._drop_worker(old)
            self._affinity.remove(worker.id)
        self.workers[worker.id] = worker
        for pool in worker.pools:
            self._by_pool.setdefault(pool, []).append(worker)
        self._touch(worker.id)

    def remove_worker(self, worker_id: int) -> None:
        """A worker left; :meth:`release` the jobs it held first (they leave with it)."""
        self._drop_worker(self.workers.pop(worker_id))
        self._affinity.remove(worker_id)
        self._used.pop(worker_id, None)
        self._jobs_on.pop(worker_id, None)

    def _drop_worker(self, worker: WorkerSlot) -> None:
        for pool in worker.pools:
            self._by_pool[pool] = [w for w in self._by_pool[pool] if w.id != worker.id]
            if not self._by_pool[pool]:
                del self._by_pool[pool]
        if worker.id in self._open:
            self._count_open(worker, False)

    def forget_ahead(self) -> None:
        """A new cycle: the locks wanted by jobs left behind in the last one are not
        wanted ahead any more (each cycle offers its candidates in order afresh)."""
        self._ahead.clear()

    def remaining(self, worker_id: int) -> int:
        """Capacity left on the worker (negative once a costly job runs alone on it)."""
        return self.workers[worker_id].capacity - self._used[worker_id]

    def room(self, worker_id: int) -> int:
        """What may still be placed on the worker: capacity and prefetch window left."""
        return self.workers[worker_id].budget - self._used[worker_id]

    def idle(self, worker_id: int) -> bool:
        return self._jobs_on[worker_id] == 0

    def open(self, worker_id: int) -> bool:
        """Could the worker take a job now? A worker of capacity 0 takes none (it is
        drained); another one takes a job when idle or with room left."""
        worker = self.workers[worker_id]
        return worker.capacity > 0 and (self.idle(worker_id) or self.room(worker_id) > 0)

    def has_room(self, pools: Iterable[str]) -> bool:
        """Could a job of these pools be placed at all: a worker serving one of them is
        open (idle or with room)? Its cost may still not fit."""
        # map(), not a generator: this runs for every candidate read.
        return any(map(self._open_in.get, pools))

    def free(self) -> int:
        """Over the workers, what each may still take: its room, or 1 when it is idle."""
        return self._affinity.free

    def exhausted(self) -> bool:
        """True when no worker can take any job: stop reading candidates."""
        return not self._open

    def offer(self, job: Candidate) -> Placement | Skip:
        """Place ``job`` or say why not. Candidates must come in placement order."""
        decision = self._decide(job)
        if isinstance(decision, Placement):
            self._occupy(job.id, job.type, decision.worker_id, job.cost, job.locks)
            if self.rates is not None:
                self.rates.start(job.type, job.rate_key)
        elif decision.reason is not SkipReason.RATE_LIMITED and self.has_room(job.pools):
            # A job left behind still wants its locks: younger conflicting jobs
            # must wait behind it (chronological fairness). Not one whose pools have no
            # open worker at all: it could hold the others back for ever, and the cycle
            # does not even read it (see CycleTx.ordered_candidates). Nor one held by a
            # rate limit: it waits for time, not for the others (and the cycle leaves
            # the jobs of a key out of budget unread).
            for claim in job.locks:
                self._ahead.setdefault(claim.key, []).append((claim, job.id))
        return decision

    def _decide(self, job: Candidate) -> Placement | Skip:
        for claim in job.locks:
            for held, holder in self._held.get(claim.key, ()):
                if claim.conflicts(held):
                    return Skip(job.id, SkipReason.LOCK_HELD, claim.encode(), holder)
        for claim in job.locks:
            for wanted, wanter in self._ahead.get(claim.key, ()):
                if claim.conflicts(wanted):
                    return Skip(job.id, SkipReason.LOCK_WANTED_AHEAD, claim.encode(), wanter)
        limit = self.queue_limits.get(job.type)
        if limit is not None and self._queued[job.type] >= limit:
            return Skip(job.id, SkipReason.QUEUE_FULL, job.type)
        if self.rates is not None and self.rates.limited(job.type):
            refused = self.rates.refusal(job.type, job.rate_key)
            if refused is not None:
                return Skip(job.id, SkipReason.RATE_LIMITED, refused)
        served = False
        for pool in job.pools:
            served = served or pool in self._by_pool
            worker_id = self._affinity.choose(pool, job.cost)
            if worker_id is not None:
                return Placement(job.id, worker_id)
        reason = SkipReason.NO_CAPACITY if served else SkipReason.NO_WORKER
        return Skip(job.id, reason, ",".join(job.pools))

    def obstacles(self, job: Candidate) -> list[Skip]:
        """Every rule that keeps ``job`` from being placed now, where :meth:`offer` stops
        at the first: per lock, its first holder and its first conflicting job ahead; a
        full queue; a spent rate limit; no worker or no room. Empty when :meth:`offer`
        would place it (the first one is what :meth:`offer` would say). Places nothing:
        what ``explain`` shows."""
        found: list[Skip] = []
        for claim in job.locks:
            holder = next((who for held, who in self._held.get(claim.key, ())
                           if claim.conflicts(held)), None)
            if holder is not None:
                found.append(Skip(job.id, SkipReason.LOCK_HELD, claim.encode(), holder))
        for claim in job.locks:
            wanter = next((who for wanted, who in self._ahead.get(claim.key, ())
                           if claim.conflicts(wanted)), None)
            if wanter is not None:
                found.append(Skip(job.id, SkipReason.LOCK_WANTED_AHEAD, claim.encode(), wanter))
        limit = self.queue_limits.get(job.type)
        if limit is not None and self._queued[job.type] >= limit:
            found.append(Skip(job.id, SkipReason.QUEUE_FULL, job.type))
        if self.rates is not None and self.rates.limited(job.type):
            refused = self.rates.refusal(job.type, job.rate_key)
            if refused is not None:
                found.append(Skip(job.id, SkipReason.RATE_LIMITED, refused))
        if all(self._affinity.choose(pool, job.cost) is None for pool in job.pools):
            served = any(pool in self._by_pool for pool in job.pools)
            found.append(Skip(job.id, SkipReason.NO_CAPACITY if served else SkipReason.NO_WORKER,
                              ",".join(job.pools)))
        return found

    def choose_worker(self, pool: str, cost: int) -> WorkerSlot | None:
        """Node affinity in ``pool``: largest idle first, else largest remaining >= cost;
        only then queue in a prefetch window, on the worker with the fewest queued per
        slot (ties: the lowest id). See :mod:`taskyard.core.affinity`."""
        worker_id = self._affinity.choose(pool, cost)
        return None if worker_id is None else self.workers[worker_id]


def without_paused(workers: Iterable[WorkerSlot],
                   paused: frozenset[str]) -> list[WorkerSlot]:
    """The workers as placement sees them while ``paused`` pools are paused: serving
    none of those pools, so that nothing new is placed there (jobs running there go on;
    a job of several pools goes to one that is not paused)."""
    if not paused:
        return list(workers)
    return [w if paused.isdisjoint(w.pools) else
            WorkerSlot(w.id, w.name, tuple(p for p in w.pools if p not in paused),
                       w.capacity, w.prefetch, w.unpaced) for w in workers]


def place(workers: Iterable[WorkerSlot], active: Iterable[ActiveJob],
          candidates: Iterable[Candidate], queue_limits: Mapping[str, int] | None = None,
          rates: RateBook | None = None) -> tuple[list[Placement], list[Skip]]:
    """Run one cycle's placement over ``candidates`` (already in placement order)."""
    planner = Planner.from_snapshot(workers, active, queue_limits, rates)
    placed: list[Placement] = []
    skipped: list[Skip] = []
    for job in candidates:
        if planner.exhausted():
            break
        decision = planner.offer(job)
        (placed if isinstance(decision, Placement) else skipped).append(decision)  # type: ignore[arg-type]
    return placed, skipped


def placement_key(job: Candidate) -> tuple[int, int]:
    """Sort key of placement order: highest priority first, then oldest (lowest id)."""
    return (-job.priority, job.id)
