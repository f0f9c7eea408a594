"""What an outsider or a write token could do to 7e1cfb7 (issue 36, F2-F4, F7, F9, F11,
F12, F13, items 5 and 6), checked through the HTTP API, the served pages and ``taskyard
serve`` alone: this file imports only what that version had too, so that each test
here can be run against it and fail there for the finding's own reason (the tests of
the fixes themselves, in test_guard.py, test_connection_limits.py, test_feed_idle.py,
test_serve_cli.py and test_shell_args.py, import modules that version lacks)."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from http_helpers import Api, SseReader, start_api, wait_for
from test_guard import head, raw

ENV = {**{k: v for k, v in os.environ.items() if k != "TASKYARD_DB"},
       "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
STARTED = re.compile(r"event=http-started url=(\S+)")
F2_ROUTES = ("/api/v1/jobs", "/api/v1/tokens", "/api/v1/schedules", "/api/v1/task-types",
             "/api/v1/apply", "/api/v1/prune")


@pytest.fixture
def defaults(db_url: str) -> Iterator[Api]:
    """A server with the connection limits and settings a user gets by default."""
    started = start_api(db_url)
    yield started
    started.stop()
    started.yard.close()


def test_failed_authentications_are_throttled_per_client(defaults: Api) -> None:
    """F11: a client could guess tokens as fast as the server answered."""
    with defaults.client("read") as reader:
        assert reader.get("/api/v1/jobs").status_code == 200
    with defaults.client(None, Authorization="Bearer ty_guess") as guesser:
        codes = [guesser.get("/api/v1/jobs").status_code for _ in range(61)]
        assert codes[:60] == [401] * 60 and codes[60] == 429
        refused = guesser.get("/api/v1/jobs")
        assert refused.status_code == 429 and int(refused.headers["retry-after"]) > 0
        assert "too many failed authentications" in refused.json()["error"]["message"]


@pytest.mark.parametrize("path", F2_ROUTES)
def test_no_token_is_401_before_a_body_is_awaited(api: Api, path: str) -> None:
    """F2: 100 kB announced (within every route's limit), 20 bytes sent: a server that
    reads the body before the token waits for the rest, and this read times out."""
    status, _, body = raw(api.url, head(path, "Content-Type: application/json",
                                        "Content-Length: 100000") + b'{"type": "t", "arg',
                          timeout=20)
    assert status == 401, body
    with api.client(None) as anonymous:  # not JSON and no token: 401, not 400
        refused = anonymous.post(path, content=b"{bad",
                                 headers={"Content-Type": "application/json"})
        assert refused.status_code == 401, refused.text


def test_remember_is_unticked_on_the_served_page(api: Api) -> None:
    """F4: the token stays in the tab unless the user ticks "remember"."""
    with api.client(None) as anonymous:
        page = anonymous.get("/").text
    tag = re.search(r'<input[^>]*id="remember"[^>]*>', page)
    assert tag is not None, page[:500]
    assert "checked" not in tag.group(0)


def test_a_shell_placeholder_runs_no_value_as_code(api: Api, tmp_path: Path) -> None:
    """F7: ``shell:printf '%s' "{v}"`` with a value holding ``$(…)`` ran it."""
    marker = tmp_path / "pwned"
    value = f'$(touch {marker})`touch {marker}`"; touch {marker}; "'
    made = api.post("/api/v1/task-types", json={"name": "say",
                                                "handler": "shell:printf '%s' \"{v}\""})
    assert made.status_code == 201, made.text
    api.add_worker()
    job = api.post("/api/v1/jobs", json={"type": "say", "args": {"v": value}}).json()
    done = api.wait_job(job["id"], ("succeeded", "failed"))
    logs = api.get(f"/api/v1/jobs/{job['id']}/logs").json()
    assert not marker.exists(), logs
    assert done["state"] == "succeeded" and logs["stdout"] == value, logs


def test_a_revoked_tokens_refusal_names_no_token(api: Api) -> None:
    """F9: the 401 of a revoked token said "token 'NAME' was revoked"."""
    name = "deploy-bot-7"
    made = api.post("/api/v1/tokens", json={"name": name, "scope": "read"})
    assert made.status_code == 201, made.text
    assert api.post(f"/api/v1/tokens/{name}/revoke").status_code == 200
    with api.client(None, Authorization=f"Bearer {made.json()['token']}") as user:
        refused = user.get("/api/v1/workers")
    assert refused.status_code == 401
    assert name not in refused.text and "revoked" in refused.json()["error"]["message"]


def _feed_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "event-feed" and t.is_alive()]


def test_the_event_listener_stops_once_no_stream_is_open(api: Api) -> None:
    """F12: after the first event stream, the SQLite listener polled every millisecond
    for the server's life."""
    api.post("/api/v1/task-types", json={"name": "t", "handler": "shell:true"})
    api.post("/api/v1/jobs", json={"type": "t", "pools": ["nowhere"]})
    with api.client("read") as reader, reader.stream(
            "GET", "/api/v1/events/stream", params={"after": 0}) as response:
        assert SseReader(response).next() is not None
        wait_for("the listener to run", _feed_threads)
    wait_for("the listener to stop", lambda: not _feed_threads(), timeout=60)


def _connect(api: Api) -> socket.socket:
    parts = urlsplit(api.url)
    return socket.create_connection((parts.hostname, parts.port), timeout=30)


def until_closed(conn: socket.socket, deadline: float = 30.0) -> bytes:
    """What the server sends until it closes ``conn``; fails if it still holds it after
    ``deadline`` seconds."""
    received, end = b"", time.monotonic() + deadline
    while time.monotonic() < end:
        try:
            chunk = conn.recv(65536)
        except TimeoutError:
            continue
        except ConnectionResetError:
            return received
        if not chunk:
            return received
        received += chunk
    raise AssertionError(f"the server kept the connection open ({received[:200]!r})")


def test_a_header_past_the_default_cap_is_431(defaults: Api) -> None:
    """F3: a 200 MiB header was held in memory; 64 KiB is the default cap."""
    sent = 0
    with _connect(defaults) as conn:
        conn.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: ")
        try:
            while sent < 8 * 1024 * 1024:
                conn.sendall(b"a" * 65536)
                sent += 65536
        except (BrokenPipeError, ConnectionResetError):
            pass
        assert sent < 8 * 1024 * 1024, "8 MiB of header taken"
        answer = until_closed(conn, 60)
    assert answer.startswith(b"HTTP/1.1 431 "), answer[:200]


# The HTTP layer drops them, whatever the store: one backend (the test waits out the
# 60 s default, which on each backend was the suite's longest wait).
@pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)
def test_idle_and_unfinished_connections_are_dropped_by_default(defaults: Api) -> None:
    """F3: a connection that sent nothing, half a header or half a body was still open
    35 s later; the defaults drop them (idle 15 s, unfinished request 60 s)."""
    token = defaults.tokens["write"]
    silent, half_head, half_body = (_connect(defaults) for _ in range(3))
    with silent, half_head, half_body:
        half_head.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")
        half_body.sendall(f"POST /api/v1/jobs HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer "
                          f"{token}\r\nContent-Type: application/json\r\nContent-Length: 100"
                          "\r\n\r\n{\"type\": ".encode())
        assert until_closed(silent, 120) == b""
        for conn in (half_head, half_body):
            answer = until_closed(conn, 120)
            assert answer.startswith(b"HTTP/1.1 408 "), answer[:200]


