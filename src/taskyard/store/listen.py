"""Wake-ups between processes that share only the database.

PostgreSQL: LISTEN on a dedicated autocommit connection; writers NOTIFY in
their transaction, so a wake-up arrives only after the change is visible.
SQLite: poll ``PRAGMA data_version``, which changes whenever another
connection commits (the poll reads shared memory, not the file); on a change,
read the channel's counter in ``wakeups``, which a notification bumps, so that
a listener wakes for its own channel and not for every commit.
"""

from __future__ import annotations

import contextlib
import sqlite3
import time
from typing import Any, Protocol

from sqlalchemy.engine import make_url

from taskyard.store.base import pg_channel

SQLITE_POLL_SECONDS = 0.001
SQLITE_BUSY_POLL_SECONDS = 0.0002
"""Poll faster for a while after a wake-up: work tends to come in bursts, and the
poll interval is part of every job's latency (a poll reads shared memory: cheap)."""
BUSY_FOR = 2.0


class Listener(Protocol):
    def wait(self, timeout: float) -> bool:
        """Block until woken (True, possibly spurious) or ``timeout`` passes (False)."""
        ...

    def payloads(self) -> list[str]:
        """What the wake-ups of the last :meth:`wait` carried ("" for one that carried
        nothing, such as a reconnection's); empty where wake-ups carry nothing (SQLite)."""
        ...

    def close(self) -> None: ...


class PgListener:
    """LISTEN on one channel; survives a lost connection (server restart, network):
    it reconnects on a later wait and reports a wake-up, since notifications sent
    meanwhile are lost and the caller must look for itself."""

    def __init__(self, url: str, channel: str) -> None:
        self._dsn = make_url(url).set(drivername="postgresql").render_as_string(
            hide_password=False)
        self._channel = pg_channel(channel)
        self._conn: Any = None
        self._payloads: list[str] = []
        self._connect()

    def _connect(self) -> None:
        import psycopg  # noqa: PLC0415 - only PostgreSQL listeners need it (slow import)

        conn = psycopg.connect(self._dsn, autocommit=True, connect_timeout=5)
        conn.execute(f'LISTEN "{self._channel}"')
        self._conn = conn

    def wait(self, timeout: float) -> bool:
        import psycopg  # noqa: PLC0415

        self._payloads = []
        if self._conn is None:
            try:
                self._connect()
            except psycopg.Error:
                time.sleep(max(timeout, 0.0))
                return False
            self._payloads.append("")
            return True
        try:
            for note in self._conn.notifies(timeout=max(timeout, 0.0), stop_after=1):
                self._payloads.append(note.payload)
            if self._payloads:
                # Coalesce a burst of notifications into one wake-up.
                for note in self._conn.notifies(timeout=0.0):
                    self._payloads.append(note.payload)
        except psycopg.Error:
            self._drop()
            self._payloads.append("")
            return True
        return bool(self._payloads)

    def payloads(self) -> list[str]:
        return self._payloads

    def _drop(self) -> None:
        with contextlib.suppress(Exception):
            self._conn.close()
        self._conn = None

    def close(self) -> None:
        if self._conn is not None:
            self._drop()


class SqliteListener:
    def __init__(self, database: str, channel: str, poll: float = SQLITE_POLL_SECONDS) -> None:
        self._conn = sqlite3.connect(database, check_same_thread=False, isolation_level=None)
        self._channel = channel
        self._poll = poll
        self._version = self._data_version()
        self._count = self._counter()
        self._woke = 0.0

    def _data_version(self) -> int:
        return int(self._conn.execute("PRAGMA data_version").fetchone()[0])

    def _counter(self) -> int:
        try:
            row = self._conn.execute("SELECT n FROM wakeups WHERE channel = ?",
                                     (self._channel,)).fetchone()
        except sqlite3.OperationalError:  # busy or not migrated yet: wake, let the caller look
            return -1
        return -1 if row is None else int(row[0])

    def wait(self, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while True:
            version = self._data_version()
            if version != self._version:
                self._version = version
                count = self._counter()
                if count != self._count or count < 0:
                    self._count = count
                    self._woke = time.monotonic()
                    return True
            now = time.monotonic()
            if now >= deadline:
                return False
            busy = now - self._woke < BUSY_FOR
            time.sleep(min(self._poll, SQLITE_BUSY_POLL_SECONDS) if busy else self._poll)

    def payloads(self) -> list[str]:
        return []

    def close(self) -> None:
        self._conn.close()


def open_listener(url: str, channel: str) -> Listener:
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite":
        return SqliteListener(parsed.database or ":memory:", channel)
    return PgListener(url, channel)
