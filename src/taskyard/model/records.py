"""Values passed across the store seam: what goes in and what comes out."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from taskyard.core.durations import Interval, iso
from taskyard.core.json_text import CompactJson
from taskyard.core.trace_context import as_json as trace_json

JSON = Any


@dataclass(frozen=True, slots=True)
class Prerequisite:
    """Update-on-launch: run ``type`` with ``args`` first, reusing one within ``cache`` s."""

    type: str
    args: dict[str, JSON] = field(default_factory=dict)
    cache: float = 0.0


@dataclass(frozen=True, slots=True)
class TaskTypeSpec:
    """A named kind of work and its policies (swh task type + AWX template rules)."""

    name: str
    handler: str
    description: str = ""
    pools: tuple[str, ...] = ("default",)
    cost: int = 1
    timeout: float | None = None
    retries: int = 0
    retry_delay: float = 0.0
    retry_backoff: float = 1.0
    retry_max_delay: float = 3600.0
    interval: Interval | None = None
    backoff_factor: float | None = None
    max_queue_length: int | None = None
    locks: tuple[str, ...] = ()
    simultaneous: bool = True
    prerequisites: tuple[Prerequisite, ...] = ()
    max_worker_losses: int = 3
    """Times a job may lose its worker (crash, expiry) before it ends in ``error``;
    separate from ``retries``, which count the handler's own failures."""
    rate_limit: str | None = None
    """At most N starts per second, minute or hour (``10/s``, ``100/m``, ``5/h``)."""
    rate_key: str | None = None
    """A template over args (``tenant:{tenant}``): each key has ``rate_limit`` to itself."""

    def to_json(self) -> dict[str, JSON]:
        interval = self.interval
        return {
            "name": self.name,
            "handler": self.handler,
            "description": self.description,
            "pools": list(self.pools),
            "cost": self.cost,
            "timeout": self.timeout,
            "retries": self.retries,
            "retry_delay": self.retry_delay,
            "retry_backoff": self.retry_backoff,
            "retry_max_delay": self.retry_max_delay,
            "interval": None if interval is None else {
                "default": interval.default, "min": interval.minimum, "max": interval.maximum},
            "backoff_factor": self.backoff_factor,
            "max_queue_length": self.max_queue_length,
            "locks": list(self.locks),
            "simultaneous": self.simultaneous,
            "prerequisites": [{"type": p.type, "args": p.args, "cache": p.cache}
                              for p in self.prerequisites],
            "max_worker_losses": self.max_worker_losses,
            "rate_limit": self.rate_limit,
            "rate_key": self.rate_key,
        }


SCOPES = ("read", "write", "admin")
"""API token scopes, each allowing what the ones before it allow."""

ON_DUPLICATE = ("existing", "reject")
"""A submit whose unique key a job holds: that job's id (the default), or Conflict."""


@dataclass(slots=True)  # not frozen: 0.6 µs to build, not 2.3 (a setattr per field)
class JobSubmission:
    """A request to run one job. ``None`` fields fall back to the task type's."""

    type: str
    args: dict[str, JSON] = field(default_factory=dict)
    priority: int = 0
    pools: tuple[str, ...] | None = None
    run_after: float | None = None
    locks: tuple[str, ...] = ()
    retries: int | None = None
    timeout: float | None = None
    label: str | None = None
    graph_id: int | None = None
    routing: str = ""
    launch_type: str = "manual"
    schedule_name: str | None = None
    dedup_key: str | None = None
    args_text: str | None = None
    """``args`` already checked against the limits and encoded (graphs do it whole)."""
    unique_key: str | None = None
    """At most one job of this type with this key is unfinished (or, with
    ``unique_for``, was created within that many seconds)."""
    unique_for: float | None = None
    on_duplicate: str = "existing"
    """One of :data:`ON_DUPLICATE`."""
    logical_time: float | None = None
    """The tick of its schedule it stands for (a schedule's job, or a backfill's)."""
    trace_context: str | None = None
    """Its W3C trace context, as stored (core/trace_context.py)."""


