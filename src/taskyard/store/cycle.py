"""The store side of the scheduling cycle: one transaction under the global lock."""

from __future__ import annotations

import contextlib
import functools
import heapq
import random
from collections.abc import Callable, Generator, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, select, update
from sqlalchemy.engine import make_url

from taskyard.core.locks import decode_claim
from taskyard.core.placement import ActiveJob, Candidate, Placement, WorkerSlot
from taskyard.core.retry import decide_retry
from taskyard.core.states import ACTIVE, AttemptState, JobState
from taskyard.store import cycle_pg
from taskyard.store import schema as t
from taskyard.store.base import job_key, lit, pg_channel
from taskyard.store.cycle_lock import FileLock, lock_path_for
from taskyard.store.raw import Raw
from taskyard.store.records import loads
from taskyard.store.resolution import Ended, ResolutionMixin
from taskyard.store.streams import Stream
from taskyard.store.workers import WorkerStore

_J = t.jobs
_A = t.attempts
_W = t.workers

Placer = Callable[["CycleTx"], object]
"""Runs the cycle's steps inside a transaction that holds the global lock."""
SCAN_LIMIT = 10_000
"""Most pending jobs one cycle examines per pools list; the rest wait for the next."""
TIMEOUT_GRACE = 10.0
"""Seconds past an attempt's deadline before the scheduler fails it itself (the
worker normally kills the child at the deadline; this covers a vanished worker)."""


