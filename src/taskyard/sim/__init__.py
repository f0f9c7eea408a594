"""The simulator: taskyard's scheduling core in virtual time.

``taskyard simulate SCENARIO.yaml`` answers "what happens to my queues with 40 workers
instead of 60, or with this lock added?" by running the same :mod:`taskyard.core`
functions as the daemons over workers, arrivals and durations described in a scenario
(see docs/simulator.md). Internal API: the CLI is the promise.
"""

from __future__ import annotations

import gc
import time
from dataclasses import dataclass
from typing import Any

from taskyard.sim.engine import Simulation, Trace
from taskyard.sim.fields import ScenarioError
from taskyard.sim.metrics import Metrics
from taskyard.sim.report import build_report
from taskyard.sim.scenario import Scenario, load_scenario, parse_scenario


@dataclass
class SimResult:
    """One run: its report (plain JSON values), its metrics, and its trace if asked."""

    report: dict[str, Any]
    metrics: Metrics
    simulation: Simulation

    @property
    def trace(self) -> Trace | None:
        return self.simulation.trace


def simulate(scenario: Scenario, *, seed: int | None = None, trace: bool = False,
             keep_jobs: bool = False) -> SimResult:
    """Run ``scenario`` (with ``seed``, else the scenario's). ``trace``: record every
    event (for tests: the same seed gives the same trace); ``keep_jobs``: keep ended
    jobs in ``simulation.jobs``."""
    started = time.perf_counter()
    sim = Simulation(scenario, seed=seed, trace=trace, keep_jobs=keep_jobs)
    # Millions of short-lived objects, few cycles among them: the cyclic collector would
    # walk the live jobs again and again (a quarter of the run's time).
    collecting = gc.isenabled()
    gc.disable()
    try:
        metrics = sim.run()
    finally:
        if collecting:
            gc.enable()
    used = scenario.seed if seed is None else seed
    return SimResult(build_report(metrics, seed=used,
                                  wall_seconds=time.perf_counter() - started), metrics, sim)


__all__ = ["ScenarioError", "SimResult", "load_scenario", "parse_scenario", "simulate"]
