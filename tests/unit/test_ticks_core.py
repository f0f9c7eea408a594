"""Ticks beyond the next one: a backfill's range, dropped ticks and why (catch-up, its
window), overlap with the previous run."""

from __future__ import annotations

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from taskyard.core.cron import next_fire
from taskyard.core.recurrence import Catchup, every_after, plan_ticks
from taskyard.core.ticks import (
    DROPPED_COUNTED,
    Overlap,
    OverlapAction,
    dropped,
    grid_after,
    overlap_action,
    overlap_reason,
    parse_overlap,
    ticks_between,
)

HOUR, DAY = 3600.0, 86400.0


def hourly(after: float) -> float:
    return every_after(0.0, HOUR, after)


def test_parse_overlap() -> None:
    assert parse_overlap(None) is Overlap.ALLOW
    assert parse_overlap("Buffer-One") is Overlap.BUFFER_ONE
    with pytest.raises(ValueError, match="'never' is not one of allow, skip, buffer-one"):
        parse_overlap("never")


@given(st.sampled_from(list(Overlap)),
       st.sampled_from([None, "waiting", "pending", "dispatched", "running", "suspended",
                        "awaiting", "succeeded", "failed", "canceled", "dependency_failed"]))
def test_overlap_acts_only_while_the_previous_job_has_not_ended(policy: Overlap,
                                                                previous: str | None) -> None:
    action = overlap_action(policy, previous)
    ended = previous in (None, "succeeded", "failed", "canceled", "dependency_failed")
    if policy is Overlap.ALLOW or ended:
        assert action is OverlapAction.RUN
    elif policy is Overlap.SKIP:
        assert action is OverlapAction.SKIP
    else:  # buffer one: behind a job that runs, never behind one already queued
        assert action is (OverlapAction.SKIP if previous == "waiting" else OverlapAction.BUFFER)


def test_overlap_reasons() -> None:
    assert overlap_reason(Overlap.SKIP, "job 7", "running") == (
        "overlap skip: job 7 is running")
    assert overlap_reason(Overlap.BUFFER_ONE, "job 8", "waiting") == (
        "overlap buffer-one: job 8 is queued already")


@given(st.floats(-1e6, 1e6), st.floats(1, 1e4), st.floats(-1e7, 1e7))
# Just below a grid tick, where the division rounds up to the tick's step: the step back.
@example(1.0, 3.3, 30.699999999999996)
def test_grid_after_is_the_first_grid_tick_after(anchor: float, every: float,
                                                 after: float) -> None:
    tick = grid_after(anchor, every, after)
    assert tick > after
    assert tick - every <= after + 1e-6 * max(1.0, abs(after))
    steps = (tick - anchor) / every
    assert abs(steps - round(steps)) < 1e-6


def test_ticks_between_takes_the_start_not_the_end() -> None:
    assert ticks_between(hourly, 2 * HOUR, 5 * HOUR, 100) == [2 * HOUR, 3 * HOUR, 4 * HOUR]
    assert ticks_between(hourly, 2 * HOUR + 1, 3 * HOUR, 100) == []
    assert len(ticks_between(hourly, 0.0, 10 * DAY, 5)) == 6  # one more: too many
    daily_3 = ticks_between(lambda t: next_fire("0 3 * * *", t), 0.0, 3 * DAY, 10)
    assert daily_3 == [3 * HOUR, DAY + 3 * HOUR, 2 * DAY + 3 * HOUR]


def test_dropped_spans_are_counted_up_to_a_bound() -> None:
    assert dropped(HOUR, HOUR, hourly, "x") is None
    span = dropped(HOUR, 4 * HOUR, hourly, "why")
    assert span is not None and (span.first, span.last, span.count, span.more) == (
        HOUR, 3 * HOUR, 3, False)
    every_second = dropped(0.0, 5000.0, lambda t: every_after(0.0, 1.0, t), "why")
    assert every_second is not None
    assert (every_second.count, every_second.more) == (DROPPED_COUNTED, True)


def test_plans_say_which_ticks_they_drop_and_why() -> None:
    # Down from 10:05 to 13:20: one catch-up run keyed by 11:00, 12:00 and 13:00 folded.
    one = plan_ticks(11 * HOUR, 13 * HOUR + 1200, hourly, Catchup.ONE)
    assert one.ticks == (11 * HOUR,)
    (folded,) = one.dropped
    assert (folded.first, folded.last, folded.count) == (12 * HOUR, 13 * HOUR, 2)
    assert folded.reason == "catchup one: run once, as the job of 1970-01-01T11:00:00Z"
    (missed,) = plan_ticks(11 * HOUR, 13 * HOUR + 1200, hourly, Catchup.NONE).dropped
    assert (missed.count, missed.reason) == (3, "catchup none: missed while no scheduler ran")
    late = plan_ticks(11 * HOUR, 13 * HOUR + 30, hourly, Catchup.NONE)
    assert late.ticks == (13 * HOUR,) and late.dropped[0].count == 2
    assert plan_ticks(11 * HOUR, 11 * HOUR + 30, hourly, Catchup.NONE).dropped == ()
    assert plan_ticks(11 * HOUR, 12 * HOUR + 30, hourly, Catchup.NONE).dropped[0].count == 1


def test_the_catch_up_window_drops_older_ticks_whatever_the_policy() -> None:
    # Down for three days, hourly, window 1 day: only the last day's ticks count.
    now = 3 * DAY + 600
    plan = plan_ticks(HOUR, now, hourly, Catchup.ALL, window=DAY)
    assert plan.ticks[0] == 2 * DAY + HOUR and plan.ticks[-1] == 3 * DAY
    (old,) = plan.dropped
    assert (old.first, old.last, old.count) == (HOUR, 2 * DAY, 48)
    assert old.reason == "older than the catch-up window (1d)"
    one = plan_ticks(HOUR, now, hourly, Catchup.ONE, window=DAY)
    assert one.ticks == (2 * DAY + HOUR,) and [d.count for d in one.dropped] == [48, 23]
    # Every missed tick older than the window: nothing runs, the next tick is ahead.
    none = plan_ticks(HOUR, 2 * HOUR + 60, hourly, Catchup.ALL, window=30.0)
    assert (none.ticks, none.next_run, none.skipped) == ((), 3 * HOUR, True)
    assert none.dropped[0].count == 2
    # Within the window, nothing changes.
    assert plan_ticks(HOUR, HOUR + 5, hourly, Catchup.ALL, window=DAY).ticks == (HOUR,)


def test_when_past_reads_times_and_durations_ago() -> None:
    from taskyard.core.durations import DurationError
    from taskyard.core.ticks import when_past

    assert when_past(5.0, now=100.0, field="--from") == 5.0
    assert when_past("now", now=100.0, field="--to") == 100.0
    assert when_past("1m", now=100.0, field="--from") == 40.0
    assert when_past("1970-01-01T00:01:00Z", now=1e9, field="--from") == 60.0
    with pytest.raises(DurationError, match="--from: 'soon' is neither"):
        when_past("soon", now=0.0, field="--from")
    with pytest.raises(DurationError, match="--to: expected a time, got list"):
        when_past([], now=0.0, field="--to")  # type: ignore[arg-type]
