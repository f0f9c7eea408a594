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


@dataclass(frozen=True, slots=True)
class Placement:
    job_id: int
    worker_id: int


class SkipReason(StrEnum):
    LOCK_HELD = "lock_held"
    LOCK_WANTED_AHEAD = "lock_wanted_ahead"
    QUEUE_FULL = "queue_full"
    NO_WORKER = "no_worker"
    NO_CAPACITY = "no_capacity"
    RATE_LIMITED = "rate_limited"


@dataclass(frozen=True, slots=True)
class Skip:
    """Why a candidate was not placed; ``detail`` names the lock, pools or type."""

    job_id: int
    reason: SkipReason
    detail: str = ""
    blocker: int | None = None
    """The job holding (or, ahead in order, wanting) the conflicting lock."""


@dataclass
class Planner:
    """Working state of one cycle: feed candidates in order with :meth:`offer`."""

    workers: Mapping[int, WorkerSlot]
    queue_limits: Mapping[str, int] = field(default_factory=dict)
    rates: RateBook | None = None
    """The rate limits of the cycle (None: no type has one)."""
    _used: Counter[int] = field(default_factory=Counter)
    _jobs_on: Counter[int] = field(default_factory=Counter)
    _held: dict[str, list[tuple[LockClaim, int]]] = field(default_factory=dict)
    _ahead: dict[str, list[tuple[LockClaim, int]]] = field(default_factory=dict)
    _queued: Counter[str] = field(default_factory=Counter)
    _by_pool: dict[str, list[WorkerSlot]] = field(default_factory=dict)

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
            planner._occupy(job.id, job.type, job.worker_id, job.cost, job.locks, jobs=job.jobs)
        return planner

    def _occupy(
        self, job_id: int, type_: str, worker_id: int, cost: int, locks: Iterable[LockClaim],
        *, jobs: int = 1,
    ) -> None:
        self._used[worker_id] += cost
        self._jobs_on[worker_id] += jobs
        self._queued[type_] += jobs
        for claim in locks:
            self._held.setdefault(claim.key, []).append((claim, job_id))

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
        return any(self.open(w.id) for pool in pools for w in self._by_pool.get(pool, ()))

    def exhausted(self) -> bool:
        """True when no worker can take any job: stop reading candidates."""
        return not any(self.open(w) for w in self.workers)

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
            members = self._by_pool.get(pool, ())
            served = served or bool(members)
            worker = self.choose_worker(members, job.cost)
            if worker is not None:
                return Placement(job.id, worker.id)
        reason = SkipReason.NO_CAPACITY if served else SkipReason.NO_WORKER
        return Skip(job.id, reason, ",".join(job.pools))

    def choose_worker(self, members: Iterable[WorkerSlot], cost: int) -> WorkerSlot | None:
        """Node affinity: largest idle first, else largest remaining >= cost; only then
        queue on the worker with the largest prefetch room >= cost."""
        best_idle: WorkerSlot | None = None
        best_fit: WorkerSlot | None = None
        best_queue: WorkerSlot | None = None
        for worker in members:
            if worker.capacity <= 0:
                continue  # drained: takes no job, not even the one an idle worker may
            left = self.remaining(worker.id)
            if self.idle(worker.id):
                if best_idle is None or _better(left, worker, self.remaining(best_idle.id),
                                                best_idle):
                    best_idle = worker
            elif left >= cost:
                if best_fit is None or _better(left, worker, self.remaining(best_fit.id),
                                               best_fit):
                    best_fit = worker
            elif best_fit is None and self.room(worker.id) >= cost and (
                    best_queue is None or _better(self.room(worker.id), worker,
                                                  self.room(best_queue.id), best_queue)):
                best_queue = worker
        return best_idle or best_fit or best_queue


def _better(left: int, worker: WorkerSlot, other_left: int, other: WorkerSlot) -> bool:
    # Ties go to the lowest id so that decisions are deterministic.
    return left > other_left or (left == other_left and worker.id < other.id)


def place(
    workers: Iterable[WorkerSlot],
    active: Iterable[ActiveJob],
    candidates: Iterable[Candidate],
    queue_limits: Mapping[str, int] | None = None,
    rates: RateBook | None = None,
) -> tuple[list[Placement], list[Skip]]:
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
