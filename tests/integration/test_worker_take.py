"""What a worker stops after a look at what is placed on it: only attempts it held
before the look read the active set. A job the listener took meanwhile (dispatched
after that read) is not in the set, yet ours: it keeps running. And a worker that
stops everything (leaving, fenced) takes no more jobs from any thread."""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator

import pytest

from polling import wait_for
from taskyard.model.errors import InvalidInput
from taskyard.model.records import Assignment, ClaimedJob
from taskyard.store import Store
from taskyard.worker.daemon import WorkerDaemon


def _job(job_id: int) -> ClaimedJob:
    # Costs more than the capacity: it waits in the queue and never starts a child.
    return ClaimedJob(job_id, 1, "t", "python:tests.handlers_for_tests:echo", {}, None, cost=9)


@pytest.fixture
def daemon(store: Store) -> Iterator[WorkerDaemon]:
    worker = WorkerDaemon(store, capacity=1)
    yield worker
    worker.executor.shutdown()


def test_a_job_taken_after_the_look_is_not_stopped_by_it(daemon: WorkerDaemon) -> None:
    held = daemon.executor.running()  # before the look: nothing
    daemon._take(Assignment([_job(1)]))  # the listener's delivery
    daemon._take(Assignment([], frozenset()), held)  # the look saw no active job
    assert daemon.executor.running() == [(1, 1)]


def test_a_job_held_before_the_look_and_not_active_is_stopped(daemon: WorkerDaemon) -> None:
    daemon._take(Assignment([_job(1)]))
    held = daemon.executor.running()
    daemon._take(Assignment([], frozenset()), held)
    assert daemon.executor.running() == []


def test_a_job_that_ended_and_was_reported_is_not_logged_as_stopped(
        daemon: WorkerDaemon, caplog: pytest.LogCaptureFixture) -> None:
    # A report that carries ends and a look: what was held before it includes the jobs
    # it reported, released since and no longer active. Nothing is stopped, and the log
    # must not say so (it printed one stop-attempt line per job ended in such a round).
    caplog.set_level(logging.INFO, logger="taskyard.worker")
    daemon._take(Assignment([_job(1), _job(2)]))
    held = daemon.executor.running()
    daemon.executor.release([(1, 1)])  # its outcome was reported
    daemon._take(Assignment([], frozenset()), held)
    stopped = [r.getMessage() for r in caplog.records if "event=stop-attempt" in r.getMessage()]
    assert stopped == ["event=stop-attempt job=2 attempt=1"]
    assert daemon.executor.running() == []


def test_no_job_is_taken_once_everything_was_stopped(daemon: WorkerDaemon) -> None:
    daemon.executor.stop_all("abandoned")
    daemon._take(Assignment([_job(2)]))
    assert daemon.executor.running() == []


def test_a_worker_refused_at_registration_leaves_no_child_behind(store: Store) -> None:
    # Its slots warm their interpreters from the start: refused, it must close them
    # (a child left half-spawned by an exiting process prints a traceback; CI stop 24).
    worker = WorkerDaemon(store, name="w" * 201, capacity=2)
    stop = threading.Event()
    with pytest.raises(InvalidInput, match="longer than 200 characters"):
        worker.run(stop)
    assert not any(thread.is_alive() for thread in worker.executor._threads)
    assert all(child is None or not child.is_alive()
               for child in worker.executor._children)
    assert store.workers.list(include_gone=True) == []


def test_a_stop_request_wakes_the_main_loop(daemon: WorkerDaemon) -> None:
    # A signal sets only the stop event; the main loop waits on its kick. The lease
    # watcher, which waits on the stop event, passes it on: without it the worker left
    # at its loop's next look, 0.5 s later (each bench cell paid it).
    stop = threading.Event()
    stop.set()
    daemon._kick.clear()
    daemon.lease.watch(stop)
    assert daemon._kick.is_set()


def test_a_stopped_worker_ends_every_thread_it_started(store: Store) -> None:
    # At rest its threads sleep until woken (the listener's wait lasts up to a minute,
    # the log pump's until an attempt is watched): the stop must wake each of them,
    # or the worker leaves threads, and its listening connection, behind.
    worker = WorkerDaemon(store, capacity=1)
    before = set(threading.enumerate())
    stop = threading.Event()
    runner = threading.Thread(target=worker.run, args=(stop,), daemon=True)
    runner.start()
    wait_for("the worker listening", lambda: worker._listener is not None)
    started = set(threading.enumerate()) - before - {runner}
    assert len(started) >= 4  # heartbeat, watchdog, listener, log pump (and slots)
    stop.set()
    runner.join(120)
    assert not runner.is_alive()
    wait_for("its threads ended", lambda: not [t for t in started if t.is_alive()],
             timeout=30)
