"""Draining a worker: it finishes what it runs and what is queued at it, and is given
nothing new — its capacity and prefetch window become 0, which every scheduling cycle
reads (``transitions/cycle.py``; a worker without capacity is closed whatever window it
reports later, ``core/placement.py``), so no job is placed on it any more. It stays live
(heartbeats, reports) until it is stopped; started again, it registers afresh with the
capacity it is given."""

from __future__ import annotations

from typing import TYPE_CHECKING

from sqlalchemy import update

from taskyard.model.errors import NotFound
from taskyard.store import schema as t
from taskyard.store.transitions.events import worker_draining

if TYPE_CHECKING:
    from taskyard.store import Store

_W = t.workers


def drain_worker(store: Store, name: str) -> int:
    """Drain the live worker called ``name`` (a ``worker-draining`` event); returns its
    id. NotFound if none is live."""
    with store.write() as tx:
        found = tx.conn.execute(
            update(_W).where(_W.c.name == name, _W.c.state == "active")
            .values(capacity=0, prefetch=0, unpaced_prefetch=None).returning(_W.c.id)).scalar()
        if found is None:
            raise NotFound(f"no live worker {name!r}")
        tx.events.append([worker_draining(name, int(found))])
        tx.notify("scheduler")
    return int(found)
