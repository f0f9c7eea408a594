"""Limits on the connection (issue 36, F3): a header past the cap is 431, a connection
that sends nothing, half a header or half a body is dropped, and a connection past the
cap is refused — on a server with short timeouts, so that the tests wait seconds."""

from __future__ import annotations

import logging
import socket
import time
from collections.abc import Iterator
from urllib.parse import urlsplit

import httpx
import pytest
from http_helpers import Api, start_api, wait_for
from test_outsider import until_closed

from taskyard.api.http.connection import ConnectionLimits

LIMITS = ConnectionLimits(max_header_bytes=16 * 1024, idle_timeout=1.0, request_timeout=2.0,
                          max_connections=8)


@pytest.fixture
def limited(db_url: str) -> Iterator[Api]:
    started = start_api(db_url, limits=LIMITS)
    yield started
    started.stop()
    started.yard.close()


def _connect(api: Api) -> socket.socket:
    parts = urlsplit(api.url)
    return socket.create_connection((parts.hostname, parts.port), timeout=30)


def test_a_header_past_the_cap_is_431(limited: Api) -> None:
    with _connect(limited) as conn:
        conn.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: ")
        sent = 0
        try:  # far more than the cap: refused once past it, never held whole
            while sent < 50 * 1024 * 1024:
                conn.sendall(b"a" * 65536)
                sent += 65536
        except (BrokenPipeError, ConnectionResetError):
            pass
        answer = until_closed(conn)
    assert sent < 50 * 1024 * 1024
    assert answer.startswith(b"HTTP/1.1 431 "), answer[:200]
    assert b"16384 bytes" in answer


def test_a_silent_connection_is_closed(limited: Api) -> None:
    with _connect(limited) as conn:
        assert until_closed(conn) == b""


def test_half_a_header_is_dropped(limited: Api) -> None:
    with _connect(limited) as conn:
        conn.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")
        for _ in range(3):  # trickling keeps it alive no longer than the request timeout
            time.sleep(0.5)
            conn.sendall(b"X-A: b\r\n")
        answer = until_closed(conn)
    assert answer.startswith(b"HTTP/1.1 408 "), answer[:200]


def test_half_a_body_is_dropped(limited: Api, caplog: pytest.LogCaptureFixture) -> None:
    # On its logger: the CLI's main() run in this process earlier (as
    # tests/store/test_schedule_cli.py does) leaves "taskyard" at WARNING, which the
    # root's level alone would not undo.
    caplog.set_level(logging.INFO, logger="taskyard.http")
    token = limited.tokens["write"]
    with _connect(limited) as conn:
        conn.sendall(f"POST /api/v1/jobs HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {token}"
                     "\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n"
                     '{"type": '.encode())
        answer = until_closed(conn)
    assert answer.startswith(b"HTTP/1.1 408 "), answer[:200]
    # The route reading the body learns the client is gone: one line, not a server
    # error with two tracebacks (any writer could fill the log with them).
    wait_for("the route to see the client gone", lambda: [
        r for r in caplog.records if "event=http-client-gone" in r.getMessage()])
    errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert not errors, errors


def test_a_kept_alive_connection_serves_several_requests(limited: Api) -> None:
    with limited.client("read") as reader:
        for _ in range(3):
            assert reader.get("/api/v1/jobs").status_code == 200
            time.sleep(0.3)


def test_a_connection_past_the_cap_is_refused(limited: Api) -> None:
    held = [_connect(limited) for _ in range(LIMITS.max_connections)]
    try:
        for conn in held:  # each keeps itself open: a request begun, not finished
            conn.sendall(b"GET /healthz HTTP/1.1\r\n")
        with _connect(limited) as extra:
            answer = until_closed(extra)
        assert answer.startswith(b"HTTP/1.1 503 "), answer[:200]
    finally:
        for conn in held:
            conn.close()

    def answered() -> bool:  # once their closing has reached the server
        with limited.client(None) as anyone:
            try:
                return anyone.get("/healthz").status_code == 200
            except httpx.HTTPError:
                return False

    wait_for("a connection to be taken again", answered)
