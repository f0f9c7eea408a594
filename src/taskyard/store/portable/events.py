"""Reading the event log by id, written once for both backends (following it in commit
order differs: see each driver's events module)."""

from __future__ import annotations

from typing import Any

from taskyard.store.cursor import Cursor
from taskyard.store.driver.params import ReadEvents


def id_range(raw: Cursor) -> tuple[Any, Any]:
    """The smallest and the largest event id (None, None: no event)."""
    row = raw.first("SELECT MIN(id), MAX(id) FROM events")
    assert row is not None
    return row[0], row[1]


def event_from(raw: Cursor, event_id: int) -> tuple[Any, ...] | None:
    """The first event at or after id ``event_id``: (id, created at)."""
    return raw.first("SELECT id, created_at FROM events WHERE id >= ? ORDER BY id LIMIT 1",
                     (event_id,))


def read_events(raw: Cursor, params: ReadEvents) -> list[tuple[Any, ...]]:
    """Stored events in id order, as :class:`ReadEvents` filters them: (id, topic,
    routing key, payload, created at)."""
    where: list[str] = []
    values: list[Any] = []
    for condition, value in (("id > ?", params.after_id), ("topic = ?", params.topic),
                             ("graph_id = ?", params.graph_id), ("job_id = ?", params.job_id)):
        if value is not None:
            where.append(condition)
            values.append(value)
    clause = f" WHERE {' AND '.join(where)}" if where else ""
    return raw.all(f"SELECT id, topic, routing_key, payload, created_at FROM events{clause} "
                   "ORDER BY id LIMIT ?", (*values, params.limit))
