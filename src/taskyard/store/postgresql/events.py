"""PostgreSQL: writing the event log and following it in commit order.

Event ids are taken when rows are inserted, not when their transaction commits: a
follower reads in (tx_id, id) order, and only the events of transactions older than
every transaction still running (see transitions/events.py). Every statement that
writes events also wakes their followers (``taskyard_events``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from taskyard.store.cursor import Cursor, json_rows
from taskyard.store.driver.params import EVENT_TYPES, EndUnit, Event, EventCursor
from taskyard.store.postgresql.listen import pg_channel
from taskyard.store.postgresql.rows import (
    MANY_ROWS,
    array_params,
    named,
    pg_array_set,
    pg_row_set,
    pipelined,
)

WRITE_EVENTS = (
    "WITH e AS (INSERT INTO events (topic, routing_key, payload, job_id, graph_id, created_at) "
    f"SELECT *, {{now}} FROM ({pg_row_set(EVENT_TYPES, 'events')}) AS r) "
    "SELECT pg_notify('taskyard_events', '')")
"""SQL: the unit's buffered events (``%(events)s``, JSON rows), waking their followers."""
WRITE_MANY_EVENTS = WRITE_EVENTS.replace(pg_row_set(EVENT_TYPES, "events"),
                                         pg_array_set(EVENT_TYPES, "events"))
""":data:`WRITE_EVENTS` from arrays, for :data:`MANY_ROWS` events or more (a batch's, a
large graph's, a worker's report of many jobs)."""
_NOTIFY = "SELECT count(pg_notify(c, '')) FROM unnest(%(channels)s::text[]) AS c"
_HORIZON = "pg_snapshot_xmin(pg_current_snapshot())::text::bigint"
"""Transactions older than this one have all ended: their events are all visible, and
no event of an earlier (tx_id, id) can appear any more."""
_EVENT_COLUMNS = "id, tx_id, topic, routing_key, payload, created_at"


def write_events(raw: Cursor, events: Sequence[Event]) -> None:
    """Events, in the order given, waking their followers."""
    if events:
        named(raw, *_write(events))


def _write(events: Sequence[Event]) -> tuple[str, dict[str, Any]]:
    """The statement that writes ``events`` (in order: their ids follow it)."""
    if len(events) < MANY_ROWS:
        return WRITE_EVENTS, {"events": json_rows(events)}
    return WRITE_MANY_EVENTS, array_params(events, "events")


def end_unit(raw: Cursor, params: EndUnit) -> None:
    """The unit's events and wake-ups (NOTIFY is delivered on commit) and, for a unit of
    its own, its ``COMMIT``: one round trip (then the unit's own commit has nothing left
    to do)."""
    statements: list[tuple[str, dict[str, Any]]] = []
    if params.events:
        statements.append(_write(params.events))
    if params.channels:
        statements.append((_NOTIFY, {"channels": [pg_channel(c) for c in params.channels]}))
    if statements:
        pipelined(raw, statements, commit=params.commit)


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
