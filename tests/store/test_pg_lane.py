"""PostgreSQL's lane (postgresql/lane.py): one connection kept checked out for the
store's units of work, lent to one unit at a time; a thread that finds it busy takes
a pooled one. Units on it are transactions as on the pool: nothing of one (an error, a
moved clock) reaches the next."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from sqlalchemy import event
from tests.submitting import pending_events, state, yard_with_type

from taskyard.api.yard import Yard
from taskyard.scheduler.cycle import run_cycle
from taskyard.store.clock import MovableClock
from taskyard.store.driver import Connections
from taskyard.store.store import Store


@pytest.fixture
def yard(pg_url: str, clock: MovableClock) -> Iterator[Yard]:
    with yard_with_type(pg_url, clock) as y:
        yield y


def checkouts(store: Store) -> list[Any]:
    """The pool's checkouts from now on."""
    seen: list[Any] = []
    event.listen(store.engine, "checkout", lambda *args: seen.append(args[0]))
    return seen


def test_units_one_after_another_take_no_pooled_connection(yard: Yard) -> None:
    store = yard.store
    yard.submit("t")  # the lane's connection is taken
    seen = checkouts(store)
    ids = [yard.submit("t") for _ in range(5)]
    assert store.jobs.get(ids[-1]) is not None
    with store.write() as tx:
        tx.raw.first("SELECT 1")
    assert seen == []
    with store.write() as outer, store.write() as inner:  # the pool lends the inner one
        assert inner.conn is not outer.conn
    assert len(seen) == 1


def test_a_failed_unit_gives_its_connection_back(yard: Yard) -> None:
    store = yard.store
    first = yard.submit("t")
    with pytest.raises(psycopg.errors.UndefinedColumn), store.write() as tx:
        tx.raw.first("SELECT no_such_column FROM jobs")
    with pytest.raises(RuntimeError), store.write() as tx:
        tx.raw.run("UPDATE jobs SET priority = 7 WHERE id = ?", (first,))
        raise RuntimeError("the unit fails after its write")
    assert store.jobs.get(first).priority == 0  # type: ignore[union-attr]
    second = yard.submit("t")
    assert [state(store, j) for j in (first, second)] == [("pending", 0, None)] * 2


def test_a_moved_clock_reaches_the_kept_connection(yard: Yard, clock: MovableClock) -> None:
    store = yard.store
    before = store.now()
    clock.advance(3600)
    assert store.now() >= before + 3600
    clock.advance(-7200)
    assert store.now() < before


def test_a_closed_connection_is_replaced(yard: Yard, pg_url: str) -> None:
    store = yard.store
    yard.submit("t")
    with store.read() as tx:
        pid = tx.raw.first("SELECT pg_backend_pid()")
    assert pid is not None
    admin = Store(pg_url)
    try:
        with admin.write() as tx:
            # Waits until the backend has gone (its goodbye sent): a bare call returns
            # at the signal, and a loaded box's next submit could come before the
            # goodbye (the lane then sees a live socket: seen once under load).
            tx.raw.first("SELECT pg_terminate_backend(?, 30000)", pid)
    finally:
        admin.close()
    job_id = yard.submit("t")  # the lane sees the server's goodbye, takes another
    assert state(store, job_id) == ("pending", 0, None)


def test_a_daemons_budget_keeps_no_connection_aside(pg_url: str) -> None:
    """Keeping one connection (a daemon, cli/budget.py), none is kept aside: with one at
    most, a thread after another finds it in the pool."""
    store = Store(pg_url, connections=Connections(keep=1, most=1))
    try:
        done: list[float] = []
        store.now()
        thread = threading.Thread(target=lambda: done.append(store.now()))
        thread.start()
        thread.join(60)
        assert done
    finally:
        store.close()


def test_as_many_connections_stay_open_at_rest(pg_url: str) -> None:
    store = Store(pg_url, connections=Connections(keep=2, most=4))
    try:
        start = threading.Barrier(3)

        def unit() -> None:
            with store.write() as tx:
                start.wait(30)  # three units at once: the lane and two pooled
                tx.raw.first("SELECT 1")

        threads = [threading.Thread(target=unit) for _ in range(3)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
        pool = store.engine.pool
        assert pool.checkedout() == 1  # the lane's, kept
        assert pool.checkedin() == 1  # the pool keeps one fewer: two open in all
    finally:
        store.close()


def test_lone_submits_from_threads_while_a_worker_registers(yard: Yard) -> None:
    """Threads submit at once, through the lane or the pool, while a worker registers:
    each job is written once, with its one event, and ends where a cycle puts it."""
    store = yard.store
    yard.submit("t")  # no live worker: the next submits go in alone
    threads, each = 4, 25
    ids: list[list[int]] = [[] for _ in range(threads)]
    errors: list[BaseException] = []
    start = threading.Barrier(threads + 1)

    def submit(n: int) -> None:
        try:
            start.wait(30)
            for _ in range(each):
                ids[n].append(yard.submit("t"))
        except BaseException as error:  # reported by the test
            errors.append(error)

    running = [threading.Thread(target=submit, args=(n,)) for n in range(threads)]
    for thread in running:
        thread.start()
    start.wait(30)
    store.workers.register("w", ["default"], 1000, lease_seconds=300)
    for thread in running:
        thread.join(60)
    assert errors == []
    submitted = [job_id for part in ids for job_id in part]
    assert len(set(submitted)) == threads * each
    with store.cycle() as cycle:  # whatever a submit left pending, a cycle places
        assert cycle is not None
        run_cycle(cycle, holder="test", maintenance_every=0, record=False)
    assert {state(store, j) for j in submitted} == {("dispatched", 1, "w")}
    assert {pending_events(store, j) for j in submitted} == {1}
