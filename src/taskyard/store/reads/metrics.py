"""Read-only aggregates for ``/metrics`` and the dashboard's overview.

Functions over a :class:`~taskyard.store.Store`, each a read transaction of its own, in
SQL text both backends run as written. Each reads through an index (state, type and
state, event id) and is bounded where the table only grows (the event log).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from taskyard.core.states import TERMINAL, JobState
from taskyard.model.records import loads

if TYPE_CHECKING:
    from taskyard.store import Store

UNFINISHED = tuple(sorted(set(JobState) - TERMINAL))
_UNFINISHED = ", ".join(f"'{s.value}'" for s in UNFINISHED)
ENDED = tuple(sorted(TERMINAL))
_ENDED = ", ".join(f"'{s.value}'" for s in ENDED)
ENDING_TOPICS = ("job-completed", "job-failed", "job-exception")


def jobs_by_state(store: Store) -> dict[str, int]:
    """Every job state with its number of jobs (0 for a state without jobs)."""
    return {**ended_by_state(store), **unfinished_by_state(store)}


def unfinished_by_state(store: Store) -> dict[str, int]:
    """Each unfinished state with its number of jobs: a range of ``ix_jobs_state_id``
    per state, as long as the jobs in flight (not the history)."""
    with store.read() as tx:
        found = {state: int(n) for state, n in tx.raw.all(
            f"SELECT state, COUNT(*) FROM jobs WHERE state IN ({_UNFINISHED}) GROUP BY state")}
    return {s.value: found.get(s.value, 0) for s in UNFINISHED}


def ended_by_state(store: Store) -> dict[str, int]:
    """Each ended state with its number of jobs: every ended job is read (the history:
    about a second at 10,000,000 jobs on SQLite), see api/http/state_counts.py."""
    with store.read() as tx:
        found = {state: int(n) for state, n in tx.raw.all(
            f"SELECT state, COUNT(*) FROM jobs WHERE state IN ({_ENDED}) GROUP BY state")}
    return {s.value: found.get(s.value, 0) for s in ENDED}


def unfinished_by_pool(store: Store) -> dict[tuple[str, str], int]:
    """Unfinished jobs by (state, first pool of the job's list of pools)."""
    counts: dict[tuple[str, str], int] = {}
    with store.read() as tx:
        for state, pools, n in tx.raw.all(
                f"SELECT state, pools, COUNT(*) FROM jobs WHERE state IN ({_UNFINISHED}) "
                "GROUP BY state, pools"):
            first = (loads(pools) or [""])[0]
            counts[(state, first)] = counts.get((state, first), 0) + int(n)
    return counts


def pending_by_type(store: Store) -> dict[str, int]:
    """Pending jobs (ready, waiting for room) per task type: the queue depth."""
    with store.read() as tx:
        return {str(type_): int(n) for type_, n in tx.raw.all(
            "SELECT type, COUNT(*) FROM jobs WHERE state = 'pending' GROUP BY type")}


def recent_endings(store: Store, seconds: float, *, scan: int = 50_000) -> dict[str, int]:
    """Attempt endings per topic (``job-completed``, ``job-failed``, ``job-exception``) in
    the last ``seconds`` by the database clock, among the last ``scan`` events: a bounded
    read, exact unless more than ``scan`` events were written in that time."""
    topics = ", ".join(f"'{topic}'" for topic in ENDING_TOPICS)
    with store.read() as tx:
        found = {topic: int(n) for topic, n in tx.raw.all(
            "SELECT topic, COUNT(*) FROM events WHERE id > (SELECT MAX(id) FROM events) - ? "
            f"AND topic IN ({topics}) AND created_at >= {{now}} - ? GROUP BY topic",
            (scan, seconds))}
    return {topic: found.get(topic, 0) for topic in ENDING_TOPICS}
