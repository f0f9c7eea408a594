"""The trace context a submit carries (OpenTelemetry, the ``taskyard[otel]`` extra;
docs/tracing.md): the one a caller gives for a block (an HTTP request's
``traceparent`` header, a command's ``TRACEPARENT``), else the current span's, else in a
handler's process the running attempt's. For every way in (Python, HTTP, CLI) without
loading the worker or OpenTelemetry: with ``opentelemetry`` not imported by anyone no
span can be current, so a submit looks no further. The attempt's side is
``worker/tracing.py``."""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator
from contextvars import ContextVar
from typing import Any

from taskyard.core.trace_context import lenient

_given: ContextVar[str | None] = ContextVar("taskyard_trace_context", default=None)


@contextlib.contextmanager
def submitted_in(stored: str | None) -> Iterator[None]:
    """Submits made inside the block carry ``stored`` (a context as stored), whatever
    span is current: a request's ``traceparent`` header, a CLI's ``TRACEPARENT``."""
    token = _given.set(stored)
    try:
        yield
    finally:
        _given.reset(token)


def from_environment() -> contextlib.AbstractContextManager[None]:
    """:func:`submitted_in` the context of this process's ``TRACEPARENT`` and
    ``TRACESTATE`` (the convention for a command started inside a trace): what the
    CLI's submits carry."""
    return submitted_in(lenient(os.environ.get("TRACEPARENT"), os.environ.get("TRACESTATE")))


def current_context() -> str | None:
    """The context a submit made now carries, as stored: the one :func:`submitted_in`
    gives, else the current span's, else (in a handler's process) the running attempt's
    ``TRACEPARENT``; None when there is none."""
    given = _given.get()
    if given is not None:
        return given
    trace = sys.modules.get("opentelemetry.trace")
    if trace is not None:
        found = trace.get_current_span().get_span_context()
        if found.is_valid:
            return stored_of(found)
    # A handler in a worker's child, without OTel: the child has loaded the worker's
    # job context (looked up, not imported: a submit elsewhere loads no worker code).
    worker = sys.modules.get("taskyard.worker.context")
    if worker is not None and worker.current_job() is not None:
        return lenient(os.environ.get("TRACEPARENT"), os.environ.get("TRACESTATE"))
    return None


def stored_of(span_context: Any) -> str | None:
    """An OpenTelemetry ``SpanContext`` as a stored context."""
    state = span_context.trace_state.to_header() if span_context.trace_state else None
    return lenient(f"00-{span_context.trace_id:032x}-{span_context.span_id:016x}-"
                   f"{int(span_context.trace_flags):02x}", state)
