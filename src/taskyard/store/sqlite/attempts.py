"""SQLite: what workers report — attempts that started and ended, fenced by the attempt
number, the job's state, the worker and its lease — and what is placed on a worker.
SQLite runs ``UPDATE … FROM`` row by row in C: a report is a few statements over a row
set (sqlite/rows.py), whatever its batch."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from taskyard.model.records import Outcome, dumps
from taskyard.store.cursor import Cursor
from taskyard.store.driver.params import Placed

_LEASED = ("EXISTS (SELECT 1 FROM workers w WHERE w.id = ? AND w.state = 'active' "
           "AND w.lease_expires_at >= {now})")
# An attempt whose start is reported in the same batch ends straight from dispatched
# (``ago`` set): one write of the row instead of two.
_END = (
    "WITH v(id, attempt, state, code, res, err, delay, ago) AS ({rows}) "
    "UPDATE jobs SET "
    "state = CASE WHEN v.delay IS NULL THEN v.state ELSE 'pending' END, "
    "run_after = CASE WHEN v.delay IS NULL THEN jobs.run_after ELSE {now} + v.delay END, "
    "finished_at = CASE WHEN v.delay IS NULL THEN {now} ELSE NULL END, "
    "started_at = CASE WHEN v.ago IS NULL THEN jobs.started_at ELSE {now} - v.ago END, "
    "worker_id = NULL, deadline = NULL, exit_code = v.code, error = v.err, result = v.res "
    "FROM v WHERE {key} jobs.id = v.id AND jobs.attempt = v.attempt AND (jobs.state = 'running' "
    "OR (jobs.state = 'dispatched' AND v.ago IS NOT NULL)) "
    f"AND jobs.worker_id = ? AND {_LEASED} "
    "RETURNING jobs.id, jobs.attempt, jobs.state, jobs.graph_id, jobs.routing, "
    "jobs.schedule_name")
_END_TYPES = ("bigint", "integer", "text", "integer", "text", "text", "double precision",
              "double precision")
_ATTEMPT_END = (
    "WITH v(job, attempt, state, ago, code, res, err, out, errt) AS ({rows}) "
    "UPDATE attempts SET state = v.state, "
    "started_at = COALESCE(attempts.started_at, {now} - v.ago), finished_at = {now}, "
    "exit_code = v.code, result = v.res, error = v.err, stdout_tail = v.out, "
    "stderr_tail = v.errt FROM v "
    "WHERE {key} attempts.job_id = v.job AND attempts.attempt = v.attempt")
_ATTEMPT_END_TYPES = ("bigint", "integer", "text", "double precision", "integer", "text",
                      "text", "text", "text")


def end_attempts(raw: Cursor, worker_id: int, values: Sequence[tuple[Any, ...]],
                 part: Sequence[Outcome], ago: Mapping[tuple[int, int], float],
                 ) -> list[tuple[Any, ...]]:
    """End the jobs of ``values`` (see attempts.END_COLUMNS) fenced by attempt, state,
    worker and lease, then their attempts; the rows of the jobs that ended."""
    rows = raw.rows(_END, values, _END_TYPES, (worker_id, worker_id), key="jobs.id")
    done = {(r[0], r[1]) for r in rows}
    raw.rows(_ATTEMPT_END, [
        (o.job_id, o.attempt, o.state, ago.get((o.job_id, o.attempt), 0.0), o.exit_code,
         None if o.result is None else dumps(o.result), o.error, o.stdout_tail, o.stderr_tail)
        for o in part if (o.job_id, o.attempt) in done], _ATTEMPT_END_TYPES,
        key="attempts.job_id")
    return rows


_ACTIVE_HERE = ("SELECT id, attempt, state FROM jobs "
                "WHERE worker_id = ? AND state IN ('dispatched', 'running')")


def placed_here(raw: Cursor, worker_id: int, known: Iterable[tuple[int, int]]) -> Placed:
    """Two steps: the active rows of this worker through its partial index (a few ids);
    the caller then reads the details of the new ones only (args may be large)."""
    seen = set(known)
    active = raw.all(_ACTIVE_HERE, (worker_id,))
    return Placed(None, [job for job, attempt, state in active
                         if state == "dispatched" and (job, attempt) not in seen],
                  frozenset((job, attempt) for job, attempt, _ in active))
