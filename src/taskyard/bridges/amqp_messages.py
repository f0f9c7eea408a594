"""An event as a RabbitMQ message: exchange, routing key (``core/amqp.py``) and body.

The body follows seed 004's status structure where it applies (``schedulerId``,
``taskGraphId``, ``state``, ``routing``; ``taskId`` and ``runId`` for jobs, as the
queue's task messages have them) and carries the event itself under ``event``, as
``taskyard events --json`` prints it. ``message_id`` is ``taskyard-event-<id>``: a
consumer that must not act twice drops a message whose id it has seen (the publisher
delivers at least once).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping

from taskyard.bridges.amqp_link import Outgoing
from taskyard.core.amqp import JobFacts, exchange_for, message_key
from taskyard.core.routing import SCHEDULER_ID
from taskyard.core.trace_context import carrier
from taskyard.model.records import JSON, EventRecord

FactKey = tuple[int, int | None]
BODY_VERSION = 1


def _int(value: JSON) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def fact_key(event: EventRecord) -> FactKey | None:
    """(job, attempt) whose facts a job event's key needs; None for other events."""
    payload = event.payload if isinstance(event.payload, dict) else {}
    job = _int(payload.get("job_id"))
    if not event.topic.startswith("job-") or job is None:
        return None
    return job, _int(payload.get("attempt"))


def fact_keys(events: Iterable[EventRecord]) -> set[FactKey]:
    return {key for key in map(fact_key, events) if key is not None}


def body(event: EventRecord) -> dict[str, JSON]:
    """The message body (see the module docstring)."""
    payload = event.payload if isinstance(event.payload, dict) else {}
    words = event.routing_key.split(".")
    graph = words[1] if len(words) > 1 and words[1] != "_" else None
    state = payload.get("state")
    doc: dict[str, JSON] = {
        "version": BODY_VERSION,
        "schedulerId": SCHEDULER_ID,
        "taskGraphId": graph,
        "state": state if isinstance(state, str) else event.topic.partition("-")[2],
    }
    key = fact_key(event)
    if key is not None:
        doc["taskId"] = str(key[0])
        doc["runId"] = key[1]
        doc["routing"] = event.routing_key
    else:
        routing = payload.get("routing")
        doc["routing"] = routing if isinstance(routing, str) else ".".join(words[2:-1])
    doc["event"] = event.to_json()
    return doc


def outgoing(event: EventRecord, facts: Mapping[FactKey, JobFacts]) -> Outgoing:
    """The message for ``event``; ``facts``: what :meth:`Outbox.job_facts` found."""
    key = fact_key(event)
    job, attempt = key if key is not None else (None, None)
    found = facts.get(key, JobFacts()) if key is not None else JobFacts()
    routing_key = message_key(event.topic, event.routing_key, job, attempt, found)
    # A job's messages carry the trace context it was submitted in (W3C headers, as
    # OTel's AMQP instrumentations read them).
    return Outgoing(
        exchange=exchange_for(event.topic), routing_key=routing_key,
        body=json.dumps(body(event), separators=(",", ":")).encode(),
        message_id=f"taskyard-event-{event.id}", type=event.topic,
        timestamp=int(event.created_at),
        headers={"taskyard-event-id": event.id, **carrier(found.trace_context)})
