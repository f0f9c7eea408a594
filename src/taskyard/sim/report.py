"""The report of a simulation: a JSON-ready dict, and the same as tables for people."""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from taskyard.sim.metrics import Metrics

PERCENTILES = (50, 95, 99)


def percentile(values: Sequence[float], p: float) -> float:
    """Nearest-rank percentile of sorted ``values`` (0 for none)."""
    if not values:
        return 0.0
    return values[max(0, math.ceil(p / 100 * len(values)) - 1)]


def build_report(metrics: Metrics, *, seed: int, wall_seconds: float) -> dict[str, Any]:
    """Everything the run measured, in plain JSON values (seconds are numbers)."""
    end = metrics.end
    hours = end / 3600 if end > 0 else 0.0
    done = sum(metrics.ended.values())
    return {
        "scenario": metrics.scenario.name,
        "seed": seed,
        "simulated_seconds": round(end, 6),
        "wall_seconds": round(wall_seconds, 3),
        "jobs": {
            "created": metrics.created,
            "ended": {str(s): n for s, n in sorted(metrics.ended.items())},
            "unfinished": {str(s): n for s, n in sorted(metrics.unfinished.items())},
        },
        "throughput": {
            "jobs_per_hour": round(done / hours, 3) if hours else None,
            "by_type": {name: _type_throughput(metrics, name, hours) for name in metrics.types
                        if metrics.created_by_type[name]},
        },
        "pools": _pools(metrics),
        "waits": _waits(metrics),
        "starvation": _starvation(metrics),
        "locks": _locks(metrics),
        "rate_limits": _rate_limits(metrics),
        "graphs": _graphs(metrics),
        "awaiting": _awaiting(metrics),
        "queue": _queue(metrics),
    }


def _awaiting(metrics: Metrics) -> dict[str, Any]:
    """Approvals, waits and sleeps: per kind, how many ended and how long they awaited;
    ``slots_mean`` / ``slots_max``: the worker slots handlers polling for them instead
    would have held, on average and at most."""
    found = metrics.awaiting
    if not found:
        return {"jobs": 0}
    return {**found, "seconds": round(found["seconds"], 6),
            "slots_mean": round(found["slots_mean"], 3),
            "by_kind": {kind: {"jobs": k["jobs"], "seconds": round(k["seconds"], 6),
                               "mean": round(k["mean"], 6)}
                        for kind, k in found["by_kind"].items()}}


def _type_throughput(metrics: Metrics, name: str, hours: float) -> dict[str, Any]:
    ended = {str(state): n for (type_, state), n in metrics.ended_by_type.items()
             if type_ == name}
    total = sum(ended.values())
    return {"created": metrics.created_by_type[name], "ended": dict(sorted(ended.items())),
            "per_hour": round(total / hours, 3) if hours else None}


def _pools(metrics: Metrics) -> list[dict[str, Any]]:
    busy: dict[str, float] = defaultdict(float)
    offered: dict[str, float] = defaultdict(float)
    names: dict[str, set[str]] = defaultdict(set)
    capacity: dict[str, dict[str, int]] = defaultdict(dict)
    for worker in metrics.workers:
        alive = (worker.left if worker.left is not None else metrics.end) - worker.joined
        for pool in dict.fromkeys(worker.slot.pools):
            busy[pool] += worker.busy
            offered[pool] += worker.capacity * alive
            names[pool].add(worker.name)
            capacity[pool][worker.name] = worker.capacity
    return [{"pool": pool, "workers": len(names[pool]),
             "capacity": sum(capacity[pool].values()),
             "utilization": round(busy[pool] / offered[pool], 4) if offered[pool] else None}
            for pool in sorted(names)]


def _waits(metrics: Metrics) -> list[dict[str, Any]]:
    rows = []
    for (name, priority), values in sorted(metrics.waits.items(),
                                           key=lambda item: (item[0][0], -item[0][1])):
        ordered = sorted(values)
        row: dict[str, Any] = {"type": name, "priority": priority, "jobs": len(ordered),
                               "mean": round(sum(ordered) / len(ordered), 6)}
        for p in PERCENTILES:
            row[f"p{p}"] = round(percentile(ordered, p), 6)
        row["max"] = round(ordered[-1], 6)
        rows.append(row)
    return rows


def _starvation(metrics: Metrics) -> dict[str, Any]:
    lowest = metrics.lowest_priority
    started = [max(values) for (_, priority), values in metrics.waits.items()
               if priority == lowest and values]
    waiting = metrics.starving
    return {
        "priority": lowest,
        "longest_wait": round(max(started), 6) if started else None,
        "still_waiting": len(waiting),
        "longest_still_waiting": round(waiting[0][0], 6) if waiting else None,
    }


def _locks(metrics: Metrics, top: int = 20) -> list[dict[str, Any]]:
    ranked = sorted(metrics.locks.items(), key=lambda item: (-item[1].seconds, item[0]))
    return [{"lock": key, "jobs": s.jobs, "skips": s.skips, "seconds": round(s.seconds, 6),
             "mean": round(s.seconds / s.jobs, 6) if s.jobs else 0.0}
            for key, s in ranked[:top]]


def _rate_limits(metrics: Metrics, top: int = 20) -> list[dict[str, Any]]:
    ranked = sorted(metrics.rates.items(), key=lambda item: (-item[1].seconds, item[0]))
    return [{"type": type_, "key": key, "limit": s.limit.encode(), "jobs": s.jobs,
             "cycles": s.cycles, "skips": s.skips, "seconds": round(s.seconds, 6),
             "mean": round(s.seconds / s.jobs, 6) if s.jobs else 0.0}
            for (type_, key), s in ranked[:top]]


