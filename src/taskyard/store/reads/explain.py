"""What ``explain`` reads about one job, besides what the cycle reads (see
``scheduler/explain.py``, which replays the cycle's placement with these)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from taskyard.core.placement import Candidate
from taskyard.core.states import TERMINAL
from taskyard.model.errors import NotFound
from taskyard.store.driver.planning import pools_of, to_candidates

if TYPE_CHECKING:
    from taskyard.store.unit import Tx

_ENDED = ", ".join(f"'{s}'" for s in sorted(TERMINAL))


@dataclass(frozen=True, slots=True)
class JobPlace:
    """Where a job stands, as the database sees it now."""

    state: str
    run_after: float | None
    pools: tuple[str, ...]
    now: float
    """The database clock when read."""
    type: str = ""
    rate_key: str | None = None
    candidate: Candidate | None = None
    """The job as the cycle offers it (its priority, cost, locks and rate key)."""


@dataclass(frozen=True, slots=True)
class OpenParent:
    """A job another waits for, which has not ended."""

    id: int
    label: str | None
    type: str
    state: str
    condition: str


def job_place(tx: Tx, job_id: int) -> JobPlace:
    """The job's state, due time, pools and placement fields (NotFound if there is
    no such job)."""
    row = tx.raw.first("SELECT state, run_after, pools, {now}, type, rate_key, priority, "
                       "cost, locks FROM jobs WHERE id = ?", (job_id,))
    if row is None:
        raise NotFound(f"no job {job_id}")
    (candidate,) = to_candidates([(job_id, row[4], row[6], row[2], row[7], row[8], row[5])])
    return JobPlace(row[0], row[1], pools_of(row[2]), float(row[3]), row[4], row[5], candidate)


def open_parents(tx: Tx, job_id: int) -> list[OpenParent]:
    """The jobs ``job_id`` waits for that have not ended, oldest first."""
    return [OpenParent(*r) for r in tx.raw.all(
        "SELECT j.id, j.label, j.type, j.state, d.condition FROM jobs j "
        "JOIN dependencies d ON d.requires_id = j.id "
        f"WHERE d.job_id = ? AND j.state NOT IN ({_ENDED}) ORDER BY j.id", (job_id,))]
