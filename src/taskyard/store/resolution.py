"""What a job's end means for the jobs that require it (seed 003, option 3).

Each job keeps a counter of unmet dependencies. A success decrements its
dependents' counters in the completing transaction and those reaching zero
become pending: O(dependents), never a scan. A failure for good makes every
waiting descendant ``dependency_failed``, breadth first, without recursion.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence

from sqlalchemy import Connection, and_, bindparam, select, update

from taskyard.core.states import JobState
from taskyard.store import schema as t
from taskyard.store.base import StoreBase

CHUNK = 500


def chunks(ids: Sequence[int], size: int = CHUNK) -> Iterable[Sequence[int]]:
    for start in range(0, len(ids), size):
        yield ids[start : start + size]


class ResolutionMixin(StoreBase):
    def _resolve_succeeded(self, conn: Connection, job_ids: Sequence[int]) -> list[int]:
        """Decrement dependents of ``job_ids``; return the ids that became pending."""
        d = t.dependencies
        counts: Counter[int] = Counter()
        for part in chunks(job_ids):
            rows = conn.execute(
                select(d.c.job_id).where(
                    d.c.requires_id.in_(part), d.c.condition.in_(("success", "always"))
                )
            ).scalars()
            counts.update(rows)
        if not counts:
            return []
        j = t.jobs
        conn.execute(
            update(j)
            .where(j.c.id == bindparam("dep_id"))
            .values(unmet_deps=j.c.unmet_deps - bindparam("n")),
            [{"dep_id": job, "n": n} for job, n in counts.items()],
        )
        ready: list[int] = []
        for part in chunks(list(counts)):
            ready.extend(
                conn.execute(
                    update(j)
                    .where(j.c.id.in_(part), j.c.state == JobState.WAITING, j.c.unmet_deps == 0)
                    .values(state=JobState.PENDING)
                    .returning(j.c.id)
                ).scalars()
            )
        return ready

    def _cascade_failure(self, conn: Connection, job_ids: Sequence[int]) -> list[int]:
        """Make every waiting descendant of ``job_ids`` dependency_failed; return them."""
        d, j = t.dependencies, t.jobs
        failed: list[int] = []
        frontier = list(job_ids)
        while frontier:
            children: set[int] = set()
            for part in chunks(frontier):
                children.update(
                    conn.execute(
                        select(d.c.job_id).where(
                            d.c.requires_id.in_(part), d.c.condition == "success"
                        )
                    ).scalars()
                )
            frontier = []
            for part in chunks(sorted(children)):
                frontier.extend(
                    conn.execute(
                        update(j)
                        .where(and_(j.c.id.in_(part), j.c.state == JobState.WAITING))
                        .values(
                            state=JobState.DEPENDENCY_FAILED,
                            finished_at=self._now,
                            error="a job it requires did not succeed",
                        )
                        .returning(j.c.id)
                    ).scalars()
                )
            failed.extend(frontier)
        return failed
