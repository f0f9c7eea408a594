"""Arrival processes in virtual time: Poisson, given instants, and schedules (fixed
interval, cron, adaptive) ticking through the same functions as the daemons'
(:func:`~taskyard.core.recurrence.plan_ticks`, :func:`~taskyard.core.cron.next_fire`,
:func:`~taskyard.core.lifecycle.adaptive_tick`, :func:`~taskyard.core.recurrence.next_interval`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from taskyard.core.cron import next_fire, parse_cron, resolve_zone
from taskyard.core.lifecycle import adaptive_tick
from taskyard.core.recurrence import (
    Catchup,
    adaptive_next_run,
    every_after,
    next_interval,
    plan_ticks,
)
from taskyard.core.states import TERMINAL, JobState
from taskyard.sim.arrival_spec import Arrival
from taskyard.sim.context import SimContext
from taskyard.sim.dependents import Dependents
from taskyard.sim.model import SimGraph, SimJob
from taskyard.sim.recorded import RecordedJob


@dataclass(slots=True)
class _Adaptive:
    """An adaptive schedule's state, as the schedules row holds it."""

    arrival: Arrival
    interval: float
    next_run: float
    last: SimJob | None = None
    version: int = 0


class Arrivals:
    """Every arrival process of one simulation."""

    def __init__(self, sim: SimContext, dependents: Dependents) -> None:
        self.sim = sim
        self.dependents = dependents
        self._count: dict[int, int] = {}
        self._bounds: dict[int, float] = {}
        self._epoch = sim.scenario.start_epoch
        self._replayed: dict[int, SimJob] = {}
        """Replay: the job of each recorded id (parents are looked up here)."""
        self._graphs: dict[int, SimGraph] = {}
        self._streams = {a.index: sim.stream(f"arrival:{a.index}")
                         for a in sim.scenario.arrivals}

    def start(self) -> None:
        """Schedule each process's first arrival (in the scenario's order)."""
        sim = self.sim
        until = sim.scenario.until
        for arrival in sim.scenario.arrivals:
            self._count[arrival.index] = 0
            ends = [t for t in (arrival.end, until) if t is not None]
            self._bounds[arrival.index] = min(ends) if ends else math.inf
            if arrival.kind == "at":
                for when in arrival.at:
                    sim.later(when, self._at, arrival)
            elif arrival.kind == "poisson":
                self._next_poisson(arrival, arrival.start)
            elif arrival.kind == "adaptive":
                spec = sim.scenario.types[arrival.type or ""]
                assert spec.interval is not None
                state = _Adaptive(arrival, spec.interval.default, arrival.start)
                self._tick_adaptive_at(state)
            else:
                self._tick_at(arrival, self._first_tick(arrival))
        batch: list[RecordedJob] = []
        for recorded in sim.scenario.recorded:  # in id order: creation order
            if batch and recorded.at != batch[0].at:
                sim.later(batch[0].at, self._replay, batch)
                batch = []
            batch.append(recorded)
        if batch:
            sim.later(batch[0].at, self._replay, batch)

    def _bound(self, arrival: Arrival) -> float:
        """Arrivals stop then: at the arrival's end or the scenario's until."""
        return self._bounds[arrival.index]

    def _more(self, arrival: Arrival) -> bool:
        return arrival.count is None or self._count[arrival.index] < arrival.count

    def submit(self, arrival: Arrival) -> SimJob | None:
        """One arrival: a job (with its prerequisites) or a graph."""
        sim = self.sim
        self._count[arrival.index] += 1
        rng = self._streams[arrival.index]
        if arrival.graph is not None:
            self.dependents.submit_graph(arrival.graph, arrival.name, rng)
            return None
        spec = sim.scenario.types[arrival.type or ""]
        job = sim.new_job(spec, arrival.args.sample(rng), arrival.priority.sample(rng),
                          arrival.pools, rng=rng)
        if spec.prerequisites or spec.name in self.dependents.tracked:
            self.dependents.launch(job, rng)
        else:
            sim.release(job)  # nothing to launch first, nothing to be reused
        return job

    # -- replay ---------------------------------------------------------------------------

    def _replay(self, batch: list[RecordedJob]) -> None:
        """Recorded jobs created at this instant: created in id order, then joined to
        their parents (recorded earlier or now)."""
        sim = self.sim
        jobs = []
        for recorded in batch:
            spec = sim.scenario.types[recorded.type]
            job = sim.new_job(spec, {}, recorded.priority, recorded.pools,
                              timeout=recorded.timeout, claims=recorded.claims)
            job.cost = job.cand.cost = recorded.cost
            job.retry, job.max_losses = recorded.retry, recorded.max_losses
            job.recorded = list(recorded.attempts)
            job.convergence = recorded.convergence
            if recorded.graph is not None:
                graph = self._graphs.get(recorded.graph)
                if graph is None:
                    graph = self._graphs[recorded.graph] = SimGraph(recorded.graph,
                                                                    f"graph {recorded.graph}",
                                                                    sim.now)
                    sim.metrics.graph_submitted(graph)
                job.graph = graph
                graph.jobs.append(job)
            self._replayed[recorded.id] = job
            jobs.append(job)
        for recorded, job in zip(batch, jobs, strict=True):
            self.dependents.attach(job, [(self._replayed[parent], condition)
                                        for parent, condition in recorded.requires
                                        if parent in self._replayed])

    # -- Poisson and given instants -----------------------------------------------------

    def _next_poisson(self, arrival: Arrival, after: float) -> None:
        when = after + self._streams[arrival.index].expovariate(arrival.rate)
        if when < self._bound(arrival) and self._more(arrival):
            self.sim.later(when, self._poisson, arrival)

    def _poisson(self, arrival: Arrival) -> None:
        self.submit(arrival)
        self._next_poisson(arrival, self.sim.now)

    def _at(self, arrival: Arrival) -> None:
        for _ in range(arrival.burst):
            self.submit(arrival)

    # -- fixed interval and cron ----------------------------------------------------------

    def _following(self, arrival: Arrival) -> Callable[[float], float]:
        """``t -> first tick after t`` in virtual seconds."""
        if arrival.kind == "every":
            anchor = float(math.floor(arrival.start))
            return lambda after: every_after(anchor, arrival.every, after)
        expr, zone, epoch = parse_cron(arrival.cron), resolve_zone(arrival.timezone), self._epoch
        return lambda after: next_fire(expr, epoch + after, zone) - epoch

    def _first_tick(self, arrival: Arrival) -> float:
        # A new every-schedule runs at once; a cron one at its next fire time.
        if arrival.kind == "every":
            return float(math.floor(arrival.start))
        return self._following(arrival)(arrival.start)

    def _tick_at(self, arrival: Arrival, when: float) -> None:
        if when < self._bound(arrival) and self._more(arrival):
            self.sim.later(when, self._tick, (arrival, when))

    def _tick(self, due: tuple[Arrival, float]) -> None:
        arrival, next_run = due
        plan = plan_ticks(next_run, self.sim.now, self._following(arrival), Catchup.ONE)
        for _ in plan.ticks:
            self.submit(arrival)
        self._tick_at(arrival, plan.next_run)

    # -- adaptive schedules ---------------------------------------------------------------

    def _tick_adaptive_at(self, state: _Adaptive) -> None:
        state.version += 1
        if state.next_run < self._bound(state.arrival) and self._more(state.arrival):
            self.sim.later(state.next_run, self._tick_adaptive, (state, state.version))

    def _tick_adaptive(self, due: tuple[_Adaptive, int]) -> None:
        state, version = due
        if version != state.version:
            return  # superseded: the last run's end moved the next run
        ended = state.last is None or state.last.state in TERMINAL
        plan = adaptive_tick(state.next_run, self.sim.now, state.interval, ended)
        for _ in plan.ticks:
            job = self.submit(state.arrival)
            if job is not None:
                job.schedule = (state, state.next_run)
                state.last = job
        state.next_run = plan.next_run
        self._tick_adaptive_at(state)

    def ended(self, job: SimJob) -> None:
        """A scheduled job ended: an adaptive schedule's interval moves with its result."""
        state, tick = job.schedule
        if not isinstance(state, _Adaptive) or state.last is not job:
            return
        spec = job.type
        assert spec.interval is not None
        state.interval = next_interval(state.interval, spec.interval, spec.backoff_factor,
                                       succeeded=job.state is JobState.SUCCEEDED,
                                       eventful=job.eventful)
        state.next_run = adaptive_next_run(self.sim.now, state.interval, tick)
        self._tick_adaptive_at(state)

