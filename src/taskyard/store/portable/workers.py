"""Workers' jobs when they are lost or stop, written once for both backends."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from taskyard.store.cursor import Cursor
from taskyard.store.driver.params import SuspendJobs


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
