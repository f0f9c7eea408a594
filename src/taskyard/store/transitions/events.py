"""The event log: what transitions append in a transaction, written when it ends; and
reading it back — in commit order, for followers that must miss nothing.

A follower reads with an :class:`EventCursor`. Event ids are taken when rows are
inserted, not when their transaction commits; on PostgreSQL two transactions may
commit in the other order, and a follower going by id alone would pass the event that
committed late. So each event also records its transaction (``tx_id``), followers read
in (tx_id, id) order, and only events of transactions older than every transaction
still running (which may yet commit): what they have read never gains an earlier
event. SQLite commits one writer at a time, in id order: there the cursor is the id.
Every statement that writes events also wakes the ``events`` channel."""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sqlalchemy import func, select

from taskyard.core.routing import topic_matches
from taskyard.model.records import JSON, EventRecord, loads
from taskyard.store import schema as t
from taskyard.store.marks import reads

if TYPE_CHECKING:
    from taskyard.store.unit import Tx

_E = t.events
EVENT_TYPES = ("text", "text", "text", "bigint", "bigint")
"""Column types of an event row as buffered: topic, routing key, payload, job, graph."""
INSERT_EVENTS = ("INSERT INTO events (topic, routing_key, payload, job_id, graph_id, created_at)",
                 "c1, c2, c3, c4, c5, {now}")
EVENTS_CHANNEL = "events"
"""Woken whenever a transaction that wrote events commits."""
Event = tuple[str, str, dict[str, JSON] | str, int | None, int | None]
"""An event to append: topic, routing key, payload (a dict, or its JSON already: the
hot path writes its own), job id, graph id."""

encode_payload = json.JSONEncoder(separators=(",", ":"), allow_nan=False).encode
"""Event payloads are written by taskyard itself: no key sorting needed (hot path)."""


@dataclass(frozen=True, order=True, slots=True)
class EventCursor:
    """Where a follower is: after the event ``id`` of transaction ``tx`` (0 on SQLite)."""

    tx: int = -1
    id: int = 0


START = EventCursor()
"""Before every event."""


@dataclass(frozen=True, slots=True)
class EventPage:
    """Events read in commit order, and the cursor after the last one read (filtered
    out or not)."""

    events: list[EventRecord]
    cursor: EventCursor
    full: bool = False
    """As many rows as asked for were read: there may be more right away."""


def _record(row: tuple[Any, ...]) -> EventRecord:
    event_id, _, topic, key, payload, created_at = row
    return EventRecord(event_id, topic, key, loads(payload), created_at)


class Events:
    """The event log of one transaction: appended events are buffered and written by
    one statement at its end (or by a statement that writes them on its way: the
    cycle's dispatch on PostgreSQL takes :attr:`buffer`)."""

    def __init__(self, tx: Tx) -> None:
        self.tx = tx
        self.buffer: list[tuple[Any, ...]] = []

    def append(self, rows: Iterable[Event]) -> None:
        self.buffer.extend(
            (topic, key, payload if isinstance(payload, str) else encode_payload(payload),
             job, graph) for topic, key, payload, job, graph in rows)

    def flush(self) -> None:
        """Write what is buffered (the unit of work calls this before it commits)."""
        if self.buffer:
            self.tx.driver.insert_events(self.tx.raw, self.buffer)
            self.buffer = []

    @reads
    def committed(self, after: EventCursor = START, *, topic: str | None = None,
                  pattern: str | None = None, limit: int = 1000) -> EventPage:
        """The events after ``after`` in commit order, at most ``limit`` rows read;
        ``pattern`` matches routing keys with AMQP topic rules (rows it leaves out
        still move the cursor)."""
        rows = self.tx.driver.events_after(self.tx.raw, after, topic, limit)
        events = [_record(r) for r in rows if pattern is None or topic_matches(pattern, r[3])]
        cursor = EventCursor(rows[-1][1], rows[-1][0]) if rows else after
        return EventPage(events, cursor, full=len(rows) >= limit)

    @reads
    def cursor_at(self, event_id: int) -> EventCursor:
        """The cursor right after event ``event_id`` (a follower's ``Last-Event-ID``)."""
        return self.tx.driver.event_cursor(self.tx.raw, event_id)

    @reads
    def last(self, count: int, *, topic: str | None = None) -> EventPage:
        """The newest ``count`` committed events (oldest first), and the cursor after
        the newest: what ``--tail N`` shows before it follows."""
        rows = self.tx.driver.events_last(self.tx.raw, count, topic)
        cursor = EventCursor(rows[0][1], rows[0][0]) if rows else self._head()
        return EventPage([_record(r) for r in reversed(rows)], cursor)

    def _head(self) -> EventCursor:
        rows = self.tx.driver.events_last(self.tx.raw, 1, None)
        return EventCursor(rows[0][1], rows[0][0]) if rows else START

    @reads
    def cursor_since(self, when: float) -> EventCursor:
        """The cursor before the first event created at or after ``when``."""
        found = self._first_at(when)
        if found is None:
            return self._head()
        at = self.tx.driver.event_cursor(self.tx.raw, found)
        return EventCursor(at.tx, at.id - 1)

    def _first_at(self, when: float) -> int | None:
        """The first event id created at or after ``when``. Events are indexed by id
        only, and ids grow with creation time: a binary search over ids, a few dozen
        indexed reads whatever the size of the log."""
        conn = self.tx.conn
        low, high = conn.execute(select(func.min(_E.c.id), func.max(_E.c.id))).one()
        if low is None:
            return None
        # The smallest m in [low, high + 1] such that the first event at or after id m
        # is new enough (or there is none): a predicate that only turns true once.
        low, high = int(low), int(high) + 1
        while low < high:
            middle = (low + high) // 2
            row = conn.execute(select(_E.c.id, _E.c.created_at).where(_E.c.id >= middle)
                               .order_by(_E.c.id).limit(1)).first()
            if row is None or row.created_at >= when:
                high = middle
            else:
                low = int(row.id) + 1  # ids between middle and row.id do not exist
        first = conn.execute(select(_E.c.id).where(_E.c.id >= low)
                             .order_by(_E.c.id).limit(1)).scalar()
        return None if first is None else int(first)

    @reads
    def list(
        self,
        *,
        after_id: int | None = None,
        topic: str | None = None,
        graph_id: int | None = None,
        job_id: int | None = None,
        limit: int = 1000,
    ) -> list[EventRecord]:
        """Stored events in order, optionally after an id (for following) and filtered."""
        query = select(_E).order_by(_E.c.id).limit(limit)
        if after_id is not None:
            query = query.where(_E.c.id > after_id)
        if topic is not None:
            query = query.where(_E.c.topic == topic)
        if graph_id is not None:
            query = query.where(_E.c.graph_id == graph_id)
        if job_id is not None:
            query = query.where(_E.c.job_id == job_id)
        return [EventRecord(r.id, r.topic, r.routing_key, loads(r.payload), r.created_at)
                for r in self.tx.conn.execute(query)]
