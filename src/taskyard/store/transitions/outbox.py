"""The outbox: followers that deliver the event log elsewhere, and how far each got.

A follower (``taskyard publisher``, by name) reads committed events in commit order
(:meth:`Events.committed`), hands them to its broker, and once the broker confirmed
them moves its position here. After a crash it resumes from that position: an event
may be delivered twice, never skipped.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import TYPE_CHECKING, ClassVar

from taskyard.core.amqp import JobFacts
from taskyard.store.transitions.dependents import chunks
from taskyard.store.transitions.events import START, EventCursor

if TYPE_CHECKING:
    from taskyard.store.unit import Tx



class Outbox:
    """Followers' positions, and the facts their messages carry, in one transaction."""

    READS: ClassVar[frozenset[str]] = frozenset({'job_facts', 'position', 'positions'})
    """Methods a call through the store (``store.outbox.<method>``) runs in a read
    transaction; the others run in a write transaction (:class:`taskyard.store.store.OneShot`)."""

    def __init__(self, tx: Tx) -> None:
        self.tx = tx

    def position(self, name: str) -> EventCursor:
        """Where follower ``name`` resumes: after the last event it had confirmed."""
        rows = self.tx.driver.read_positions(self.tx.raw, name)
        return START if not rows else EventCursor(int(rows[0][1]), int(rows[0][2]))

    def advance(self, name: str, cursor: EventCursor) -> bool:
        """Move follower ``name`` forward to ``cursor``; never back (two publishers of
        one name, or a stale one, cannot undo what was confirmed). True if it moved."""
        return self.tx.driver.advance_position(self.tx.raw, name, cursor)

    def positions(self) -> dict[str, tuple[EventCursor, float]]:
        """Every follower's position and when it last moved (database clock)."""
        return {name: (EventCursor(int(tx_id), int(event_id)), float(at))
                for name, tx_id, event_id, at in self.tx.driver.read_positions(self.tx.raw)}

    def job_facts(self, keys: Collection[tuple[int, int | None]]
                  ) -> dict[tuple[int, int | None], JobFacts]:
        """For each (job, attempt or None): the job's task type and trace context and the
        attempt's worker (name and host). Pruned jobs are left out."""
        driver, raw = self.tx.driver, self.tx.raw
        job_ids = sorted({job for job, _ in keys})
        types: dict[int, tuple[str, str | None]] = {}
        workers: dict[tuple[int, int], tuple[str | None, str | None]] = {}
        for part in chunks(job_ids):
            types.update((int(job), (str(type_), trace))
                         for job, type_, trace in driver.job_types(raw, part))
            workers.update(((int(job), int(attempt)), (host, name))
                           for job, attempt, name, host in driver.attempt_workers(raw, part))
        facts: dict[tuple[int, int | None], JobFacts] = {}
        for job, attempt in keys:
            if job in types:
                host, worker = workers.get((job, attempt or 0), (None, None))
                type_, trace = types[job]
                facts[(job, attempt)] = JobFacts(type_, host or None, worker, trace)
        return facts
