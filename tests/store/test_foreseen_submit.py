"""A single submit placed from the last cycle's snapshot in one round trip (PostgreSQL,
dialects/pg_foreseen.py): placed only while, under the cycle's lock, the snapshot still
reads as it did and nothing else is pending; otherwise pending, then placed by a cycle
(ours when the lock was free, the scheduler's when it was not). SQLite never keeps a
snapshot to foresee from."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from tests.cycle_lock import holding_the_cycle
from tests.submitting import HANDLER, pending_events, state, yard_with_type

from taskyard.api.yard import EVENT_MAINTENANCE, Yard
from taskyard.model.records import JobSubmission, TaskTypeSpec
from taskyard.scheduler.cycle import _last_maintenance, maintenance_waits, schedule
from taskyard.store import Store, open_store
from taskyard.store.clock import MovableClock
from taskyard.store.transitions.jobs import Jobs


@pytest.fixture
def yard(db_url: str, clock: MovableClock) -> Iterator[Yard]:
    with yard_with_type(db_url, clock) as y:
        yield y


@pytest.fixture
def foreseen(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """What each foreseeing submit did (None: it left the job to the ordinary path)."""
    seen: list[Any] = []
    original = Jobs.submit_foreseen

    def recorded(self: Jobs, sub: JobSubmission, place: Any, **options: Any) -> Any:
        found = original(self, sub, place, **options)
        seen.append(found)
        return found

    monkeypatch.setattr(Jobs, "submit_foreseen", recorded)
    return seen


def idle_basis(yard: Yard, capacity: int = 2) -> int:
    """A live worker, and a first submit whose cycle leaves its snapshot behind; that
    job then ends, so that the worker is as idle as the snapshot says."""
    store = yard.store
    if store.backend == "sqlite":
        pytest.skip("SQLite's submit and cycle run under its write lock: nothing to foresee")
    worker = store.workers.register("w", ["default"], capacity, lease_seconds=300).id
    _last_maintenance.pop(id(store), None)
    first = yard.submit("t")  # the ordinary path: its cycle reads the snapshot
    assert store.basis is not None and state(store, first)[0] == "dispatched"
    with store.write() as tx:  # the first job ends: the worker is idle again
        tx.raw.run("UPDATE jobs SET state = 'succeeded', worker_id = NULL, finished_at = 1 "
                   "WHERE id = ?", (first,))
    return worker


def test_an_idle_queue_places_the_job_in_one_round_trip(yard: Yard, foreseen: list[Any],
                                                       ) -> None:
    store = yard.store
    worker = idle_basis(yard)
    listener = store.listener(f"worker.{worker}")
    basis = store.basis
    try:
        job_id = yard.submit("t", {"n": 1})
        assert listener.wait(5.0)
        carried = store.jobs_in_wakeups(listener.payloads())
    finally:
        listener.close()
    assert foreseen[-1] is not None and foreseen[-1].placed
    assert foreseen[-1].job_id == job_id
    assert store.basis is basis  # no cycle ran after it
    assert state(store, job_id) == ("dispatched", 1, "w")
    job = store.jobs.get(job_id)
    assert job is not None and job.args == {"n": 1}
    assert [(a.attempt, a.state, a.worker) for a in job.attempts] == [(1, "dispatched", "w")]
    assert pending_events(store, job_id) == 1
    # The worker's wake-up carries it, as a dispatch's would.
    assert carried == store.attempts.fetch(worker).jobs
    assert [j.job_id for j in carried] == [job_id]


def test_each_statement_of_the_pipeline_is_converted_once(
        yard: Yard, foreseen: list[Any], monkeypatch: pytest.MonkeyPatch) -> None:
    """psycopg converts a statement's placeholders anew at every execution when it is
    given more than 50 parameters or 4 KiB of text: each statement of the pipeline gets
    only the parameters it names (pg_rows.pipelined), and stays within both."""
    queries = pytest.importorskip("psycopg._queries")
    idle_basis(yard)
    uncached: list[bytes] = []
    original = queries._query2pg_nocache

    def recorded(query: bytes, encoding: str) -> Any:
        uncached.append(query)
        return original(query, encoding)

    monkeypatch.setattr(queries, "_query2pg_nocache", recorded)
    job_id = yard.submit("t", {"n": 1})
    assert foreseen[-1] is not None and foreseen[-1].placed and foreseen[-1].job_id == job_id
    assert uncached == []


def test_a_changed_snapshot_leaves_the_job_to_the_submits_own_cycle(
        yard: Yard, foreseen: list[Any]) -> None:
    store = yard.store
    idle_basis(yard, capacity=1)
    store.workers.register("w2", ["default"], 4, lease_seconds=300)  # not in the snapshot
    job_id = yard.submit("t")
    assert foreseen[-1] is not None and not foreseen[-1].placed and foreseen[-1].held
    # Inserted pending, then placed by the cycle the submit ran: on whichever worker
    # the planner picks with the new snapshot.
    assert state(store, job_id)[:2] == ("dispatched", 1)
    assert pending_events(store, job_id) == 1
    assert store.basis is not None and "w2" in store.basis.text  # read anew


def test_a_pending_job_goes_first_and_later_submits_insert_first(
        yard: Yard, foreseen: list[Any]) -> None:
    store = yard.store
    idle_basis(yard, capacity=1)
    (older,) = store.jobs.submit([JobSubmission("t", {})])  # pending, no cycle
    newer = yard.submit("t")
    assert foreseen[-1] is not None and not foreseen[-1].placed and foreseen[-1].backlog
    assert state(store, older)[0] == "dispatched"  # placement order: the older first
    assert state(store, newer) == ("pending", 0, None)
    assert not store.queue_idle_seen  # a backlog: the next submit inserts first
    count = len(foreseen)
    yard.submit("t")
    assert len(foreseen) == count


def test_with_the_cycle_elsewhere_the_scheduler_is_woken(
        yard: Yard, foreseen: list[Any], db_url: str) -> None:
    store = yard.store
    idle_basis(yard)
    other = open_store(db_url)
    scheduler = store.listener("scheduler")
    try:
        with holding_the_cycle(other):
            job_id = yard.submit("t")
            assert scheduler.wait(5.0)
        assert foreseen[-1] is not None and not foreseen[-1].placed
        assert foreseen[-1].held is False
        assert state(store, job_id) == ("pending", 0, None)
        assert pending_events(store, job_id) == 1
        assert schedule(store) is not None
        assert state(store, job_id) == ("dispatched", 1, "w")
    finally:
        scheduler.close()
        other.close()


def test_a_task_type_changed_since_it_was_read_takes_the_ordinary_path(
        yard: Yard, foreseen: list[Any]) -> None:
    store = yard.store
    idle_basis(yard)
    store.task_types.put(TaskTypeSpec("t", HANDLER, timeout=42))
    job_id = yard.submit("t")
    assert foreseen[-1] is None  # nothing written by it
    job = store.jobs.get(job_id)
    assert job is not None and job.timeout == 42  # the type read afresh
    assert state(store, job_id) == ("dispatched", 1, "w")
    assert pending_events(store, job_id) == 1


def test_due_maintenance_with_nothing_to_do_is_done_by_the_insert(
        yard: Yard, foreseen: list[Any]) -> None:
    store = yard.store
    idle_basis(yard)
    _last_maintenance.pop(id(store), None)  # due: the submit's cycle would run it
    job_id = yard.submit("t")
    assert foreseen[-1] is not None and foreseen[-1].placed
    assert state(store, job_id) == ("dispatched", 1, "w")
    assert not maintenance_waits(store, EVENT_MAINTENANCE)  # found nothing to do: done


def test_due_maintenance_with_work_leaves_the_job_to_the_submits_cycle(
        yard: Yard, foreseen: list[Any]) -> None:
    store = yard.store
    idle_basis(yard, capacity=4)
    (lost,) = store.jobs.submit([JobSubmission("t", {})])
    with store.write() as tx:  # a job suspended when its worker was lost
        tx.raw.run("UPDATE jobs SET state = 'suspended' WHERE id = ?", (lost,))
    _last_maintenance.pop(id(store), None)
    job_id = yard.submit("t")
    assert foreseen[-1] is not None and not foreseen[-1].placed and foreseen[-1].held
    # The submit's cycle ran the maintenance: the suspended job is requeued, both placed.
    assert state(store, lost)[0] == "dispatched"
    assert state(store, job_id) == ("dispatched", 1, "w")


def test_a_rate_limited_type_takes_the_ordinary_path(yard: Yard, foreseen: list[Any]) -> None:
    store = yard.store
    idle_basis(yard, capacity=4)
    store.task_types.put(TaskTypeSpec("r", HANDLER, rate_limit="5/s"))
    schedule(store)  # a snapshot that knows the rate limit
    yard.submit("r")
    assert foreseen[-1] is None


def test_sqlite_keeps_no_snapshot_to_foresee_from(store: Store) -> None:
    if store.backend != "sqlite":
        pytest.skip("PostgreSQL: see above")
    store.task_types.put(TaskTypeSpec("t", HANDLER))
    store.workers.register("w", ["default"], 1, lease_seconds=300)
    store.jobs.submit([JobSubmission("t", {})])
    assert schedule(store) is not None
    assert store.basis is None
