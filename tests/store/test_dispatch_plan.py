"""PostgreSQL's dispatch reads only the jobs it dispatches, whatever plan it runs with.

The cycle's transaction keeps generic plans (postgresql/cycle.py:SCANS_OFF), and a
connection prepares the dispatch once: its plan is made with the statistics of that
moment, often while few jobs were pending. Joined to its row set, the jobs were then
read in full for each dispatch of a burst: 4.6 s to place 5,000 jobs due at one instant
on 10 workers (bench.fleet: a cycle of 12 s), against 0.14 s with a plan made after the
burst. The dispatch now finds its jobs by the primary key from an array (an index
condition in every plan). Counted, not timed: the index tuples the dispatch fetched."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from tests.store.driver import JOBS_FETCHED
from tests.submitting import yard_with_type

from taskyard.api.yard import Yard
from taskyard.model.records import JobSubmission
from taskyard.store.clock import MovableClock

BURST = 3000
PLACED = 5


@pytest.fixture
def yard(pg_url: str, clock: MovableClock) -> Iterator[Yard]:
    with yard_with_type(pg_url, clock) as y:
        yield y


def _dispatch(conn: psycopg.Connection[Any], sql: str, params: dict[str, Any],
              jobs: int) -> int:
    """Run the dispatch as the cycle does (its settings, generic plans, prepared), rolled
    back; return the index tuples it fetched from ``jobs``."""
    from taskyard.store.postgresql import cycle

    with conn.cursor() as cursor:
        cursor.execute(f"SELECT {cycle.SCANS_OFF}")
        cursor.execute(f"SELECT set_config('{cycle.HELD_SETTING}', 'on', true)")
        before = cursor.execute(JOBS_FETCHED).fetchone()
        cursor.execute(sql, params, prepare=True)
        dispatched = len(cursor.fetchall())
        after = cursor.execute(JOBS_FETCHED).fetchone()
    conn.rollback()
    assert before is not None and after is not None
    assert dispatched == jobs
    return int(after[0]) - int(before[0])


def test_pg_a_dispatch_planned_before_a_burst_reads_only_its_own_jobs(
        yard: Yard) -> None:
    from taskyard.store.postgresql import cycle

    store = yard.store
    worker = store.workers.register("w", ["default"], PLACED, lease_seconds=300).id
    (first,) = store.jobs.submit([JobSubmission("t", {})])
    sql = cycle.DISPATCH.replace("{now}", store.now_sql)

    def params(jobs: list[int]) -> dict[str, Any]:
        return cycle.dispatch_params([(j, worker) for j in jobs], {worker: "w"}, set(), [],
                                     last=False)

    pooled = store.engine.raw_connection()  # the store's session settings (its clock)
    try:
        conn = pooled.driver_connection
        assert isinstance(conn, psycopg.Connection)
        conn.execute("ANALYZE jobs")  # as autovacuum leaves it before a burst
        conn.commit()
        # The plan made now, while one job is pending, is the one the connection keeps.
        assert _dispatch(conn, sql, params([first]), 1) <= 10
        burst = store.jobs.submit([JobSubmission("t", {})] * BURST)
        fetched = _dispatch(conn, sql, params(burst[:PLACED]), PLACED)
    finally:
        pooled.close()
    # Its own jobs (and an index probe or two per job), not the burst's thousands.
    assert fetched <= 10 * PLACED, f"the dispatch of {PLACED} jobs fetched {fetched} rows"
