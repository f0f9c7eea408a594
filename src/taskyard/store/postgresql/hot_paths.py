"""PostgreSQL's statements on the hot path: inserting jobs and edges, ending attempts,
looking up what is placed on a worker, dispatching, the pools lists of the backlog.

Each folds what would be several round trips into one statement: a round trip is a
good part of a job's latency, and the cycle runs inline on every submit and report.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from taskyard.model.records import Outcome
from taskyard.store import schema as t
from taskyard.store.cursor import BULK_MIN_ROWS, Cursor, id_array, json_rows, pg_types
from taskyard.store.driver.results import Dispatched, Placed, slices
from taskyard.store.postgresql import cycle as pg_cycle
from taskyard.store.postgresql.listen import pg_channel
from taskyard.store.postgresql.rows import copy, named, pg_row_set
from taskyard.store.transitions.events import EVENT_TYPES, EventCursor

EDGE_TYPES = ("bigint", "bigint", "text")


def insert_edges(raw: Cursor, edges: Sequence[tuple[int, int, str]]) -> None:
    """Dependency edges (job, the job it requires, condition): ``COPY`` for many."""
    if len(edges) >= BULK_MIN_ROWS:
        copy(raw, "dependencies", ("job_id", "requires_id", "condition"), edges)
        return
    raw.insert("INSERT INTO dependencies (job_id, requires_id, condition)", "c1, c2, c3",
               edges, EDGE_TYPES)


def insert_jobs(raw: Cursor, columns: Sequence[str], values: Iterable[tuple[Any, ...]],
                count: int) -> list[int]:
    """Insert ``count`` (> 1) job rows; their ids in order. The ids come from the
    sequence first (in order: the order of creation), then the rows go in with them:
    ``COPY`` for many (a large graph; the rows may be computed as they stream), else
    multi-row statements. The sequence is looked up once, not per row."""
    ids = sorted(int(i) for (i,) in raw.all(
        "SELECT nextval(s.seq) FROM (SELECT pg_get_serial_sequence('jobs', 'id')"
        "::regclass AS seq OFFSET 0) AS s, generate_series(1, ?)", (count,)))
    names = ["id", *columns]
    if count >= BULK_MIN_ROWS:
        # One clock reading for the batch (COPY takes values, not expressions).
        (now,) = raw.first("SELECT {now}") or (None,)
        copy(raw, "jobs", [*names, "created_at"],
             ((job_id, *row, now) for job_id, row in zip(ids, values, strict=True)))
        return ids
    raw.insert(f"INSERT INTO jobs ({', '.join(names)}, created_at)",
               ", ".join(f"c{i + 1}" for i in range(len(names))) + ", {now}",
               [(job_id, *row) for job_id, row in zip(ids, values, strict=True)],
               pg_types(t.jobs, names))
    return ids


# The jobs and their attempts end in one statement. The attempts are looked up from the
# rows ``done`` returns, one index probe each: an ``= ANY(ids)`` beside that join would
# be evaluated again on every probe (an ending of 300 jobs took 2.5x as long with it).
_END_TYPES = ("bigint", "integer", "text", "integer", "text", "text", "double precision",
              "double precision", "text", "text")
_END = (
    "WITH v(id, attempt, state, code, res, err, delay, ago, out, errt) AS ("
    + pg_row_set(_END_TYPES, "rows") + "), "
    "done AS (UPDATE jobs SET "
    "state = CASE WHEN v.delay IS NULL THEN v.state ELSE 'pending' END, "
    "run_after = CASE WHEN v.delay IS NULL THEN jobs.run_after ELSE {now} + v.delay END, "
    "finished_at = CASE WHEN v.delay IS NULL THEN {now} ELSE NULL END, "
    "started_at = CASE WHEN v.ago IS NULL THEN jobs.started_at ELSE {now} - v.ago END, "
    "worker_id = NULL, deadline = NULL, exit_code = v.code, error = v.err, result = v.res "
    "FROM v WHERE jobs.id = ANY(%(ids)s::bigint[]) AND jobs.id = v.id "
    "AND jobs.attempt = v.attempt AND (jobs.state = 'running' "
    "OR (jobs.state = 'dispatched' AND v.ago IS NOT NULL)) AND jobs.worker_id = %(w)s "
    "AND EXISTS (SELECT 1 FROM workers w WHERE w.id = %(w)s AND w.state = 'active' "
    "AND w.lease_expires_at >= {now}) "
    "RETURNING jobs.id, jobs.attempt, jobs.state, jobs.graph_id, jobs.routing, "
    "jobs.schedule_name), "
    "a AS (UPDATE attempts SET state = v.state, "
    "started_at = COALESCE(attempts.started_at, {now} - COALESCE(v.ago, 0)), "
    "finished_at = {now}, exit_code = v.code, result = v.res, error = v.err, "
    "stdout_tail = v.out, stderr_tail = v.errt FROM done JOIN v ON v.id = done.id "
    "AND v.attempt = done.attempt WHERE attempts.job_id = done.id "
    "AND attempts.attempt = done.attempt) "
    "SELECT * FROM done")


def end_attempts(raw: Cursor, worker_id: int, values: Sequence[tuple[Any, ...]],
                 part: Sequence[Outcome], ago: Mapping[tuple[int, int], float],
                 ) -> list[tuple[Any, ...]]:
    """End the jobs of ``values`` (see attempts.end) fenced by attempt, state, worker
    and lease, and their attempts, in one statement; the rows of the jobs that ended."""
    return named(raw, _END, {
        "rows": json_rows([(*v, o.stdout_tail, o.stderr_tail)
                           for v, o in zip(values, part, strict=True)]),
        "ids": id_array(o.job_id for o in part), "w": worker_id})


# The active rows of this worker, with the details of the new ones only (args may be
# large), in one statement: on a worker's wake-up path.
_MINE = (
    "SELECT j.id, j.attempt, tt.handler, j.type, "
    "CASE WHEN tt.name IS NULL THEN NULL ELSE j.args END, j.timeout, j.graph_id, j.label, "
    "j.cost, j.priority FROM jobs j LEFT JOIN task_types tt ON tt.name = j.type "
    "AND j.state = 'dispatched' AND (j.id || ':' || j.attempt) <> ALL(%(known)s::text[]) "
    "WHERE j.worker_id = %(w)s AND j.state IN ('dispatched', 'running')")


def placed_here(raw: Cursor, worker_id: int, known: Iterable[tuple[int, int]]) -> Placed:
    rows = named(raw, _MINE, {"w": worker_id, "known": [f"{j}:{a}" for j, a in known]})
    fresh = sorted(((job, attempt, type_, args, timeout, graph, label, cost, prio, handler)
                    for job, attempt, handler, type_, args, timeout, graph, label, cost, prio
                    in rows if handler is not None), key=lambda r: (-r[8], r[0]))
    return Placed(fresh, [r[0] for r in fresh], frozenset((r[0], r[1]) for r in rows))


def dispatch(raw: Cursor, by_worker: Mapping[int, Sequence[int]], names: Mapping[int, str], *,
             quiet: set[str], events: list[tuple[Any, ...]] | None,
             scans_off: bool) -> Dispatched:
    """The jobs, their new attempts, the worker's wake-up (carrying the jobs when they
    are few) and, with the cycle's last statement, the scans back on, in one statement
    per slice (see pg_cycle.DISPATCH). ``events``: the transaction's buffered events,
    written by the first statement."""
    done = Dispatched()
    parts = {worker_id: slices(ids) for worker_id, ids in by_worker.items()}
    statements = sum(map(len, parts.values()))
    for worker_id, worker_parts in parts.items():
        channel = f"worker.{worker_id}"
        wake = [] if channel in quiet else [pg_channel(channel)]
        for part in worker_parts:
            statements -= 1
            last = statements == 0
            rows = named(raw, pg_cycle.DISPATCH, pg_cycle.dispatch_params(
                id_array(part), worker_id, names.get(worker_id), wake, events, last=last))
            for job_id, *_ in rows:
                done.placed.append(job_id)
                done.per_worker.setdefault(worker_id, []).append(job_id)
            if rows:
                done.carried.setdefault(worker_id, []).append(rows[0][-1])
                done.scans_on = done.scans_on or last
                done.woken.update([channel] if wake else [])
    return done


def pools_lists(raw: Cursor, page: int) -> tuple[list[str], list[Any]]:
    """The pools lists of pending jobs with the first list's first page, in one round
    trip (see pg_cycle.lists_and_first_page)."""
    return pg_cycle.lists_and_first_page(raw, page)


_NOTIFY_EVENTS = "pg_notify('taskyard_events', '')"
"""Every statement that writes events wakes their followers (see store/transitions/events.py)."""
_INSERT_EVENTS = (
    "WITH e AS (INSERT INTO events (topic, routing_key, payload, job_id, graph_id, created_at) "
    f"SELECT *, {{now}} FROM ({pg_row_set(EVENT_TYPES, 'rows')}) AS r) "
    f"SELECT {_NOTIFY_EVENTS}")


def insert_events(raw: Cursor, rows: Sequence[tuple[Any, ...]]) -> None:
    """Buffered events, and their followers' wake-up, in one statement."""
    named(raw, _INSERT_EVENTS, {"rows": json_rows(rows)})


