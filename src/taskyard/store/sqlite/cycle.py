"""SQLite: the scheduling cycle's statements — its reads, the dispatch (the one statement
that moves jobs pending → dispatched) and its end. The cycle's lock is a file lock
(sqlite/locks.py), taken before its write transaction queues (sqlite/driver.py).

SQLite runs ``UPDATE … RETURNING`` row by row in C and its write transactions are
exclusive: the hot statements are plain, one per slice of ids, their id lists padded to
a few shapes that stay in its statement cache (sqlite/rows.py)."""

from __future__ import annotations

from typing import Any

from taskyard.store.cursor import Cursor
from taskyard.store.driver.cycle_params import (
    CycleReads,
    Dispatched,
    FinishCycle,
    ReadCandidates,
    Snapshot,
    slices,
)
from taskyard.store.driver.params import Dispatch
from taskyard.store.driver.wakeup_payloads import CARRY_JOBS, carried
from taskyard.store.portable import cycle as portable
from taskyard.store.portable.cycle import maintenance_checks, next_delayed
from taskyard.store.schema.base import READY
from taskyard.store.sqlite.rows import insert_rows, member

TIMERS = "INDEXED BY ix_jobs_awaiting_deadline"
"""SQLite must be told the timer index: without statistics it may read every awaiting
job through the state index."""
DELAYED = "INDEXED BY ix_jobs_delayed"
"""And the delayed jobs' index, likewise."""
MAINTENANCE_WORK = "SELECT " + ", ".join((*maintenance_checks("0", "?", TIMERS, DELAYED),
                                          next_delayed(DELAYED)))
"""SQL: which maintenance steps have work, then the seconds until the next delayed job."""
_HINT = "INDEXED BY ix_jobs_pending_pools"
"""SQLite must be told the placement index (and see the state as a literal)."""
_WORKERS = ("SELECT id, name, pools, capacity, prefetch, unpaced_prefetch FROM workers "
            "WHERE state = 'active' AND lease_expires_at >= {now}")
_ACTIVE = ("SELECT CASE WHEN locks = '[]' THEN 0 ELSE id END AS holder, type, worker_id, "
           "SUM(cost), locks, COUNT(*) FROM jobs WHERE state IN ('dispatched', 'running') "
           "GROUP BY worker_id, type, locks, CASE WHEN locks = '[]' THEN 0 ELSE id END")
_LIMITS = ("SELECT name, max_queue_length, rate_limit FROM task_types "
           "WHERE max_queue_length IS NOT NULL OR rate_limit IS NOT NULL")
_PAUSED = "SELECT name FROM pools WHERE paused ORDER BY name"


def read_cycle(raw: Cursor) -> CycleReads:
    """The snapshot: live workers, what is dispatched or running (summed per worker and
    type; jobs with locks one by one: the holder of a lock is shown to the user), the
    types' limits, the paused pools. Four reads in the process: no round trips to fold."""
    return CycleReads(Snapshot(raw.all(_WORKERS), raw.all(_ACTIVE), raw.all(_LIMITS),
                               [name for (name,) in raw.all(_PAUSED)]))


def read_candidates(raw: Cursor, params: ReadCandidates) -> list[Any]:
    """See portable/cycle.py: SQLite must be told the placement index (and see the state
    as a literal)."""
    return portable.read_candidates(raw, params, index=_HINT)


def read_pools_lists(raw: Cursor) -> list[str]:
    """The distinct pools lists (as stored) of pending jobs: one index probe each (a
    loose index scan), however many jobs share them."""
    rows = raw.all(
        "WITH RECURSIVE lists(p) AS ("
        f"SELECT MIN(pools) FROM jobs {_HINT} WHERE {READY} "
        "UNION ALL SELECT (SELECT MIN(pools) FROM jobs "
        f"{_HINT} WHERE {READY} AND pools > lists.p) "
        "FROM lists WHERE lists.p IS NOT NULL) SELECT p FROM lists WHERE p IS NOT NULL")
    return [p for (p,) in rows]


_CARRIED = ("RETURNING id, attempt, (SELECT handler FROM task_types WHERE name = jobs.type), "
            "type, args, timeout, graph_id, label, cost, priority, logical_time, trace_context")
"""A dispatch of a few jobs returns what their worker's wake-up carries (wakeup_payloads)."""


def dispatch(raw: Cursor, params: Dispatch) -> Dispatched:
    """pending → dispatched with a new attempt number (guarded), and the attempts; per
    statement, what its worker's wake-up carries (sent by :func:`finish`)."""
    done = Dispatched()
    attempt_rows: list[tuple[int, int, int, str | None]] = []
    for worker_id, ids in params.by_worker.items():
        for part in slices(ids):
            which, values = member("id", part)
            carry = len(part) <= CARRY_JOBS
            rows = raw.all(
                "UPDATE jobs SET state = 'dispatched', worker_id = ?, attempt = attempt + 1 "
                f"WHERE {which} AND (state = 'pending') IS TRUE "
                f"{_CARRIED if carry else 'RETURNING id, attempt'}", (worker_id, *values))
            for job_id, attempt, *_ in rows:
                done.placed.append(job_id)
                done.per_worker.setdefault(worker_id, []).append(job_id)
                attempt_rows.append((job_id, attempt, worker_id, params.names.get(worker_id)))
            if rows:
                done.wakeups.setdefault(worker_id, []).append(carried(rows) if carry else "")
    insert_rows(raw, "INSERT INTO attempts (job_id, attempt, worker_id, worker_name, state, "
                "dispatched_at)", "(?, ?, ?, ?, 'dispatched', {now})", attempt_rows)
    return done


def finish(raw: Cursor, params: FinishCycle) -> None:
    """The wake-ups, each with the jobs it carries."""
    if params.channels:
        notify(raw, params.channels, params.carried)


def notify(raw: Cursor, channels: Any, carried: dict[str, str] | None = None) -> None:
    """Bump each channel's counter (listeners poll it, see sqlite/listen.py) and set what
    the wake-up carries (``carried``, by channel: "" when nothing)."""
    payloads = carried or {}
    raw.many("INSERT INTO wakeups (channel, n, payload) VALUES (?, 1, ?) "
             "ON CONFLICT (channel) DO UPDATE SET n = n + 1, payload = excluded.payload",
             [(c, payloads.get(c, "")) for c in channels])
