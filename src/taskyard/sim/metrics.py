"""What a simulation measures while it runs: waits, ends, queue lengths over time, lock
contention, graphs, and the capacity each worker used. :mod:`taskyard.sim.report`
turns it into the report."""

from __future__ import annotations

from array import array
from collections import Counter
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from taskyard.core.states import JobState

if TYPE_CHECKING:
    from taskyard.sim.model import SimGraph, SimJob, SimWorker
    from taskyard.sim.rates import RateKey, RateStats
    from taskyard.sim.scenario import Scenario


class LockStats:
    """Contention on one lock key: cycles that skipped a job for it, jobs held back,
    and the seconds they waited from their first skip until they started."""

    __slots__ = ("jobs", "seconds", "skips")

    def __init__(self) -> None:
        self.skips = 0
        self.jobs = 0
        self.seconds = 0.0


class Metrics:
    """Counters of one run, updated by the engine as things happen."""

    def __init__(self, scenario: Scenario) -> None:
        self.scenario = scenario
        self.types = sorted(scenario.types)
        self.created = 0
        self.created_by_type: Counter[str] = Counter()
        self.ended: Counter[str] = Counter()
        self.ended_by_type: Counter[tuple[str, str]] = Counter()
        self.waits: dict[tuple[str, int], array[float]] = {}
        """Seconds from ready (pending and due) to the first start, per type and the
        priority the job was submitted with."""
        self.lowest_priority: int | None = None
        self.pending_by_type: Counter[str] = Counter()
        self.running = 0
        self.samples: list[tuple[float, int, int, tuple[int, ...]]] = []
        """(time, pending, running, pending per type in :attr:`types` order)."""
        self.locks: dict[str, LockStats] = {}
        self.rates: dict[RateKey, RateStats] = {}
        """Per (type, rate key): what its rate limit held back (see taskyard.sim.rates)."""
        self.graphs_submitted = 0
        self.graphs: list[tuple[float, str]] = []
        """(seconds from submit to the last job's end, final state) per graph."""
        self.workers: list[SimWorker] = []
        self.end = 0.0
        self.unfinished: Counter[str] = Counter()
        self.awaiting: dict[str, Any] = {}
        """Approvals, waits and sleeps: how many, how long they awaited (SimWaits.report)."""
        self.starving: list[tuple[float, int, str]] = []
        """(seconds waited so far, job id, type) of jobs of the lowest priority that
        were still waiting to start when the run ended."""

    def created_job(self, job: SimJob) -> None:
        self.created += 1
        self.created_by_type[job.type.name] += 1
        if self.lowest_priority is None or job.base_priority < self.lowest_priority:
            self.lowest_priority = job.base_priority

    def started(self, job: SimJob, now: float) -> None:
        key = (job.type.name, job.base_priority)
        waits = self.waits.get(key)
        if waits is None:
            waits = self.waits[key] = array("d")
        assert job.ready is not None
        waits.append(now - job.ready)
        if job.blocked_at is not None:
            self.locks[job.blocked_key].seconds += now - job.blocked_at

    def blocked(self, job: SimJob, key: str, now: float) -> None:
        stats = self.locks.get(key)
        if stats is None:
            stats = self.locks[key] = LockStats()
        stats.skips += 1
        if job.blocked_at is None and job.started is None:
            job.blocked_at, job.blocked_key = now, key
            stats.jobs += 1

    def finished(self, job: SimJob, now: float) -> None:
        self.ended[job.state] += 1  # a JobState is its value (a str)
        self.ended_by_type[(job.type.name, job.state)] += 1

    def graph_submitted(self, graph: SimGraph) -> None:
        self.graphs_submitted += 1

    def graph_ended(self, graph: SimGraph) -> None:
        assert graph.finished is not None
        self.graphs.append((graph.finished - graph.created, graph.state))

    def joined(self, worker: SimWorker) -> None:
        self.workers.append(worker)

    def sample(self, now: float) -> int:
        """Record the queue now; returns how many samples there are."""
        pending = self.pending_by_type
        self.samples.append((now, sum(pending.values()), self.running,
                             tuple(pending[name] for name in self.types)))
        return len(self.samples)

    def thin_samples(self) -> None:
        """Keep every other sample (the run is longer than the interval assumed)."""
        self.samples = self.samples[::2]

    def close(self, now: float, live: Iterable[SimJob],
              rates: dict[RateKey, RateStats] | None) -> None:
        """The run ended at ``now`` with the jobs ``live`` unfinished: close the books.
        ``rates``: what the rate limits held back, if a type has one."""
        self.end = now
        if rates is not None:
            self.rates = rates
        for worker in self.workers:
            if worker.alive:
                worker.account(now)
        for job in live:
            self.unfinished[job.state.value] += 1
            if (job.started is None and job.ready is not None
                    and job.state is JobState.PENDING
                    and job.base_priority == self.lowest_priority):
                self.starving.append((now - job.ready, job.id, job.type.name))
        self.starving.sort(reverse=True)
        del self.starving[10:]
