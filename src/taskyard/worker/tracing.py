"""OpenTelemetry tracing (the ``taskyard[otel]`` extra; docs/tracing.md), after OTel's
messaging conventions: a job is a message, its submit the send, each attempt a
``process`` span of kind CONSUMER, parented on and linked to the context the job was
submitted in (``jobs.trace_context``, ``core/trace_context.py``).

Cheap when unused: with ``opentelemetry`` not imported by anyone, no span can be
current, so a submit looks no further (``model/tracing.py:current_context``); with no tracer
provider set, an attempt gets no span of its own and its handler sees the context the
job was submitted in. Everything here works without ``opentelemetry`` installed: the
stored context is then passed on as it is.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
from collections.abc import Callable
from typing import Any

from taskyard.core.trace_context import carrier, decode, lenient
from taskyard.model.records import ClaimedJob, Outcome
from taskyard.model.tracing import stored_of

SYSTEM = "taskyard"
"""``messaging.system`` of taskyard's spans; also the tracer's name."""
ENV = {"traceparent": "TRACEPARENT", "tracestate": "TRACESTATE"}
"""The environment variables that carry a context to a process (OTel's convention for
child processes and shell commands)."""


def _otel() -> Any:
    """``opentelemetry.trace``, or None when it is not installed."""
    try:
        from opentelemetry import trace  # noqa: PLC0415 - an optional extra
    except ImportError:
        return None
    return trace


def _loaded() -> Any:
    """``opentelemetry.trace`` when this process can have a tracer provider: the module is
    loaded (whoever sets a provider imports it first: the application, or OTel's launcher
    ``opentelemetry-instrument``), or ``OTEL_PYTHON_TRACER_PROVIDER`` names one (the API
    loads that on first use). Else None, and nothing is imported: 15 modules and ~23 ms
    of a worker daemon's start that would trace nothing (its ~4.6 MiB alone are nearly
    all what SQLAlchemy loads too: 0.2 MiB more in a daemon, issue 38)."""
    trace = sys.modules.get("opentelemetry.trace")
    if trace is None and os.environ.get("OTEL_PYTHON_TRACER_PROVIDER"):
        trace = _otel()
    return trace


def span_context_of(stored: str) -> Any:
    """The remote ``SpanContext`` of a stored context (OTel must be importable)."""
    from opentelemetry.trace import SpanContext, TraceFlags, TraceState  # noqa: PLC0415

    parent, state = decode(stored)
    return SpanContext(
        trace_id=int(parent[3:35], 16), span_id=int(parent[36:52], 16), is_remote=True,
        trace_flags=TraceFlags(int(parent[53:55], 16)),
        trace_state=TraceState.from_header([state]) if state else None)


class AttemptSpans:
    """The consumer spans of the attempts an executor runs: :meth:`start` (idempotent
    per attempt) gives the W3C headers its handler gets; :meth:`ending` wraps the
    executor's ``on_done`` hook so that an attempt's outcome ends its span."""

    def __init__(self, worker_name: Callable[[], str] = str) -> None:
        """``worker_name``: the name of the worker now (a daemon renames its executor)."""
        self.worker_name = worker_name
        self._trace: Any = None
        """``opentelemetry.trace`` once a tracer was found (see :func:`_loaded`)."""
        self._open: dict[tuple[int, int], tuple[Any, dict[str, str]]] = {}
        self._lock = threading.Lock()

    def _tracer(self) -> Any:
        """taskyard's tracer, or None when no tracer provider is set (or no OTel). Looked
        up per attempt: a provider set after the worker started counts from then on."""
        trace = _loaded()
        if trace is None or isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider):
            return None
        self._trace = trace
        return trace.get_tracer(SYSTEM)

    def start(self, job: ClaimedJob) -> dict[str, str]:
        """Start ``job``'s attempt span if none is open; the headers (``traceparent``,
        ``tracestate``) its handler gets: the span's, else the job's own context."""
        key = (job.job_id, job.attempt)
        with self._lock:
            open_ = self._open.get(key)
            if open_ is not None:
                return open_[1]
        tracer = self._tracer()
        if tracer is None:
            return carrier(job.trace_context)
        span = self._span(tracer, job)
        headers = carrier(stored_of(span.get_span_context()))
        with self._lock:
            self._open[key] = (span, headers)
        return headers

    def _span(self, tracer: Any, job: ClaimedJob) -> Any:
        trace = self._trace
        attributes: dict[str, Any] = {
            "messaging.system": SYSTEM, "messaging.operation.type": "process",
            "messaging.operation.name": "process", "messaging.operation": "process",
            "messaging.destination.name": job.type, "messaging.message.id": str(job.job_id),
            "taskyard.job.id": job.job_id, "taskyard.attempt": job.attempt,
            "taskyard.worker": self.worker_name()}
        if job.graph_id is not None:
            attributes["taskyard.graph.id"] = job.graph_id
        if job.label is not None:
            attributes["taskyard.label"] = job.label
        parent, links = None, []
        submitted = None
        if job.trace_context is not None:
            with contextlib.suppress(ValueError):  # checked when stored: never, in practice
                submitted = span_context_of(job.trace_context)
        if submitted is not None:
            parent = trace.set_span_in_context(trace.NonRecordingSpan(submitted))
            links = [trace.Link(submitted, {"taskyard.link": "submit"})]
        return tracer.start_span(f"process {job.type}", context=parent,
                                 kind=trace.SpanKind.CONSUMER, links=links,
                                 attributes=attributes)

    def end(self, outcome: Outcome) -> None:
        """End the span of ``outcome``'s attempt (an error status unless it succeeded)."""
        with self._lock:
            open_ = self._open.pop((outcome.job_id, outcome.attempt), None)
        if open_ is None:
            return
        span, trace = open_[0], self._trace
        span.set_attribute("taskyard.outcome", outcome.state)
        if outcome.exit_code is not None:
            span.set_attribute("taskyard.exit_code", outcome.exit_code)
        if outcome.state != "succeeded":
            span.set_status(trace.Status(trace.StatusCode.ERROR,
                                         outcome.error or outcome.state))
        span.end()

    def ending(self, on_done: Callable[[Outcome, float | None], None]
               ) -> Callable[[Outcome, float | None], None]:
        """``on_done``, ending the attempt's span first."""
        def done(outcome: Outcome, seconds: float | None) -> None:
            self.end(outcome)
            on_done(outcome, seconds)
        return done


def environment(headers: dict[str, str]) -> dict[str, str]:
    """The W3C headers as a process's environment variables (``TRACEPARENT``…)."""
    return {ENV[name]: value for name, value in headers.items()}


def attach_from_env(env: dict[str, str]) -> Callable[[], None] | None:
    """In a handler's process: make the context of ``env``'s ``TRACEPARENT`` current
    (the handler's own spans, and its submits, follow it); returns how to detach it.
    None when there is none, or no OTel."""
    stored = lenient(env.get("TRACEPARENT"), env.get("TRACESTATE"))
    trace = None if stored is None else _otel()
    if trace is None or stored is None:
        return None
    from opentelemetry import context  # noqa: PLC0415 - installed with trace

    token = context.attach(trace.set_span_in_context(
        trace.NonRecordingSpan(span_context_of(stored))))
    return lambda: context.detach(token)
