"""The event feed's listener runs only while a stream is open (issue 36, F12: after the
first stream, the SQLite listener polled every millisecond for the server's life)."""

from __future__ import annotations

import threading

from http_helpers import Api, SseReader, wait_for

from taskyard.api.http.feed import LINGER, EventFeed


def _listeners() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "event-feed" and t.is_alive()]


def test_the_listener_sleeps_when_no_stream_is_open(api: Api) -> None:
    feed: EventFeed = api.server.app.state.feed
    assert not feed.listening
    api.post("/api/v1/task-types", json={"name": "t", "handler": "shell:true"})
    api.post("/api/v1/jobs", json={"type": "t", "pools": ["nowhere"]})  # an event to read
    for _ in range(2):  # it starts again with the next stream
        with api.client("read") as reader, reader.stream(
                "GET", "/api/v1/events/stream", params={"after": 0}) as response:
            assert SseReader(response).next() is not None
            # The stream has sent what there was: it waits, and the listener runs.
            wait_for("the listener to run", lambda: feed.listening and _listeners())
        wait_for("the listener to stop", lambda: not feed.listening and not _listeners(),
                 timeout=LINGER + 30)
