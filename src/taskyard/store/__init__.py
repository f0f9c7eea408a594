"""Persistence: every SQL statement of taskyard lives in this package.

The seam is a unit of work: ``with store.write() as tx:`` opens one transaction,
whose aggregates (``tx.jobs``, ``tx.graphs``, ``tx.attempts``, ``tx.workers``,
``tx.schedules``…) are named after the transitions they perform, each guarding its
change in SQL. ``store.jobs.get(1)`` runs one operation in a transaction of its own.
What differs between SQLite and PostgreSQL sits behind one dialect object per
backend (``store/dialects``). See docs/architecture.md.
"""

from __future__ import annotations

from taskyard.store.clock import MovableClock
from taskyard.store.cycle import CycleTx
from taskyard.store.dialects import Listener
from taskyard.store.store import Store
from taskyard.store.unit import Tx


def open_store(url: str, *, clock: MovableClock | None = None) -> Store:
    """A store for ``url`` (``sqlite:///file.db`` or ``postgresql://...``)."""
    return Store(url, clock=clock)


__all__ = ["CycleTx", "Listener", "MovableClock", "Store", "Tx", "open_store"]
