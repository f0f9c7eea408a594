"""History as rollups: what happened to jobs, counted per time bucket, pool and task type,
at a few granularities — so that a chart of the last hour, day or week reads a few
hundred rows whatever the number of jobs behind it.

Pure: the store turns events into :class:`Fact` values and writes what :func:`fold`
returns, adding it to the rows already there (:meth:`Counts.merge`); the charts read
rows back and aggregate them (:func:`combine`, :func:`quantile`).

Durations (submit→start wait, a job's cycle time from creation to its end) are kept as
histograms over fixed bounds (``BOUNDS``), so that buckets, pools and types add up and
percentiles come out of any sum of them: a percentile is interpolated inside the
histogram bucket it falls in (its error is at most that bucket's width).
"""

from __future__ import annotations

import bisect
import itertools
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum

BOUNDS: tuple[float, ...] = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
                             30.0, 60.0, 300.0, 900.0, 3600.0, 21600.0, 86400.0)
"""Upper bounds (seconds) of the duration histograms' buckets; one more, unbounded."""
GRANULARITIES: tuple[int, ...] = (60, 900, 7200, 0)
"""Seconds per bucket of each level of rollups; 0 is one bucket for all time (what
Prometheus' cumulative histograms need)."""
KEEP: Mapping[int, float] = {60: 2 * 86400.0, 900: 15 * 86400.0, 7200: 400 * 86400.0}
"""How long each level's buckets are kept (the all-time level is kept)."""
WINDOWS: Mapping[str, tuple[float, int]] = {
    "hour": (3600.0, 60), "day": (86400.0, 900), "week": (7 * 86400.0, 7200)}
"""A chart's span and the granularity it reads."""


class Kind(Enum):
    """What happened to a job."""

    ARRIVED = "arrived"
    """It became pending (submitted ready, its dependencies met, or retried)."""
    STARTED = "started"
    """An attempt started; ``seconds``: its wait since ready, for a first attempt."""
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    ERRORED = "errored"
    """An attempt ended in error, or lost its worker."""
    CANCELED = "canceled"
    FINISHED = "finished"
    """The job ended for good; ``seconds``: its cycle time (creation to end)."""


@dataclass(frozen=True, slots=True)
class Fact:
    """One thing that happened at ``at`` (epoch seconds) to a job of ``pool``/``type``."""

    kind: Kind
    at: float
    pool: str
    type: str
    seconds: float | None = None


def empty_hist() -> tuple[int, ...]:
    return (0,) * (len(BOUNDS) + 1)


@dataclass(frozen=True, slots=True)
class Counts:
    """One bucket's counts (a row of rollups)."""

    arrived: int = 0
    started: int = 0
    succeeded: int = 0
    failed: int = 0
    errored: int = 0
    canceled: int = 0
    finished: int = 0
    wait_sum: float = 0.0
    wait_hist: tuple[int, ...] = field(default_factory=empty_hist)
    cycle_sum: float = 0.0
    cycle_hist: tuple[int, ...] = field(default_factory=empty_hist)
    depth_sum: float = 0.0
    depth_n: int = 0
    depth_max: int = 0

    def merge(self, other: Counts) -> Counts:
        """Both added up (the depth's maximum is the larger one)."""
        # Field by field, not through dataclasses.fields(): the charts and the rollups'
        # writes merge one Counts per row (tests/unit/test_history_core.py checks every
        # field is merged).
        return Counts(
            self.arrived + other.arrived, self.started + other.started,
            self.succeeded + other.succeeded, self.failed + other.failed,
            self.errored + other.errored, self.canceled + other.canceled,
            self.finished + other.finished, self.wait_sum + other.wait_sum,
            _added(self.wait_hist, other.wait_hist), self.cycle_sum + other.cycle_sum,
            _added(self.cycle_hist, other.cycle_hist), self.depth_sum + other.depth_sum,
            self.depth_n + other.depth_n, max(self.depth_max, other.depth_max))


