"""What a database recorded, read back for ``taskyard simulate --from-db``: the jobs
created in a window with their attempts and edges, the workers that ran then, and the
types' queue limits. Read-only, in one read transaction (a consistent snapshot).

The jobs are read by ``created_at`` (not indexed: a scan of the jobs table, which this
offline tool can afford; retention keeps the table bounded).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import TYPE_CHECKING

from sqlalchemy import or_, select

from taskyard.model.records import loads
from taskyard.store import schema as t

if TYPE_CHECKING:
    from taskyard.store.store import Store

_J, _A, _D, _W, _T = t.jobs, t.attempts, t.dependencies, t.workers, t.task_types


@dataclass(frozen=True, slots=True)
class HistoricAttempt:
    attempt: int
    state: str
    started_at: float | None
    finished_at: float | None


@dataclass(frozen=True, slots=True)
class HistoricJob:
    """One job as recorded; ``priority`` is the one it was submitted with (before aging).
    ``requires``: (parent job id, condition) of its edges."""

    id: int
    type: str
    state: str
    priority: int
    pools: tuple[str, ...]
    cost: int
    locks: tuple[str, ...]
    retries: int
    retry_delay: float
    retry_backoff: float
    retry_max_delay: float
    timeout: float | None
    max_worker_losses: int
    convergence: str
    graph_id: int | None
    label: str | None
    created_at: float
    started_at: float | None
    finished_at: float | None
    attempts: tuple[HistoricAttempt, ...] = ()
    requires: tuple[tuple[int, str], ...] = ()


@dataclass(frozen=True, slots=True)
class HistoricWorker:
    name: str
    pools: tuple[str, ...]
    capacity: int
    started_at: float
    stopped_at: float | None


@dataclass(frozen=True, slots=True)
class History:
    """The window ``[since, now]`` of a database (epoch seconds, database clock)."""

    now: float
    since: float
    jobs: tuple[HistoricJob, ...]
    workers: tuple[HistoricWorker, ...]
    queue_limits: dict[str, int]


def read_history(store: Store, since_seconds: float) -> History:
    """Jobs created in the last ``since_seconds`` (by the database clock), in id order,
    with their attempts and edges; the workers alive at some point of that window."""
    with store.read() as tx:
        conn = tx.conn
        now = float(conn.execute(select(store.now_expr)).scalar_one())
        since = now - since_seconds
        window = _J.c.created_at >= since
        attempts: dict[int, list[HistoricAttempt]] = defaultdict(list)
        for job_id, *fields in conn.execute(
                select(_A.c.job_id, _A.c.attempt, _A.c.state, _A.c.started_at,
                       _A.c.finished_at)
                .select_from(_A.join(_J, _J.c.id == _A.c.job_id)).where(window)
                .order_by(_A.c.job_id, _A.c.attempt)):
            attempts[job_id].append(HistoricAttempt(*fields))
        edges: dict[int, list[tuple[int, str]]] = defaultdict(list)
        for job_id, parent, condition in conn.execute(
                select(_D.c.job_id, _D.c.requires_id, _D.c.condition)
                .select_from(_D.join(_J, _J.c.id == _D.c.job_id)).where(window)
                .order_by(_D.c.job_id, _D.c.requires_id)):
            edges[job_id].append((parent, condition))
        jobs = tuple(
            HistoricJob(
                r.id, r.type, r.state,
                r.priority if r.base_priority is None else r.base_priority,
                tuple(loads(r.pools)), r.cost, tuple(loads(r.locks)), r.retries,
                r.retry_delay, r.retry_backoff, r.retry_max_delay, r.timeout,
                r.max_worker_losses, r.convergence, r.graph_id, r.label, r.created_at,
                r.started_at, r.finished_at, tuple(attempts.get(r.id, ())),
                tuple(edges.get(r.id, ())))
            for r in conn.execute(select(
                _J.c.id, _J.c.type, _J.c.state, _J.c.priority, _J.c.base_priority,
                _J.c.pools, _J.c.cost, _J.c.locks, _J.c.retries, _J.c.retry_delay,
                _J.c.retry_backoff, _J.c.retry_max_delay, _J.c.timeout,
                _J.c.max_worker_losses, _J.c.convergence, _J.c.graph_id, _J.c.label,
                _J.c.created_at, _J.c.started_at, _J.c.finished_at,
            ).where(window).order_by(_J.c.id)))
        workers = tuple(
            HistoricWorker(r.name, tuple(loads(r.pools)), r.capacity, r.started_at,
                           r.stopped_at)
            for r in conn.execute(
                select(_W.c.name, _W.c.pools, _W.c.capacity, _W.c.started_at,
                       _W.c.stopped_at)
                .where(_W.c.started_at <= now,
                       or_(_W.c.stopped_at.is_(None), _W.c.stopped_at >= since))
                .order_by(_W.c.id)))
        limits = {name: int(n) for name, n in conn.execute(
            select(_T.c.name, _T.c.max_queue_length)
            .where(_T.c.max_queue_length.is_not(None)))}
    return History(now, since, jobs, workers, limits)
