"""The HTTP API takes a request's trace context (docs/tracing.md): its ``traceparent``
header (one that does not parse is ignored), or FastAPI's own server span when a tracer
provider is set; single submits written in one group keep each their own."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest
from http_helpers import HANDLERS, Api, start_api
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from tests.otel_spans import spans

from taskyard.api.http.context import Settings

__all__ = ["spans"]  # the fixture
GIVEN = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"


def _parent(n: int) -> str:
    return f"00-{n + 1:032x}-{n + 1:016x}-01"


def _echo(api: Api) -> None:
    answer = api.post("/api/v1/task-types", json={"name": "echo", "handler": f"{HANDLERS}:echo"})
    assert answer.status_code == 201, answer.text


def test_the_traceparent_header_is_stored_with_the_jobs(api: Api) -> None:
    _echo(api)
    with api.client("write", traceparent=GIVEN, tracestate="k=v") as traced:
        job = traced.post("/api/v1/jobs", json={"type": "echo"}).json()
        batch = traced.post("/api/v1/jobs/batch", json={"jobs": [{"type": "echo"}] * 2}).json()
        graph = traced.post("/api/v1/graphs", json={"tasks": {
            "a": {"type": "echo"}, "b": {"type": "echo", "requires": ["a"]}}}).json()
        added = traced.post(f"/api/v1/graphs/{graph['id']}/tasks",
                            json={"tasks": {"c": {"type": "echo"}}}).json()
    jobs = [job, *batch["items"], *added["jobs"]]
    assert len(jobs) == 6
    assert {(j["traceparent"], j["tracestate"]) for j in jobs} == {(GIVEN, "k=v")}
    # A body cannot set it: the header is the API's way (the batch's jobs refuse it).
    with api.client("write") as writer:
        refused = writer.post("/api/v1/jobs/batch",
                              json={"jobs": [{"type": "echo", "traceparent": GIVEN}]})
        assert refused.status_code in (400, 422), refused.text
        plain = writer.post("/api/v1/jobs", json={"type": "echo"}).json()
    assert (plain["traceparent"], plain["tracestate"]) == (None, None)
    with api.client("write", traceparent="00-not-a-context", tracestate="k=v") as bad:
        ignored = bad.post("/api/v1/jobs", json={"type": "echo"})
    assert ignored.status_code == 201 and ignored.json()["traceparent"] is None


def test_submits_written_in_one_group_keep_their_own_context(api: Api) -> None:
    _echo(api)
    answers: dict[int, dict[str, object]] = {}

    def submit(n: int) -> None:
        headers = {} if n % 3 == 0 else {"traceparent": _parent(n)}
        with api.client("write", **headers) as c:
            answers[n] = c.post("/api/v1/jobs", json={"type": "echo"}).json()

    threads = [threading.Thread(target=submit, args=(n,)) for n in range(24)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert {n: a["traceparent"] for n, a in answers.items()} == {
        n: None if n % 3 == 0 else _parent(n) for n in range(24)}


@pytest.fixture
def traced_api(db_url: str, spans: InMemorySpanExporter) -> Iterator[Api]:
    """The API built once a tracer provider is set: FastAPI's own telemetry is on."""
    started = start_api(db_url, Settings(heartbeat=0.5, auth_failures=100_000))
    yield started
    started.stop()
    started.yard.close()


def test_with_a_provider_the_job_carries_the_request_s_trace(
        traced_api: Api, spans: InMemorySpanExporter) -> None:
    _echo(traced_api)
    with traced_api.client("write", traceparent=GIVEN) as traced:
        job = traced.post("/api/v1/jobs", json={"type": "echo"}).json()
    # Same trace as the caller's, under the request's spans (FastAPI's own telemetry,
    # on once a provider is set: api/http/app.py): the endpoint's, in the server's.
    assert job["traceparent"][:35] == GIVEN[:35]
    parents = {s.context.span_id: s.parent.span_id if s.parent else None
               for s in spans.get_finished_spans()}
    chain, at = [], int(job["traceparent"][36:52], 16)
    while at in parents:
        chain.append(at)
        at = parents[at]
    assert len(chain) >= 1 and at == int(GIVEN[36:52], 16)