def test_a_connection_past_the_default_cap_is_503(defaults: Api) -> None:
    """F3: no connection cap; 1,000 per server process by default."""
    held: list[socket.socket] = []
    try:
        for _ in range(1000):  # each holds its slot: a request begun, not finished
            conn = _connect(defaults)
            held.append(conn)
            conn.sendall(b"GET /healthz HTTP/1.1\r\n")
        with _connect(defaults) as extra:
            answer = until_closed(extra, 60)
        assert answer.startswith(b"HTTP/1.1 503 "), answer[:200]
    finally:
        for conn in held:
            conn.close()


@pytest.mark.parametrize("host", ["127.0.0.1", ""])
def test_the_start_line_gives_a_url_that_answers(db_url: str, host: str) -> None:
    """F13: ``--port 0`` printed ``:0`` and ``--host ''`` ``http://:PORT/``."""
    proc = subprocess.Popen([sys.executable, "-m", "taskyard", "--db", db_url, "serve",
                             "--host", host, "--port", "0"], env=ENV, text=True,
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
    try:
        assert proc.stderr is not None
        url = next((found.group(1) for line in proc.stderr
                    if (found := STARTED.search(line))), None)
        assert url is not None, f"no start line (exit {proc.poll()})"
        parts = urlsplit(url)
        assert parts.hostname and parts.port, url
        with socket.create_connection((parts.hostname, parts.port), timeout=30) as conn:
            conn.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            assert until_closed(conn, 60).startswith(b"HTTP/1.1 200 ")
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(90)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
