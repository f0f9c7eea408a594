"""Seed 003's invariant, checked each cycle: a running graph either has no
worker for its pending jobs, or makes progress, or is complete. A graph with
pending jobs that live workers could serve, and no job state change for
``stall_after`` seconds, is flagged stalled (and optionally canceled)."""

from __future__ import annotations

from sqlalchemy import select, update

from taskyard.core.states import ACTIVE, JobState
from taskyard.model.records import loads
from taskyard.store import schema as t
from taskyard.store.transitions.cycle import CycleTx
from taskyard.store.transitions.events import graph_stalled

_G, _J = t.graphs, t.jobs
MAX_GRAPHS_PER_CYCLE = 100


def flag_stalled_graphs(cycle: CycleTx, stall_after: float, served_pools: set[str]) -> list[int]:
    """Flag (once) running graphs stalled for ``stall_after`` seconds; returns their ids."""
    conn, now = cycle.tx.conn, cycle.tx.now
    rows = conn.execute(
        select(_G.c.id, _G.c.routing)
        .where(_G.c.state == "running", _G.c.stalled_at.is_(None),
               _G.c.last_progress_at < now - stall_after)
        .order_by(_G.c.last_progress_at)
        .limit(MAX_GRAPHS_PER_CYCLE)
    ).all()
    flagged: list[int] = []
    for graph_id, routing in rows:
        busy = conn.execute(
            select(_J.c.id).where(_J.c.graph_id == graph_id, _J.c.state.in_(sorted(ACTIVE)))
            .limit(1)
        ).first()
        if busy is not None:
            continue  # something runs: that is progress (seed 003), however long it takes
        pools = conn.execute(
            select(_J.c.pools).where(_J.c.graph_id == graph_id, _J.c.state == JobState.PENDING)
            .limit(100)
        ).scalars()
        if not any(set(loads(p)) & served_pools for p in pools):
            continue  # nothing a live worker could run: waiting for workers, not stalled
        conn.execute(update(_G).where(_G.c.id == graph_id).values(stalled_at=now))
        cycle.tx.events.append([graph_stalled(graph_id, routing, stall_after)])
        flagged.append(graph_id)
    return flagged
