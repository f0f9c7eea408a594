"""Persistence: every SQL statement of taskyard lives in this package.

The seam is a unit of work: ``with store.write() as tx:`` opens one transaction,
whose aggregates (``tx.jobs``, ``tx.graphs``, ``tx.attempts``, ``tx.workers``,
``tx.schedules``…) are named after the transitions they perform, each guarding its
change in SQL. ``store.jobs.get(1)`` runs one operation in a transaction of its own.
What differs between SQLite and PostgreSQL sits behind one dialect object per
backend (``store/dialects``). See docs/architecture.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from taskyard.store.clock import MovableClock
from taskyard.store.driver import Connections, Listener
from taskyard.store.store import Store
from taskyard.store.unit import Tx

if TYPE_CHECKING:
    from taskyard.store.transitions.cycle import CycleTx


def open_store(url: str, *, clock: MovableClock | None = None,
               connections: Connections | None = None) -> Store:
    """A store for ``url`` (``sqlite:///file.db`` or ``postgresql://...``);
    ``connections``: the process's budget of PostgreSQL connections, and where it listens."""
    return Store(url, clock=clock, connections=connections)


def __getattr__(name: str) -> Any:
    # The cycle's module (and the placement logic under it) is imported on first use:
    # a CLI submit that runs no cycle never loads it (start-up time).
    if name == "CycleTx":
        from taskyard.store.transitions.cycle import CycleTx  # noqa: PLC0415 - start-up time

        return CycleTx
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["Connections", "CycleTx", "Listener", "MovableClock", "Store", "Tx", "open_store"]
