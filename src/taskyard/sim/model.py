"""What the simulator keeps in memory: jobs, workers, graphs and the pending streams.

Plain classes with ``__slots__``: a million jobs are created and dropped in a run, and
attribute access on them is most of its cost.
"""

from __future__ import annotations

import heapq
from typing import TYPE_CHECKING, Any

from taskyard.core.placement import Candidate, WorkerSlot
from taskyard.core.prefetch import PaceTracker
from taskyard.core.states import AttemptState, JobState

if TYPE_CHECKING:
    from taskyard.core.locks import LockClaim
    from taskyard.core.retry import RetryPolicy
    from taskyard.sim.specs import TypeSpec, WorkerGroup

PENDING = JobState.PENDING
_Entry = tuple[int, int, "SimJob"]
_StreamEntry = tuple[int, int, int, "SimJob"]


class SimJob:
    """One job of the simulation, through all its attempts."""

    __slots__ = (
        "args",
        "attempt",
        "attempt_started",
        "base_priority",
        "blocked_at",
        "blocked_key",
        "cand",
        "children",
        "claims",
        "convergence",
        "cost",
        "created",
        "dep_failures",
        "entry",
        "eventful",
        "failures",
        "finished",
        "first",
        "graph",
        "id",
        "label",
        "listed",
        "losses",
        "max_losses",
        "outcome",
        "pools",
        "priority",
        "ready",
        "recorded",
        "retry",
        "run_after",
        "schedule",
        "started",
        "state",
        "timeout",
        "type",
        "unmet",
        "worker",
    )

    def __init__(self, job_id: int, spec: TypeSpec, args: dict[str, Any], priority: int, *,
                 pools: tuple[str, ...], claims: tuple[LockClaim, ...], now: float,
                 retry: RetryPolicy, timeout: float | None, rate_key: str | None = None,
                 ) -> None:
        self.id = job_id
        self.type = spec
        self.args = args
        self.priority = self.base_priority = priority
        self.pools = pools
        self.cost = spec.cost
        self.claims = claims
        self.cand = Candidate(job_id, spec.name, priority, pools, spec.cost, claims, rate_key)
        self.state = JobState.WAITING
        self.attempt = 0
        self.failures = 0
        self.losses = 0
        self.max_losses = spec.max_worker_losses
        self.retry = retry
        self.timeout = timeout
        self.worker: SimWorker | None = None
        self.created = now
        self.ready: float | None = None
        """When it first became pending and due: its wait starts then."""
        self.started: float | None = None
        self.finished: float | None = None
        self.attempt_started = 0.0
        self.run_after: float | None = None
        self.outcome = AttemptState.SUCCEEDED
        self.eventful: bool | None = None
        self.graph: SimGraph | None = None
        self.label: str | None = None
        self.children: list[tuple[SimJob, str]] | None = None
        self.unmet = 0
        self.dep_failures = 0
        self.convergence = "all"
        self.schedule: Any = None
        self.blocked_at: float | None = None
        self.blocked_key = ""
        self.first: tuple[float, AttemptState] | None = None
        """Its first attempt, drawn when it arrived (see Simulation.stream)."""
        self.entry = 0
        self.listed = False
        """In the aging's list of pending jobs (see Periodic)."""
        """Which of its entries in a pending stream is current (see PendingStream)."""
        self.recorded: list[tuple[float, AttemptState]] | None = None
        """Replay: the durations and outcomes of its recorded attempts."""

    def requires(self, parent: SimJob, condition: str = "success") -> None:
        """Wait for ``parent`` (an edge with ``condition``)."""
        if parent.children is None:
            parent.children = []
        parent.children.append((self, condition))
        self.unmet += 1


class SimWorker:
    """One registration of a worker: from its start until it crashes (a restart is a
    new registration, with a new id, as in the database)."""

    __slots__ = ("alive", "busy", "capacity", "executing", "group", "id", "jobs", "joined",
                 "last", "left", "name", "pace", "queue", "slot", "used")

    def __init__(self, worker_id: int, name: str, group: WorkerGroup, now: float) -> None:
        self.id = worker_id
        self.name = name
        self.group = group
        self.capacity = group.capacity
        # A window is lent until its first job ends (sim/windows.py, core/prefetch.py).
        self.slot = WorkerSlot(worker_id, name, group.pools, group.capacity, 0,
                               group.prefetch or None)
        self.alive = True
        self.jobs: dict[int, SimJob] = {}
        """Dispatched to it or running on it, by id (insertion order: deterministic)."""
        self.queue: list[_Entry] = []
        """Dispatched, waiting for room: in placement order."""
        self.executing = 0
        self.used = 0
        self.pace = PaceTracker()
        self.joined = now
        self.left: float | None = None
        self.busy = 0.0
        """Capacity-seconds used (running cost, capped at capacity)."""
        self.last = now

    def account(self, now: float) -> None:
        """Add the running cost since the last change to :attr:`busy`."""
        if self.used:
            self.busy += min(self.used, self.capacity) * (now - self.last)
        self.last = now


class SimGraph:
    """One submitted instance of a graph file."""

    __slots__ = ("created", "done", "failed", "finished", "id", "jobs", "name", "state")

    def __init__(self, graph_id: int, name: str, now: float) -> None:
        self.id = graph_id
        self.name = name
        self.created = now
        self.jobs: list[SimJob] = []
        self.done = 0
        self.state = "running"
        self.failed: list[int] = []
        self.finished: float | None = None
        """When its last job ended (finished or blocked alike)."""


class PendingStream:
    """Due pending jobs of one pools list, in placement order: a heap that the cycle
    reads through :func:`taskyard.core.candidates.merged`. Only a job's latest entry
    counts: one pushed again (its priority aged) leaves a stale entry, skipped."""

    __slots__ = ("heap", "pools", "taken")

    def __init__(self, pools: tuple[str, ...]) -> None:
        self.pools = pools
        self.heap: list[_StreamEntry] = []
        self.taken: list[SimJob] = []

    def push(self, job: SimJob) -> None:
        job.entry += 1
        heapq.heappush(self.heap, (-job.priority, job.id, job.entry, job))

    def peek(self) -> Candidate | None:
        heap = self.heap
        while heap:
            _, _, entry, job = heap[0]
            if job.state is PENDING and entry == job.entry:
                return job.cand
            heapq.heappop(heap)
        return None

    def take(self) -> Candidate:
        job = heapq.heappop(self.heap)[3]
        self.taken.append(job)
        return job.cand

    def end_cycle(self, put_back: bool) -> None:
        """After a cycle: :meth:`put_back` what it read (when it left some), else forget."""
        if put_back:
            self.put_back()
        else:
            self.taken.clear()

    def put_back(self) -> None:
        """After a cycle: the jobs it read but did not place wait for the next one."""
        for job in self.taken:
            if job.state is PENDING:
                self.push(job)
        self.taken.clear()
