"""OpenTelemetry across a real path (docs/tracing.md): a submit inside a span → a real
worker runs it in a consumer span → its handler (a child process) submits a child job →
the child runs in a span of its own → the publisher's AMQP messages for both jobs carry
their trace context. The SDK's in-memory exporter holds the spans; both stores."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable
from pathlib import Path

from opentelemetry import trace
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode
from tests.bridges.consumer import Consumer
from tests.bridges.servers import RabbitBroker
from tests.otel_spans import named, spans, traceparent
from tests.polling import wait_for

from taskyard.api.yard import Yard
from taskyard.bridges.publisher import Publisher
from taskyard.scheduler.daemon import SchedulerDaemon
from taskyard.store import open_store
from taskyard.worker.daemon import WorkerDaemon

__all__ = ["spans"]  # the fixture
TRACING = "python:tests.handlers_tracing"


def _start(run: Callable[[threading.Event], None], stop: threading.Event) -> threading.Thread:
    thread = threading.Thread(target=run, args=(stop,), daemon=True)
    thread.start()
    return thread


def _cluster(url: str, stop: threading.Event, name: str,
             capacity: int) -> list[threading.Thread]:
    """A scheduler and a worker (handlers in real child processes), on threads."""
    worker = WorkerDaemon(open_store(url), name=name, pools=("default",), capacity=capacity,
                          lease_seconds=15.0, kill_grace=1.0)
    return [_start(SchedulerDaemon(open_store(url)).run, stop), _start(worker.run, stop)]


def test_a_trace_goes_from_a_submit_through_a_child_job_to_the_messages(
        db_url: str, rabbitmq: RabbitBroker, spans: InMemorySpanExporter) -> None:
    consumer = Consumer(f"127.0.0.1:{rabbitmq.port}", f"trace-{uuid.uuid4().hex[:8]}",
                        [("v1/scheduler:job-completed", "#"),
                         ("v1/scheduler:job-failed", "#")])
    consumer.declare()
    consumer.start()
    yard = Yard(db_url)
    yard.add_task_type("parent", f"{TRACING}:submit_child")
    yard.add_task_type("child", 'shell:echo "child sees $TRACEPARENT"')
    yard.add_task_type("broken", "shell:exit 3")
    stop = threading.Event()
    publisher = Publisher(yard.store, rabbitmq.url, name=f"trace-{uuid.uuid4().hex[:8]}")
    threads = [*_cluster(db_url, stop, "w-trace", 2), _start(publisher.run, stop)]
    try:
        with trace.get_tracer("tests").start_as_current_span("request") as request:
            parent_id = yard.submit("parent", {"db": db_url, "type": "child"})
            broken_id = yard.submit("broken")
        parent = yard.wait(parent_id, timeout=120)
        assert parent.state == "succeeded", parent.error
        child_id = parent.result["child"]
        child = yard.wait(child_id, timeout=120)
        assert child.state == "succeeded", child.error
        assert yard.wait(broken_id, timeout=120).state == "failed"
        wait_for("the child's span", lambda: named(spans, "process child"))

        # The submit stored the request span's context with the job.
        root = request.get_span_context()
        assert parent.to_json()["traceparent"] == traceparent(request)
        # The parent's attempt ran in a consumer span, parented on and linked to it.
        (process_parent,) = named(spans, "process parent")
        assert process_parent.kind == SpanKind.CONSUMER
        assert process_parent.parent is not None
        assert process_parent.parent.span_id == root.span_id
        assert [link.context.span_id for link in process_parent.links] == [root.span_id]
        attributes = dict(process_parent.attributes or {})
        assert attributes["messaging.system"] == "taskyard"
        assert attributes["messaging.operation.type"] == "process"
        assert attributes["messaging.destination.name"] == "parent"
        assert attributes["taskyard.job.id"] == parent_id
        assert attributes["taskyard.attempt"] == 1
        assert attributes["taskyard.worker"] == "w-trace"
        assert process_parent.status.status_code != StatusCode.ERROR
        # The handler, in a child process, ran inside that span (env and OTel context).
        assert parent.result["env"] == traceparent(process_parent)
        assert parent.result["span_id"] == f"{process_parent.context.span_id:016x}"
        # The job it submitted carries that span's context; its attempt's span follows.
        assert child.to_json()["traceparent"] == traceparent(process_parent)
        (process_child,) = named(spans, "process child")
        assert process_child.parent is not None
        assert process_child.parent.span_id == process_parent.context.span_id
        assert [link.context.span_id for link in process_child.links] == [
            process_parent.context.span_id]
        # A shell command sees its span's context in TRACEPARENT.
        assert f"child sees {traceparent(process_child)}" in (child.attempts[-1].stdout_tail
                                                             or "")
        # One trace end to end; a failed attempt's span says so.
        (process_broken,) = named(spans, "process broken")
        assert process_broken.status.status_code == StatusCode.ERROR
        assert {s.context.trace_id for s in (process_parent, process_child, process_broken)
                } == {root.trace_id}

        # The publisher's messages for each job carry the job's trace context.
        def headers_of(job_id: int) -> list[dict[str, object]]:
            return [m.headers for m in consumer.received
                    if f'"taskId":"{job_id}"' in m.body.decode()]
        wait_for("the jobs' messages",
                 lambda: all(headers_of(j) for j in (parent_id, child_id, broken_id)))
        for job in (parent, child):
            for headers in headers_of(job.id):
                assert headers["traceparent"] == job.to_json()["traceparent"]
        assert {h["traceparent"][3:35] for j in (parent_id, child_id, broken_id)
                for h in headers_of(j)} == {f"{root.trace_id:032x}"}
    finally:
        stop.set()
        for thread in threads:
            thread.join(30)
        consumer.stop()
        yard.close()


def test_without_a_provider_the_stored_context_is_passed_on_untouched(
        db_url: str, tmp_path: Path) -> None:
    """No tracer provider: no span of taskyard's, the handler sees the context the job
    was submitted in; a job without one sees none, even in the same warm child."""
    yard = Yard(db_url)
    yard.add_task_type("look", f"{TRACING}:seen")
    given = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
    stop = threading.Event()
    threads = _cluster(db_url, stop, "w-plain", 1)
    try:
        traced = yard.submit("look", traceparent=given, tracestate="k=v")
        first = yard.wait(traced, timeout=120)
        plain = yard.wait(yard.submit("look"), timeout=120)
    finally:
        stop.set()
        for thread in threads:
            thread.join(30)
        yard.close()
    assert first.result["env"] == given and first.result["env_state"] == "k=v"
    assert first.result["span_id"] == "b7ad6b7169203331"  # the handler's current context
    assert plain.result == {"env": None, "env_state": None, "trace_id": None,
                            "span_id": None}
