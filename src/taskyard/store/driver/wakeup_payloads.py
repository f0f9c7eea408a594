"""Jobs carried by a worker's wake-up, so that it need not read them: one format for
both backends. PostgreSQL builds the payload in its dispatch statement (json_agg, see
postgresql/cycle.DISPATCH) and sends it with NOTIFY; SQLite builds it here from the dispatch's
rows and stores it beside the channel's counter (``wakeups.payload``, see
sqlite_listen). The worker parses both with :func:`jobs_in_wakeups`.

A payload is a JSON array of ``[id, attempt, handler, type, args, timeout, graph_id,
label, cost, priority, logical_time, trace_context]``, ``args`` as stored (JSON text); ""
when the jobs must be read: one needs more than its row (results of other jobs, stages of an earlier
attempt), has no task type, or the lot is too many or too large.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from taskyard.model.records import ClaimedJob, loads
from taskyard.store.cursor import json_rows

CARRY_JOBS = 32
"""Most jobs a wake-up carries."""
WAKEUP_BYTES = 7000
"""Largest wake-up payload (PostgreSQL refuses notifications of 8,000 bytes or more)."""
RESULT_MARK = '"$result"'
"""In the args of a graph's job: they take other jobs' results when it is read."""


def carried(rows: Sequence[Sequence[Any]]) -> str:
    """The payload of ``rows`` (each in the payload's column order), or "" when the
    worker must read them (the same rule as postgresql/cycle.DISPATCH's)."""
    if not rows or len(rows) > CARRY_JOBS:
        return ""
    for _, attempt, handler, _, args, _, graph_id, *_ in rows:
        if handler is None or attempt > 1 or (graph_id is not None and RESULT_MARK in args):
            return ""
    body = json_rows(rows)
    return body if len(body.encode()) <= WAKEUP_BYTES else ""


def jobs_in_wakeups(payloads: Sequence[str]) -> list[ClaimedJob] | None:
    """The jobs wake-ups carry, in placement order; None when one carries none (an
    empty payload: a cancel, jobs that need more than their row, too many jobs) or
    there is none: the worker must look."""
    jobs: list[ClaimedJob] = []
    try:
        for payload in payloads:
            if not payload:
                return None
            jobs += [ClaimedJob(job_id=int(job), attempt=int(attempt), type=type_,
                                handler=handler, args=loads(args), timeout=timeout,
                                graph_id=graph, label=label, cost=int(cost),
                                priority=int(priority), logical_time=tick,
                                trace_context=trace)
                     for job, attempt, handler, type_, args, timeout, graph, label, cost,
                     priority, tick, trace in loads(payload)]
    except (ValueError, TypeError):
        return None
    jobs.sort(key=lambda j: (-j.priority, j.job_id))
    return jobs or None