@dataclass(frozen=True, slots=True)
class AttemptRecord:
    attempt: int
    state: str
    worker: str | None
    exit_code: int | None
    dispatched_at: float | None
    started_at: float | None
    finished_at: float | None
    result: JSON = None
    error: str | None = None
    stdout_tail: str | None = None
    stderr_tail: str | None = None

    def to_json(self) -> dict[str, JSON]:
        return {
            "attempt": self.attempt,
            "state": self.state,
            "worker": self.worker,
            "exit_code": self.exit_code,
            "dispatched_at": iso(self.dispatched_at),
            "started_at": iso(self.started_at),
            "finished_at": iso(self.finished_at),
            "result": self.result,
            "error": self.error,
            "stdout_tail": self.stdout_tail,
            "stderr_tail": self.stderr_tail,
        }


@dataclass(frozen=True, slots=True)
class StageRecord:
    """One stage of one attempt, as stored."""

    attempt: int
    name: str
    seq: int
    state: str
    started_at: float
    finished_at: float | None
    result: JSON = None

    def to_json(self) -> dict[str, JSON]:
        return {"attempt": self.attempt, "name": self.name, "seq": self.seq,
                "state": self.state, "started_at": iso(self.started_at),
                "finished_at": iso(self.finished_at), "result": self.result}


@dataclass(frozen=True, slots=True)
class JobRecord:
    """A job as stored, with its attempts when asked for."""

    id: int
    type: str | None
    """Its task type; None for an approval, a wait or a sleep (see ``kind``)."""
    state: str
    attempt: int
    args: dict[str, JSON]
    result: JSON
    exit_code: int | None
    priority: int
    pools: tuple[str, ...]
    worker: str | None
    graph_id: int | None
    label: str | None
    created_at: float
    started_at: float | None
    finished_at: float | None
    cost: int = 1
    locks: tuple[str, ...] = ()
    run_after: float | None = None
    unmet_deps: int = 0
    retries: int = 0
    timeout: float | None = None
    error: str | None = None
    launch_type: str = "manual"
    cancel_requested: bool = False
    attempts: tuple[AttemptRecord, ...] = ()
    stages: tuple[StageRecord, ...] = ()
    base_priority: int | None = None
    """The priority it was submitted with, when aging has raised ``priority``."""
    unique_key: str | None = None
    rate_key: str | None = None
    """Its rate-limit key, rendered from its args when it was submitted."""
    schedule_name: str | None = None
    """The schedule that created it (a recurring job), else None (a one-shot job)."""
    kind: str = "task"
    """``task`` (work for a worker), ``approval``, ``wait`` or ``sleep``."""
    signal: str | None = None
    signal_key: str | None = None
    """The signal a ``wait`` expects, and its key (None: any key)."""
    deadline: float | None = None
    """When its running attempt times out; when an awaiting job times out (a sleep ends)."""
    logical_time: float | None = None
    """The tick of its schedule it stands for (a schedule's job, or a backfill's)."""
    trace_context: str | None = None

    def to_json(self) -> dict[str, JSON]:
        return {
            "id": self.id,
            "type": self.type,
            "state": self.state,
            "attempt": self.attempt,
            "args": self.args,
            "result": self.result,
            "exit_code": self.exit_code,
            "error": self.error,
            "priority": self.priority,
            "pools": list(self.pools),
            "cost": self.cost,
            "locks": list(self.locks),
            "worker": self.worker,
            "graph_id": self.graph_id,
            "label": self.label,
            "launch_type": self.launch_type,
            "retries": self.retries,
            "timeout": self.timeout,
            "run_after": iso(self.run_after),
            "unmet_deps": self.unmet_deps,
            "created_at": iso(self.created_at),
            "started_at": iso(self.started_at),
            "finished_at": iso(self.finished_at),
            "attempts": [a.to_json() for a in self.attempts],
            "stages": [s.to_json() for s in self.stages],
            "base_priority": self.base_priority,
            "unique_key": self.unique_key,
            "rate_key": self.rate_key,
            "schedule": self.schedule_name,
            "kind": self.kind,
            "signal": None if self.signal is None else {"name": self.signal,
                                                        "key": self.signal_key},
            "deadline": iso(self.deadline),
            "logical_time": iso(self.logical_time),
            **trace_json(self.trace_context),
        }


