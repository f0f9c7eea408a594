"""A Celery task sent by the Celery pool carries its attempt span's context in the
message's W3C ``traceparent`` header (docs/tracing.md), against a real redis-server and
a real ``celery worker``."""

from __future__ import annotations

from opentelemetry import trace
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind
from tests.bridges.servers import CeleryWorker
from tests.bridges.test_celery_pool import Pools
from tests.otel_spans import named, spans, traceparent

from taskyard.api.yard import Yard
from taskyard.core.states import TERMINAL
from taskyard.store import MovableClock

__all__ = ["spans"]  # the fixture


def test_a_celery_task_carries_its_attempt_span(
        db_url: str, clock: MovableClock, celery_worker: CeleryWorker,
        spans: InMemorySpanExporter) -> None:
    yard = Yard(db_url, clock=clock)
    yard.add_task_type("traced", handler="celery:tests.trace_headers", pools=["celery"])
    pools = Pools(yard, celery_worker)
    try:
        pool = pools.add("celery-trace")
        with trace.get_tracer("tests").start_as_current_span("request") as request:
            job_id = yard.submit("traced")
        pools.pump_until(pool, "the job to end",
                         lambda: yard.get_job(job_id).state in TERMINAL)
        job = yard.get_job(job_id)
        assert job.state == "succeeded", job.error
        (span,) = named(spans, "process traced")
        assert span.kind == SpanKind.CONSUMER
        assert span.parent is not None
        assert span.parent.span_id == request.get_span_context().span_id
        assert (span.attributes or {})["taskyard.worker"] == "celery-trace"
        assert job.result == {"traceparent": traceparent(span), "tracestate": None}
    finally:
        pools.close()
        yard.close()
