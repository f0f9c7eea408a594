"""A running taskyard in-process: scheduler and worker daemons on threads, real
child processes for the handlers, a real database of each backend."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import pytest

from taskyard.api.yard import Yard
from taskyard.core.prefetch import DEFAULT_PREFETCH
from taskyard.scheduler.daemon import SchedulerDaemon
from taskyard.store import open_store
from taskyard.worker.daemon import WorkerDaemon
from taskyard.worker.reports import Placer


@dataclass
class Cluster:
    url: str
    yard: Yard
    stops: list[threading.Event] = field(default_factory=list)
    threads: list[threading.Thread] = field(default_factory=list)
    workers: list[WorkerDaemon] = field(default_factory=list)

    def add_worker(self, name: str, capacity: int = 2, pools: tuple[str, ...] = ("default",),
                   lease: float = 15.0, placer: Placer | None = None, *,
                   prefetch: int = DEFAULT_PREFETCH) -> WorkerDaemon:
        """``placer``: the cycle the worker runs itself (as ``taskyard worker`` does);
        without one, only a scheduler places."""
        daemon = WorkerDaemon(open_store(self.url), name=name, pools=pools, capacity=capacity,
                              lease_seconds=lease, kill_grace=1.0, placer=placer,
                              prefetch=prefetch)
        self._start(daemon.run)
        self.workers.append(daemon)
        return daemon

    def add_scheduler(self, **options: object) -> None:
        daemon = SchedulerDaemon(open_store(self.url), **options)  # type: ignore[arg-type]
        self._start(daemon.run)

    def _start(self, target: Callable[[threading.Event], None]) -> None:
        stop = threading.Event()
        thread = threading.Thread(target=target, args=(stop,), daemon=True)
        thread.start()
        self.stops.append(stop)
        self.threads.append(thread)

    def stop(self) -> None:
        for stop in self.stops:
            stop.set()
        for thread in self.threads:
            thread.join(30)


@pytest.fixture
def cluster(db_url: str) -> Iterator[Cluster]:
    yard = Yard(db_url)
    c = Cluster(db_url, yard)
    yield c
    c.stop()
    yard.close()
