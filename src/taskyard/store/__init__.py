"""Persistence: every SQL statement of taskyard lives in this package.

``Store`` is the one seam between the daemons and the database; its methods
are named after the transitions they perform and each guards its change in SQL.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from taskyard.store.aging import AgingMixin
from taskyard.store.cycle import CycleStore, CycleTx
from taskyard.store.events import EventStore
from taskyard.store.execution import ExecutionMixin
from taskyard.store.explain import ExplainMixin
from taskyard.store.graphs import GraphStore
from taskyard.store.listen import Listener, open_listener
from taskyard.store.records import TaskTypeSpec
from taskyard.store.retention import RetentionMixin
from taskyard.store.retry import RetryMixin
from taskyard.store.schedule_defs import definition_from_mapping
from taskyard.store.schedules import ScheduleRecord, ScheduleStore  # recurring:
from taskyard.store.task_types import validate_task_type


class Store(RetentionMixin, RetryMixin, ScheduleStore, ExplainMixin,  # recurring: ScheduleStore
            ExecutionMixin, CycleStore, GraphStore, EventStore, AgingMixin):
    """All persistence operations, on SQLite or PostgreSQL."""

    def init_schema(self) -> None:
        """Create or migrate the schema to the latest version (idempotent)."""
        # Imported here: Alembic is slow to import and only init needs it.
        from taskyard.store.migrate import upgrade  # noqa: PLC0415

        upgrade(self.engine)

    def apply_config(
        self, specs: Sequence[TaskTypeSpec], pools: Mapping[str, str] | None = None,
        schedules: Mapping[str, Mapping[str, Any]] | None = None,
    ) -> list[ScheduleRecord]:
        """What ``taskyard apply`` declares — task types, pools and schedules — in one
        transaction: a file with one bad entry changes nothing."""
        for spec in specs:
            validate_task_type(spec)
        defs = [definition_from_mapping(str(n), body) for n, body in (schedules or {}).items()]
        with self._tx() as conn:
            self._put_task_types(conn, specs, pools)
            self._put_schedules(conn, defs, None)
        return [self._get(d.name) for d in defs]

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
