"""``Yard``: the Python API — one explicit application object, no global state."""

from __future__ import annotations

import getpass
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any, ParamSpec, TypeVar

from taskyard.api.config import default_url
from taskyard.api.graph_builder import Graph
from taskyard.api.handler_import import verify_handler
from taskyard.api.handles import JobHandle, wait_until
from taskyard.api.submissions import SubmitOptions, submit_batch
from taskyard.api.tasks import (
    TaskFunction,
    as_task,
    function_handler,
    task_type_spec,
    type_name_of,
)
from taskyard.model.errors import InvalidInput, NotFound
from taskyard.model.records import (
    EventRecord,
    GraphRecord,
    JobRecord,
    JobSubmission,
    TaskTypeSpec,
    WorkerRecord,
)
from taskyard.model.tracing import current_context
from taskyard.store import Connections, MovableClock, Store, open_store

# Start-up time: what a CLI submit does not use is imported by the methods that use it
# (the scheduling cycle and its placement logic, explain, apply, schedules' cron).
if TYPE_CHECKING:
    from taskyard.api.apply import Declarations
    from taskyard.core.explain import Reason
    from taskyard.model.schedules import ScheduleRecord
    from taskyard.scheduler.cycle import CycleReport
    from taskyard.store.transitions.backfills import Backfill

P = ParamSpec("P")
R = TypeVar("R")
EVENT_MAINTENANCE = 0.25
"""Seconds between maintenance steps in cycles run on submit (placement is every time)."""


def user() -> str:
    """Who acts, when the caller does not say: the operating system's user name."""
    try:
        return getpass.getuser()
    except (OSError, KeyError):  # no user name in the environment nor the password file
        return f"uid {os.getuid()}"


