"""The figures of a suite's report: which runs each is read from, and how."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from bench.suite import LEAN

AS_HUEY = (" deployed as huey's `-w 2` (1 slot each, `--capacity 1`: 2 jobs at once; the "
           "scheduler in the first, `worker --scheduler`)")

Getter = Callable[[dict[str, Any]], "float | None"]


def _get(key: str) -> Getter:
    def get(row: dict[str, Any]) -> float | None:
        value = row.get(key)
        return float(value) if isinstance(value, int | float) else None
    return get


def _first(*keys: str) -> Getter:
    def get(row: dict[str, Any]) -> float | None:
        for key in keys:
            value = row.get(key)
            if isinstance(value, int | float):
                return float(value)
        return None
    return get


def _part(key: str | None, field: str) -> Getter:
    """``row[key][field]`` (``key`` None: ``row[field]``): a counted run's figures."""
    def get(row: dict[str, Any]) -> float | None:
        part = row.get(key) if key else row
        value = part.get(field) if isinstance(part, dict) else None
        return float(value) if isinstance(value, int | float) else None
    return get


def _rss(*groups: str) -> Getter:
    def get(row: dict[str, Any]) -> float | None:
        found = [row.get("rss_mb", {}).get(g) for g in groups]
        values = [float(v) for v in found if isinstance(v, int | float)]
        return sum(values) if values else None
    return get


@dataclass(frozen=True)
class Metric:
    mid: str
    workload: str
    cell: str  # the runs it is read from (W5: the W1, W3 or W4 runs)
    label: str
    unit: str
    better: str  # "higher" | "lower"
    get: Getter
    batch_only: bool = False
    # Whether a run that hit its time limit makes this figure partial: not for what was
    # measured before the limit applies (enqueue, submit) nor for peak memory.
    limited: bool = True
    # The peers' cell, where taskyard's differs (its scheduler in a worker): the peers'
    # figures of their own deployment, side by side.
    peer_cell: str | None = None
    # The workload of the runs it is read from, where it differs from ``workload``
    # (the report's section): the database work per job comes from the DB runs.
    runs: str | None = None


COUNTS = (("round_trips", "round trips"), ("statements", "statements"),
          ("transactions", "transactions"))


def db_metrics() -> list[Metric]:
    """The database work per job (bench.dbwork): a section per workload shape."""
    found = [Metric(f"db_w1_{key}_{field}", "DB-W1", "W1", f"{what}: {name}", "per job",
                    "lower", _part(key, field), batch_only, limited=False, runs="DB")
             for key, what, batch_only in (
                 ("enqueue_call", "enqueue, one call per job", False),
                 ("enqueue_batch", "enqueue, batch API", True),
                 ("complete", "completion, 2 worker processes", False))
             for field, name in COUNTS]
    found += [Metric(f"db_w2_{field}", "DB-W2", "W2", f"one job at a time: {name}",
                     "per job", "lower", _part(None, field), limited=False, runs="DB")
              for field, name in COUNTS]
    found.append(Metric("db_w2_path", "DB-W2", "W2", "round trips between the enqueue "
                        "call and the handler's start", "per job", "lower",
                        _part(None, "latency_round_trips"), limited=False, runs="DB"))
    return found


