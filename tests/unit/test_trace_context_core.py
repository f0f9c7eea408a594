"""core/trace_context.py: W3C contexts as stored with a job, checked before storing."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from taskyard.core.trace_context import (
    TRACESTATE_MAX,
    TraceContextError,
    as_json,
    carrier,
    check_traceparent,
    check_tracestate,
    decode,
    encode,
    lenient,
    trace_id,
)

TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
PARENT = f"00-{TRACE}-00f067aa0ba902b7-01"

hex_ids = st.tuples(st.text("0123456789abcdef", min_size=32, max_size=32),
                    st.text("0123456789abcdef", min_size=16, max_size=16),
                    st.text("0123456789abcdef", min_size=2, max_size=2))


@given(hex_ids, st.one_of(st.none(), st.from_regex(r"[a-z]{1,8}=[a-z0-9]{1,16}", fullmatch=True)))
def test_what_is_encoded_decodes_back(ids: tuple[str, str, str], state: str | None) -> None:
    trace, parent, flags = ids
    value = f"00-{trace}-{parent}-{flags}"
    if set(trace) == {"0"} or set(parent) == {"0"}:
        with pytest.raises(TraceContextError, match="all-zero"):
            encode(value, state)
        assert lenient(value, state) is None
        return
    stored = encode(value, state)
    assert decode(stored) == (value, state)
    assert trace_id(stored) == trace
    assert carrier(stored) == ({"traceparent": value} if state is None
                               else {"traceparent": value, "tracestate": state})


def test_a_later_version_is_read_by_its_first_four_fields() -> None:
    assert check_traceparent(f"01-{TRACE}-00f067aa0ba902b7-01-what-comes-next") == PARENT
    assert check_traceparent(f" {PARENT} ") == PARENT


@pytest.mark.parametrize(("value", "why"), [
    (42, "must be text"),
    ("00-abc", "is not version-traceid-parentid-flags"),
    (PARENT.upper(), "lowercase hex"),
    (f"ff-{TRACE}-00f067aa0ba902b7-01", "version ff"),
    (f"{PARENT}-more", "version 00 has no such form"),
    (f"00-{'0' * 32}-00f067aa0ba902b7-01", "all-zero"),
    (f"00-{TRACE}-{'0' * 16}-01", "all-zero"),
])
def test_a_bad_traceparent_is_refused_with_the_reason(value: object, why: str) -> None:
    with pytest.raises(TraceContextError, match=why):
        check_traceparent(value)
    assert lenient(value) is None


@pytest.mark.parametrize(("value", "why"), [
    (3, "must be text"),
    ("a=1\x01b", "printable ASCII"),
    ("a=" + "x" * TRACESTATE_MAX, f"at most {TRACESTATE_MAX}"),
])
def test_a_bad_tracestate_is_refused_and_dropped_from_outside(value: object, why: str) -> None:
    with pytest.raises(TraceContextError, match=why):
        check_tracestate(value)
    assert lenient(PARENT, value) == PARENT


def test_empty_parts() -> None:
    assert check_tracestate(None) is None
    assert check_tracestate("  ") is None
    assert encode(PARENT, "") == PARENT
    assert lenient(None) is None
    assert lenient("") is None
    assert lenient(PARENT, "k=v") == f"{PARENT} k=v"
    assert carrier(None) == {}
    assert as_json(None) == {"traceparent": None, "tracestate": None}
    assert as_json(f"{PARENT} k=v") == {"traceparent": PARENT, "tracestate": "k=v"}
