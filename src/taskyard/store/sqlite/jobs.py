"""SQLite: inserting jobs and their dependency edges.

One statement text inserts jobs (:func:`insert_jobs`), for one row or many: plain
multi-row statements are SQLite's fast path, and its write transactions are exclusive,
so the rows of one statement get consecutive ids (INTEGER PRIMARY KEY: max(id) + 1),
checked after the insert. A job built from a task type read from the driver's cache is
inserted only while that type's row is as it was read (every column compared with
``IS``: SQLite keeps no row version), inside the write transaction: no other writer can
change the type between the check and the insert. A submit whose caller runs the cycle
next learns in the same statement whether a live worker exists.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

from taskyard.model.records import TaskTypeSpec
from taskyard.store.cursor import Cursor
from taskyard.store.driver.params import NO_ID, Event, InsertedJobs, InsertJobs
from taskyard.store.schema.task_type_rows import COLUMNS, cached_spec
from taskyard.store.sqlite.events import write_events
from taskyard.store.sqlite.rows import insert_rows, insert_values

LIVE_WORKER = ("SELECT 1 FROM workers WHERE state = 'active' AND lease_expires_at >= {now} "
               "LIMIT 1")
"""One indexed read: whether any worker is live (ix_workers_active_lease)."""
_READ_TYPE = f"SELECT {', '.join(COLUMNS)} FROM task_types WHERE name = ?"
_AS_BUILT = (f"EXISTS (SELECT 1 FROM task_types WHERE name = ? "
             f"AND ({', '.join(COLUMNS)}) IS ({', '.join('?' for _ in COLUMNS)}))")
_TAKEN_KEYS = " ON CONFLICT (dedup_key) WHERE dedup_key IS NOT NULL DO NOTHING"


@functools.lru_cache(maxsize=64)
def insert_sql(columns: tuple[str, ...], *, as_built: bool = False, placing: bool = False,
               skip_taken_keys: bool = False) -> tuple[str, str]:
    """The jobs insert, as the head and the row of :func:`insert_values` (a bulk binds
    values the rows share once); ``as_built``: one row, guarded by :data:`_AS_BUILT`, it
    returns its id and, ``placing``, whether a live worker exists."""
    head = f"INSERT INTO jobs ({', '.join(columns)}, created_at)"
    row = f"({', '.join('?' for _ in columns)}, {{now}})"
    if as_built or skip_taken_keys:
        live = f"EXISTS ({LIVE_WORKER})" if placing else "NULL"
        guard = f" WHERE {_AS_BUILT}" if as_built else ""
        # One row, SELECTed (a WHERE or an ON CONFLICT after VALUES would be ambiguous).
        return (f"{head} SELECT {row[1:-1]}{guard}"
                f"{_TAKEN_KEYS if skip_taken_keys else ''} RETURNING id, {live}", "")
    return head, row


def read_task_type(raw: Cursor, name: str) -> tuple[tuple[Any, ...], TaskTypeSpec] | None:
    """Type ``name``'s row (its version: compared whole) and spec; None if none."""
    found = raw.first(_READ_TYPE, (name,))
    return None if found is None else (found, cached_spec(found))


def insert_jobs(raw: Cursor, params: InsertJobs) -> InsertedJobs:
    """See :class:`InsertJobs`."""
    columns = params.columns
    if params.as_built is not None and params.count == 1:
        (row,) = params.rows
        sql, _ = insert_sql(columns, as_built=True, placing=params.placing)
        found = raw.first(sql, [*row, params.as_built.name, *params.as_built.version])
        if found is None:
            return InsertedJobs([])
        job_id = int(found[0])
        if params.announce is not None:  # its job-pending event, with its id
            write_events(raw, [_with_id(params.announce, job_id)])
        return InsertedJobs([job_id], bool(found[1]))
    if params.skip_taken_keys:
        if params.announce is not None:
            raise ValueError("InsertJobs: announce with skip_taken_keys "
                             "(events of rows left out)")
        sql, _ = insert_sql(columns, skip_taken_keys=True)
        ids: list[int | None] = []
        for row in params.rows:  # a row at a time: which of them went in
            found = raw.first(sql, row)
            ids.append(None if found is None else int(found[0]))
    else:
        built = params.as_built
        if built is not None:
            (same,) = raw.first(f"SELECT {_AS_BUILT}", [built.name, *built.version]) or (0,)
            if not same:
                return InsertedJobs([])  # the type changed since the rows were built
        (before,) = raw.first("SELECT MAX(id) FROM jobs") or (0,)
        first = int(before or 0) + 1
        insert_values(raw, *insert_sql(columns), list(params.rows))
        (last,) = raw.first("SELECT MAX(id) FROM jobs") or (0,)
        if last != first + params.count - 1:
            raise RuntimeError("job ids were not consecutive; refusing to guess them")
        ids = list(range(first, first + params.count))
        if params.announce is not None:  # each row's job-pending event, with its id
            write_events(raw, [_with_id(params.announce, i)
                               for i in range(first, first + params.count)])
    return InsertedJobs(ids, params.placing and live_worker(raw))


def _with_id(event: Event, job_id: int) -> Event:
    """A job's event from its template (``InsertJobs.announce``)."""
    return event._replace(payload=f'{{"job_id":{job_id}{event.payload[len(NO_ID):]}',
                          job_id=job_id)


def live_worker(raw: Cursor) -> bool:
    """Whether a live worker exists (under the write lock, which a registration takes
    too: a worker registering now commits after this transaction)."""
    return raw.first(LIVE_WORKER) is not None


def insert_edges(raw: Cursor, edges: Sequence[tuple[int, int, str]]) -> None:
    """Dependency edges (job, the job it requires, condition)."""
    insert_rows(raw, "INSERT INTO dependencies (job_id, requires_id, condition)", "(?, ?, ?)",
                edges)
