"""bench/awaiting.py at a small size on both stores (it cannot rot), and the plan behind
its figure: the cycle's check for a due timer reads the first entry of the timer index
whatever the number of awaiting jobs (on PostgreSQL an EXISTS over ``deadline <= now``
scanned every job: the planner cannot know how few are due; on SQLite MIN(deadline)
scanned the whole index)."""

from __future__ import annotations

from bench.awaiting import fill_awaiting, measure
from sqlalchemy import text

from taskyard.store import open_store
from taskyard.store.postgresql.cycle import MAINTENANCE_WORK
from taskyard.store.postgresql.engine import NOW_SQL
from taskyard.store.sqlite.cycle import MAINTENANCE_WORK as SQLITE_WORK


def test_the_awaiting_benchmark_runs_small(db_url: str) -> None:
    row = measure(db_url, 600, 120, 3)
    assert row["awaiting"] == 600 and row["still_awaiting"] == 600  # none ended by a cycle
    assert row["placed_per_cycle"] == 50 and row["cycle_ms_median"] > 0


def test_the_timer_check_reads_the_timer_index(db_url: str) -> None:
    store = open_store(db_url)
    try:
        fill_awaiting(store, 20_000)
        with store.engine.begin() as conn:
            if store.backend == "postgresql":
                conn.execute(text("ANALYZE jobs"))
                query = "EXPLAIN " + MAINTENANCE_WORK.replace("{now}", NOW_SQL).replace(
                    "%(grace)s", "10")
            else:
                query = "EXPLAIN QUERY PLAN " + SQLITE_WORK.replace("{now}", "0").replace(
                    "?", "10")
            plan = "\n".join(str(r[-1]) for r in conn.exec_driver_sql(query))
    finally:
        store.close()
    assert "ix_jobs_awaiting_deadline" in plan, plan
    assert "Seq Scan on jobs" not in plan and "SCAN jobs" not in plan, plan
