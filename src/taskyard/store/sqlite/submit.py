"""SQLite: one submitted job in two statements, its task type from a cache.

A submit needs its task type's spec to build the job's row. Each store keeps the
``task_types`` rows its submits have read; the job's insert is guarded by the whole
row (every column compared with ``IS``), so it writes nothing when the type was
changed, deleted or re-created since — by this process or any other, whatever its
version — and the caller takes the ordinary path, which reads the type afresh.
SQLite has no row version to compare instead (a timestamp may repeat within its
clock's millisecond). The guard runs inside the write transaction (``BEGIN
IMMEDIATE``): no other writer can change the type between the check and the insert.

The same statement returns whether a live worker exists (what
:meth:`SqliteDriver.worth_a_cycle` reads on the ordinary path); the job's
``job-pending`` event is the second statement (SQLite has no data-modifying CTEs).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, MutableMapping
from typing import Any

from taskyard.core.routing import job_key
from taskyard.model.records import JobSubmission, TaskTypeSpec
from taskyard.store.cursor import Cursor
from taskyard.store.driver.spec_cache import job_to_insert, payload_tail
from taskyard.store.schema.task_type_rows import COLUMNS, cached_spec

LIVE_WORKER = ("SELECT 1 FROM workers WHERE state = 'active' AND lease_expires_at >= {now} "
               "LIMIT 1")
"""One indexed read: whether any worker is live (ix_workers_active_lease)."""

_READ_SPEC = f"SELECT {', '.join(COLUMNS)} FROM task_types WHERE name = ?"
_SAME_TYPE = (f"SELECT 1 FROM task_types WHERE name = ? "
              f"AND ({', '.join(COLUMNS)}) IS ({', '.join('?' for _ in COLUMNS)})")
_INSERT_EVENT = ("INSERT INTO events (topic, routing_key, payload, job_id, graph_id, created_at) "
                 "VALUES ('job-pending', ?, ?, ?, ?, {now})")


@functools.lru_cache(maxsize=32)
def _insert_sql(columns: tuple[str, ...], live: bool) -> str:
    return (f"INSERT INTO jobs ({', '.join(columns)}, created_at) "
            f"SELECT {', '.join('?' for _ in columns)}, {{now}} WHERE EXISTS ({_SAME_TYPE}) "
            f"RETURNING id, {f'EXISTS ({LIVE_WORKER})' if live else 'NULL'}")


def submit_one(raw: Cursor, sub: JobSubmission, cache: MutableMapping[str, Any],
               build: Callable[[TaskTypeSpec], dict[str, Any]], *,
               lock: bool = False, alone: bool = False) -> tuple[int | None, bool | None]:
    """Insert ``sub`` as a pending job with its event; its id, or None when the caller
    must take the ordinary path (unknown type, update on launch, invalid input, or the
    type's row changed since it was cached: all decided there with a fresh read).
    ``lock`` (the caller's inline cycle comes next): also whether a live worker exists
    — True, or None when none does (no cycle to run). ``alone`` (autocommit) is never
    taken here: a write must queue on the write lock."""
    if alone:
        return None, None
    found = job_to_insert(sub, cache, lambda: _read_type(raw, sub.type), build)
    if found is None:
        return None, None
    version, spec, row = found
    columns = tuple(row)
    inserted = raw.first(_insert_sql(columns, lock),
                         [*(row[c] for c in columns), spec.name, *version])
    if inserted is None:
        cache.pop(sub.type, None)  # changed since: read it again next time
        return None, None
    job_id, graph_id = int(inserted[0]), row["graph_id"]
    raw.run(_INSERT_EVENT, (job_key(graph_id, row["routing"]),
                            f'{{"job_id":{job_id}{payload_tail(spec.name)}', job_id, graph_id))
    return job_id, True if inserted[1] else None


def _read_type(raw: Cursor, name: str) -> tuple[tuple[Any, ...], TaskTypeSpec] | None:
    """Type ``name``'s row (its version: compared whole) and spec; None if none."""
    found = raw.first(_READ_SPEC, (name,))
    return None if found is None else (found, cached_spec(found))
