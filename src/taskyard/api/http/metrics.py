"""``/metrics``: Prometheus text, every name starting with ``taskyard_``.

Everything is read from the database at each scrape, so every server of a cluster (and
every process of ``serve --workers N``) gives the same numbers: gauges (jobs by state
and pool, queue depth per type, workers, capacity per pool), and counters and
histograms from the stored history (``store/transitions/history.py``, brought up to date
before each scrape): submit→start waits and cycle times of jobs, attempts by outcome,
and the durations of the scheduling cycles every scheduler process ran.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from taskyard.api.http.history_metrics import HistoryCollector
from taskyard.api.http.state_counts import StateCounts
from taskyard.api.yard import Yard
from taskyard.store.reads.metrics import pending_by_type, unfinished_by_pool
from taskyard.store.transitions.history import roll_up

log = logging.getLogger("taskyard.http")
CATCH_UP = 4
"""Batches of events a scrape folds into the history first (the rest at the next one,
or by a scheduler's history keeper)."""


class _StoreCollector(Collector):
    """Gauges read from the database when Prometheus scrapes."""

    def __init__(self, yard: Yard, counts: StateCounts) -> None:
        self.yard = yard
        self.counts = counts

    def collect(self) -> Iterator[GaugeMetricFamily]:
        store = self.yard.store
        jobs = GaugeMetricFamily("taskyard_jobs", "Jobs in each state (on a large "
                                 "history, the ended ones up to a minute old).",
                                 labels=["state"])
        for state, count in self.counts.read().items():
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
        self.counts = StateCounts(yard.store)
        """Jobs by state, shared with the overview."""
        self.registry = CollectorRegistry()
        self.registry.register(_StoreCollector(yard, self.counts))
        self.registry.register(HistoryCollector(yard.store))
        self._lock = threading.Lock()

    def render(self) -> bytes:
        """The text exposition, the history brought up to date first (bounded)."""
        with self._lock:
            try:
                roll_up(self.yard.store, batches=CATCH_UP)
            except Exception as exc:  # the gauges are still worth answering
                log.warning("event=history-catch-up-failed error=%s",
                            " ".join(str(exc).split()))
        return generate_latest(self.registry)
