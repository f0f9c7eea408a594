"""PostgreSQL statements of the scheduling cycle that fold several reads or settings
into one round trip (a cycle runs inline on every submit and completion: each round
trip is part of a job's latency)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from taskyard.store.base import pg_channel
from taskyard.store.raw import Raw

_ACTIVE = ("CASE WHEN locks = '[]' THEN 0 ELSE id END")
SNAPSHOT = (
    # What the planner starts from, in one statement: live workers, what is dispatched or
    # running (summed per worker and type; jobs with locks one by one), queue limits.
    "SELECT "
    "(SELECT json_agg(json_build_array(id, name, pools, capacity, prefetch)) FROM workers "
    "WHERE state = 'active' AND lease_expires_at >= {now}), "
    "(SELECT json_agg(json_build_array(holder, type, worker_id, cost, locks, n)) FROM ("
    f"SELECT {_ACTIVE} AS holder, type, worker_id, SUM(cost) AS cost, locks, COUNT(*) AS n "
    "FROM jobs WHERE state IN ('dispatched', 'running') "
    f"GROUP BY worker_id, type, locks, {_ACTIVE}) AS a), "
    "(SELECT json_agg(json_build_array(name, max_queue_length)) FROM task_types "
    "WHERE max_queue_length IS NOT NULL), "
    # This statement is planned before it runs: the setting applies to the candidate
    # reads that follow (see CycleTx.ordered_candidates), not to the reads above.
    "set_config('enable_bitmapscan', 'off', true)")

_FINISH = (
    "SELECT set_config('enable_bitmapscan', 'on', true), "
    "(SELECT count(pg_notify(c, '')) FROM unnest(%(channels)s::text[]) AS c)")


_PENDING_LISTS = (
    "WITH RECURSIVE lists(p) AS ("
    "SELECT MIN(pools) FROM jobs WHERE state = 'pending' "
    "UNION ALL SELECT (SELECT MIN(pools) FROM jobs WHERE state = 'pending' AND pools > lists.p) "
    "FROM lists WHERE lists.p IS NOT NULL), "
    # The first list's first page, as CycleTx.candidates reads it (through the
    # placement index, in placement order, stopped at the page size).
    "first AS (SELECT id, type, priority, pools, cost, locks FROM jobs "
    "WHERE state = 'pending' AND pools = (SELECT MIN(p) FROM lists) "
    "AND (run_after IS NULL OR run_after <= {now}) ORDER BY priority DESC, id LIMIT %(n)s) "
    "SELECT (SELECT json_agg(p ORDER BY p) FROM lists WHERE p IS NOT NULL), "
    "(SELECT json_agg(json_build_array(id, type, priority, pools, cost, locks) "
    "ORDER BY priority DESC, id) FROM first)")


def lists_and_first_page(raw: Raw, page: int) -> tuple[list[str], list[Any]]:
    """The distinct pools lists of pending jobs (as CycleTx.pending_pool_lists), and the
    rows of the first page of the first list (as CycleTx.candidates). Reading that page
    when the first list has no room costs at most one page, which follows the free
    capacity, not the backlog."""
    lists, first = raw.pg(_PENDING_LISTS, {"n": page})[0]
    return lists or [], first or []


def snapshot(raw: Raw) -> tuple[list[Any], list[Any], list[Any]]:
    """Rows of workers, active jobs and queue limits (see :data:`SNAPSHOT`); bitmap
    scans are off for the rest of the transaction, until :func:`finish`."""
    workers, active, limits, _ = raw.pg(SNAPSHOT, {})[0]
    return workers or [], active or [], limits or []


def finish(raw: Raw, channels: Sequence[str]) -> None:
    """Bitmap scans back on, and the wake-ups of ``channels``, in one statement."""
    raw.pg(_FINISH, {"channels": [pg_channel(c) for c in channels]})


# "IS TRUE": PostgreSQL would otherwise walk the partial index of pending jobs (all of
# them) instead of looking the ids up.
DISPATCH = (
    "WITH d AS (UPDATE jobs SET state = 'dispatched', worker_id = %(w)s, "
    "attempt = attempt + 1 WHERE id = ANY(%(ids)s::bigint[]) AND (state = 'pending') IS TRUE "
    "RETURNING id, attempt), "
    "a AS (INSERT INTO attempts (job_id, attempt, worker_id, worker_name, state, dispatched_at) "
    "SELECT id, attempt, %(w)s, %(name)s, 'dispatched', {now} FROM d "
    "RETURNING job_id, attempt) "
    # Evaluated only when a job was dispatched (no row, no wake-up): the worker's
    # wake-up (%(wake)s: its channel, or none when the caller takes the jobs itself)
    # and bitmap scans back on, as finish() would do.
    "SELECT job_id, attempt, set_config('enable_bitmapscan', 'on', true), "
    "(SELECT count(pg_notify(c, '')) FROM unnest(%(wake)s::text[]) AS c) FROM a")
