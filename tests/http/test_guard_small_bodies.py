"""The guard and the strict body reading on the routes that take small bodies (approve,
deny, signals, backfill): no token is 401 before the body is read, a body over the
route's own limit is 413 unread, a key given twice (or NaN) is 400, a body that is not
JSON is 415 — and none of them changes anything."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import pytest
from http_helpers import HANDLERS, Api
from test_guard import head, raw

from taskyard.api.http.guard import ROUTE_LIMITS, SMALL_BODY, BodyLimits

SMALL = 16 * 1024
"""The guard's limit for small bodies (approve, deny, backfill; stated here, not
imported, so that the test fails where the limit changes by mistake)."""
JOB = 327_680
"""A job's limit in these tests (args limit + room): a signal's payload is bounded as
a job's args are."""


@dataclass(frozen=True)
class Route:
    name: str
    limit: int
    valid: dict[str, Any]
    """A body the route takes (sent only where it must be refused)."""
    twice: bytes
    """A body with a key given twice."""


ROUTES = [
    Route("approve", SMALL, {"note": "ship it"}, b'{"note": "yes", "note": "no"}'),
    Route("deny", SMALL, {"note": "not now"}, b'{"note": "no", "note": "yes"}'),
    Route("signal", JOB, {"name": "go"}, b'{"name": "go", "name": "go"}'),
    Route("backfill", SMALL, {"from": "3h"}, b'{"from": "3h", "from": "2h"}'),
]
GRAPH = {"tasks": {"gate": {"approval": {"timeout": "1h"}},
                   "ready": {"wait": {"signal": "go"}}}}


@contextmanager
def _unchanged(api: Api, route: Route) -> Iterator[str]:
    """The route's path on a real target (an awaiting approval, an awaiting wait, a
    schedule); on exit, the jobs are as they were."""
    path, reading = _target(api, route)
    before = reading()
    yield path
    assert reading() == before


def _target(api: Api, route: Route) -> tuple[str, Callable[[], Any]]:
    """The route's path on a real target, and a reading of everything it could change."""
    assert api.post("/api/v1/task-types", json={
        "name": "echo", "handler": f"{HANDLERS}:echo"}).status_code == 201
    made = api.post("/api/v1/graphs", json=GRAPH)
    assert made.status_code == 201, made.text
    jobs = {j["label"]: j["id"] for j in made.json()["jobs"]}
    assert api.post("/api/v1/schedules", json={
        "name": "hourly", "type": "echo", "cron": "0 * * * *"}).status_code == 201
    path = {"approve": f"/api/v1/jobs/{jobs['gate']}/approve",
            "deny": f"/api/v1/jobs/{jobs['gate']}/deny",
            "signal": "/api/v1/signals",
            "backfill": "/api/v1/schedules/hourly/backfill"}[route.name]

    def reading() -> Any:
        listed = api.get("/api/v1/jobs", params={"limit": 1000}).json()["items"]
        return sorted((j["id"], j["state"], json.dumps(j["result"])) for j in listed)

    before = reading()
    assert sorted(state for _, state, _ in before) == ["awaiting", "awaiting"]
    return path, reading


def _refused_unread(api: Api, path: str, status: int, *lines: str) -> str:
    """Only the head of a request announcing a body: answered ``status`` at once (a
    server that waited for the body would time out here), the connection closed; the
    error's message."""
    got, headers, body = raw(api.url, head(path, "Content-Type: application/json", *lines),
                             timeout=20)
    assert got == status, body
    assert headers["connection"] == "close"
    message: str = json.loads(body)["error"]["message"]
    return message


@pytest.mark.parametrize("route", ROUTES, ids=lambda r: r.name)
def test_no_token_is_401_before_the_body_is_read(api: Api, route: Route) -> None:
    with _unchanged(api, route) as path:
        message = _refused_unread(api, path, 401, "Content-Length: 31000000")
        assert message.startswith("missing token")
        with api.client(None) as anonymous:
            refused = anonymous.post(path, content=b"{bad", headers={
                "Content-Type": "application/json"})
            assert refused.status_code == 401, refused.text


