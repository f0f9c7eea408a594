"""Server-Sent Events: the event log as a ``text/event-stream``.

Each event is sent as ``id:`` (its id, which a reconnecting client sends back as
``Last-Event-ID``), ``event:`` (its topic) and ``data:`` (its JSON, one line). An idle
stream gets a ``: keep-alive`` comment every ``heartbeat`` seconds, so that proxies keep
it open and a client that went away is noticed. The stream ends when the client goes
away or the server stops (the feed closes).
"""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator
from functools import partial

from anyio import to_thread

from taskyard.api.http.feed import EventFeed, EventFilter
from taskyard.model.records import EventRecord
from taskyard.store.transitions.events import EventCursor

RETRY_MS = 2000
"""How long a client waits before reconnecting (sent once, at the start)."""
BATCH = 500


def format_event(event: EventRecord) -> str:
    data = json.dumps(event.to_json(), separators=(",", ":"))
    return f"id: {event.id}\nevent: {event.topic}\ndata: {data}\n\n"


async def event_stream(feed: EventFeed, wanted: EventFilter,
                       after: EventCursor | int | None, *,
                       heartbeat: float) -> AsyncIterator[str]:
    """The stream's text: wanted events after ``after``, then new ones as they come."""
    yield f"retry: {RETRY_MS}\n\n"
    cursor = after
    quiet_since = time.monotonic()
    while not feed.closed:
        page = await to_thread.run_sync(partial(feed.read, cursor, wanted, limit=BATCH))
        moved = page.cursor != cursor
        cursor = page.cursor
        for event in page.events:
            yield format_event(event)
        if page.events:
            quiet_since = time.monotonic()
        idle = time.monotonic() - quiet_since
        if idle >= heartbeat:
            yield ": keep-alive\n\n"
            quiet_since = time.monotonic()
            idle = 0.0
        if not moved:  # else more may be there already: read on before waiting
            await feed.wait_async(heartbeat - idle)