_HORIZON = "pg_snapshot_xmin(pg_current_snapshot())::text::bigint"
"""Transactions older than this one have all ended: their events are all visible, and
no event of an earlier (tx_id, id) can appear any more."""
_EVENT_COLUMNS = "id, tx_id, topic, routing_key, payload, created_at"


def events_after(raw: Cursor, after: EventCursor, topic: str | None,
                 limit: int) -> list[tuple[Any, ...]]:
    """Events after the cursor in (tx_id, id) order, of ended transactions only."""
    where = "" if topic is None else " AND topic = ?"
    return raw.all(
        f"SELECT {_EVENT_COLUMNS} FROM events WHERE (tx_id, id) > (?, ?) "
        f"AND tx_id < {_HORIZON}{where} ORDER BY tx_id, id LIMIT ?",
        (after.tx, after.id, *([] if topic is None else [topic]), limit))


def events_last(raw: Cursor, count: int, topic: str | None) -> list[tuple[Any, ...]]:
    """The newest ``count`` events of ended transactions, newest first."""
    where = "" if topic is None else " AND topic = ?"
    return raw.all(
        f"SELECT {_EVENT_COLUMNS} FROM events WHERE tx_id < {_HORIZON}{where} "
        "ORDER BY tx_id DESC, id DESC LIMIT ?", (*([] if topic is None else [topic]), count))


def event_cursor(raw: Cursor, event_id: int) -> EventCursor:
    """Right after event ``event_id``; if it is gone (pruned), before the oldest
    transaction of the events after it (duplicates possible, nothing missed)."""
    row = raw.first("SELECT tx_id FROM events WHERE id = ?", (event_id,))
    if row is not None:
        return EventCursor(int(row[0]), event_id)
    row = raw.first("SELECT MIN(tx_id) FROM events WHERE id > ?", (event_id,))
    return EventCursor(-1, 0) if row is None or row[0] is None else EventCursor(
        int(row[0]) - 1, 2**62)
