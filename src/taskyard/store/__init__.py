"""Persistence: every SQL statement of taskyard lives in this package.

``Store`` is the one seam between the daemons and the database; its methods
are named after the transitions they perform and each guards its change in SQL.
"""

from __future__ import annotations

from taskyard.store.aging import AgingMixin
from taskyard.store.cycle import CycleStore, CycleTx
from taskyard.store.events import EventStore
from taskyard.store.execution import ExecutionMixin
from taskyard.store.explain import ExplainMixin
from taskyard.store.graphs import GraphStore
from taskyard.store.listen import Listener, open_listener
from taskyard.store.retention import RetentionMixin
from taskyard.store.retry import RetryMixin
from taskyard.store.schedules import ScheduleStore  # recurring:


class Store(RetentionMixin, RetryMixin, ScheduleStore, ExplainMixin,  # recurring: ScheduleStore
            ExecutionMixin, CycleStore, GraphStore, EventStore, AgingMixin):
    """All persistence operations, on SQLite or PostgreSQL."""

    def init_schema(self) -> None:
        """Create or migrate the schema to the latest version (idempotent)."""
        # Imported here: Alembic is slow to import and only init needs it.
        from taskyard.store.migrate import upgrade  # noqa: PLC0415

        upgrade(self.engine)

    def close(self) -> None:
        """Release every pooled connection and the cycle lock's file."""
        lock = getattr(self, "_file_lock", None)
        if lock is not None:
            lock.close()
        super().close()

    def listener(self, channel: str) -> Listener:
        """Wake-ups for ``channel``: ``scheduler`` or ``worker.<id>``."""
        return open_listener(self.url, channel)


def open_store(url: str) -> Store:
    """A store for ``url`` (``sqlite:///file.db`` or ``postgresql://...``)."""
    return Store(url)


__all__ = ["CycleTx", "Listener", "Store", "open_store"]
