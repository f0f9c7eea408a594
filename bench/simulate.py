"""Simulator speed: a million jobs on 500 workers (target: under a minute on 2 cores).

Usage: python -m bench.simulate [--scenario FILE] [--scale K] [--profile FILE] [--json]

Runs examples/simulate/million.yaml (about 14 simulated hours of a farm of 500 workers:
two pools, three task types with retries, locks and priorities, a burst that builds a
backlog, crashing workers) through ``taskyard.sim.simulate`` and prints the wall time,
the jobs per second and the peak memory. ``--scale K`` divides the arrival counts, the
burst and ``until`` by K (a quicker look); ``--profile FILE`` writes cProfile stats.
"""

from __future__ import annotations

import argparse
import cProfile
import dataclasses
import json
import resource
import sys
import time
from pathlib import Path
from typing import Any

from taskyard.sim import load_scenario, simulate
from taskyard.sim.scenario import Scenario

SCENARIO = Path(__file__).resolve().parent.parent / "examples" / "simulate" / "million.yaml"
TARGET_SECONDS = 60.0


def scaled(scenario: Scenario, k: int) -> Scenario:
    """Arrival counts, bursts and ``until`` divided by ``k`` (rates and durations kept)."""
    if k == 1:
        return scenario
    arrivals = tuple(dataclasses.replace(
        a, count=None if a.count is None else a.count // k,
        burst=a.burst // k if a.kind == "at" else a.burst,
        at=tuple(t / k for t in a.at)) for a in scenario.arrivals)
    until = None if scenario.until is None else scenario.until / k
    return dataclasses.replace(scenario, arrivals=arrivals, until=until)


def run(path: Path, k: int, profile: str | None) -> dict[str, Any]:
    scenario = scaled(load_scenario(path), k)
    workers = sum(g.count for g in scenario.workers)
    started, cpu = time.perf_counter(), time.process_time()
    if profile:
        profiler = cProfile.Profile()
        result = profiler.runcall(simulate, scenario)
        profiler.dump_stats(profile)
    else:
        result = simulate(scenario)
    seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
    report = result.report
    jobs = report["jobs"]["created"]
    return {
        "scenario": str(path), "scale": k, "workers": workers, "jobs": jobs,
        "ended": report["jobs"]["ended"], "unfinished": report["jobs"]["unfinished"],
        "simulated_hours": round(report["simulated_seconds"] / 3600, 2),
        "wall_seconds": round(seconds, 2), "cpu_seconds": round(cpu, 2),
        "jobs_per_second": round(jobs / seconds),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
        "utilization": {p["pool"]: p["utilization"] for p in report["pools"]},
        "max_pending": report["queue"]["max_pending"],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenario", type=Path, default=SCENARIO)
    parser.add_argument("--scale", type=int, default=1)
    parser.add_argument("--profile", metavar="FILE")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    found = run(args.scenario, args.scale, args.profile)
    if args.json:
        print(json.dumps(found, indent=2))
    else:
        for key, value in found.items():
            print(f"{key:16} {value}")
        if args.scale == 1 and found["workers"] >= 500 and found["jobs"] >= 1_000_000:
            verdict = "met" if found["wall_seconds"] < TARGET_SECONDS else "NOT met"
            print(f"target           {verdict} (under {TARGET_SECONDS:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