class Yard:
    """A handle on one taskyard database: register task types, submit and follow jobs.

    ``Yard(url)`` with ``url`` like ``sqlite:///taskyard.db`` or
    ``postgresql://user@host/db``; without it, ``$TASKYARD_DB`` or the default.
    """

    def __init__(self, url: str | None = None, *, inline_cycle: bool = True,
                 clock: MovableClock | None = None,
                 connections: Connections | None = None) -> None:
        """``clock``: a :class:`MovableClock` to move the database clock in tests (leases
        run out, delayed jobs come due, without waiting). ``connections``: the pool's
        size and where wake-ups are listened for (PostgreSQL; without it and without
        ``url``, ``$TASKYARD_LISTEN_DB`` is the listening URL, as on the CLI)."""
        if connections is None and url is None and os.environ.get("TASKYARD_LISTEN_DB"):
            connections = Connections(listen_url=os.environ["TASKYARD_LISTEN_DB"])
        self.url = url or default_url()
        self.store: Store = open_store(self.url, clock=clock, connections=connections)
        self.inline_cycle = inline_cycle
        self._declared: dict[str, TaskTypeSpec] = {}

    def init(self) -> None:
        """Create or migrate the schema (idempotent) and register declared task types."""
        self.store.init_schema()
        self._sync_declared()

    def close(self) -> None:
        self.store.close()

    def __enter__(self) -> Yard:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def add_task_type(self, name: str, handler: str, *, verify: bool = True,
                      **policy: Any) -> TaskTypeSpec:
        """Create or update a task type; ``policy`` takes :class:`TaskTypeSpec` fields."""
        spec = task_type_spec(name, handler, policy)
        if verify:
            verify_handler(handler)
        return self.store.task_types.put(spec)

    def apply(self, doc: Any, *, verify: bool = True) -> Declarations:
        """Create or update what a configuration document declares (``taskyard apply``):
        task types, pools and schedules, all validated and written in one transaction
        (a document with one bad entry changes nothing)."""
        from taskyard.api.apply import parse_config  # noqa: PLC0415 - start-up time
        from taskyard.model.schedules import definition_from_mapping  # noqa: PLC0415

        decl = parse_config(doc)
        if verify:
            for spec in decl.task_types:
                verify_handler(spec.handler)
        schedules = [definition_from_mapping(str(n), body)
                     for n, body in (decl.schedules or {}).items()]
        with self.store.write() as tx:  # one bad entry changes nothing
            tx.task_types.put_many(decl.task_types, decl.pools)
            tx.schedules.put_many(schedules)
        return decl

    def task_type(self, name: str | None = None,
                  **policy: Any) -> Callable[[Callable[P, R]], TaskFunction[P, R]]:
        """Decorator: declare a Python function as a task type (registered by :meth:`init`
        or the first submit). The function must live in an importable module. It stays
        callable as it was, and gains ``submit(*args, **kwargs)`` (a :class:`JobHandle`),
        ``submit_many(calls)`` and ``options(**submit_options)``."""

        def register(func: Callable[P, R]) -> TaskFunction[P, R]:
            handler = function_handler(func)
            type_name = name or func.__name__
            spec = task_type_spec(type_name, handler, policy)
            as_task(self, type_name, func)
            self._declared[type_name] = spec
            return func  # type: ignore[return-value]  # as_task gave it the rest

        return register

    def _sync_declared(self) -> None:
        while self._declared:
            _, spec = self._declared.popitem()
            self.store.task_types.put(replace(spec, pools=tuple(spec.pools)))

    def submit(
        self,
        type: str | Callable[..., Any],
        args: dict[str, Any] | None = None,
        *,
        priority: int = 0, run_after: float | str | None = None,
        pools: Sequence[str] | None = None, locks: Sequence[str] = (),
        timeout: float | str | None = None,
        unique_key: str | None = None, unique_for: float | str | None = None,
        on_duplicate: str = "existing",
        connection: Any = None,
        traceparent: str | None = None, tracestate: str | None = None,
    ) -> int:
        """Submit one job; returns its id. ``run_after``: epoch seconds, a duration or ISO time.
        ``timeout``: per attempt, seconds or a duration (``5m``); None keeps the type's.

        ``unique_key``: while a job of this type with this key has not ended (and, with
        ``unique_for``, for that long after it was created) no other is created: the
        submit returns that job's id (``on_duplicate="existing"``) or raises Conflict
        (``"reject"``). ``connection``: submit inside the caller's own transaction on
        this PostgreSQL database (a SQLAlchemy Connection or a psycopg 3 connection):
        the job exists once the caller commits, never if it rolls back. ``traceparent``,
        ``tracestate``: its W3C trace context (default: the current span's, docs/tracing.md)."""
        options = SubmitOptions(priority, run_after, pools, locks, timeout, unique_key,
                                unique_for, on_duplicate, connection, traceparent, tracestate)
        (job_id,) = self.enqueue(type, [args or {}], options)
        return job_id

    def submit_many(self, type: str | Callable[..., Any] | Sequence[Mapping[str, Any]],
                    args_list: Sequence[dict[str, Any]] | None = None, *, priority: int = 0,
                    pools: Sequence[str] | None = None, **options: Any) -> list[int]:
        """Jobs in one transaction, all or none: per args mapping, or jobs alone (submit_batch)."""
        if args_list is None:
            self._sync_declared()
            return submit_batch(type, self.store, self._submit, (priority, pools, options))
        return self.enqueue(type, args_list, SubmitOptions.of(  # type: ignore[arg-type]
            "submit_many", priority=priority, pools=pools, **options))

    def enqueue(self, type: str | Callable[..., Any], args_list: Sequence[Any],
                options: SubmitOptions) -> list[int]:
        """Submit one job of ``type`` per args mapping, with ``options``; their ids."""
        if options.connection is not None and self.store.backend == "sqlite":
            # Before the declared types are written: that write would wait for the
            # caller's own SQLite transaction, for ever (and its workers with it).
            raise InvalidInput("connection: transactional submit needs PostgreSQL; on "
                               "SQLite, submit after your own transaction commits")
        subs = options.submissions(type_name_of(type, "submit"), args_list, self.store.now)
        self._sync_declared()
        if options.connection is not None:
            # The caller's transaction: never the cycle in it (it would hold the global
            # lock until the caller commits); the scheduler is woken by that commit.
            with self.store.joined(options.connection) as tx:
                return tx.jobs.submit(subs)
        return self._submit(subs)

    def handle(self, job_id: int) -> JobHandle:
        """A :class:`JobHandle` on job ``job_id`` (to wait for its result)."""
        return JobHandle(self, job_id)

    def _submit(self, subs: Sequence[JobSubmission]) -> list[int]:
        """Seed 000 runs schedule() on job creation, in the submit's own unit of work:
        a job reaches its worker with one commit (Store.submit)."""
        if self.inline_cycle and self.store.driver.locks_in_insert:  # loaded before the lock
            from taskyard.scheduler.cycle import run_cycle  # noqa: PLC0415 - start-up
        with self.store.submit(subs, placing=self.inline_cycle) as submitted:
            if submitted.cycle is not None:
                from taskyard.scheduler.cycle import run_cycle  # noqa: PLC0415 - start-up
                run_cycle(submitted.cycle, holder="inline", maintenance_every=EVENT_MAINTENANCE,
                          record=False)
        return submitted.ids

    def get_job(self, job_id: int) -> JobRecord:
        job = self.store.jobs.get(job_id)
        if job is None:
            raise NotFound(f"no job {job_id}")
        return job

    def wait(self, job_id: int, timeout: float | None = None) -> JobRecord:
        """Block until the job is in a final state; TimeoutError after ``timeout`` seconds.
        Woken by the commits that write events, not a polling loop (see api/handles.py)."""
        return wait_until(self.store, lambda: self.store.jobs.ended(job_id), timeout,
                          f"job {job_id} has not ended")

    def explain(self, job_id: int) -> list[Reason]:
        """Why the job is not running yet: dependencies, locks, capacity, queue, run_after."""
        from taskyard.scheduler.explain import explain_job  # noqa: PLC0415 - start-up time

        return explain_job(self.store, job_id)

    def jobs(self, *, state: str | None = None, type: str | None = None,
             limit: int = 100) -> list[JobRecord]:
        return self.store.jobs.list(state=state, type=type, limit=limit)

    def cancel(self, job_id: int) -> JobRecord:
        return self.store.jobs.cancel(job_id)

    def retry(self, job_id: int) -> JobRecord:
        job = self.store.retries.retry(job_id)
        self._cycle()
        return job

    def approve(self, job_id: int, *, note: str | None = None, by: str | None = None) -> JobRecord:
        """Approve an awaiting approval (it succeeds); ``by``: who (default: the user)."""
        return self._decide(job_id, "approved", note, by)

    def deny(self, job_id: int, *, note: str | None = None, by: str | None = None) -> JobRecord:
        """Deny an awaiting approval (it fails; its failure edges apply)."""
        return self._decide(job_id, "denied", note, by)

    def _decide(self, job_id: int, decision: str, note: str | None, by: str | None) -> JobRecord:
        from taskyard.core.waits import Decision  # noqa: PLC0415 - start-up time

        job = self.store.waits.decide(job_id, Decision(decision), note=note, by=by or user())
        self._cycle()
        return job

    def signal(self, name: str, key: str | None = None, payload: Any = None, *,
               by: str | None = None) -> list[int]:
        """Send a signal: every wait it matches succeeds with ``payload`` as its result,
        and it is kept for the waits of graphs submitted before it that await it later.
        Returns the ids of the jobs it completed."""
        completed = self.store.waits.signal(name, key, payload, by=by or user())
        self._cycle()
        return completed

    def submit_graph(self, doc: Mapping[str, Any] | Graph) -> int:
        """Submit a task graph — a :class:`Graph` built in Python, or TaskCluster's
        format as a mapping; returns the graph id."""
        self._sync_declared()
        doc = doc.document() if isinstance(doc, Graph) else doc
        graph_id = self.store.graphs.submit(doc, trace_context=current_context())
        self._cycle()
        return graph_id

    def add_graph_tasks(self, graph_id: int, doc: Mapping[str, Any] | Graph) -> list[int]:
        """Add tasks (a :class:`Graph`, or ``{"tasks": {...}}``) to a graph; returns the
        new job ids. A Graph's tasks may require labels already in the graph."""
        self._sync_declared()
        ids = self.store.graphs.add_tasks(
            graph_id, doc.document(tasks_only=True) if isinstance(doc, Graph) else doc,
            trace_context=current_context())
        self._cycle()
        return ids

    def graph(self, graph_id: int) -> GraphRecord:
        return self.store.graphs.get(graph_id)

    def graphs(self, *, state: str | None = None, limit: int = 100) -> list[GraphRecord]:
        return self.store.graphs.list(state=state, limit=limit)

    def cancel_graph(self, graph_id: int) -> GraphRecord:
        return self.store.graphs.cancel(graph_id)

    def wait_graph(self, graph_id: int, timeout: float | None = None) -> GraphRecord:
        """Block until the graph is finished, blocked or canceled (woken as :meth:`wait`)."""
        def settled() -> bool | None:
            return self.store.graphs.get(graph_id, jobs=False).state != "running" or None
        wait_until(self.store, settled, timeout, f"graph {graph_id} still running")
        return self.store.graphs.get(graph_id)

    def events(self, *, after_id: int | None = None, topic: str | None = None,
               limit: int = 1000) -> list[EventRecord]:
        return self.store.events.list(after_id=after_id, topic=topic, limit=limit)

    def _cycle(self) -> None:
        from taskyard.scheduler.cycle import schedule  # noqa: PLC0415 - start-up time

        if self.inline_cycle:
            schedule(self.store, holder="inline", maintenance_every=EVENT_MAINTENANCE)

    def workers(self, include_gone: bool = False) -> list[WorkerRecord]:
        return self.store.workers.list(include_gone=include_gone)

    def pools(self) -> list[dict[str, Any]]:
        """Every pool with its live workers' names, capacity and capacity used, and
        whether it is paused."""
        workers = self.store.workers.list()
        paused = set(self.store.task_types.paused_pools())
        found = []
        for name in self.store.task_types.pools():
            members = [w for w in workers if name in w.pools]
            found.append({"name": name, "workers": [w.name for w in members],
                          "capacity": sum(w.capacity for w in members),
                          "used": sum(w.used for w in members), "paused": name in paused})
        return found

    def pause_pool(self, name: str, *, paused: bool = True) -> dict[str, Any]:
        """Place nothing new in pool ``name`` (running jobs go on); ``paused=False``
        resumes it. Returns the pool as :meth:`pools` shows it."""
        self.store.task_types.pause_pool(name, paused=paused)
        if not paused:
            self._cycle()
        return next(p for p in self.pools() if p["name"] == name)

    def schedule(self) -> CycleReport | None:
        """Run one scheduling cycle now (None if another is running)."""
        from taskyard.scheduler.cycle import schedule  # noqa: PLC0415 - start-up time

        return schedule(self.store, holder="api")

    # Schedules (store/transitions/schedules.py); the CLI's `schedule` group calls these.
    def add_schedule(self, name: str, type: str | Callable[..., Any],
                     **options: Any) -> ScheduleRecord:
        """Create (or with ``replace=True`` redefine) a schedule of a task type (a name or
        a task function). Options as :meth:`Schedules.add`: every, cron, args, timezone,
        priority, catchup, paused."""
        self._sync_declared()
        record = self.store.schedules.add(name, type_name_of(type, f"schedule {name!r}"),
                                          **options)
        self._cycle()
        return record

    def backfill(self, schedule: str, start: float | str, end: float | str = "now", *,
                 max_active: int | None = None, dry_run: bool = False,
                 progress: Callable[[int, int], None] | None = None) -> Backfill:
        """One job per tick of ``schedule`` in ``[start, end)`` (epoch seconds, ISO 8601
        times, ``now``, or durations ago: ``7d``), oldest first, as one graph; a tick
        that has a job gets none. ``max_active``: at most that many pending, dispatched or
        running at once. ``dry_run``: the ticks only, nothing written."""
        from taskyard.api.backfill import backfill  # noqa: PLC0415 - start-up time

        done = backfill(self.store, schedule, start, end, max_active=max_active,
                        dry_run=dry_run, progress=progress)
        self._cycle()
        return done

    def cancel_backfill(self, schedule: str) -> int:
        """Cancel what remains of the schedule's backfills; how many jobs were canceled."""
        return self.store.backfills.cancel(schedule)

    def list_schedules(self) -> list[ScheduleRecord]:
        return self.store.schedules.list()

    def get_schedule(self, name: str) -> ScheduleRecord:
        found = self.store.schedules.get(name)
        if found is None:
            raise NotFound(f"no schedule {name!r}")
        return found

    def pause_schedule(self, name: str) -> ScheduleRecord:
        return self.store.schedules.pause(name)

    def resume_schedule(self, name: str) -> ScheduleRecord:
        record = self.store.schedules.resume(name)
        self._cycle()
        return record

    def run_schedule(self, name: str) -> int:
        """Run schedule ``name`` now, once, whatever its next run (kept): a job of its
        type, args and priority that counts among its jobs; returns the job's id."""
        found = self.get_schedule(name)
        return self._submit([JobSubmission(found.type, dict(found.args), found.priority,
                                           schedule_name=name)])[0]

    def delete_schedule(self, name: str) -> None:
        self.store.schedules.delete(name)

    def apply_schedules(self, decls: Mapping[str, Mapping[str, Any]]) -> list[ScheduleRecord]:
        """Create or update schedules from an ``apply`` file's ``schedules`` section."""
        return self.store.schedules.apply(decls)
