"""SQLite's statements on the hot path: inserting jobs and edges, ending attempts,
looking up what is placed on a worker, dispatching, the pools lists of the backlog.

SQLite runs ``INSERT … RETURNING`` and ``UPDATE … FROM`` row by row in C: plain
multi-row statements are its fast path, and its write transactions are exclusive, so
facts like "ids are consecutive" hold for the length of one.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from taskyard.model.records import Outcome, dumps
from taskyard.store.cursor import Cursor
from taskyard.store.driver.results import Dispatched, Placed, slices
from taskyard.store.driver.wakeup_payloads import CARRY_JOBS, carried
from taskyard.store.sqlite.rows import insert_values
from taskyard.store.transitions.events import EVENT_TYPES, INSERT_EVENTS, EventCursor

EDGE_TYPES = ("bigint", "bigint", "text")


def insert_edges(raw: Cursor, edges: Sequence[tuple[int, int, str]]) -> None:
    """Dependency edges (job, the job it requires, condition)."""
    raw.insert("INSERT INTO dependencies (job_id, requires_id, condition)", "c1, c2, c3",
               edges, EDGE_TYPES)


def insert_jobs(raw: Cursor, columns: Sequence[str], values: Iterable[tuple[Any, ...]],
                count: int) -> list[int]:
    """Insert ``count`` (> 1) job rows; their ids in order. Our write transaction is
    exclusive and INTEGER PRIMARY KEY ids are max(id) + 1: the rows get consecutive
    ids, checked after the insert (SQLite runs an INSERT … RETURNING row by row)."""
    (before,) = raw.first("SELECT MAX(id) FROM jobs") or (0,)
    first = int(before or 0) + 1
    insert_values(raw, f"INSERT INTO jobs ({', '.join(columns)}, created_at)",
                  f"({', '.join('?' for _ in columns)}, {{now}})", list(values))
    (last,) = raw.first("SELECT MAX(id) FROM jobs") or (0,)
    if last != first + count - 1:
        raise RuntimeError("job ids were not consecutive; refusing to guess them")
    return list(range(first, first + count))


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


_CARRIED = ("RETURNING id, attempt, (SELECT handler FROM task_types WHERE name = jobs.type), "
            "type, args, timeout, graph_id, label, cost, priority")
"""A dispatch of a few jobs returns what their worker's wake-up carries (wakeup_jobs)."""


def dispatch(raw: Cursor, by_worker: Mapping[int, Sequence[int]], names: Mapping[int, str], *,
             quiet: set[str], events: list[tuple[Any, ...]] | None,
             scans_off: bool) -> Dispatched:
    """pending → dispatched with a new attempt number (guarded), and the attempts; per
    statement, what its worker's wake-up carries (sent by finish_cycle)."""
    done = Dispatched()
    attempt_rows: list[tuple[int, int, int, str | None]] = []
    for worker_id, ids in by_worker.items():
        for part in slices(ids):
            which, params = raw.member("id", part)
            carry = len(part) <= CARRY_JOBS
            rows = raw.all(
                "UPDATE jobs SET state = 'dispatched', worker_id = ?, attempt = attempt + 1 "
                f"WHERE {which} AND (state = 'pending') IS TRUE "
                f"{_CARRIED if carry else 'RETURNING id, attempt'}", (worker_id, *params))
            for job_id, attempt, *_ in rows:
                done.placed.append(job_id)
                done.per_worker.setdefault(worker_id, []).append(job_id)
                attempt_rows.append((job_id, attempt, worker_id, names.get(worker_id)))
            if rows:
                done.carried.setdefault(worker_id, []).append(carried(rows) if carry else "")
    raw.insert("INSERT INTO attempts (job_id, attempt, worker_id, worker_name, state, "
               "dispatched_at)", "c1, c2, c3, c4, 'dispatched', {now}", attempt_rows,
               ("bigint", "integer", "bigint", "text"))
    return done


_HINT = "INDEXED BY ix_jobs_pending_pools"


def pools_lists(raw: Cursor, page: int) -> tuple[list[str], None]:
    """The distinct pools lists (as stored) of pending jobs: one index probe each (a
    loose index scan), however many jobs share them. No first page read ahead."""
    rows = raw.all(
        "WITH RECURSIVE lists(p) AS ("
        f"SELECT MIN(pools) FROM jobs {_HINT} WHERE state = 'pending' "
        "UNION ALL SELECT (SELECT MIN(pools) FROM jobs "
        f"{_HINT} WHERE state = 'pending' AND pools > lists.p) "
        "FROM lists WHERE lists.p IS NOT NULL) SELECT p FROM lists WHERE p IS NOT NULL")
    return [p for (p,) in rows], None


def insert_events(raw: Cursor, rows: Sequence[tuple[Any, ...]]) -> None:
    """Buffered events (listeners of ``events`` watch the newest id: no wake-up row)."""
    raw.insert(*INSERT_EVENTS, rows, EVENT_TYPES)


_EVENT_COLUMNS = "id, 0, topic, routing_key, payload, created_at"


def events_after(raw: Cursor, after: EventCursor, topic: str | None,
                 limit: int) -> list[tuple[Any, ...]]:
    """Events after the cursor: SQLite commits in id order."""
    where = "" if topic is None else " AND topic = ?"
    return raw.all(f"SELECT {_EVENT_COLUMNS} FROM events WHERE id > ?{where} "
                   "ORDER BY id LIMIT ?", (after.id, *([] if topic is None else [topic]), limit))


def events_last(raw: Cursor, count: int, topic: str | None) -> list[tuple[Any, ...]]:
    """The newest ``count`` events, newest first."""
    where = "" if topic is None else " WHERE topic = ?"
    return raw.all(f"SELECT {_EVENT_COLUMNS} FROM events{where} ORDER BY id DESC LIMIT ?",
                   (*([] if topic is None else [topic]), count))


def event_cursor(raw: Cursor, event_id: int) -> EventCursor:
    return EventCursor(0, event_id)
