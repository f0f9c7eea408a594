"""Reads of the event log by time and from its end (``taskyard events --since/--tail``).

Functions over a :class:`~taskyard.store.Store` (read-only), so that they can move onto
the storage seam as they are. Events are only indexed by id; ids grow with creation
time, so the first event at or after a time is found by a binary search over ids: a
few dozen indexed reads, whatever the size of the log.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sqlalchemy import func, select

from taskyard.store import schema as t
from taskyard.store.records import EventRecord, loads

if TYPE_CHECKING:
    from taskyard.store import Store

_E = t.events


def event_id_before_time(store: Store, when: float) -> int:
    """The id to read after so as to start at the first event created at or after
    ``when`` (epoch seconds); the last id when every event is older (0: none)."""
    with store._read() as conn:
        low, high = conn.execute(select(func.min(_E.c.id), func.max(_E.c.id))).one()
        if low is None:
            return 0
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
        return low - 1


def events_before(store: Store, before_id: int | None, *, limit: int) -> list[EventRecord]:
    """Up to ``limit`` events before ``before_id`` (None: from the newest), newest first."""
    query = select(_E).order_by(_E.c.id.desc()).limit(limit)
    if before_id is not None:
        query = query.where(_E.c.id < before_id)
    with store._read() as conn:
        return [EventRecord(r.id, r.topic, r.routing_key, loads(r.payload), r.created_at)
                for r in conn.execute(query)]
