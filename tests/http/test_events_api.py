"""``/api/v1/events`` and the SSE stream: filters, resume with Last-Event-ID, keep-alive
comments, the end of streams when the server stops, and wake-ups that are pushed."""

from __future__ import annotations

import json
import threading
from typing import Any

from http_helpers import Api, SseReader, wait_for

from taskyard.api.http.feed import EventFeed, EventFilter


def _setup(api: Api) -> tuple[int, int]:
    api.post("/api/v1/task-types", json={"name": "t", "handler": "shell:true"})
    with api.client("write") as writer:
        job = writer.post("/api/v1/jobs", json={"type": "t", "pools": ["nowhere"]}).json()
        graph = writer.post("/api/v1/graphs", json={
            "routing": "nightly", "tasks": {"a": {"type": "t", "pools": ["nowhere"]}}}).json()
    return job["id"], graph["id"]


def _all_three(api: Api) -> dict[str, Any]:
    """The page of _setup's three events, once they can be read: in commit order, on
    PostgreSQL an event waits for the transactions older than its own, anywhere on the
    server (other tests' too), to end."""
    def all_three() -> dict[str, Any] | None:
        found: dict[str, Any] = api.get("/api/v1/events").json()
        return found if len(found["items"]) >= 3 else None

    return wait_for("the three events", all_three)


def test_event_pages_and_filters(api: Api) -> None:
    job_id, graph_id = _setup(api)
    every = _all_three(api)
    topics = [e["topic"] for e in every["items"]]
    assert topics == ["job-pending", "graph-running", "job-pending"]
    assert every["next"] == every["items"][-1]["id"]
    assert every["items"][0]["payload"] == {"job_id": job_id, "type": "t"}
    first = every["items"][0]["id"]
    after = api.get("/api/v1/events", params={"after": first}).json()["items"]
    assert [e["id"] for e in after] == [e["id"] for e in every["items"][1:]]
    ours = api.get("/api/v1/events", params={"pattern": f"taskyard.{graph_id}.#"}).json()
    assert [e["topic"] for e in ours["items"]] == ["graph-running", "job-pending"]
    graphs = api.get("/api/v1/events", params=[("topic", "graph-running"),
                                               ("topic", "graph-finished")]).json()
    assert [e["topic"] for e in graphs["items"]] == ["graph-running"]
    paged = api.get("/api/v1/events", params={"limit": 1}).json()
    assert len(paged["items"]) == 1 and paged["next"] == first
    tail = api.get("/api/v1/events", params={"tail": 2}).json()
    assert [e["id"] for e in tail["items"]] == [e["id"] for e in every["items"][1:]]
    for bad in ("x", "9" * 30):
        refused = api.get("/api/v1/events/stream", headers={"Last-Event-ID": bad})
        assert refused.status_code == 400 and "Last-Event-ID" in refused.text


def test_stream_sends_resumes_filters_and_keeps_alive(api: Api) -> None:
    job_id, graph_id = _setup(api)
    stored = _all_three(api)["items"]  # all of them: the stream must send each
    with api.client("read") as reader, reader.stream(
            "GET", "/api/v1/events/stream", params={"after": 0}) as response:
        assert response.headers["content-type"].startswith("text/event-stream")
        sse = SseReader(response)
        got = [sse.next() for _ in stored]
        assert sse.retry == "2000"
        assert [(m.id, m.event) for m in got if m] == [(str(e["id"]), e["topic"]) for e in stored]
        assert json.loads(got[0].data)["payload"] == {"job_id": job_id, "type": "t"}  # type: ignore[union-attr]
        # A new event arrives on the open stream.
        api.post(f"/api/v1/jobs/{job_id}/cancel")
        fresh = sse.next()
        assert fresh is not None and fresh.event == "job-exception"
        assert json.loads(fresh.data)["payload"] == {"job_id": job_id, "reason": "canceled"}
    with api.client("read") as reader, reader.stream(
            "GET", "/api/v1/events/stream",
            headers={"Last-Event-ID": str(stored[0]["id"])},
            params={"pattern": f"taskyard.{graph_id}.#"}) as response:
        sse = SseReader(response)
        resumed = [sse.next(), sse.next()]
        assert [m.event for m in resumed if m] == ["graph-running", "job-pending"]
        assert all(int(m.id or 0) > stored[0]["id"] for m in resumed if m)


def test_keep_alive_comments_and_clean_stop(api: Api) -> None:
    ended = threading.Event()
    lines: list[str] = []

    def follow() -> None:
        with api.client("read") as reader, reader.stream(
                "GET", "/api/v1/events/stream") as response:
            lines.extend(response.iter_lines())  # until the server ends the stream
        ended.set()

    thread = threading.Thread(target=follow, daemon=True)
    thread.start()
    # Nothing happens: keep-alive comments come (every 0.5 s with the test's settings).
    wait_for("a keep-alive comment", lambda: ": keep-alive" in lines)
    api.server.stop()
    assert ended.wait(60), "the stream did not end when the server stopped"
    assert lines[0] == "retry: 2000"


def test_feed_is_woken_by_the_database_not_by_its_timer(api: Api) -> None:
    """With a poll of a minute, a wait returns True only if a notification woke it."""
    api.post("/api/v1/task-types", json={"name": "t", "handler": "shell:true"})
    feed = EventFeed(api.yard.store, poll=120.0)
    try:
        assert feed.read(None).events == []
        feed.wait(0.0)  # starts the listener thread
        woke: list[bool] = []
        waiter = threading.Thread(target=lambda: woke.append(feed.wait(120.0)))
        waiter.start()
        wait_for("the waiter to wait", lambda: feed._thread is not None)
        while waiter.is_alive():
            # A cancel notifies the channel the feed listens to now ("scheduler"); a
            # submit whose own transaction placed it does not (the poll covers it).
            with api.client("write") as writer:
                job = writer.post("/api/v1/jobs", json={"type": "t", "pools": ["nowhere"]})
                writer.post(f"/api/v1/jobs/{job.json()['id']}/cancel")
            waiter.join(1.0)
        assert woke == [True]
        # Read in commit order: on PostgreSQL an event waits for the transactions older
        # than its own, anywhere on the server (other tests' too), to end.
        page = wait_for("the events to be readable", lambda: (
            found := feed.read(None, EventFilter(topics=("job-pending",)))).events and found)
        assert page.events[0].topic == "job-pending"
    finally:
        feed.close()