def _added(mine: tuple[int, ...], theirs: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(a + b for a, b in zip(mine, theirs, strict=True))


Key = tuple[int, float, str, str]
"""(granularity, bucket start, pool, type)."""


def bucket_of(at: float, granularity: int) -> float:
    """The start of the bucket ``at`` falls in (0 for the all-time level)."""
    return 0.0 if granularity == 0 else math.floor(at / granularity) * granularity


def slot(seconds: float) -> int:
    """The histogram bucket of a duration (negative ones count as 0)."""
    return bisect.bisect_left(BOUNDS, max(seconds, 0.0))


_COUNTERS = {kind: index for index, kind in enumerate(
    (Kind.ARRIVED, Kind.STARTED, Kind.SUCCEEDED, Kind.FAILED, Kind.ERRORED, Kind.CANCELED,
     Kind.FINISHED))}
"""Each kind's counter, in the order of Counts' first fields."""
_TIMED = {Kind.STARTED: "wait", Kind.FINISHED: "cycle"}
"""The kinds whose seconds are kept, and as what."""


class _Bucket:
    """One key's counts while folding: mutable, so that a fact costs a few additions
    (building a Counts per fact and granularity cost ~30 µs a fact, 150-170 µs of the
    scheduler's CPU per no-op job: bench/history.py)."""

    __slots__ = ("counters", "cycle_hist", "cycle_sum", "wait_hist", "wait_sum")

    def __init__(self) -> None:
        self.counters = [0] * len(_COUNTERS)
        self.wait_sum = 0.0
        self.wait_hist = [0] * (len(BOUNDS) + 1)
        self.cycle_sum = 0.0
        self.cycle_hist = [0] * (len(BOUNDS) + 1)

    def counts(self) -> Counts:
        arrived, started, succeeded, failed, errored, canceled, finished = self.counters
        return Counts(arrived, started, succeeded, failed, errored, canceled, finished,
                      self.wait_sum, tuple(self.wait_hist), self.cycle_sum,
                      tuple(self.cycle_hist))


def fold(facts: Iterable[Fact],
         granularities: Sequence[int] = GRANULARITIES) -> dict[Key, Counts]:
    """The facts counted into every granularity's buckets."""
    found: dict[Key, _Bucket] = {}
    for fact in facts:
        counter = _COUNTERS[fact.kind]
        seconds = fact.seconds
        # A start's wait, an end's cycle time (other kinds' seconds count nothing).
        timed = None if seconds is None else _TIMED.get(fact.kind)
        spent, index = ((0.0, 0) if seconds is None or timed is None
                        else (max(seconds, 0.0), slot(seconds)))
        for g in granularities:
            key = (g, bucket_of(fact.at, g), fact.pool, fact.type)
            bucket = found.get(key)
            if bucket is None:
                bucket = found[key] = _Bucket()
            bucket.counters[counter] += 1
            if timed == "wait":
                bucket.wait_sum += spent
                bucket.wait_hist[index] += 1
            elif timed == "cycle":
                bucket.cycle_sum += spent
                bucket.cycle_hist[index] += 1
    return {key: bucket.counts() for key, bucket in found.items()}


def depth_sample(depths: Mapping[tuple[str, str], int], at: float,
                 granularities: Sequence[int] = GRANULARITIES) -> dict[Key, Counts]:
    """One reading of the queue depth (pending jobs per pool and type) at ``at``."""
    return {(g, bucket_of(at, g), pool, type_): Counts(depth_sum=float(n), depth_n=1,
                                                       depth_max=n)
            for (pool, type_), n in depths.items() for g in granularities if g}


def combine(rows: Iterable[Counts]) -> Counts:
    """Rows added up (several pools or types, or buckets)."""
    total = Counts()
    for row in rows:
        total = total.merge(row)
    return total


def quantile(hist: Sequence[int], q: float) -> float | None:
    """The ``q`` quantile (0 < q < 1) of a histogram over ``BOUNDS``, interpolated
    inside its bucket (the unbounded last bucket answers its lower bound); None if it
    holds nothing."""
    cumulative = list(itertools.accumulate(hist))
    if not cumulative or cumulative[-1] == 0:
        return None
    rank = q * cumulative[-1]
    # The first bucket whose running total reaches the rank: it holds jobs (rank > 0).
    index = min(bisect.bisect_left(cumulative, rank), len(hist) - 1)
    low = 0.0 if index == 0 else BOUNDS[index - 1]
    if index == len(BOUNDS):
        return low
    before = cumulative[index - 1] if index else 0
    return low + (BOUNDS[index] - low) * (rank - before) / hist[index]


@dataclass(frozen=True, slots=True)
class Point:
    """One bucket of a chart: counts, wait and cycle time percentiles (seconds, None
    without any), the queue depth's mean and maximum over its readings (None without)."""

    bucket: float
    counts: Counts
    wait_p50: float | None
    wait_p95: float | None
    cycle_p50: float | None
    cycle_p95: float | None
    depth: float | None
    depth_max: int | None


def series(rows: Mapping[float, Counts], *, now: float, window: str) -> list[Point]:
    """Every bucket of ``window`` (a key of ``WINDOWS``) up to ``now``, oldest first,
    from the rows by bucket start (missing buckets count nothing)."""
    span, granularity = WINDOWS[window]
    last = bucket_of(now, granularity)
    first = bucket_of(now - span, granularity) + granularity
    points = []
    bucket = first
    while bucket <= last:
        c = rows.get(bucket, Counts())
        points.append(Point(bucket, c, quantile(c.wait_hist, 0.5), quantile(c.wait_hist, 0.95),
                            quantile(c.cycle_hist, 0.5), quantile(c.cycle_hist, 0.95),
                            c.depth_sum / c.depth_n if c.depth_n else None,
                            c.depth_max if c.depth_n else None))
        bucket += granularity
    return points
