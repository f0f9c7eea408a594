"""The store side of the scheduling cycle: one transaction under the global lock."""

from __future__ import annotations

import contextlib
import random
from collections.abc import Iterator, Sequence
from typing import Any

from sqlalchemy import Connection, bindparam, insert, select, text, update
from sqlalchemy.engine import make_url

from taskyard.core.locks import decode_claim
from taskyard.core.placement import ActiveJob, Candidate, Placement, WorkerSlot
from taskyard.core.retry import decide_retry
from taskyard.core.states import ACTIVE, AttemptState, JobState
from taskyard.store import schema as t
from taskyard.store.base import job_key, lit, lits
from taskyard.store.cycle_lock import FileLock, lock_path_for, try_advisory
from taskyard.store.records import loads
from taskyard.store.resolution import Ended, ResolutionMixin
from taskyard.store.workers import WorkerStore

_J = t.jobs
_A = t.attempts
_W = t.workers

TIMEOUT_GRACE = 10.0
"""Seconds past an attempt's deadline before the scheduler fails it itself (the
worker normally kills the child at the deadline; this covers a vanished worker)."""


class CycleTx:
    """Operations of one cycle, all inside the caller's transaction."""

    def __init__(self, store: CycleStore, conn: Connection) -> None:
        self.store = store
        self.conn = conn
        self._now = store._now
        self.notify: set[str] = set()

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
        rows = self.conn.execute(
            select(_J.c.id, _J.c.attempt, _J.c.worker_id, _J.c.graph_id, _J.c.routing).where(
                _J.c.state.in_(lits(ACTIVE)), _J.c.deadline < self._now - grace
            )
        ).all()
        if not rows:
            return []
        why = "timed out (enforced by the scheduler)"
        policies = self.store._retry_policies(self.conn, [r.id for r in rows])
        ended: list[Ended] = []
        timed_out: list[int] = []
        events: list[tuple[str, str, dict[str, Any], int | None, int | None]] = []
        for r in rows:
            decision = decide_retry(policies[r.id], r.attempt, random.random())
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
        base = self.store._q("cycle.suspended", lambda: (
            select(_J.c.id).where(_J.c.state == lit(JobState.SUSPENDED))
            .limit(bindparam("n"))
        ))
        ids = list(self.conn.execute(base, {"n": limit}).scalars())
        if not ids:
            return 0
        gone = [
            Ended(row.id, JobState.ERROR, row.graph_id)
            for row in self.conn.execute(
                update(_J)
                .where(_J.c.id.in_(ids), _J.c.state == JobState.SUSPENDED,
                       _J.c.worker_losses > _J.c.max_worker_losses)
                .values(state=JobState.ERROR, finished_at=self._now,
                        error="lost its worker more times than max_worker_losses allows")
                .returning(_J.c.id, _J.c.graph_id)
            )
        ]
        if gone:
            self.store._jobs_ended(self.conn, gone)
        return int(
            self.conn.execute(
                update(_J)
                .where(_J.c.id.in_(ids), _J.c.state == JobState.SUSPENDED)
                .values(state=JobState.PENDING)
            ).rowcount
        )

    def workers(self) -> list[WorkerSlot]:
        rows = self.conn.execute(self.store._q("cycle.workers", lambda: (
            select(_W.c.id, _W.c.name, _W.c.pools, _W.c.capacity).where(
                _W.c.state == lit("active"), _W.c.lease_expires_at >= self._now
            )
        ))).all()
        return [WorkerSlot(r.id, r.name, tuple(loads(r.pools)), r.capacity) for r in rows]

    def active_jobs(self) -> list[ActiveJob]:
        rows = self.conn.execute(self.store._q("cycle.active", lambda: (
            select(_J.c.id, _J.c.type, _J.c.worker_id, _J.c.cost, _J.c.locks).where(
                _J.c.state.in_(lits(ACTIVE))
            )
        ))).all()
        return [
            ActiveJob(r.id, r.type, r.worker_id, r.cost, _claims(r.locks)) for r in rows
        ]

    def queue_limits(self) -> dict[str, int]:
        tt = t.task_types
        rows = self.conn.execute(self.store._q("cycle.limits", lambda: (
            select(tt.c.name, tt.c.max_queue_length).where(tt.c.max_queue_length.is_not(None))
        ))).all()
        return {r.name: r.max_queue_length for r in rows}

    def candidates(self, after: tuple[int, int] | None, limit: int) -> list[Candidate]:
        """Pending jobs due now, in placement order, after the keyset ``after``.

        Read through the partial index ``ix_jobs_pending_order`` and stopped at
        ``limit``: O(limit) whatever the backlog. Written as SQL because SQLite
        must be told the index (its planner otherwise picks ``(state, id)`` and
        sorts every pending row) and the state must be a literal for the partial
        index to apply.
        """
        hint = "INDEXED BY ix_jobs_pending_order" if self.store.sqlite else ""
        now = "((julianday('now') - 2440587.5) * 86400.0)" if self.store.sqlite else (
            "CAST(EXTRACT(EPOCH FROM clock_timestamp()) AS DOUBLE PRECISION)")
        keyset = "AND (priority < :p OR (priority = :p AND id > :i))" if after else ""
        query = text(
            f"SELECT id, type, priority, pools, cost, locks FROM jobs {hint} "
            f"WHERE state = 'pending' AND (run_after IS NULL OR run_after <= {now}) {keyset} "
            "ORDER BY priority DESC, id LIMIT :n"
        )
        params: dict[str, int] = {"n": limit}
        if after:
            params.update(p=after[0], i=after[1])
        return [
            Candidate(r.id, r.type, r.priority, tuple(loads(r.pools)), r.cost, _claims(r.locks))
            for r in self.conn.execute(query, params)
        ]

    def dispatch(self, placements: Sequence[Placement], names: dict[int, str]) -> list[int]:
        """Write placements: pending → dispatched with a new attempt number (guarded)."""
        by_worker: dict[int, list[int]] = {}
        for p in placements:
            by_worker.setdefault(p.worker_id, []).append(p.job_id)
        placed: list[int] = []
        attempt_rows: list[dict[str, Any]] = []
        for worker_id, job_ids in by_worker.items():
            rows = self.conn.execute(self.store._q("cycle.dispatch", lambda: (
                update(_J)
                .where(_J.c.id.in_(bindparam("ids", expanding=True)),
                       _J.c.state == JobState.PENDING)
                .values(state=JobState.DISPATCHED, worker_id=bindparam("w"),
                        attempt=_J.c.attempt + 1)
                .returning(_J.c.id, _J.c.attempt)
            )), {"ids": job_ids, "w": worker_id}).all()
            for job_id, attempt in rows:
                placed.append(job_id)
                attempt_rows.append({"job_id": job_id, "attempt": attempt, "worker_id": worker_id,
                                     "worker_name": names.get(worker_id),
                                     "state": AttemptState.DISPATCHED})
            if rows:
                self.notify.add(f"worker.{worker_id}")
        if attempt_rows:
            self.conn.execute(self.store._q("cycle.attempts", lambda: (
                insert(_A).values(dispatched_at=self._now))), attempt_rows)
        return placed

    def record_cycle(self, holder: str) -> None:
        st = t.scheduler_state
        self.conn.execute(self.store._q("cycle.record", lambda: (
            update(st).where(st.c.id == 1).values(
                cycles=st.c.cycles + 1, holder=bindparam("holder"),
                last_cycle_finished_at=self._now)
        )), {"holder": holder})


def _claims(text: str) -> tuple[Any, ...]:
    return tuple(decode_claim(c) for c in loads(text))


class CycleStore(WorkerStore, ResolutionMixin):
    @contextlib.contextmanager
    def cycle(self) -> Iterator[CycleTx | None]:
        """One cycle's transaction under the global lock; yields None if another holds it."""
        if self.sqlite:
            lock = FileLock(lock_path_for(make_url(self.url).database))
            if not lock.acquire():
                yield None
                return
            try:
                with self._tx() as conn:
                    tx = CycleTx(self, conn)
                    yield tx
                    self._notify(conn, sorted(tx.notify))
            finally:
                lock.release()
            return
        with self._tx() as conn:
            if not try_advisory(conn):
                yield None
                return
            tx = CycleTx(self, conn)
            yield tx
            self._notify(conn, sorted(tx.notify))

    def cycles_run(self) -> int:
        """How many cycles have completed (for monitoring and tests)."""
        with self._read() as conn:
            st = t.scheduler_state
            return int(conn.execute(select(st.c.cycles).where(st.c.id == 1)).scalar_one())


