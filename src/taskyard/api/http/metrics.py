"""``/metrics``: Prometheus text, every name starting with ``taskyard_``.

Gauges are read from the database at each scrape (jobs by state and pool, queue depth
per type, workers, capacity per pool), so any server of a cluster gives the same
numbers. Two histograms count what happened since this server started: the submit→start
latency of jobs outside graphs (read from the ``job-running`` events after the last
scrape) and the duration of the scheduling cycles this process runs (``taskyard up
--http``; a server without a scheduler has no cycles to time).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator

from prometheus_client import CollectorRegistry, Histogram, generate_latest
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from taskyard.api.yard import Yard
from taskyard.scheduler.cycle import CycleReport
from taskyard.store.reads.metrics import (
    first_starts_after,
    jobs_by_state,
    last_event_id,
    pending_by_type,
    unfinished_by_pool,
)

log = logging.getLogger("taskyard.http")
LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0,
                   60.0, 300.0)
MAX_PAGES = 10
"""Pages of starts taken in per scrape (the rest at the next one)."""
CYCLE_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5)


class _StoreCollector(Collector):
    """Gauges read from the database when Prometheus scrapes."""

    def __init__(self, yard: Yard) -> None:
        self.yard = yard

    def collect(self) -> Iterator[GaugeMetricFamily]:
        store = self.yard.store
        jobs = GaugeMetricFamily("taskyard_jobs", "Jobs in each state.", labels=["state"])
        for state, count in jobs_by_state(store).items():
            jobs.add_metric([state], count)
        yield jobs
        by_pool = GaugeMetricFamily(
            "taskyard_jobs_unfinished", "Unfinished jobs by state and first-choice pool.",
            labels=["state", "pool"])
        for (state, pool), count in sorted(unfinished_by_pool(store).items()):
            by_pool.add_metric([state, pool], count)
        yield by_pool
        depth = GaugeMetricFamily("taskyard_queue_depth",
                                  "Pending jobs (ready, waiting for room) per task type.",
                                  labels=["type"])
        for type_, count in sorted(pending_by_type(store).items()):
            depth.add_metric([type_], count)
        yield depth
        yield from self._workers()

    def _workers(self) -> Iterator[GaugeMetricFamily]:
        workers = self.yard.workers()
        alive = GaugeMetricFamily("taskyard_workers_alive", "Live (active) workers.")
        alive.add_metric([], len(workers))
        yield alive
        families = {
            name: GaugeMetricFamily(f"taskyard_pool_{name}", text, labels=["pool"])
            for name, text in (("workers", "Live workers serving the pool."),
                               ("capacity", "Capacity of the pool's live workers."),
                               ("capacity_used", "Capacity in use in the pool."),
                               ("capacity_free", "Capacity free in the pool."))}
        for pool in self.yard.pools():
            values = {"workers": len(pool["workers"]), "capacity": pool["capacity"],
                      "capacity_used": pool["used"],
                      "capacity_free": max(pool["capacity"] - pool["used"], 0)}
            for name, value in values.items():
                families[name].add_metric([pool["name"]], value)
        yield from families.values()


class Metrics:
    """One registry per application (no global state)."""

    def __init__(self, yard: Yard) -> None:
        self.yard = yard
        self.registry = CollectorRegistry()
        self.latency = Histogram(
            "taskyard_submit_to_start_seconds",
            "Seconds from submit (or run_after) to the first attempt's start, for jobs "
            "outside graphs that started since this server started.",
            buckets=LATENCY_BUCKETS, registry=self.registry)
        self.cycles = Histogram(
            "taskyard_cycle_duration_seconds",
            "Duration of the scheduling cycles run by this process.",
            buckets=CYCLE_BUCKETS, registry=self.registry)
        self.registry.register(_StoreCollector(yard))
        self._lock = threading.Lock()
        self._cursor: int | None = None
        try:
            self._cursor = last_event_id(yard.store)
        except Exception as exc:  # read at the first scrape instead
            log.warning("event=metrics-cursor-failed error=%s", " ".join(str(exc).split()))

    def observe_cycle(self, report: CycleReport) -> None:
        self.cycles.observe(report.seconds)

    def render(self) -> bytes:
        """The text exposition, after taking in the starts since the last scrape."""
        with self._lock:
            if self._cursor is None:
                self._cursor = last_event_id(self.yard.store)
            for _ in range(MAX_PAGES):
                starts = first_starts_after(self.yard.store, self._cursor)
                for seconds in starts.latencies:
                    self.latency.observe(seconds)
                self._cursor = starts.last_id
                if not starts.more:
                    break
        return generate_latest(self.registry)
