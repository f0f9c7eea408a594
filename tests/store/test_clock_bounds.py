"""On PostgreSQL the cycle reads the database clock once per statement, before its scans
(``portable/cycle.py:ONCE``): its check for an expired lease is then a bound of the
leases' index scan, and its snapshot compares each live worker's lease with a value,
where ``clock_timestamp()``, volatile, was run on every row the index gave, each cycle
(issue 39: 200 workers). Plans, not timings."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import text

from taskyard.store import Store
from taskyard.store.postgresql.cycle import MAINTENANCE_WORK, SNAPSHOT_TEXT

WORKERS = 40


def _plan(store: Store, sql: str, params: dict[str, Any]) -> str:
    with store.engine.begin() as conn:
        # As the cycle runs its reads (postgresql/cycle.py:SCANS_OFF).
        for setting in ("enable_seqscan", "enable_bitmapscan", "jit"):
            conn.execute(text(f"SET LOCAL {setting} = off"))
        statement = sql.replace("{now}", store.now_sql)
        rows = conn.exec_driver_sql(f"EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) {statement}",
                                    params)
        return "\n".join(str(r[0]) for r in rows)


def _clock_filters(plan: str) -> list[str]:
    """The plan's conditions that run the clock on each row."""
    return [line for line in plan.splitlines()
            if ("Filter:" in line or "Cond:" in line) and "clock_timestamp" in line]


@pytest.fixture
def fleet(store: Store) -> Store:
    if store.backend != "postgresql":
        pytest.skip("PostgreSQL's planner and its volatile clock")
    for n in range(WORKERS):
        store.workers.register(f"w{n}", ["default"], 1, lease_seconds=300)
    with store.engine.begin() as conn:
        conn.execute(text("ANALYZE workers"))  # as autovacuum soon would
    return store


def test_the_expired_lease_check_stops_at_the_first_live_lease(fleet: Store) -> None:
    plan = _plan(fleet, MAINTENANCE_WORK, {"grace": 10})
    workers = [line for line in plan.splitlines() if "ix_workers_active_lease" in line]
    assert workers, plan
    assert "Index Cond: (lease_expires_at < $" in plan, plan  # a bound of the scan
    assert "Rows Removed by Filter" not in plan, plan  # no entry read and dropped
    assert not _clock_filters(plan), plan


def test_the_snapshot_reads_the_clock_once(fleet: Store) -> None:
    plan = _plan(fleet, f"SELECT {SNAPSHOT_TEXT}", {})
    assert "lease_expires_at >= $" in plan, plan
    assert not _clock_filters(plan), plan
    with fleet.engine.begin() as conn:
        (text_,) = conn.exec_driver_sql(
            f"SELECT {SNAPSHOT_TEXT.replace('{now}', fleet.now_sql)}").one()
    assert text_.count('"w') == WORKERS  # every live worker, as before
