"""What the scheduler daemon does on a timer, and what the report samples on one:
anti-starvation aging (the rule of :func:`taskyard.core.recurrence.effective_priority`,
applied as ``store.age_pending`` applies it) and the queue-length samples."""

from __future__ import annotations

import heapq
from typing import TYPE_CHECKING

from taskyard.core.recurrence import effective_priority
from taskyard.core.states import JobState
from taskyard.sim.model import SimJob

if TYPE_CHECKING:
    from taskyard.sim.engine import Simulation

AGING_BATCH = 1000
"""Oldest pending jobs one aging step looks at (as ``store.age_pending``'s limit)."""
SAMPLES = 500
"""Queue-length samples per run, about: the interval doubles past twice as many."""


class Periodic:
    """Aging and sampling of one simulation."""

    def __init__(self, sim: Simulation) -> None:
        self.sim = sim
        scenario = sim.scenario
        self.aging = scenario.scheduler.aging
        self._listed: set[int] = set()
        self._oldest: list[int] = []
        """Ids of pending jobs (and of some that left pending since), smallest first."""
        horizon = scenario.until or scenario.stop
        self.every = scenario.sample or (horizon / SAMPLES if horizon else 1.0)

    def start(self) -> None:
        sim = self.sim
        sim.later(0.0, self._sample, None, background=True)
        if self.aging > 0:
            sim.later(self._aging_step(), self._age, None, background=True)

    def _aging_step(self) -> float:
        # The daemon ages at most every tenth of a period, and every minute at most.
        return min(60.0, self.aging / 10)

    def listed(self, job: SimJob) -> None:
        """The job became pending: it may age."""
        if self.aging > 0 and job.id not in self._listed:
            self._listed.add(job.id)
            heapq.heappush(self._oldest, job.id)

    def _age(self, _: object) -> None:
        sim = self.sim
        live, oldest, listed = sim.live, self._oldest, self._listed
        batch: list[SimJob] = []
        while oldest and len(batch) < AGING_BATCH:
            job_id = heapq.heappop(oldest)
            job = live.get(job_id)
            if job is None or job.state is not JobState.PENDING:
                listed.discard(job_id)
                continue
            batch.append(job)
        minutes = self.aging / 60.0
        for job in batch:
            heapq.heappush(oldest, job.id)
            since = max(job.run_after or job.created, job.created)
            target = effective_priority(job.base_priority, sim.now - since, minutes)
            if target > job.priority:
                job.priority = job.cand.priority = target
                if job.ready is not None and (job.run_after or 0.0) <= sim.now:
                    sim.requeue(job)  # due: it takes its new place in line
        sim.later(sim.now + self._aging_step(), self._age, None, background=True)

    def _sample(self, _: object) -> None:
        sim = self.sim
        samples = sim.metrics.sample(sim.now)
        if samples > 4 * SAMPLES:
            sim.metrics.thin_samples()
            self.every *= 2
        sim.later(sim.now + self.every, self._sample, None, background=True)
