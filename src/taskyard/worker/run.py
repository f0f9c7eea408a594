"""``taskyard worker``: one worker daemon in this process until SIGTERM or SIGINT."""

from __future__ import annotations

import logging
import os
import signal
import threading
from collections.abc import Sequence
from types import FrameType

from taskyard.core.prefetch import DEFAULT_PREFETCH
from taskyard.model.errors import Conflict
from taskyard.store import open_store
from taskyard.worker.daemon import WorkerDaemon
from taskyard.worker.reports import Placer

log = logging.getLogger("taskyard.worker")


def main_worker(url: str, *, name: str | None, pools: Sequence[str], capacity: int | None,
                lease_seconds: float = 15.0, placer: Placer | None = None,
                prefetch: int = DEFAULT_PREFETCH) -> int:
    """Run a worker until SIGTERM/SIGINT; used by ``taskyard worker``."""
    stop = threading.Event()

    def on_signal(signum: int, _frame: FrameType | None) -> None:
        log.info("event=signal signal=%s", signal.Signals(signum).name)
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    store = open_store(url)
    try:
        daemon = WorkerDaemon(
            store, name=name, pools=pools, capacity=capacity, lease_seconds=lease_seconds,
            placer=placer, prefetch=prefetch,
        )
        try:
            daemon.run(stop)
        except Conflict:
            # A live worker holds that name (e.g. one killed moments ago whose lease
            # has not run out): join under a name of our own instead of failing.
            daemon.name = f"{daemon.name}-{os.getpid()}"
            daemon.executor.env["TASKYARD_WORKER"] = daemon.name
            log.warning("event=name-taken worker=%s", daemon.name)
            daemon.run(stop)
        return 1 if daemon.fenced else 0
    finally:
        store.close()