@dataclass(frozen=True, slots=True)
class WorkerRecord:
    id: int
    name: str
    pools: tuple[str, ...]
    capacity: int
    state: str
    hostname: str
    pid: int | None
    started_at: float
    last_heartbeat_at: float
    lease_expires_at: float
    running: int = 0
    used: int = 0

    def to_json(self) -> dict[str, JSON]:
        return {
            "id": self.id,
            "name": self.name,
            "pools": list(self.pools),
            "capacity": self.capacity,
            "state": self.state,
            "hostname": self.hostname,
            "pid": self.pid,
            "running": self.running,
            "used": self.used,
            "started_at": iso(self.started_at),
            "last_heartbeat_at": iso(self.last_heartbeat_at),
            "lease_expires_at": iso(self.lease_expires_at),
        }


@dataclass(slots=True)  # not frozen (nor below): built per job on the hot path
class ClaimedJob:
    """A job placed on a worker under ``attempt``: what the worker needs to run it."""

    job_id: int
    attempt: int
    type: str
    handler: str
    args: dict[str, JSON]
    timeout: float | None
    graph_id: int | None = None
    label: str | None = None
    stages: dict[str, JSON] = field(default_factory=dict)
    """Results of the stages earlier attempts finished: this attempt skips them."""
    cost: int = 1
    priority: int = 0
    logical_time: float | None = None
    """The tick of its schedule it stands for (TASKYARD_LOGICAL_TIME), if any."""
    trace_context: str | None = None


@dataclass(slots=True)
class Started:
    """A worker started an attempt ``ago`` seconds before it reports it (dispatched →
    running; the start time is then taken on the database clock minus ``ago``)."""

    job_id: int
    attempt: int
    ago: float = 0.0


@dataclass(slots=True)
class Outcome:
    """What a worker reports when an attempt ends. ``state``: an attempt end state."""

    job_id: int
    attempt: int
    state: str
    exit_code: int | None = None
    result: JSON = None
    error: str | None = None
    stdout_tail: str | None = None
    stderr_tail: str | None = None


@dataclass(frozen=True, slots=True)
class LeaseStatus:
    """Answer to a heartbeat: is the lease renewed, and which attempts must stop."""

    renewed: bool
    stop: tuple[tuple[int, int], ...] = ()
    """(job_id, attempt) pairs the worker must terminate: canceled or no longer current."""


@dataclass(frozen=True, slots=True)
class EventRecord:
    id: int
    topic: str
    routing_key: str
    payload: JSON
    created_at: float

    def to_json(self) -> dict[str, JSON]:
        return {
            "id": self.id, "topic": self.topic, "routing_key": self.routing_key,
            "payload": self.payload,
            "created_at": iso(self.created_at),
        }


dumps = CompactJson(allow_nan=True)
"""``dumps(value)``: compact JSON as stored in text columns."""


def loads(text: str | None) -> JSON:
    return None if text is None else json.loads(text)


@dataclass(frozen=True, slots=True)
class GraphRecord:
    """A task graph and (when asked for) its jobs."""

    id: int
    state: str
    routing: str
    created_at: float
    finished_at: float | None
    jobs_total: int
    jobs_done: int
    stalled_at: float | None = None
    jobs: tuple[JobRecord, ...] = ()

    def to_json(self) -> dict[str, JSON]:
        return {
            "id": self.id,
            "state": self.state,
            "routing": self.routing,
            "created_at": iso(self.created_at), "finished_at": iso(self.finished_at),
            "jobs_total": self.jobs_total, "jobs_done": self.jobs_done,
            "stalled": self.stalled_at is not None,
            "stalled_at": iso(self.stalled_at),
            "jobs": [j.to_json() for j in self.jobs],
        }


@dataclass(frozen=True)
class Assignment:
    """What is placed on a worker: the jobs it did not know yet, and (``active``, when
    looked up) every attempt dispatched to or running on it — any other attempt it
    holds is stale (canceled, timed out or fenced) and must stop."""

    jobs: list[ClaimedJob]
    active: frozenset[tuple[int, int]] | None = None
