"""Running small scenarios in tests and reading their traces."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

from taskyard.sim import SimResult, parse_scenario, simulate
from taskyard.sim.model import SimJob


def run(doc: dict[str, Any], *, base: Path | None = None, seed: int | None = None
        ) -> SimResult:
    """Simulate a scenario document, keeping its trace and every job."""
    return simulate(parse_scenario(doc, base=base), seed=seed, trace=True, keep_jobs=True)


def events(result: SimResult, what: str) -> list[tuple[float, int, int, int]]:
    """(time, job, worker, attempt) of the trace's events ``what``."""
    assert result.trace is not None
    return [(t, job, worker, attempt) for t, kind, job, worker, attempt in result.trace
            if kind == what]


def starts(result: SimResult) -> dict[int, list[float]]:
    """Per job, the times its attempts started."""
    out: dict[int, list[float]] = defaultdict(list)
    for t, job, _, _ in events(result, "start"):
        out[job].append(t)
    return dict(out)


def start_order(result: SimResult) -> list[int]:
    return [job for _, job, _, _ in events(result, "start")]


def jobs(result: SimResult) -> dict[int, SimJob]:
    found = result.simulation.jobs
    assert found is not None
    return found


def worker_names(result: SimResult) -> dict[int, str]:
    return {w.id: w.name for w in result.simulation.workers.values()}
