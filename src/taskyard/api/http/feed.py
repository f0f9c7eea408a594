"""The event feed: new events, filtered, and a way to wait for more without polling hard.

Everything that follows the event log — the SSE stream, ``taskyard events --follow``,
``taskyard job logs --follow`` and the dashboard through the stream — goes through
:class:`EventFeed`, so that its implementation can change in one place.

Now: reads are ``Store.list_events(after_id=…)`` pages; wake-ups come from one shared
listener on the ``scheduler`` channel (submits and completions notify it: LISTEN/NOTIFY
on PostgreSQL, the ``wakeups`` row on SQLite), and waits are bounded by ``poll`` seconds
because not every event write notifies that channel (a worker's start does not).
The storage seam is to provide an ``events`` channel notified by every commit that wrote
events, and a cursor that never skips an event committed late on PostgreSQL (ids are
taken before commit there): both replace the insides of this class, not its interface.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from collections.abc import Sequence
from dataclasses import dataclass

from taskyard.core.routing import topic_matches
from taskyard.store import Listener, Store
from taskyard.store.event_pages import event_id_before_time, events_before
from taskyard.store.metrics import last_event_id
from taskyard.store.records import EventRecord

log = logging.getLogger("taskyard.http")
PAGE = 1000
DEFAULT_POLL = 0.5


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
    """Events that passed the filter, and the cursor: the last event id looked at,
    matching or not (continue after it)."""

    events: list[EventRecord]
    cursor: int | None


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

    def read(self, after: int | None, wanted: EventFilter = EventFilter(), *,
             limit: int = 500, scan: int = 10 * PAGE) -> FeedPage:
        """Up to ``limit`` wanted events after ``after`` (None: from the start), looking
        at no more than ``scan`` events: a filter that matches rarely costs bounded work
        per call, and the cursor moves past what was looked at."""
        found: list[EventRecord] = []
        cursor = after
        looked = 0
        while len(found) < limit and looked < scan:
            batch = self.store.list_events(after_id=cursor, limit=PAGE)
            for event in batch:
                looked += 1
                cursor = event.id
                if wanted.wants(event):
                    found.append(event)
                    if len(found) == limit:
                        break
            if len(batch) < PAGE:
                break
        return FeedPage(found, cursor)

    def last_id(self) -> int:
        """The newest event's id now (0 without events): where "only new ones" starts."""
        return last_event_id(self.store)

    def cursor_at(self, when: float) -> int:
        """The cursor from which :meth:`read` gives the events created at or after
        ``when`` (epoch seconds, database clock)."""
        return event_id_before_time(self.store, when)

    def tail(self, count: int, wanted: EventFilter = EventFilter(), *,
             scan: int = 100 * PAGE) -> FeedPage:
        """The last ``count`` wanted events, oldest first, looking back over at most
        ``scan`` events; the cursor is the newest event's id (continue after it)."""
        found: list[EventRecord] = []
        newest: int | None = None
        before: int | None = None
        looked = 0
        while len(found) < count and looked < scan:
            batch = events_before(self.store, before, limit=PAGE)
            if not batch:
                break
            newest = batch[0].id if newest is None else newest
            looked += len(batch)
            found.extend(e for e in batch if wanted.wants(e))
            before = batch[-1].id
        return FeedPage(sorted(found[:count], key=lambda e: e.id), newest)

    def wait(self, timeout: float) -> bool:
        """Block until news may have come (True) or ``min(timeout, poll)`` passed (False)."""
        self._ensure_thread()
        with self._cond:
            seen = self._generation
            self._cond.wait_for(lambda: self._generation != seen or self._closed.is_set(),
                                timeout=min(timeout, self.poll))
            return self._generation != seen

    async def wait_async(self, timeout: float) -> bool:
        """:meth:`wait` for asyncio tasks (the event loop is never blocked)."""
        self._ensure_thread()
        event = asyncio.Event()
        entry = (asyncio.get_running_loop(), event)
        self._waiters.add(entry)
        try:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(event.wait(), min(timeout, self.poll))
            return event.is_set()
        finally:
            self._waiters.discard(entry)

    @property
    def closed(self) -> bool:
        return self._closed.is_set()

    def close(self) -> None:
        """Wake every waiter and stop the listener thread."""
        self._closed.set()
        self._wake()
        if self._thread is not None:
            self._thread.join(5)

    def _ensure_thread(self) -> None:
        if self._thread is None and not self._closed.is_set():
            with self._cond:
                if self._thread is None:
                    self._thread = threading.Thread(target=self._listen, name="event-feed",
                                                    daemon=True)
                    self._thread.start()

    def _listen(self) -> None:
        listener: Listener | None = None
        while not self._closed.is_set():
            try:
                if listener is None:
                    listener = self.store.listener("scheduler")
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
