"""Seed 003's invariant, checked each cycle: a running graph either has no
worker for its pending jobs, or makes progress, or is complete. A graph with
pending jobs that live workers could serve, and no job state change for
``stall_after`` seconds, is flagged stalled (and optionally canceled)."""

from __future__ import annotations

from taskyard.model.records import loads
from taskyard.store.transitions.cycle import CycleTx
from taskyard.store.transitions.events import graph_stalled

MAX_GRAPHS_PER_CYCLE = 100


def flag_stalled_graphs(cycle: CycleTx, stall_after: float, served_pools: set[str]) -> list[int]:
    """Flag (once) running graphs stalled for ``stall_after`` seconds; returns their ids."""
    driver, raw = cycle.tx.driver, cycle.tx.raw
    flagged: list[int] = []
    for graph_id, routing in driver.stale_graphs(raw, stall_after, MAX_GRAPHS_PER_CYCLE):
        busy, pending = driver.graph_activity(raw, graph_id)
        if busy:
            continue  # something runs: that is progress (seed 003), however long it takes
        if not any(set(loads(p)) & served_pools for p in pending):
            continue  # nothing a live worker could run: waiting for workers, not stalled
        driver.flag_stalled(raw, graph_id)
        cycle.tx.events.append([graph_stalled(graph_id, routing, stall_after)])
        flagged.append(graph_id)
    return flagged
