"""Replay a database's history under another capacity (``--from-db URL --since 24h``).

The jobs created in the window arrive when they were created, with their type, pools,
priority, cost, locks, retry policy and edges as recorded; each attempt runs as long as
it ran and ends as it ended. Workers are those that ran in the window, grouped by the
pools they serve (a group is named after its pools: ``east``, ``east+default``);
``--workers NAME=N[xC]`` changes a group or adds one.

What cannot be replayed is said in :class:`ReplayNotes`: jobs canceled before they
started are left out (their cancel was a person's decision at a time of its own), and
jobs that never ran take the median duration of their type's recorded attempts.
"""

from __future__ import annotations

import statistics
from collections import Counter, defaultdict
from dataclasses import dataclass, field

from taskyard.core.locks import decode_claim
from taskyard.core.retry import RetryPolicy
from taskyard.core.states import AttemptState
from taskyard.sim.distributions import DurationSpec
from taskyard.sim.recorded import RecordedJob
from taskyard.sim.scenario import Scenario
from taskyard.sim.specs import SchedulerSpec, TypeSpec, WorkerGroup
from taskyard.store.reads.history import HistoricJob, History

_OUTCOMES = {s.value: s for s in (AttemptState.SUCCEEDED, AttemptState.FAILED,
                                  AttemptState.ERROR, AttemptState.CANCELED)}


@dataclass
class ReplayNotes:
    """What the replay had to leave out or guess."""

    jobs: int = 0
    left_out_canceled: int = 0
    estimated: int = 0
    """Jobs that never ran (or still ran) in the window: durations guessed."""
    workers: dict[str, int] = field(default_factory=dict)


def replay_scenario(history: History, *, name: str = "replay",
                    scheduler: SchedulerSpec | None = None) -> tuple[Scenario, ReplayNotes]:
    """A scenario that replays ``history`` on the workers it recorded."""
    notes = ReplayNotes()
    medians = _median_durations(history.jobs)
    recorded: list[RecordedJob] = []
    types: dict[str, TypeSpec] = {}
    kept = {j.id for j in history.jobs if not _canceled_unrun(j)}
    for job in history.jobs:
        if job.id not in kept:
            notes.left_out_canceled += 1
            continue
        attempts = _attempts(job, history.now, medians.get(job.type, 0.0))
        if not any(a.finished_at is not None and a.started_at is not None
                   for a in job.attempts):
            notes.estimated += 1
        types.setdefault(job.type, TypeSpec(
            job.type, pools=job.pools, max_queue_length=history.queue_limits.get(job.type),
            duration=DurationSpec("constant", medians.get(job.type, 0.0))))
        recorded.append(RecordedJob(
            id=job.id, type=job.type, at=max(0.0, job.created_at - history.since),
            priority=job.priority, pools=job.pools, cost=job.cost,
            claims=tuple(sorted(decode_claim(c) for c in job.locks)),
            retry=RetryPolicy(job.retries, job.retry_delay, job.retry_backoff,
                              job.retry_max_delay),
            timeout=job.timeout, max_losses=job.max_worker_losses, attempts=attempts,
            requires=tuple((p, c) for p, c in job.requires if p in kept),
            convergence=job.convergence, graph=job.graph_id))
    notes.jobs = len(recorded)
    groups = _worker_groups(history)
    notes.workers = {g.name: g.count for g in groups}
    scenario = Scenario(name=name, workers=groups, types=types, arrivals=(),
                        start_epoch=history.since, scheduler=scheduler or SchedulerSpec(),
                        recorded=tuple(recorded))
    return scenario, notes


def _canceled_unrun(job: HistoricJob) -> bool:
    return job.state == "canceled" and not any(a.started_at is not None for a in job.attempts)


def _median_durations(jobs: tuple[HistoricJob, ...]) -> dict[str, float]:
    spans: dict[str, list[float]] = defaultdict(list)
    for job in jobs:
        for a in job.attempts:
            if a.started_at is not None and a.finished_at is not None:
                spans[job.type].append(max(0.0, a.finished_at - a.started_at))
    return {name: statistics.median(values) for name, values in spans.items()}


def _attempts(job: HistoricJob, now: float,
              median: float) -> tuple[tuple[float, AttemptState], ...]:
    """Attempts that ran, in order; a lost attempt is left out (its worker's failure,
    not the job's: the replay injects no crash)."""
    out = []
    for a in job.attempts:
        if a.started_at is None or (a.state not in _OUTCOMES and a.finished_at is not None):
            continue  # never started, or lost
        if a.finished_at is None:  # still running when read: as long as it ran so far
            out.append((max(0.0, now - a.started_at), AttemptState.SUCCEEDED))
        else:
            out.append((max(0.0, a.finished_at - a.started_at), _OUTCOMES[a.state]))
    return tuple(out) or ((median, AttemptState.SUCCEEDED),)


def _worker_groups(history: History) -> tuple[WorkerGroup, ...]:
    """Recorded workers by the pools they serve: as many as served them at once, at the
    most (restarts re-register a name: they count once)."""
    names: dict[tuple[str, ...], set[str]] = defaultdict(set)
    capacities: dict[tuple[str, ...], Counter[int]] = defaultdict(Counter)
    for w in history.workers:
        names[w.pools].add(w.name)
        capacities[w.pools][w.capacity] += 1
    return tuple(
        WorkerGroup("+".join(pools), len(names[pools]),
                    capacities[pools].most_common(1)[0][0], pools, lease=0.0)
        for pools in sorted(names))
