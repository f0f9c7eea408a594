"""A scheduler's cycle that places on several workers, on both stores: each worker is
woken with its own jobs (PostgreSQL writes them all in one dispatch statement) and the
cycle is counted once. A cycle that maintains makes its first reads
with the question whether maintenance has work (PostgreSQL, one statement), and reads
again when it had. The round trips themselves: test_cycle_round_trips.py."""

from __future__ import annotations

from typing import Any

import pytest

from taskyard.model.records import JobSubmission, TaskTypeSpec
from taskyard.scheduler.cycle import schedule
from taskyard.store import MovableClock, Store
from taskyard.store.transitions.cycle import cycles_run

HANDLER = "python:tests.handlers_for_tests:echo"
WORKERS, SLOTS = 3, 2


def _workers(store: Store) -> list[int]:
    store.task_types.put(TaskTypeSpec("t", HANDLER))
    return [store.workers.register(f"w{i}", ["default"], SLOTS, lease_seconds=60).id
            for i in range(WORKERS)]


def test_a_cycle_placing_on_several_workers_wakes_each_with_its_own_jobs(
        store: Store) -> None:
    workers = _workers(store)
    jobs = store.jobs.submit([JobSubmission("t", {"n": n}) for n in range(WORKERS * SLOTS)])
    listeners = {w: store.listener(f"worker.{w}") for w in workers}
    counted = cycles_run(store)
    try:
        report = schedule(store, holder="one")
        assert report is not None and len(report.placed) == len(jobs)
        for worker, listener in listeners.items():
            assert listener.wait(5.0)
            read = store.attempts.fetch(worker).jobs
            assert len(read) == SLOTS
            assert store.jobs_in_wakeups(listener.payloads()) == read
    finally:
        for listener in listeners.values():
            listener.close()
    assert cycles_run(store) == counted + 1
    names = {w: f"w{i}" for i, w in enumerate(workers)}
    for job_id in jobs:
        record = store.jobs.get(job_id)
        assert record is not None and record.state == "dispatched"
        ((attempt, state, name),) = [(a.attempt, a.state, a.worker) for a in record.attempts]
        assert (attempt, state) == (1, "dispatched") and name == record.worker
        assert name in names.values()


def test_a_maintaining_cycle_reads_with_its_maintenance_and_again_when_it_had_work(
        store: Store, clock: MovableClock, monkeypatch: pytest.MonkeyPatch) -> None:
    store.task_types.put(TaskTypeSpec("t", HANDLER))
    store.workers.register("lost", ["default"], 1, lease_seconds=0.5)
    (first,) = store.jobs.submit([JobSubmission("t", {})])
    assert schedule(store) is not None
    clock.advance(0.7)  # its lease runs out
    store.workers.register("alive", ["default"], 2, lease_seconds=60)
    reads: list[bool] = []
    read_cycle = store.driver.read_cycle

    def recorded(raw: Any, **kw: Any) -> Any:
        reads.append(True)
        return read_cycle(raw, **kw)

    monkeypatch.setattr(store.driver, "read_cycle", recorded)
    (second,) = store.jobs.submit([JobSubmission("t", {})])
    reads.clear()
    report = schedule(store)  # expels "lost", requeues its job, places both
    assert report is not None and report.requeued == 1
    assert sorted(p.job_id for p in report.placed) == [first, second]
    postgresql = store.backend == "postgresql"
    # PostgreSQL read ahead with the maintenance, and read again after its work.
    assert len(reads) == 1
    (third,) = store.jobs.submit([JobSubmission("t", {})])
    store.workers.register("more", ["default"], 1, lease_seconds=60)
    reads.clear()
    report = schedule(store)  # nothing to maintain: the reads made with it are used
    assert report is not None and [p.job_id for p in report.placed] == [third]
    assert len(reads) == (0 if postgresql else 1)


def test_pg_a_worker_whose_every_placement_was_refused_is_not_woken(store: Store) -> None:
    """A dispatch whose guard refuses a worker's only job (cancelled since the cycle
    read it) wakes that worker no more: it would read and find nothing."""
    if store.backend == "sqlite":
        pytest.skip("SQLite's listeners hear every commit: there is no wake-up to spare")
    import time

    from sqlalchemy import text

    from taskyard.store.driver.params import Dispatch
    from taskyard.store.postgresql.listen import pg_channel

    given, refused = _workers(store)[:2]
    kept, cancelled = store.jobs.submit([JobSubmission("t", {"n": n}) for n in range(2)])
    store.jobs.cancel(cancelled)
    listeners = {w: store.listener(f"worker.{w}") for w in (given, refused)}
    try:
        with store.write() as tx:
            placed = tx.driver.dispatch(tx.raw, Dispatch(
                {given: [kept], refused: [cancelled]}, {given: "w0", refused: "w1"}))
        assert placed.placed == [kept]
        assert listeners[given].wait(10.0)
        with store.engine.begin() as conn:  # after the dispatch, on the same channel
            conn.execute(text("SELECT pg_notify(:c, 'marker')"),
                         {"c": pg_channel(f"worker.{refused}")})
        heard: list[str] = []
        deadline = time.monotonic() + 30
        while "marker" not in heard and time.monotonic() < deadline:
            if listeners[refused].wait(5.0):
                heard += listeners[refused].payloads()
        assert heard == ["marker"]
    finally:
        for listener in listeners.values():
            listener.close()
