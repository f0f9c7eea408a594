"""Reading the event log (events are appended by the transitions themselves)."""

from __future__ import annotations

from sqlalchemy import select

from taskyard.store import schema as t
from taskyard.store.base import StoreBase
from taskyard.store.records import EventRecord, loads

_E = t.events


class EventStore(StoreBase):
    def list_events(
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
        with self._read() as conn:
            return [
                EventRecord(r.id, r.topic, r.routing_key, loads(r.payload), r.created_at)
                for r in conn.execute(query)
            ]
