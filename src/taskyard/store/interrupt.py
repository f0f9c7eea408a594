"""A listener's wait that another thread can end at once (:meth:`Listener.interrupt`).

A daemon's listening thread used to wait in slices of 0.1 s only to see, between two,
whether the daemon was stopping: ten wake-ups a second per worker, for nothing (an idle
fleet of 200 workers: 2,000 a second and a good part of a CPU). With an interrupt the
wait is as long as the caller likes, and the stop ends it.
"""

from __future__ import annotations

import contextlib
import os
import select
import threading
from collections.abc import Sequence


def readable(fds: Sequence[int], seconds: float) -> list[int]:
    """Those of ``fds`` that have something to read (or reached its end, or an error)
    within ``seconds``. With poll(2), not select(2), whose descriptors stop at 1,024: a
    server holding a thousand connections gives the descriptors it opens then past it."""
    waiting = select.poll()
    for fd in fds:
        waiting.register(fd, select.POLLIN)
    return [fd for fd, _ in waiting.poll(max(seconds, 0.0) * 1000)]


class Interrupt:
    """A pipe: :meth:`fire` from any thread ends the current :meth:`sleep` (or a
    ``select`` on :meth:`fileno`) or, when none is under way, the next one. It stays
    fired until :meth:`take` (or a sleep) consumes it."""

    def __init__(self) -> None:
        self._read, self._write = os.pipe()
        os.set_blocking(self._read, False)
        os.set_blocking(self._write, False)
        self._lock = threading.Lock()
        self._closed = False
        """Once closed, a fire changes nothing: its descriptor's number may already be
        another file's or socket's (a stop fires while the owner closes)."""

    def fileno(self) -> int:
        """For ``select``: readable once fired."""
        return self._read

    def fire(self) -> None:
        """End the wait under way, or the next one (thread-safe, never blocks)."""
        with self._lock:
            if not self._closed:
                with contextlib.suppress(BlockingIOError):  # full: fired already
                    os.write(self._write, b"!")

    def take(self) -> bool:
        """Whether it was fired (and no longer is)."""
        fired = False
        with contextlib.suppress(BlockingIOError, OSError):
            while os.read(self._read, 64):
                fired = True
        return fired

    def sleep(self, seconds: float) -> bool:
        """Sleep ``seconds``, or until fired: whether it was."""
        if readable([self._read], seconds):
            return self.take()
        return False

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
        for fd in (self._read, self._write):
            os.close(fd)
