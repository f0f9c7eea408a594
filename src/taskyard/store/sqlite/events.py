"""SQLite: writing the event log and following it. SQLite commits one writer at a time,
in id order: a follower's cursor is the event id. Listeners of ``events`` watch the
newest id (sqlite/listen.py), so writing events wakes them with no row of its own."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from taskyard.store.cursor import Cursor
from taskyard.store.driver.params import EndUnit, Event, EventCursor
from taskyard.store.sqlite.cycle import notify
from taskyard.store.sqlite.rows import insert_rows

_EVENT_COLUMNS = "id, 0, topic, routing_key, payload, created_at"


def write_events(raw: Cursor, events: Sequence[Event]) -> None:
    """Events, in the order given."""
    insert_rows(raw, "INSERT INTO events (topic, routing_key, payload, job_id, graph_id, "
                "created_at)", "(?, ?, ?, ?, ?, {now})", events)


def end_unit(raw: Cursor, params: EndUnit) -> None:
    """The unit's events and wake-ups (its write transaction commits after them)."""
    write_events(raw, params.events)
    if params.channels:
        notify(raw, params.channels)


def events_after(raw: Cursor, after: EventCursor, topic: str | None,
                 limit: int) -> list[tuple[Any, ...]]:
    """Events after the cursor, in id order."""
    where = "" if topic is None else " AND topic = ?"
    return raw.all(f"SELECT {_EVENT_COLUMNS} FROM events WHERE id > ?{where} "
                   "ORDER BY id LIMIT ?", (after.id, *([] if topic is None else [topic]), limit))


def events_last(raw: Cursor, count: int, topic: str | None) -> list[tuple[Any, ...]]:
    """The newest ``count`` events, newest first."""
    where = "" if topic is None else " WHERE topic = ?"
    return raw.all(f"SELECT {_EVENT_COLUMNS} FROM events{where} ORDER BY id DESC LIMIT ?",
                   (*([] if topic is None else [topic]), count))


def event_cursor(raw: Cursor, event_id: int) -> EventCursor:
    """Right after event ``event_id``."""
    return EventCursor(0, event_id)
