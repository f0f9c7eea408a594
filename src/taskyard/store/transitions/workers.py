"""Workers: registration, leases on the database clock, graceful stop."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, ClassVar

from sqlalchemy import and_, func, select, text, update

from taskyard.core.lifecycle import losses_after_suspend
from taskyard.core.limits import check_name, whole
from taskyard.core.states import ACTIVE, JobState
from taskyard.model.errors import Conflict, InvalidInput, refused_as_invalid
from taskyard.model.records import LeaseStatus, WorkerRecord, dumps, loads
from taskyard.store import schema as t
from taskyard.store.driver.params import SuspendJobs
from taskyard.store.transitions.events import job_exception

if TYPE_CHECKING:
    from taskyard.store.unit import Tx

_W = t.workers
_J = t.jobs
_A = t.attempts


class Workers:
    """Workers and their leases, in one transaction."""

    READS: ClassVar[frozenset[str]] = frozenset({'list'})
    """Methods a call through the store (``store.workers.<method>``) runs in a read
    transaction; the others run in a write transaction (:class:`taskyard.store.store.OneShot`)."""

    def __init__(self, tx: Tx) -> None:
        self.tx = tx

    def register(
        self,
        name: str,
        pools: Sequence[str],
        capacity: int,
        *,
        lease_seconds: float,
        hostname: str = "",
        pid: int | None = None,
    ) -> WorkerRecord:
        """Join the cluster with a lease; a live worker of the same name is a Conflict."""
        if not name or not pools or capacity < 0 or lease_seconds <= 0:
            raise InvalidInput("worker: needs a name, at least one pool, capacity >= 0, a lease")
        with refused_as_invalid("worker"):
            check_name(name, "name")
            for pool in pools:
                check_name(pool, "pool name")
            whole(capacity, "capacity")
        # Before anything is written: it waits for the submits that may not have seen
        # us, and they never wait for what we hold (no deadlock).
        self.tx.driver.pass_worker_gate(self.tx.raw)
        now = self.tx.now
        # Only one live worker per name (a partial unique index): a second one inserts
        # nothing, and the caller's transaction goes on.
        worker_id = self.tx.conn.execute(
            self.tx.driver.upsert(_W).values(
                name=name, hostname=hostname, pid=pid, pools=dumps(list(pools)),
                capacity=capacity, state="active", lease_expires_at=now + lease_seconds,
                started_at=now, last_heartbeat_at=now)
            .on_conflict_do_nothing(index_elements=["name"], index_where=text("state = 'active'"))
            .returning(_W.c.id)
        ).scalar()
        if worker_id is None:
            raise Conflict(f"a live worker named {name!r} is already registered")
        self.tx.task_types.ensure_pools(pools)
        self.tx.notify("scheduler")
        return self._worker(int(worker_id))

    def _worker(self, worker_id: int) -> WorkerRecord:
        return next(w for w in self._workers(_W.c.id == worker_id))

    def renew_lease(self, worker_id: int, lease_seconds: float,
                    running: Sequence[tuple[int, int]]) -> LeaseStatus:
        """Extend the lease; say which of ``running`` must stop (canceled or fenced).

        A lease that has run out is not renewed, even before the scheduler expels the
        worker: its completions are already refused, so it must stop (``renewed``
        False) and let the scheduler requeue its jobs."""
        conn = self.tx.conn
        renewed = conn.execute(
            update(_W)
            .where(_W.c.id == worker_id, _W.c.state == "active",
                   _W.c.lease_expires_at >= self.tx.now)
            .values(lease_expires_at=self.tx.now + lease_seconds, last_heartbeat_at=self.tx.now)
        ).rowcount
        current: set[tuple[int, int]] = set()
        if running:
            current = {
                (int(r.id), int(r.attempt))
                for r in conn.execute(
                    select(_J.c.id, _J.c.attempt).where(
                        _J.c.id.in_([job for job, _ in running]),
                        _J.c.worker_id == worker_id,
                        _J.c.state.in_(ACTIVE),
                    )
                )
            }
        stop = tuple(pair for pair in running if pair not in current)
        return LeaseStatus(renewed=renewed == 1, stop=stop)

    def stop(self, worker_id: int) -> int:
        """Leave the cluster; this worker's jobs are suspended (requeued by the next cycle)."""
        conn = self.tx.conn
        conn.execute(
            update(_W)
            .where(_W.c.id == worker_id, _W.c.state == "active")
            .values(state="stopped", stopped_at=self.tx.now)
        )
        # A stop is the operator's doing, not the job's: no loss counted.
        suspended = self.suspend_jobs_of([worker_id], "worker stopped", count_loss=False)
        self.tx.notify("scheduler")
        return suspended

    def expel(self, worker_id: int, why: str = "worker died") -> int:
        """Expel a worker known to be dead (its process ended) without waiting for its
        lease: its jobs are suspended, each counting a worker loss. Returns their count."""
        conn = self.tx.conn
        gone = conn.execute(
            update(_W).where(_W.c.id == worker_id, _W.c.state == "active")
            .values(state="expelled", stopped_at=self.tx.now)
        ).rowcount
        suspended = self.suspend_jobs_of([worker_id], why) if gone else 0
        self.tx.notify("scheduler")
        return suspended

    def suspend_jobs_of(self, worker_ids: Sequence[int], why: str, *,
                        count_loss: bool = True) -> int:
        """Move the workers' dispatched/running jobs to suspended; their attempts are lost.
        ``count_loss``: the running ones use up one of their worker-loss budget."""
        if not worker_ids:
            return 0
        driver, raw = self.tx.driver, self.tx.raw
        # Each job's losses after this one (core.lifecycle decides what counts).
        found = driver.read_active_of(raw, worker_ids)
        rows = driver.suspend_jobs(raw, SuspendJobs({
            job_id: losses_after_suspend(losses, state == JobState.RUNNING, counts=count_loss)
            for job_id, state, losses in found}, why)) if found else []
        # TaskCluster's task-exception: the attempt ended for a reason not its own.
        self.tx.events.append([job_exception(job_id, graph_id, routing, why, attempt=attempt)
                               for job_id, attempt, graph_id, routing in rows])
        return len(rows)

    def _workers(self, where: object) -> list[WorkerRecord]:
        load = (
            select(
                _J.c.worker_id,
                func.count().label("running"),
                func.coalesce(func.sum(_J.c.cost), 0).label("used"),
            )
            .where(_J.c.state.in_(ACTIVE))
            .group_by(_J.c.worker_id)
            .subquery()
        )
        query = (
            select(_W, load.c.running, load.c.used)
            .select_from(_W.outerjoin(load, load.c.worker_id == _W.c.id))
            .order_by(_W.c.name, _W.c.id)
        )
        if where is not None:
            query = query.where(and_(where))  # type: ignore[arg-type]
        rows = self.tx.conn.execute(query).all()
        return [
            WorkerRecord(
                id=r.id,
                name=r.name,
                pools=tuple(loads(r.pools)),
                capacity=r.capacity,
                state=r.state,
                hostname=r.hostname,
                pid=r.pid,
                started_at=r.started_at,
                last_heartbeat_at=r.last_heartbeat_at,
                lease_expires_at=r.lease_expires_at,
                running=int(r.running or 0),
                used=int(r.used or 0),
            )
            for r in rows
        ]

    def list(self, *, include_gone: bool = False) -> list[WorkerRecord]:
        """Live workers (and stopped/expelled ones with ``include_gone``), by name."""
        return self._workers(None if include_gone else _W.c.state == "active")
