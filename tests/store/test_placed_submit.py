"""A submit's inline cycle places the job it submits, on both stores, whatever the
queue holds (an idle queue, a backlog, a busy worker, the lock elsewhere, maintenance
that changes what the cycle read with the insert)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from sqlalchemy import text
from tests.cycle_lock import holding_the_cycle
from tests.submitting import pending_events, state, yard_with_type

from taskyard.api.yard import EVENT_MAINTENANCE, Yard
from taskyard.model.records import JobSubmission
from taskyard.scheduler.cycle import _last_maintenance, run_cycle
from taskyard.store import open_store
from taskyard.store.clock import MovableClock


@pytest.fixture
def yard(db_url: str, clock: MovableClock) -> Iterator[Yard]:
    with yard_with_type(db_url, clock) as y:
        yield y


def test_an_idle_queue_the_job_goes_to_the_free_worker(yard: Yard) -> None:
    store = yard.store
    store.workers.register("w", ["default"], 1, lease_seconds=300)
    job_id = yard.submit("t", {"n": 1})
    assert state(store, job_id) == ("dispatched", 1, "w")
    job = store.jobs.get(job_id)
    assert job is not None
    assert [(a.attempt, a.state, a.worker) for a in job.attempts] == [(1, "dispatched", "w")]
    assert job.args == {"n": 1} and job.type == "t"
    assert pending_events(store, job_id) == 1
    # The next job finds the worker full: pending, with its event.
    second = yard.submit("t", {"n": 2})
    assert state(store, second) == ("pending", 0, None)
    assert pending_events(store, second) == 1


def test_a_submits_cycle_places_its_job_and_restores_the_planner(yard: Yard) -> None:
    store = yard.store
    store.workers.register("w", ["default"], 3, lease_seconds=300)
    yard.submit("t")  # the store's first cycle runs its maintenance steps
    with store.write() as tx:  # no guess of the snapshot holds (PostgreSQL: shortcuts.py)
        tx.raw.run("UPDATE workers SET capacity = 2 WHERE name = 'w'")
    with store.submit([JobSubmission("t", {})]) as submitted:
        assert submitted.cycle is not None
        report = run_cycle(submitted.cycle, holder="inline",
                           maintenance_every=EVENT_MAINTENANCE, record=False)
        if store.backend != "sqlite":  # its dispatch turned the scans back on
            for setting in ("enable_bitmapscan", "enable_seqscan"):
                assert submitted.cycle.tx.conn.execute(
                    text(f"SHOW {setting}")).scalar() == "on"
    (job_id,) = submitted.ids
    assert [p.job_id for p in report.placed] == [job_id]
    assert state(store, job_id) == ("dispatched", 1, "w")
    assert pending_events(store, job_id) == 1


def test_a_backlog_is_served_first_in_placement_order(yard: Yard) -> None:
    store = yard.store
    (older,) = store.jobs.submit([JobSubmission("t", {})])  # no cycle: stays pending
    store.workers.register("w", ["default"], 1, lease_seconds=300)
    newer = yard.submit("t")
    assert state(store, older)[:1] == ("dispatched",)
    assert state(store, newer) == ("pending", 0, None)
    assert pending_events(store, newer) == 1


def test_a_higher_priority_job_goes_ahead_of_the_backlog(yard: Yard) -> None:
    store = yard.store
    backlog = store.jobs.submit([JobSubmission("t", {"i": i}) for i in range(40)])
    store.workers.register("w", ["default"], 1, lease_seconds=300)
    urgent = yard.submit("t", priority=5)
    assert state(store, urgent) == ("dispatched", 1, "w")
    assert {state(store, j)[0] for j in backlog} == {"pending"}


def test_a_job_for_another_pools_list_joins_the_backlog(yard: Yard) -> None:
    store = yard.store
    (busy,) = store.jobs.submit([JobSubmission("t", {}, pools=["a"])])
    store.workers.register("w", ["b"], 1, lease_seconds=300)
    served = yard.submit("t", pools=["b"])
    assert state(store, served) == ("dispatched", 1, "w")
    assert state(store, busy) == ("pending", 0, None)


def test_a_busy_worker_leaves_the_job_pending_with_its_event(yard: Yard) -> None:
    store = yard.store
    store.workers.register("w", ["default"], 1, lease_seconds=300)
    running = yard.submit("t")
    assert state(store, running)[0] == "dispatched"
    waiting = yard.submit("t")
    assert state(store, waiting) == ("pending", 0, None)
    assert pending_events(store, waiting) == 1
    with store.write() as tx:
        for setting in ("enable_bitmapscan", "enable_seqscan"):
            if store.backend != "sqlite":
                assert tx.conn.execute(text(f"SHOW {setting}")).scalar() == "on"


def test_with_the_cycle_elsewhere_the_job_waits_for_it(yard: Yard, db_url: str) -> None:
    store = yard.store
    store.workers.register("w", ["default"], 1, lease_seconds=300)
    other = open_store(db_url)
    try:
        with holding_the_cycle(other):
            job_id = yard.submit("t")
        assert state(store, job_id) == ("pending", 0, None)
        assert pending_events(store, job_id) == 1
        # The next cycle (the scheduler's, woken by the submit) places it.
        with store.cycle() as cycle:
            assert cycle is not None
            run_cycle(cycle)
        assert state(store, job_id) == ("dispatched", 1, "w")
    finally:
        other.close()


def test_maintenance_that_changes_the_workers_reads_again_with_the_job(
        yard: Yard, clock: MovableClock) -> None:
    """The store's first inline cycle runs the maintenance steps: a worker whose lease
    ran out is expelled, the cycle reads again, and the job (in the table by then) goes
    to the live worker."""
    store = yard.store
    _last_maintenance.pop(id(store), None)  # due, whatever store had this id before
    store.workers.register("gone", ["default"], 1, lease_seconds=60)
    clock.advance(120)
    store.workers.register("live", ["default"], 1, lease_seconds=300)
    job_id = yard.submit("t")
    assert state(store, job_id) == ("dispatched", 1, "live")
    assert pending_events(store, job_id) == 1
    assert [w.name for w in store.workers.list()] == ["live"]
