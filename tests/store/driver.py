"""A synchronous in-test worker: drives the store as the worker daemon does, without
processes — what is placed on it (``Attempts.fetch``), its reports of starts and ends
(``worker/reports.py:report_batch``, one commit each) — and the real scheduling cycle,
deciding each attempt's outcome with a function.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from taskyard.model.records import ClaimedJob, Outcome, Started
from taskyard.scheduler.cycle import schedule
from taskyard.store import Store
from taskyard.store.unit import Tx
from taskyard.worker.reports import report_batch

Decide = Callable[[ClaimedJob], tuple[str, Any]]

JOBS_FETCHED = ("SELECT COALESCE(sum(idx_tup_fetch), 0) FROM pg_stat_xact_user_tables "
                "WHERE relname = 'jobs'")
"""SQL (PostgreSQL): the rows of ``jobs`` the transaction has fetched through an index so
far — what a test counts where it must not time."""


def jobs_fetched(tx: Tx) -> int:
    """:data:`JOBS_FETCHED` in ``tx`` on PostgreSQL; 0 on SQLite, which counts nothing."""
    if tx.driver.name != "postgresql":
        return 0
    row = tx.raw.first(JOBS_FETCHED)
    return int(row[0]) if row is not None else 0


def succeed(job: ClaimedJob) -> tuple[str, Any]:
    return "succeeded", {"label": job.label, "args": job.args}


def drive(store: Store, decide: Decide = succeed, *, capacity: int = 4, rounds: int = 500,
          worker: str = "driver") -> list[ClaimedJob]:
    """Run jobs until nothing is placeable; returns every claimed attempt in order."""
    existing = [w for w in store.workers.list() if w.name == worker]
    worker_id = existing[0].id if existing else store.workers.register(
        worker, ["default"], capacity, lease_seconds=300).id
    seen: list[ClaimedJob] = []
    for _ in range(rounds):
        schedule(store)
        claimed = claim(store, worker_id, capacity)
        if not claimed:
            return seen
        seen.extend(claimed)
        outcomes = []
        for job in claimed:
            state, result = decide(job)
            outcomes.append(Outcome(job.job_id, job.attempt, state,
                                    0 if state == "succeeded" else 1, result))
        complete(store, worker_id, outcomes)
    raise AssertionError("jobs kept coming after many rounds")


def claim(store: Store, worker_id: int, limit: int) -> list[ClaimedJob]:
    """What the worker daemon does with what is placed on it: read it (up to ``limit``
    jobs, highest priority first) and report their starts; the jobs that started (a
    start the store refuses — the lease ran out, the attempt is stale — is left out)."""
    jobs = store.attempts.fetch(worker_id).jobs[:limit]
    if not jobs:
        return []
    report_batch(store, worker_id, [Started(j.job_id, j.attempt) for j in jobs])
    records = {j.job_id: store.jobs.get(j.job_id, attempts=False) for j in jobs}
    return [j for j in jobs if (r := records[j.job_id]) is not None and r.state == "running"
            and r.attempt == j.attempt]


def complete(store: Store, worker_id: int, outcomes: list[Outcome]) -> list[bool]:
    """The worker daemon's report of attempts that ended; per outcome, whether the store
    accepted it (False: fenced off, nothing changed)."""
    return report_batch(store, worker_id, ended=outcomes).accepted


SHORT_LEASE = 30.0
"""A lease no step of a test outlasts on a loaded machine; tests move the database clock
past it (:func:`wait_out_lease`) instead of waiting."""


def wait_out_lease(store: Store, worker_id: int) -> None:
    """Let the worker's lease run out on the database's clock: moved past it when the
    store has a movable clock, else waited for."""
    expires = next(w for w in store.workers.list(include_gone=True)
                   if w.id == worker_id).lease_expires_at
    if store.clock is not None:
        store.clock.advance(expires - store.now() + 0.01)
        assert store.now() > expires
        return
    deadline = time.monotonic() + 30
    while store.now() <= expires:
        assert time.monotonic() < deadline, "the lease never ran out"
        time.sleep(0.05)
