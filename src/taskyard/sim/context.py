"""What the simulation's helpers (arrivals, dependents, faults, periodic work) may use of
the run: a narrow view of :class:`~taskyard.sim.engine.Simulation`, which they never
import (the engine composes them; they reach each other only through what it hands
them)."""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any, Protocol

from taskyard.core.locks import LockClaim
from taskyard.core.placement import Planner
from taskyard.core.states import AttemptState, JobState
from taskyard.sim.metrics import Metrics
from taskyard.sim.model import SimJob, SimWorker
from taskyard.sim.scenario import Scenario
from taskyard.sim.specs import TypeSpec


class SimContext(Protocol):
    """The run as its helpers see it: virtual time, the event queue, the jobs' lives."""

    scenario: Scenario
    now: float
    """Virtual time (seconds from the start)."""
    metrics: Metrics
    planner: Planner
    workers: dict[int, SimWorker]
    ended: list[SimJob]
    """Jobs that ended at this instant (their dependents are resolved before the cycle)."""

    def stream(self, purpose: str) -> random.Random:
        """The random stream of ``purpose`` for this run's seed."""

    def later(self, when: float, handler: Callable[[Any], None], arg: Any = None, *,
              background: bool = False) -> None:
        """Call ``handler(arg)`` at virtual time ``when``."""

    def note(self, what: str, job: int, worker: int = 0, attempt: int = 0) -> None:
        """Record an event in the trace, if one is kept."""

    def new_job(self, spec: TypeSpec, args: dict[str, Any], priority: int,
                pools: tuple[str, ...] | None = None, *, extra_locks: tuple[str, ...] = (),
                retries: int | None = None, timeout: float | None = None,
                claims: tuple[LockClaim, ...] | None = None,
                rng: random.Random | None = None) -> SimJob:
        """A job, created now (waiting until released)."""

    def release(self, job: SimJob, run_after: float | None = None) -> None:
        """The job becomes pending: due now, or at ``run_after``."""

    def requeue(self, job: SimJob) -> None:
        """The job's priority changed: a new place in its stream."""

    def finish(self, job: SimJob, state: JobState) -> None:
        """The job ended in ``state`` (terminal)."""

    def leave_worker(self, job: SimJob, worker: SimWorker) -> None:
        """The job no longer occupies its worker."""

    def end_attempt(self, job: SimJob, outcome: AttemptState) -> None:
        """The job's attempt ended in ``outcome``: retried, or ended."""
