"""Holding the global cycle lock from a test, as another process's cycle would."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from typing import Any

import psycopg

from taskyard.store import Store
from taskyard.store.postgresql.cycle import ADVISORY_KEY


@contextlib.contextmanager
def holding_the_cycle(other: Store, timeout: float = 60.0) -> Iterator[None]:
    """Hold the cycle lock through ``other`` (a store of its own) until the block ends.

    The lock is taken without waiting, as a cycle takes it, and a live daemon (a worker
    that has just completed a job, a scheduler's tick) may hold it for a moment: try
    again until it is ours, within a generous deadline."""
    deadline = time.monotonic() + timeout
    while True:
        with contextlib.ExitStack() as stack:
            if _take(other, stack):
                yield
                return
        if time.monotonic() > deadline:
            raise AssertionError(f"the cycle lock was still held after {timeout}s")
        time.sleep(0.01)


def _take(other: Store, stack: contextlib.ExitStack) -> bool:
    if other.backend == "sqlite":
        # The lock alone: its cycle's write transaction would block every writer
        # (a submit, a worker registering) until the block ends.
        return bool(stack.enter_context(other.driver.cycle_lock(None)))
    return stack.enter_context(other.cycle()) is not None


@contextlib.contextmanager
def frozen_mid_pipeline(libpq_url: str, key: int | None = None) -> Iterator[Any]:
    """A client that sent a statement taking the advisory lock ``key`` (default: the
    cycle's, as a placing submit's insert takes it) and one more, in a pipeline, and then
    sends nothing: no Sync, as a process stopped between the two would (PostgreSQL).

    The lock is tried without waiting, as a submit tries it, and a live daemon may hold
    it at that moment: then that client is dropped and a new one tries again, within a
    generous deadline. The block begins once the client holds the lock and its session
    waits for the rest of the pipeline (``active``, wait event ``ClientRead``): until
    then its server may still be running the second statement."""
    key = ADVISORY_KEY if key is None else key
    deadline = time.monotonic() + 60
    window = 0.5
    while True:
        conn = _send_the_lock(libpq_url, key)
        try:
            if _until_held(libpq_url, key, conn.info.backend_pid, time.monotonic() + window):
                yield conn
                return
        finally:
            conn.close()
        if time.monotonic() > deadline:
            raise AssertionError("the frozen client never held the lock")
        # A loaded box may run the try late: give the next client longer.
        window = min(window * 2, 8.0)


def _send_the_lock(libpq_url: str, key: int) -> psycopg.Connection[Any]:
    conn = psycopg.connect(libpq_url, autocommit=True)
    try:
        pg = conn.pgconn
        pg.enter_pipeline_mode()
        pg.send_query_params(f"SELECT pg_try_advisory_xact_lock({key})".encode(), None)
        pg.send_query_params(b"SELECT 1", None)
        assert pg.flush() == 0
    except BaseException:
        conn.close()
        raise
    return conn


def _until_held(libpq_url: str, key: int, pid: int, until: float) -> bool:
    while lock_holder(libpq_url, key) != pid:
        if time.monotonic() > until:
            return False
        time.sleep(0.01)
    # Held, so the lock's statement ran: the second one follows without waiting for
    # anyone, however late a loaded box runs it.
    deadline = time.monotonic() + 60
    while _session_of(libpq_url, pid) != ("active", "ClientRead"):
        assert time.monotonic() < deadline, "the holder never waited for its client"
        time.sleep(0.01)
    return True


def _session_of(libpq_url: str, pid: int) -> tuple[str, str] | None:
    with psycopg.connect(libpq_url, autocommit=True) as c:
        row = c.execute("SELECT state, wait_event FROM pg_stat_activity WHERE pid = %s",
                        (pid,)).fetchone()
    return None if row is None else (row[0], row[1])


def lock_holder(libpq_url: str, key: int) -> int | None:
    """The pid of the backend holding the advisory lock ``key`` of this database, if one
    does (the tests of other databases on the same server hold their own)."""
    with psycopg.connect(libpq_url, autocommit=True) as c:
        row = c.execute("SELECT l.pid FROM pg_locks l WHERE l.locktype = 'advisory' "
                        "AND l.granted AND (l.classid::bigint << 32 | l.objid::bigint) = %s "
                        "AND l.database = (SELECT oid FROM pg_database "
                        "WHERE datname = current_database())", (key,)).fetchone()
    return None if row is None else int(row[0])
