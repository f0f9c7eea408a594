"""The event feed: new events, filtered, and a way to wait for more without polling.

Everything that follows the event log — the SSE stream, ``taskyard events --follow``,
``taskyard job logs --follow`` and the dashboard through the stream — goes through
:class:`EventFeed`. Reads go in commit order with the store's event cursor
(``store/transitions/events.py``: on PostgreSQL no event committed late is ever passed); waits are
woken by the ``events`` channel, which every transaction that writes events notifies
(LISTEN/NOTIFY on PostgreSQL). A slow safety timeout covers the one case no write
announces: events held back until an older transaction on the server ends.

The listener runs only while someone waits: it stops :data:`LINGER` seconds after the
last wait ended (a SQLite listener polls a shared-memory counter every millisecond while
it runs: a server with no stream open must not), and starts again with the next wait.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass

from taskyard.core.routing import topic_matches
from taskyard.model.records import EventRecord
from taskyard.store import Listener, Store
from taskyard.store.transitions.events import START, EventCursor

log = logging.getLogger("taskyard.http")
PAGE = 1000
DEFAULT_POLL = 2.0
"""Seconds a wait lasts at most without a wake-up (see the module docstring)."""
LINGER = 5.0
"""Seconds the listener keeps listening after the last wait ended (streams reading
between two waits, a client reconnecting, do not restart it each time)."""


@dataclass(frozen=True, slots=True)
class EventFilter:
    """Which events a reader wants: routing-key ``pattern`` (AMQP topic rules) and
    ``topics`` (any of them; empty: all)."""

    pattern: str | None = None
    topics: Sequence[str] = ()

    def wants(self, event: EventRecord) -> bool:
        return (not self.topics or event.topic in self.topics) and (
            self.pattern is None or topic_matches(self.pattern, event.routing_key))


@dataclass(frozen=True, slots=True)
class FeedPage:
    """Events that passed the filter, and the cursor after the last event looked at,
    matching or not (continue from it)."""

    events: list[EventRecord]
    cursor: EventCursor

    @property
    def next_id(self) -> int | None:
        """The last event id looked at: what a client passes back as ``after``."""
        return self.cursor.id or None


class EventFeed:
    """Reads the event log after a cursor and waits for news, for any number of readers
    (threads or asyncio tasks) over one listener."""

    def __init__(self, store: Store, *, poll: float = DEFAULT_POLL) -> None:
        self.store = store
        self.poll = poll
        self._cond = threading.Condition()
        self._generation = 0
        self._waiters: set[tuple[asyncio.AbstractEventLoop, asyncio.Event]] = set()
        self._thread: threading.Thread | None = None
        self._closed = threading.Event()
        self._waits = 0
        self._last_wait = time.monotonic()

    def cursor(self, after: EventCursor | int | None) -> EventCursor:
        """A cursor from what a client holds: a cursor, an event id, or None (start)."""
        if after is None:
            return START
        if isinstance(after, EventCursor):
            return after
        return self.store.events.cursor_at(after)

    def read(self, after: EventCursor | int | None, wanted: EventFilter = EventFilter(), *,
             limit: int = 500, scan: int = 10 * PAGE) -> FeedPage:
        """Up to ``limit`` wanted events after ``after``, looking at no more than
        ``scan`` events: a filter that matches rarely costs bounded work per call, and
        the cursor moves past what was looked at."""
        found: list[EventRecord] = []
        cursor = self.cursor(after)
        looked = 0
        while len(found) < limit and looked < scan:
            page = self.store.events.committed(cursor, limit=PAGE)
            for event in page.events:
                looked += 1
                if wanted.wants(event):
                    found.append(event)
                    if len(found) == limit:
                        cursor = self.store.events.cursor_at(event.id)
                        return FeedPage(found, cursor)
            cursor = page.cursor
            if not page.full:
                break
        return FeedPage(found, cursor)

    def head(self) -> EventCursor:
        """After the newest committed event: where "only new ones" starts."""
        return self.store.events.last(0).cursor

    def cursor_at(self, when: float) -> EventCursor:
        """The cursor from which :meth:`read` gives the events created at or after
        ``when`` (epoch seconds, database clock)."""
        return self.store.events.cursor_since(when)

    def tail(self, count: int, wanted: EventFilter = EventFilter(), *,
             scan: int = 10 * PAGE) -> FeedPage:
        """The last ``count`` wanted events, oldest first, looking back over at most
        ``scan`` events; the cursor is after the newest event (continue from it)."""
        everything = wanted == EventFilter()
        page = self.store.events.last(count if everything else scan)
        found = [e for e in page.events if wanted.wants(e)]
        return FeedPage(found[-count:], page.cursor)

    def wait(self, timeout: float) -> bool:
        """Block until news may have come (True) or ``min(timeout, poll)`` passed (False)."""
        self._begin_wait()
        try:
            with self._cond:
                seen = self._generation
                self._cond.wait_for(lambda: self._generation != seen or self._closed.is_set(),
                                    timeout=min(timeout, self.poll))
                return self._generation != seen
        finally:
            self._end_wait()

    async def wait_async(self, timeout: float) -> bool:
        """:meth:`wait` for asyncio tasks (the event loop is never blocked)."""
        self._begin_wait()
        event = asyncio.Event()
        entry = (asyncio.get_running_loop(), event)
        self._waiters.add(entry)
        try:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(event.wait(), min(timeout, self.poll))
            return event.is_set()
        finally:
            self._waiters.discard(entry)
            self._end_wait()

    @property
    def listening(self) -> bool:
        """Whether the listener thread runs (someone waits, or waited moments ago)."""
        return self._thread is not None

    @property
    def closed(self) -> bool:
        return self._closed.is_set()

    def close(self, *, wait: bool = True) -> None:
        """Wake every waiter and stop the listener thread (``wait``: until it ended; a
        signal handler must not block the event loop for that)."""
        self._closed.set()
        self._wake()
        if wait and self._thread is not None:
            self._thread.join(5)

    def _begin_wait(self) -> None:
        with self._cond:
            self._waits += 1
            if self._thread is None and not self._closed.is_set():
                self._thread = threading.Thread(target=self._listen, name="event-feed",
                                                daemon=True)
                self._thread.start()

    def _end_wait(self) -> None:
        with self._cond:
            self._waits -= 1
            self._last_wait = time.monotonic()

    def _idle(self) -> bool:
        """Nobody waits, nor has for :data:`LINGER` seconds: the thread ends (under the
        lock, so that a wait beginning now starts a new one)."""
        with self._cond:
            if self._waits == 0 and time.monotonic() - self._last_wait > LINGER:
                self._thread = None
                return True
            return False

    def _listen(self) -> None:
        listener: Listener | None = None
        while not self._closed.is_set() and not self._idle():
            try:
                if listener is None:
                    listener = self.store.listener("events")
                if listener.wait(0.25):
                    self._wake()
            except Exception as exc:  # the bounded poll covers for it meanwhile
                log.warning("event=feed-listener-failed error=%s", " ".join(str(exc).split()))
                if listener is not None:
                    with contextlib.suppress(Exception):
                        listener.close()
                listener = None
                self._closed.wait(1.0)
        if listener is not None:
            listener.close()

    def _wake(self) -> None:
        with self._cond:
            self._generation += 1
            self._cond.notify_all()
        for loop, event in list(self._waiters):
            with contextlib.suppress(RuntimeError):  # that loop is closed: nobody waits
                loop.call_soon_threadsafe(event.set)
