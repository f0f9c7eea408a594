"""What ``explain`` reads about one job, besides what the cycle reads (see
``scheduler/explain.py``, which replays the cycle's placement with these)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from sqlalchemy import select

from taskyard.core.states import TERMINAL
from taskyard.model.errors import NotFound
from taskyard.store import schema as t
from taskyard.store.driver.planning import pools_of

if TYPE_CHECKING:
    from taskyard.store.unit import Tx

_J, _D = t.jobs, t.dependencies


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
    """The job's state, due time and pools (NotFound if there is no such job)."""
    row = tx.conn.execute(
        select(_J.c.state, _J.c.run_after, _J.c.pools, tx.now, _J.c.type, _J.c.rate_key,
               _J.c.kind, _J.c.signal_name, _J.c.signal_key, _J.c.deadline)
        .where(_J.c.id == job_id)
    ).first()
    if row is None:
        raise NotFound(f"no job {job_id}")
    return JobPlace(row[0], row[1], pools_of(row[2]), float(row[3]), row[4] or "", row[5],
                    *row[6:])


def open_parents(tx: Tx, job_id: int) -> list[OpenParent]:
    """The jobs ``job_id`` waits for that have not ended, oldest first."""
    return [OpenParent(*r) for r in tx.conn.execute(
        select(_J.c.id, _J.c.label, _J.c.type, _J.c.state, _D.c.condition, _J.c.kind)
        .join(_D, _D.c.requires_id == _J.c.id)
        .where(_D.c.job_id == job_id, _J.c.state.not_in(TERMINAL))
        .order_by(_J.c.id))]
