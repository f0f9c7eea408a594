"""The trace context of a request (docs/tracing.md): the current span's — FastAPI's own
server span when a tracer provider is set — else its W3C ``traceparent`` header (and
``tracestate``), ignored when it does not parse, as the W3C recommendation says."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from starlette.requests import Request

from taskyard.core.trace_context import carrier, lenient
from taskyard.model.tracing import current_context, submitted_in

T = TypeVar("T")


def request_context(request: Request) -> str | None:
    """The request's context, as stored (None: none)."""
    found = current_context()
    if found is not None:
        return found
    headers = request.headers
    parent = headers.get("traceparent")
    return None if parent is None else lenient(parent, headers.get("tracestate"))


def request_options(request: Request) -> dict[str, str]:
    """The request's context as a job's ``traceparent``/``tracestate`` fields ({}: none)."""
    return carrier(request_context(request))


def call_in(stored: str | None, func: Callable[..., T], *args: Any) -> T:
    """``func(*args)``, its submits carrying ``stored`` (on the threadpool: the request's
    context is not the thread's)."""
    with submitted_in(stored):
        return func(*args)
