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
    "RETURNING id, attempt) "
    "INSERT INTO attempts (job_id, attempt, worker_id, worker_name, state, dispatched_at) "
    "SELECT id, attempt, %(w)s, %(name)s, 'dispatched', {now} FROM d "
    "RETURNING job_id, attempt")
