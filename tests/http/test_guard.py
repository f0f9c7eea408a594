"""What every request passes before a route reads it (issue 36, F2, F4, F8, F10):
the token before the body, each route's own body limit, JSON only (415), no duplicate
key, trusted hosts and no Host echo, and the dashboard's security headers. Imports only
what 7e1cfb7 had too, so that these tests can be run against that version (the throttle
is in test_outsider.py, JSON parsed off the loop in test_guard_json_thread.py)."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from urllib.parse import urlsplit

import pytest
from http_helpers import Api, start_api

from taskyard.api.http.context import Settings

BODY_ROUTES = ("/api/v1/jobs", "/api/v1/jobs/batch", "/api/v1/graphs", "/api/v1/tokens",
               "/api/v1/schedules", "/api/v1/task-types", "/api/v1/apply", "/api/v1/prune",
               "/api/v1/graphs/1/tasks")


def raw(url: str, data: bytes, *, timeout: float = 30) -> tuple[int, dict[str, str], bytes]:
    """Send ``data`` as it is on a new connection; the answer's status, headers, body."""
    parts = urlsplit(url)
    with socket.create_connection((parts.hostname, parts.port), timeout=timeout) as conn:
        conn.sendall(data)
        received = b""
        while b"\r\n\r\n" not in received:
            chunk = conn.recv(65536)
            if not chunk:
                break
            received += chunk
        head, _, body = received.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        headers = dict(line.split(": ", 1) for line in lines[1:] if ": " in line)
        length = int(headers.get("content-length", "0"))
        while len(body) < length:
            chunk = conn.recv(65536)
            if not chunk:
                break
            body += chunk
    return int(lines[0].split()[1]), {k.lower(): v for k, v in headers.items()}, body


def head(path: str, *lines: str, method: str = "POST") -> bytes:
    return "\r\n".join([f"{method} {path} HTTP/1.1", "Host: 127.0.0.1", *lines, "", ""]).encode()


@pytest.mark.parametrize("path", BODY_ROUTES)
def test_no_token_is_401_before_the_body_is_read(api: Api, path: str) -> None:
    # 31 MB announced, 20 bytes sent: the answer comes without the rest, and closes.
    status, headers, body = raw(api.url, head(
        path, "Content-Type: application/json", "Content-Length: 31000000") + b'{"tasks": {"a": 1')
    assert status == 401, body
    assert headers["connection"] == "close"
    assert json.loads(body)["error"]["message"].startswith("missing token")
    # Not JSON, no token: still 401, not 400.
    with api.client(None) as anonymous:
        assert anonymous.post(path, content=b"{bad", headers={
            "Content-Type": "application/json"}).status_code == 401


def test_each_route_has_its_own_body_limit(api: Api) -> None:
    api.post("/api/v1/task-types", json={"name": "t", "handler": "shell:true"})
    token = api.tokens["admin"]
    # A job takes kilobytes: 400 kB announced is refused at once, unsent.
    status, headers, body = raw(api.url, head(
        "/api/v1/jobs", f"Authorization: Bearer {token}", "Content-Type: application/json",
        "Content-Length: 400000"))
    assert status == 413 and headers["connection"] == "close"
    assert "this route's limit of 327680 bytes" in json.loads(body)["error"]["message"]
    big_args = {"type": "t", "args": {"x": "y" * 340_000}}
    assert api.post("/api/v1/jobs", json=big_args).status_code == 413
    # A graph of the same size is within the graphs' limit (1 MiB in these tests).
    graph = {"tasks": {label: {"type": "t", "args": {"x": "y" * 100_000}}
                       for label in "abcd"}}
    assert api.post("/api/v1/graphs", json=graph).status_code == 201
    # A body on a GET is refused (no GET takes one).
    with api.client() as admin:
        assert admin.request("GET", "/api/v1/jobs", content=b"{}", headers={
            "Content-Type": "application/json"}).status_code == 413


