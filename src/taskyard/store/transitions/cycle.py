"""The store side of one scheduling cycle: its reads and writes, under the global lock,
inside a unit of work. What the cycle *decides* lives in ``core`` and what it *does*,
step by step, in ``scheduler/cycle.py``; this is the SQL it needs."""

from __future__ import annotations

import random
from collections.abc import Callable, Collection, Generator, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from taskyard.core.candidates import merged
from taskyard.core.lifecycle import after_attempt, after_worker_loss
from taskyard.core.placement import ActiveJob, Candidate, Placement, WorkerSlot
from taskyard.core.rate_limits import RateBook
from taskyard.core.states import AttemptState, JobState
from taskyard.model.records import ClaimedJob
from taskyard.store import schema as t
from taskyard.store.driver.cycle_params import (
    FIRST_PAGE,
    CycleReads,
    FinishCycle,
    MaintenanceWork,
    ReadCandidates,
    Snapshot,
)
from taskyard.store.driver.params import Dispatch, FailOverdue
from taskyard.store.driver.planning import TypeLimits, planner_values, to_candidates
from taskyard.store.driver.wakeup_payloads import jobs_in_wakeups
from taskyard.store.portable.cycle import TIMEOUT_GRACE
from taskyard.store.transitions.candidates import streams
from taskyard.store.transitions.dependents import Ended
from taskyard.store.transitions.events import attempt_ended, job_exception

if TYPE_CHECKING:
    from taskyard.store.store import Store
    from taskyard.store.unit import Tx

_J = t.jobs
_A = t.attempts
_W = t.workers

SCAN_LIMIT = 10_000
"""Most pending jobs one cycle examines per pools list; the rest wait for the next."""


