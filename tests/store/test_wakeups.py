"""The short path from a submit to a worker, on both stores: the wake-up of a dispatch
carries its jobs exactly as a worker would read them, and not when a job needs more
than its row (nor, on SQLite, when a later wake-up overwrote it); a submit that cannot
have the cycle leaves its job to the scheduler without waiting; the reads a submit
makes ahead of its cycle are made again once the cycle's maintenance changed what they
saw; a pooled connection the server closed is replaced, not handed out."""

from __future__ import annotations

import time
from typing import Any

import pytest
from sqlalchemy import create_engine, text

from cycle_lock import holding_the_cycle
from taskyard.api.yard import Yard
from taskyard.model.records import JobSubmission, Outcome, Started, TaskTypeSpec
from taskyard.scheduler.cycle import run_cycle, schedule
from taskyard.store import MovableClock, Store, open_store
from taskyard.store.driver import normalize_url
from taskyard.worker.reports import report_batch

HANDLER = "python:tests.handlers_for_tests:echo"


def _payloads(store: Store, worker: int, act: Any) -> list[str]:
    listener = store.listener(f"worker.{worker}")
    try:
        act()
        assert listener.wait(5.0)
        return listener.payloads()
    finally:
        listener.close()


def test_a_wakeup_carries_the_jobs_it_places(db_url: str) -> None:
    yard = Yard(db_url)
    try:
        yard.init()
        yard.add_task_type("t", HANDLER, timeout=30)
        worker = yard.store.workers.register("w", ["default"], 2, lease_seconds=60).id
        box: list[int] = []
        payloads = _payloads(yard.store, worker, lambda: box.append(
            yard.submit("t", {"n": 1, "s": "é"}, priority=3)))
        read = yard.store.attempts.fetch(worker).jobs
        assert [j.job_id for j in read] == box
        assert len(payloads) == 1
        assert yard.store.jobs_in_wakeups(payloads) == read
    finally:
        yard.close()


def test_a_retried_attempt_is_not_carried(store: Store) -> None:
    store.task_types.put(TaskTypeSpec("t", HANDLER, retries=1))
    worker = store.workers.register("w", ["default"], 1, lease_seconds=60).id
    (job,) = store.jobs.submit([JobSubmission("t", {})])
    assert schedule(store) is not None
    report_batch(store, worker, [Started(job, 1, 0.0)], [Outcome(job, 1, "failed", 1)])
    # Attempt 2 must read the results of the stages attempt 1 finished: not carried.
    payloads = _payloads(store, worker, lambda: schedule(store))
    assert payloads in ([""], []) and store.jobs_in_wakeups(payloads) is None
    assert [(j.job_id, j.attempt) for j in store.attempts.fetch(worker).jobs] == [(job, 2)]


def test_wakeups_read_late_never_carry_part_of_what_was_placed(store: Store) -> None:
    """Two dispatches before the worker reads its wake-ups: PostgreSQL queues both
    payloads; SQLite keeps the last only, so its listener reports none and the worker
    reads what is placed on it. Never one job of the two."""
    store.task_types.put(TaskTypeSpec("t", HANDLER))
    worker = store.workers.register("w", ["default"], 2, lease_seconds=60).id
    listener = store.listener(f"worker.{worker}")
    try:
        placed = []
        for _ in range(2):
            placed += store.jobs.submit([JobSubmission("t", {})])
            assert schedule(store) is not None
        assert listener.wait(5.0)
        payloads = list(listener.payloads())
        # PostgreSQL delivers each commit's NOTIFY on its own: under load the second
        # can reach the socket after the first wait has drained it.
        deadline = time.monotonic() + 30.0
        while store.backend != "sqlite" and len(payloads) < 2 and \
                time.monotonic() < deadline:
            if listener.wait(deadline - time.monotonic()):
                payloads += listener.payloads()
        carried = store.jobs_in_wakeups(payloads)
    finally:
        listener.close()
    if store.backend == "sqlite":
        assert carried is None
    else:
        assert carried is not None and sorted(j.job_id for j in carried) == placed
    assert sorted(j.job_id for j in store.attempts.fetch(worker).jobs) == placed


