"""Bounds on durations and times where they enter, and total rendering of what a row
holds (issue 36, F1: a run_after of 1e308 was stored, then broke every job list)."""

from __future__ import annotations

import math
from datetime import UTC, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from taskyard.core.durations import (
    DURATION_MAX,
    TIME_MAX,
    TIME_MIN,
    DurationError,
    check_time,
    duration_text,
    iso,
    parse_duration,
    parse_interval,
    parse_when,
)
from taskyard.core.retry import RetryPolicy, decide_retry
from taskyard.model.errors import InvalidInput
from taskyard.model.records import Prerequisite, TaskTypeSpec
from taskyard.model.task_types import validate_task_type

NOW = 1_700_000_000.0


@pytest.mark.parametrize("value", [1e308, "99999999999d", "5300w", 10**400, DURATION_MAX + 1,
                                   float("inf")])
def test_a_duration_past_100_years_is_refused_naming_the_field(value: object) -> None:
    with pytest.raises(DurationError, match=r"^timeout: .* is out of range: a duration is "
                                            r"0 to 100 years$"):
        parse_duration(value, field="timeout")  # type: ignore[arg-type]


def test_100_years_is_the_longest_duration() -> None:
    assert parse_duration(DURATION_MAX) == DURATION_MAX
    assert parse_duration("5200w") == 5200 * 604800.0


@pytest.mark.parametrize("value", [1e308, -1e308, TIME_MAX + 1, TIME_MIN - 1, float("inf"),
                                   float("nan"), 10**400])
def test_a_time_outside_years_1_to_9999_is_refused_naming_the_field(value: object) -> None:
    with pytest.raises(DurationError, match=r"^run_after: .* is out of range: a time lies "
                                            r"between 0001-01-01 and 9999-12-31T23:59:59Z$"):
        check_time(value, field="run_after")


@pytest.mark.parametrize("value", [True, "1h", None, [1]])
def test_a_time_must_be_a_number(value: object) -> None:
    with pytest.raises(DurationError, match=r"^run_after: .* is not a time"):
        check_time(value, field="run_after")


def test_the_bounds_are_times() -> None:
    assert check_time(TIME_MAX) == TIME_MAX
    assert check_time(TIME_MIN) == TIME_MIN
    assert check_time(0) == 0.0
    assert iso(TIME_MAX) == "9999-12-31T23:59:59Z"
    assert iso(TIME_MIN) == "0001-01-01T00:00:00Z"


@pytest.mark.parametrize(("text", "message"), [
    ("99999999999d", "run_after: '99999999999d' is out of range: a duration is 0 to 100 years"),
    ("9999-12-31T23:59:59-05:00", "run_after: '9999-12-31T23:59:59-05:00' is out of range: "
                                  "a time lies between 0001-01-01 and 9999-12-31T23:59:59Z"),
    ("0001-01-01T00:00:00+01:00", "run_after: '0001-01-01T00:00:00+01:00' is out of range: "
                                  "a time lies between 0001-01-01 and 9999-12-31T23:59:59Z"),
])
def test_run_after_out_of_range_is_refused(text: str, message: str) -> None:
    with pytest.raises(DurationError) as caught:
        parse_when(text, now=NOW)
    assert str(caught.value) == message


def test_run_after_in_range_is_read() -> None:
    assert parse_when("9999-12-31T23:59:59Z", now=NOW) == TIME_MAX
    assert parse_when("100d", now=NOW) == NOW + 100 * 86400


def test_an_interval_past_100_years_is_refused() -> None:
    with pytest.raises(DurationError, match="out of range"):
        parse_interval("1d,1h,36600d")


@given(st.floats(allow_nan=True, allow_infinity=True))
def test_iso_renders_any_stored_number(epoch: float) -> None:
    text = iso(epoch)
    if math.isnan(epoch):
        assert text is None
        return
    assert text is not None
    moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    if TIME_MIN <= epoch <= TIME_MAX:
        assert abs(moment.timestamp() - epoch) < 1e-3 * max(1.0, abs(epoch) / 1e9)
    else:  # clamped to the bound it passed
        assert moment.year in (1, 9999)
        assert moment.tzinfo == UTC


@given(st.floats(min_value=0, allow_infinity=True) | st.just(math.nan))
def test_duration_text_renders_any_stored_number(seconds: float) -> None:
    assert duration_text(seconds)


@given(st.integers(1, 10**6), st.floats(1, 1e300), st.floats(0, DURATION_MAX),
       st.floats(0, 1))
def test_a_retry_delay_is_computed_for_any_backoff(failures: int, backoff: float,
                                                   delay: float, jitter: float) -> None:
    policy = RetryPolicy(10**6, delay, backoff, 3600.0)
    decision = decide_retry(policy, failures, jitter)
    assert decision.retry
    assert 0 <= decision.delay <= 3600.0


def test_a_backoff_past_any_float_is_capped() -> None:
    assert decide_retry(RetryPolicy(1000, 10.0, 1e10, 600.0), 900, 0.0).delay == 600.0
    assert decide_retry(RetryPolicy(1000, 0.0, 1e10, 600.0), 900, 0.0).delay == 0.0


@pytest.mark.parametrize(("fields", "named"), [
    ({"timeout": 1e308}, "timeout"), ({"retry_delay": 1e308}, "retry_delay"),
    ({"retry_max_delay": 1e308}, "retry_max_delay"),
    ({"retry_max_delay": -1.0}, "retry_max_delay"),
    ({"prerequisites": (Prerequisite("t", {}, 1e308),)}, "prerequisite 't' cache"),
])
def test_a_task_type_duration_out_of_range_is_refused(fields: dict[str, object],
                                                      named: str) -> None:
    with pytest.raises(InvalidInput, match=f"^task type 't': {named}"):
        validate_task_type(TaskTypeSpec("t", "shell:true", **fields))  # type: ignore[arg-type]
