"""The suite's time budget: whether a run still fits in what is left of it.

A run's own time limit (``Run.soft``) is a poor guess of its wall time: a 100,000-job
graph's limit counts 20 s for its submit, and a cell that timed out still spent its
start-up and tear-down. Once a cell has run for the same system in an earlier
repetition, the longest of those runs is the estimate; before that, the limit is."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Protocol


class _Run(Protocol):
    system: str
    workload: str
    cell: str
    soft: float
    result: dict[str, Any]


def expected_seconds(run: _Run, done: Iterable[_Run]) -> float:
    """The wall time ``run`` is expected to take, from the same cell's earlier runs."""
    walls = [float(r.result["wall_s"]) for r in done
             if (r.system, r.workload, r.cell) == (run.system, run.workload, run.cell)
             and r.result.get("status") not in (None, "skipped", "cannot")
             and r.result.get("wall_s")]
    return max(walls) if walls else run.soft


def fits(run: _Run, done: Iterable[_Run], elapsed: float, budget: float | None) -> bool:
    """Does ``run`` fit in the ``budget`` (seconds; None: no budget) after ``elapsed``?"""
    return budget is None or elapsed + expected_seconds(run, done) <= budget
