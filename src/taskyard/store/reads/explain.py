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
    kind: str = "task"
    signal: str | None = None
    signal_key: str | None = None
    deadline: float | None = None
    """When an awaiting job times out (a sleep ends); None: never."""
    candidate: Candidate | None = None
    """The job as the cycle offers it (its priority, cost, locks and rate key); None for
    an approval, a wait or a sleep."""
    delayed: bool = False
    """A job for later that no maintenance has made placeable yet (``delayed_until``)."""


@dataclass(frozen=True, slots=True)
class OpenParent:
    """A job another waits for, which has not ended."""

    id: int
    label: str | None
    type: str | None
    state: str
    condition: str
    kind: str = "task"


def job_place(tx: Tx, job_id: int) -> JobPlace:
    """The job's state, due time, pools and placement fields, and what an awaiting job
    awaits (NotFound if there is no such job)."""
    row = tx.raw.first("SELECT state, run_after, pools, {now}, type, rate_key, priority, "
                       "cost, locks, kind, signal_name, signal_key, deadline, "
                       "delayed_until IS NOT NULL FROM jobs "
                       "WHERE id = ?", (job_id,))
    if row is None:
        raise NotFound(f"no job {job_id}")
    candidate = None if row[4] is None else to_candidates(
        [(job_id, row[4], row[6], row[2], row[7], row[8], row[5])])[0]
    return JobPlace(row[0], row[1], pools_of(row[2]), float(row[3]), row[4] or "", row[5],
                    row[9], row[10], row[11], row[12], candidate, bool(row[13]))


def open_parents(tx: Tx, job_id: int) -> list[OpenParent]:
    """The jobs ``job_id`` waits for that have not ended, oldest first."""
    return [OpenParent(*r) for r in tx.raw.all(
        "SELECT j.id, j.label, j.type, j.state, d.condition, j.kind FROM jobs j "
        "JOIN dependencies d ON d.requires_id = j.id "
        f"WHERE d.job_id = ? AND j.state NOT IN ({_ENDED}) ORDER BY j.id", (job_id,))]
