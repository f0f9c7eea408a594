"""The prefetch window a worker declares, and the pace it is chosen from (pure core)."""

from __future__ import annotations

import math
from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from taskyard.core.prefetch import (
    ALPHA,
    MIN_DURATION,
    WINDOW,
    PaceTracker,
    prefetch_window,
    worth_declaring,
)


@pytest.mark.parametrize(("capacity", "mean", "limit"), [
    (4, None, 10),   # no duration known yet
    (4, 0.001, 0),   # the worker was started with --prefetch 0
    (4, 0.001, -1),
    (0, 0.001, 10),  # a drained worker
    (-1, 0.001, 10),
])
def test_the_window_stays_shut(capacity: int, mean: float | None, limit: int) -> None:
    assert prefetch_window(capacity, mean, limit) == 0


@pytest.mark.parametrize(("capacity", "mean", "expected"), [
    # capacity * WINDOW / mean jobs start within the window; those beyond capacity queue.
    (3, 0.01, 12),    # 15 in the window
    (3, 0.025, 3),    # 6
    (4, 0.03, 3),     # 6.67: the job that starts inside the window counts
    (1, 0.001, 49),   # 50
    # Jobs as long as the window, or longer: nothing queued behind them.
    (3, WINDOW, 0),
    (1, WINDOW, 0),
    (7, WINDOW, 0),
    (2, 1.0, 0),
    (2, 3600.0, 0),
])
def test_the_window_holds_the_work_of_the_next_window_seconds(
        capacity: int, mean: float, expected: int) -> None:
    assert prefetch_window(capacity, mean, 100) == expected


def test_the_window_is_capped_by_the_limit_and_instant_jobs_count_as_min_duration() -> None:
    assert prefetch_window(2, 0.001, 5) == 5
    assert prefetch_window(1, 0.0, 10_000) == math.ceil(WINDOW / MIN_DURATION) - 1
    assert prefetch_window(1, 0.0, 10_000) == prefetch_window(1, MIN_DURATION / 10, 10_000)
    # A wider window (seconds of work held) opens it further.
    assert prefetch_window(1, 0.01, 100, window=0.1) == 9


@given(st.integers(1, 64), st.integers(1, 100_000), st.integers(0, 500))
def test_the_window_is_the_work_started_within_window_seconds_beyond_capacity(
        capacity: int, ten_thousandths: int, limit: int) -> None:
    # Durations of whole ten-thousandths of a second: the exact count is a fraction whose
    # distance from a whole number (if not zero) is far above any rounding error.
    mean = ten_thousandths / 10_000
    exact = capacity * Fraction(str(WINDOW)) / Fraction(ten_thousandths, 10_000)
    expected = max(0, min(limit, math.ceil(exact) - capacity))
    assert prefetch_window(capacity, mean, limit) == expected


@given(st.integers(1, 64), st.floats(0, 10), st.floats(0, 10), st.integers(0, 500))
def test_longer_jobs_never_open_the_window_wider(
        capacity: int, a: float, b: float, limit: int) -> None:
    short, long = sorted((a, b))
    wide = prefetch_window(capacity, short, limit)
    assert 0 <= prefetch_window(capacity, long, limit) <= wide <= limit


def test_the_pace_starts_at_the_first_duration_then_moves_by_alpha() -> None:
    pace = PaceTracker()
    assert pace.mean is None
    pace.observe(None)  # a handler's first run in its child: no pace (worker/child.py)
    assert pace.mean is None
    pace.observe(2.0)
    pace.observe(None)
    assert pace.mean == 2.0
    assert pace.mean == 2.0
    pace.observe(1.0)
    assert pace.mean == pytest.approx(2.0 - ALPHA)
    pace.observe(-5.0)  # a clock that stepped back: counted as an instant job
    assert pace.mean == pytest.approx((2.0 - ALPHA) * (1 - ALPHA))


def test_one_long_job_closes_the_window_and_short_ones_reopen_it_gradually() -> None:
    pace = PaceTracker()
    for _ in range(5):
        pace.observe(0.001)
    assert prefetch_window(4, pace.mean, 50) == 50  # 200 jobs start within the window
    pace.observe(10.0)
    assert prefetch_window(4, pace.mean, 50) == 0
    widths = []
    for _ in range(40):
        pace.observe(0.001)
        widths.append(prefetch_window(4, pace.mean, 50))
    assert widths[0] == 0 and widths[-1] == 50
    assert widths == sorted(widths)  # it reopens step by step, never jumping back


@given(st.lists(st.floats(0, 1e6), min_size=1, max_size=30))
def test_the_pace_stays_between_the_shortest_and_longest_duration(durations: list[float]) -> None:
    pace = PaceTracker()
    for seconds in durations:
        pace.observe(seconds)
    assert pace.mean is not None
    assert min(durations) * (1 - 1e-9) <= pace.mean <= max(durations) * (1 + 1e-9)


def test_a_window_is_declared_when_it_opens_closes_or_moves_by_a_quarter() -> None:
    assert not worth_declaring(8, 8)
    assert worth_declaring(3, 0) and worth_declaring(0, 3)  # opens, closes
    assert not worth_declaring(9, 8) and worth_declaring(10, 8)  # 1/8 vs 1/4 of it
    assert not worth_declaring(7, 8) and worth_declaring(6, 8)


def test_a_worker_with_lone_jobs_only_opens_closes_or_doubles_its_window() -> None:
    assert not worth_declaring(6, 8, loaded=False)
    assert not worth_declaring(1, 8, loaded=False)
    assert not worth_declaring(15, 8, loaded=False)
    assert worth_declaring(3, 0, loaded=False) and worth_declaring(0, 3, loaded=False)
    # Opened narrow by a slow first job: widened once its lone jobs show they are short.
    assert worth_declaring(16, 8, loaded=False) and worth_declaring(499, 20, loaded=False)