def _graphs(metrics: Metrics) -> dict[str, Any]:
    spans = sorted(span for span, _ in metrics.graphs)
    states: dict[str, int] = defaultdict(int)
    for _, state in metrics.graphs:
        states[state] += 1
    return {"submitted": metrics.graphs_submitted, "ended": len(spans),
            "states": dict(sorted(states.items())),
            "makespan_p50": round(percentile(spans, 50), 6) if spans else None,
            "makespan_p95": round(percentile(spans, 95), 6) if spans else None,
            "makespan_max": round(spans[-1], 6) if spans else None}


def _queue(metrics: Metrics) -> dict[str, Any]:
    samples = metrics.samples
    peak = max(samples, key=lambda s: (s[1], -s[0])) if samples else None
    return {
        "max_pending": peak[1] if peak else 0,
        "max_pending_at": round(peak[0], 6) if peak else None,
        "mean_pending": round(sum(s[1] for s in samples) / len(samples), 3) if samples else 0,
        "types": metrics.types,
        "samples": [[round(t, 6), pending, running, list(by_type)]
                    for t, pending, running, by_type in samples],
    }


@dataclass(frozen=True, slots=True)
class Table:
    title: str
    headers: tuple[str, ...]
    rows: list[tuple[Any, ...]]


def human(seconds: float | None) -> str:
    """``850ms``, ``42.0s``, ``3m05s``, ``2h03m``, ``1d02h``."""
    if seconds is None:
        return "-"
    if seconds < 1:
        return f"{seconds * 1000:.0f}ms"
    if seconds < 60:
        return f"{seconds:.1f}s"
    minutes, secs = divmod(round(seconds), 60)
    if minutes < 60:
        return f"{minutes}m{secs:02d}s"
    hours, minutes = divmod(minutes, 60)
    if hours < 24:
        return f"{hours}h{minutes:02d}m"
    days, hours = divmod(hours, 24)
    return f"{days}d{hours:02d}h"


def tables(report: dict[str, Any]) -> list[Table]:
    """The report as aligned tables (the CLI's default output)."""
    jobs, queue, starve = report["jobs"], report["queue"], report["starvation"]
    summary = [
        ("scenario", f"{report['scenario']} (seed {report['seed']})"),
        ("simulated", f"{human(report['simulated_seconds'])} in "
                      f"{report['wall_seconds']:.2f}s of wall time"),
        ("jobs", f"{jobs['created']} created; ended: "
                 + (", ".join(f"{n} {s}" for s, n in jobs["ended"].items()) or "none")),
        ("throughput", "-" if report["throughput"]["jobs_per_hour"] is None
                       else f"{report['throughput']['jobs_per_hour']} jobs/hour"),
        ("queue", f"at most {queue['max_pending']} pending "
                  f"(at {human(queue['max_pending_at'])}), {queue['mean_pending']} on average"),
        ("starvation", ("no job waited" if starve["priority"] is None else
                        f"priority {starve['priority']}: longest wait "
                        f"{human(starve['longest_wait'])}")
                       + (f"; {starve['still_waiting']} never started (longest "
                          f"{human(starve['longest_still_waiting'])})"
                          if starve["still_waiting"] else "")),
    ]
    if jobs["unfinished"]:
        summary.append(("unfinished", ", ".join(f"{n} {s}"
                                                for s, n in jobs["unfinished"].items())))
    graphs = report["graphs"]
    if graphs["submitted"]:
        summary.append(("graphs", f"{graphs['submitted']} submitted, "
                        + ", ".join(f"{n} {s}" for s, n in graphs["states"].items())
                        + f"; makespan p50 {human(graphs['makespan_p50'])}, "
                          f"p95 {human(graphs['makespan_p95'])}"))
    out = [Table("summary", ("what", "value"), summary),
           Table("pools", ("pool", "workers", "capacity", "utilization"),
                 [(p["pool"], p["workers"], p["capacity"],
                   "-" if p["utilization"] is None else f"{p['utilization']:.1%}")
                  for p in report["pools"]]),
           Table("waits", ("type", "priority", "jobs", "p50", "p95", "p99", "max"),
                 [(w["type"], w["priority"], w["jobs"], human(w["p50"]), human(w["p95"]),
                   human(w["p99"]), human(w["max"])) for w in report["waits"]])]
    if report["locks"]:
        out.append(Table("lock contention", ("lock", "jobs held back", "skips",
                                             "waited", "mean"),
                         [(lk["lock"], lk["jobs"], lk["skips"], human(lk["seconds"]),
                           human(lk["mean"])) for lk in report["locks"][:10]]))
    awaiting = report["awaiting"]
    if awaiting["jobs"] or awaiting.get("still_awaiting"):
        rows: list[tuple[Any, ...]] = [
            (kind, k["jobs"], human(k["seconds"]), human(k["mean"]), "-", "-")
            for kind, k in awaiting["by_kind"].items()]
        rows.append(("all", awaiting["jobs"], human(awaiting["seconds"]), "-",
                     f"{awaiting['slots_mean']:g}", awaiting["slots_max"]))
        out.append(Table("awaiting (no worker slot held)",
                         ("kind", "jobs", "awaited", "mean", "slots saved", "at most"),
                         rows))
    if report["rate_limits"]:
        out.append(Table("rate limits", ("type", "key", "limit", "jobs held back", "cycles",
                                         "skips", "waited", "mean"),
                         [(r["type"], r["key"] or "-", r["limit"], r["jobs"], r["cycles"],
                           r["skips"], human(r["seconds"]), human(r["mean"]))
                          for r in report["rate_limits"][:10]]))
    return out
