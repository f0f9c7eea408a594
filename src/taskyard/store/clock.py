"""The database clock, and a clock tests can move.

Leases, deadlines, ``run_after`` and due schedules are measured on the database's
clock, never on a host's: every statement reads it in SQL (``{now}`` in the store's
statements). A :class:`MovableClock` adds an offset to that reading, so that a test
can let a lease run out or a schedule come due without sleeping: the offset is read
by the database itself (a function registered on each SQLite connection, a session
setting on PostgreSQL), so statements keep one text and their caches stay valid.
Production stores have no offset at all: their SQL is the server's clock alone.
"""

from __future__ import annotations

import threading
import time


class MovableClock:
    """An offset added to the database clock of the stores opened with it (tests)."""

    def __init__(self, offset: float = 0.0) -> None:
        self._offset = offset
        self._lock = threading.Lock()

    @property
    def offset(self) -> float:
        """Seconds added to the database's own clock."""
        return self._offset

    def advance(self, seconds: float) -> None:
        """Move the clock forward (or back, with a negative value) by ``seconds``.

        Connections see the new offset from their next transaction on."""
        with self._lock:
            self._offset += seconds

    def host_now(self) -> float:
        """The host clock plus the offset: what SQLite's moved clock reads."""
        return time.time() + self._offset
