"""History rollups (pure core): folding facts into buckets, merging, percentiles."""

from __future__ import annotations

import math
from dataclasses import fields, replace
from typing import Any

from hypothesis import example, given
from hypothesis import strategies as st

from taskyard.core.history import (
    BOUNDS,
    Counts,
    Fact,
    Kind,
    bucket_of,
    combine,
    depth_sample,
    empty_hist,
    fold,
    quantile,
    series,
    slot,
)

facts = st.builds(Fact, st.sampled_from(list(Kind)), st.floats(0, 1e6),
                  st.sampled_from(["default", "gpu"]), st.sampled_from(["a", "b"]),
                  st.none() | st.floats(-1, 1e5))


def _merged(a: dict, b: dict) -> dict:  # type: ignore[type-arg]
    out = dict(a)
    for key, counts in b.items():
        out[key] = out[key].merge(counts) if key in out else counts
    return out


def _same(a: dict, b: dict) -> bool:  # type: ignore[type-arg]
    """The same buckets and counts; sums of floats to the last bits (added in another
    order, (x + y) + z and x + (y + z) may differ there)."""
    return a.keys() == b.keys() and all(
        math.isclose(x, y, rel_tol=1e-12, abs_tol=1e-9) if isinstance(x, float) else x == y
        for key in a for f in fields(Counts)
        for x, y in [(getattr(a[key], f.name), getattr(b[key], f.name))])


@given(st.lists(facts, max_size=40), st.integers(0, 40))
@example([Fact(Kind.STARTED, 0.0, "gpu", "a", s) for s in (0.1, 0.2, 0.3)], 1)  # 0.6 / 0.6…01
def test_folding_in_two_parts_adds_up_to_folding_at_once(found: list[Fact], cut: int) -> None:
    assert _same(_merged(fold(found[:cut]), fold(found[cut:])), fold(found))


def _counts_of(fact: Fact) -> Counts:
    """One fact's counts, built field by field (the reference ``fold`` is checked against)."""
    one: dict[str, Any] = {fact.kind.value: 1}
    counts = replace(Counts(), **one)
    if fact.seconds is not None and fact.kind is Kind.STARTED:
        return replace(counts, wait_sum=max(fact.seconds, 0.0), wait_hist=_one_wait(fact.seconds))
    if fact.seconds is not None and fact.kind is Kind.FINISHED:
        return replace(counts, cycle_sum=max(fact.seconds, 0.0),
                       cycle_hist=_one_wait(fact.seconds))
    return counts


@given(st.lists(facts, max_size=60), st.sampled_from([(60, 900, 7200, 0), (60,), (0, 3600)]))
def test_folding_counts_as_merging_fact_by_fact(found: list[Fact],
                                                 levels: tuple[int, ...]) -> None:
    expected: dict = {}  # type: ignore[type-arg]
    for fact in found:
        for g in levels:
            key = (g, bucket_of(fact.at, g), fact.pool, fact.type)
            one = _counts_of(fact)
            expected[key] = expected[key].merge(one) if key in expected else one
    assert fold(found, levels) == expected


counts = st.builds(
    Counts, *(st.integers(0, 10**6) for _ in range(7)), st.floats(0, 1e6),
    st.tuples(*(st.integers(0, 100) for _ in range(len(BOUNDS) + 1))), st.floats(0, 1e6),
    st.tuples(*(st.integers(0, 100) for _ in range(len(BOUNDS) + 1))), st.floats(0, 1e6),
    st.integers(0, 1000), st.integers(0, 1000))


@given(counts, counts)
def test_merging_adds_every_field(a: Counts, b: Counts) -> None:
    merged = a.merge(b)
    for f in fields(Counts):
        mine, theirs, got = getattr(a, f.name), getattr(b, f.name), getattr(merged, f.name)
        if f.name == "depth_max":
            assert got == max(mine, theirs)
        elif isinstance(mine, tuple):
            assert got == tuple(x + y for x, y in zip(mine, theirs, strict=True))
        else:
            assert got == mine + theirs


