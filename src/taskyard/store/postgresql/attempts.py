"""PostgreSQL: what workers report — attempts that started and ended, fenced by the
attempt number, the job's state, the worker and its lease — and what is placed on a
worker. Each is one statement (a row set as JSON): a worker's report is one round trip
per step, whatever its batch."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from taskyard.store.cursor import STREAM_ROWS, Cursor, id_array, json_rows
from taskyard.store.driver.params import EndAttempts, EndedAttempts, Placed, StartAttempts
from taskyard.store.portable.dependents import STILL_WAITING
from taskyard.store.postgresql import pq_pipeline
from taskyard.store.postgresql.cycle import GENERIC_PLANS
from taskyard.store.postgresql.rows import Parameters, named, pg_row_set, pipelined_results

_LEASED = ("EXISTS (SELECT 1 FROM workers w WHERE w.id = %(w)s AND w.state = 'active' "
           "AND w.lease_expires_at >= {now})")
_START = (
    "WITH v(id, attempt, ago) AS ("
    + pg_row_set(("bigint", "integer", "double precision"), "rows") + "), "
    "started AS (UPDATE jobs SET state = 'running', started_at = {now} - v.ago, "
    "deadline = {now} - v.ago + jobs.timeout FROM v "
    "WHERE jobs.id = ANY(%(ids)s::bigint[]) AND jobs.id = v.id AND jobs.attempt = v.attempt "
    f"AND jobs.state = 'dispatched' AND jobs.worker_id = %(w)s AND {_LEASED} "
    "RETURNING jobs.id, jobs.attempt, jobs.started_at, jobs.graph_id, jobs.routing), "
    "a AS (UPDATE attempts SET state = 'running', started_at = started.started_at "
    "FROM started WHERE attempts.job_id = started.id AND attempts.attempt = started.attempt) "
    "SELECT * FROM started")
# The jobs and their attempts end in one statement. The attempts are looked up from the
# rows ``done`` returns, one index probe each: an ``= ANY(ids)`` beside that join would
# be evaluated again on every probe (an ending of 300 jobs took 2.5x as long with it).
# It also keeps generic plans for the rest of the report's transaction (GENERIC_PLANS,
# once, as a one-time filter): in ``auto`` mode the release of the dependents that
# follows (their edges, their rows, their update, each ``id = ANY($1)``) was planned
# afresh at every report, its custom plans, which know the array's length, always
# costed below the generic ones — 115 µs of each link of a chain
# (tests/store/test_dispatch_checks.py).
_END_TYPES = ("bigint", "integer", "text", "integer", "text", "text", "double precision",
              "double precision", "text", "text")
_END = (
    "WITH v(id, attempt, state, code, res, err, delay, ago, out, errt) AS ("
    + pg_row_set(_END_TYPES, "rows") + "), "
    "done AS (UPDATE jobs SET "
    "state = CASE WHEN v.delay IS NULL THEN v.state ELSE 'pending' END, "
    "run_after = CASE WHEN v.delay IS NULL THEN jobs.run_after ELSE {now} + v.delay END, "
    "delayed_until = CASE WHEN v.delay > 0 THEN {now} + v.delay END, "
    "finished_at = CASE WHEN v.delay IS NULL THEN {now} ELSE NULL END, "
    "started_at = CASE WHEN v.ago IS NULL THEN jobs.started_at ELSE {now} - v.ago END, "
    "worker_id = NULL, deadline = NULL, exit_code = v.code, error = v.err, result = v.res "
    "FROM v WHERE jobs.id = ANY(%(ids)s::bigint[]) AND jobs.id = v.id "
    "AND jobs.attempt = v.attempt AND (jobs.state = 'running' "
    "OR (jobs.state = 'dispatched' AND v.ago IS NOT NULL)) AND jobs.worker_id = %(w)s "
    f"AND {_LEASED} "
    "RETURNING jobs.id, jobs.attempt, jobs.state, jobs.graph_id, jobs.routing, "
    "jobs.schedule_name), "
    "a AS (UPDATE attempts SET state = v.state, "
    "started_at = COALESCE(attempts.started_at, {now} - COALESCE(v.ago, 0)), "
    "finished_at = {now}, exit_code = v.code, result = v.res, error = v.err, "
    "stdout_tail = v.out, stderr_tail = v.errt FROM done JOIN v ON v.id = done.id "
    "AND v.attempt = done.attempt WHERE attempts.job_id = done.id "
    "AND attempts.attempt = done.attempt) "
    f"SELECT * FROM done WHERE (SELECT {GENERIC_PLANS}) IS NOT NULL")
# The active rows of this worker, with the details of the new ones only (args may be
# large), in one statement: on a worker's wake-up path.
_MINE = (
    "SELECT j.id, j.attempt, tt.handler, j.type, "
    "CASE WHEN tt.name IS NULL THEN NULL ELSE j.args END, j.timeout, j.graph_id, j.label, "
    "j.cost, j.priority, j.logical_time, j.trace_context FROM jobs j "
    "LEFT JOIN task_types tt "
    "ON tt.name = j.type "
    "AND j.state = 'dispatched' AND (j.id || ':' || j.attempt) <> ALL(%(known)s::text[]) "
    "WHERE j.worker_id = %(w)s AND j.state IN ('dispatched', 'running')")
_DETAILS = ("SELECT j.id, j.attempt, j.type, j.args, j.timeout, j.graph_id, j.label, j.cost, "
            "j.priority, tt.handler, j.logical_time, j.trace_context FROM jobs j "
            "JOIN task_types tt ON tt.name = j.type "
            "WHERE j.id = ANY(%(ids)s::bigint[]) AND j.state = 'dispatched' "
            "AND j.worker_id = %(w)s")


def start_attempts(raw: Cursor, params: StartAttempts) -> list[tuple[Any, ...]]:
    """The jobs and their attempts, in one statement; the started rows (id, attempt,
    started at, graph, routing)."""
    return named(raw, _START, {"rows": json_rows(params.starts), "w": params.worker_id,
                               "ids": id_array(s.job_id for s in params.starts)})


def end_attempts(raw: Cursor, params: EndAttempts) -> EndedAttempts:
    """The jobs and their attempts, in one statement; the rows of the jobs that ended
    (id, attempt, state, graph, routing, schedule). In the same round trip, the edges
    from all of them (what the dependents' release reads next): a statement of its own,
    run once the ends' has finished, so that it sees an edge that a launch committed
    while the end waited for the launch's lock on its prerequisite (submissions.py:
    prior_runs). A report of jobs that have no dependents, the common case, then costs
    one round trip less. A report of a few ends (a hand-off in a chain) locks their
    waiting dependents too, in one more statement after the edges': the release then
    decides from those rows, a round trip less again."""
    ids = id_array(e.job_id for e in params.ends)
    tx = pq_pipeline.transformer(raw.dbapi, raw.kept)
    statements: list[tuple[str, Parameters]] = [
        (_END, {"rows": json_rows(params.ends), "w": params.worker_id, "ids": ids}),
        (_EDGES, {"ids": ids})]
    if len(params.ends) <= LOCK_WAITING_ENDS:
        statements.append((_WAITING, {"ids": ids, "most": WAITING_MOST + 1}))
    ended, edges, *waiting = pipelined_results(raw, statements, tx=tx)
    locked = pq_pipeline.rows(tx, waiting[0]) if waiting else None
    return EndedAttempts(pq_pipeline.rows(tx, ended),
                         pq_pipeline.stream(raw.dbapi, edges, STREAM_ROWS),
                         locked if locked is not None and len(locked) <= WAITING_MOST
                         else None)


_EDGES = ("SELECT job_id, requires_id, condition FROM dependencies "
          "WHERE requires_id = ANY(%(ids)s::bigint[])")
LOCK_WAITING_ENDS = 32
"""Most ends of a report whose waiting dependents are locked with them (a larger report,
W1's, mostly ends jobs without dependents: the statement would be a cost, not a saving)."""
WAITING_MOST = 500
"""Most waiting dependents so locked, as many as the release locks at once
(transitions/dependents.py: CHUNK); with more, the release locks them itself."""
# In id order, as the release locks them chunk by chunk (two reports that share
# dependents lock them in the same order: the ids sorted first, then each job locked in
# turn); each job through the primary key, whatever the plan (``jobs.id = ANY(...)``
# was planned as a scan of the whole table while it was small); those beyond the limit
# are locked by the release.
_WAITING = ("SELECT j.id, j.unmet_deps, j.dep_failures, j.convergence, j.kind FROM ("
            "SELECT DISTINCT job_id FROM dependencies "
            "WHERE requires_id = ANY(%(ids)s::bigint[]) ORDER BY job_id) AS d "
            "CROSS JOIN LATERAL (SELECT id, unmet_deps, dep_failures, convergence, kind "
            f"FROM jobs WHERE jobs.id = d.job_id AND {STILL_WAITING} FOR NO KEY UPDATE) AS j "
            "ORDER BY d.job_id LIMIT %(most)s")


def set_prefetch(raw: Cursor, worker_id: int, prefetch: int) -> None:
    raw.run("UPDATE workers SET prefetch = ?, unpaced_prefetch = NULL WHERE id = ?",
            (prefetch, worker_id))


def placed_here(raw: Cursor, worker_id: int, known: Iterable[tuple[int, int]]) -> Placed:
    """What is placed on the worker, with the details of what it does not know yet."""
    rows = named(raw, _MINE, {"w": worker_id, "known": [f"{j}:{a}" for j, a in known]})
    fresh = sorted(((job, attempt, type_, args, timeout, graph, label, cost, prio, handler,
                     tick, trace) for job, attempt, handler, type_, args, timeout, graph, label,
                    cost, prio, tick, trace in rows if handler is not None),
                   key=lambda r: (-r[8], r[0]))
    return Placed(fresh, [r[0] for r in fresh], frozenset((r[0], r[1]) for r in rows))


def job_details(raw: Cursor, worker_id: int, ids: Sequence[int]) -> list[tuple[Any, ...]]:
    """What the worker needs to run the jobs of ``ids`` dispatched to it."""
    return named(raw, _DETAILS, {"ids": id_array(ids), "w": worker_id})
