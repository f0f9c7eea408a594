"""The event log: what transitions append in a transaction, written when it ends; and
reading it back — in commit order, for followers that must miss nothing.

A follower reads with an :class:`EventCursor`. Event ids are taken when rows are
inserted, not when their transaction commits; on PostgreSQL two transactions may
commit in the other order, and a follower going by id alone would pass the event that
committed late. So each event also records its transaction (``tx_id``), followers read
in (tx_id, id) order, and only events of transactions older than every transaction
still running (which may yet commit): what they have read never gains an earlier
event. SQLite commits one writer at a time, in id order: there the cursor is the id.
Every statement that writes events also wakes the ``events`` channel."""

from __future__ import annotations

import functools
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from taskyard.core.routing import job_key, routing_key, topic_matches
from taskyard.model.records import JSON, EventRecord, JobSubmission, loads
from taskyard.store.driver.params import Event, EventCursor, ReadEvents

if TYPE_CHECKING:
    from taskyard.store.unit import Tx

__all__ = [
    "EVENTS_CHANNEL",
    "START",
    "Event",
    "EventCursor",
    "EventPage",
    "Events",
    "attempt_ended",
    "awaiting_ended",
    "encode_payload",
    "graph_changed",
    "graph_stalled",
    "job_awaiting",
    "job_exception",
    "job_pending",
    "job_running",
    "pool_changed",
    "schedule_error",
    "schedule_skipped",
    "worker_draining",
]

EVENTS_CHANNEL = "events"
"""Woken whenever a transaction that wrote events commits."""

encode_payload = json.JSONEncoder(separators=(",", ":"), allow_nan=False).encode
"""Event payloads are written by taskyard itself: no key sorting needed (hot path)."""


_ENDED_TOPIC = {"succeeded": "job-completed", "failed": "job-failed", "error": "job-exception",
                "canceled": "job-exception"}
"""The topic of an attempt's end, by the attempt's state (TaskCluster's task-completed,
task-failed and task-exception)."""


@functools.lru_cache(maxsize=256)
def _type_field(type: str) -> str:
    """A job-pending payload's type field (a batch's jobs share a few types)."""
    return f',"type":{encode_payload(type)}'


def job_pending(job_id: int, graph_id: int | None, routing: str, *, type: str | None = None,
                schedule: str | None = None, retry: str | None = None) -> Event:
    """A job became pending (submitted, released by its parents, retried, requeued by
    hand). ``routing``: the job's stored routing."""
    more = "" if type is None else _type_field(type)
    if schedule is not None:
        more += f',"schedule":{encode_payload(schedule)}'
    if retry is not None:
        more += f',"retry":{encode_payload(retry)}'
    return Event("job-pending", job_key(graph_id, routing), f'{{"job_id":{job_id}{more}}}',
                 job_id, graph_id)


def shared_pending(subs: Sequence[JobSubmission]) -> Event | None:
    """The ``job-pending`` event every job of a batch shares, id aside (one type, graph
    and routing: a ``submit_many``); None when they differ."""
    first = subs[0]
    if any(s.type != first.type or s.graph_id != first.graph_id
           or s.routing != first.routing for s in subs):
        return None
    return job_pending(0, first.graph_id, first.routing, type=first.type)


def job_running(job_id: int, attempt: int, worker_id: int, graph_id: int | None,
                routing: str) -> Event:
    """An attempt started on its worker."""
    return Event("job-running", job_key(graph_id, routing),
                 f'{{"job_id":{job_id},"attempt":{attempt},"worker_id":{worker_id}}}',
                 job_id, graph_id)


def attempt_ended(job_id: int, attempt: int, state: str, *, retry: bool,
                  graph_id: int | None, routing: str, exit_code: int | None = None) -> Event:
    """An attempt ended in ``state`` (an attempt state); ``retry``: the job runs again."""
    code = "" if exit_code is None else f',"exit_code":{exit_code}'
    return Event(_ENDED_TOPIC[state], job_key(graph_id, routing),
                 f'{{"job_id":{job_id},"attempt":{attempt},"state":"{state}",'
                 f'"retry":{"true" if retry else "false"}{code}}}', job_id, graph_id)


