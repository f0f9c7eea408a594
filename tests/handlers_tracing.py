"""Handlers of the tracing tests (tests/*/test_tracing*.py): what a handler sees of the
trace its attempt runs in, and a child job submitted from inside one."""

from __future__ import annotations

import os
from typing import Any


def seen() -> dict[str, Any]:
    """The attempt's TRACEPARENT, and the current OpenTelemetry span's ids."""
    from opentelemetry import trace

    ctx = trace.get_current_span().get_span_context()
    return {"env": os.environ.get("TRACEPARENT"), "env_state": os.environ.get("TRACESTATE"),
            "trace_id": f"{ctx.trace_id:032x}" if ctx.is_valid else None,
            "span_id": f"{ctx.span_id:016x}" if ctx.is_valid else None}


def submit_child(db: str, type: str) -> dict[str, Any]:
    """Submit a job of ``type`` from inside this one (it carries this attempt's trace)."""
    from taskyard.api.yard import Yard

    with Yard(db) as yard:
        child = yard.submit(type, {})
    return {"child": child, **seen()}


def submit_child_plain(db: str, type: str) -> dict[str, Any]:
    """:func:`submit_child` that looks at no OTel: what runs without the otel extra."""
    import sys

    from taskyard.api.yard import Yard

    with Yard(db) as yard:
        child = yard.submit(type, {})
    return {"child": child, "env": os.environ.get("TRACEPARENT"),
            "otel": "opentelemetry" in sys.modules}
