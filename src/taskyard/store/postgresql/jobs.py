"""PostgreSQL: inserting jobs and their dependency edges.

One statement inserts jobs (:func:`insert_jobs`): a lone job as one row of values, whose
id the sequence gives it; more as a JSON row set with ids taken from the sequence first
(in order: the order of creation); a bulk (a large graph) by ``COPY`` with the same
ids. A job built from a task type read from the driver's cache is inserted only while
that type's row is still at the version it was read at (its ``xmin``, which every
update changes): else nothing is written, and the caller reads the type afresh.

A submit whose caller runs the scheduling cycle next (``placing``) tries the cycle's
lock in the insert statement, and only when a live worker exists (``cycle.LOCK_IF_WORKERS``,
which also passes the worker gate); when the lock is ours, the cycle's first reads go in
the same pipeline: one round trip for the job, the lock and what the cycle reads first.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

from taskyard.model.records import TaskTypeSpec
from taskyard.store import schema as t
from taskyard.store.cursor import BULK_MIN_ROWS, Cursor, json_rows, pg_types
from taskyard.store.driver.params import CycleStart, InsertedJobs, InsertJobs
from taskyard.store.postgresql import cycle
from taskyard.store.postgresql.rows import copy, named, pipelined
from taskyard.store.schema.task_type_rows import COLUMNS, cached_spec

EDGE_TYPES = ("bigint", "bigint", "text")
_READ_TYPE = f"SELECT xmin::text, {', '.join(COLUMNS)} FROM task_types WHERE name = ?"
_AS_BUILT = "EXISTS (SELECT 1 FROM task_types WHERE name = %(type)s AND xmin = %(version)s::xid)"
_TAKEN_KEYS = " ON CONFLICT (dedup_key) WHERE dedup_key IS NOT NULL DO NOTHING"


@functools.lru_cache(maxsize=64)
def insert_sql(columns: tuple[str, ...], *, many: bool, as_built: bool = False,
               placing: bool = False, skip_taken_keys: bool = False) -> str:
    """The jobs insert: one row of named values (``many``: a JSON row set of
    ``%(rows)s`` whose first column is the id), guarded by :data:`_AS_BUILT` with
    ``as_built``; returns each new job's id and, ``placing``, whether the cycle's lock is
    ours (NULL: no live worker, not tried)."""
    names = ", ".join(columns)
    if many:
        types = ", ".join(f"(e->>{i})::{kind}"
                          for i, kind in enumerate(pg_types(t.jobs, ("id", *columns))))
        source = f"SELECT {types}, {{now}} FROM json_array_elements(%(rows)s::json) AS e"
        head = f"INSERT INTO jobs (id, {names}, created_at) "
    else:
        source = f"SELECT {', '.join(f'%(c_{c})s' for c in columns)}, {{now}}"
        head = f"INSERT INTO jobs ({names}, created_at) "
    guard = f" WHERE {_AS_BUILT}" if as_built else ""
    conflict = _TAKEN_KEYS if skip_taken_keys else ""
    lock = cycle.LOCK_IF_WORKERS if placing else "NULL"
    return f"{head}{source}{guard}{conflict} RETURNING id, {lock}"


def read_task_type(raw: Cursor, name: str) -> tuple[str, TaskTypeSpec] | None:
    """Type ``name``'s row version (``xmin``) and spec; None if there is no such type."""
    found = raw.first(_READ_TYPE, (name,))
    return None if found is None else (found[0], cached_spec(tuple(found[1:])))


def insert_jobs(raw: Cursor, params: InsertJobs, page: int) -> InsertedJobs:
    """See :class:`InsertJobs`; ``page``: how many candidates a cycle's first reads take."""
    columns = params.columns
    if params.count == 1 and not params.skip_taken_keys:
        (row,) = params.rows
        values: dict[str, Any] = {f"c_{c}": v for c, v in zip(columns, row, strict=True)}
        if params.as_built is not None:
            values.update(type=params.as_built.name, version=params.as_built.version)
        insert = insert_sql(columns, many=False, as_built=params.as_built is not None,
                            placing=params.placing)
        if not params.placing:
            found = named(raw, insert, values)
            return InsertedJobs([int(found[0][0])] if found else [])
        values["n"] = page
        inserted, ahead = pipelined(raw, [(insert, values), (cycle.AHEAD_IF_HELD, values)])
        if not inserted:
            return InsertedJobs([])
        job_id, held = inserted[0]
        if held is None:  # no live worker: the lock was not tried
            return InsertedJobs([int(job_id)])
        reads = cycle.reads_of_row(ahead[0], page) if ahead else None
        return InsertedJobs([int(job_id)], True, CycleStart(bool(held), reads))
    ids = [int(i) for (i,) in raw.all(
        "SELECT nextval(s.seq) FROM (SELECT pg_get_serial_sequence('jobs', 'id')"
        "::regclass AS seq OFFSET 0) AS s, generate_series(1, ?)", (params.count,))]
    ids.sort()
    rows = ((job_id, *row) for job_id, row in zip(ids, params.rows, strict=True))
    if params.count >= BULK_MIN_ROWS and not params.skip_taken_keys:
        # One clock reading for the bulk (COPY takes values, not expressions).
        (now,) = raw.first("SELECT {now}") or (None,)
        copy(raw, "jobs", ["id", *columns, "created_at"], ((*r, now) for r in rows))
        written: Sequence[int | None] = ids
    else:
        went_in = {int(i) for i, _ in named(raw, insert_sql(
            columns, many=True, skip_taken_keys=params.skip_taken_keys),
            {"rows": json_rows(list(rows))})}
        written = [i if i in went_in else None for i in ids]
    live = params.placing and live_worker(raw)
    return InsertedJobs(list(written), live)


def live_worker(raw: Cursor) -> bool:
    """Whether a live worker exists, through the worker gate (see cycle.NO_WORKER)."""
    row = raw.first(f"SELECT NOT ({cycle.NO_WORKER})")
    return bool(row and row[0])


def insert_edges(raw: Cursor, edges: Sequence[tuple[int, int, str]]) -> None:
    """Dependency edges (job, the job it requires, condition): ``COPY`` for many."""
    if len(edges) >= BULK_MIN_ROWS:
        copy(raw, "dependencies", ("job_id", "requires_id", "condition"), edges)
        return
    raw.insert("INSERT INTO dependencies (job_id, requires_id, condition)", "c1, c2, c3",
               edges, EDGE_TYPES)
