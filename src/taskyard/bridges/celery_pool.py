"""``taskyard celery-pool``: a taskyard worker whose jobs existing Celery workers run.

It is the worker's own loop (:class:`~taskyard.worker.daemon.WorkerDaemon`: register,
lease, heartbeat, self-fencing, batched reports, the stop path) with another executor:
:class:`~taskyard.bridges.celery_executor.CeleryExecutor` sends each job placed on it
as the Celery task its handler names, and hands in the ends Celery reports. So
placement, locks, capacity, priorities, timeouts and retries stay taskyard's, and the
store refuses the late result of an attempt that is no longer current, as a worker's.
"""

from __future__ import annotations

import os
import socket
import threading
from collections.abc import Sequence
from typing import Any

from taskyard.bridges.celery_events import CeleryEvents
from taskyard.bridges.celery_executor import CeleryExecutor
from taskyard.store import Store, open_store
from taskyard.worker.daemon import WorkerDaemon
from taskyard.worker.executors import Hooks
from taskyard.worker.reports import Placer
from taskyard.worker.run import serve


class CeleryPool:
    """A worker of ``pools`` whose jobs run as Celery tasks of ``app``."""

    def __init__(self, store: Store, app: Any, *, name: str | None = None,
                 pools: Sequence[str] = ("celery",), capacity: int = 16,
                 lease_seconds: float = 15.0, queue: str | None = None,
                 placer: Placer | None = None) -> None:
        def executor(hooks: Hooks) -> CeleryExecutor:
            return CeleryExecutor(app, hooks, queue_name=queue)

        # No prefetch: a job queued here beyond the capacity would wait in the broker.
        self.daemon = WorkerDaemon(
            store, name=name or f"{socket.gethostname()}-celery-{os.getpid()}",
            pools=pools, capacity=capacity, lease_seconds=lease_seconds, placer=placer,
            prefetch=0, executor=executor)
        assert isinstance(self.daemon.executor, CeleryExecutor)
        self.executor: CeleryExecutor = self.daemon.executor

    @property
    def events(self) -> CeleryEvents:
        return self.executor.events

    def run(self, stop: threading.Event) -> int:
        """Serve until ``stop`` (0), or until fenced (1)."""
        return serve(self.daemon, stop)


def celery_app(broker: str, result_backend: str | None) -> Any:
    """A Celery app that only sends tasks and follows events (no task of its own)."""
    from celery import Celery  # noqa: PLC0415 - the optional extra

    app = Celery("taskyard-celery-pool", broker=broker, backend=result_backend,
                 set_as_current=False)
    app.conf.broker_connection_retry_on_startup = True
    return app


def main_celery_pool(url: str, broker: str, stop: threading.Event, *,
                     result_backend: str | None, name: str | None, pools: Sequence[str],
                     capacity: int, lease_seconds: float, queue: str | None,
                     placer: Placer | None) -> int:
    """Run a celery-pool until ``stop`` (or until fenced: 1); used by ``taskyard
    celery-pool``."""
    store = open_store(url)
    try:
        pool = CeleryPool(store, celery_app(broker, result_backend), name=name, pools=pools,
                          capacity=capacity, lease_seconds=lease_seconds, queue=queue,
                          placer=placer)
        return pool.run(stop)
    finally:
        store.close()
