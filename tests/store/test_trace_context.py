"""The W3C trace context stored with a job (``jobs.trace_context``, docs/tracing.md), on
both stores: given, or taken from the current span; mixed in one batch; carried by graph
members; what a worker reads and what its wake-up carries; refused when it does not
parse; nothing at all when there is none."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from tests.otel_spans import spans, traceparent
from tests.store.driver import drive

from taskyard.api.yard import Yard
from taskyard.model.errors import InvalidInput
from taskyard.store import Store

__all__ = ["spans"]  # the fixture
HANDLER = "python:tests.handlers_for_tests:echo"
GIVEN = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
OTHER = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00"


def _stored(store: Store) -> dict[int, Any]:
    with store.read() as tx:
        rows = tx.raw.all("SELECT id, trace_context FROM jobs ORDER BY id")
    return {int(job): trace for job, trace in rows}


@pytest.fixture
def yard(db_url: str) -> Any:
    with Yard(db_url) as y:
        y.add_task_type("t", HANDLER)
        yield y


def test_a_given_context_is_stored_read_and_carried_to_the_worker(yard: Yard) -> None:
    lone = yard.submit("t", traceparent=GIVEN, tracestate="vendor=1,other=2")
    untraced = yard.submit("t")
    mixed = yard.submit_many([{"type": "t", "traceparent": OTHER}, {"type": "t"},
                              {"type": "t", "traceparent": GIVEN}])
    assert _stored(yard.store) == {lone: f"{GIVEN} vendor=1,other=2", untraced: None,
                                   mixed[0]: OTHER, mixed[1]: None, mixed[2]: GIVEN}
    job = yard.get_job(lone).to_json()
    assert (job["traceparent"], job["tracestate"]) == (GIVEN, "vendor=1,other=2")
    assert yard.get_job(untraced).to_json()["traceparent"] is None
    claimed = {j.job_id: j.trace_context for j in drive(yard.store)}
    assert claimed == _stored(yard.store)


def test_the_current_span_is_taken_and_graph_members_carry_it(
        yard: Yard, spans: InMemorySpanExporter) -> None:
    with trace.get_tracer("tests").start_as_current_span("request") as span:
        job = yard.submit("t")
        graph = yard.submit_graph({"tasks": {"a": {"type": "t"},
                                             "b": {"type": "t", "requires": ["a"]}}})
        many = yard.submit_many("t", [{}, {}])
        explicit = yard.submit("t", traceparent=GIVEN)  # given wins over the span
    later = yard.add_graph_tasks(graph, {"tasks": {"c": {"type": "t", "requires": ["b"]}}})
    members = [j.id for j in yard.graph(graph).jobs]
    stored = _stored(yard.store)
    here = traceparent(span)
    assert [stored[i] for i in (job, *members[:2], *many)] == [here] * 5
    assert stored[explicit] == GIVEN
    assert later and stored[later[0]] is None  # added outside the span
    claimed = {j.job_id: j.trace_context for j in drive(yard.store)}
    assert claimed == stored


@pytest.mark.parametrize(("options", "why"), [
    ({"traceparent": "00-nope"}, "traceparent: '00-nope' is not version-traceid"),
    ({"traceparent": f"ff{GIVEN[2:]}"}, "traceparent: .*version ff"),
    ({"tracestate": "k=v"}, "tracestate: given without a traceparent"),
    ({"traceparent": GIVEN, "tracestate": "k=\x01"}, "tracestate: printable ASCII"),
])
def test_a_bad_context_is_refused_and_nothing_is_written(
        yard: Yard, options: dict[str, str], why: str) -> None:
    with pytest.raises(InvalidInput, match=why):
        yard.submit("t", **options)
    with pytest.raises(InvalidInput, match=f"job 1: {why}"):
        yard.submit_many([{"type": "t"}, {"type": "t", **options}])
    assert _stored(yard.store) == {}


def test_an_untraced_submit_binds_no_trace_column(yard: Yard) -> None:
    """The hot path is unchanged without a context: the insert names no such column
    (store/schema/job_rows.py), so its statement and values are as before."""
    from taskyard.model.records import JobSubmission
    from taskyard.store.schema.job_rows import job_row

    spec = yard.store.task_types.get("t")
    assert spec is not None
    assert "trace_context" not in job_row(JobSubmission("t"), spec, None)
    assert job_row(JobSubmission("t", trace_context=GIVEN), spec, None)[
        "trace_context"] == GIVEN



def test_a_wakeup_carries_the_context_as_a_worker_reads_it(yard: Yard) -> None:
    worker = yard.store.workers.register("w", ["default"], 4, lease_seconds=60).id
    listener = yard.store.listener(f"worker.{worker}")
    try:
        job = yard.submit("t", traceparent=GIVEN, tracestate="k=v")
        assert listener.wait(5.0)
        payloads = listener.payloads()
    finally:
        listener.close()
    read = yard.store.attempts.fetch(worker).jobs
    assert [(j.job_id, j.trace_context) for j in read] == [(job, f"{GIVEN} k=v")]
    assert yard.store.jobs_in_wakeups(payloads) == read


def test_the_cli_submits_in_the_trace_of_its_traceparent(yard: Yard, tmp_path: Path) -> None:
    """A command started inside a trace (OTel's environment-variable convention)."""
    graph = tmp_path / "graph.json"
    graph.write_text(json.dumps({"tasks": {"a": {"type": "t"}}}))
    env = {**os.environ, "TRACEPARENT": GIVEN, "TRACESTATE": "k=v"}
    for args in (["submit", "t"], ["graph", "submit", str(graph)]):
        done = subprocess.run([sys.executable, "-m", "taskyard", "--db", yard.url, *args],
                              env=env, capture_output=True, text=True, timeout=120, check=False)
        assert done.returncode == 0, done.stderr
    bad = {**env, "TRACEPARENT": "garbage"}  # ignored, as a header would be
    done = subprocess.run([sys.executable, "-m", "taskyard", "--db", yard.url, "submit", "t"],
                          env=bad, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert list(_stored(yard.store).values()) == [f"{GIVEN} k=v"] * 2 + [None]
