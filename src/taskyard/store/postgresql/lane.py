"""PostgreSQL: one pooled connection kept checked out for the store's units of work.

A pool checkout and checkin (SQLAlchemy's Connection, the pool's queue, its events,
the reset's rollback) cost a one-statement unit about as much client CPU as its
statement: a lone submit while no worker is live (one autocommit statement,
postgresql/jobs.py) took 0.13 ms of CPU through the pool against 0.07 ms before the
driver refactor, which kept such a connection. The lane keeps one:

- taken without waiting: a thread that finds it busy (another thread's unit, or a
  unit opened inside one of its own) takes a pooled connection as before;
- one of the connections the budget keeps open between uses (``Connections.keep``):
  the pool keeps one fewer, so that as many stay open at rest; with one to keep (the
  daemons' budget, cli/budget.py) there is no lane, whose idle connection the pool
  could not lend;
- checked before each use as the pool checks its connections (``check_alive``), and
  replaced when the server closed it;
- given back to the pool on any error in a unit (the next unit takes another);
- never used across ``fork()``: a child process takes its own (the parent's stays
  referenced, so that no finaliser in the child touches the parent's socket);
- with a movable clock (tests), the session's clock offset is set again whenever it
  changed since the last use (the pool sets it at each checkout: engine.py).

Each unit is a transaction of its own on it (``BEGIN`` … ``COMMIT``/``ROLLBACK``; after
an error the connection goes back to the pool), as on a pooled connection;
what a session keeps beyond a transaction (prepared statements, the kept cursor) it
keeps in the pool too. The unit begins no SQLAlchemy transaction of its own: psycopg
begins the server's at the unit's first statement (SQLAlchemy's begin sends nothing on
psycopg, and its Core statements begin one by themselves), and the unit's end commits
what was begun, at either level — or nothing when nothing was sent, as for a lone
submit whose insert was its own transaction (postgresql/jobs.py): SQLAlchemy's begin and
its commit of a transaction never begun on the server took 0.089 ms of client CPU per
such submit to 0.084 without them.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Iterator
from typing import Any

from psycopg.pq import TransactionStatus
from sqlalchemy import Connection, Engine, exc

from taskyard.store.clock import MovableClock
from taskyard.store.postgresql.engine import check_alive

_FORSAKEN: list[Connection] = []
"""Connections a forked child inherited: kept referenced, never used nor closed there."""


class Lane:
    """One connection of ``engine`` lent to one unit of work at a time."""

    def __init__(self, engine: Engine, clock: MovableClock | None) -> None:
        self.engine = engine
        self._clock = clock
        self._lock = threading.Lock()
        self._conn: Connection | None = None
        self._pid = os.getpid()
        self._offset: float | None = None
        self._idle_since = time.monotonic()

    def unit(self) -> contextlib.AbstractContextManager[Connection]:
        """A connection in a transaction of its own: the lane's when free, else a pooled
        one. It commits when the block ends, rolls back on error."""
        return _LaneUnit(self)

    def close(self) -> None:
        """Give the connection back to the pool (the store is closing). A unit still
        running on it after 10 s (in another thread, or the closing one) keeps it: the
        pool takes it back once the lane is garbage collected."""
        if self._lock.acquire(timeout=10):
            try:
                self._drop()
            finally:
                self._lock.release()

    def _ready(self) -> Connection:
        if self._pid != os.getpid():
            if self._conn is not None:
                _FORSAKEN.append(self._conn)
            self._conn, self._pid, self._offset = None, os.getpid(), None
        if self._conn is not None:
            try:
                check_alive(self._conn.connection.dbapi_connection,
                            time.monotonic() - self._idle_since)
            except exc.DisconnectionError:
                self._conn.invalidate()
                self._drop()
        if self._conn is None:
            self._conn = self.engine.connect()
            self._offset = None  # set below whatever the checkout set (engine.py)
        if self._clock is not None and self._clock.offset != self._offset:
            dbapi: Any = self._conn.connection.dbapi_connection
            dbapi.execute("SELECT set_config('taskyard.clock_offset', %s, false)",
                          (repr(self._clock.offset),))
            dbapi.commit()
            self._offset = self._clock.offset
        return self._conn

    def _end(self, *, failed: bool) -> None:
        """A unit ended: after a failure the connection goes back to the pool (the next
        unit takes another)."""
        try:
            if failed:
                self._drop()
        finally:
            self._idle_since = time.monotonic()
            self._lock.release()

    def _drop(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            with contextlib.suppress(Exception):  # a broken connection: nothing to save
                conn.close()


class _LaneUnit:
    """One unit on the lane's connection, or on a pooled one when the lane is busy. A
    class, not a generator: a lone submit's whole unit is a few dozen microseconds of
    Python, and a generator's context manager costs several calls more at each end."""

    __slots__ = ("_conn", "_lane", "_pooled")

    def __init__(self, lane: Lane) -> None:
        self._lane = lane
        self._conn: Connection | None = None
        self._pooled: contextlib.AbstractContextManager[Connection] | None = None

    def __enter__(self) -> Connection:
        lane = self._lane
        if not lane._lock.acquire(blocking=False):
            self._pooled = pooled_unit(lane.engine)
            return self._pooled.__enter__()
        try:
            self._conn = lane._ready()
        except BaseException:
            lane._end(failed=True)
            raise
        return self._conn

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: Any) -> bool | None:
        if self._pooled is not None:
            return self._pooled.__exit__(kind, error, trace)
        conn = self._conn
        assert conn is not None
        failed = True
        try:
            if kind is None:
                _commit(conn)
                failed = False
            # On error nothing is rolled back here: the connection goes back to the pool,
            # whose reset rolls back whatever the unit began.
        finally:
            self._lane._end(failed=failed)
        return None


def _commit(conn: Connection) -> None:
    """The unit's work committed: through SQLAlchemy when one of its statements began a
    transaction there, else on psycopg's connection when a statement was sent."""
    if conn.in_transaction():
        conn.commit()
        return
    dbapi: Any = conn.connection.dbapi_connection
    if dbapi.pgconn.transaction_status != TransactionStatus.IDLE:
        dbapi.commit()


@contextlib.contextmanager
def pooled_unit(engine: Engine) -> Iterator[Connection]:
    """A unit on a connection checked out of ``engine``'s pool for it."""
    with engine.connect() as pooled, pooled.begin():
        yield pooled
