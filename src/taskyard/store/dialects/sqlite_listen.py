"""SQLite wake-ups: poll ``PRAGMA data_version``, which changes whenever another
connection commits (the poll reads shared memory, not the file); on a change, read the
channel's counter in ``wakeups``, which a notification bumps, so that a listener wakes
for its own channel and not for every commit."""

from __future__ import annotations

import sqlite3
import time

SQLITE_POLL_SECONDS = 0.001
SQLITE_BUSY_POLL_SECONDS = 0.0002
"""Poll faster for a while after a wake-up: work tends to come in bursts, and the
poll interval is part of every job's latency (a poll reads shared memory: cheap)."""
BUSY_FOR = 2.0


PROBES = {"events": ("SELECT MAX(id) FROM events", ())}
"""Channels whose wake-ups need no counter: what they announce is visible in a table
(the newest event's id), so writers pay nothing for them."""


class SqliteListener:
    """Wakes when a commit bumped ``channel``'s counter (or changed its probe)."""

    def __init__(self, database: str, channel: str, poll: float = SQLITE_POLL_SECONDS) -> None:
        self._conn = sqlite3.connect(database, check_same_thread=False, isolation_level=None)
        self._channel = channel
        self._probe = PROBES.get(channel, ("SELECT n FROM wakeups WHERE channel = ?",
                                           (channel,)))
        self._poll = poll
        self._version = self._data_version()
        self._count = self._counter()
        self._woke = 0.0

    def _data_version(self) -> int:
        return int(self._conn.execute("PRAGMA data_version").fetchone()[0])

    def _counter(self) -> int:
        try:
            row = self._conn.execute(*self._probe).fetchone()
        except sqlite3.OperationalError:  # busy or not migrated yet: wake, let the caller look
            return -1
        return -1 if row is None else int(row[0] or 0)

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

    def pause(self) -> bool:
        return True  # a poll that is not running hears nothing and costs nothing

    def resume(self) -> None:
        """Compare with the database as it is now, not as it was when paused; poll at
        the pace of a new listener until woken."""
        self._version = self._data_version()
        self._count = self._counter()
        self._woke = 0.0

    def close(self) -> None:
        self._conn.close()
