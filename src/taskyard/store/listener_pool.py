"""Listeners kept between waits, so that a wait costs no connection of its own.

A wait (``Yard.wait``, ``JobHandle.result``) listens on the ``events`` channel for as
long as it waits. Opening a listener per wait costs a connection per wait: on
PostgreSQL a new server process (a fork, authentication, cold caches: milliseconds of
CPU, taken from the worker that is about to start the job on a small machine). The
pool keeps a few listeners between waits instead, *paused*: a paused listener hears
nothing (PostgreSQL: ``UNLISTEN``), so nothing piles up while no one waits, and it
listens again, with nothing of before, when it is borrowed.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable, Iterator

from taskyard.store.driver import Listener

KEEP = 2
"""Paused listeners kept per channel; more waits at once open more, closed after."""


class ListenerPool:
    """Listeners on one channel, lent one per waiter (threads may wait at once)."""

    def __init__(self, open_listener: Callable[[], Listener], keep: int = KEEP) -> None:
        self._open = open_listener
        self._keep = keep
        self._lock = threading.Lock()
        self._idle: list[Listener] = []
        self._pid = os.getpid()
        self._closed = False

    @contextlib.contextmanager
    def borrowed(self) -> Iterator[Listener]:
        """A listener that hears what commits from now on (and maybe a wake-up from
        moments before, which costs the waiter one more look, never a missed one)."""
        listener = self._take()
        intact = False
        try:
            yield listener
            intact = True
        except Exception:
            intact = True  # the waiter's own error (a timeout, a failed read)
            raise
        finally:
            if intact:
                self._give_back(listener)
            else:  # interrupted (KeyboardInterrupt…), perhaps in the middle of a read
                listener.close()

    def _take(self) -> Listener:
        with self._lock:
            if self._pid != os.getpid():
                # A forked child: the parent's connections are not ours to use or close.
                self._idle, self._pid = [], os.getpid()
            listener = self._idle.pop() if self._idle else None
        if listener is None:
            return self._open()
        listener.resume()
        return listener

    def _give_back(self, listener: Listener) -> None:
        if not listener.pause():
            listener.close()
            return
        with self._lock:
            if not self._closed and self._pid == os.getpid() and len(self._idle) < self._keep:
                self._idle.append(listener)
                return
        listener.close()

    def close(self) -> None:
        """Close the paused listeners; those lent out are closed when given back."""
        with self._lock:
            idle, self._idle, self._closed = self._idle, [], True
        for listener in idle:
            listener.close()