@given(st.lists(facts, max_size=40))
def test_every_level_counts_every_fact_once(found: list[Fact]) -> None:
    folded = fold(found)
    for granularity in (60, 900, 7200, 0):
        level = combine(c for k, c in folded.items() if k[0] == granularity)
        for kind in Kind:
            assert getattr(level, kind.value) == sum(f.kind is kind for f in found)
        timed = [f for f in found if f.kind is Kind.STARTED and f.seconds is not None]
        assert sum(level.wait_hist) == len(timed)
        assert abs(level.wait_sum - sum(max(f.seconds or 0, 0) for f in timed)) < 1e-3
        cycles = [f for f in found if f.kind is Kind.FINISHED and f.seconds is not None]
        assert sum(level.cycle_hist) == len(cycles)
    for (granularity, bucket, _, _), _counts in folded.items():
        assert bucket == 0.0 if granularity == 0 else bucket % granularity == 0


@given(st.lists(st.floats(0, 1e5), min_size=1, max_size=60), st.floats(0.01, 0.99))
def test_a_quantile_lies_in_the_bucket_of_the_true_one(values: list[float], q: float) -> None:
    hist = list(empty_hist())
    for v in values:
        hist[slot(v)] += 1
    found = quantile(hist, q)
    assert found is not None
    ordered = sorted(values)
    # The rank the quantile reaches (a little either way: floating point).
    rank = max(0, math.ceil(q * len(ordered)) - 1)
    true = ordered[rank]
    low = 0.0 if slot(true) == 0 else BOUNDS[slot(true) - 1]
    high = BOUNDS[slot(true)] if slot(true) < len(BOUNDS) else BOUNDS[-1]
    assert low - 1e-9 <= found <= high + 1e-9
    assert quantile(hist, q / 2) <= found  # type: ignore[operator]


def test_buckets_depths_and_empty_histograms() -> None:
    assert bucket_of(125.0, 60) == 120.0 and bucket_of(125.0, 0) == 0.0
    assert quantile(empty_hist(), 0.5) is None
    assert quantile([], 0.5) is None
    assert slot(-3) == 0 and slot(1e9) == len(BOUNDS)
    big = list(empty_hist())
    big[-1] = 4
    assert quantile(big, 0.5) == BOUNDS[-1]
    sample = depth_sample({("default", "a"): 7}, 130.0)
    assert sample[(60, 120.0, "default", "a")] == Counts(depth_sum=7.0, depth_n=1, depth_max=7)
    assert (0, 0.0, "default", "a") not in sample
    both = sample[(60, 120.0, "default", "a")].merge(Counts(depth_sum=3, depth_n=1, depth_max=3))
    assert both.depth_max == 7 and both.depth_n == 2
    assert fold([Fact(Kind.FINISHED, 5.0, "p", "t")])[(60, 0.0, "p", "t")].finished == 1


def test_a_series_has_every_bucket_of_its_window() -> None:
    now = 7200.0 * 100 + 30
    rows = {now - 30 - 60: Counts(succeeded=2, wait_hist=_one_wait(0.3)),
            now - 30: Counts(depth_sum=6.0, depth_n=2, depth_max=4)}
    points = series(rows, now=now, window="hour")
    assert len(points) == 60 and points[-1].bucket == now - 30
    assert points[-1].depth == 3.0 and points[-1].depth_max == 4
    assert points[-2].counts.succeeded == 2 and points[-2].depth is None
    assert points[-2].wait_p50 is not None and 0.25 <= points[-2].wait_p50 <= 0.5
    assert points[0].counts == Counts() and points[0].wait_p95 is None
    assert len(series({}, now=now, window="day")) == 96
    assert len(series({}, now=now, window="week")) == 84


def _one_wait(seconds: float) -> tuple[int, ...]:
    hist = list(empty_hist())
    hist[slot(seconds)] = 1
    return tuple(hist)
