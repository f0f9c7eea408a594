"""Workers' jobs when they are lost or stop, written once for both backends."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from taskyard.store.cursor import Cursor
from taskyard.store.driver.params import ReadWorkers, RegisterWorker, SuspendJobs


def read_active_of(raw: Cursor, worker_ids: Sequence[int]) -> list[tuple[Any, ...]]:
    """The workers' dispatched and running jobs: (id, state, worker losses), locked as
    the update that suspends them locks them."""
    which, params = raw.member("worker_id", worker_ids)
    return raw.all("SELECT id, state, worker_losses FROM jobs "
                   f"WHERE {which} AND state IN ('dispatched', 'running'){raw.row_lock}",
                   params)


def suspend_jobs(raw: Cursor, params: SuspendJobs) -> list[tuple[Any, ...]]:
    """The jobs suspended (guarded by their state), their attempts lost: (id, attempt,
    graph, routing) of those that were, one statement per loss count."""
    by_losses: dict[int, list[int]] = defaultdict(list)
    for job_id, losses in params.losses.items():
        by_losses[losses].append(job_id)
    rows: list[tuple[Any, ...]] = []
    for losses, ids in sorted(by_losses.items()):
        which, values = raw.member("id", ids)
        rows += raw.all(
            "UPDATE jobs SET state = 'suspended', worker_id = NULL, deadline = NULL, "
            f"worker_losses = ? WHERE {which} AND state IN ('dispatched', 'running') "
            "RETURNING id, attempt, graph_id, routing", (losses, *values))
    raw.many("UPDATE attempts SET state = 'lost', finished_at = {now}, error = ? "
             "WHERE job_id = ? AND attempt = ? AND state IN ('dispatched', 'running')",
             [(params.why, job_id, attempt) for job_id, attempt, _, _ in rows])
    return rows


def insert_worker(raw: Cursor, params: RegisterWorker) -> int | None:
    """A live worker (only one live worker per name, a partial unique index: a second
    inserts nothing — None — and the caller's transaction goes on)."""
    row = raw.first(
        "INSERT INTO workers (name, hostname, pid, pools, capacity, unpaced_prefetch, state, "
        "lease_expires_at, started_at, last_heartbeat_at) VALUES (?, ?, ?, ?, ?, ?, 'active', "
        "{now} + ?, {now}, {now}) ON CONFLICT (name) WHERE state = 'active' DO NOTHING "
        "RETURNING id",
        (params.name, params.hostname, params.pid, params.pools, params.capacity,
         params.unpaced_prefetch, params.lease_seconds))
    return None if row is None else int(row[0])


def renew_lease(raw: Cursor, worker_id: int, lease_seconds: float) -> bool:
    """The lease runs ``lease_seconds`` more, unless it ran out already (the worker's
    reports are refused by then: it must stop)."""
    return raw.run("UPDATE workers SET lease_expires_at = {now} + ?, last_heartbeat_at = {now} "
                   "WHERE id = ? AND state = 'active' AND lease_expires_at >= {now}",
                   (lease_seconds, worker_id)) == 1


def current_attempts(raw: Cursor, worker_id: int,
                     job_ids: Sequence[int]) -> set[tuple[int, int]]:
    """Of the jobs of ``job_ids``, the (job, attempt) still dispatched to or running on
    the worker."""
    which, params = raw.member("id", job_ids)
    return {(int(j), int(a)) for j, a in raw.all(
        f"SELECT id, attempt FROM jobs WHERE {which} AND worker_id = ? "
        "AND state IN ('dispatched', 'running')", (*params, worker_id))}


def leave(raw: Cursor, worker_id: int, state: str) -> bool:
    """A live worker leaves (``stopped`` by itself, ``expelled`` when known dead)."""
    return raw.run("UPDATE workers SET state = ?, stopped_at = {now} "
                   "WHERE id = ? AND state = 'active'", (state, worker_id)) == 1


_WORKERS = (
    "SELECT w.id, w.name, w.pools, w.capacity, w.state, w.hostname, w.pid, w.started_at, "
    "w.last_heartbeat_at, w.lease_expires_at, COALESCE(l.running, 0), COALESCE(l.used, 0) "
    "FROM workers w LEFT JOIN (SELECT worker_id, COUNT(*) AS running, "
    "COALESCE(SUM(cost), 0) AS used FROM jobs WHERE state IN ('dispatched', 'running') "
    "GROUP BY worker_id) AS l ON l.worker_id = w.id")


def read_workers(raw: Cursor, params: ReadWorkers) -> list[tuple[Any, ...]]:
    """Workers, by name, with what is dispatched to or running on each (a count and its
    cost): one (``worker_id``), the live ones, or all (``include_gone``)."""
    if params.worker_id is not None:
        return raw.all(f"{_WORKERS} WHERE w.id = ?", (params.worker_id,))
    where = "" if params.include_gone else " WHERE w.state = 'active'"
    return raw.all(f"{_WORKERS}{where} ORDER BY w.name, w.id")
