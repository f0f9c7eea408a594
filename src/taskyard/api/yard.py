"""``Yard``: the Python API — one explicit application object, no global state."""

from __future__ import annotations

import importlib
import os
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import fields, replace
from typing import Any, TypeVar

from taskyard.api.apply import Declarations, parse_config
from taskyard.api.config import default_url
from taskyard.core.durations import DurationError, parse_duration, parse_when
from taskyard.core.explain import Reason
from taskyard.core.handlers import HandlerSpecError, parse_handler
from taskyard.core.states import TERMINAL
from taskyard.model.errors import InvalidInput, NotFound
from taskyard.model.records import (
    EventRecord,
    GraphRecord,
    JobRecord,
    JobSubmission,
    TaskTypeSpec,
    WorkerRecord,
)
from taskyard.model.schedules import ScheduleRecord, definition_from_mapping
from taskyard.scheduler.cycle import CycleReport, run_cycle, schedule
from taskyard.scheduler.explain import explain_job
from taskyard.store import MovableClock, Store, Tx, open_store

F = TypeVar("F", bound=Callable[..., Any])
EVENT_MAINTENANCE = 0.25
"""Seconds between maintenance steps in cycles run on submit (placement is every time)."""
_POLICY_FIELDS = {f.name for f in fields(TaskTypeSpec)} - {"name", "handler"}


def verify_handler(handler: str) -> None:
    """Check that a ``python:`` handler imports here; InvalidInput names what is missing."""
    try:
        spec = parse_handler(handler)
    except HandlerSpecError as exc:
        raise InvalidInput(str(exc)) from None
    if spec.kind != "python":
        return
    if "" not in sys.path and os.getcwd() not in sys.path:
        # Workers import handlers relative to their working directory; so do we.
        sys.path.insert(0, os.getcwd())
    try:
        module = importlib.import_module(spec.module)
    except Exception as exc:
        raise InvalidInput(
            f"handler {handler!r}: module {spec.module!r} cannot be imported "
            f"({type(exc).__name__}: {exc})"
        ) from None
    target: Any = module
    for part in spec.function.split("."):
        target = getattr(target, part, None)
    if not callable(target):
        raise InvalidInput(
            f"handler {handler!r}: module {spec.module!r} has no function {spec.function!r}"
        )


def _job_timeout(value: float | str | None) -> float | None:
    """Seconds of a per-job timeout; InvalidInput unless a positive duration."""
    if value is None:
        return None
    try:
        seconds = parse_duration(value, field="timeout")
    except DurationError as exc:
        raise InvalidInput(f"submit: {exc}") from None
    if seconds <= 0:
        raise InvalidInput(f"submit: timeout: {value!r} must be more than 0 seconds")
    return seconds


