"""The worker's transitions one call at a time: claim dispatched jobs, complete attempts.

Both are the batched transitions of :mod:`taskyard.store.batches` in a transaction
of their own, for callers that do not batch (tests, tools, simple workers).
"""

from __future__ import annotations

from collections.abc import Sequence

from taskyard.store.batches import BatchMixin
from taskyard.store.raw import Raw
from taskyard.store.records import ClaimedJob, Outcome, Started


class ExecutionMixin(BatchMixin):
    def claim_dispatched(self, worker_id: int, limit: int) -> list[ClaimedJob]:
        """Move up to ``limit`` jobs dispatched to this worker to running, in one
        transaction, highest priority first; fenced by the worker's lease."""
        if limit <= 0:
            return []
        if self.sqlite and not self.fetch_dispatched(worker_id, limit=limit).jobs:
            return []  # look before taking the write lock
        with self._tx() as conn:
            jobs = self._fetch_mine(conn, worker_id, (), limit).jobs
            if not jobs:
                return []
            started = self._start(conn, Raw(conn), worker_id,
                                  [Started(j.job_id, j.attempt) for j in jobs])
        return [j for j in jobs if (j.job_id, j.attempt) in started]

    def complete_attempts(self, worker_id: int, outcomes: Sequence[Outcome]) -> list[bool]:
        """End attempts in one transaction. Each is accepted only if it is the job's current
        attempt, still running on this worker; otherwise it changes nothing (False)."""
        if not outcomes:
            return []
        return self.record_attempts(worker_id, ended=outcomes).accepted
