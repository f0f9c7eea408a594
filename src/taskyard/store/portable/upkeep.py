"""The scheduler's upkeep written once for both backends: the starts of rate-limited
jobs, anti-starvation aging, the watchdog of graphs without progress."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from taskyard.store.cursor import Cursor
from taskyard.store.driver.params import AgePending


def recent_starts(raw: Cursor, type_name: str, key: str, since: float,
                  count: int) -> list[float]:
    """The newest ``count`` starts of (type, key) after ``since``, through the index on
    type, key and time."""
    return [at for (at,) in raw.all(
        "SELECT at FROM rate_starts WHERE type = ? AND rate_key = ? AND at > ? "
        "ORDER BY at DESC LIMIT ?", (type_name, key, since, count))]


def record_starts(raw: Cursor, started: Sequence[tuple[str, str]]) -> None:
    """One start per (type, key), at the clock of this statement."""
    raw.many("INSERT INTO rate_starts (type, rate_key, at) VALUES (?, ?, {now})", started)


def forget_starts(raw: Cursor, before: float) -> int:
    """Forget the starts before ``before`` (a value, not the clock's expression: a
    condition on PostgreSQL's volatile clock could not use the index); how many."""
    return raw.run("DELETE FROM rate_starts WHERE at < ?", (before,))


def age_pending(raw: Cursor, params: AgePending, *, floor: str = "{}",
                by_key: bool = False) -> int:
    """Raise the oldest pending jobs' priority to their submitted one plus the full
    ``period``s they waited since they were created (or due, if later), reading at most
    ``limit`` of them through the ``(state, id)`` index; how many changed. ``floor``: how
    a backend rounds the periods down before it casts them (a format string).
    ``by_key``: the oldest ids read once, then each job by its key, the guard where no
    index can take it (PostgreSQL, whatever its statistics: see
    ``postgresql/jobs.py:STAGE_DUE``); else ``id IN (…)``, which SQLite reads once."""
    waited = floor.format("({now} - CASE WHEN run_after > created_at THEN run_after "
                          "ELSE created_at END) / ?")
    waited = f"CAST({waited} AS INTEGER)"
    target = f"COALESCE(base_priority, priority) + {waited}"
    oldest = "SELECT id FROM jobs WHERE state = 'pending' ORDER BY id LIMIT ?"
    which = (f"id = ANY(ARRAY({oldest})) AND CASE WHEN state = 'pending' "
             f"THEN {target} > priority END" if by_key else
             f"id IN ({oldest}) AND state = 'pending' AND {target} > priority")
    return raw.run(
        f"UPDATE jobs SET base_priority = COALESCE(base_priority, priority), "
        f"priority = {target} WHERE {which}", (params.period, params.limit, params.period))


def stale_graphs(raw: Cursor, stall_after: float, limit: int) -> list[tuple[Any, ...]]:
    """Running graphs not yet flagged, without progress for ``stall_after`` seconds, the
    longest first: (id, routing)."""
    return raw.all("SELECT id, routing FROM graphs WHERE state = 'running' "
                   "AND stalled_at IS NULL AND last_progress_at < {now} - ? "
                   "ORDER BY last_progress_at LIMIT ?", (stall_after, limit))


def graph_activity(raw: Cursor, graph_id: int) -> tuple[bool, list[str]]:
    """Whether a job of the graph is dispatched or running, and the pools lists of its
    pending jobs (at most 100)."""
    busy = raw.first("SELECT 1 FROM jobs WHERE graph_id = ? "
                     "AND state IN ('dispatched', 'running') LIMIT 1", (graph_id,))
    pools = [p for (p,) in raw.all("SELECT pools FROM jobs WHERE graph_id = ? "
                                   "AND state = 'pending' LIMIT 100", (graph_id,))]
    return busy is not None, pools


def flag_stalled(raw: Cursor, graph_id: int) -> None:
    raw.run("UPDATE graphs SET stalled_at = {now} WHERE id = ?", (graph_id,))
