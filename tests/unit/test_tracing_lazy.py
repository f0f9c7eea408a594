"""A worker that traces nothing does not load OpenTelemetry (issue 38: ~4.6 MiB of each
worker daemon's RSS), and still makes spans once a tracer provider is set, even one set
after the worker started. Run in a fresh interpreter: this test process has loaded
OpenTelemetry already (other tests set providers)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

GIVEN = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
PROBE = f'''
import sys
from taskyard.model.records import ClaimedJob
from taskyard.worker.tracing import AttemptSpans

spans = AttemptSpans()
job = ClaimedJob(1, 1, "t", "python:x:y", {{}}, None, trace_context="{GIVEN}")
headers = spans.start(job)
assert headers == {{"traceparent": "{GIVEN}"}}, headers
assert not any(name.startswith("opentelemetry") for name in sys.modules), "loaded"
print("no provider: none loaded")

from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

exporter = InMemorySpanExporter()
provider = TracerProvider()
provider.add_span_processor(SimpleSpanProcessor(exporter))
trace.set_tracer_provider(provider)
later = ClaimedJob(2, 1, "t", "python:x:y", {{}}, None, trace_context="{GIVEN}")
headers = spans.start(later)
assert headers["traceparent"].split("-")[1] == "{GIVEN}".split("-")[1], headers
assert headers["traceparent"] != "{GIVEN}", "the attempt's own span"
'''
END = '''
from taskyard.model.records import Outcome
spans.end(Outcome(2, 1, "failed", error="boom"))
(span,) = exporter.get_finished_spans()
assert span.name == "process t" and span.status.status_code.name == "ERROR", span
print("provider set later: a span")
'''


def _probe(code: str) -> str:
    root = str(Path(__file__).resolve().parents[2])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([os.path.join(root, "src"), root])}
    env.pop("OTEL_PYTHON_TRACER_PROVIDER", None)
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                          text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_a_worker_without_a_provider_loads_no_opentelemetry_and_finds_one_set_later() -> None:
    assert _probe(PROBE + END).splitlines() == [
        "no provider: none loaded", "provider set later: a span"]
