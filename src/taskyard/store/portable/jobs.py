"""Jobs' transitions written once for both backends: cancel."""

from __future__ import annotations

from typing import Any

from taskyard.store.cursor import Cursor
from taskyard.store.driver.params import CancelJob

_ACTIVE = "('dispatched', 'running')"


def read_job_state(raw: Cursor, job_id: int) -> tuple[Any, ...] | None:
    """(state, worker, graph, routing) of job ``job_id``; None if there is none."""
    return raw.first("SELECT state, worker_id, graph_id, routing FROM jobs WHERE id = ?",
                     (job_id,))


def cancel_job(raw: Cursor, params: CancelJob) -> bool:
    """The job is canceled, guarded by the state it was read in (False: it moved on); a
    dispatched or running one keeps ``cancel_requested`` for its worker, and its
    attempt is canceled."""
    active = params.state in ("dispatched", "running")
    done = raw.run("UPDATE jobs SET state = 'canceled', worker_id = NULL, deadline = NULL, "
                   "cancel_requested = ?, finished_at = {now} WHERE id = ? AND state = ?",
                   (active, params.job_id, params.state))
    if done != 1:
        return False
    if active:
        raw.run("UPDATE attempts SET state = 'canceled', finished_at = {now} "
                f"WHERE job_id = ? AND state IN {_ACTIVE}", (params.job_id,))
    return True