class CycleTx:
    """Operations of one cycle, all inside the caller's unit of work ``tx``, whose
    transaction holds the cycle's global lock."""

    def __init__(self, tx: Tx, reads: CycleReads | None = None, *,
                 scans_off: bool = False) -> None:
        """``reads``: the cycle's first reads, made with its lock (PostgreSQL: by the
        statement that took it, a submit's insert); ``scans_off``: that statement turned
        the planner's bitmap and sequential scans off (see ordered_candidates)."""
        self.tx = tx
        self._reads = reads
        self.notify: set[str] = set()
        self.dispatched: dict[int, list[int]] = {}
        """Job ids this cycle dispatched, per worker."""
        self._wakeups: dict[int, list[str]] = {}
        """Per worker, what each of its dispatch statements' wake-up carried."""
        self._unwoken: set[str] = set()
        """Channels not to wake (their worker takes what is placed there itself)."""
        self._scans_off = scans_off
        self._woken: set[str] = set()
        """Channels the dispatch statements woke already."""
        self._page = FIRST_PAGE

    def serve(self, worker_id: int) -> None:
        """The caller takes what this cycle places on ``worker_id`` itself (a worker's own
        report): that worker is not woken (see :meth:`jobs_for`)."""
        self._unwoken.add(f"worker.{worker_id}")

    def jobs_for(self, worker_id: int) -> list[ClaimedJob] | None:
        """The jobs this cycle placed on ``worker_id``, as their dispatch's wake-ups
        carry them; None when it must read them (or none was placed)."""
        payloads = self._wakeups.get(worker_id)
        return jobs_in_wakeups(payloads) if payloads else None

    def maintenance_work(self, grace: float = TIMEOUT_GRACE) -> Maintenance:
        """Which maintenance steps have something to do, in one statement: an idle
        queue's maintenance then costs one read instead of one per step."""
        found = self.tx.driver.maintenance_work(self.tx.raw, MaintenanceWork(
            grace, read_ahead=self._reads is None))
        if found.reads is not None:
            self._reads = found.reads
        return replace(Maintenance(*found.work), next_delayed=found.next_delayed)

    def stage_due_jobs(self) -> int:
        """Delayed jobs now due become placeable (they join the placement index); how
        many (a bounded number: portable/cycle.py)."""
        return self.tx.driver.stage_due_jobs(self.tx.raw)

    def next_delayed(self) -> float | None:
        """Seconds until the first delayed job is due (negative: due; None: none is
        delayed): what the maintenance reads, alone (one index probe)."""
        return self.tx.driver.next_delayed(self.tx.raw)

    def expel_expired_workers(self) -> list[int]:
        """Workers whose lease ran out (database clock) leave; their jobs are suspended."""
        expelled = self.tx.driver.expel_expired_workers(self.tx.raw)
        self.tx.workers.suspend_jobs_of(expelled, "worker lease expired")
        return expelled

    def time_out_attempts(self, grace: float = TIMEOUT_GRACE) -> list[int]:
        """Fail (exit 130) running attempts well past their deadline whose worker did not
        (it vanished or hangs); the job's retries apply as to any failure."""
        rows = [_Overdue(*r) for r in self.tx.driver.read_overdue(self.tx.raw, grace)]
        if not rows:
            return []
        policies = self.tx.retries.policies([r.id for r in rows])
        why = "timed out (enforced by the scheduler)"
        ended: list[Ended] = []
        timed_out: list[int] = []
        for r in rows:
            policy, failed = policies[r.id]
            # A timeout is a failure with exit code 130 (seed 001): retries apply.
            then = after_attempt(AttemptState.FAILED, policy, failed, random.random())
            retry = then.state is JobState.PENDING
            if not self.tx.driver.fail_overdue(self.tx.raw, FailOverdue(
                    r.id, r.attempt, then.delay if retry else None, why)):
                continue
            timed_out.append(r.id)
            # Its worker (if alive) learns at its next heartbeat and kills the child.
            self.notify.add(f"worker.{r.worker_id}")
            if retry and then.delay:  # the scheduler learns when it is due
                self.notify.add("scheduler")
            self.tx.events.append([attempt_ended(r.id, r.attempt, "failed", retry=retry,
                                                 graph_id=r.graph_id, routing=r.routing,
                                                 exit_code=130)])
            if not retry:
                ended.append(Ended(r.id, JobState.FAILED, r.graph_id))
        if ended:
            self.tx.dependents.jobs_ended(ended)
        return timed_out

    def requeue_suspended(self, limit: int = 1000) -> int:
        """Suspended jobs go back to pending, or to error when they have lost their worker
        more than their type's ``max_worker_losses`` times (core decides)."""
        driver, raw = self.tx.driver, self.tx.raw
        found = driver.read_suspended(raw, limit)
        if not found:
            return 0
        lost = [job for job, losses, most in found
                if after_worker_loss(losses, most) is JobState.ERROR]
        why = "lost its worker more times than max_worker_losses allows"
        rows = driver.error_suspended(raw, lost, why) if lost else []
        if rows:
            self.tx.events.append([job_exception(job, graph, routing, why, state="error")
                                   for job, graph, routing in rows])
            self.tx.dependents.jobs_ended([Ended(job, JobState.ERROR, graph)
                                           for job, graph, _ in rows])
        return driver.requeue_suspended(raw, [job for job, _, _ in found])

    def snapshot(self) -> tuple[list[WorkerSlot], list[ActiveJob], TypeLimits]:
        """:meth:`workers`, :meth:`active_jobs` and :meth:`limits`: from the reads made
        with the lock, or read now (PostgreSQL: one statement, which also reads the
        first candidates)."""
        return planner_values(self._snapshot())

    def workers(self) -> list[WorkerSlot]:
        """Live workers."""
        return self.snapshot()[0]

    def active_jobs(self) -> list[ActiveJob]:
        """What is dispatched or running, summed per worker and type; jobs with locks
        one by one (the holder of a lock is shown to the user)."""
        return self.snapshot()[1]

    def paused_pools(self) -> frozenset[str]:
        """The pools paused: placement sees no worker serving them."""
        return frozenset(self._snapshot().paused)

    def nothing_pending(self) -> bool:
        """True when the cycle's first reads found no job pending (PostgreSQL reads the
        pending jobs' pools lists with its snapshot); False when they did, or when the
        backend does not know before it reads the candidates (SQLite)."""
        return self._first_reads().lists == []

    def limits(self) -> TypeLimits:
        """The task types' max queue lengths and rate limits."""
        return self.snapshot()[2]

    def _first_reads(self, *, snapshot: bool = False) -> CycleReads:
        """The reads made with the lock, or made now (and kept until they go stale);
        ``snapshot``: made now, they include the snapshot even with nothing pending."""
        if self._reads is None:
            self._reads = self.tx.driver.read_cycle(self.tx.raw, snapshot=snapshot)
        return self._reads

    def _snapshot(self) -> Snapshot:
        """The snapshot of the first reads, read now if they left it out."""
        reads = self._first_reads(snapshot=True)
        if reads.snapshot is None:  # the reads made with the lock, or for nothing_pending
            reads = self._reads = replace(reads,
                                          snapshot=self.tx.driver.read_snapshot(self.tx.raw))
        assert reads.snapshot is not None
        return reads.snapshot

    def reads_are_stale(self) -> None:
        """The reads made with the lock are stale (the cycle's maintenance changed
        something): the cycle reads afresh."""
        self._reads = None

    def restore_planner(self) -> None:
        """Bitmap and sequential scans back on for what follows the candidate reads in
        this transaction (:meth:`finish` does it too, with the wake-ups)."""
        if self._scans_off:
            self.tx.driver.restore_planner(self.tx.raw)
            self._scans_off = False

    def finish(self) -> None:
        """End of the cycle: wake the workers it placed jobs on (on commit)."""
        channels = sorted(self.notify - self._woken - self._unwoken)
        # A wake-up carries the jobs of one dispatch statement: of more, the worker reads.
        carried = {f"worker.{w}": c[0] for w, c in self._wakeups.items() if len(c) == 1}
        self.tx.driver.finish_cycle(self.tx.raw, FinishCycle(channels, carried,
                                                              self._scans_off, self._page))
        self._scans_off = False

    def rate_book(self, limits: TypeLimits) -> RateBook | None:
        """The rate limits this cycle enforces, on the database clock (None when no type
        has one: nothing is read)."""
        if not limits.rates:
            return None
        starts = self.tx.rate_starts
        return RateBook(limits.rates, starts.now(), starts.recent)

    def candidates(self, pools: str, after: tuple[int, int] | None, limit: int,
                   skip: Collection[tuple[str, str]] = ()) -> list[Candidate]:
        """Pending jobs due now whose pools list is ``pools``, in placement order, after
        the keyset ``after``: through the partial index ``ix_jobs_pending_pools``,
        stopped at ``limit`` — O(limit) whatever the backlog.

        ``skip``: (type, rate key) out of budget in this cycle; their jobs are left out
        in SQL (the index is walked past them, but they are neither returned nor built
        into candidates: a backlog held by a rate limit costs a fraction, and the jobs
        behind it are reached)."""
        return to_candidates(self.tx.driver.read_candidates(
            self.tx.raw, ReadCandidates(pools, after, limit, sorted(skip))))

    def ordered_candidates(self, room: Callable[[tuple[str, ...]], bool], page: int,
                           per_list: int, skip: Callable[[], Collection[tuple[str, str]]]
                           = frozenset) -> Generator[Candidate, None, None]:
        """Pending jobs in placement order (highest priority, then oldest), merged from
        one stream per pools list. A list whose pools have no ``room`` is not read (and
        stops being read as soon as they have none); none is read past ``per_list``
        jobs in one cycle. So a backlog for busy pools costs nothing, and jobs for an
        idle pool are never stuck behind it. ``room`` is asked again after each job
        yielded, once the caller has offered it; ``skip()`` before each page is read
        (see :meth:`candidates`)."""
        if not self._scans_off:
            # The planner must read candidates in index order (see the drivers): the
            # settings last until restore_planner or finish (or the transaction's end).
            self._scans_off = self.tx.driver.scans_off(self.tx.raw)
        self._page = max(FIRST_PAGE, page)  # the page the driver reads ahead next time
        reads = self._reads
        first: list[Candidate] | None
        if reads is not None and reads.lists is not None:
            lists, first, first_page = reads.lists, to_candidates(reads.first or []), reads.page
        else:
            lists, rows = self.tx.driver.read_pools_lists(self.tx.raw, page)
            first, first_page = (None if rows is None else to_candidates(rows)), page
        yield from merged(
            streams(self, lists, first, first_page=first_page, page=page, skip=skip),
            room, per_list, wanted=lambda job: (job.type, job.rate_key or "") not in skip())

    def dispatch(self, placements: Sequence[Placement], names: dict[int, str]) -> list[int]:
        """Write placements: pending → dispatched with a new attempt number (guarded)."""
        by_worker: dict[int, list[int]] = {}
        for p in placements:
            by_worker.setdefault(p.worker_id, []).append(p.job_id)
        done = self.tx.driver.dispatch(self.tx.raw, Dispatch(
            by_worker, names, frozenset(self._unwoken), self.tx.events.buffer,
            self._scans_off))
        for worker_id, ids in done.per_worker.items():
            self.dispatched.setdefault(worker_id, []).extend(ids)
            self.notify.add(f"worker.{worker_id}")
        for worker_id, payloads in done.wakeups.items():
            self._wakeups.setdefault(worker_id, []).extend(payloads)
        self._woken |= done.woken
        self._scans_off = self._scans_off and not done.scans_on
        return done.placed

    def record_cycle(self, holder: str) -> None:
        """Count this cycle (one that changed something) under ``holder``."""
        self.tx.driver.record_cycle(self.tx.raw, holder)


def cycles_run(store: Store) -> int:
    """How many cycles have completed (for monitoring and tests)."""
    with store.read() as tx:
        return tx.driver.cycles_run(tx.raw)


@dataclass(frozen=True, slots=True)
class Maintenance:
    """What a cycle's maintenance steps would find (see CycleTx.maintenance_work)."""

    expired: bool
    """A live worker's lease ran out."""
    overdue: bool
    """An attempt is past its deadline and the grace."""
    suspended: bool
    """Jobs wait to be requeued."""
    due: bool
    """A schedule is due."""
    timers: bool = False
    """An awaiting job's timeout (a sleep's end) has passed."""
    delayed: bool = False
    """A delayed job (``run_after``, a retry's delay) is due."""
    next_delayed: float | None = None
    """Seconds until the earliest delayed job is due (negative: due; None: none)."""


@dataclass(frozen=True, slots=True)
class _Overdue:
    id: int
    attempt: int
    worker_id: int
    graph_id: int | None
    routing: str

