"""Workers: registration, leases on the database clock, graceful stop."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, ClassVar

from taskyard.core.lifecycle import losses_after_suspend
from taskyard.core.limits import check_name, whole
from taskyard.core.states import JobState
from taskyard.model.errors import Conflict, InvalidInput, refused_as_invalid
from taskyard.model.records import LeaseStatus, WorkerRecord, dumps, loads
from taskyard.store.driver.params import ReadWorkers, RegisterWorker, SuspendJobs
from taskyard.store.transitions.events import job_exception

if TYPE_CHECKING:
    from taskyard.store.unit import Tx



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
        prefetch: int = 0,
    ) -> WorkerRecord:
        """Join the cluster with a lease; a live worker of the same name is a Conflict.
        ``prefetch``: the most it accepts queued beyond ``capacity``; until it declares a
        window (``report(prefetch=…)``) placement lends it its pools' (core/prefetch.py)."""
        if not name or not pools or capacity < 0 or lease_seconds <= 0:
            raise InvalidInput("worker: needs a name, at least one pool, capacity >= 0, a lease")
        with refused_as_invalid("worker"):
            check_name(name, "name")
            for pool in pools:
                check_name(pool, "pool name")
            whole(capacity, "capacity")
            whole(prefetch, "prefetch")
        worker_id = self.tx.driver.register_worker(self.tx.raw, RegisterWorker(
            name, hostname, pid, dumps(list(pools)), capacity, lease_seconds,
            prefetch if prefetch > 0 else None))
        if worker_id is None:
            raise Conflict(f"a live worker named {name!r} is already registered")
        self.tx.task_types.ensure_pools(pools)
        self.tx.notify("scheduler")
        (record,) = self._workers(ReadWorkers(worker_id))
        return record

    def renew_lease(self, worker_id: int, lease_seconds: float,
                    running: Sequence[tuple[int, int]]) -> LeaseStatus:
        """Extend the lease; say which of ``running`` must stop (canceled or fenced).

        A lease that has run out is not renewed, even before the scheduler expels the
        worker: its completions are already refused, so it must stop (``renewed``
        False) and let the scheduler requeue its jobs."""
        driver, raw = self.tx.driver, self.tx.raw
        renewed = driver.renew_lease(raw, worker_id, lease_seconds)
        current = (driver.current_attempts(raw, worker_id, [job for job, _ in running])
                   if running else set())
        return LeaseStatus(renewed=renewed,
                           stop=tuple(pair for pair in running if pair not in current))

    def stop(self, worker_id: int) -> int:
        """Leave the cluster; this worker's jobs are suspended (requeued by the next cycle)."""
        self.tx.driver.leave(self.tx.raw, worker_id, "stopped")
        # A stop is the operator's doing, not the job's: no loss counted.
        suspended = self.suspend_jobs_of([worker_id], "worker stopped", count_loss=False)
        self.tx.notify("scheduler")
        return suspended

    def expel(self, worker_id: int, why: str = "worker died") -> int:
        """Expel a worker known to be dead (its process ended) without waiting for its
        lease: its jobs are suspended, each counting a worker loss. Returns their count."""
        gone = self.tx.driver.leave(self.tx.raw, worker_id, "expelled")
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

    def _workers(self, which: ReadWorkers) -> list[WorkerRecord]:
        return [WorkerRecord(id=w, name=name, pools=tuple(loads(pools)), capacity=capacity,
                             state=state, hostname=hostname, pid=pid, started_at=started,
                             last_heartbeat_at=beat, lease_expires_at=lease,
                             running=int(running), used=int(used))
                for w, name, pools, capacity, state, hostname, pid, started, beat, lease,
                running, used in self.tx.driver.read_workers(self.tx.raw, which)]

    def list(self, *, include_gone: bool = False) -> list[WorkerRecord]:
        """Live workers (and stopped/expelled ones with ``include_gone``), by name."""
        return self._workers(ReadWorkers(include_gone=include_gone))
