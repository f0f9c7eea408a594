"""PostgreSQL: units of one statement (``Store.alone``: a submit while no worker is live)
run on the dialect's lane (store/postgresql/lane.py), one connection kept in
autocommit: reused from unit to unit; a pooled one when another thread has it; replaced
when the server ended it; never left in autocommit for the pool's other users; set to
the movable clock's offset of the moment; never shared with a forked child; given back
when the store closes."""

from __future__ import annotations

import os
import threading

import pytest
from sqlalchemy import text

from taskyard.api.yard import Yard
from taskyard.store import Store
from taskyard.store.clock import MovableClock
from taskyard.store.postgresql.lane import Lane


@pytest.fixture
def pg(store: Store) -> Store:
    if store.backend != "postgresql":
        pytest.skip("the lane is PostgreSQL's (SQLite writes a submit in a transaction)")
    return store


def _backend_pid(store: Store) -> int:
    with store.alone() as tx:
        row = tx.raw.first("SELECT pg_backend_pid()")
    assert row is not None
    return int(row[0])


def _lane(store: Store) -> Lane:
    lane = store.driver._lane  # type: ignore[attr-defined]
    assert isinstance(lane, Lane)
    return lane


def test_units_alone_reuse_one_connection_in_autocommit(pg: Store) -> None:
    first = _backend_pid(pg)
    assert _backend_pid(pg) == first
    with pg.alone() as tx:
        tx.raw.run("CREATE TEMP TABLE lane_probe (x int)")  # a session's own table
        tx.raw.run("INSERT INTO lane_probe VALUES (1)")
        # Autocommit: no transaction is open between statements.
        assert tx.raw.first("SELECT now() = statement_timestamp()") == (True,)
    with pg.alone() as tx:
        assert tx.raw.first("SELECT x FROM lane_probe") == (1,)


def test_the_pools_connections_are_not_left_in_autocommit(pg: Store) -> None:
    _backend_pid(pg)
    with pytest.raises(RuntimeError), pg.write() as tx:
        tx.raw.run("CREATE TABLE rolled_back (x int)")
        raise RuntimeError("roll back")
    with pg.read() as tx:
        row = tx.raw.first("SELECT to_regclass('rolled_back')")
    assert row == (None,)  # the write's statement was in its transaction, and undone


def test_a_busy_lane_lends_a_pooled_connection(pg: Store) -> None:
    lane_pid = _backend_pid(pg)
    inside, release = threading.Event(), threading.Event()
    seen: list[int] = []

    def hold() -> None:
        with pg.alone() as tx:
            seen.append(int(tx.raw.first("SELECT pg_backend_pid()")[0]))  # type: ignore[index]
            inside.set()
            release.wait(30)

    holder = threading.Thread(target=hold)
    holder.start()
    try:
        assert inside.wait(30)
        other = _backend_pid(pg)
    finally:
        release.set()
        holder.join(30)
    assert seen == [lane_pid]
    assert other != lane_pid
    assert _backend_pid(pg) == lane_pid  # the lane again once free


def test_a_lane_the_server_ended_is_replaced_without_an_error(pg: Store) -> None:
    yard = Yard(pg.url)
    try:
        yard.add_task_type("t", "shell:true")
        ended = _backend_pid(yard.store)
        with pg.engine.connect() as admin:
            # Waits until the backend has gone (its farewell is on the socket by then).
            admin.execute(text("SELECT pg_terminate_backend(:pid, 60000)"), {"pid": ended})
            admin.commit()
        yard.store.no_worker_seen = True  # the path of a submit while no worker is live
        job_id = yard.submit("t", {})
        assert pg.jobs.get(job_id) is not None
        assert _backend_pid(yard.store) != ended
    finally:
        yard.close()


def test_a_unit_that_failed_leaves_the_lane_usable(pg: Store) -> None:
    _backend_pid(pg)
    with pytest.raises(Exception, match="division by zero"), pg.alone() as tx:
        tx.raw.first("SELECT 1 / 0")
    assert _backend_pid(pg) > 0


def test_the_lane_follows_the_movable_clock(pg: Store, clock: MovableClock) -> None:
    def now() -> float:
        with pg.alone() as tx:
            row = tx.raw.first("SELECT {now} - "
                               "EXTRACT(EPOCH FROM clock_timestamp())::double precision")
        assert row is not None
        return float(row[0])

    assert abs(now() - clock.offset) < 60
    clock.advance(3600)
    assert abs(now() - clock.offset) < 60


def test_a_forked_child_opens_its_own_lane(pg: Store) -> None:
    parent = _backend_pid(pg)
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: its own connection, the parent's left alone
        code = 1
        try:
            os.close(read)
            child = _backend_pid(pg)
            os.write(write, str(child).encode())
            code = 0
        finally:
            os._exit(code)
    os.close(write)
    with os.fdopen(read) as fh:
        child_pid = int(fh.read() or 0)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert child_pid not in (0, parent)
    assert _backend_pid(pg) == parent  # the parent's lane still works


def test_the_lane_goes_back_to_the_pool_when_the_store_closes(pg: Store) -> None:
    _backend_pid(pg)
    assert pg.engine.pool.checkedout() == 1  # type: ignore[attr-defined]
    _lane(pg).close()
    assert pg.engine.pool.checkedout() == 0  # type: ignore[attr-defined]
