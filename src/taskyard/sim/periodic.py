"""What the scheduler daemon does on a timer, and what the report samples on one:
anti-starvation aging (the rule of :func:`taskyard.core.recurrence.effective_priority`,
applied as ``store.age_pending`` applies it) and the queue-length samples."""

from __future__ import annotations

import heapq
from collections import deque

from taskyard.core.recurrence import effective_priority
from taskyard.core.states import JobState
from taskyard.sim.context import SimContext
from taskyard.sim.model import SimJob

AGING_BATCH = 1000
"""Oldest pending jobs one aging step looks at (as ``store.age_pending``'s limit)."""
SAMPLES = 500
"""Queue-length samples per run, about: the interval doubles past twice as many."""


class Periodic:
    """Aging and sampling of one simulation."""

    def __init__(self, sim: SimContext) -> None:
        self.sim = sim
        scenario = sim.scenario
        self.aging = scenario.scheduler.aging
        self._in_order: deque[SimJob] = deque()
        """Pending jobs (and some that left pending since) in id order: most jobs become
        pending in the order they were created, and are appended here."""
        self._out_of_order: list[tuple[int, SimJob]] = []
        """The others (retried, requeued, released by a parent), by id."""
        self._last = 0
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
        if self.aging > 0 and not job.listed:
            job.listed = True
            if job.id > self._last:
                self._in_order.append(job)
                self._last = job.id
            else:
                heapq.heappush(self._out_of_order, (job.id, job))

    def _oldest(self) -> list[SimJob]:
        """The oldest pending jobs (lowest ids), at most :data:`AGING_BATCH`; those met
        on the way that are not pending any more are dropped."""
        in_order, out_of_order = self._in_order, self._out_of_order
        batch: list[SimJob] = []
        while len(batch) < AGING_BATCH and (in_order or out_of_order):
            if out_of_order and (not in_order or out_of_order[0][0] < in_order[0].id):
                job = heapq.heappop(out_of_order)[1]
            else:
                job = in_order.popleft()
            if job.state is JobState.PENDING:
                batch.append(job)
            else:
                job.listed = False
        # They are older than any left: back in front, still in id order.
        in_order.extendleft(reversed(batch))
        return batch

    def _age(self, _: object) -> None:
        sim = self.sim
        minutes = self.aging / 60.0
        for job in self._oldest():
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
