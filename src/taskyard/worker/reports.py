"""A worker's report: one unit of work for everything since its last one.

What the executor started and what ended are recorded together, the scheduling cycle
runs in the same transaction when room may have opened (seed 000 runs schedule() on
completion), and the jobs that cycle placed here come back with the report — one
commit for all of it, whatever the batch size (group commit).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field

from taskyard.model.records import Assignment, ClaimedJob, Outcome, Started
from taskyard.store import CycleTx, Store
from taskyard.store.transitions.attempts import FETCH_LIMIT

Key = tuple[int, int]
Placer = Callable[[CycleTx], object]
"""Runs the cycle's steps in a report's transaction, under the global lock."""


@dataclass
class BatchReport:
    """What one :func:`report_batch` did."""

    accepted: list[bool] = field(default_factory=list)
    """Per ended attempt, in order: True if the end was recorded (False: fenced off)."""
    started: int = 0
    assignment: Assignment = field(default_factory=lambda: Assignment([]))
    """New jobs for this worker: those its own cycle placed here, or with ``fetch``
    every new one and the active set."""
    cycle: object = None
    """What ``place`` returned, or None when another process held the cycle lock."""


def report_batch(
    store: Store,
    worker_id: int,
    started: Sequence[Started] = (),
    ended: Sequence[Outcome] = (),
    *,
    prefetch: int | None = None,
    place: Placer | None = None,
    fetch: bool = False,
    known: Collection[Key] = (),
) -> BatchReport:
    """In one transaction: record ``started`` and ``ended`` attempts, set the worker's
    prefetch window, run ``place`` under the cycle lock if it is free, and return the
    jobs it placed on this worker — with ``fetch``, every job dispatched here and not
    in ``known``, and the active set. Reports from an attempt that is not the job's
    current one on this worker under a valid lease change nothing."""
    report = BatchReport()
    with store.write() as tx:
        report.started, report.accepted = tx.attempts.record(
            worker_id, started, ended, prefetch=prefetch)
        placed_here: list[int] = []
        jobs: list[ClaimedJob] | None = None
        if place is not None:
            with tx.cycle(read_ahead=True) as cycle:  # with the lock, in its round trip
                if cycle is not None:
                    cycle.serve(worker_id)  # we take what it places here below
                    report.cycle = place(cycle)
                    placed_here = cycle.dispatched.get(worker_id, [])
                    jobs = cycle.jobs_for(worker_id)
        if any(report.accepted) and report.cycle is None:
            tx.notify("scheduler")  # freed capacity: someone must place
        if fetch:
            report.assignment = tx.attempts.fetch(worker_id, known, FETCH_LIMIT)
        elif placed_here:
            report.assignment = Assignment(jobs or tx.attempts.details(worker_id, placed_here))
    return report