def test_a_submit_that_cannot_have_the_cycle_leaves_the_job_to_the_scheduler(
        db_url: str) -> None:
    yard, other = Yard(db_url), None
    try:
        yard.init()
        yard.add_task_type("t", HANDLER)
        yard.store.workers.register("w", ["default"], 1, lease_seconds=60)
        other = open_store(db_url)
        scheduler = yard.store.listener("scheduler")
        with holding_the_cycle(other):  # another process is in its cycle
            started = time.monotonic()
            job = yard.submit("t")
            assert time.monotonic() - started < 2.0  # did not wait for the lock
            assert scheduler.wait(5.0)  # the scheduler is asked to place it instead
        scheduler.close()
        assert yard.get_job(job).state == "pending"
        assert schedule(yard.store) is not None
        assert yard.get_job(job).state == "dispatched"
    finally:
        yard.close()
        if other is not None:
            other.close()


def test_reads_ahead_of_a_cycle_are_made_again_after_its_maintenance(
        store: Store, clock: MovableClock) -> None:
    store.task_types.put(TaskTypeSpec("t", HANDLER))
    store.workers.register("lost", ["default"], 1, lease_seconds=0.5)
    (first,) = store.jobs.submit([JobSubmission("t", {})])
    assert schedule(store) is not None
    assert store.jobs.get(first).worker == "lost"  # type: ignore[union-attr]
    clock.advance(0.7)  # its lease runs out
    store.workers.register("alive", ["default"], 2, lease_seconds=60)

    with store.submit([JobSubmission("t", {})]) as submitted:
        # The submit's cycle: its maintenance expels the lost worker and requeues the
        # first job, which the reads made with the insert (PostgreSQL) did not see.
        assert submitted.cycle is not None
        report = run_cycle(submitted.cycle, record=False, maintenance_every=0)
    (second,) = submitted.ids
    assert report.requeued == 1
    for job in (first, second):
        record = store.jobs.get(job)
        assert record is not None and (record.state, record.worker) == ("dispatched", "alive")


def test_a_pooled_connection_the_server_closed_is_replaced(store: Store) -> None:
    if (store.backend == "sqlite"):
        pytest.skip("a PostgreSQL server closes connections")
    before = store.now()
    database = store.engine.url.database
    admin = create_engine(normalize_url(store.url), isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as conn:
            closed = conn.execute(text(
                "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                "WHERE datname = :d AND pid <> pg_backend_pid()"), {"d": database}).scalar()
        assert closed and closed >= 1  # the store's pooled connection among them
        time.sleep(0.2)
        assert store.now() >= before  # a fresh connection, not an error
    finally:
        admin.dispose()


def test_a_workers_own_cycle_returns_the_jobs_as_it_would_read_them(store: Store) -> None:
    store.task_types.put(TaskTypeSpec("t", HANDLER, timeout=9))
    worker = store.workers.register("w", ["default"], 1, lease_seconds=60).id
    (first,) = store.jobs.submit([JobSubmission("t", {"n": 1})])
    assert schedule(store) is not None
    (second,) = store.jobs.submit([JobSubmission("t", {"n": [2, "x"]}, priority=4)])
    report = report_batch(store,
        worker, [Started(first, 1, 0.0)], [Outcome(first, 1, "succeeded", 0)],
        place=lambda tx: run_cycle(tx, record=False))
    assert [j.job_id for j in report.assignment.jobs] == [second]
    assert report.assignment.jobs == store.attempts.fetch(worker).jobs


def test_a_failed_unit_of_work_leaves_nothing_behind(store: Store) -> None:
    # What a unit of work buffers (events, wake-ups, reads made ahead of a cycle) lives
    # in it: a failed one writes none of it, and the next starts clean.
    store.task_types.put(TaskTypeSpec("t", HANDLER))
    before = len(store.events.list())
    store.workers.register("w", ["default"], 1, lease_seconds=60)
    with pytest.raises(RuntimeError), store.submit([JobSubmission("t", {})]) as submitted:
        assert submitted.cycle is not None  # the lock and the reads made with the insert
        submitted.cycle.tx.notify("scheduler")
        raise RuntimeError("the transaction fails")
    assert store.jobs.list() == [] and len(store.events.list()) == before
    with store.write() as tx:
        assert tx.events.buffer == []
        (job,) = tx.jobs.submit([JobSubmission("t", {})])
    assert [j.id for j in store.jobs.list()] == [job]
