"""Durations, adaptive intervals and points in time as users write them (pure core)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from taskyard.core.durations import (
    DurationError,
    Interval,
    duration_text,
    iso,
    parse_duration,
    parse_interval,
    parse_when,
)


@pytest.mark.parametrize(("value", "seconds"), [
    (0, 0.0), (90, 90.0), (1.5, 1.5), ("1.5m", 90.0), (" 2 H ", 7200.0), ("1w", 604800.0),
    ("0", 0.0),
])
def test_numbers_and_unit_texts_are_seconds(value: str | float, seconds: float) -> None:
    assert parse_duration(value) == seconds


@pytest.mark.parametrize(("value", "message"), [
    (True, "timeout: expected a duration like 90, 90s, 5m, 2h or 1d"),
    (-1, "timeout: -1 must be a non-negative duration"),
    (float("inf"), "timeout: inf is out of range: a duration is 0 to 100 years"),
    (float("nan"), "timeout: nan must be a non-negative duration"),
    ("9" * 400, f"timeout: '{'9' * 58}… (400 characters) is out of range: a duration is "
                "0 to 100 years"),  # over a float, and quoted cut
    ("5 minutes", "timeout: '5 minutes' is not a duration (use 90, 90s, 5m, 2h or 1d)"),
])
def test_a_bad_duration_is_refused_naming_the_field(value: object, message: str) -> None:
    with pytest.raises(DurationError) as caught:
        parse_duration(value, field="timeout")  # type: ignore[arg-type]
    assert str(caught.value) == message


@given(st.integers(0, 5000), st.sampled_from(["", "s", "m", "h", "d", "w"]))
def test_a_unit_multiplies_the_number(number: int, unit: str) -> None:
    factor = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}[unit]
    assert parse_duration(f"{number}{unit}") == number * factor
    assert parse_duration(f"{number}{unit.upper()}") == number * factor


def test_an_interval_of_one_duration_has_it_as_its_bounds() -> None:
    assert parse_interval("1h") == Interval(3600.0, 3600.0, 3600.0)
    assert parse_interval({"default": 90}) == Interval(90.0, 90.0, 90.0)


def test_an_interval_mapping_may_give_one_bound() -> None:
    assert parse_interval({"default": "1h", "max": "1d"}) == Interval(3600.0, 3600.0, 86400.0)
    assert parse_interval({"default": "1h", "min": 60}) == Interval(3600.0, 60.0, 3600.0)


@pytest.mark.parametrize(("value", "message"), [
    ("1h,2h", "every: expected DEFAULT or DEFAULT,MIN,MAX, got '1h,2h'"),
    ("1h,1m,1d,2d", "every: expected DEFAULT or DEFAULT,MIN,MAX, got '1h,1m,1d,2d'"),
    ("1h,2h,3h", "every: need MIN <= DEFAULT <= MAX, got 7200.0, 3600.0, 10800.0"),
    ("1h,1m,30m", "every: need MIN <= DEFAULT <= MAX, got 60.0, 3600.0, 1800.0"),
    ("0", "every: the interval must be positive"),
    ("0,0,1h", "every: the interval must be positive"),
    ("1h,x,2h", "every: 'x' is not a duration (use 90, 90s, 5m, 2h or 1d)"),
    ({"default": "1h", "step": "1m"}, "every: unknown keys ['step']"),
    ({"min": "1m", "max": "1h"}, "every: 'default' is required"),
    ({"default": True}, "every: True is not a duration"),
    ({"default": "1h", "min": None}, "every: None is not a duration"),
    ({"default": "1h", "max": [1]}, "every: [1] is not a duration"),
    ({"default": "1h", "min": "2h"}, "every: need MIN <= DEFAULT <= MAX"),
])
def test_a_bad_interval_is_refused_naming_the_field(value: object, message: str) -> None:
    with pytest.raises(DurationError) as caught:
        parse_interval(value, field="every")  # type: ignore[arg-type]
    assert str(caught.value).startswith(message)


def test_run_after_a_duration_counts_from_now() -> None:
    assert parse_when("5m", now=1000.0) == 1300.0
    assert parse_when("0", now=1000.0) == 1000.0


@pytest.mark.parametrize(("text", "epoch"), [
    ("2024-03-01T12:00:00Z", 1709294400.0),
    ("2024-03-01T12:00:00+00:00", 1709294400.0),
    ("2024-03-01T13:00:00+01:00", 1709294400.0),
    (" 2024-03-01T12:00:00 ", 1709294400.0),  # naive: read as UTC, not local time
    ("2024-03-01", 1709251200.0),
])
def test_run_after_an_iso_time_is_that_moment(text: str, epoch: float) -> None:
    assert parse_when(text, now=0.0) == epoch


@pytest.mark.parametrize("text", ["tomorrow", "2024-13-01", "-5m"])
def test_run_after_neither_duration_nor_time_is_refused_naming_the_field(text: str) -> None:
    with pytest.raises(DurationError) as caught:
        parse_when(text, now=0.0, field="--run-after")
    assert str(caught.value) == (
        f"--run-after: {text!r} is neither a duration (2s, 5m) nor an ISO 8601 time")


def test_iso_writes_utc_with_a_z_and_keeps_none() -> None:
    assert iso(None) is None
    assert iso(0) == "1970-01-01T00:00:00Z"
    assert iso(1709294400.5) == "2024-03-01T12:00:00.500000Z"


@given(st.datetimes(min_value=datetime(1970, 1, 2), max_value=datetime(9999, 1, 1),
                    timezones=st.just(UTC)))
def test_iso_text_reads_back_as_the_same_moment(moment: datetime) -> None:
    epoch = moment.timestamp()
    text = iso(epoch)
    assert text is not None and text.endswith("Z")
    assert parse_when(text, now=0.0) == epoch


@pytest.mark.parametrize(("seconds", "text"), [
    (0, "0s"), (30, "30s"), (0.5, "0.5s"), (90, "1m30s"), (300, "5m"), (7200, "2h"),
    (5400, "1h30m"), (86400, "1d"), (86400 * 1.5, "1d12h"), (90061, "1d1h"),
    (64 * 86400, "64d"),
])
def test_durations_read_as_the_cli_writes_them(seconds: float, text: str) -> None:
    assert duration_text(seconds) == text
