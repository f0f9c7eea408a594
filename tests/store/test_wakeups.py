"""The short path from a submit to a worker, on both stores: the wake-up of a dispatch
carries its jobs (PostgreSQL) exactly as a worker would read them, and not when a job
needs more than its row; a submit that cannot have the cycle leaves its job to the
scheduler without waiting; the reads a submit makes ahead of its cycle are made again
once the cycle's maintenance changed what they saw; a pooled connection the server
closed is replaced, not handed out."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from typing import Any

import pytest
from sqlalchemy import Connection, create_engine, text

from taskyard.api.yard import Yard
from taskyard.scheduler.cycle import run_cycle, schedule
from taskyard.store import Store, open_store
from taskyard.store.base import TX_SCOPED
from taskyard.store.engine import normalize_url
from taskyard.store.records import JobSubmission, Outcome, Started, TaskTypeSpec

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
        worker = yard.store.register_worker("w", ["default"], 2, lease_seconds=60).id
        box: list[int] = []
        payloads = _payloads(yard.store, worker, lambda: box.append(
            yard.submit("t", {"n": 1, "s": "é"}, priority=3)))
        read = yard.store.fetch_dispatched(worker).jobs
        assert [j.job_id for j in read] == box
        if yard.store.sqlite:
            assert payloads == []  # SQLite wake-ups carry nothing: the worker reads
            return
        assert len(payloads) == 1
        assert yard.store.jobs_in_wakeups(payloads) == read
    finally:
        yard.close()


def test_a_retried_attempt_is_not_carried(store: Store) -> None:
    if store.sqlite:
        pytest.skip("wake-ups carry jobs on PostgreSQL only")
    store.put_task_type(TaskTypeSpec("t", HANDLER, retries=1))
    worker = store.register_worker("w", ["default"], 1, lease_seconds=60).id
    (job,) = store.submit_jobs([JobSubmission("t", {})])
    assert schedule(store) is not None
    store.record_attempts(worker, [Started(job, 1, 0.0)], [Outcome(job, 1, "failed", 1)])
    # Attempt 2 must read the results of the stages attempt 1 finished: not carried.
    (payload,) = _payloads(store, worker, lambda: schedule(store))
    assert payload == "" and store.jobs_in_wakeups([payload]) is None
    assert [(j.job_id, j.attempt) for j in store.fetch_dispatched(worker).jobs] == [(job, 2)]


@contextlib.contextmanager
def _holding_the_cycle(other: Store) -> Iterator[None]:
    if other.sqlite:  # the lock alone: its cycle's write transaction would block the submit
        lock = other._cycle_file_lock()
        assert lock.acquire()
        try:
            yield
        finally:
            lock.release()
        return
    with other.cycle() as tx:
        assert tx is not None
        yield


def test_a_submit_that_cannot_have_the_cycle_leaves_the_job_to_the_scheduler(
        db_url: str) -> None:
    yard, other = Yard(db_url), None
    try:
        yard.init()
        yard.add_task_type("t", HANDLER)
        yard.store.register_worker("w", ["default"], 1, lease_seconds=60)
        other = open_store(db_url)
        scheduler = yard.store.listener("scheduler")
        with _holding_the_cycle(other):  # another process is in its cycle
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


def test_reads_ahead_of_a_cycle_are_made_again_after_its_maintenance(store: Store) -> None:
    store.put_task_type(TaskTypeSpec("t", HANDLER))
    store.register_worker("lost", ["default"], 1, lease_seconds=0.5)
    (first,) = store.submit_jobs([JobSubmission("t", {})])
    assert schedule(store) is not None
    assert store.get_job(first).worker == "lost"  # type: ignore[union-attr]
    time.sleep(0.7)  # its lease runs out
    store.register_worker("alive", ["default"], 2, lease_seconds=60)

    def place(conn: Connection) -> bool:
        # The submit's cycle: its maintenance expels the lost worker and requeues the
        # first job, which the reads made with the insert (PostgreSQL) did not see.
        with store.cycle(conn) as tx:
            assert tx is not None
            report = run_cycle(store, tx, record=False, maintenance_every=0)
        assert report.requeued == 1
        return True

    (second,) = store.submit_jobs([JobSubmission("t", {})], place=place)
    for job in (first, second):
        record = store.get_job(job)
        assert record is not None and (record.state, record.worker) == ("dispatched", "alive")


def test_a_pooled_connection_the_server_closed_is_replaced(store: Store) -> None:
    if store.sqlite:
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
    store.put_task_type(TaskTypeSpec("t", HANDLER, timeout=9))
    worker = store.register_worker("w", ["default"], 1, lease_seconds=60).id
    (first,) = store.submit_jobs([JobSubmission("t", {"n": 1})])
    assert schedule(store) is not None
    (second,) = store.submit_jobs([JobSubmission("t", {"n": [2, "x"]}, priority=4)])
    report = store.record_attempts(
        worker, [Started(first, 1, 0.0)], [Outcome(first, 1, "succeeded", 0)],
        place=lambda tx: run_cycle(store, tx, record=False))
    assert [j.job_id for j in report.assignment.jobs] == [second]
    assert report.assignment.jobs == store.fetch_dispatched(worker).jobs


def test_a_transactions_scratch_state_does_not_outlive_it(store: Store) -> None:
    # Per-transaction state (buffered events, graph writes left to the end, reads made
    # ahead of a cycle) lives in the pooled connection's info: a failed transaction
    # must not hand it to the next one on that connection.
    with pytest.raises(RuntimeError), store._tx() as conn:
        conn.info[TX_SCOPED + "graph_work"] = "stale"
        raise RuntimeError("the transaction fails")
    with store._tx() as conn:
        assert [k for k in conn.info if str(k).startswith(TX_SCOPED)] == [TX_SCOPED + "events"]
