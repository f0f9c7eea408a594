"""``taskyard worker``: one worker daemon in this process until SIGTERM or SIGINT."""

from __future__ import annotations

import logging
import os
import signal
import threading
from collections.abc import Callable, Sequence
from types import FrameType

from taskyard.core.prefetch import DEFAULT_PREFETCH
from taskyard.model.errors import Conflict
from taskyard.store import Connections, Store, open_store
from taskyard.worker.daemon import WorkerDaemon
from taskyard.worker.reports import Placer

log = logging.getLogger("taskyard.worker")

Companion = Callable[[Store, threading.Event], None]
"""Work run in a thread beside the worker, on its store, until the stop event is set
(``taskyard worker --scheduler``: a scheduler daemon)."""


def main_worker(url: str, *, name: str | None, pools: Sequence[str], capacity: int | None,
                lease_seconds: float = 15.0, placer: Placer | None = None,
                prefetch: int = DEFAULT_PREFETCH, companions: Sequence[Companion] = (),
                connections: Connections | None = None) -> int:
    """Run a worker until SIGTERM/SIGINT; used by ``taskyard worker``. ``companions``
    run in threads of their own on the worker's store, and stop with it;
    ``connections``: the worker's budget of PostgreSQL connections (cli/budget.py)."""
    stop = threading.Event()

    def on_signal(signum: int, _frame: FrameType | None) -> None:
        log.info("event=signal signal=%s", signal.Signals(signum).name)
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    store = open_store(url, connections=connections)
    threads = [threading.Thread(target=run, args=(store, stop), name=f"companion-{i}",
                                daemon=True) for i, run in enumerate(companions)]
    try:
        for thread in threads:
            thread.start()
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
        stop.set()  # a fenced worker ends its companions too
        for thread in threads:
            thread.join(30)
        store.close()