def job_awaiting(job_id: int, graph_id: int | None, routing: str, kind: str, *,
                 signal: str | None = None, key: str | None = None,
                 deadline: float | None = None) -> Event:
    """An approval, a wait or a sleep became awaiting (its dependencies are met): what it
    awaits, and when it times out (None: never)."""
    payload: dict[str, JSON] = {"job_id": job_id, "kind": kind}
    if signal is not None:
        payload.update(signal=signal, key=key)
    payload["deadline"] = deadline
    return Event("job-awaiting", job_key(graph_id, routing), encode_payload(payload),
                 job_id, graph_id)


def awaiting_ended(job_id: int, graph_id: int | None, routing: str, kind: str, state: str,
                   **facts: JSON) -> Event:
    """An awaiting job ended in ``state`` (succeeded: ``job-completed``, failed:
    ``job-failed``); ``facts`` say how: the decision, its note and who took it, the
    signal that completed a wait."""
    return Event(_ENDED_TOPIC[state], job_key(graph_id, routing), encode_payload(
        {"job_id": job_id, "kind": kind, "state": state, **facts}), job_id, graph_id)


def job_exception(job_id: int, graph_id: int | None, routing: str, reason: str, *,
                  attempt: int | None = None, state: str | None = None) -> Event:
    """A job or its attempt ended for a reason not its handler's (canceled, its worker
    lost, lost too often)."""
    payload: dict[str, JSON] = {"job_id": job_id}
    if attempt is not None:
        payload["attempt"] = attempt
    if state is not None:
        payload["state"] = state
    payload["reason"] = reason
    return Event("job-exception", job_key(graph_id, routing), encode_payload(payload),
                 job_id, graph_id)


def graph_changed(graph_id: int, state: str, routing: str, **extra: JSON) -> Event:
    """A graph entered ``state`` (running, blocked, finished, canceled)."""
    return Event(f"graph-{state}", routing_key(graph_id, routing, ""), encode_payload(
        {"graph_id": graph_id, "state": state, "routing": routing, **extra}), None, graph_id)


def graph_stalled(graph_id: int, routing: str, stall_after: float) -> Event:
    """A running graph made no progress for ``stall_after`` seconds (seed 003's watchdog)."""
    return Event("graph-stalled", routing_key(graph_id, routing, ""),
                 encode_payload({"graph_id": graph_id, "stall_after": stall_after}),
                 None, graph_id)


def pool_changed(pool: str, *, paused: bool) -> Event:
    """A pool was paused (nothing new is placed in it) or resumed."""
    return Event("pool-paused" if paused else "pool-resumed", routing_key(None, "", ""),
                 encode_payload({"pool": pool, "paused": paused}), None, None)


def worker_draining(name: str, worker_id: int) -> Event:
    """A worker was told to drain: it finishes what it has and is given nothing new."""
    return Event("worker-draining", routing_key(None, "", ""),
                 encode_payload({"worker": name, "worker_id": worker_id}), None, None)


def schedule_skipped(schedule: str, first: float, last: float, count: int, reason: str, *,
                     more: bool = False) -> Event:
    """Ticks of a schedule that get no job of their own (``count`` of them, from
    ``first`` to ``last``; ``more``: more than counted), and why: missed while no
    scheduler ran, older than the catch-up window, or overlapping the previous job."""
    return Event("schedule-skipped", routing_key(None, "", ""), encode_payload(
        {"schedule": schedule, "tick": first, "last": last, "count": count, "more": more,
         "reason": reason}), None, None)


def schedule_error(schedule: str, tick: float, reason: str) -> Event:
    """A schedule's tick made no job, or its schedule was paused (its reason is longer
    than ``last_outcome`` holds)."""
    return Event("schedule-error", routing_key(None, "", ""),
                 encode_payload({"schedule": schedule, "tick": tick, "reason": reason}),
                 None, None)


START = EventCursor()
"""Before every event."""


@dataclass(frozen=True, slots=True)
class EventPage:
    """Events read in commit order, and the cursor after the last one read (filtered
    out or not)."""

    events: list[EventRecord]
    cursor: EventCursor
    full: bool = False
    """As many rows as asked for were read: there may be more right away."""


def _record(row: tuple[Any, ...]) -> EventRecord:
    event_id, _, topic, key, payload, created_at = row
    return EventRecord(event_id, topic, key, loads(payload), created_at)


