"""Approvals, waits and sleeps in the simulator: awaiting without a worker, ended by a
decision or a signal at a drawn time (the scenario's ``waits``, see wait_spec.py), or by
their timeout (``core/waits.py``); a sleep lasts its duration. The metrics answer "how
many worker slots do my approvals save?": the awaiting jobs over time (a handler that
polled for the decision would hold one slot each, all that time).
"""

from __future__ import annotations

from random import Random
from typing import TYPE_CHECKING, Any

from taskyard.core.graph import TaskNode
from taskyard.core.retry import RetryPolicy
from taskyard.core.states import JobState
from taskyard.core.waits import Kind, on_timeout
from taskyard.sim.specs import TypeSpec
from taskyard.sim.wait_spec import behaviour_of

if TYPE_CHECKING:
    from taskyard.sim.context import SimContext
    from taskyard.sim.model import SimJob

WAIT_TYPES = {kind: TypeSpec(f"({kind})", pools=(), cost=0, retry=RetryPolicy())
              for kind in (Kind.APPROVAL, Kind.WAIT, Kind.SLEEP)}
"""What stands for an approval's, a wait's and a sleep's task type in the simulator (the
names, in brackets, are no task type's: reports list them apart)."""


class SimWaits:
    """The awaiting jobs of one simulation, and how long they awaited."""

    def __init__(self, sim: SimContext) -> None:
        self.sim = sim
        self.rng = sim.stream("waits")
        self._nodes: dict[int, TaskNode] = {}
        self.awaiting = 0
        self.peak = 0
        self.area = 0.0
        """Awaiting jobs integrated over time (seconds): slot-seconds a polling handler
        would have held."""
        self._since = 0.0
        self.ended: dict[str, list[float]] = {}
        """Per kind, how long each ended one awaited."""

    def new(self, node: TaskNode, rng: Random) -> SimJob:
        """The job of an approval, a wait or a sleep of a graph (still waiting)."""
        job = self.sim.new_job(WAIT_TYPES[Kind(node.kind)], {}, node.priority, rng=rng)
        self._nodes[job.id] = node
        return job

    def ready(self, job: SimJob) -> None:
        """Its dependencies are met: pending for work, awaiting for an approval, a wait
        or a sleep (ended at its drawn decision, or its timeout)."""
        node = self._nodes.get(job.id)
        if node is None:
            self.sim.release(job)
            return
        sim = self.sim
        job.state, job.unmet, job.ready = JobState.AWAITING, 0, sim.now
        self._count(+1)
        sim.note("await", job.id)
        if node.kind == Kind.SLEEP:
            assert node.timeout is not None
            sim.later(sim.now + node.timeout, self._end, (job, JobState.SUCCEEDED))
            return
        behaviour = behaviour_of(node, sim.scenario.waits)
        assert behaviour is not None  # checked with the scenario
        after = behaviour.after.sample(self.rng, {})
        denied = node.kind == Kind.APPROVAL and self.rng.random() < behaviour.deny
        state = JobState.FAILED if denied else JobState.SUCCEEDED
        if node.timeout is not None and after > node.timeout:
            after, state = node.timeout, on_timeout(node.kind)[0]
        sim.later(sim.now + after, self._end, (job, state))

    def _end(self, ending: tuple[SimJob, JobState]) -> None:
        job, state = ending
        if job.state is not JobState.AWAITING:
            return  # canceled meanwhile (its graph)
        self._count(-1)
        node = self._nodes.pop(job.id)
        self.ended.setdefault(node.kind, []).append(self.sim.now - (job.ready or 0.0))
        self.sim.finish(job, state)

    def _count(self, step: int) -> None:
        now = self.sim.now
        self.area += self.awaiting * (now - self._since)
        self._since = now
        self.awaiting += step
        self.peak = max(self.peak, self.awaiting)

    def report(self, duration: float) -> dict[str, Any]:
        """The ``awaiting`` section of the report: per kind, how many and how long they
        awaited; in all, the mean and the most awaiting at once (worker slots a handler
        polling for each would have held)."""
        self._count(0)
        kinds = {kind: {"jobs": len(times), "seconds": sum(times),
                        "mean": sum(times) / len(times) if times else 0.0}
                 for kind, times in sorted(self.ended.items())}
        return {"jobs": sum(k["jobs"] for k in kinds.values()), "by_kind": kinds,
                "seconds": self.area, "slots_mean": self.area / duration if duration else 0.0,
                "slots_max": self.peak, "still_awaiting": self.awaiting}
