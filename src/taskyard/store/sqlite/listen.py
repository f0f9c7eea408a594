"""SQLite wake-ups: poll ``PRAGMA data_version``, which changes whenever another
connection commits (the poll reads shared memory, not the file); on a change, read the
channel's counter in ``wakeups``, which a notification bumps, so that a listener wakes
for its own channel and not for every commit. The same read returns what the last
notification carried (a worker's jobs, see wakeup_jobs): when the counter moved by one,
that is all there was to hear; by more, a payload was overwritten and the listener
reports none (the worker then reads what is placed on it).

On Linux the listener does not poll: it waits for a write to the database's WAL file
(:mod:`taskyard.store.sqlite.wal_watch`) and reads ``data_version`` then."""

from __future__ import annotations

import sqlite3
import threading
import time

from taskyard.store.interrupt import Interrupt
from taskyard.store.sqlite.wal_watch import watch_wal

SQLITE_POLL_SECONDS = 0.001
SQLITE_BUSY_POLL_SECONDS = 0.0002
"""Poll faster for a while after a wake-up: work tends to come in bursts, and the
poll interval is part of every job's latency (a poll reads shared memory: cheap)."""
BUSY_FOR = 2.0
RECHECK_SECONDS = 0.05
"""With a watch: the longest wait between two reads of ``data_version``, so that a
commit published after its write's settling time (a writer preempted in between, on a
loaded machine) is still seen soon: 20 reads a second, against a thousand."""
SETTLE_SECONDS = 0.02
"""With a watch: how long to poll at the busy pace after a write that ``data_version``
does not show yet (a commit writes its frames to the WAL, then publishes them in the
shared memory index, which no watch sees)."""


PROBES = {"events": ("SELECT MAX(id), NULL FROM events", ())}
"""Channels whose wake-ups need no counter: what they announce is visible in a table
(the newest event's id), so writers pay nothing for them."""


class SqliteListener:
    """Wakes when a commit bumped ``channel``'s counter (or changed its probe)."""

    def __init__(self, database: str, channel: str, poll: float = SQLITE_POLL_SECONDS) -> None:
        self._conn = sqlite3.connect(database, check_same_thread=False, isolation_level=None)
        self._channel = channel
        self._probe = PROBES.get(channel, ("SELECT n, payload FROM wakeups WHERE channel = ?",
                                           (channel,)))
        self._poll = poll
        self._version = self._data_version()
        self._count, _ = self._counter()
        self._payloads: list[str] = []
        self._woke = 0.0
        self._interrupted = threading.Event()
        """Set by :meth:`interrupt`: a wait that polls every millisecond or less looks at
        a flag between two polls (a pipe's read cost every poll a syscall); one that
        waits on the watch is woken by ``_wake`` too."""
        self._watch = watch_wal(database)
        self._wake = Interrupt() if self._watch is not None else None

    def _data_version(self) -> int:
        return int(self._conn.execute("PRAGMA data_version").fetchone()[0])

    def _counter(self) -> tuple[int, str]:
        """The channel's counter (-1: unknown) and what its last notification carried."""
        try:
            row = self._conn.execute(*self._probe).fetchone()
        except sqlite3.OperationalError:  # busy or not migrated yet: wake, let the caller look
            return -1, ""
        # No row yet: no notification so far (the first one inserts it, with n = 1).
        return (0, "") if row is None else (int(row[0] or 0), row[1] or "")

    def wait(self, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        self._payloads = []
        settle_until = 0.0
        written = False
        while True:
            version = self._data_version()
            if version != self._version:
                if self._watch is not None and self._wake is not None:
                    # The writes that woke us are published: their events still queued
                    # (a commit writes each frame apart) are no news, and taken later
                    # each started a settle (20 ms of polls at 0.2 ms, after every commit:
                    # a chain's hand-offs, 30 % of their time). Then read again, so that
                    # a commit whose events were among them is seen if it is published:
                    # only one published in the microseconds between the two reads waits
                    # for the next write or RECHECK_SECONDS.
                    self._watch.wait(0.0, self._wake.fileno())
                    version = self._data_version()
                self._version = version
                settle_until = 0.0
                count, payload = self._counter()
                if count != self._count or count < 0:
                    heard = count == self._count + 1 and self._count >= 0
                    self._payloads = [payload] if heard and payload else []
                    self._count = count
                    self._woke = time.monotonic()
                    return True
            elif written:  # a commit not published yet (or a transaction's spilled pages)
                settle_until = time.monotonic() + SETTLE_SECONDS
            written = False
            now = time.monotonic()
            if now >= deadline:
                return False
            if self._interrupted.is_set():
                self._interrupted.clear()
                if self._wake is not None:
                    self._wake.take()
                return False
            if self._watch is None or self._wake is None:
                busy = now - self._woke < BUSY_FOR
                time.sleep(min(self._poll, SQLITE_BUSY_POLL_SECONDS) if busy else self._poll)
            elif now < settle_until:
                time.sleep(SQLITE_BUSY_POLL_SECONDS)
            else:
                written = self._watch.wait(min(deadline - now, RECHECK_SECONDS),
                                           self._wake.fileno())

    def payloads(self) -> list[str]:
        """The jobs the last wake-up carried, when it was the only one since the wait
        before; else none (the caller looks for itself)."""
        return self._payloads

    def pause(self) -> bool:
        return True  # a poll that is not running hears nothing and costs nothing

    def resume(self) -> None:
        """Compare with the database as it is now, not as it was when paused; poll at
        the pace of a new listener until woken."""
        self._version = self._data_version()
        self._count, _ = self._counter()
        self._payloads = []
        self._woke = 0.0

    def interrupt(self) -> None:
        self._interrupted.set()
        if self._wake is not None:
            self._wake.fire()

    def close(self) -> None:
        if self._watch is not None:
            self._watch.close()
        if self._wake is not None:
            self._wake.close()
        self._conn.close()
