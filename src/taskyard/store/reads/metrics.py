"""Read-only aggregates for ``/metrics`` and the dashboard's overview.

Functions over a :class:`~taskyard.store.Store`, so that they can move onto the storage
seam as they are. Each reads through an index (state, type and state, event id) and is
bounded where the table only grows (the event log).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sqlalchemy import func, select

from taskyard.core.states import TERMINAL, JobState
from taskyard.model.records import loads
from taskyard.store import schema as t
from taskyard.store.sql import lit, lits

if TYPE_CHECKING:
    from taskyard.store import Store

_J, _A, _E = t.jobs, t.attempts, t.events
UNFINISHED = tuple(sorted(set(JobState) - TERMINAL))
ENDING_TOPICS = ("job-completed", "job-failed", "job-exception")


def jobs_by_state(store: Store) -> dict[str, int]:
    """Every job state with its number of jobs (0 for a state without jobs)."""
    query = select(_J.c.state, func.count()).group_by(_J.c.state)
    with store.read() as tx:
        conn = tx.conn
        found = {state: int(n) for state, n in conn.execute(query)}
    return {s.value: found.get(s.value, 0) for s in JobState}


def unfinished_by_pool(store: Store) -> dict[tuple[str, str], int]:
    """Unfinished jobs by (state, first pool of the job's list of pools)."""
    query = (select(_J.c.state, _J.c.pools, func.count())
             .where(_J.c.state.in_(lits(UNFINISHED))).group_by(_J.c.state, _J.c.pools))
    counts: dict[tuple[str, str], int] = {}
    with store.read() as tx:
        conn = tx.conn
        for state, pools, n in conn.execute(query):
            first = (loads(pools) or [""])[0]
            counts[(state, first)] = counts.get((state, first), 0) + int(n)
    return counts


def pending_by_type(store: Store) -> dict[str, int]:
    """Pending jobs (ready, waiting for room) per task type: the queue depth."""
    query = (select(_J.c.type, func.count()).where(_J.c.state == lit("pending"))
             .group_by(_J.c.type))
    with store.read() as tx:
        conn = tx.conn
        return {str(type_): int(n) for type_, n in conn.execute(query)}


def recent_endings(store: Store, seconds: float, *, scan: int = 50_000) -> dict[str, int]:
    """Attempt endings per topic (``job-completed``, ``job-failed``, ``job-exception``) in
    the last ``seconds`` by the database clock, among the last ``scan`` events: a bounded
    read, exact unless more than ``scan`` events were written in that time."""
    newest = select(func.max(_E.c.id)).scalar_subquery()
    query = (select(_E.c.topic, func.count())
             .where(_E.c.id > newest - scan, _E.c.topic.in_(ENDING_TOPICS),
                    _E.c.created_at >= store.now_expr - seconds)
             .group_by(_E.c.topic))
    with store.read() as tx:
        conn = tx.conn
        found = {topic: int(n) for topic, n in conn.execute(query)}
    return {topic: found.get(topic, 0) for topic in ENDING_TOPICS}
