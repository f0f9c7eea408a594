"""The values the drivers' transitions take and give back: one params value per call,
the same shapes on both backends (River's ``riverdriver`` params structs)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from taskyard.store.driver.cycle_params import CycleStart


class Event(NamedTuple):
    """One row of the event log, as a transition announces it: built by the constructors
    of :mod:`taskyard.store.transitions.events` (one per topic, so that each payload has
    one shape), buffered by the unit of work and written by its driver
    (``Driver.end_unit``, or a statement that writes the buffer on its way: a dispatch)."""

    topic: str
    routing_key: str
    payload: str
    """The payload, as JSON text."""
    job_id: int | None
    graph_id: int | None


NO_ID = '{"job_id":0'
"""How the payload of a job's event template begins (``InsertJobs.announce``): the job
id 0 stands for the one its insert gives the job."""
EVENT_TYPES = ("text", "text", "text", "bigint", "bigint")
"""Column types of an :class:`Event` as a row: topic, routing key, payload, job, graph."""


@dataclass(frozen=True, order=True, slots=True)
class EventCursor:
    """Where a follower is: after the event ``id`` of transaction ``tx`` (0 on SQLite)."""

    tx: int = -1
    id: int = 0


@dataclass(frozen=True, slots=True)
class EndUnit:
    """What a unit of work leaves to its end: its buffered events, the channels to wake
    when it commits, and whether the driver commits it too (a unit of its own; never a
    caller's transaction)."""

    events: Sequence[Event]
    channels: Sequence[str]
    commit: bool


@dataclass(frozen=True, slots=True)
class TypeVersion:
    """A task type as a job's row was built from it: its name and the version of its
    ``task_types`` row (PostgreSQL: ``xmin``; SQLite: the row itself)."""

    name: str
    version: Any


@dataclass(frozen=True, slots=True)
class InsertJobs:
    """Job rows to insert, all or nothing, in the order of creation."""

    columns: tuple[str, ...]
    """Every key of ``schema/job_rows.py:job_row`` (the rows' values are in this order)."""
    rows: Iterable[tuple[Any, ...]]
    """The rows; a bulk may be streamed (computed as it is written)."""
    count: int
    as_built: TypeVersion | None = None
    """Insert only while the rows' task type (one for all) is still as they were built
    from it (a type read from the driver's cache): else nothing is written, and a
    row's refusal, built from the type as it was, is not raised."""
    announce: Event | None = None
    """The ``job-pending`` event of each row, with 0 for the job's id: the insert writes
    one per row, with the id it gives the job, in the order of the rows (with one row:
    only with ``as_built``; never with ``skip_taken_keys``)."""
    placing: bool = False
    """The caller runs the scheduling cycle next, in the same unit of work, unless no
    live worker may take the jobs (say whether one may) or they were placed with their
    insert (``InsertedJobs.placed``). PostgreSQL tries the cycle's lock with a lone job
    and, when the unit has run nothing yet, may write it in a transaction of its own
    (postgresql/jobs.py): the unit must then do nothing more but that cycle."""
    skip_taken_keys: bool = False
    """A row whose ``dedup_key`` a job holds already is left out (a schedule's ticks)."""


@dataclass(frozen=True, slots=True)
class InsertedJobs:
    """What :class:`InsertJobs` wrote."""

    ids: list[int | None]
    """The new jobs' ids, in the order of the rows (None: a row left out); empty when
    nothing was written (the type was not as built)."""
    live_worker: bool = False
    """(``placing``) A live worker exists: the cycle may place the jobs. None exists: no
    cycle to run and nobody to wake; a worker registering now commits after this unit
    and runs a cycle that sees them (the worker gate)."""
    cycle: CycleStart | None = None
    """(``placing``, PostgreSQL) The cycle's lock, tried with the insert."""
    placed: bool = False
    """(``placing``) The insert placed the jobs itself, as the cycle would have from the
    same state, with its lock (postgresql/jobs.py): no cycle is needed."""
    committed: bool = False
    """(``placing``, PostgreSQL) The insert was the unit's whole transaction and
    committed it (postgresql/jobs.py): the unit writes nothing more, and the cycle it
    asks for (``cycle.held``) runs in a unit of its own."""


@dataclass(frozen=True, slots=True)
class Dispatch:
    """Placements to write: pending → dispatched with a new attempt, per worker (ids in
    placement order)."""

    by_worker: dict[int, list[int]]
    names: dict[int, str]
    """Workers' names, for their attempts."""
    quiet: frozenset[str] = frozenset()
    """Channels not to wake: their worker takes what is placed there itself."""
    events: list[Event] = field(default_factory=list)
    """The unit's buffered events, which the dispatch may write on its way (taken
    out of the list when it does)."""
    scans_off: bool = False
    """PostgreSQL: the planner's scans are off; the last statement turns them on."""


class AttemptStart(NamedTuple):
    """A worker started an attempt ``ago`` seconds before it reported it."""

    job_id: int
    attempt: int
    ago: float


@dataclass(frozen=True, slots=True)
class StartAttempts:
    """Attempts a worker started: dispatched → running, fenced by the attempt number,
    the job's state, the worker and its lease."""

    worker_id: int
    starts: Sequence[AttemptStart]


class AttemptEnd(NamedTuple):
    """An attempt's end as it is written: the job's state after it (the attempt's, or
    pending again after ``retry_delay`` seconds when a retry is due)."""

    job_id: int
    attempt: int
    state: str
    """The attempt's end state (succeeded, failed, error, canceled)."""
    exit_code: int | None
    result: str | None
    """The handler's result, as JSON text."""
    error: str | None
    retry_delay: float | None
    """A retry is due, after this many seconds (the job goes back to pending)."""
    started_ago: float | None
    """Its start is reported with its end (the job ends straight from dispatched)."""
    stdout_tail: str | None
    stderr_tail: str | None


@dataclass(frozen=True, slots=True)
class EndAttempts:
    """Attempts a worker ended: running (or dispatched, see ``started_ago``) → their end,
    fenced by the attempt number, the job's state, the worker and its lease."""

    worker_id: int
    ends: Sequence[AttemptEnd]


@dataclass(frozen=True, slots=True)
class EndedAttempts:
    """What :class:`EndAttempts` ended: the jobs' rows (id, attempt, state, graph, routing,
    schedule) and, where the driver read them with the ends, the dependency edges from
    every job it was given (child, parent, condition; streamed, to be read before the
    unit's next statement; the caller keeps those of the jobs that ended). None: the
    caller reads the edges itself. ``waiting``: likewise, every waiting job that
    requires one of them, locked as ``lock_waiting`` locks it, with its columns."""

    rows: list[tuple[Any, ...]]
    edges: Iterator[tuple[Any, ...]] | None = None
    waiting: list[tuple[Any, ...]] | None = None


@dataclass(frozen=True, slots=True)
class FailOverdue:
    """An attempt past its deadline fails with exit code 130 (seed 001): its job is
    pending again after ``retry_delay`` seconds (None: no retry, it fails)."""

    job_id: int
    attempt: int
    retry_delay: float | None
    why: str


@dataclass(frozen=True, slots=True)
class RegisterWorker:
    """A worker joins with a lease of ``lease_seconds`` (``pools``: its JSON list)."""

    name: str
    hostname: str
    pid: int | None
    pools: str
    capacity: int
    lease_seconds: float
    unpaced_prefetch: int | None = None
    """The most it accepts queued until it declares a window (None: it never queues)."""


@dataclass(frozen=True, slots=True)
class ReadWorkers:
    """Workers to read: one (``worker_id``), the live ones, or all (``include_gone``)."""

    worker_id: int | None = None
    include_gone: bool = False


@dataclass(frozen=True, slots=True)
class ReportStage:
    """A stage of an attempt began (``running``) or ended; ``result``: JSON text."""

    worker_id: int
    job_id: int
    attempt: int
    name: str
    state: str
    result: str | None


@dataclass(frozen=True, slots=True)
class SetGraphState:
    """Graph ``graph_id`` enters ``state`` (finished, blocked, canceled, running)."""

    graph_id: int
    state: str


@dataclass(frozen=True, slots=True)
class ReadKeyHolders:
    """Unique keys a submit looks up: (type, key, window in seconds; 0: none)."""

    keys: Sequence[tuple[str, str, float]]
    joined: bool = False
    """The unit of work runs in a caller's transaction (Store.joined)."""


@dataclass(frozen=True, slots=True)
class ReadPriorRuns:
    """A prerequisite's runs a launch may reuse: its type, its args (as stored) and how
    old a success may be (``cache``, seconds)."""

    type: str
    args: str
    cache: float


@dataclass(frozen=True, slots=True)
class AgePending:
    """Anti-starvation aging: +1 priority per full ``period`` (seconds) a pending job
    waited, for the ``limit`` oldest pending jobs."""

    period: float
    limit: int


@dataclass(frozen=True, slots=True)
class ReadJobs:
    """Jobs to read: by id, graph, state, type; ``due``: pending ones due now; oldest
    first unless ``newest_first``; at most ``limit``, from after the id ``after`` in
    that order (a keyset page)."""

    job_id: int | None = None
    graph_id: int | None = None
    state: str | None = None
    type: str | None = None
    due: bool = False
    newest_first: bool = False
    limit: int | None = None
    after: int | None = None


@dataclass(frozen=True, slots=True)
class ReadGraphs:
    """Graphs to read: one (``graph_id``), or the newest ``limit`` (of ``state``)."""

    graph_id: int | None = None
    state: str | None = None
    limit: int = 100


@dataclass(frozen=True, slots=True)
class ReadEvents:
    """Stored events to read, in id order: after an id, of a topic, graph or job."""

    after_id: int | None = None
    topic: str | None = None
    graph_id: int | None = None
    job_id: int | None = None
    limit: int = 1000


@dataclass(frozen=True, slots=True)
class ReopenJob:
    """A job that ended runs (or waits) again: its new ``state``, its unmet edges and
    failed ones; ``was``: the state it was read in (the guard)."""

    job_id: int
    state: str
    unmet: int
    fails: int = 0
    was: str | None = None


@dataclass(frozen=True, slots=True)
class PutSchedule:
    """A schedule's definition as written (``args``: JSON text)."""

    name: str
    type: str
    args: str
    priority: int
    every: float | None
    cron: str | None
    timezone: str
    catchup: str
    paused: bool
    current_interval: float | None
    next_run: float
    catchup_window: float | None = None
    """Missed ticks older than this many seconds are dropped (None: no window)."""
    overlap: str = "allow"
    """What a tick does while the last job has not ended (core/ticks.py:Overlap)."""


@dataclass(frozen=True, slots=True)
class RecordRun:
    """A scheduled run ended in ``outcome``; an adaptive schedule moves to ``interval``
    and ``next_run`` (None: it does not move)."""

    name: str
    outcome: str
    finished_at: float | None
    interval: float | None = None
    next_run: float | None = None


@dataclass(frozen=True, slots=True)
class SuspendJobs:
    """Active jobs (dispatched or running) of lost or stopped workers become suspended,
    their attempts lost (``why``); ``losses``: each job's worker-loss count after this
    one, by job id (core decides it)."""

    losses: dict[int, int]
    why: str


@dataclass(frozen=True, slots=True)
class CancelJob:
    """Job ``job_id``, found in ``state``, is canceled (guarded by that state)."""

    job_id: int
    state: str


@dataclass(frozen=True, slots=True)
class UpdateDependents:
    """Waiting jobs whose parents ended: their counters move by ``resolved`` met edges
    and ``fails`` failed ones, and they enter ``state`` (None: they still wait; pending:
    released; a final state: ended, with ``why``)."""

    ids: Sequence[int]
    resolved: int
    fails: int
    state: str | None
    why: str | None = None


@dataclass(frozen=True, slots=True)
class Placed:
    """What is placed on a worker: ``rows`` of the jobs it does not know yet (as the
    details statement reads them), or None with their ``ids`` when it must read them;
    ``active``: every attempt dispatched to or running on it."""

    rows: list[tuple[Any, ...]] | None
    ids: list[int]
    active: frozenset[tuple[int, int]]
