"""The HTTP tests' server: a real server on a loopback port, on a fresh database of each
store, with a client that holds a token of each scope; workers on demand (real handler
processes)."""

from __future__ import annotations

import ssl
import subprocess
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import httpx
from tests.polling import free_port, wait_for

from taskyard.api.http.app import create_app
from taskyard.api.http.connection import ConnectionLimits
from taskyard.api.http.context import Settings
from taskyard.api.http.server import HttpServer
from taskyard.api.http.tokens import mint_token
from taskyard.api.yard import Yard
from taskyard.scheduler.daemon import SchedulerDaemon
from taskyard.store import open_store
from taskyard.worker.daemon import WorkerDaemon

HANDLERS = "python:tests.handlers_for_tests"
PLAIN = ssl.create_default_context()
"""One TLS context for every client (the servers speak plain HTTP): httpx otherwise builds
one per client, loading the system's certificates each time (a seventh of the HTTP
tests' CPU, py-spy)."""


def taskyard(db_url: str, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """The real command, in a subprocess, on ``db_url``."""
    return subprocess.run([sys.executable, "-m", "taskyard", "--db", db_url, *args],
                          check=False, capture_output=True, text=True, timeout=timeout)


@dataclass
class Api:
    """The server under test: its URL, its Yard, and one token per scope."""

    url: str
    yard: Yard
    server: HttpServer
    tokens: dict[str, str]
    db_url: str
    _stops: list[threading.Event] = field(default_factory=list)
    _threads: list[threading.Thread] = field(default_factory=list)

    def client(self, scope: str | None = "admin", **headers: str) -> httpx.Client:
        auth = {} if scope is None else {"Authorization": f"Bearer {self.tokens[scope]}"}
        return httpx.Client(base_url=self.url, headers={**auth, **headers}, timeout=60,
                            verify=PLAIN)

    def get(self, path: str, **kw: Any) -> httpx.Response:
        with self.client() as c:
            return c.get(path, **kw)

    def post(self, path: str, **kw: Any) -> httpx.Response:
        with self.client() as c:
            return c.post(path, **kw)

    def add_worker(self, name: str = "w1", capacity: int = 2) -> None:
        """A worker with no cycle of its own (a scheduler's, or a submit's once it is
        live, places): returns once it is registered — a job submitted before that finds
        no live worker, stays pending, and with no scheduler nothing would place it."""
        daemon = WorkerDaemon(open_store(self.db_url), name=name, capacity=capacity,
                              lease_seconds=15.0, kill_grace=1.0)
        self._run(daemon.run)
        wait_for(f"worker {name} to register", lambda: daemon.worker_id is not None
                 or not self._threads[-1].is_alive())
        assert daemon.worker_id is not None, f"worker {name} ended before it registered"

    def add_scheduler(self) -> None:
        self._run(SchedulerDaemon(open_store(self.db_url), interval=0.2).run)

    def _run(self, target: Callable[[threading.Event], None]) -> None:
        stop = threading.Event()
        thread = threading.Thread(target=target, args=(stop,), daemon=True)
        thread.start()
        self._stops.append(stop)
        self._threads.append(thread)

    def wait_job(self, job_id: int, states: tuple[str, ...] = ("succeeded",)) -> Any:
        return wait_for(f"job {job_id} in {states}", lambda: (
            (j := self.get(f"/api/v1/jobs/{job_id}").json())["state"] in states and j))

    def stop(self) -> None:
        for stop in self._stops:
            stop.set()
        for thread in self._threads:
            thread.join(30)
        self.server.stop()


def start_api(db_url: str, settings: Settings | None = None,
              limits: ConnectionLimits | None = None) -> Api:
    yard = Yard(db_url)
    tokens = {scope: mint_token(yard.store, f"test-{scope}", scope)[0]
              for scope in ("read", "write", "admin")}
    port = free_port()
    server = HttpServer(create_app(yard, settings=settings), "127.0.0.1", port, limits=limits)
    server.start()
    wait_for("the server to start", lambda: server.started, timeout=30)
    return Api(f"http://127.0.0.1:{port}", yard, server, tokens, db_url)


@dataclass
class SseMessage:
    id: str | None = None
    event: str | None = None
    data: str = ""


class SseReader:
    """Reads a ``text/event-stream`` response message by message (comments kept apart)."""

    def __init__(self, response: httpx.Response) -> None:
        self.lines = response.iter_lines()
        self.comments: list[str] = []
        self.retry: str | None = None

    def next(self) -> SseMessage | None:
        """The next message; None when the stream ended."""
        message = SseMessage()
        started = False
        for line in self.lines:
            if line == "":
                if started:
                    return message
                continue
            if line.startswith(":"):
                self.comments.append(line)
                continue
            name, _, value = line.partition(": ")
            if name == "retry":
                self.retry = value
                continue
            started = True
            if name == "id":
                message.id = value
            elif name == "event":
                message.event = value
            elif name == "data":
                message.data += value
        return None
