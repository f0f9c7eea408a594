"""Running a worker's loop in this process until a stop event: ``taskyard worker`` (and,
with another executor, ``taskyard celery-pool``)."""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable, Sequence

from taskyard.core.prefetch import DEFAULT_PREFETCH
from taskyard.model.errors import Conflict
from taskyard.store import Store, open_store
from taskyard.worker.daemon import WorkerDaemon
from taskyard.worker.reports import Placer

log = logging.getLogger("taskyard.worker")

Companion = Callable[[Store, threading.Event], None]
"""Work run in a thread beside the worker, on its store, until the stop event is set
(``taskyard worker --scheduler``: a scheduler daemon)."""


def serve(daemon: WorkerDaemon, stop: threading.Event) -> int:
    """Run ``daemon`` until ``stop`` (or until it loses its lease); the exit code: 1 if
    it was fenced, else 0. A name that a live worker holds (e.g. one killed moments ago
    whose lease has not run out) is taken with the process id appended instead."""
    try:
        daemon.run(stop)
    except Conflict:
        daemon.rename(f"{daemon.name}-{os.getpid()}")
        log.warning("event=name-taken worker=%s", daemon.name)
        daemon.run(stop)
    return 1 if daemon.fenced else 0


def main_worker(url: str, stop: threading.Event, *, name: str | None, pools: Sequence[str],
                capacity: int | None, lease_seconds: float = 15.0,
                placer: Placer | None = None, prefetch: int = DEFAULT_PREFETCH,
                companions: Sequence[Companion] = ()) -> int:
    """Run a worker until ``stop`` is set; used by ``taskyard worker``. ``companions``
    run in threads of their own on the worker's store, and stop with it."""
    store = open_store(url)
    threads = [threading.Thread(target=run, args=(store, stop), name=f"companion-{i}",
                                daemon=True) for i, run in enumerate(companions)]
    try:
        for thread in threads:
            thread.start()
        return serve(WorkerDaemon(store, name=name, pools=pools, capacity=capacity,
                                  lease_seconds=lease_seconds, placer=placer,
                                  prefetch=prefetch), stop)
    finally:
        stop.set()  # a fenced worker ends its companions too
        for thread in threads:
            thread.join(30)
        store.close()
