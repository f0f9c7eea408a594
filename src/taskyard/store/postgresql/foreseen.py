"""PostgreSQL: a one-job submit placed where the last cycle's snapshot says, checked
under the cycle's lock, in one round trip.

A submit's inline cycle (pg_placed) needs three round trips: the lock and the reads,
then the dispatch once the planner has decided, then ``COMMIT``; and the client's work
between them. When the queue was idle at the last cycle, the planner's decision for
one more job can be made before anything is sent, from the snapshot that cycle read
(:class:`taskyard.store.transitions.cycle.Basis`): the caller decides (``place``), and one
pipeline — ``BEGIN``, the lock, the guarded insert, its fallback, ``COMMIT`` — writes
it. The insert places the job only if, under the lock, the snapshot reads as the very
same text (:data:`pg_cycle.SNAPSHOT_TEXT`) and no job is pending: the state the
decision was made on, so a cycle run now would decide the same. Otherwise the job
goes in pending, and the caller runs the cycle (the lock was ours) or the scheduler is
woken (it was not). The connection is in autocommit (Store.alone): the pipeline's own
``BEGIN`` and ``COMMIT`` make the transaction.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from taskyard.core.routing import job_key
from taskyard.model.records import JobSubmission, TaskTypeSpec
from taskyard.store.cursor import Cursor
from taskyard.store.driver.spec_cache import payload_tail
from taskyard.store.postgresql import cycle as pg_cycle
from taskyard.store.postgresql.listen import pg_channel
from taskyard.store.postgresql.placed import look_sql
from taskyard.store.postgresql.rows import pipelined
from taskyard.store.postgresql.submit import SpecCache, build_row_now, pending_event

_ID = "(SELECT currval(pg_get_serial_sequence('jobs', 'id')))"
"""The id the first statement took. A subquery, run once: compared with ``id`` as the
bare (volatile) call, it would read the whole table instead of its index."""
_TYPE_AS_READ = ("EXISTS (SELECT 1 FROM task_types WHERE name = %(type)s "
                 "AND xmin = %(version)s::xid)")
_HELD = f"current_setting('{pg_cycle.HELD_SETTING}', true) = 'on'"
_LOOK = look_sql(checked=True)
"""The transaction inserts one job of that type, outside any graph: the statement that
locks the type checks its references (the insert trigger would cost ~0.1 ms more)."""


@functools.lru_cache(maxsize=8)
def _placed_sql(columns: tuple[str, ...], maintain: bool) -> str:
    """The job inserted dispatched (pg_cycle.DISPATCH's tail: its attempt, its event,
    its worker's wake-up carrying it) only if the decision still holds; ``maintain``:
    and a cycle's maintenance, due now, would find nothing to do."""
    values = ", ".join(f"%(p_{c})s" for c in columns)
    return (
        f"WITH d AS (INSERT INTO jobs (id, {', '.join(columns)}, created_at) "
        f"SELECT {_ID}, {values}, {{now}} WHERE {_HELD} AND {_TYPE_AS_READ} "
        "AND NOT EXISTS (SELECT 1 FROM jobs WHERE state = 'pending') "
        f"{f'AND {pg_cycle.NO_MAINTENANCE} ' if maintain else ''}"
        f"AND {pg_cycle.SNAPSHOT_TEXT} = %(basis)s "
        f"RETURNING {pg_cycle.DISPATCHED_COLUMNS}), "
        f"{pending_event('%(key)s', '%(tail)s', 'd', wake=True)}, {pg_cycle.DISPATCH_TAIL}")


@functools.lru_cache(maxsize=8)
def _pending_sql(columns: tuple[str, ...]) -> str:
    """The job inserted pending when the statement before placed nothing; the scheduler
    is woken. Also: whether the lock is ours, and whether other jobs are pending."""
    values = ", ".join(f"%(c_{c})s" for c in columns)
    return (
        f"WITH j AS (INSERT INTO jobs (id, {', '.join(columns)}, created_at) "
        f"SELECT {_ID}, {values}, {{now}} WHERE {_TYPE_AS_READ} "
        f"AND NOT EXISTS (SELECT 1 FROM jobs WHERE id = {_ID}) RETURNING id, graph_id), "
        f"{pending_event('%(key)s', '%(tail)s')}"
        "SELECT id, pg_notify('taskyard_events', ''), "
        f"pg_notify('{pg_channel('scheduler')}', ''), {_HELD}, "
        f"EXISTS (SELECT 1 FROM jobs WHERE state = 'pending' AND id <> {_ID}) FROM j")


@dataclass(frozen=True, slots=True)
class Foreseen:
    """What :func:`submit_foreseen` did with the job."""

    job_id: int
    placed: bool
    """Inserted dispatched to the worker the caller chose."""
    held: bool | None
    """The cycle's lock was ours (None: not tried, no live worker)."""
    backlog: bool = False
    """Not placed, and other jobs were pending."""


def submit_foreseen(raw: Cursor, sub: JobSubmission, cache: SpecCache,
                    build: Callable[[TaskTypeSpec], dict[str, Any]], *, basis: str,
                    place: Callable[[list[Any]], tuple[int, str] | None],
                    maintain: float | None = None) -> Foreseen | None:
    """Insert ``sub`` in one round trip: dispatched to the worker ``place`` chooses for
    its candidate row (id, type, priority, pools, cost, locks, rate key; (worker id,
    name), or None: the ordinary path) if the snapshot still reads as ``basis`` and
    nothing else is pending — nor, with ``maintain`` (the timeouts' grace: the cycle's
    maintenance is due), any maintenance work; else pending. None when nothing was
    written: the ordinary path decides (unknown or changed type, update on launch, a
    job of a graph or for later, or ``place`` declined)."""
    found = build_row_now(raw, sub, cache, build)
    if found is None:
        return None
    version, spec, row = found
    chosen = place([0, spec.name, row["priority"], row["pools"], row["cost"], row["locks"],
                    row["rate_key"]])
    if chosen is None:
        return None
    worker_id, name = chosen
    placed_row = {**row, "state": "dispatched", "worker_id": worker_id, "attempt": 1}
    params = pg_cycle.dispatch_params("", worker_id, name, [pg_channel(f"worker.{worker_id}")],
                                      None, last=True)
    params.update({f"c_{c}": v for c, v in row.items()})
    params.update({f"p_{c}": v for c, v in placed_row.items()})
    params.update(basis=basis, version=version, type=spec.name, grace=maintain,
                  key=job_key(None, row["routing"]), tail=payload_tail(spec.name))
    looked, placed, pending = pipelined(raw, [
        (_LOOK, params), (_placed_sql(tuple(placed_row), maintain is not None), params),
        (_pending_sql(tuple(row)), params)], transaction=True)
    if not looked or not looked[0][0]:  # its type changed or went: nothing written
        cache.pop(sub.type, None)
        return None
    job_id = int(looked[0][2])
    if placed:
        return Foreseen(job_id, True, True)
    if not pending:
        raise RuntimeError(f"job {job_id}: neither placed nor inserted pending")
    _, _, _, held, backlog = pending[0]
    return Foreseen(job_id, False, None if looked[0][1] is None else bool(held),
                    bool(backlog))
