"""Following the event log in commit order: a follower's cursor never passes an event
whose transaction commits late, the ``events`` channel wakes followers when events
are written, and a follower can start from an event id, a time, or the last N."""

from __future__ import annotations

import time

import pytest
from sqlalchemy import text

from taskyard.model.records import JobSubmission, TaskTypeSpec
from taskyard.store import MovableClock, Store
from taskyard.store.cursor import BULK_MIN_ROWS
from taskyard.store.driver.params import Event
from taskyard.store.transitions.events import START, EventCursor, EventPage


def _submit(store: Store, n: int = 1) -> list[int]:
    return store.jobs.submit([JobSubmission("t", {"i": i}) for i in range(n)])


def _committed(store: Store, after: EventCursor = START, *, count: int,
               **filters: str) -> EventPage:
    """The first page that holds ``count`` events. On PostgreSQL an event shows once
    every transaction that began writing before it has ended, anywhere on the server
    (other tests' databases too): wait for that, with a generous deadline."""
    deadline = time.monotonic() + 30
    while True:
        page = store.events.committed(after, **filters)  # type: ignore[arg-type]
        if len(page.events) >= count or time.monotonic() > deadline:
            return page
        time.sleep(0.02)


@pytest.fixture
def typed(store: Store) -> Store:
    store.task_types.put(TaskTypeSpec("t", "shell:true"))
    return store


def test_a_follower_reads_every_event_once_in_order(typed: Store) -> None:
    first = typed.events.committed()
    assert first.events == [] and first.cursor == START
    ids = _submit(typed, 3)
    _committed(typed, count=3)
    page = typed.events.committed(first.cursor, limit=2)
    assert [e.payload["job_id"] for e in page.events] == ids[:2] and page.full
    rest = typed.events.committed(page.cursor)
    assert [e.payload["job_id"] for e in rest.events] == ids[2:] and not rest.full
    assert typed.events.committed(rest.cursor).events == []  # nothing twice


def test_a_pattern_leaves_events_out_but_moves_the_cursor(typed: Store) -> None:
    _submit(typed)
    graph = typed.graphs.submit({"routing": "nightly", "tasks": {"a": {"type": "t"}}})
    _committed(typed, count=3)
    page = typed.events.committed(pattern="*.*.nightly.#")
    assert {e.topic for e in page.events} == {"graph-running", "job-pending"}
    assert all(str(graph) in e.routing_key for e in page.events)
    assert typed.events.committed(page.cursor).events == []
    only = typed.events.committed(topic="graph-running")
    assert [e.topic for e in only.events] == ["graph-running"]


def test_a_follower_starts_after_an_id_at_a_time_or_with_the_last_events(
        typed: Store, clock: MovableClock) -> None:
    early = _submit(typed, 2)
    clock.advance(60)
    since = typed.now()
    late = _submit(typed, 2)
    everything = _committed(typed, count=4).events
    after_first = typed.events.committed(typed.events.cursor_at(everything[0].id)).events
    assert [e.id for e in after_first] == [e.id for e in everything[1:]]
    from_time = typed.events.committed(typed.events.cursor_since(since - 1)).events
    assert [e.payload["job_id"] for e in from_time] == late
    last = typed.events.last(3)
    assert [e.id for e in last.events] == [e.id for e in everything[-3:]]
    assert typed.events.committed(last.cursor).events == []
    assert early[0] not in [e.payload["job_id"] for e in last.events]


@pytest.mark.parametrize("n", [1, BULK_MIN_ROWS])
def test_the_events_channel_wakes_followers_on_commit(typed: Store, n: int) -> None:
    """A lone job's event and a bulk's (``COPY`` on PostgreSQL) alike: the followers are
    woken, and read every event in order, each stamped with the database's clock."""
    start = typed.events.committed().cursor
    listener = typed.listener("events")
    try:
        assert not listener.wait(0.05)
        before = typed.now()
        ids = _submit(typed, n)
        assert listener.wait(10.0)
    finally:
        listener.close()
    page = _committed(typed, start, count=n, topic="job-pending")
    assert [e.payload["job_id"] for e in page.events] == ids
    assert [e.id for e in page.events] == sorted(e.id for e in page.events)
    assert all(before <= e.created_at <= typed.now() for e in page.events)


@pytest.mark.parametrize("n", [1, 15, 16, 300])
def test_events_are_written_as_announced_in_order_whatever_their_number(
        typed: Store, n: int) -> None:
    """However many a unit announces (PostgreSQL writes many as arrays, few as a JSON
    row set), each event keeps its topic, key, payload, job and graph, in order; a
    column may be empty throughout."""
    events = [Event(f"topic-{i % 3}", f"key.{i}", f'{{"i":{i},"s":"é\\"{i}"}}',
                    None if n == 16 or i % 2 else 1000 + i, None if i % 3 else 7)
              for i in range(n)]
    start = typed.events.committed().cursor
    with typed.write() as tx:
        tx.events.append(events)
    page = _committed(typed, start, count=n)
    assert [(e.topic, e.routing_key, e.payload) for e in page.events] == [
        (e.topic, e.routing_key, {"i": i, "s": f'é"{i}'}) for i, e in enumerate(events)]
    with typed.engine.connect() as conn:
        stored = conn.execute(text("SELECT job_id, graph_id FROM events WHERE id >= :first "
                                   "ORDER BY id"), {"first": page.events[0].id}).all()
    assert [tuple(row) for row in stored] == [(e.job_id, e.graph_id) for e in events]


def test_pg_an_event_that_commits_late_is_not_passed(typed: Store) -> None:
    if typed.backend == "sqlite":
        pytest.skip("SQLite commits one writer at a time, in id order")
    start = typed.events.committed().cursor
    with typed.engine.connect() as slow:
        # A transaction that takes its id and an event id first, and commits last.
        slow.execute(text("INSERT INTO events (topic, routing_key, payload, created_at) "
                          "VALUES ('slow', 'k', '{}', 0)"))
        (fast,) = _submit(typed)  # commits now, with a later event id
        page = typed.events.committed(start)
        assert page.events == []  # the slow transaction may still commit before it
        slow.commit()
    page = _committed(typed, start, count=2)
    assert [e.topic for e in page.events] == ["slow", "job-pending"]
    assert page.events[1].payload["job_id"] == fast
    assert page.cursor > start and isinstance(page.cursor, EventCursor)


def test_pg_a_pruned_event_id_resumes_without_losing_what_followed(typed: Store) -> None:
    if typed.backend == "sqlite":
        pytest.skip("on SQLite the cursor is the id itself")
    ids = _submit(typed, 3)
    events = _committed(typed, count=3).events
    with typed.write() as tx:
        tx.conn.execute(text("DELETE FROM events WHERE id = :i"), {"i": events[0].id})
    resumed = typed.events.committed(typed.events.cursor_at(events[0].id)).events
    assert [e.payload["job_id"] for e in resumed] == ids[1:]
