"""The maintenance steps' work, as SQL both backends run: whether each step of a
cycle's maintenance (store/transitions/cycle.py) has something to do. A cycle reads them in one
statement (Driver.maintenance_work); a submit that places its job from the last
cycle's snapshot checks that there is nothing, as a cycle would have found
(dialects/pg_foreseen.py)."""

from __future__ import annotations

TIMEOUT_GRACE = 10.0
"""Seconds past an attempt's deadline before the scheduler fails it itself (the
worker normally kills the child at the deadline; this covers a vanished worker)."""


def maintenance_checks(false: str, grace: str) -> tuple[str, str, str, str]:
    """SQL conditions, in CycleTx.maintenance_work's order: a live worker's lease ran
    out; an attempt is past its deadline and ``grace`` (a parameter marker); jobs are
    suspended; a schedule is due. ``false``: the backend's false, as the schedules'
    partial index is written (its planner must see it to use the index)."""
    return ("EXISTS (SELECT 1 FROM workers WHERE state = 'active' "
            "AND lease_expires_at < {now})",
            "EXISTS (SELECT 1 FROM jobs WHERE state IN ('dispatched', 'running') "
            f"AND deadline < {{now}} - {grace})",
            "EXISTS (SELECT 1 FROM jobs WHERE state = 'suspended')",
            f"EXISTS (SELECT 1 FROM schedules WHERE paused = {false} AND next_run <= {{now}})")
