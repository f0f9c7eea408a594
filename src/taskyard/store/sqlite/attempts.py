"""SQLite: what workers report — attempts that started and ended, fenced by the attempt
number, the job's state, the worker and its lease — and what is placed on a worker.
SQLite runs ``UPDATE … FROM`` row by row in C: a report is a few statements over a row
set (sqlite/rows.py: a ``VALUES`` list padded to a few shapes), whatever its batch."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from taskyard.store.cursor import Cursor
from taskyard.store.driver.params import EndAttempts, EndedAttempts, Placed, StartAttempts
from taskyard.store.sqlite.rows import member, row_set

_LEASED = ("EXISTS (SELECT 1 FROM workers w WHERE w.id = ? AND w.state = 'active' "
           "AND w.lease_expires_at >= {now})")
_START = (
    "WITH v(id, attempt, ago) AS ({rows}) "
    "UPDATE jobs SET state = 'running', started_at = {now} - v.ago, "
    "deadline = {now} - v.ago + jobs.timeout FROM v "
    "WHERE jobs.id = v.id AND jobs.attempt = v.attempt AND jobs.state = 'dispatched' "
    f"AND jobs.worker_id = ? AND {_LEASED} "
    "RETURNING jobs.id, jobs.attempt, jobs.started_at, jobs.graph_id, jobs.routing")
_ATTEMPT_START = (
    "WITH v(job, attempt, started) AS ({rows}) "
    "UPDATE attempts SET state = 'running', started_at = v.started FROM v "
    "WHERE attempts.job_id = v.job AND attempts.attempt = v.attempt")
# An attempt whose start is reported in the same batch ends straight from dispatched
# (``ago`` set): one write of the row instead of two.
_END = (
    "WITH v(id, attempt, state, code, res, err, delay, ago) AS ({rows}) "
    "UPDATE jobs SET "
    "state = CASE WHEN v.delay IS NULL THEN v.state ELSE 'pending' END, "
    "run_after = CASE WHEN v.delay IS NULL THEN jobs.run_after ELSE {now} + v.delay END, "
    "delayed_until = CASE WHEN v.delay > 0 THEN {now} + v.delay END, "
    "finished_at = CASE WHEN v.delay IS NULL THEN {now} ELSE NULL END, "
    "started_at = CASE WHEN v.ago IS NULL THEN jobs.started_at ELSE {now} - v.ago END, "
    "worker_id = NULL, deadline = NULL, exit_code = v.code, error = v.err, result = v.res "
    "FROM v WHERE jobs.id = v.id AND jobs.attempt = v.attempt AND (jobs.state = 'running' "
    "OR (jobs.state = 'dispatched' AND v.ago IS NOT NULL)) "
    f"AND jobs.worker_id = ? AND {_LEASED} "
    "RETURNING jobs.id, jobs.attempt, jobs.state, jobs.graph_id, jobs.routing, "
    "jobs.schedule_name")
_ATTEMPT_END = (
    "WITH v(job, attempt, state, ago, code, res, err, out, errt) AS ({rows}) "
    "UPDATE attempts SET state = v.state, "
    "started_at = COALESCE(attempts.started_at, {now} - v.ago), finished_at = {now}, "
    "exit_code = v.code, result = v.res, error = v.err, stdout_tail = v.out, "
    "stderr_tail = v.errt FROM v "
    "WHERE attempts.job_id = v.job AND attempts.attempt = v.attempt")
_ACTIVE_HERE = ("SELECT id, attempt, state FROM jobs "
                "WHERE worker_id = ? AND state IN ('dispatched', 'running')")
_DETAILS = ("SELECT j.id, j.attempt, j.type, j.args, j.timeout, j.graph_id, j.label, j.cost, "
            "j.priority, tt.handler, j.logical_time, j.trace_context FROM jobs j "
            "JOIN task_types tt ON tt.name = j.type "
            "WHERE {which} AND j.state = 'dispatched' AND j.worker_id = ?")


def start_attempts(raw: Cursor, params: StartAttempts) -> list[tuple[Any, ...]]:
    """The jobs first, then their attempts; the started rows (id, attempt, started at,
    graph, routing)."""
    w = params.worker_id
    rows = row_set(raw, _START, params.starts, (w, w))
    if rows:
        row_set(raw, _ATTEMPT_START, [(job, attempt, at) for job, attempt, at, _, _ in rows])
    return rows


def end_attempts(raw: Cursor, params: EndAttempts) -> EndedAttempts:
    """The jobs first, then the attempts of those that ended; their rows (id, attempt,
    state, graph, routing, schedule). The caller reads the edges: SQLite has no round
    trips to save."""
    w = params.worker_id
    rows = row_set(raw, _END, [e[:8] for e in params.ends], (w, w))
    done = {(r[0], r[1]) for r in rows}
    row_set(raw, _ATTEMPT_END, [
        (e.job_id, e.attempt, e.state, e.started_ago or 0.0, e.exit_code, e.result, e.error,
         e.stdout_tail, e.stderr_tail) for e in params.ends if (e.job_id, e.attempt) in done])
    return EndedAttempts(rows)


def set_prefetch(raw: Cursor, worker_id: int, prefetch: int) -> None:
    raw.run("UPDATE workers SET prefetch = ?, unpaced_prefetch = NULL WHERE id = ?",
            (prefetch, worker_id))


def placed_here(raw: Cursor, worker_id: int, known: Iterable[tuple[int, int]]) -> Placed:
    """Two steps: the active rows of this worker through its partial index (a few ids);
    the caller then reads the details of the new ones only (args may be large)."""
    seen = set(known)
    active = raw.all(_ACTIVE_HERE, (worker_id,))
    return Placed(None, [job for job, attempt, state in active
                         if state == "dispatched" and (job, attempt) not in seen],
                  frozenset((job, attempt) for job, attempt, _ in active))


def job_details(raw: Cursor, worker_id: int, ids: Sequence[int]) -> list[tuple[Any, ...]]:
    """What the worker needs to run the jobs of ``ids`` (at most 500) dispatched to it."""
    which, params = member("j.id", ids)
    return raw.all(_DETAILS.replace("{which}", which), (*params, worker_id))
