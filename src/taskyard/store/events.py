"""The event log: what transitions append in a transaction, written when it ends; and
reading it back."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from sqlalchemy import select

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
Event = tuple[str, str, dict[str, JSON] | str, int | None, int | None]
"""An event to append: topic, routing key, payload (a dict, or its JSON already: the
hot path writes its own), job id, graph id."""

encode_payload = json.JSONEncoder(separators=(",", ":"), allow_nan=False).encode
"""Event payloads are written by taskyard itself: no key sorting needed (hot path)."""


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
            self.tx.raw.insert(*INSERT_EVENTS, self.buffer, EVENT_TYPES)
            self.buffer = []

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
