"""The outbox followers' positions and the facts their messages carry, written once for
both backends."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from taskyard.store.cursor import Cursor
from taskyard.store.driver.params import EventCursor


def read_positions(raw: Cursor, name: str | None = None) -> list[tuple[Any, ...]]:
    """Follower ``name``'s position, or every one's by name: (name, tx id, event id,
    updated at)."""
    if name is not None:
        return raw.all("SELECT name, tx_id, event_id, updated_at FROM outbox_cursors "
                       "WHERE name = ?", (name,))
    return raw.all("SELECT name, tx_id, event_id, updated_at FROM outbox_cursors ORDER BY name")


def advance_position(raw: Cursor, name: str, cursor: EventCursor) -> bool:
    """Follower ``name`` moves forward to ``cursor``, never back; True if it moved (or
    started there)."""
    if raw.run("UPDATE outbox_cursors SET tx_id = ?, event_id = ?, updated_at = {now} "
               "WHERE name = ? AND (tx_id < ? OR (tx_id = ? AND event_id < ?))",
               (cursor.tx, cursor.id, name, cursor.tx, cursor.tx, cursor.id)):
        return True
    return raw.first("INSERT INTO outbox_cursors (name, tx_id, event_id, updated_at) "
                     "VALUES (?, ?, ?, {now}) ON CONFLICT (name) DO NOTHING RETURNING name",
                     (name, cursor.tx, cursor.id)) is not None


def job_types(raw: Cursor, job_ids: Sequence[int]) -> list[tuple[Any, ...]]:
    """(id, type, trace context) of the jobs of ``job_ids`` that exist; an approval's, a
    wait's or a sleep's kind stands for its type (it has none)."""
    which, params = raw.member("id", job_ids)
    return raw.all(f"SELECT id, COALESCE(type, kind), trace_context FROM jobs WHERE {which}",
                   params)


def attempt_workers(raw: Cursor, job_ids: Sequence[int]) -> list[tuple[Any, ...]]:
    """Every attempt of the jobs of ``job_ids``: (job, attempt, worker name, host)."""
    which, params = raw.member("a.job_id", job_ids)
    return raw.all("SELECT a.job_id, a.attempt, a.worker_name, w.hostname FROM attempts a "
                   f"LEFT JOIN workers w ON w.id = a.worker_id WHERE {which}", params)