@pytest.mark.parametrize("content_type", ["text/plain", "", "application/x-www-form-urlencoded",
                                          "multipart/form-data; boundary=x"])
def test_a_body_must_be_json(api: Api, content_type: str) -> None:
    api.post("/api/v1/task-types", json={"name": "t", "handler": "shell:true"})
    headers = {"Content-Type": content_type} if content_type else {}
    with api.client() as admin:
        for path, body in (("/api/v1/graphs", {"tasks": {"a": {"type": "t"}}}),
                           ("/api/v1/jobs", {"type": "t"})):
            answer = admin.post(path, content=json.dumps(body).encode(), headers=headers)
            assert answer.status_code == 415, (path, answer.text)
            assert "Content-Type" in answer.json()["error"]["message"]
        ok = admin.post("/api/v1/jobs", content=b'{"type": "t"}',
                        headers={"Content-Type": "application/json; charset=utf-8"})
        assert ok.status_code == 201
    assert len(api.get("/api/v1/jobs").json()["items"]) == 1  # nothing else was stored


@pytest.mark.parametrize(("body", "words"), [
    (b'{"type": "t", "type": "u"}', "the key 'type' is given twice"),
    (b'{"type": "t", "args": {"a": 1, "a": 2}}', "the key 'a' is given twice"),
    (b'{"type": "t", "priority": NaN}', "NaN is not a JSON value"),
    (b'{"type": "t", "run_after": Infinity}', "Infinity is not a JSON value"),
])
def test_a_duplicate_key_or_nan_is_refused(api: Api, body: bytes, words: str) -> None:
    api.post("/api/v1/task-types", json={"name": "t", "handler": "shell:true"})
    with api.client() as admin:
        for path in ("/api/v1/jobs", "/api/v1/schedules", "/api/v1/tokens"):
            answer = admin.post(path, content=body, headers={"Content-Type": "application/json"})
            assert answer.status_code == 400, answer.text
            assert words in answer.json()["error"]["message"]
    assert api.get("/api/v1/jobs").json()["items"] == []


@pytest.fixture
def strict(db_url: str) -> Iterator[Api]:
    """A server that answers only for 127.0.0.1 and *.example.org."""
    started = start_api(db_url, Settings(trusted_hosts=("127.0.0.1", "*.example.org")))
    yield started
    started.stop()
    started.yard.close()


def test_only_trusted_hosts_are_answered_and_none_is_echoed(strict: Api) -> None:
    token = strict.tokens["read"]
    for host, status in (("evil.example", 400), ("127.0.0.1:1234", 200),
                         ("api.example.org", 200), ("example.org", 400)):
        got, _, body = raw(strict.url, head("/api/v1/jobs", f"Authorization: Bearer {token}",
                                            method="GET").replace(b"Host: 127.0.0.1",
                                                                  f"Host: {host}".encode()))
        assert got == status, (host, body)


def test_no_redirect_echoes_the_host(api: Api) -> None:
    token = api.tokens["read"]
    status, headers, _ = raw(api.url, head("/api/v1/jobs/", f"Authorization: Bearer {token}",
                                           method="GET").replace(b"Host: 127.0.0.1",
                                                                 b"Host: evil.example"))
    assert status == 404 and "location" not in headers


def test_the_dashboard_is_served_with_security_headers(api: Api) -> None:
    with api.client(None) as anonymous:
        for path in ("/", "/static/js/main.js", "/static/app.css"):
            answer = anonymous.get(path)
            assert answer.status_code == 200, path
            csp = answer.headers["content-security-policy"]
            assert "frame-ancestors 'none'" in csp and "script-src 'self'" in csp
            assert "'unsafe-inline'" not in csp and "'unsafe-eval'" not in csp
            assert answer.headers["x-content-type-options"] == "nosniff"
            assert answer.headers["x-frame-options"] == "DENY"
            assert answer.headers["referrer-policy"] == "no-referrer"
    assert api.get("/api/v1/jobs").headers["x-content-type-options"] == "nosniff"
