"""The outbox: followers that deliver the event log elsewhere, and how far each got.

A follower (``taskyard publisher``, by name) reads committed events in commit order
(:meth:`Events.committed`), hands them to its broker, and once the broker confirmed
them moves its position here. After a crash it resumes from that position: an event
may be delivered twice, never skipped.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import TYPE_CHECKING, ClassVar

from sqlalchemy import and_, or_, select, update

from taskyard.core.amqp import JobFacts
from taskyard.store import schema as t
from taskyard.store.transitions.dependents import chunks
from taskyard.store.transitions.events import START, EventCursor

if TYPE_CHECKING:
    from taskyard.store.unit import Tx

_O = t.outbox_cursors
_J = t.jobs
_A = t.attempts
_W = t.workers


class Outbox:
    """Followers' positions, and the facts their messages carry, in one transaction."""

    READS: ClassVar[frozenset[str]] = frozenset({'job_facts', 'position', 'positions'})
    """Methods a call through the store (``store.outbox.<method>``) runs in a read
    transaction; the others run in a write transaction (:class:`taskyard.store.store.OneShot`)."""

    def __init__(self, tx: Tx) -> None:
        self.tx = tx

    def position(self, name: str) -> EventCursor:
        """Where follower ``name`` resumes: after the last event it had confirmed."""
        row = self.tx.conn.execute(
            select(_O.c.tx_id, _O.c.event_id).where(_O.c.name == name)).first()
        return START if row is None else EventCursor(int(row.tx_id), int(row.event_id))

    def advance(self, name: str, cursor: EventCursor) -> bool:
        """Move follower ``name`` forward to ``cursor``; never back (two publishers of
        one name, or a stale one, cannot undo what was confirmed). True if it moved."""
        conn = self.tx.conn
        moved = conn.execute(
            update(_O).where(_O.c.name == name, or_(
                _O.c.tx_id < cursor.tx,
                and_(_O.c.tx_id == cursor.tx, _O.c.event_id < cursor.id)))
            .values(tx_id=cursor.tx, event_id=cursor.id, updated_at=self.tx.now)).rowcount
        if moved:
            return True
        inserted = conn.execute(
            self.tx.driver.upsert(_O).values(name=name, tx_id=cursor.tx, event_id=cursor.id,
                                              updated_at=self.tx.now)
            .on_conflict_do_nothing(index_elements=["name"]).returning(_O.c.name)).scalar()
        return inserted is not None

    def positions(self) -> dict[str, tuple[EventCursor, float]]:
        """Every follower's position and when it last moved (database clock)."""
        return {r.name: (EventCursor(int(r.tx_id), int(r.event_id)), float(r.updated_at))
                for r in self.tx.conn.execute(select(_O).order_by(_O.c.name))}

    def job_facts(self, keys: Collection[tuple[int, int | None]]
                  ) -> dict[tuple[int, int | None], JobFacts]:
        """For each (job, attempt or None): the job's task type and the attempt's worker
        (name and host). Pruned jobs are left out."""
        job_ids = sorted({job for job, _ in keys})
        types: dict[int, str] = {}
        workers: dict[tuple[int, int], tuple[str | None, str | None]] = {}
        conn = self.tx.conn
        for part in chunks(job_ids):
            # An approval, a wait or a sleep has no task type: its kind stands for it.
            types.update((int(r.id), str(r.type or r.kind)) for r in conn.execute(
                select(_J.c.id, _J.c.type, _J.c.kind).where(_J.c.id.in_(part))))
            workers.update(((int(r.job_id), int(r.attempt)), (r.hostname, r.worker_name))
                           for r in conn.execute(
                select(_A.c.job_id, _A.c.attempt, _A.c.worker_name, _W.c.hostname)
                .select_from(_A.outerjoin(_W, _W.c.id == _A.c.worker_id))
                .where(_A.c.job_id.in_(part))))
        facts: dict[tuple[int, int | None], JobFacts] = {}
        for job, attempt in keys:
            if job in types:
                host, worker = workers.get((job, attempt or 0), (None, None))
                facts[(job, attempt)] = JobFacts(types[job], host or None, worker)
        return facts