class Yard:
    """A handle on one taskyard database: register task types, submit and follow jobs.

    ``Yard(url)`` with ``url`` like ``sqlite:///taskyard.db`` or
    ``postgresql://user@host/db``; without it, ``$TASKYARD_DB`` or the default.
    """

    def __init__(self, url: str | None = None, *, inline_cycle: bool = True,
                 clock: MovableClock | None = None) -> None:
        """``clock``: a :class:`MovableClock` to move the database clock in tests (leases
        run out, delayed jobs come due, without waiting)."""
        self.url = url or default_url()
        self.store: Store = open_store(self.url, clock=clock)
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

    def add_task_type(
        self, name: str, handler: str, *, verify: bool = True, **policy: Any
    ) -> TaskTypeSpec:
        """Create or update a task type; ``policy`` takes :class:`TaskTypeSpec` fields."""
        unknown = set(policy) - _POLICY_FIELDS
        if unknown:
            raise InvalidInput(f"task type {name!r}: unknown fields {sorted(unknown)}")
        if "pools" in policy:
            policy["pools"] = tuple(policy["pools"])
        if "locks" in policy:
            policy["locks"] = tuple(policy["locks"])
        if verify:
            verify_handler(handler)
        return self.store.task_types.put(TaskTypeSpec(name=name, handler=handler, **policy))

    def apply(self, doc: Any, *, verify: bool = True) -> Declarations:
        """Create or update what a configuration document declares (``taskyard apply``):
        task types, pools and schedules, all validated and written in one transaction
        (a document with one bad entry changes nothing)."""
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

    def task_type(self, name: str | None = None, **policy: Any) -> Callable[[F], F]:
        """Decorator: declare a Python function as a task type (registered by :meth:`init`
        or the first :meth:`submit`). The function must live in an importable module."""

        def register(func: F) -> F:
            module = func.__module__
            if module == "__main__":
                raise InvalidInput(
                    f"task type for {func.__qualname__}: define it in an importable module, "
                    "not __main__, so that workers can import it"
                )
            if "<locals>" in func.__qualname__:
                raise InvalidInput(
                    f"task type for {func.__qualname__}: define it at module level, "
                    "so that workers can import it"
                )
            type_name = name or func.__name__
            unknown = set(policy) - _POLICY_FIELDS
            if unknown:
                raise InvalidInput(f"task type {type_name!r}: unknown fields {sorted(unknown)}")
            spec = TaskTypeSpec(type_name, f"python:{module}:{func.__qualname__}", **policy)
            self._declared[type_name] = spec
            func.__taskyard_type__ = type_name  # type: ignore[attr-defined]
            return func

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
        priority: int = 0,
        run_after: float | str | None = None,
        pools: Sequence[str] | None = None,
        locks: Sequence[str] = (),
        timeout: float | str | None = None,
    ) -> int:
        """Submit one job; returns its id. ``run_after``: epoch seconds, a duration or ISO time.
        ``timeout``: per attempt, seconds or a duration (``5m``); None keeps the type's."""
        type_name = getattr(type, "__taskyard_type__", type)
        if not isinstance(type_name, str):
            raise InvalidInput(f"submit: {type!r} is not a task type name")
        seconds = _job_timeout(timeout)
        self._sync_declared()
        when: float | None
        if isinstance(run_after, str):
            try:
                when = parse_when(run_after, now=self.store.now())
            except DurationError as exc:
                raise InvalidInput(str(exc)) from None
        else:
            when = run_after
        sub = JobSubmission(
            type=type_name,
            args=dict(args or {}) if args is None or isinstance(args, dict) else args,
            priority=priority,
            pools=tuple(pools) if pools else None,
            run_after=when,
            locks=tuple(locks),
            timeout=seconds,
        )
        (job_id,) = self._submit([sub])
        return job_id

    def submit_many(
        self, type: str | Callable[..., Any], args_list: Sequence[dict[str, Any]], *,
        priority: int = 0, pools: Sequence[str] | None = None,
    ) -> list[int]:
        """Submit one job per args mapping in one transaction (all or none); returns the
        ids in order. The batch counterpart of :meth:`submit`, for bulk enqueueing."""
        type_name = getattr(type, "__taskyard_type__", type)
        if not isinstance(type_name, str):
            raise InvalidInput(f"submit: {type!r} is not a task type name")
        self._sync_declared()
        chosen = tuple(pools) if pools else None
        return self._submit([
            JobSubmission(type=type_name, args=dict(a), priority=priority, pools=chosen)
            for a in args_list
        ])

    def _submit(self, subs: Sequence[JobSubmission]) -> list[int]:
        """Seed 000 runs schedule() on job creation: in the submit's own transaction,
        so that a job reaches its worker with one commit."""
        with self.store.write() as tx:
            ids = tx.jobs.submit(subs, cycle_next=self.inline_cycle)
            if self.inline_cycle and not self._place(tx):
                tx.notify("scheduler")  # the cycle is busy elsewhere: let it know
            return ids

    def get_job(self, job_id: int) -> JobRecord:
        job = self.store.jobs.get(job_id)
        if job is None:
            raise NotFound(f"no job {job_id}")
        return job

    def wait(self, job_id: int, timeout: float | None = None) -> JobRecord:
        """Block until the job is in a final state; TimeoutError after ``timeout`` seconds."""
        deadline = None if timeout is None else time.monotonic() + timeout
        delay = 0.002
        while True:
            job = self.get_job(job_id)
            if job.state in TERMINAL:
                return job
            if deadline is not None and time.monotonic() >= deadline:
                raise TimeoutError(f"job {job_id} still {job.state} after {timeout}s")
            time.sleep(delay)
            delay = min(delay * 1.5, 0.1)

    def explain(self, job_id: int) -> list[Reason]:
        """Why the job is not running yet: dependencies, locks, capacity, queue, run_after."""
        return explain_job(self.store, job_id)

    def jobs(
        self, *, state: str | None = None, type: str | None = None, limit: int = 100
    ) -> list[JobRecord]:
        return self.store.jobs.list(state=state, type=type, limit=limit)

    def cancel(self, job_id: int) -> JobRecord:
        return self.store.jobs.cancel(job_id)

    def retry(self, job_id: int) -> JobRecord:
        job = self.store.retries.retry(job_id)
        self._cycle()
        return job

    def submit_graph(self, doc: Mapping[str, Any]) -> int:
        """Submit a task graph (TaskCluster's format, as a mapping); returns the graph id."""
        graph_id = self.store.graphs.submit(doc)
        self._cycle()
        return graph_id

    def add_graph_tasks(self, graph_id: int, doc: Mapping[str, Any]) -> list[int]:
        """Add tasks (``{"tasks": {...}}``) to a graph; returns the new job ids."""
        ids = self.store.graphs.add_tasks(graph_id, doc)
        self._cycle()
        return ids

    def graph(self, graph_id: int) -> GraphRecord:
        return self.store.graphs.get(graph_id)

    def graphs(self, *, state: str | None = None, limit: int = 100) -> list[GraphRecord]:
        return self.store.graphs.list(state=state, limit=limit)

    def cancel_graph(self, graph_id: int) -> GraphRecord:
        return self.store.graphs.cancel(graph_id)

    def wait_graph(self, graph_id: int, timeout: float | None = None) -> GraphRecord:
        """Block until the graph is finished, blocked or canceled."""
        deadline = None if timeout is None else time.monotonic() + timeout
        delay = 0.005
        while True:
            graph = self.store.graphs.get(graph_id, jobs=False)
            if graph.state != "running":
                return self.store.graphs.get(graph_id)
            if deadline is not None and time.monotonic() >= deadline:
                raise TimeoutError(f"graph {graph_id} still running after {timeout}s")
            time.sleep(delay)
            delay = min(delay * 1.5, 0.2)

    def events(
        self, *, after_id: int | None = None, topic: str | None = None, limit: int = 1000
    ) -> list[EventRecord]:
        return self.store.events.list(after_id=after_id, topic=topic, limit=limit)

    def _cycle(self) -> None:
        if self.inline_cycle:
            schedule(self.store, holder="inline", maintenance_every=EVENT_MAINTENANCE)

    def _place(self, tx: Tx) -> bool:
        """The cycle inside a submit's transaction; False when it could not run."""
        with tx.cycle() as cycle:
            if cycle is None:
                return False
            run_cycle(cycle, holder="inline", maintenance_every=EVENT_MAINTENANCE,
                      record=False)
        return True

    def workers(self, include_gone: bool = False) -> list[WorkerRecord]:
        return self.store.workers.list(include_gone=include_gone)

    def schedule(self) -> CycleReport | None:
        """Run one scheduling cycle now (None if another is running)."""
        return schedule(self.store, holder="api")

    # Schedules (store/schedules.py); the CLI's `schedule` group calls these.
    def add_schedule(self, name: str, type: str, **options: Any) -> ScheduleRecord:
        """Create (or with ``replace=True`` redefine) a schedule. Options as
        :meth:`Schedules.add`: every, cron, args, timezone, priority, catchup, paused."""
        record = self.store.schedules.add(name, type, **options)
        self._cycle()
        return record

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

    def delete_schedule(self, name: str) -> None:
        self.store.schedules.delete(name)

    def apply_schedules(self, decls: Mapping[str, Mapping[str, Any]]) -> list[ScheduleRecord]:
        """Create or update schedules from an ``apply`` file's ``schedules`` section."""
        return self.store.schedules.apply(decls)
