"""SQLite: the one connection a process's write transactions run on.

SQLite lets one writer at a time, and the store's write lock (sqlite/locks.py) already
queues a process's writers one after another, so their units of work can share one
connection: it stays checked out of the pool, and the next holder of the lock takes it
as it is. Checking a connection out of SQLAlchemy's pool, wrapping it and resetting it
on its return cost about as much CPU as a one-job submit's own statements: an empty
write unit took 24-27 µs through ``engine.connect()`` against 11-14 µs on a connection
kept out of the pool. One connection also keeps every write statement prepared in one
statement cache.

The write lock is the only guard of :class:`Writer`: use it only while holding that.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from sqlalchemy import Connection, Engine


class Writer:
    """The write lock's connection: taken as it is by each holder of the lock."""

    __slots__ = ("_conn",)

    def __init__(self) -> None:
        self._conn: Connection | None = None

    @contextlib.contextmanager
    def transaction(self, engine: Engine) -> Iterator[Connection]:
        """A transaction (``BEGIN IMMEDIATE``, see sqlite_engine) on the kept connection;
        the caller holds the write lock. A unit that fails gives its connection back to
        the pool, and the next unit opens another: a connection that saw an error is
        not trusted to be as the pool would hand it out."""
        conn = self._conn
        if conn is None or conn.closed or conn.invalidated or conn.engine is not engine:
            conn = self._conn = engine.connect()
        try:
            with conn.begin():
                yield conn
        except BaseException:
            self._conn = None
            conn.close()
            raise

    def close(self) -> None:
        """Give the kept connection back to the pool (the store is closing)."""
        conn, self._conn = self._conn, None
        if conn is not None:
            conn.close()