class Events:
    """The event log of one transaction: appended events are buffered and written by
    the driver with the unit of work's end (or by a statement that writes them on its
    way: :meth:`take`)."""

    READS: ClassVar[frozenset[str]] = frozenset({
        'committed', 'cursor_at', 'cursor_since', 'last', 'list'})
    """Methods a call through the store (``store.events.<method>``) runs in a read
    transaction; the others run in a write transaction (:class:`taskyard.store.store.OneShot`)."""

    def __init__(self, tx: Tx) -> None:
        self.tx = tx
        self.buffer: list[Event] = []

    def append(self, events: Iterable[Event]) -> None:
        """Announce ``events`` once this unit of work commits."""
        self.buffer.extend(events)

    def flush(self) -> None:
        """Write what is buffered now, in this transaction (a large graph's events,
        while collection is paused)."""
        if self.buffer:
            self.tx.driver.write_events(self.tx.raw, self.take())

    def take(self) -> list[Event]:
        """What is buffered, taken out of the buffer: for a statement that writes it on
        its way (see the class docstring)."""
        taken, self.buffer = self.buffer, []
        return taken

    def committed(self, after: EventCursor = START, *, topic: str | None = None,
                  pattern: str | None = None, limit: int = 1000) -> EventPage:
        """The events after ``after`` in commit order, at most ``limit`` rows read;
        ``pattern`` matches routing keys with AMQP topic rules (rows it leaves out
        still move the cursor)."""
        rows = self.tx.driver.events_after(self.tx.raw, after, topic, limit)
        events = [_record(r) for r in rows if pattern is None or topic_matches(pattern, r[3])]
        cursor = EventCursor(rows[-1][1], rows[-1][0]) if rows else after
        return EventPage(events, cursor, full=len(rows) >= limit)

    def cursor_at(self, event_id: int) -> EventCursor:
        """The cursor right after event ``event_id`` (a follower's ``Last-Event-ID``)."""
        return self.tx.driver.event_cursor(self.tx.raw, event_id)

    def last(self, count: int, *, topic: str | None = None) -> EventPage:
        """The newest ``count`` committed events (oldest first), and the cursor after
        the newest: what ``--tail N`` shows before it follows."""
        rows = self.tx.driver.events_last(self.tx.raw, count, topic)
        cursor = EventCursor(rows[0][1], rows[0][0]) if rows else self._head()
        return EventPage([_record(r) for r in reversed(rows)], cursor)

    def _head(self) -> EventCursor:
        rows = self.tx.driver.events_last(self.tx.raw, 1, None)
        return EventCursor(rows[0][1], rows[0][0]) if rows else START

    def cursor_since(self, when: float) -> EventCursor:
        """The cursor before the first event created at or after ``when``."""
        found = self._first_at(when)
        if found is None:
            return self._head()
        at = self.tx.driver.event_cursor(self.tx.raw, found)
        return EventCursor(at.tx, at.id - 1)

    def _first_at(self, when: float) -> int | None:
        """The first event id created at or after ``when``. Events are indexed by id
        only, and ids grow with creation time: a binary search over ids, a few dozen
        indexed reads whatever the size of the log."""
        driver, raw = self.tx.driver, self.tx.raw
        low, high = driver.event_id_range(raw)
        if low is None:
            return None
        # The smallest m in [low, high + 1] such that the first event at or after id m
        # is new enough (or there is none): a predicate that only turns true once.
        low, high = int(low), int(high) + 1
        while low < high:
            middle = (low + high) // 2
            row = driver.event_from(raw, middle)
            if row is None or row[1] >= when:
                high = middle
            else:
                low = int(row[0]) + 1  # ids between middle and row.id do not exist
        first = driver.event_from(raw, low)
        return None if first is None else int(first[0])

    def list(
        self,
        *,
        after_id: int | None = None,
        topic: str | None = None,
        graph_id: int | None = None,
        job_id: int | None = None,
        limit: int = 1000,
    ) -> list[EventRecord]:
        """Stored events in order, optionally after an id (for following) and filtered."""
        return [EventRecord(event_id, topic_, key, loads(payload), created)
                for event_id, topic_, key, payload, created in self.tx.driver.read_events(
                    self.tx.raw, ReadEvents(after_id, topic, graph_id, job_id, limit))]
