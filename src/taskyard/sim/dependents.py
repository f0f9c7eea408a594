"""Jobs that wait for others: graphs, update-on-launch prerequisites, and what a job's
end means for them (seed 003's readiness counters, decided by core.edges/lifecycle)."""

from __future__ import annotations

from collections.abc import Callable
from random import Random

from taskyard.core.edges import EdgeOutcome, decide_dependent, edge_outcome, failure_is_handled
from taskyard.core.graph import GraphSpec
from taskyard.core.limits import LimitError, encode_args
from taskyard.core.prerequisites import PrerequisiteError, PriorRun, Reuse, decide, render_args
from taskyard.core.states import TERMINAL, JobState
from taskyard.core.waits import Kind
from taskyard.sim.context import SimContext
from taskyard.sim.fields import ScenarioError
from taskyard.sim.model import SimGraph, SimJob
from taskyard.sim.waits import SimWaits

_WAITING, _PENDING = JobState.WAITING, JobState.PENDING
_FAILED_ITSELF = (JobState.FAILED, JobState.ERROR, JobState.CANCELED)
_RunKey = tuple[str, str]


class Dependents:
    """Graphs and prerequisites of one simulation."""

    def __init__(self, sim: SimContext, schedule_ended: Callable[[SimJob], None],
                 waits: SimWaits) -> None:
        """``schedule_ended``: told of each job of a schedule that ended (after its
        dependents), for the schedule's next tick; ``waits``: the graphs' approvals,
        waits and sleeps (they await instead of becoming pending)."""
        self.sim = sim
        self.schedule_ended = schedule_ended
        self.waits = waits
        self._graphs = 0
        prereq_types = {p.type for spec in sim.scenario.types.values()
                        for p in spec.prerequisites}
        self.tracked = prereq_types
        """Types some prerequisite names: their runs may be reused."""
        self._key_of: dict[int, _RunKey] = {}
        self._flying: dict[_RunKey, dict[int, SimJob]] = {}
        self._success: dict[_RunKey, tuple[int, float]] = {}

    # -- graphs -------------------------------------------------------------------------

    def submit_graph(self, spec: GraphSpec, name: str, rng: Random) -> SimGraph:
        """One instance of a graph file: its jobs in the file's order, its edges."""
        sim = self.sim
        self._graphs += 1
        graph = SimGraph(self._graphs, name, sim.now)
        by_label: dict[str, SimJob] = {}
        for label, node in spec.tasks.items():
            if node.kind != Kind.TASK:  # an approval, a wait or a sleep: no worker
                job = self.waits.new(node, rng)
            else:
                job = sim.new_job(sim.scenario.types[node.type], node.args, node.priority,
                                  node.pools, extra_locks=node.locks, retries=node.reruns,
                                  timeout=node.timeout, rng=rng)
            job.graph, job.label, job.convergence = graph, label, node.convergence
            by_label[label] = job
            graph.jobs.append(job)
            self.track(job)
        for label, node in spec.tasks.items():
            for edge in node.requires:
                by_label[label].requires(by_label[edge.label], edge.on)
        for job in graph.jobs:
            if job.unmet == 0:
                self.waits.ready(job)
        sim.metrics.graph_submitted(graph)
        return graph

    def attach(self, job: SimJob, parents: list[tuple[SimJob, str]]) -> None:
        """Join a new job to its parents and release it unless it must wait. A parent
        that ended already counts at once, as for tasks added to a live graph: its
        edge holds, or the job ends ``dependency_failed`` or ``skipped``."""
        holds = skips = fails = 0
        for parent, condition in parents:
            if parent.state in TERMINAL:
                outcome = edge_outcome(parent.state, condition)
                holds += outcome is EdgeOutcome.HOLDS
                skips += outcome is EdgeOutcome.SKIP
                fails += outcome is EdgeOutcome.FAIL
            else:
                job.requires(parent, condition)
        if holds + skips + fails:
            new = decide_dependent(job.convergence, holds, skips, fails, unmet_after=job.unmet,
                                   failures_after=fails)
            job.dep_failures = fails
            if new is not None and new is not _PENDING:
                self.sim.finish(job, new)
                return
            if new is _PENDING:
                job.unmet = 0
        if job.unmet == 0:
            self.waits.ready(job)

    # -- update on launch ----------------------------------------------------------------

    def launch(self, job: SimJob, rng: Random) -> None:
        """A submitted or scheduled job: reuse or spawn its prerequisites, then release
        it unless it waits for one."""
        sim = self.sim
        self.track(job)
        for n, pre in enumerate(job.type.prerequisites):
            where = f"task_types.{job.type.name}.prerequisites[{n}]"
            try:
                args = render_args(pre.args, job.args, where=where)
                key = (pre.type, encode_args(args, where=where))
            except (PrerequisiteError, LimitError) as exc:
                raise ScenarioError(str(exc)) from None
            choice = decide(self._prior(key), cache=pre.cache, now=sim.now)
            if isinstance(choice, Reuse):
                if choice.wait:
                    job.requires(self._flying[key][choice.job_id])
                continue
            # Spawned with the launching job's priority; it spawns nothing itself.
            spawned = sim.new_job(sim.scenario.types[pre.type], args, job.priority, rng=rng)
            self.track(spawned)
            job.requires(spawned)
            sim.release(spawned)
        if job.unmet == 0:
            sim.release(job)

    def track(self, job: SimJob) -> None:
        if job.type.name not in self.tracked:
            return
        key = (job.type.name, encode_args(job.args, where=f"job {job.id}"))
        self._key_of[job.id] = key
        self._flying.setdefault(key, {})[job.id] = job

    def _prior(self, key: _RunKey) -> list[PriorRun]:
        prior = []
        flying = self._flying.get(key)
        if flying:
            newest = max(flying)
            prior.append(PriorRun(newest, flying[newest].state.value, None))
        success = self._success.get(key)
        if success is not None:
            prior.append(PriorRun(success[0], JobState.SUCCEEDED.value, success[1]))
        return prior

    # -- ends ---------------------------------------------------------------------------

    def resolve(self) -> None:
        """Apply the ends of this instant to waiting dependents, breadth first (those
        that end in turn propagate too), then to graphs and prerequisite runs."""
        sim = self.sim
        while sim.ended:
            batch, sim.ended = sim.ended, []
            self._propagate(batch)
            for job in batch:
                if job.graph is not None:
                    self._graph_ended(job)
                key = self._key_of.pop(job.id, None)
                if key is not None:
                    del self._flying[key][job.id]
                    if job.state is JobState.SUCCEEDED:
                        self._success[key] = (job.id, sim.now)
                if job.schedule is not None:
                    self.schedule_ended(job)

    def _propagate(self, batch: list[SimJob]) -> None:
        tallies: dict[SimJob, list[int]] = {}
        for parent in batch:
            for child, condition in parent.children or ():
                if child.state is not _WAITING:
                    continue
                outcome = edge_outcome(parent.state, condition)
                tally = tallies.get(child)
                if tally is None:
                    tally = tallies[child] = [0, 0, 0, 0]
                tally[0] += 1
                tally[1] += outcome is EdgeOutcome.HOLDS
                tally[2] += outcome is EdgeOutcome.SKIP
                tally[3] += outcome is EdgeOutcome.FAIL
        for child, (resolved, holds, skips, fails) in tallies.items():
            unmet, failures = child.unmet - resolved, child.dep_failures + fails
            new = decide_dependent(child.convergence, holds, skips, fails, unmet_after=unmet,
                                   failures_after=failures)
            child.unmet, child.dep_failures = unmet, failures
            if new is _PENDING:
                self.waits.ready(child)  # pending, or awaiting (core/waits.py)
            elif new is not None:
                self.sim.finish(child, new)

    def _graph_ended(self, job: SimJob) -> None:
        graph = job.graph
        assert graph is not None
        graph.done += 1
        if graph.state == "running":
            conditions = {condition for _, condition in job.children or ()}
            if job.state in _FAILED_ITSELF and not failure_is_handled(job.state, conditions):
                graph.state = "blocked"
                graph.failed.append(job.id)
            elif graph.done >= len(graph.jobs):
                graph.state = "finished"
        if graph.done >= len(graph.jobs):
            graph.finished = self.sim.now
            self.sim.metrics.graph_ended(graph)
