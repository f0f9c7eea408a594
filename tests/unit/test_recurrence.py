"""Recurrence decisions: catch-up, fixed ticks, adaptive intervals, aging."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from taskyard.core.durations import Interval
from taskyard.core.recurrence import (
    MAX_CATCHUP_RUNS,
    Catchup,
    adaptive_next_run,
    effective_priority,
    eventful_of,
    every_after,
    next_interval,
    parse_catchup,
    placement_key,
    plan_ticks,
    tick_key,
)

HOUR, DAY = 3600.0, 86400.0


def hourly(after: float) -> float:
    return every_after(0.0, HOUR, after)


# --- catch-up ------------------------------------------------------------------------------


def test_parse_catchup():
    assert parse_catchup(None) is Catchup.ONE
    assert parse_catchup("ALL") is Catchup.ALL
    assert parse_catchup("none") is Catchup.NONE
    with pytest.raises(ValueError, match="'sometimes' is not one of one, all, none"):
        parse_catchup("sometimes")


@pytest.mark.parametrize("policy", list(Catchup))
def test_not_due_yet_changes_nothing(policy):
    plan = plan_ticks(10 * HOUR, 9 * HOUR, hourly, policy)
    assert (plan.ticks, plan.next_run, plan.skipped) == ((), 10 * HOUR, False)


@pytest.mark.parametrize("policy", list(Catchup))
def test_on_time_tick_runs_once_under_every_policy(policy):
    plan = plan_ticks(10 * HOUR, 10 * HOUR + 2, hourly, policy)
    assert plan.ticks == (10 * HOUR,)
    assert plan.next_run == 11 * HOUR
    assert not plan.skipped


def test_one_after_downtime_makes_a_single_run_not_a_storm():
    # Down for 1000 hours: one job, keyed by the oldest missed tick.
    plan = plan_ticks(10 * HOUR, 1010.5 * HOUR, hourly, Catchup.ONE)
    assert plan.ticks == (10 * HOUR,)
    assert plan.next_run == 1011 * HOUR
    assert plan.skipped


def test_all_runs_every_missed_tick_bounded_per_cycle():
    plan = plan_ticks(10 * HOUR, 12.5 * HOUR, hourly, Catchup.ALL)
    assert plan.ticks == (10 * HOUR, 11 * HOUR, 12 * HOUR)
    assert plan.next_run == 13 * HOUR
    big = plan_ticks(0.0, 1000 * HOUR, hourly, Catchup.ALL)
    assert len(big.ticks) == MAX_CATCHUP_RUNS
    assert big.next_run == MAX_CATCHUP_RUNS * HOUR  # the rest come next cycle
    rest = plan_ticks(big.next_run, 1000 * HOUR, hourly, Catchup.ALL)
    assert rest.ticks[0] == big.ticks[-1] + HOUR


def test_none_skips_missed_ticks_but_keeps_a_barely_late_one():
    # The 12:00 tick is 30 s late (within grace): it runs; 10:00 and 11:00 are dropped.
    plan = plan_ticks(10 * HOUR, 12 * HOUR + 30, hourly, Catchup.NONE)
    assert plan.ticks == (12 * HOUR,)
    assert plan.next_run == 13 * HOUR
    assert plan.skipped
    # Nothing within the grace: nothing runs, the schedule jumps to the future.
    plan = plan_ticks(10 * HOUR, 12.5 * HOUR, hourly, Catchup.NONE)
    assert plan.ticks == ()
    assert plan.next_run == 13 * HOUR
    assert plan.skipped


@settings(max_examples=300)
@given(st.sampled_from(list(Catchup)), st.integers(0, 10_000), st.floats(0, 5000 * HOUR))
def test_plans_are_bounded_and_move_forward(policy, first, late):
    next_run = first * HOUR
    now = next_run + late
    plan = plan_ticks(next_run, now, hourly, policy)
    assert 1 <= len(plan.ticks) <= (MAX_CATCHUP_RUNS if policy is Catchup.ALL else 1) or (
        policy is Catchup.NONE and plan.ticks == ()
    )
    assert all(next_run <= t <= now for t in plan.ticks)
    assert list(plan.ticks) == sorted(set(plan.ticks))
    assert plan.next_run > plan.ticks[-1] if plan.ticks else plan.next_run > now
    if policy is not Catchup.ALL:
        assert plan.next_run > now


# --- fixed ticks ---------------------------------------------------------------------------


def test_every_after():
    assert every_after(100.0, 10.0, 50.0) == 100.0
    assert every_after(100.0, 10.0, 100.0) == 110.0
    assert every_after(100.0, 10.0, 109.99) == 110.0
    assert every_after(100.0, 10.0, 110.0) == 120.0
    assert every_after(0.0, 1.0, 1e9 + 0.5) == 1e9 + 1


@settings(max_examples=500)
@given(st.integers(0, 2_000_000_000), st.floats(1, 1e6), st.floats(0, 1e9))
def test_every_after_is_the_first_tick_after(anchor, every, delta):
    after = anchor + delta
    tick = every_after(float(anchor), every, after)
    assert tick > after
    steps = round((tick - anchor) / every)
    assert tick == anchor + steps * every
    assert steps == 0 or anchor + (steps - 1) * every <= after


def test_tick_key():
    assert tick_key("nightly", 1_700_000_000.9) == "schedule:nightly:1700000000"


# --- adaptive interval ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("result", "expected"),
    [({"eventful": True}, True), ({"eventful": False, "n": 3}, False), ({"eventful": 1}, None),
     ({}, None), ("eventful", None), (None, None), ([True], None)],
)
def test_eventful_of(result, expected):
    assert eventful_of(result) is expected


BOUNDS = Interval(DAY, 12 * HOUR, 64 * DAY)  # swh's load-git: 1 day [12 h, 64 days]


def test_uneventful_backs_off_eventful_comes_back_sooner():
    up = next_interval(DAY, BOUNDS, 2.0, succeeded=True, eventful=False)
    assert up == 2 * DAY
    down = next_interval(DAY, BOUNDS, 2.0, succeeded=True, eventful=True)
    assert down == 12 * HOUR


def test_clamped_to_min_and_max():
    assert next_interval(12 * HOUR, BOUNDS, 2.0, succeeded=True, eventful=True) == 12 * HOUR
    assert next_interval(48 * DAY, BOUNDS, 2.0, succeeded=True, eventful=False) == 64 * DAY
    # A current interval outside new bounds is pulled back in even without a signal.
    assert next_interval(100 * DAY, BOUNDS, 2.0, succeeded=False, eventful=None) == 64 * DAY


def test_failure_or_no_signal_keeps_the_interval():
    assert next_interval(4 * DAY, BOUNDS, 2.0, succeeded=False, eventful=True) == 4 * DAY
    assert next_interval(4 * DAY, BOUNDS, 2.0, succeeded=True, eventful=None) == 4 * DAY
    assert next_interval(4 * DAY, BOUNDS, None, succeeded=True, eventful=False) == 4 * DAY
    assert next_interval(None, BOUNDS, 2.0, succeeded=False, eventful=None) == DAY


def test_worked_example_from_the_docs():
    interval, seen = DAY, []
    for eventful in [False] * 7 + [True, True]:
        interval = next_interval(interval, BOUNDS, 2.0, succeeded=True, eventful=eventful)
        seen.append(interval / DAY)
    assert seen == [2, 4, 8, 16, 32, 64, 64, 32, 16]


bounds = st.tuples(st.floats(1, 1e5), st.floats(1, 100), st.floats(1, 100)).map(
    lambda t: Interval(t[0] * t[1], t[0], t[0] * t[1] * t[2])
)


@settings(max_examples=500)
@given(bounds, st.floats(0.5, 1e8), st.floats(1.01, 10), st.booleans(), st.booleans())
def test_interval_stays_within_bounds_and_moves_the_right_way(b, current, factor, ok, eventful):
    new = next_interval(current, b, factor, succeeded=ok, eventful=eventful)
    assert b.minimum <= new <= b.maximum
    kept = min(max(current, b.minimum), b.maximum)
    if not ok:
        assert new == kept
    elif eventful:
        assert new <= kept
    else:
        assert new >= kept


def test_adaptive_next_run():
    assert adaptive_next_run(1000.0, 60.0, 990.0) == 1060.0
    # A zero interval never reuses the previous tick's whole second (its job key).
    assert adaptive_next_run(1000.2, 0.0, 1000.7) == 1001.0


@settings(max_examples=300)
@given(st.floats(0, 1e9), st.floats(0, 1e7), st.floats(0, 1e9))
def test_adaptive_next_run_is_after_end_and_gets_a_new_key(end, interval, tick):
    nxt = adaptive_next_run(end, interval, tick)
    assert nxt >= end + interval
    assert tick_key("s", nxt) != tick_key("s", tick)


# --- priorities and aging ------------------------------------------------------------------


def test_effective_priority():
    assert effective_priority(5, 10_000, 0) == 5  # off
    assert effective_priority(5, 0, 10) == 5
    assert effective_priority(5, -3, 10) == 5
    assert effective_priority(5, 599, 10) == 5  # nothing before the first full period
    assert effective_priority(5, 600, 10) == 6
    assert effective_priority(-2, 3 * 600 + 1, 10) == 1
    with pytest.raises(ValueError, match="aging_minutes must be >= 0"):
        effective_priority(0, 1, -1)


jobs = st.lists(
    st.tuples(st.integers(-5, 5), st.floats(0, 1e6)), min_size=1, max_size=60
)


@settings(max_examples=300)
@given(jobs)
def test_without_aging_order_is_strictly_priority_then_age(items):
    keyed = [(prio, job_id, waited) for job_id, (prio, waited) in enumerate(items)]
    by_key = sorted(keyed, key=lambda j: placement_key(j[0], j[1], j[2], 0))
    assert [(p, i) for p, i, _ in by_key] == sorted(((p, i) for p, i, _ in keyed),
                                                    key=lambda x: (-x[0], x[1]))


@settings(max_examples=300)
@given(st.integers(-100, 100), st.integers(-100, 1000), st.floats(0.5, 600),
       st.floats(0, 1e6), st.integers(1, 10**6))
def test_with_aging_a_long_wait_precedes_any_fixed_priority_stream(
    low, high, minutes, extra, newcomer_id
):
    # A stream of fresh jobs at priority `high` keeps arriving (each waited < one period).
    needed = (max(high - low + 1, 0) + 1) * minutes * 60  # one spare period: float floors
    old_key = placement_key(low, 0, needed + extra, minutes)
    fresh_key = placement_key(high, newcomer_id, minutes * 60 * 0.99, minutes)
    assert old_key < fresh_key
