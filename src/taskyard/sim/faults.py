"""Workers joining, crashing, being expelled and restarting; what happens to their jobs.

A crash kills the worker's handlers at once, but the scheduler learns of it only when
the worker's lease expires (``lease`` seconds later; 0 as under ``taskyard up``, which
sees its worker die). Until then the worker still counts: its jobs keep their capacity
and locks, and jobs placed on it meanwhile wait there. At expiry its jobs are suspended
and requeued by the rules of :mod:`taskyard.core.lifecycle` (the worker-loss budget);
a running job past its deadline is failed by the scheduler first, as the real cycle does.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from taskyard.core.lifecycle import after_worker_loss, losses_after_suspend
from taskyard.core.states import AttemptState, JobState
from taskyard.sim.context import SimContext
from taskyard.sim.model import SimJob, SimWorker
from taskyard.sim.windows import lend_windows

if TYPE_CHECKING:
    from taskyard.sim.specs import WorkerGroup

_RUNNING = JobState.RUNNING


class Faults:
    """The workers' lives in one simulation."""

    def __init__(self, sim: SimContext) -> None:
        self.sim = sim
        self.suspended: list[SimJob] = []
        """Jobs whose worker was expelled at this instant: requeued before placement."""
        self._next_worker = 0
        self._rng = sim.stream("crashes")

    def start_workers(self) -> None:
        """Every group's workers join at time 0, in the scenario's order."""
        for group in self.sim.scenario.workers:
            for n in range(group.count):
                self._join(group, f"{group.name}-{n + 1}")

    def _join(self, group: WorkerGroup, name: str) -> None:
        sim = self.sim
        self._next_worker += 1
        worker = SimWorker(self._next_worker, name, group, sim.now)
        sim.workers[worker.id] = worker
        sim.planner.add_worker(worker.slot)
        lend_windows(sim.planner, sim.workers)
        sim.metrics.joined(worker)
        sim.note("join", 0, worker.id)
        if group.crash_every is not None:
            when = sim.now + self._rng.expovariate(1.0 / group.crash_every)
            sim.later(when, self._crash, worker, background=True)
        for when in group.crash_at:
            if when > sim.now:
                sim.later(when, self._crash, worker, background=True)

    def _crash(self, worker: SimWorker) -> None:
        if not worker.alive:
            return  # crashed already (at a given instant and by chance)
        sim, now, group = self.sim, self.sim.now, worker.group
        worker.account(now)
        worker.alive = False
        worker.left = now
        sim.metrics.running -= worker.executing
        sim.note("crash", 0, worker.id)
        expel_at = now + group.lease
        grace = sim.scenario.scheduler.timeout_grace
        for job in worker.jobs.values():
            if job.state is _RUNNING and job.timeout is not None:
                overdue = job.attempt_started + job.timeout + grace
                if overdue < expel_at:
                    sim.later(max(overdue, now), self._time_out, (job, job.attempt))
        worker.queue.clear()
        worker.executing = worker.used = 0
        sim.later(expel_at, self._expel, worker)
        sim.later(now + group.restart, self._restart, worker)

    def _time_out(self, overdue: tuple[SimJob, int]) -> None:
        """The scheduler fails an attempt past its deadline whose worker is gone."""
        job, attempt = overdue
        worker = job.worker
        if job.attempt != attempt or job.state is not _RUNNING or worker is None:
            return
        self.sim.leave_worker(job, worker)
        self.sim.note("timeout", job.id, worker.id, attempt)
        self.sim.end_attempt(job, AttemptState.FAILED)

    def _expel(self, worker: SimWorker) -> None:
        """The lease expired: the worker leaves, its jobs are suspended."""
        sim = self.sim
        for job in list(worker.jobs.values()):
            was_running = job.state is _RUNNING
            sim.leave_worker(job, worker)
            job.losses = losses_after_suspend(job.losses, was_running)
            job.state = JobState.SUSPENDED
            sim.note("lost", job.id, worker.id, job.attempt)
            self.suspended.append(job)
        sim.planner.remove_worker(worker.id)
        sim.note("expel", 0, worker.id)

    def _restart(self, worker: SimWorker) -> None:
        self._join(worker.group, worker.name)

    def requeue(self) -> None:
        """Suspended jobs go back to pending, or to error once their losses exceed
        their type's ``max_worker_losses``."""
        sim = self.sim
        jobs, self.suspended = self.suspended, []
        for job in jobs:
            if after_worker_loss(job.losses, job.max_losses) is JobState.PENDING:
                sim.note("requeue", job.id)
                sim.release(job)
            else:
                sim.finish(job, JobState.ERROR)
