"""``/metrics`` from the stored history: counters and histograms summed over every
process (the rollups' all-time level, ``store/reads/charts.py:totals``; the scheduling
cycles' shared histogram)."""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence

from prometheus_client.core import CounterMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.registry import Collector

from taskyard.core.history import BOUNDS, combine
from taskyard.scheduler.history import CYCLE_DURATIONS
from taskyard.store import Store
from taskyard.store.reads.charts import totals
from taskyard.store.transitions.history import read_durations

OUTCOMES = ("started", "succeeded", "failed", "errored", "canceled")


def _buckets(bounds: Sequence[float], counts: Sequence[int]) -> list[tuple[str, float]]:
    """Prometheus' cumulative buckets, ``+Inf`` last."""
    running = list(itertools.accumulate(counts))
    return [(repr(float(b)), float(n)) for b, n in zip(bounds, running, strict=False)] + [
        ("+Inf", float(running[-1] if running else 0))]


class HistoryCollector(Collector):
    """Read at each scrape."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def collect(self) -> Iterator[Metric]:
        by_key = totals(self.store)
        every = combine(by_key.values())
        yield HistogramMetricFamily(
            "taskyard_submit_to_start_seconds",
            "Seconds from ready (submitted, dependencies met; not before run_after) to the "
            "first attempt's start, every job (stored history).",
            buckets=_buckets(BOUNDS, every.wait_hist), sum_value=every.wait_sum)
        yield HistogramMetricFamily(
            "taskyard_job_cycle_seconds",
            "Seconds from a job's creation to its end, jobs that ended (stored history).",
            buckets=_buckets(BOUNDS, every.cycle_hist), sum_value=every.cycle_sum)
        attempts = CounterMetricFamily(
            "taskyard_attempts", "Attempts started, and ended by outcome, per first-choice "
            "pool and task type (stored history).", labels=["pool", "type", "outcome"])
        arrived = CounterMetricFamily(
            "taskyard_jobs_arrived", "Jobs that became pending (submitted ready, or their "
            "dependencies met) per first-choice pool and task type.", labels=["pool", "type"])
        finished = CounterMetricFamily(
            "taskyard_jobs_finished", "Jobs that ended for good per first-choice pool and "
            "task type.", labels=["pool", "type"])
        for (pool, type_), counts in sorted(by_key.items()):
            for outcome in OUTCOMES:
                attempts.add_metric([pool, type_, outcome], getattr(counts, outcome))
            arrived.add_metric([pool, type_], counts.arrived)
            finished.add_metric([pool, type_], counts.finished)
        yield from (attempts, arrived, finished)
        cycles = read_durations(self.store, CYCLE_DURATIONS)
        yield HistogramMetricFamily(
            "taskyard_cycle_duration_seconds",
            "Duration of the scheduling cycles run by every scheduler process.",
            buckets=_buckets(cycles.bounds if cycles else (), cycles.counts if cycles else ()),
            sum_value=cycles.total if cycles else 0.0)
