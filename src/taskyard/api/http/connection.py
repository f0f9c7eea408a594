"""Limits on the connection itself, below the application: what an exposed port must
hold against whoever reaches it (uvicorn's HTTP/1.1 protocol on httptools, which by
itself keeps any header however large, and a silent connection forever).

- **Header size**: the request line and headers of one request, at most
  ``max_header_bytes``; past it, ``431 Request Header Fields Too Large`` and the
  connection is closed (counted as they arrive: a 200 MiB header is refused after the
  first ``max_header_bytes``, never held).
- **Idle connections**: one that sends nothing for ``idle_timeout`` seconds — before its
  first request or between two — is closed.
- **Unfinished requests**: a request must arrive whole (headers and body) within
  ``request_timeout`` seconds of its first byte, else ``408 Request Timeout`` (when no
  answer has started) and the connection is closed: a client that sends half a
  header, or half a body, byte by byte, is dropped all the same.
- **Connections**: at most ``max_connections`` open per server process; one more is
  answered ``503`` and closed at once.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from typing import Any

import uvicorn
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol


@dataclass(frozen=True)
class ConnectionLimits:
    """The limits of :mod:`taskyard.api.http.connection` (``taskyard serve`` flags)."""

    max_header_bytes: int = 64 * 1024
    idle_timeout: float = 15.0
    request_timeout: float = 60.0
    max_connections: int = 1000


class LimitedConfig(uvicorn.Config):
    """uvicorn's configuration, carrying the limits to each connection's protocol (and
    to the processes of ``--workers``, which get it pickled)."""

    def __init__(self, app: Any, *, limits: ConnectionLimits, **options: Any) -> None:
        super().__init__(app, http=LimitedHttpTools, timeout_keep_alive=max(
            1, round(limits.idle_timeout)), **options)
        self.limits = limits


def _refusal(status: int, reason: str, message: str) -> bytes:
    body = json.dumps({"error": {"status": status, "message": message}}).encode()
    return (f"HTTP/1.1 {status} {reason}\r\ncontent-type: application/json\r\n"
            f"content-length: {len(body)}\r\nconnection: close\r\n\r\n").encode() + body


class LimitedHttpTools(HttpToolsProtocol):
    """uvicorn's httptools protocol with the limits of :class:`ConnectionLimits`."""

    def __init__(self, config: uvicorn.Config, *args: Any, **kwargs: Any) -> None:
        super().__init__(config, *args, **kwargs)
        self.limits: ConnectionLimits = getattr(config, "limits", ConnectionLimits())
        self._head_bytes = 0
        self._head_done = False
        self._deadline: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        if len(self.connections) > self.limits.max_connections:
            self._refuse(503, "Service Unavailable", "too many connections to this server; "
                         "try again later")
            return
        self._arm(self.limits.idle_timeout, idle=True)

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        if self._deadline is None or self._idle:  # the first bytes of a request
            self._arm(self.limits.request_timeout, idle=False)
        if not self._head_done:
            self._head_bytes += len(data)
        super().data_received(data)
        if not self._head_done and self._head_bytes > self.limits.max_header_bytes:
            self._refuse(431, "Request Header Fields Too Large",
                         f"request line and headers: larger than this server's limit of "
                         f"{self.limits.max_header_bytes} bytes")

    def on_headers_complete(self) -> None:
        self._head_done = True
        super().on_headers_complete()

    def on_message_complete(self) -> None:
        super().on_message_complete()
        self._disarm()  # the request is whole: the answer takes the time it takes
        self._head_bytes, self._head_done = 0, False

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if self._deadline is None and not self.transport.is_closing():
            self._arm(self.limits.idle_timeout, idle=True)

    def _arm(self, seconds: float, *, idle: bool) -> None:
        self._disarm()
        self._idle = idle
        self._deadline = self.loop.call_later(seconds, self._expired)

    def _disarm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _expired(self) -> None:
        self._deadline = None
        if self.transport.is_closing():
            return
        if self._idle or (self.cycle is not None and self.cycle.response_started):
            self.transport.close()
            return
        self._refuse(408, "Request Timeout", "the request did not arrive whole within "
                     f"{self.limits.request_timeout:g} s")

    def _refuse(self, status: int, reason: str, message: str) -> None:
        self._disarm()
        if not self.transport.is_closing():
            self.transport.write(_refusal(status, reason, message))
            self.transport.close()
