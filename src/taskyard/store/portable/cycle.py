"""The cycle's maintenance steps (seed 001's manager loop), written once for both
backends: which steps have work, expelling workers whose lease expired, failing
overdue attempts, requeueing suspended jobs; and the cycle's count."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from taskyard.store.cursor import Cursor
from taskyard.store.driver.cycle_params import ReadCandidates
from taskyard.store.driver.params import FailOverdue
from taskyard.store.portable.waits import AWAITING
from taskyard.store.schema.base import DELAYED, READY

TIMEOUT_GRACE = 10.0
"""Seconds past an attempt's deadline before the scheduler fails it itself (the
worker normally kills the child at the deadline; this covers a vanished worker)."""


ONCE = "(SELECT {now})"
"""SQL: the database clock read once per statement, before the scans: a condition on it
can bound an index scan (see :func:`maintenance_checks`). Only where it was measured to
help: the planner weighs a value it cannot know otherwise than the volatile call, and
read so in every statement a heartbeat (an update by id) took 0.26 ms of server time at
200 workers against 0.11 (docs/operations/postgresql.md)."""


def maintenance_checks(false: str, grace: str, timers: str = "",
                       delayed: str = "") -> tuple[str, str, str, str, str, str]:
    """SQL conditions, in CycleTx.maintenance_work's order: a live worker's lease ran
    out; an attempt is past its deadline and ``grace`` (a parameter marker); jobs are
    suspended; a schedule is due; an awaiting job's timeout passed (the earliest
    deadline, the first entry of the timer index whatever the number of awaiting jobs:
    an EXISTS over ``deadline <= now`` let PostgreSQL's planner, which cannot know how
    many are due, scan every job, 149 ms with 100,000 awaiting; MIN(deadline) scans the
    whole index on SQLite, 58 ms; see bench/awaiting.py); ``timers``: how a backend must
    be told to use the index); a delayed job is due (the first entry of ``ix_jobs_delayed``
    likewise; ``delayed``: how a backend must be told to use it). ``false``: the backend's
    false, as the schedules' partial index is written (its planner must see it to use
    the index). A cycle reads them in one statement; a submit placing its job from the
    last cycle's snapshot checks that none has work, as a cycle would have found
    (postgresql/jobs.py)."""
    # The clock as a subquery, read once (``ONCE``): PostgreSQL's clock_timestamp() is
    # volatile, and a condition on it was a filter run on every entry the index gave
    # (every live worker's lease, each cycle), where a value read first bounds the scan.
    return ("EXISTS (SELECT 1 FROM workers WHERE state = 'active' "
            f"AND lease_expires_at < {ONCE})",
            "EXISTS (SELECT 1 FROM jobs WHERE state IN ('dispatched', 'running') "
            f"AND deadline < {ONCE} - {grace})",
            "EXISTS (SELECT 1 FROM jobs WHERE state = 'suspended')",
            f"EXISTS (SELECT 1 FROM schedules WHERE paused = {false} AND next_run <= {ONCE})",
            f"EXISTS (SELECT 1 FROM (SELECT deadline FROM jobs {timers} WHERE {AWAITING} "
            "AND deadline IS NOT NULL ORDER BY deadline LIMIT 1) AS t "
            f"WHERE t.deadline <= {ONCE})",
            f"EXISTS (SELECT 1 FROM (SELECT delayed_until FROM jobs {delayed} WHERE {DELAYED} "
            f"ORDER BY delayed_until LIMIT 1) AS d WHERE d.delayed_until <= {ONCE})")


def expel_expired_workers(raw: Cursor) -> list[int]:
    """Workers whose lease ran out (database clock) leave; their ids."""
    return [int(i) for (i,) in raw.all(
        "UPDATE workers SET state = 'expelled', stopped_at = {now} "
        "WHERE state = 'active' AND lease_expires_at < {now} RETURNING id")]


def next_delayed(delayed: str = "") -> str:
    """SQL: seconds until the earliest delayed job is due on the database's clock
    (negative: due; NULL: none), from the first entry of ``ix_jobs_delayed``
    (``delayed``: how a backend must be told to use it). Read with the maintenance's
    question: the scheduler sleeps no longer than that (scheduler/daemon.py)."""
    return (f"(SELECT delayed_until FROM jobs {delayed} WHERE {DELAYED} "
            f"ORDER BY delayed_until LIMIT 1) - {ONCE}")


def read_next_delayed(raw: Cursor, *, index: str = "") -> float | None:
    """:func:`next_delayed` alone (``index``: as there): what a scheduler's cycle that does
    not maintain reads (scheduler/cycle.py)."""
    row = raw.first("SELECT " + next_delayed(index))
    return None if row is None else row[0]


STAGE_LIMIT = 5_000
"""Most delayed jobs one maintenance makes placeable: a cycle that stages the jobs of one
instant (a million due at midnight) holds the lock for a bounded time, and places these
before the next stages more (the scheduler maintains again after a staging)."""


def stage_due_jobs(raw: Cursor, *, index: str = "") -> int:
    """Delayed jobs due on the database's clock join the placement index (their
    ``delayed_until`` cleared), through ``ix_jobs_delayed`` (``index``: how a backend
    must be told to use it), the earliest first, at most :data:`STAGE_LIMIT`; how many.
    SQLite's: it reads the ``IN`` list once whatever it knows of the table; PostgreSQL has
    its own (``postgresql/jobs.py:STAGE_DUE``)."""
    return raw.run(
        "UPDATE jobs SET delayed_until = NULL WHERE state = 'pending' "
        f"AND id IN (SELECT id FROM jobs {index} WHERE {DELAYED} AND delayed_until <= {{now}} "
        "ORDER BY delayed_until LIMIT ?)", (STAGE_LIMIT,))


def read_overdue(raw: Cursor, grace: float) -> list[tuple[Any, ...]]:
    """Attempts past their deadline and ``grace``: (job, attempt, worker, graph, routing).
    Running jobs only (a dispatched job has no deadline yet), through the partial index
    of active jobs: this runs in every maintenance step."""
    return raw.all("SELECT id, attempt, worker_id, graph_id, routing FROM jobs "
                   "WHERE state IN ('dispatched', 'running') AND deadline < {now} - ?", (grace,))


def fail_overdue(raw: Cursor, params: FailOverdue) -> bool:
    """One overdue attempt fails with exit code 130 (guarded by its attempt number): the
    job is pending again after its retry delay, or failed; False: it had moved on."""
    retry = params.retry_delay is not None
    done = raw.run(
        "UPDATE jobs SET worker_id = NULL, deadline = NULL, exit_code = 130, error = ?, "
        "state = ?, run_after = CASE WHEN ? THEN {now} + ? ELSE run_after END, "
        "delayed_until = {now} + ?, "
        "finished_at = CASE WHEN ? THEN finished_at ELSE {now} END "
        "WHERE id = ? AND attempt = ? AND state IN ('dispatched', 'running')",
        (params.why, "pending" if retry else "failed", retry, params.retry_delay or 0.0,
         params.retry_delay if retry and params.retry_delay else None, retry,
         params.job_id, params.attempt))
    if not done:
        return False
    raw.run("UPDATE attempts SET state = 'failed', exit_code = 130, finished_at = {now}, "
            "error = ? WHERE job_id = ? AND attempt = ?",
            (params.why, params.job_id, params.attempt))
    return True


def read_suspended(raw: Cursor, limit: int) -> list[tuple[Any, ...]]:
    """Suspended jobs, at most ``limit``: (id, worker losses, max worker losses)."""
    return raw.all("SELECT id, worker_losses, max_worker_losses FROM jobs "
                   "WHERE state = 'suspended' LIMIT ?", (limit,))


def error_suspended(raw: Cursor, ids: Sequence[int], why: str) -> list[tuple[Any, ...]]:
    """Suspended jobs of ``ids`` end in error (lost their worker too often): (id,
    graph, routing) of those that did."""
    which, params = raw.member("id", ids)
    return raw.all(f"UPDATE jobs SET state = 'error', finished_at = {{now}}, error = ? "
                   f"WHERE {which} AND state = 'suspended' RETURNING id, graph_id, routing",
                   (why, *params))


def requeue_suspended(raw: Cursor, ids: Sequence[int]) -> int:
    """Suspended jobs of ``ids`` go back to pending; how many."""
    which, params = raw.member("id", ids)
    return raw.run(f"UPDATE jobs SET state = 'pending' WHERE {which} AND state = 'suspended'",
                   params)


def record_cycle(raw: Cursor, holder: str) -> None:
    """A cycle that changed something is counted (idle cycles write nothing)."""
    raw.run("UPDATE scheduler_state SET cycles = cycles + 1, holder = ?, "
            "last_cycle_finished_at = {now} WHERE id = 1", (holder,))


def cycles_run(raw: Cursor) -> int:
    """How many cycles have completed."""
    row = raw.first("SELECT cycles FROM scheduler_state WHERE id = 1")
    assert row is not None
    return int(row[0])


def read_candidates(raw: Cursor, params: ReadCandidates, *, index: str = "") -> list[Any]:
    """Pending jobs due now whose pools list is ``params.pools``, in placement order,
    after the keyset ``params.after``: through the partial index ``ix_jobs_pending_pools``
    (``index``: how a backend must be told to use it), stopped at ``params.limit`` —
    O(limit) whatever the backlog. Jobs of (type, rate key) in ``params.skip`` are left
    out in SQL: the index is walked past them, but they are not returned (a backlog
    held by a rate limit costs a fraction, and the jobs behind it are reached)."""
    head = (f"SELECT id, type, priority, pools, cost, locks, rate_key FROM jobs {index} "
            f"WHERE {READY} AND pools = ? "
            "AND (run_after IS NULL OR run_after <= {now}) ")
    values: list[Any] = [params.pools]
    if params.skip:
        which, spent = raw.member("type || ' ' || COALESCE(rate_key, '')",
                                  [f"{t} {k}" for t, k in params.skip])
        head, values = f"{head}AND NOT ({which}) ", [params.pools, *spent]
    limit, after = params.limit, params.after
    if after is None:
        return raw.all(f"{head} ORDER BY priority DESC, id LIMIT ?", (*values, limit))
    # The rest of the last page's priority, then lower priorities: two index ranges, so
    # a page starts where the last one ended (an OR of the two would re-read the list
    # from its head).
    return raw.all(
        f"SELECT * FROM (SELECT * FROM ({head} AND priority = ? AND id > ? "
        f"ORDER BY id LIMIT ?) AS same UNION ALL SELECT * FROM ({head} "
        "AND priority < ? ORDER BY priority DESC, id LIMIT ?) AS lower) AS page "
        "ORDER BY priority DESC, id LIMIT ?",
        (*values, after[0], after[1], limit, *values, after[0], limit, limit))
