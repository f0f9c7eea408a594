"""The one global scheduling lock: whoever holds it runs the cycle; others return at once.

PostgreSQL: a transaction-scoped advisory lock, released on commit, rollback
or a lost connection. SQLite: an ``flock`` on a file beside the database,
released by the kernel even when the holder is killed (a lease row would leave
the lock held until it expired), plus the cycle's ``BEGIN IMMEDIATE``.
"""

from __future__ import annotations

import fcntl
import os
import threading
from typing import IO

from sqlalchemy import Connection

ADVISORY_KEY = 0x7461736B79617264 & 0x7FFFFFFFFFFFFFFF  # "taskyard"

_process_locks: dict[str, threading.Lock] = {}
_guard = threading.Lock()


def advisory_statement(lock_timeout_ms: int | None = None) -> tuple[str, dict[str, object]]:
    """The statement of :func:`try_advisory` (``%(name)s`` parameters) and its parameters:
    for a caller that sends it along with others (see ``Raw.pipelined``)."""
    params: dict[str, object] = {"k": ADVISORY_KEY}
    if lock_timeout_ms is None:
        return "SELECT pg_try_advisory_xact_lock(%(k)s)", params
    # CASE evaluates in order: the setting changes only once the lock is ours.
    params["t"] = str(int(lock_timeout_ms))
    return ("SELECT CASE WHEN pg_try_advisory_xact_lock(%(k)s) "
            "THEN set_config('lock_timeout', %(t)s, true) IS NOT NULL ELSE false END"), params


def try_advisory(conn: Connection, lock_timeout_ms: int | None = None) -> bool:
    """Take the PostgreSQL advisory lock for this transaction, or return False.

    ``lock_timeout_ms``: once the lock is held, the rest of the transaction waits at
    most that long for a row lock (``SET LOCAL lock_timeout``), set in the same round
    trip; a caller that does not get the lock keeps its settings."""
    sql, params = advisory_statement(lock_timeout_ms)
    return bool(conn.exec_driver_sql(sql, params).scalar())


class FileLock:
    """A non-blocking exclusive lock on ``path`` (and on the path within this process)."""

    def __init__(self, path: str | None) -> None:
        self.path = path
        with _guard:
            self._thread_lock = _process_locks.setdefault(path or ":memory:", threading.Lock())
        self._handle: IO[bytes] | None = None

    def acquire(self) -> bool:
        # flock is per open file description, so threads of one process need
        # their own lock too.
        if not self._thread_lock.acquire(blocking=False):
            return False
        if self.path is None:
            return True
        try:
            if self._handle is None:
                self._handle = open(self.path, "ab")  # noqa: SIM115 - kept open
            fcntl.flock(self._handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            self._thread_lock.release()
            return False
        return True

    def release(self) -> None:
        if self._handle is not None:
            fcntl.flock(self._handle.fileno(), fcntl.LOCK_UN)
        self._thread_lock.release()

    def close(self) -> None:
        if self._handle is not None:
            self._handle.close()
            self._handle = None


def lock_path_for(database: str | None) -> str | None:
    """The lock file of a SQLite database file (None for in-memory databases)."""
    if not database or database == ":memory:":
        return None
    return os.path.abspath(database) + ".cycle-lock"


class WriteLock:
    """Serialises SQLite write transactions of every taskyard process on this machine.

    SQLite's busy handler sleeps with a backoff (1, 2, 5, 10 … 100 ms) when
    writers collide, which adds tens of milliseconds per job under load. A
    blocking ``flock`` queues writers in the kernel and wakes the next one the
    moment the previous transaction has committed.
    """

    def __init__(self, path: str | None) -> None:
        self.path = path
        self._thread_lock = threading.Lock()
        self._handle: IO[bytes] | None = None

    def __enter__(self) -> WriteLock:
        self._thread_lock.acquire()
        try:
            if self.path is not None:
                if self._handle is None:
                    self._handle = open(self.path, "ab")
                fcntl.flock(self._handle.fileno(), fcntl.LOCK_EX)
        except BaseException:
            self._thread_lock.release()  # e.g. the folder is gone: do not keep the lock
            raise
        return self

    def __exit__(self, *_: object) -> None:
        if self._handle is not None:
            fcntl.flock(self._handle.fileno(), fcntl.LOCK_UN)
        self._thread_lock.release()


def write_lock_path_for(database: str | None) -> str | None:
    if not database or database == ":memory:":
        return None
    return os.path.abspath(database) + ".write-lock"