@pytest.mark.parametrize("route", ROUTES, ids=lambda r: r.name)
def test_a_body_over_the_routes_limit_is_413_unread(api: Api, route: Route) -> None:
    with _unchanged(api, route) as path:
        message = _refused_unread(api, path, 413, f"Authorization: Bearer {api.tokens['write']}",
                                  f"Content-Length: {route.limit + 1}")
        assert f"this route's limit of {route.limit} bytes" in message
        # Sent in full, a byte over: refused too.
        padded = json.dumps(route.valid)[:-1] + ', "x": "'
        over = (padded + "y" * (route.limit + 1 - len(padded) - 2) + '"}').encode()
        assert len(over) == route.limit + 1
        with api.client("write") as writer:
            answer = writer.post(path, content=over,
                                 headers={"Content-Type": "application/json"})
            assert answer.status_code == 413, answer.text


@pytest.mark.parametrize("route", ROUTES, ids=lambda r: r.name)
def test_a_key_given_twice_is_400(api: Api, route: Route) -> None:
    with _unchanged(api, route) as path, api.client("write") as writer:
        answer = writer.post(path, content=route.twice,
                             headers={"Content-Type": "application/json"})
        assert answer.status_code == 400, answer.text
        key = next(iter(route.valid))
        assert f"the key {key!r} is given twice" in answer.json()["error"]["message"]
        nan = writer.post(path, content=json.dumps(route.valid)[:-1].encode() + b', "x": NaN}',
                          headers={"Content-Type": "application/json"})
        assert nan.status_code == 400, nan.text
        assert "NaN is not a JSON value" in nan.json()["error"]["message"]


@pytest.mark.parametrize("route", ROUTES, ids=lambda r: r.name)
@pytest.mark.parametrize("content_type", ["text/plain", "", "application/x-www-form-urlencoded"])
def test_a_body_must_be_json(api: Api, route: Route, content_type: str) -> None:
    headers = {"Content-Type": content_type} if content_type else {}
    with _unchanged(api, route) as path, api.client("write") as writer:
        answer = writer.post(path, content=json.dumps(route.valid).encode(), headers=headers)
        assert answer.status_code == 415, answer.text
        assert "Content-Type" in answer.json()["error"]["message"]


@pytest.mark.parametrize("route", ROUTES, ids=lambda r: r.name)
def test_a_body_within_the_limit_is_taken(api: Api, route: Route) -> None:
    path, reading = _target(api, route)
    before = reading()
    with api.client("write") as writer:
        answer = writer.post(path, json=route.valid)
        assert answer.status_code == 200, answer.text
    assert reading() != before


def test_every_route_that_takes_a_body_reads_it_strictly(api: Api) -> None:
    """Each operation the OpenAPI document gives a body refuses a key given twice (a
    route taking its body as a framework parameter would keep the last one), and has
    its own entry in the guard's limits; a POST without a body takes at most the small
    limit."""
    document = api.get("/api/v1/openapi.json").json()
    with api.client() as admin:
        for template, operations in document["paths"].items():
            path = (template.replace("{job_id}", "1").replace("{graph_id}", "1")
                    .replace("{name}", "x").replace("{action}", "cancel"))
            for method, operation in operations.items():
                if method not in ("post", "put", "patch"):
                    continue
                limit = BodyLimits(graph=1, batch=2, apply=3, job=4).of(method.upper(), path)
                if "requestBody" not in operation:
                    assert limit == SMALL_BODY, (method, template)
                    continue
                assert limit != SMALL_BODY or any(
                    p.fullmatch(path) for p, _ in ROUTE_LIMITS), (method, template)
                answer = admin.request(method.upper(), path, content=b'{"tasks": {}, "tasks": {}}',
                                       headers={"Content-Type": "application/json"})
                # The graph routes name a duplicate label (422); the others refuse the
                # document as not strict JSON (400).
                assert answer.status_code in (400, 422), (method, template, answer.text)
                message = answer.json()["error"]["message"]
                assert "'tasks' is given twice" in message or (
                    message == "body: duplicate key 'tasks'"), (method, template, message)
