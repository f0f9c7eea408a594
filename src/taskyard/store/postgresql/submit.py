"""PostgreSQL: one submitted job written in one statement, its task type from a cache.

A submit needs its task type's spec (pools, cost, retry policy, lock templates) to
build the job's row. Reading it costs a round trip per submit; instead each store
keeps the specs it has read, with the row version they were read at (the row's
``xmin``, which every update of the row changes). The insert is guarded by that
version: when the type changed meanwhile, it writes nothing and the caller takes the
ordinary path, which reads the type afresh. The job's ``job-pending`` event is
written by the same statement.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from taskyard.core.routing import job_key
from taskyard.model.records import JobSubmission, TaskTypeSpec
from taskyard.store.cursor import Cursor
from taskyard.store.driver.spec_cache import job_to_insert, payload_tail
from taskyard.store.postgresql.cycle import LOCK_IF_WORKERS, NO_WORKER
from taskyard.store.postgresql.references import CHECKED_SETTING
from taskyard.store.schema.task_type_rows import COLUMNS, cached_spec

SpecCache = dict[str, tuple[str, TaskTypeSpec]]
"""Task type name → (row version, spec), per store."""

_READ_SPEC = f"SELECT xmin::text, {', '.join(COLUMNS)} FROM task_types WHERE name = ?"


# Alone (autocommit), a job outside any graph: the statement makes the insert trigger's
# check itself (pg_references), locking its task type as the trigger would, and says so.
_CHECKED = (f"FOR KEY SHARE) AND set_config('{CHECKED_SETTING}', 'on', true) "
            f"IS NOT NULL AND {NO_WORKER} ")


def pending_event(key: str, tail: str, source: str = "j", *, wake: bool = False) -> str:
    """SQL: the ``job-pending`` event of the job inserted by the CTE ``source``
    (``RETURNING id, graph_id``), as the CTE ``e``; ``key`` and ``tail`` are the
    placeholders of its routing key and of what follows the id in its payload (see
    payload_tail). ``wake``: the events' followers are woken by this CTE."""
    where = "WHERE pg_notify('taskyard_events', '') IS NOT NULL" if wake else ""
    return ("e AS (INSERT INTO events (topic, routing_key, payload, job_id, graph_id, "
            f"created_at) SELECT 'job-pending', {key}, '{{\"job_id\":' || {source}.id || "
            f"{tail}, {source}.id, {source}.graph_id, {{now}} FROM {source} {where}) ")


@functools.lru_cache(maxsize=32)
def insert_sql(columns: tuple[str, ...], lock: bool, alone: bool = False,
                checked: bool = False) -> str:
    guard = _CHECKED if checked else f") AND {NO_WORKER} " if alone else ") "
    return (
        f"WITH j AS (INSERT INTO jobs ({', '.join(columns)}, created_at) "
        f"SELECT {', '.join('?' for _ in columns)}, {{now}} "
        f"WHERE EXISTS (SELECT 1 FROM task_types WHERE name = ? AND xmin = ?::xid {guard}"
        "RETURNING id, graph_id), "
        f"{pending_event('?', '?')}"
        f"SELECT id, {LOCK_IF_WORKERS if lock else 'NULL'}, pg_notify('taskyard_events', '') "
        "FROM j")


def submit_one(raw: Cursor, sub: JobSubmission, cache: SpecCache,
               build: Callable[[TaskTypeSpec], dict[str, Any]], *,
               lock: bool = False, alone: bool = False) -> tuple[int | None, bool | None]:
    """Insert ``sub`` as a pending job with its event; its id, or None when the caller
    must take the ordinary path (unknown type, update on launch, invalid input, or the
    type changed since it was cached: all decided there with a fresh read). With
    ``lock``, the same statement then tries the cycle's global lock
    (:data:`pg_cycle.LOCK_IF_WORKERS`): whether it is ours, or None when not tried (with
    ``lock``: no live worker). ``alone``: the statement commits by itself (autocommit)
    and inserts only while no live worker exists — with one, the inline cycle must run
    in the insert's transaction: None, nothing written, the caller takes that path."""
    found = build_row(raw, sub, cache, build)
    if found is None:
        return None, None
    version, spec, row = found
    checked = alone and row["graph_id"] is None
    inserted = raw.first(insert_sql(tuple(row), lock, alone, checked), [
        *row.values(), spec.name, version,
        job_key(row["graph_id"], row["routing"]), payload_tail(spec.name)])
    if inserted is None:
        if not alone:  # alone: maybe only a live worker; the next read will tell
            cache.pop(sub.type, None)  # changed since: read it again next time
        return None, None
    return int(inserted[0]), None if inserted[1] is None else bool(inserted[1])


def build_row(raw: Cursor, sub: JobSubmission, cache: SpecCache,
              build: Callable[[TaskTypeSpec], dict[str, Any]],
              ) -> tuple[str, TaskTypeSpec, dict[str, Any]] | None:
    """The cached version of ``sub``'s type (read when missing), its spec and the job's
    row (see spec_cache.job_to_insert)."""
    return job_to_insert(sub, cache, lambda: _read_type(raw, sub.type), build)


def build_row_now(raw: Cursor, sub: JobSubmission, cache: SpecCache,
                  build: Callable[[TaskTypeSpec], dict[str, Any]],
                  ) -> tuple[str, TaskTypeSpec, dict[str, Any]] | None:
    """:func:`build_row` for a job pending now, outside any graph (what a submit may
    place at once); None for any other."""
    found = build_row(raw, sub, cache, build)
    if found is None or found[2]["graph_id"] is not None or found[2]["run_after"] is not None:
        return None
    return found


def _read_type(raw: Cursor, name: str) -> tuple[str, TaskTypeSpec] | None:
    """Type ``name``'s row version (``xmin``) and spec; None if there is no such type."""
    found = raw.first(_READ_SPEC, (name,))
    return None if found is None else (found[0], cached_spec(tuple(found[1:])))
