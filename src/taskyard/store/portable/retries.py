"""Running a failed job once more (``job retry``), written once for both backends: the
job reset, its dependents that ended because of it reopened, its graph running again."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from taskyard.store.cursor import Cursor
from taskyard.store.driver.params import ReopenJob

_UNDONE = "('dependency_failed', 'skipped')"


def parent_edges(raw: Cursor, job_id: int) -> list[tuple[Any, ...]]:
    """The job's parent edges: (parent, condition, the parent's state)."""
    return raw.all("SELECT d.requires_id, d.condition, p.state FROM dependencies d "
                   "JOIN jobs p ON p.id = d.requires_id WHERE d.job_id = ?", (job_id,))


def count_failures(raw: Cursor, job_id: int) -> int:
    """How many of the job's attempts ended failed or error."""
    row = raw.first("SELECT COUNT(*) FROM attempts WHERE job_id = ? "
                    "AND state IN ('failed', 'error')", (job_id,))
    assert row is not None
    return int(row[0])


def reset_job(raw: Cursor, params: ReopenJob, failures: int) -> bool:
    """The job runs again (``retries``: the failures so far, so that one more attempt
    is left), guarded by the state it was read in; False: it moved on."""
    return raw.run(
        "UPDATE jobs SET state = ?, retries = ?, run_after = NULL, delayed_until = NULL, "
        "finished_at = NULL, result = NULL, exit_code = NULL, error = NULL, "
        "cancel_requested = ?, unmet_deps = ?, dep_failures = 0 WHERE id = ? AND state = ?",
        (params.state, failures, False, params.unmet, params.job_id, params.was)) == 1


def undone_children(raw: Cursor, parents: Sequence[int]) -> list[tuple[Any, ...]]:
    """The dependents of ``parents`` that ended dependency_failed or skipped: (id,
    graph, routing, convergence, kind)."""
    which, params = raw.member("d.requires_id", parents)
    return raw.all("SELECT DISTINCT j.id, j.graph_id, j.routing, j.convergence, j.kind "
                   "FROM dependencies d JOIN jobs j ON j.id = d.job_id "
                   f"WHERE {which} AND j.state IN {_UNDONE}", params)


def reopen_child(raw: Cursor, params: ReopenJob) -> None:
    """A dependent waits (or is pending) again, its counters as its edges now stand."""
    raw.run("UPDATE jobs SET state = ?, unmet_deps = ?, dep_failures = ?, finished_at = NULL, "
            f"error = NULL WHERE id = ? AND state IN {_UNDONE}",
            (params.state, params.unmet, params.fails, params.job_id))


def uncount_done(raw: Cursor, graph_id: int, count: int) -> tuple[Any, ...] | None:
    """``count`` of the graph's jobs are no longer done: (state, routing) after it."""
    return raw.first("UPDATE graphs SET jobs_done = jobs_done - ?, stalled_at = NULL, "
                     "last_progress_at = {now} WHERE id = ? RETURNING state, routing",
                     (count, graph_id))


def run_graph_again(raw: Cursor, graph_id: int) -> None:
    raw.run("UPDATE graphs SET state = 'running', finished_at = NULL WHERE id = ?",
            (graph_id,))


def failed_jobs_of(raw: Cursor, graph_id: int) -> list[tuple[Any, ...]]:
    """The graph's failed, errored and canceled jobs, with the conditions of the edges
    from each: (id, state, condition or None)."""
    return raw.all("SELECT j.id, j.state, d.condition FROM jobs j "
                   "LEFT JOIN dependencies d ON d.requires_id = j.id WHERE j.graph_id = ? "
                   "AND j.state IN ('failed', 'error', 'canceled')", (graph_id,))
