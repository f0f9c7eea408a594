"""Waking a SQLite listener when another connection writes the database, instead of
polling it every millisecond: Linux's inotify on the database's write-ahead log.

Every commit in WAL mode writes its frames to ``<database>-wal`` with ``write()``, which
inotify reports (``IN_MODIFY``); the listener then reads ``PRAGMA data_version`` as its
poll did. A poll every millisecond cost an idle daemon about 6 % of a core (and five
times as many reads for 2 s after each wake-up); a wait on the watch costs nothing
until a write. The file stays the same while the listener's own connection is open
(SQLite deletes it only when the last connection closes), so one watch lasts the
listener's life.

Where inotify is missing (not Linux, no instance left: 128 per user by default) or the
database has no WAL file (``:memory:``, another journal mode), :func:`watch_wal` gives
None and the listener polls as before.
"""

from __future__ import annotations

import contextlib
import os
import sys
from typing import Any

from taskyard.store.interrupt import readable

IN_MODIFY = 0x00000002
_LIBC: list[Any] = []
"""The C library's inotify functions once looked up (None where there are none):
looked up at the first watch, so that a process that listens to nothing (a CLI call)
does not load ctypes."""


def _libc() -> Any:
    if not _LIBC:
        _LIBC.append(_load_libc() if sys.platform == "linux" else None)
    return _LIBC[0]


def _load_libc() -> Any:
    import ctypes  # noqa: PLC0415 - see _LIBC

    try:
        libc = ctypes.CDLL(None, use_errno=True)  # the process's own symbols: libc's
        libc.inotify_init1.argtypes = [ctypes.c_int]
        libc.inotify_add_watch.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_uint32]
    except (OSError, AttributeError):  # no inotify in this C library
        return None
    return libc


class WalWatch:
    """An inotify descriptor watching one WAL file for writes: :meth:`wait` until one
    happened (or ``seconds`` passed, or ``also``, a descriptor, became readable)."""

    def __init__(self, fd: int) -> None:
        self._fd = fd

    def wait(self, seconds: float, also: int) -> bool:
        """Whether the file was written since the last wait (the events are consumed);
        False when ``seconds`` passed or ``also`` became readable first."""
        if self._fd not in readable([self._fd, also], seconds):
            return False
        with contextlib.suppress(BlockingIOError, InterruptedError):
            while os.read(self._fd, 4096):  # one read takes every queued event
                pass
        return True

    def close(self) -> None:
        with contextlib.suppress(OSError):
            os.close(self._fd)


def watch_wal(database: str) -> WalWatch | None:
    """A watch on ``database``'s WAL file, or None where there can be none (above).
    Call it once a connection of the caller's has read the database: the file exists
    from then on."""
    if database == ":memory:" or database.startswith("file:"):
        return None
    wal = os.fsencode(database + "-wal")
    libc = _libc() if os.path.exists(wal) else None
    if libc is None:
        return None
    fd = libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
    if fd < 0:  # EMFILE (the per-user limit), ENOSYS…: poll instead
        return None
    if libc.inotify_add_watch(fd, wal, IN_MODIFY) < 0:
        os.close(fd)
        return None
    return WalWatch(fd)
