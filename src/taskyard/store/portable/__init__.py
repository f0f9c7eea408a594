"""SQL both backends run as written: the transitions of :class:`SharedTransitions`,
which each driver (store/sqlite, store/postgresql) takes on as its own; what a backend
writes differently lives in its package. The statements are SQL text run on the unit
of work's cursor (store/cursor.py), with ``?`` markers, ``{now}`` for the database
clock, the cursor's membership test (``Cursor.member``) for id lists and its row lock
(``Cursor.row_lock``)."""

from __future__ import annotations

from taskyard.store.portable import cycle, dependents, graphs, jobs, waits, workers


class SharedTransitions:
    """The transitions both drivers run as written (each driver's class derives from
    this one, and writes the rest itself)."""

    expel_expired_workers = staticmethod(cycle.expel_expired_workers)
    read_overdue = staticmethod(cycle.read_overdue)
    fail_overdue = staticmethod(cycle.fail_overdue)
    read_suspended = staticmethod(cycle.read_suspended)
    error_suspended = staticmethod(cycle.error_suspended)
    requeue_suspended = staticmethod(cycle.requeue_suspended)
    record_cycle = staticmethod(cycle.record_cycle)
    cycles_run = staticmethod(cycle.cycles_run)
    read_active_of = staticmethod(workers.read_active_of)
    suspend_jobs = staticmethod(workers.suspend_jobs)
    read_job_state = staticmethod(jobs.read_job_state)
    cancel_job = staticmethod(jobs.cancel_job)
    read_edges_from = staticmethod(dependents.read_edges_from)
    lock_waiting = staticmethod(dependents.lock_waiting)
    update_dependents = staticmethod(dependents.update_dependents)
    graphs_progressed = staticmethod(graphs.graphs_progressed)
    start_awaiting = staticmethod(waits.start_awaiting)
    first_signal = staticmethod(waits.first_signal)
    end_awaiting = staticmethod(waits.end_awaiting)
    send_signal = staticmethod(waits.send_signal)
    read_kind = staticmethod(waits.read_kind)
