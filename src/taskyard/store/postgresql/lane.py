"""PostgreSQL: one connection kept in autocommit for units of one statement.

A submit while no worker is live is one statement that commits by itself
(pg_submit, ``Store.alone``). Through the pool, that statement also paid a
checkout, the switch of the connection to autocommit and back, and a checkin:
about 70 µs of a ~400 µs call. The lane keeps one of the engine's connections
checked out, in autocommit, for such units:

- taken without waiting: a thread that finds it busy takes a pooled connection;
- checked before each use as the pool checks its connections (``check_alive``), and
  replaced when the server closed it;
- dropped on any error in a unit (the next use opens another);
- never used across ``fork()``: a child process opens its own (the parent's stays
  referenced, so that no finaliser in the child touches the parent's socket);
- with a movable clock (tests), the session's clock offset is set again whenever it
  changed since the last use.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Iterator
from typing import Any

from sqlalchemy import Connection, Engine, exc

from taskyard.store.clock import MovableClock
from taskyard.store.postgresql.engine import check_alive

_FORSAKEN: list[Connection] = []
"""Connections a forked child inherited: kept referenced, never used nor closed there."""


class Lane:
    """One autocommit connection of ``engine``, lent to one unit of work at a time."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._conn: Connection | None = None
        self._pid = os.getpid()
        self._offset: float | None = None
        self._idle_since = time.monotonic()

    @contextlib.contextmanager
    def take(self, engine: Engine, clock: MovableClock | None) -> Iterator[Connection]:
        """A connection in autocommit: the lane's when free, else a pooled one."""
        if not self._lock.acquire(blocking=False):
            with engine.connect() as pooled:
                yield pooled.execution_options(isolation_level="AUTOCOMMIT")
            return
        try:
            conn = self._ready(engine, clock)
            try:
                yield conn
            except BaseException:
                self._drop()
                raise
        finally:
            self._idle_since = time.monotonic()
            self._lock.release()

    def close(self) -> None:
        """Give the connection back to the pool (the store is closing)."""
        with self._lock:
            self._drop()

    def _ready(self, engine: Engine, clock: MovableClock | None) -> Connection:
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
            self._conn = engine.connect().execution_options(isolation_level="AUTOCOMMIT")
            # The pool's checkout set the clock offset of the moment (pg_engine).
            self._offset = None if clock is None else clock.offset
        if clock is not None and clock.offset != self._offset:
            dbapi: Any = self._conn.connection.dbapi_connection
            dbapi.execute("SELECT set_config('taskyard.clock_offset', %s, false)",
                          (repr(clock.offset),))
            self._offset = clock.offset
        return self._conn

    def _drop(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            with contextlib.suppress(Exception):  # a broken connection: nothing to save
                conn.close()
