"""SQLite's locks between processes: files beside the database, locked with ``flock``.

The cycle lock (the one global scheduling lock: whoever holds it runs the cycle;
others return at once) is released by the kernel even when its holder is killed (a
lease row would leave it held until it expired). The write lock queues writers.
"""

from __future__ import annotations

import fcntl
import os
import threading
from typing import IO

_process_locks: dict[str, threading.Lock] = {}
_guard = threading.Lock()


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
