"""A cycle that is not due for maintenance and finds nothing pending builds no planner
(scheduler/cycle.py): PostgreSQL knows it from the cycle's first read; SQLite reads its
candidates to find out."""

from __future__ import annotations

from typing import Any

import pytest
from tests.submitting import yard_with_type

from taskyard.model.records import JobSubmission, TaskTypeSpec
from taskyard.scheduler.cycle import run_cycle
from taskyard.store import Store
from taskyard.store.clock import MovableClock
from taskyard.store.driver.planning import planner_values


def _nothing_pending(store: Store) -> bool:
    with store.cycle() as cycle:
        assert cycle is not None
        return cycle.nothing_pending()


def test_a_cycle_knows_when_nothing_is_pending(store: Store) -> None:
    postgresql = store.engine.dialect.name == "postgresql"
    store.task_types.put(TaskTypeSpec("t", "shell:true"))
    store.workers.register("w", ["default"], 1, lease_seconds=30)
    assert _nothing_pending(store) is postgresql
    (job,) = store.jobs.submit([JobSubmission("t")])
    assert _nothing_pending(store) is False
    # Not due for maintenance, as a worker's cycle at the end of a job: it still places.
    with store.cycle() as cycle:
        assert cycle is not None
        report = run_cycle(cycle, maintenance_every=3600.0)
    assert [p.job_id for p in report.placed] == [job]
    assert _nothing_pending(store) is postgresql
    with store.cycle() as cycle:
        assert cycle is not None
        idle = run_cycle(cycle, maintenance_every=3600.0)
    assert (idle.placed, idle.skipped, idle.changed) == ([], [], False)


def test_with_nothing_pending_the_snapshot_is_read_only_when_wanted(store: Store) -> None:
    """PostgreSQL's first read leaves the snapshot out when nothing is pending (its
    workers' part grows with the fleet) unless this store has placed a lone submit (the
    snapshot is then the next submit's basis); whoever needs it still gets it."""
    postgresql = store.engine.dialect.name == "postgresql"
    store.task_types.put(TaskTypeSpec("t", "shell:true"))
    worker = store.workers.register("w", ["default"], 1, lease_seconds=30).id
    with store.cycle() as cycle:
        assert cycle is not None
        reads = cycle.tx.driver.read_cycle(cycle.tx.raw)
        assert (reads.snapshot is None) is postgresql
        # Asked for (maintenance, explain): read then, the same values.
        assert [w.id for w in cycle.workers()] == [worker]
        assert cycle.paused_pools() == frozenset()
    (job,) = store.jobs.submit([JobSubmission("t")])
    with store.cycle() as cycle:  # a job pending: the snapshot comes with the first read
        assert cycle is not None
        reads = cycle.tx.driver.read_cycle(cycle.tx.raw)
        assert reads.snapshot is not None
        assert [w.id for w in planner_values(reads.snapshot)[0]] == [worker]
        assert [p.job_id for p in run_cycle(cycle).placed] == [job]


def test_a_store_that_submits_reads_the_snapshot_as_a_basis(
        db_url: str, clock: MovableClock) -> None:
    with yard_with_type(db_url, clock) as yard:
        store = yard.store
        store.workers.register("w", ["default"], 4, lease_seconds=30)
        yard.submit("t")  # a lone submit that places its job
        with store.cycle() as cycle:  # nothing pending
            assert cycle is not None
            assert cycle.nothing_pending() is (store.backend == "postgresql")
            assert cycle.tx.driver.read_cycle(cycle.tx.raw).snapshot is not None


def test_a_cycle_that_needs_the_snapshot_reads_it_with_its_first_read(
        store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    """Its maintenance due, a cycle builds the planner whatever is pending: one read
    brings the snapshot, not a first read without it and then a second."""
    store.task_types.put(TaskTypeSpec("t", "shell:true"))
    store.workers.register("w", ["default"], 1, lease_seconds=30)
    separate: list[int] = []
    read_snapshot = store.driver.read_snapshot

    def recorded(raw: Any) -> Any:
        separate.append(1)
        return read_snapshot(raw)

    monkeypatch.setattr(store.driver, "read_snapshot", recorded)
    with store.cycle() as cycle:
        assert cycle is not None
        report = run_cycle(cycle, maintenance_every=0.0)
    assert (report.placed, separate) == ([], [])
    with store.cycle() as cycle:  # asked for first by an explanation: the same
        assert cycle is not None
        assert len(cycle.workers()) == 1
    assert separate == []
