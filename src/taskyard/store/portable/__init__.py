"""SQL both backends run as written: the transitions of :class:`SharedTransitions`,
which each driver (store/sqlite, store/postgresql) takes on as its own; what a backend
writes differently lives in its package. The statements are SQL text run on the unit
of work's cursor (store/cursor.py), with ``?`` markers, ``{now}`` for the database
clock, the cursor's membership test (``Cursor.member``) for id lists and its row lock
(``Cursor.row_lock``)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from taskyard.store.cursor import Cursor
    from taskyard.store.driver.params import (
    CancelJob,
    EventCursor,
    FailOverdue,
    PutSchedule,
    ReadEvents,
    ReadGraphs,
    ReadJobs,
    ReadWorkers,
    RecordRun,
    ReopenJob,
    ReportStage,
    SetGraphState,
    SuspendJobs,
    UpdateDependents,
)
from taskyard.store.driver.wait_params import EndAwaiting, StartAwaiting
from taskyard.store.portable import (
    cycle,
    definitions,
    dependents,
    events,
    graphs,
    job_reads,
    jobs,
    outbox,
    retention,
    retries,
    schedules,
    stages,
    submissions,
    ticks,
    upkeep,
    waits,
    workers,
)


class SharedTransitions(Protocol):
    """The transitions both drivers run as written: part of the driver interface
    (store/driver/__init__.py:Driver) with their implementation, which each driver's
    class takes on by deriving from this one; it writes the rest itself."""

    expel_expired_workers: Callable[[Cursor], list[int]] = staticmethod(cycle.expel_expired_workers)
    read_overdue: Callable[[Cursor, float], list[tuple[Any, ...]]] = staticmethod(
        cycle.read_overdue)
    fail_overdue: Callable[[Cursor, FailOverdue], bool] = staticmethod(cycle.fail_overdue)
    read_suspended: Callable[[Cursor, int], list[tuple[Any, ...]]] = staticmethod(
        cycle.read_suspended)
    error_suspended: Callable[[Cursor, Sequence[int], str], list[tuple[Any, ...]]] = staticmethod(
        cycle.error_suspended)
    requeue_suspended: Callable[[Cursor, Sequence[int]], int] = staticmethod(
        cycle.requeue_suspended)
    record_cycle: Callable[[Cursor, str], None] = staticmethod(cycle.record_cycle)
    cycles_run: Callable[[Cursor], int] = staticmethod(cycle.cycles_run)
    read_active_of: Callable[[Cursor, Sequence[int]], list[tuple[Any, ...]]] = staticmethod(
        workers.read_active_of)
    suspend_jobs: Callable[[Cursor, SuspendJobs], list[tuple[Any, ...]]] = staticmethod(
        workers.suspend_jobs)
    read_job_state: Callable[[Cursor, int], tuple[Any, ...] | None] = staticmethod(
        jobs.read_job_state)
    cancel_job: Callable[[Cursor, CancelJob], bool] = staticmethod(jobs.cancel_job)
    read_edges_from: Callable[[Cursor, Sequence[int]], Iterator[tuple[Any, ...]]] = staticmethod(
        dependents.read_edges_from)
    lock_waiting: Callable[[Cursor, Sequence[int]], list[tuple[Any, ...]]] = staticmethod(
        dependents.lock_waiting)
    update_dependents: Callable[[Cursor, UpdateDependents], list[tuple[Any, ...]]] = staticmethod(
        dependents.update_dependents)
    current_attempts: Callable[[Cursor, int, Sequence[int]], set[tuple[int, int]]] = (
        staticmethod(workers.current_attempts))
    renew_lease: Callable[[Cursor, int, float], bool] = staticmethod(workers.renew_lease)
    leave: Callable[[Cursor, int, str], bool] = staticmethod(workers.leave)
    read_workers: Callable[[Cursor, ReadWorkers], list[tuple[Any, ...]]] = staticmethod(
        workers.read_workers)
    report_stage: Callable[[Cursor, ReportStage], bool] = staticmethod(stages.report_stage)
    finished_stages: Callable[[Cursor, Sequence[int]], list[tuple[Any, ...]]] = (
        staticmethod(stages.finished_stages))
    count_done: Callable[[Cursor, int, int], tuple[Any, ...] | None] = staticmethod(
        graphs.count_done)
    edge_conditions: Callable[[Cursor, Sequence[int]], list[tuple[Any, ...]]] = staticmethod(
        graphs.edge_conditions)
    failed_from_outside: Callable[[Cursor, int, Sequence[int]], list[int]] = staticmethod(
        graphs.failed_from_outside)
    set_graph_state: Callable[[Cursor, SetGraphState], bool] = staticmethod(
        graphs.set_graph_state)
    read_now: Callable[[Cursor], float] = staticmethod(submissions.read_now)
    recent_starts: Callable[[Cursor, str, str, float, int], list[float]] = staticmethod(
        upkeep.recent_starts)
    record_starts: Callable[[Cursor, Sequence[tuple[str, str]]], None] = staticmethod(
        upkeep.record_starts)
    forget_starts: Callable[[Cursor, float], int] = staticmethod(upkeep.forget_starts)
    stale_graphs: Callable[[Cursor, float, int], list[tuple[Any, ...]]] = staticmethod(
        upkeep.stale_graphs)
    graph_activity: Callable[[Cursor, int], tuple[bool, list[str]]] = staticmethod(
        upkeep.graph_activity)
    flag_stalled: Callable[[Cursor, int], None] = staticmethod(upkeep.flag_stalled)
    retry_policies: Callable[[Cursor, Sequence[int]], list[tuple[Any, ...]]] = staticmethod(
        jobs.retry_policies)
    task_types: Callable[[Cursor, Sequence[str]], list[tuple[Any, ...]]] = staticmethod(
        jobs.task_types)
    results_of: Callable[[Cursor, int, Sequence[str]], list[tuple[Any, ...]]] = staticmethod(
        jobs.results_of)
    make_waiting: Callable[[Cursor, Sequence[tuple[int, int]]], None] = staticmethod(
        jobs.make_waiting)
    rewrite_args: Callable[[Cursor, Sequence[tuple[int, str]]], None] = staticmethod(
        jobs.rewrite_args)
    read_jobs: Callable[[Cursor, ReadJobs], list[dict[str, Any]]] = staticmethod(
        job_reads.read_jobs)
    read_job_attempts: Callable[..., list[dict[str, Any]]] = staticmethod(
        job_reads.read_job_attempts)
    read_job_stages: Callable[[Cursor, int], list[tuple[Any, ...]]] = staticmethod(
        job_reads.read_job_stages)
    count_unfinished: Callable[[Cursor], int] = staticmethod(job_reads.count_unfinished)
    unfinished_groups: Callable[[Cursor, float], list[tuple[Any, ...]]] = staticmethod(
        job_reads.unfinished_groups)
    insert_graph: Callable[[Cursor, str, int], int] = staticmethod(graphs.insert_graph)
    read_graphs: Callable[[Cursor, ReadGraphs], list[dict[str, Any]]] = staticmethod(
        graphs.read_graphs)
    lock_graph_jobs: Callable[[Cursor, int], list[tuple[Any, ...]]] = staticmethod(
        graphs.lock_graph_jobs)
    grow_graph: Callable[[Cursor, int, int, bool], None] = staticmethod(graphs.grow_graph)
    task_type_names: Callable[[Cursor, Sequence[str]], set[str]] = staticmethod(
        graphs.task_type_names)
    cancel_graph_jobs: Callable[[Cursor, int], tuple[list[int], list[tuple[Any, ...]]]] = (
        staticmethod(graphs.cancel_graph_jobs))
    put_task_type: Callable[[Cursor, Mapping[str, Any]], None] = staticmethod(
        definitions.put_task_type)
    ensure_pools: Callable[[Cursor, Iterable[str]], None] = staticmethod(
        definitions.ensure_pools)
    put_pool: Callable[[Cursor, str, str], None] = staticmethod(definitions.put_pool)
    read_task_types: Callable[..., list[tuple[Any, ...]]] = staticmethod(
        definitions.read_task_types)
    pool_names: Callable[[Cursor], list[str]] = staticmethod(definitions.pool_names)
    pause_pool: Callable[[Cursor, str, bool], bool] = staticmethod(definitions.pause_pool)
    paused_pools: Callable[[Cursor], list[str]] = staticmethod(definitions.paused_pools)
    event_id_range: Callable[[Cursor], tuple[Any, Any]] = staticmethod(events.id_range)
    event_from: Callable[[Cursor, int], tuple[Any, ...] | None] = staticmethod(
        events.event_from)
    read_events: Callable[[Cursor, ReadEvents], list[tuple[Any, ...]]] = staticmethod(
        events.read_events)
    parent_edges: Callable[[Cursor, int], list[tuple[Any, ...]]] = staticmethod(
        retries.parent_edges)
    count_failures: Callable[[Cursor, int], int] = staticmethod(retries.count_failures)
    reset_job: Callable[[Cursor, ReopenJob, int], bool] = staticmethod(retries.reset_job)
    undone_children: Callable[[Cursor, Sequence[int]], list[tuple[Any, ...]]] = staticmethod(
        retries.undone_children)
    reopen_child: Callable[[Cursor, ReopenJob], None] = staticmethod(retries.reopen_child)
    uncount_done: Callable[[Cursor, int, int], tuple[Any, ...] | None] = staticmethod(
        retries.uncount_done)
    run_graph_again: Callable[[Cursor, int], None] = staticmethod(retries.run_graph_again)
    failed_jobs_of: Callable[[Cursor, int], list[tuple[Any, ...]]] = staticmethod(
        retries.failed_jobs_of)
    read_schedules: Callable[..., list[dict[str, Any]]] = staticmethod(
        schedules.read_schedules)
    put_schedule: Callable[[Cursor, PutSchedule], None] = staticmethod(schedules.put_schedule)
    pause_schedule: Callable[[Cursor, str], bool] = staticmethod(schedules.pause_schedule)
    resume_schedule: Callable[[Cursor, str, float], bool] = staticmethod(
        schedules.resume_schedule)
    delete_schedule: Callable[[Cursor, str], bool] = staticmethod(schedules.delete_schedule)
    advance_schedule: Callable[[Cursor, str, float, float], bool] = staticmethod(
        schedules.advance_schedule)
    pause_on_error: Callable[[Cursor, str, float, str], None] = staticmethod(
        schedules.pause_on_error)
    note_outcome: Callable[[Cursor, str, str], None] = staticmethod(schedules.note_outcome)
    set_last_jobs: Callable[[Cursor, Sequence[tuple[str, int]]], None] = staticmethod(
        schedules.set_last_jobs)
    scheduled_ends: Callable[[Cursor, Sequence[int]], list[tuple[Any, ...]]] = staticmethod(
        schedules.scheduled_ends)
    schedule_timing: Callable[[Cursor, str], dict[str, Any] | None] = staticmethod(
        schedules.schedule_timing)
    record_run: Callable[[Cursor, RecordRun], None] = staticmethod(schedules.record_run)
    read_positions: Callable[..., list[tuple[Any, ...]]] = staticmethod(outbox.read_positions)
    advance_position: Callable[[Cursor, str, EventCursor], bool] = staticmethod(
        outbox.advance_position)
    job_types: Callable[[Cursor, Sequence[int]], list[tuple[Any, ...]]] = staticmethod(
        outbox.job_types)
    attempt_workers: Callable[[Cursor, Sequence[int]], list[tuple[Any, ...]]] = staticmethod(
        outbox.attempt_workers)
    old_jobs: Callable[[Cursor, float, int], list[int]] = staticmethod(retention.old_jobs)
    old_events: Callable[[Cursor, float, int], list[int]] = staticmethod(retention.old_events)
    old_signals: Callable[[Cursor, float, int], list[int]] = staticmethod(
        retention.old_signals)
    empty_graphs: Callable[[Cursor, float, int], list[int]] = staticmethod(
        retention.empty_graphs)
    delete_jobs: Callable[[Cursor, Sequence[int]], None] = staticmethod(retention.delete_jobs)
    delete_rows: Callable[[Cursor, str, Sequence[int]], None] = staticmethod(
        retention.delete_rows)
    graphs_progressed: Callable[[Cursor, Sequence[int]], None] = staticmethod(
        graphs.graphs_progressed)
    start_awaiting: Callable[[Cursor, StartAwaiting], list[tuple[Any, ...]]] = staticmethod(
        waits.start_awaiting)
    end_awaiting: Callable[[Cursor, EndAwaiting], list[tuple[Any, ...]]] = staticmethod(
        waits.end_awaiting)
    read_kind: Callable[[Cursor, int], tuple[Any, ...] | None] = staticmethod(waits.read_kind)
    count_timers: Callable[[Cursor, float], int] = staticmethod(waits.count_timers)
    lock_run: Callable[[Cursor, int], str | None] = staticmethod(ticks.lock_run)
    queue_behind: Callable[[Cursor, Sequence[int]], None] = staticmethod(ticks.queue_behind)
    job_of_key: Callable[[Cursor, str], int | None] = staticmethod(ticks.job_of_key)
    size_graph: Callable[[Cursor, int, int], None] = staticmethod(ticks.size_graph)
    drop_graph: Callable[[Cursor, int], None] = staticmethod(ticks.drop_graph)
    backfill_graphs: Callable[[Cursor, str], list[int]] = staticmethod(ticks.backfill_graphs)
