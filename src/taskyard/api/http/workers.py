"""``taskyard serve --workers N``: N server processes on one listening socket.

One Python process serves one core at most; on a machine with more, several processes
take the requests the kernel hands out on the shared socket. Each is a fresh
interpreter (spawned, not forked: no database connection or thread is shared) that
opens its own Yard and serves until it is told to stop. The parent binds the socket,
starts them, restarts one that dies (after a growing delay if it dies at once), and on
SIGTERM/SIGINT stops them all and waits for them.

What a process keeps for itself: its token cache (a revocation through another process
takes effect within ``token_ttl``), its failed-authentication counts, its connection
limit (``--max-connections`` per process), its group commit. The metrics' histograms
are each process's own reading of the event log since it started: every process
counts every start, so a scrape answered by any of them gives the same figures.
"""

from __future__ import annotations

import logging
import multiprocessing
import signal
import socket
import sys
import threading
import time
from dataclasses import dataclass
from multiprocessing.context import SpawnProcess
from types import FrameType

from taskyard.api.http.connection import ConnectionLimits
from taskyard.api.http.context import Settings

log = logging.getLogger("taskyard.http")
_spawn = multiprocessing.get_context("spawn")
STOP_WAIT = 20.0
"""Seconds a process gets to stop after SIGTERM before it is killed."""


@dataclass(frozen=True)
class ServeSpec:
    """What a server process needs to build its application."""

    db_url: str
    settings: Settings
    limits: ConnectionLimits
    forwarded_allow_ips: str | None = None
    log_level: int = logging.INFO


def serve_child(spec: ServeSpec, sock: socket.socket, index: int) -> None:
    """A server process's body (spawned): its own Yard and app on the shared socket."""
    from taskyard.api.http.app import create_app  # noqa: PLC0415 - in the child only
    from taskyard.api.http.server import HttpServer  # noqa: PLC0415
    from taskyard.api.yard import Yard  # noqa: PLC0415

    logging.basicConfig(level=logging.WARNING, stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s %(message)s")
    logging.getLogger("taskyard").setLevel(spec.log_level)
    yard = Yard(spec.db_url)
    try:
        server = HttpServer(create_app(yard, settings=spec.settings), limits=spec.limits,
                            sock=sock, forwarded_allow_ips=spec.forwarded_allow_ips)
        log.info("event=http-worker-started worker=%d", index)
        server.run()
    finally:
        yard.close()


class Workers:
    """The parent of ``count`` server processes on ``sock``."""

    def __init__(self, spec: ServeSpec, sock: socket.socket, count: int) -> None:
        self.spec, self.sock, self.count = spec, sock, count
        self._stop = threading.Event()
        self._procs: list[SpawnProcess] = []
        self._started: list[float] = []
        self._delay: list[float] = []

    def run(self) -> int:
        """Serve until SIGTERM/SIGINT; 0, or 1 when the processes kept dying at start."""
        def stop(sig: int, _: FrameType | None) -> None:
            self._stop.set()

        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, stop)
        for index in range(self.count):
            self._procs.append(self._start(index))
            self._started.append(time.monotonic())
            self._delay.append(0.0)
        failed = False
        while not self._stop.wait(0.5) and not failed:
            failed = self._keep_alive()
        self._stop_all()
        return 1 if failed else 0

    def _start(self, index: int) -> SpawnProcess:
        proc = _spawn.Process(target=serve_child, args=(self.spec, self.sock, index),
                              name=f"taskyard-http-{index}", daemon=False)
        proc.start()
        return proc

    def _keep_alive(self) -> bool:
        """Restart the processes that died; True when one keeps dying at once."""
        now = time.monotonic()
        for index, proc in enumerate(self._procs):
            if proc.is_alive():
                continue
            lived = now - self._started[index]
            self._delay[index] = 0.0 if lived > 60 else min(self._delay[index] * 2 or 1, 30)
            if self._delay[index] >= 30:
                log.error("event=http-worker-failing worker=%d exit=%s: stopping",
                          index, proc.exitcode)
                return True
            log.warning("event=http-worker-died worker=%d exit=%s restart_in=%.0fs",
                        index, proc.exitcode, self._delay[index])
            if self._stop.wait(self._delay[index]):
                return False
            self._procs[index] = self._start(index)
            self._started[index] = time.monotonic()
        return False

    def _stop_all(self) -> None:
        for proc in self._procs:
            if proc.is_alive() and proc.pid is not None:
                proc.terminate()  # SIGTERM: it stops as a lone server does
        deadline = time.monotonic() + STOP_WAIT
        for proc in self._procs:
            proc.join(max(0.0, deadline - time.monotonic()))
            if proc.is_alive():
                proc.kill()
                proc.join()