class CycleTx:
    """Operations of one cycle, all inside the caller's transaction."""

    def __init__(self, store: CycleStore, conn: Connection,
                 ahead: cycle_pg.Ahead | None = None, *, locked: bool = False) -> None:
        """``locked``: the caller holds the global lock (on PostgreSQL taken with
        ``cycle_pg.LOCK_AHEAD``, which turned bitmap and sequential scans off)."""
        self.store = store
        self.conn = conn
        self._ahead = ahead
        """PostgreSQL: the first reads, made with the statement before the cycle."""
        self._now = store._now
        self.notify: set[str] = set()
        self.dispatched: dict[int, list[int]] = {}
        """Job ids this cycle dispatched, per worker."""
        self.carried: dict[int, list[str]] = {}
        """PostgreSQL: per worker, what each of its dispatch statements carried (see
        cycle_pg.DISPATCH: the jobs, or "" when the worker must read them)."""
        self.quiet: set[str] = set()
        """Channels not to wake (the caller takes what is placed there itself)."""
        self._scans_off = locked and not store.sqlite
        """PostgreSQL: bitmap and sequential scans are off in this transaction (see
        ordered_candidates)."""
        self._woken: set[str] = set()
        """Channels the dispatch statements woke already (PostgreSQL)."""

    def expel_expired_workers(self) -> list[int]:
        """Workers whose lease ran out (database clock) leave; their jobs are suspended."""
        stmt = self.store._q("cycle.expel", lambda: (
            update(_W)
            .where(_W.c.state == lit("active"), _W.c.lease_expires_at < self._now)
            .values(state="expelled", stopped_at=self._now)
            .returning(_W.c.id)
        ))
        expelled = [int(i) for i in self.conn.execute(stmt).scalars()]
        self.store._suspend_jobs_of(self.conn, expelled, "worker lease expired")
        return expelled

    def time_out_attempts(self, grace: float = TIMEOUT_GRACE) -> list[int]:
        """Fail (exit 130) running attempts well past their deadline whose worker did not
        (it vanished or hangs); the job's retries apply as to any failure."""
        # Running jobs only (a dispatched job has no deadline yet): read through the
        # partial index of active jobs; this runs in every maintenance step.
        rows = [_Overdue(*r) for r in Raw(self.conn).all(
            "SELECT id, attempt, worker_id, graph_id, routing FROM jobs "
            "WHERE state IN ('dispatched', 'running') AND deadline < {now} - ?", (grace,))]
        if not rows:
            return []
        why = "timed out (enforced by the scheduler)"
        policies = self.store._retry_policies(self.conn, [r.id for r in rows])
        ended: list[Ended] = []
        timed_out: list[int] = []
        events: list[tuple[str, str, dict[str, Any], int | None, int | None]] = []
        for r in rows:
            policy, failed = policies[r.id]
            decision = decide_retry(policy, failed + 1, random.random())
            values: dict[str, Any] = (
                {"state": JobState.PENDING, "run_after": self._now + decision.delay}
                if decision.retry else {"state": JobState.FAILED, "finished_at": self._now})
            done = self.conn.execute(
                update(_J)
                .where(_J.c.id == r.id, _J.c.attempt == r.attempt, _J.c.state.in_(ACTIVE))
                .values(worker_id=None, deadline=None, exit_code=130, error=why, **values)
            ).rowcount
            if not done:
                continue
            self.conn.execute(
                update(_A)
                .where(_A.c.job_id == r.id, _A.c.attempt == r.attempt)
                .values(state=AttemptState.FAILED, exit_code=130, finished_at=self._now,
                        error=why)
            )
            # Its worker (if alive) learns at its next heartbeat and kills the child.
            self.notify.add(f"worker.{r.worker_id}")
            timed_out.append(r.id)
            events.append(("job-failed", job_key(r.graph_id, r.routing),
                           {"job_id": r.id, "attempt": r.attempt, "state": "failed",
                            "retry": decision.retry, "exit_code": 130}, r.id, r.graph_id))
            if not decision.retry:
                ended.append(Ended(r.id, JobState.FAILED, r.graph_id))
        self.store._events(self.conn, events)
        if ended:
            self.store._jobs_ended(self.conn, ended)
        return timed_out

    def requeue_suspended(self, limit: int = 1000) -> int:
        """Suspended jobs go back to pending, or to error when they have lost their worker
        more than their type's ``max_worker_losses`` times."""
        ids = [r[0] for r in Raw(self.conn).all(
            "SELECT id FROM jobs WHERE state = 'suspended' LIMIT ?", (limit,))]
        if not ids:
            return 0
        why = "lost its worker more times than max_worker_losses allows"
        rows = self.conn.execute(
            update(_J)
            .where(_J.c.id.in_(ids), _J.c.state == JobState.SUSPENDED,
                   _J.c.worker_losses > _J.c.max_worker_losses)
            .values(state=JobState.ERROR, finished_at=self._now, error=why)
            .returning(_J.c.id, _J.c.graph_id, _J.c.routing)
        ).all()
        if rows:
            self.store._events(self.conn, [
                ("job-exception", job_key(r.graph_id, r.routing),
                 {"job_id": r.id, "state": "error", "reason": why}, r.id, r.graph_id)
                for r in rows])
            self.store._jobs_ended(self.conn, [Ended(r.id, JobState.ERROR, r.graph_id)
                                               for r in rows])
        return int(
            self.conn.execute(
                update(_J)
                .where(_J.c.id.in_(ids), _J.c.state == JobState.SUSPENDED)
                .values(state=JobState.PENDING)
            ).rowcount
        )

    def snapshot(self) -> tuple[list[WorkerSlot], list[ActiveJob], dict[str, int]]:
        """:meth:`workers`, :meth:`active_jobs` and :meth:`queue_limits` (one statement
        on PostgreSQL, which also readies the candidate reads: see cycle_pg)."""
        if self.store.sqlite:
            return self.workers(), self.active_jobs(), self.queue_limits()
        if self._ahead is None:  # with the pools lists and a first page: one round trip
            self._ahead = cycle_pg.Ahead.read(Raw(self.conn), True, self.store._first_page)
        workers, active, limits = self._ahead.snapshot
        return ([WorkerSlot(w, name, pools_of(pools), capacity, prefetch)
                 for w, name, pools, capacity, prefetch in workers],
                [ActiveJob(holder, type_, worker, int(cost), _claims(locks), int(count))
                 for holder, type_, worker, cost, locks, count in active],
                {name: int(n) for name, n in limits})

    def forget_ahead(self) -> None:
        """Reads made ahead of the cycle are stale (its maintenance changed something):
        the cycle reads afresh."""
        self._ahead = None

    def restore_planner(self) -> None:
        """Bitmap and sequential scans back on for what follows the candidate reads in
        this transaction (:meth:`finish` does it too, with the wake-ups)."""
        if self._scans_off:
            Raw(self.conn).run(f"SELECT {cycle_pg.SCANS_ON}")
            self._scans_off = False

    def finish(self) -> None:
        """End of the cycle: wake the workers it placed jobs on (on commit)."""
        channels = sorted(self.notify - self._woken - self.quiet)
        if self._scans_off:
            cycle_pg.finish(Raw(self.conn), channels)
            self._scans_off = False
        else:
            self.store._notify(self.conn, channels)

    def workers(self) -> list[WorkerSlot]:
        rows = Raw(self.conn).all(
            "SELECT id, name, pools, capacity, prefetch FROM workers "
            "WHERE state = 'active' AND lease_expires_at >= {now}")
        return [WorkerSlot(w, name, pools_of(pools), capacity, prefetch)
                for w, name, pools, capacity, prefetch in rows]

    def active_jobs(self) -> list[ActiveJob]:
        """What is dispatched or running, summed per worker and type; jobs with locks
        one by one (the holder of a lock is shown to the user)."""
        rows = Raw(self.conn).all(
            "SELECT CASE WHEN locks = '[]' THEN 0 ELSE id END AS holder, type, worker_id, "
            "SUM(cost), locks, COUNT(*) FROM jobs WHERE state IN ('dispatched', 'running') "
            "GROUP BY worker_id, type, locks, CASE WHEN locks = '[]' THEN 0 ELSE id END")
        return [ActiveJob(holder, type_, worker, int(cost), _claims(locks), int(count))
                for holder, type_, worker, cost, locks, count in rows]

    def queue_limits(self) -> dict[str, int]:
        rows = Raw(self.conn).all(
            "SELECT name, max_queue_length FROM task_types WHERE max_queue_length IS NOT NULL")
        return dict(rows)

    def pending_pool_lists(self) -> list[str]:
        """The distinct pools lists (as stored) of pending jobs: one index probe each
        (a loose index scan), however many jobs share them."""
        rows = Raw(self.conn).all(
            "WITH RECURSIVE lists(p) AS ("
            f"SELECT MIN(pools) FROM jobs {_HINT[self.store.dialect]} WHERE state = 'pending' "
            "UNION ALL SELECT (SELECT MIN(pools) FROM jobs "
            f"{_HINT[self.store.dialect]} WHERE state = 'pending' AND pools > lists.p) "
            "FROM lists WHERE lists.p IS NOT NULL) SELECT p FROM lists WHERE p IS NOT NULL")
        return [p for (p,) in rows]

    def candidates(self, pools: str, after: tuple[int, int] | None,
                   limit: int) -> list[Candidate]:
        """Pending jobs due now whose pools list is ``pools``, in placement order, after
        the keyset ``after``: through the partial index ``ix_jobs_pending_pools``,
        stopped at ``limit`` — O(limit) whatever the backlog. (SQLite must be told the
        index, and the state must be a literal for the partial index to apply.)"""
        hint = _HINT[self.store.dialect]
        head = (f"SELECT id, type, priority, pools, cost, locks FROM jobs {hint} "
                "WHERE state = 'pending' AND pools = ? "
                "AND (run_after IS NULL OR run_after <= {now}) ")
        if after is None:
            rows = Raw(self.conn).all(f"{head} ORDER BY priority DESC, id LIMIT ?",
                                      (pools, limit))
        else:
            # The rest of the last page's priority, then lower priorities: two index
            # ranges, so a page starts where the last one ended (an OR of the two would
            # re-read the list from its head).
            rows = Raw(self.conn).all(
                f"SELECT * FROM (SELECT * FROM ({head} AND priority = ? AND id > ? "
                f"ORDER BY id LIMIT ?) AS same UNION ALL SELECT * FROM ({head} "
                "AND priority < ? ORDER BY priority DESC, id LIMIT ?) AS lower) AS page "
                "ORDER BY priority DESC, id LIMIT ?",
                (pools, after[0], after[1], limit, pools, after[0], limit, limit))
        return [Candidate(job, type_, priority, pools_of(text), cost, _claims(locks))
                for job, type_, priority, text, cost, locks in rows]

    def ordered_candidates(self, room: Callable[[tuple[str, ...]], bool], page: int,
                           per_list: int) -> Generator[Candidate, None, None]:
        """Pending jobs in placement order (highest priority, then oldest), merged from
        one stream per pools list. A list whose pools have no ``room`` is not read (and
        stops being read as soon as they have none); none is read past ``per_list``
        jobs in one cycle. So a backlog for busy pools costs nothing, and jobs for an
        idle pool are never stuck behind it. ``room`` is asked again after each job
        yielded, once the caller has offered it."""
        if self.store.sqlite:
            yield from self._merged_candidates(room, page, per_list)
            return
        # No bitmap scans while reading candidates: after a burst of submissions, before
        # autovacuum has analysed the table, the planner believes few jobs are pending
        # and reads all of them (bitmap scan, then sort: 0.4 s at 1M pending) instead of
        # the first few in index order (0.1 ms). The cycle must cost what it places.
        # Sequential scans neither (see cycle_pg.SCANS_OFF). The lock statement turned
        # them off already; :meth:`restore_planner` or :meth:`finish` turns them back on
        # (transaction-local: the transaction's end does too).
        if not self._scans_off:
            Raw(self.conn).run(f"SELECT {cycle_pg.SCANS_OFF}")
            self._scans_off = True
        yield from self._merged_candidates(room, page, per_list)

    def _merged_candidates(self, room: Callable[[tuple[str, ...]], bool], page: int,
                           per_list: int) -> Iterator[Candidate]:
        heap: list[tuple[int, int, int, Stream]] = []
        first_page = page
        self.store._first_page = max(cycle_pg.AHEAD_PAGE, page)  # the next cycle's guess
        if self.store.sqlite:
            lists, first = self.pending_pool_lists(), None
        else:  # with the first list's first page, in one round trip (or read ahead)
            if self._ahead is not None:
                lists, rows, first_page = self._ahead.lists, self._ahead.first, self._ahead.page
            else:
                lists, rows = cycle_pg.lists_and_first_page(Raw(self.conn), page)
            first = [Candidate(job, type_, priority, pools_of(text), cost, _claims(locks))
                     for job, type_, priority, text, cost, locks in rows]
        for n, text in enumerate(lists):
            stream = Stream(text, pools_of(text), first=first if n == 0 else None,
                            first_page=first_page)
            if room(stream.pools) and stream.fill(self, page):
                heap.append((*stream.key(), n, stream))
        heapq.heapify(heap)
        while heap:
            _, _, n, stream = heapq.heappop(heap)
            job = stream.buffer.popleft()
            stream.read += 1
            yield job
            if stream.read >= per_list or not room(stream.pools):
                continue
            if stream.buffer or stream.fill(self, page):
                heapq.heappush(heap, (*stream.key(), n, stream))

    def dispatch(self, placements: Sequence[Placement], names: dict[int, str]) -> list[int]:
        """Write placements: pending → dispatched with a new attempt number (guarded)."""
        by_worker: dict[int, list[int]] = {}
        for p in placements:
            by_worker.setdefault(p.worker_id, []).append(p.job_id)
        raw = Raw(self.conn)
        placed: list[int] = []
        attempt_rows: list[tuple[int, int, int, str | None]] = []
        parts = {worker_id: _slices(ids) for worker_id, ids in by_worker.items()}
        statements = sum(map(len, parts.values()))
        for worker_id, worker_parts in parts.items():
            if not raw.sqlite:
                # PostgreSQL: the jobs, their new attempts, the worker's wake-up and,
                # with the last statement, the scans back on (see finish) in one.
                channel = f"worker.{worker_id}"
                wake = [] if channel in self.quiet else [pg_channel(channel)]
                for part in worker_parts:
                    statements -= 1
                    rows = raw.pg(cycle_pg.DISPATCH, cycle_pg.dispatch_params(
                        raw.id_array(part), worker_id, names.get(worker_id), wake,
                        self.store._buffered_events(self.conn), last=statements == 0))
                    for job_id, *_ in rows:
                        placed.append(job_id)
                        self.dispatched.setdefault(worker_id, []).append(job_id)
                    if rows:
                        self.carried.setdefault(worker_id, []).append(rows[0][-1])
                        self._scans_off = self._scans_off and statements > 0
                        self._woken.update([channel] if wake else [])
                if worker_id in self.dispatched:
                    self.notify.add(f"worker.{worker_id}")
                continue
            for part in worker_parts:
                which, params = raw.member("id", part)
                # "IS TRUE": PostgreSQL would otherwise walk the partial index of
                # pending jobs (all of them) instead of looking the ids up.
                rows = raw.all(
                    "UPDATE jobs SET state = 'dispatched', worker_id = ?, attempt = attempt + 1 "
                    f"WHERE {which} AND (state = 'pending') IS TRUE "
                    "RETURNING id, attempt", (worker_id, *params))
                for job_id, attempt in rows:
                    placed.append(job_id)
                    self.dispatched.setdefault(worker_id, []).append(job_id)
                    attempt_rows.append((job_id, attempt, worker_id, names.get(worker_id)))
            if worker_id in self.dispatched:
                self.notify.add(f"worker.{worker_id}")
        raw.insert("INSERT INTO attempts (job_id, attempt, worker_id, worker_name, state, "
                   "dispatched_at)", "c1, c2, c3, c4, 'dispatched', {now}", attempt_rows,
                   ("bigint", "integer", "bigint", "text"))
        return placed

    def record_cycle(self, holder: str) -> None:
        Raw(self.conn).run("UPDATE scheduler_state SET cycles = cycles + 1, holder = ?, "
                           "last_cycle_finished_at = {now} WHERE id = 1", (holder,))