def metrics(profile: dict[str, Any]) -> list[Metric]:
    found = [
        Metric("w1_enqueue_call", "W1", "K=1", "enqueue, one call per job", "jobs/s", "higher",
               _get("enqueue_per_s"), limited=False),
        Metric("w1_enqueue_batch", "W1", "K=2", "enqueue, batch API", "jobs/s", "higher",
               _get("enqueue_per_s"), True, limited=False),
        Metric("w1_complete_1", "W1", "K=1", "completion, 1 worker process", "jobs/s",
               "higher", _first("complete_per_s", "complete_per_s_partial")),
        Metric("w1_complete_2", "W1", "K=2", "completion, 2 worker processes", "jobs/s",
               "higher", _first("complete_per_s", "complete_per_s_partial")),
        *([Metric("w1_complete_2_lean", "W1", LEAN, f"completion, 2 worker processes{AS_HUEY} "
                  "(peers: as above)", "jobs/s", "higher",
                  _first("complete_per_s", "complete_per_s_partial"), peer_cell="K=2")]
          if profile.get("w1_lean") else []),
        Metric("w2_p50", "W2", "latency", "submit -> handler start, p50", "ms", "lower",
               _get("p50_ms")),
        Metric("w2_p99", "W2", "latency", "submit -> handler start, p99", "ms", "lower",
               _get("p99_ms")),
    ]
    if profile.get("http"):
        found += [
            Metric("http_submit", "HTTP", "api", "POST /api/v1/jobs, "
                   f"{profile['http'][1]} keep-alive connections", "jobs/s", "higher",
                   _get("submit_per_s"), limited=False),
            Metric("http_submit_p50", "HTTP", "api", "POST /api/v1/jobs under that load, p50",
                   "ms", "lower", _get("submit_p50_ms"), limited=False),
            Metric("http_submit_p99", "HTTP", "api", "POST /api/v1/jobs under that load, p99",
                   "ms", "lower", _get("submit_p99_ms"), limited=False),
            Metric("http_errors", "HTTP", "api", "POST /api/v1/jobs not answered 201", "count",
                   "lower", _get("submit_errors"), limited=False),
            Metric("http_batch", "HTTP", "api", "POST /api/v1/jobs/batch, 1,000 jobs each",
                   "jobs/s", "higher", _get("batch_per_s"), limited=False),
            Metric("http_p50", "HTTP", "api", "HTTP submit -> handler start, p50", "ms",
                   "lower", _get("p50_ms")),
            Metric("http_p99", "HTTP", "api", "HTTP submit -> handler start, p99", "ms",
                   "lower", _get("p99_ms")),
        ]
    if profile.get("db"):
        found += db_metrics()
    sizes = sorted(set(profile["w3_sizes"]) | set(profile["w3_once"]))
    found += [Metric(f"w3_{n}", "W3", str(n), f"cycle with {n:,} pending, 50 free slots",
                     "ms", "lower", _get("cycle_ms_median")) for n in sizes]
    graphs = sorted(set(profile["w4_sizes"]) | set(profile["w4_once"]))
    cells = [(shape, n) for shape, n in profile.get("w4_small", ())]  # Airflow's sizes
    cells += [(shape, n) for n in graphs for shape in profile["w4_shapes"]]
    for shape, n in cells:
        cell = f"{shape} {n}"
        found += [
            Metric(f"w4_submit_{shape}_{n}", "W4", cell, f"{cell}: submit", "s", "lower",
                   _get("submit_s"), limited=False),
            Metric(f"w4_e2e_{shape}_{n}", "W4", cell, f"{cell}: end to end", "s", "lower",
                   _get("end_to_end_s")),
            Metric(f"w4_p50_{shape}_{n}", "W4", cell, f"{cell}: hand-off p50", "ms",
                   "lower", _get("handoff_ms_p50")),
            Metric(f"w4_p99_{shape}_{n}", "W4", cell, f"{cell}: hand-off p99", "ms",
                   "lower", _get("handoff_ms_p99")),
        ]
    found.append(Metric("w5_w1", "W5", "K=2", "W1, 2 workers: scheduler + workers", "MiB",
                        "lower", _rss("scheduler", "workers"), limited=False))
    if profile.get("w1_lean"):
        found.append(Metric("w5_w1_lean", "W5", LEAN, f"W1, 2 workers{AS_HUEY}: all daemons "
                            "(peers: as above)", "MiB", "lower",
                            _rss("scheduler", "workers"), limited=False, peer_cell="K=2"))
    found += [Metric(f"w5_w3_{n}", "W5", str(n),
                     f"W3 {n:,} pending: scheduler (peers: the dequeuing process)", "MiB",
                     "lower", _rss("scheduler", "dequeuer"), limited=False) for n in sizes]
    for shape, n in cells:
        cell = f"{shape} {n}"
        found += [
            Metric(f"w5_w4s_{shape}_{n}", "W5", cell, f"W4 {cell}: scheduler", "MiB",
                   "lower", _rss("scheduler"), limited=False),
            Metric(f"w5_w4w_{shape}_{n}", "W5", cell, f"W4 {cell}: workers", "MiB",
                   "lower", _rss("workers"), limited=False),
        ]
    return found
