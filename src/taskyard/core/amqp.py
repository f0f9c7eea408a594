"""Where taskyard's events go on RabbitMQ: seed 004's exchanges and routing keys.

Seed 004 publishes on **topic exchanges** named ``v1/scheduler:task-graph-<state>`` with
routing keys ``_._._._._._.<schedulerId>.<taskGraphId>.<taskGraph.routing>``; the queue
publishes its task messages with ``<taskId>.<runId>.<workerGroup>.<workerId>.
<provisionerId>.<workerType>.<task.routing>``, where ``task.routing`` is prefixed with
``<schedulerId>.<taskGraphId>.<taskGraph.routing>``. The six leading words of a graph
key are the constant ``_`` so that one binding pattern (``*.*.*.*.*.*.taskyard.12.#``)
serves both. Here every event topic gets its exchange and every event its key, from
values only (the publisher looks the job's facts up; see ``docs/integrations/rabbitmq.md``).
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import unquote, urlsplit

from taskyard.core.routing import SCHEDULER_ID

EXCHANGE_PREFIX = "v1/scheduler:"
GRAPH_KEY_PREFIX = "_._._._._._"
"""Seed 004's constant: six words standing for a task message's own six."""
PROVISIONER = SCHEDULER_ID
"""The provisioner word of job keys: taskyard places its jobs itself."""
TOPICS = ("graph-running", "graph-blocked", "graph-finished", "graph-canceled",
          "graph-stalled", "job-pending", "job-running", "job-completed", "job-failed",
          "job-exception", "job-awaiting", "schedule-error", "schedule-skipped",
          "pool-paused", "pool-resumed")
"""Every topic taskyard writes (docs/events.md): the publisher declares their exchanges."""


@dataclass(frozen=True, slots=True)
class JobFacts:
    """What a job event's key says beyond its stored routing key, looked up when it is
    published: the job's task type and the worker of the event's attempt (None: not
    known, e.g. no attempt, or the job was pruned before the publisher reached it)."""

    type: str | None = None
    host: str | None = None
    worker: str | None = None
    trace_context: str | None = None
    """The W3C trace context the job was submitted in (core/trace_context.py): its
    messages carry it (``traceparent`` header)."""


def exchange_for(topic: str) -> str:
    """The exchange of ``topic``: ``graph-X`` → ``v1/scheduler:task-graph-X`` (seed 004's
    names), any other topic → ``v1/scheduler:<topic>`` (``v1/scheduler:job-completed``)."""
    if topic.startswith("graph-"):
        return f"{EXCHANGE_PREFIX}task-{topic}"
    return EXCHANGE_PREFIX + topic


def word(value: object) -> str:
    """One word of a routing key: ``_`` for nothing, dots replaced by ``_`` (a name
    holding a dot would shift every word after it)."""
    text = "" if value is None else str(value)
    return text.replace(".", "_") or "_"


def graph_key(stored: str) -> str:
    """``_._._._._._.<scheduler>.<graph>.<graph routing>`` from a stored key whose last
    word is the (empty) job part, as every graph event's is."""
    head, _, _job = stored.rpartition(".")
    return f"{GRAPH_KEY_PREFIX}.{head or stored}"


def job_message_key(stored: str, job_id: int, attempt: int | None, facts: JobFacts) -> str:
    """``<job>.<attempt>.<host>.<worker>.taskyard.<type>.<stored key>``: seed 004's task
    layout, the stored key (``<scheduler>.<graph>.<graph routing>.<job routing>``) last."""
    return ".".join((word(job_id), word(attempt), word(facts.host), word(facts.worker),
                     PROVISIONER, word(facts.type), stored))


def message_key(topic: str, stored: str, job_id: int | None, attempt: int | None = None,
                facts: JobFacts = JobFacts()) -> str:
    """The routing key of an event's message: the task layout for ``job-*`` topics (of a
    job), the graph layout for every other (``schedule-error`` has no graph: ``_``)."""
    if topic.startswith("job-") and job_id is not None:
        return job_message_key(stored, job_id, attempt, facts)
    return graph_key(stored)


@dataclass(frozen=True, slots=True)
class AmqpAddress:
    """Where a broker is, from an ``amqp://`` or ``amqps://`` URL."""

    host: str
    port: int
    user: str
    password: str
    vhost: str
    tls: bool


class AmqpUrlError(ValueError):
    """A broker URL taskyard cannot use."""


def parse_amqp_url(url: str) -> AmqpAddress:
    """``amqp[s]://[user[:password]@]host[:port][/vhost]`` (RabbitMQ's URI spec: no path
    is the vhost ``/``, ``/%2F`` too, ``/name`` is ``name``); guest/guest by default."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise AmqpUrlError(f"--amqp {url!r}: {exc}") from None
    if parts.scheme not in ("amqp", "amqps") or not parts.hostname:
        raise AmqpUrlError(f"--amqp {url!r}: expected amqp://user:password@host:port/vhost")
    tls = parts.scheme == "amqps"
    path = parts.path[1:] if parts.path.startswith("/") else parts.path
    return AmqpAddress(
        host=parts.hostname, port=port or (5671 if tls else 5672),
        user=unquote(parts.username) if parts.username is not None else "guest",
        password=unquote(parts.password) if parts.password is not None else "guest",
        vhost=unquote(path) or "/", tls=tls)
