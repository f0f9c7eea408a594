"""W3C Trace Context (https://www.w3.org/TR/trace-context/) as taskyard stores it with a
job: the text ``<traceparent>[ <tracestate>]`` in ``jobs.trace_context`` (migration
0017). A traceparent holds no space, so the first one ends it.

Checked before anything is stored: a ``traceparent`` given on purpose (``Yard.submit``'s
option) that does not parse is refused with the reason; one that arrives from outside
(an HTTP ``traceparent`` header, the ``TRACEPARENT`` environment variable) and does not
parse is ignored, as the W3C recommendation says a receiver does.
"""

from __future__ import annotations

import re

TRACESTATE_MAX = 512
"""Longest tracestate kept, in characters (the W3C's size a vendor must propagate)."""
_TRACEPARENT = re.compile(
    r"([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-[\x21-\x7e]*)?")
_PRINTABLE = re.compile(r"[\x20-\x7e]*")


class TraceContextError(ValueError):
    """A traceparent or tracestate that cannot be stored; the message says why."""


def check_traceparent(value: object) -> str:
    """``value`` as stored (version 00, the only one this code knows: a later version's
    first four fields, as the recommendation says to read them), or TraceContextError."""
    if not isinstance(value, str):
        raise TraceContextError(f"traceparent: must be text, not {type(value).__name__}")
    text = value.strip()
    found = _TRACEPARENT.fullmatch(text)
    if found is None:
        raise TraceContextError(
            f"traceparent: {text[:80]!r} is not version-traceid-parentid-flags in "
            "lowercase hex (00-<32 hex>-<16 hex>-<2 hex>)")
    version, trace_id, parent_id, flags, rest = found.groups()
    if version == "ff" or (version == "00" and rest is not None):
        raise TraceContextError(f"traceparent: {text[:80]!r}: version {version} has "
                                "no such form")
    if trace_id == "0" * 32 or parent_id == "0" * 16:
        raise TraceContextError(f"traceparent: {text[:80]!r}: an all-zero id is invalid")
    return f"00-{trace_id}-{parent_id}-{flags}"


def check_tracestate(value: object) -> str | None:
    """``value`` as stored (None when empty), or TraceContextError."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise TraceContextError(f"tracestate: must be text, not {type(value).__name__}")
    text = value.strip()
    if len(text) > TRACESTATE_MAX:
        raise TraceContextError(f"tracestate: {len(text)} characters; at most "
                                f"{TRACESTATE_MAX}")
    if _PRINTABLE.fullmatch(text) is None:
        raise TraceContextError("tracestate: printable ASCII only")
    return text or None


def encode(traceparent: object, tracestate: object = None) -> str:
    """The stored text of a context (TraceContextError names the bad part)."""
    parent = check_traceparent(traceparent)
    state = check_tracestate(tracestate)
    return parent if state is None else f"{parent} {state}"


def lenient(traceparent: object, tracestate: object = None) -> str | None:
    """:func:`encode` for a context from outside: None when no traceparent parses; a
    tracestate that does not is dropped (the traceparent alone still links the trace)."""
    if not traceparent:
        return None
    try:
        parent = check_traceparent(traceparent)
    except TraceContextError:
        return None
    try:
        state = check_tracestate(tracestate)
    except TraceContextError:
        state = None
    return parent if state is None else f"{parent} {state}"


def decode(stored: str) -> tuple[str, str | None]:
    """(traceparent, tracestate or None) of a stored text."""
    parent, _, state = stored.partition(" ")
    return parent, state or None


def carrier(stored: str | None) -> dict[str, str]:
    """The W3C headers of a stored context (``traceparent`` and ``tracestate``): what a
    message carries; empty for None."""
    if stored is None:
        return {}
    parent, state = decode(stored)
    return {"traceparent": parent} if state is None else {"traceparent": parent,
                                                          "tracestate": state}


def as_json(stored: str | None) -> dict[str, str | None]:
    """``traceparent`` and ``tracestate`` as a job's JSON shows them (None: none)."""
    if stored is None:
        return {"traceparent": None, "tracestate": None}
    parent, state = decode(stored)
    return {"traceparent": parent, "tracestate": state}


def trace_id(stored: str) -> str:
    """The trace id (32 hex digits) of a stored context."""
    return stored[3:35]
