"""Wake-ups that must not be lost between processes: a scheduler that finds another
cycle holding the lock, and a worker that registers while a submit that found no live
worker (and so woke nobody) is still open."""

from __future__ import annotations

import logging
import time

import pytest

from conftest import Cluster
from cycle_lock import holding_the_cycle
from polling import wait_for
from taskyard.model.records import JobSubmission
from taskyard.store import Store, open_store


def test_a_wake_up_that_finds_the_cycle_busy_is_not_lost(
        cluster: Cluster, caplog: pytest.LogCaptureFixture) -> None:
    """A submit whose own cycle finds the lock busy wakes the scheduler, which finds it
    busy too. The cycle holding it may have read before the submit committed: the
    scheduler looks again once the lock is free, not at its next tick a minute later."""
    caplog.set_level(logging.DEBUG, logger="taskyard.scheduler")
    yard = cluster.yard
    yard.add_task_type("echo", "python:handlers_for_tests:echo")
    cluster.add_scheduler(interval=60.0)
    cluster.add_worker("w1")
    assert yard.wait(yard.submit("echo", {"n": 0}), 60).state == "succeeded"
    other = open_store(cluster.url)
    with holding_the_cycle(other):
        caplog.clear()  # the busy try we wait for is the one this submit causes
        job_id = yard.submit("echo", {"n": 1})
        wait_for("the scheduler to find the lock busy", lambda: any(
            "event=cycle-busy" in r.getMessage() for r in caplog.records))
        assert yard.get_job(job_id).state == "pending"  # nobody could place it
    other.close()
    job = yard.wait(job_id, 30)
    assert (job.state, job.worker) == ("succeeded", "w1")


def test_wake_ups_do_not_cut_the_busy_back_off_short(
        cluster: Cluster, caplog: pytest.LogCaptureFixture) -> None:
    """While another cycle holds the lock, the scheduler tries again after a delay that
    doubles (from 10 ms to 0.5 s), whatever wakes it meanwhile. Cut short by every
    wake-up, as it was, each failed submit and report made both schedulers try again at
    once: at 10 workers 3,000 failed tries in a 10 s run."""
    caplog.set_level(logging.DEBUG, logger="taskyard.scheduler")
    cluster.add_scheduler(interval=60.0)
    other = open_store(cluster.url)
    busy = lambda: sum("event=cycle-busy" in r.getMessage() for r in caplog.records)  # noqa: E731
    with holding_the_cycle(other):
        caplog.clear()
        started = time.monotonic()
        with cluster.yard.store.write() as tx:
            tx.notify("scheduler")
        wait_for("the scheduler to find the lock busy", lambda: busy() > 0)
        # A wake-up every 20 ms for a second (pacing, not waiting: the bound below
        # follows the time it took).
        while time.monotonic() - started < 1.0:
            with cluster.yard.store.write() as tx:
                tx.notify("scheduler")
            time.sleep(0.02)
        elapsed = time.monotonic() - started
        tries = busy()
    other.close()
    # 10 ms, 20, 40 … 320, then every 0.5 s: one more try for the wake-up at the end.
    assert tries <= 8 + elapsed / 0.5, (tries, elapsed)


def _waiting_at_the_gate(store: Store) -> bool:
    with store.read() as tx:
        return bool(tx.raw.all(
            "SELECT 1 FROM pg_locks WHERE NOT granted "
            "AND relation = 'worker_gate'::regclass"))


def test_a_worker_registering_during_a_submit_that_saw_none_gets_its_job(
        cluster: Cluster) -> None:
    """The submit's statement found no live worker, so it runs no cycle and wakes
    nobody. The worker registering meanwhile waits at the worker gate until that submit
    has committed: the cycle its registration wakes sees the job."""
    if cluster.url.startswith("sqlite"):
        pytest.skip("SQLite: the submit holds the write lock, which a registration takes")
    yard = cluster.yard
    yard.add_task_type("echo", "python:handlers_for_tests:echo")
    cluster.add_scheduler(interval=60.0)
    other = open_store(cluster.url)
    with yard.store.submit([JobSubmission("echo", {"n": 1})]) as submitted:
        assert submitted.cycle is None  # no live worker: no cycle, and no wake-up sent
        (job_id,) = submitted.ids
        cluster.add_worker("w1")
        wait_for("the registration to wait at the gate", lambda: _waiting_at_the_gate(other))
    other.close()
    job = yard.wait(job_id, 30)
    assert (job.state, job.worker) == ("succeeded", "w1")