_HINT = {"sqlite": "INDEXED BY ix_jobs_pending_pools", "postgresql": ""}


@dataclass(frozen=True, slots=True)
class _Overdue:
    id: int
    attempt: int
    worker_id: int
    graph_id: int | None
    routing: str


def _slices(ids: Sequence[int], size: int = 500) -> list[Sequence[int]]:
    return [ids[i:i + size] for i in range(0, len(ids), size)]


@functools.lru_cache(maxsize=4096)
def _claims(text: str) -> tuple[Any, ...]:
    # Cached: the same few lock and pool texts recur across thousands of jobs.
    return tuple(decode_claim(c) for c in loads(text))


@functools.lru_cache(maxsize=4096)
def pools_of(text: str) -> tuple[str, ...]:
    return tuple(loads(text))


class CycleStore(WorkerStore, ResolutionMixin):
    _first_page: int = cycle_pg.AHEAD_PAGE
    """PostgreSQL: the size of the first page of candidates a cycle reads with its
    snapshot (before it knows its room): the last cycle's page."""

    @contextlib.contextmanager
    def cycle(self, conn: Connection | None = None) -> Iterator[CycleTx | None]:
        """One cycle's transaction under the global lock; yields None if another holds it.

        With ``conn``, the cycle runs inside that open write transaction (a worker's
        batch of completions) instead of a transaction of its own.
        """
        if conn is not None:
            ahead = conn.info.pop(cycle_pg.AHEAD, None)
            with self._cycle_lock(conn, ahead) as held:
                if not held:
                    yield None
                    return
                tx = CycleTx(self, conn, ahead, locked=True)
                yield tx
                tx.finish()
            return
        if self.sqlite:
            # Lock first, then the write transaction: a caller that cannot have the
            # cycle must not queue for the write lock.
            with self._cycle_lock(None) as held:
                if not held:
                    yield None
                    return
                with self._tx() as own:
                    tx = CycleTx(self, own)
                    yield tx
                    tx.finish()
            return
        with self._tx() as own, self._cycle_lock(own) as held:
            if not held:
                yield None
                return
            tx = CycleTx(self, own, locked=True)
            yield tx
            tx.finish()

    @contextlib.contextmanager
    def _cycle_lock(self, conn: Connection | None,
                    ahead: cycle_pg.Ahead | None = None) -> Iterator[bool]:
        """The global lock: a transaction-scoped advisory lock on PostgreSQL (``conn``;
        tried already when read ``ahead``), an flock beside the database on SQLite.
        Releasing the flock before the caller's transaction commits is safe: another
        cycle cannot read before that commit, as SQLite lets one writer at a time."""
        if not self.sqlite:
            assert conn is not None
            if ahead is not None:
                yield ahead.held
                return
            # Waiting for a row lock (held by a frozen transaction) must not keep the
            # global lock for long: the cycle fails instead, and the next one retries
            # (the lock statement sets the timeout, see cycle_pg.LOCK_AHEAD).
            yield cycle_pg.take_lock(Raw(conn))
            return
        lock = self._cycle_file_lock()
        if not lock.acquire():
            yield False
            return
        try:
            yield True
        finally:
            lock.release()

    def _cycle_file_lock(self) -> FileLock:
        """This store's handle on the SQLite cycle lock (the file stays open)."""
        lock: FileLock | None = getattr(self, "_file_lock", None)
        if lock is None:
            lock = self._file_lock = FileLock(lock_path_for(make_url(self.url).database))
        return lock

    def cycles_run(self) -> int:
        """How many cycles have completed (for monitoring and tests)."""
        with self._read() as conn:
            st = t.scheduler_state
            return int(conn.execute(select(st.c.cycles).where(st.c.id == 1)).scalar_one())


