"""``schedule()``: one scheduling cycle, callable from anywhere at any time.

It takes the global lock (returning at once if another caller holds it),
then, in one transaction: expels workers whose lease expired, times out
abandoned attempts, requeues suspended jobs, and places pending jobs with
:mod:`taskyard.core.placement`. Pending jobs are read through the placement
index page by page and reading stops as soon as no worker can take more, so a
cycle costs what it places, not what is queued.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Collection
from dataclasses import dataclass, field

from taskyard.core.placement import Candidate, Placement, Planner, Skip, WorkerSlot
from taskyard.core.rate_limits import RateBook
from taskyard.core.spread import spread
from taskyard.store import CycleTx, Store
from taskyard.store.driver.planning import planner_of
from taskyard.store.portable.cycle import TIMEOUT_GRACE
from taskyard.store.transitions.cycle import SCAN_LIMIT
from taskyard.store.transitions.watchdog import flag_stalled_graphs

PAGE_MIN, PAGE_MAX = 16, 2000


@dataclass
class CycleReport:
    """What one cycle did."""

    expelled: list[int] = field(default_factory=list)
    timed_out: list[int] = field(default_factory=list)
    requeued: int = 0
    scheduled: list[int] = field(default_factory=list)  # recurring: jobs from schedules
    awaited: list[int] = field(default_factory=list)
    """Approvals and waits that timed out, sleeps that ended."""
    placed: list[Placement] = field(default_factory=list)
    skipped: list[Skip] = field(default_factory=list)
    stalled: list[int] = field(default_factory=list)
    scanned: int = 0
    seconds: float = 0.0
    rate_wait: float | None = None
    """Seconds until a job this cycle left behind for a rate limit may start."""
    held_back: int = 0
    """Jobs placed, then taken back to spread a burst (core.spread): left pending."""
    staged: int = 0
    """Delayed jobs that came due and became placeable."""
    maintained: bool = False
    """The maintenance steps ran (or found nothing to do) in this cycle."""
    delayed_wait: float | None = None
    """Seconds until the next delayed job comes due, as this cycle read it (None: none
    is delayed, or the cycle did not read it: see ``delayed_read``)."""
    delayed_read: bool = False
    """The cycle read when the next delayed job is due (it maintained, or was asked to:
    ``read_delayed``)."""

    @property
    def changed(self) -> bool:
        return bool(
            self.expelled or self.timed_out or self.requeued or self.placed or self.stalled
            or self.scheduled or self.awaited or self.staged
        )


def schedule(
    store: Store,
    *,
    holder: str = "",
    scan_limit: int = SCAN_LIMIT,
    stall_after: float | None = None,
    cancel_stalled: bool = False,
    maintenance_every: float = 0.0,
    timeout_grace: float = TIMEOUT_GRACE,
    read_delayed: bool = False,
) -> CycleReport | None:
    """Run one cycle; ``None`` when another caller holds the global lock.

    ``stall_after``: flag running graphs without progress for that many seconds
    (``graph-stalled`` event); with ``cancel_stalled`` they are canceled too.
    ``maintenance_every``: the time-driven steps (expel, timeouts, requeue, due
    schedules, stall watchdog) run when this process last ran them at least that
    many seconds ago; 0 (the default) runs them every cycle. Cycles triggered by a
    submit or a completion pass a small value: they exist to place work.
    ``timeout_grace``: seconds past an attempt's deadline before the cycle fails it
    (its worker normally does so at the deadline). ``read_delayed``: a cycle that does
    not maintain still reads when the next delayed job is due (the scheduler sleeps no
    longer than that).
    """
    started = time.perf_counter()
    with store.cycle() as cycle:
        if cycle is None:
            return None
        report = run_cycle(cycle, holder=holder, scan_limit=scan_limit,
                           stall_after=stall_after, maintenance_every=maintenance_every,
                           timeout_grace=timeout_grace, read_delayed=read_delayed)
    report.seconds = time.perf_counter() - started
    if cancel_stalled:
        for graph_id in report.stalled:
            store.graphs.cancel(graph_id)
    return report


def run_cycle(
    tx: CycleTx,
    *,
    holder: str = "",
    scan_limit: int = SCAN_LIMIT,
    stall_after: float | None = None,
    maintenance_every: float = 0.0,
    timeout_grace: float = TIMEOUT_GRACE,
    record: bool = True,
    read_delayed: bool = False,
) -> CycleReport:
    """The cycle's steps inside ``tx`` (a unit of work whose caller holds the global lock:
    see :func:`schedule`; a worker runs this inside its batch of completions).
    ``record``: count it in ``scheduler_state`` (inline cycles, run on every submit
    and report, do not: one row written by every process would serialise them).
    ``read_delayed``: see :func:`schedule`."""
    started = time.perf_counter()
    report = CycleReport()
    maintain = _maintenance_due(tx.tx.store, maintenance_every)
    report.maintained = report.delayed_read = maintain
    if maintain:
        work = tx.maintenance_work(timeout_grace)
        report.delayed_wait = work.next_delayed
        if work.expired:
            report.expelled = tx.expel_expired_workers()
        if work.overdue:
            report.timed_out = tx.time_out_attempts(timeout_grace)
        if work.suspended or report.expelled:  # an expelled worker's jobs are suspended
            report.requeued = tx.requeue_suspended()
        if work.due:
            report.scheduled = tx.tx.schedule_runs.create_due_jobs()  # step 3
        if work.timers:  # through the timer index: awaiting jobs cost nothing here
            report.awaited = tx.tx.waits.time_out()
        if work.delayed:  # likewise: jobs for later are not in the placement index
            report.staged = tx.stage_due_jobs()
        if (report.expelled or report.timed_out or report.requeued or report.scheduled
                or report.awaited or report.staged):
            tx.reads_are_stale()
    elif read_delayed:
        report.delayed_read, report.delayed_wait = True, tx.next_delayed()
    if report.delayed_wait is not None and report.delayed_wait <= 0:
        report.delayed_wait = None if maintain else 0.0  # due: the next maintenance stages it
    if not maintain and tx.nothing_pending():
        # Nothing to place: neither the live workers' values nor the planner are built
        # (each grows with the fleet: at 200 workers building them cost a cycle that
        # placed nothing 0.46 ms of Python, and most cycles of a steady trickle are such).
        workers: list[WorkerSlot] = []
    else:
        workers, active, limits = tx.snapshot()
    if workers:
        rates = tx.rate_book(limits)
        planner = planner_of(workers, active, limits.queue, rates)
        spent = (lambda: rates.spent) if rates is not None else frozenset
        _place(tx, planner, report, scan_limit, spent)
        _dispatch(tx, report, workers, rates, maintain)
        if stall_after is not None and maintain:
            tx.restore_planner()
            served = {p for w in workers for p in w.pools}
            report.stalled = flag_stalled_graphs(tx, stall_after, served)
    if report.changed and record:
        # Only a cycle that changed something writes, so that idle cycles cost no
        # commit to the database.
        tx.record_cycle(holder)
    report.seconds = time.perf_counter() - started
    return report


def _place(tx: CycleTx, planner: Planner, report: CycleReport, scan_limit: int,
           spent: Callable[[], Collection[tuple[str, str]]]) -> None:
    """Offer the candidates in placement order until no worker can take more."""
    # A page a little larger than the room left: most candidates get placed.
    free = planner.free()
    page = min(PAGE_MAX, max(PAGE_MIN, free + free // 4))
    if planner.exhausted():
        return
    placed: list[tuple[Candidate, int]] = []
    # closing(): the store may restore settings once the candidates are read.
    with contextlib.closing(tx.ordered_candidates(planner.has_room, page, scan_limit,
                                                  spent)) as candidates:
        for job in candidates:
            report.scanned += 1
            decision = planner.offer(job)
            if isinstance(decision, Placement):
                report.placed.append(decision)
                placed.append((job, decision.worker_id))
            else:
                report.skipped.append(decision)
            if planner.exhausted():
                break
    taken = [] if planner.exhausted() else spread(planner, placed)
    if taken:  # they stay pending, for workers whose windows are narrower
        report.held_back = len(taken)
        back = {p.job_id for p in taken}
        report.placed = [p for p in report.placed if p.job_id not in back]


def _dispatch(tx: CycleTx, report: CycleReport, workers: list[WorkerSlot],
              rates: RateBook | None, maintain: bool) -> None:
    """Write the placements, and the starts of rate-limited jobs."""
    if rates is not None and maintain:
        # Before the dispatch turns the planner's scans back on (PostgreSQL): through
        # the index on the start times, whatever the table's statistics say.
        tx.tx.rate_starts.forget_old()
    if report.placed:
        tx.dispatch(report.placed, {w.id: w.name for w in workers})
    if rates is not None:
        if rates.soonest is not None:
            report.rate_wait = max(0.0, rates.soonest - rates.now)
        if rates.started:  # after the dispatch: never earlier than the attempts' times
            tx.tx.rate_starts.record(rates.started)


_last_maintenance: dict[int, float] = {}


def maintenance_waits(store: Store, every: float) -> bool:
    """Would a cycle here run its maintenance now (see run_cycle)?"""
    last = _last_maintenance.get(id(store), -1e18)
    return every <= 0 or time.monotonic() - last >= every


def maintained(store: Store) -> None:
    """The maintenance ran here now, or was found to have nothing to do."""
    _last_maintenance[id(store)] = time.monotonic()


def _maintenance_due(store: Store, every: float) -> bool:
    if not maintenance_waits(store, every):
        return False
    maintained(store)
    return True

