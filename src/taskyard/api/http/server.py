"""Running the application with uvicorn: in the foreground (``taskyard serve``), in a
thread of ``taskyard up --http``, or in several processes sharing one listening socket
(``taskyard serve --workers N``, :mod:`taskyard.api.http.workers`).

The socket is bound first (:func:`bind`), so that a taken port is an error before
anything says the server started, and the address said is the real one (``--port 0``
gets a free port). Stopping closes the event feed first, so that open event streams
end and the server does not wait for them.
"""

from __future__ import annotations

import gc
import signal
import socket
import threading
from types import FrameType

import uvicorn
from fastapi import FastAPI

from taskyard.api.http.connection import ConnectionLimits, LimitedConfig
from taskyard.api.http.feed import EventFeed


def bind(host: str, port: int) -> socket.socket:
    """A listening TCP socket on ``host:port`` (``''``: every IPv4 address; an IPv6
    address or ``::``: IPv6); OSError when it cannot be had (the port is taken…)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.create_server((host, port), family=family, backlog=2048)
    sock.set_inheritable(True)
    return sock


def address_url(sock: socket.socket) -> str:
    """The URL a browser on this machine opens for ``sock``'s address (a wildcard
    address shown as loopback)."""
    host, port = sock.getsockname()[:2]
    shown = {"0.0.0.0": "127.0.0.1", "::": "::1"}.get(host, host)
    return f"http://{'[' + shown + ']' if ':' in shown else shown}:{port}/"


class _Server(uvicorn.Server):
    """uvicorn's server whose exit (a signal, or :meth:`HttpServer.stop`) first ends the
    event streams: uvicorn waits for open responses before it stops, and a stream never
    ends by itself."""

    feed: EventFeed | None = None

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        if self.feed is not None:
            # Not waiting for its listener thread: this runs in the event loop, which
            # the streams need to end themselves (the app's shutdown joins the thread).
            self.feed.close(wait=False)
        super().handle_exit(sig, frame)


class HttpServer:
    """``app`` on ``host:port`` with the connection ``limits``; :meth:`run` in the
    foreground or :meth:`start` a thread. :meth:`bind` first to know the address."""

    def __init__(self, app: FastAPI, host: str = "127.0.0.1", port: int = 8080, *,
                 limits: ConnectionLimits | None = None, log_level: str = "warning",
                 access_log: bool = False, sock: socket.socket | None = None,
                 forwarded_allow_ips: str | None = None) -> None:
        config = LimitedConfig(app, limits=limits or ConnectionLimits(), host=host,
                               port=port, log_level=log_level, access_log=access_log,
                               lifespan="on", timeout_graceful_shutdown=10,
                               server_header=False, forwarded_allow_ips=forwarded_allow_ips)
        self.app = app
        self.host, self.port = host, port
        self._server = _Server(config)
        self._server.feed = app.state.feed
        self._thread: threading.Thread | None = None
        self.socket = sock

    def bind(self) -> socket.socket:
        """Bind the listening socket now (OSError if the address cannot be had)."""
        if self.socket is None:
            self.socket = bind(self.host, self.port)
        return self.socket

    @property
    def url(self) -> str:
        return address_url(self.bind())

    @property
    def started(self) -> bool:
        return bool(self._server.started)

    def run(self) -> None:
        """Serve until SIGINT/SIGTERM (main thread) or :meth:`stop`, then return: the
        process is the server's (``taskyard serve``, a process of ``--workers N``)."""
        # What start-up made (modules, routes, schemas, the store's metadata) lives as long
        # as the process: kept out of the cyclic collector's scans, which each request's
        # allocations set off and which walked it all (a tenth of a submit's CPU on
        # SQLite: 0.93 s of collections for 8,500 submits, 0.09 s frozen). Not in the
        # app's start-up: an app served from a thread of a process that goes on (`up`,
        # tests, an embedding program) would collect that process's whole heap each time.
        gc.collect()
        gc.freeze()
        # uvicorn handles the signals while it serves, then raises the one it got again
        # for the handler it found: with these, the process goes on and exits 0.
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, lambda *_: None)
        self._server.run(sockets=[self.bind()])

    def start(self) -> None:
        sock = self.bind()
        self._thread = threading.Thread(target=self._server.run, kwargs={"sockets": [sock]},
                                        name="http", daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 10.0) -> None:
        self._server.handle_exit(0, None)
        if self._thread is not None:
            self._thread.join(timeout)
        if self.socket is not None:
            self.socket.close()

    @property
    def alive(self) -> bool:
        return self._thread is not None and self._thread.is_alive()
