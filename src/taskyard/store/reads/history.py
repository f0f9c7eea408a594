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

from taskyard.model.records import loads

if TYPE_CHECKING:
    from taskyard.store.store import Store



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


_JOB_NAMES = ("id", "type", "state", "priority", "base_priority", "pools", "cost", "locks",
              "retries", "retry_delay", "retry_backoff", "retry_max_delay", "timeout",
              "max_worker_losses", "convergence", "graph_id", "label", "created_at",
              "started_at", "finished_at")


def read_history(store: Store, since_seconds: float) -> History:
    """Jobs created in the last ``since_seconds`` (by the database clock), in id order,
    with their attempts and edges; the workers alive at some point of that window."""
    with store.read() as tx:
        raw = tx.raw
        now = tx.driver.read_now(raw)
        since = now - since_seconds
        attempts: dict[int, list[HistoricAttempt]] = defaultdict(list)
        for job_id, *fields in raw.all(
                "SELECT a.job_id, a.attempt, a.state, a.started_at, a.finished_at "
                "FROM attempts a JOIN jobs j ON j.id = a.job_id WHERE j.created_at >= ? "
                "ORDER BY a.job_id, a.attempt", (since,)):
            attempts[job_id].append(HistoricAttempt(*fields))
        edges: dict[int, list[tuple[int, str]]] = defaultdict(list)
        for job_id, parent, condition in raw.all(
                "SELECT d.job_id, d.requires_id, d.condition FROM dependencies d "
                "JOIN jobs j ON j.id = d.job_id WHERE j.created_at >= ? "
                "ORDER BY d.job_id, d.requires_id", (since,)):
            edges[job_id].append((parent, condition))
        jobs = tuple(
            HistoricJob(
                m["id"], m["type"], m["state"],
                m["priority"] if m["base_priority"] is None else m["base_priority"],
                tuple(loads(m["pools"])), m["cost"], tuple(loads(m["locks"])), m["retries"],
                m["retry_delay"], m["retry_backoff"], m["retry_max_delay"], m["timeout"],
                m["max_worker_losses"], m["convergence"], m["graph_id"], m["label"],
                m["created_at"], m["started_at"], m["finished_at"],
                tuple(attempts.get(m["id"], ())), tuple(edges.get(m["id"], ())))
            for m in (dict(zip(_JOB_NAMES, row, strict=True)) for row in raw.all(
                f"SELECT {', '.join(_JOB_NAMES)} FROM jobs WHERE created_at >= ? ORDER BY id",
                (since,))))
        workers = tuple(
            HistoricWorker(name, tuple(loads(pools)), capacity, started, stopped)
            for name, pools, capacity, started, stopped in raw.all(
                "SELECT name, pools, capacity, started_at, stopped_at FROM workers "
                "WHERE started_at <= ? AND (stopped_at IS NULL OR stopped_at >= ?) "
                "ORDER BY id", (now, since)))
        limits = {name: int(n) for name, n in raw.all(
            "SELECT name, max_queue_length FROM task_types "
            "WHERE max_queue_length IS NOT NULL")}
    return History(now, since, jobs, workers, limits)
