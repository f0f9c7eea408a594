"""Running the application with uvicorn: in the foreground (``taskyard serve``) or in a
thread of ``taskyard up --http``. Stopping closes the event feed first, so that open
event streams end and the server does not wait for them."""

from __future__ import annotations

import signal
import threading
from types import FrameType

import uvicorn
from fastapi import FastAPI

from taskyard.api.http.feed import EventFeed


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
    """``app`` on ``host:port``; :meth:`run` in the foreground or :meth:`start` a thread."""

    def __init__(self, app: FastAPI, host: str = "127.0.0.1", port: int = 8080, *,
                 log_level: str = "warning", access_log: bool = False) -> None:
        config = uvicorn.Config(app, host=host, port=port, log_level=log_level,
                                access_log=access_log, lifespan="on",
                                timeout_graceful_shutdown=10, server_header=False)
        self.app = app
        self._server = _Server(config)
        self._server.feed = app.state.feed
        self._thread: threading.Thread | None = None

    @property
    def started(self) -> bool:
        return bool(self._server.started)

    def run(self) -> None:
        """Serve until SIGINT/SIGTERM (main thread) or :meth:`stop`, then return."""
        # uvicorn handles the signals while it serves, then raises the one it got again
        # for the handler it found: with these, the process goes on and exits 0.
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, lambda *_: None)
        self._server.run()

    def start(self) -> None:
        self._thread = threading.Thread(target=self._server.run, name="http", daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 10.0) -> None:
        self._server.handle_exit(0, None)
        if self._thread is not None:
            self._thread.join(timeout)

    @property
    def alive(self) -> bool:
        return self._thread is not None and self._thread.is_alive()
