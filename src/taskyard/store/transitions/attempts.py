"""Attempts: what workers start and end, in batches, and what is placed on them.

A worker reports what happened since its last report — attempts it started
(dispatched → running) and attempts that ended — in one transaction (which the
worker may also use to run the scheduling cycle: see ``worker/reports.py``). Every
transition is fenced in SQL: the attempt number, the job's state, the worker, and
its lease on the database clock. A report from any other attempt changes nothing.

The statements are set-based and run on the driver's cursor (:mod:`.raw`): at
thousands of jobs per second, one statement per job, or SQLAlchemy's own cost per
statement, would exceed the database's work.
"""

from __future__ import annotations

import random
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from taskyard.core.lifecycle import after_attempt
from taskyard.core.states import AttemptState, JobState
from taskyard.core.substitution import result_references, substitute_results
from taskyard.model.errors import InvalidInput
from taskyard.model.records import (
    Assignment,
    ClaimedJob,
    JobRecord,
    Outcome,
    Started,
    dumps,
    loads,
)
from taskyard.store import schema as t
from taskyard.store.driver.params import AttemptEnd, AttemptStart, EndAttempts, StartAttempts
from taskyard.store.transitions.dependents import Ended, chunks
from taskyard.store.transitions.events import Event, attempt_ended, job_running

if TYPE_CHECKING:
    from taskyard.store.unit import Tx

_J = t.jobs
ENDS = {
    AttemptState.SUCCEEDED: JobState.SUCCEEDED,
    AttemptState.FAILED: JobState.FAILED,
    AttemptState.ERROR: JobState.ERROR,
    AttemptState.CANCELED: JobState.CANCELED,
}
"""The job state each attempt end leads to (unless a retry is due)."""
Key = tuple[int, int]
FETCH_LIMIT = 10_000
"""Most jobs one fetch returns (placement bounds what is on a worker far below it)."""

class Attempts:
    """Workers' attempts, in one transaction."""

    READS: ClassVar[frozenset[str]] = frozenset({'dispatched_args'})
    """Methods a call through the store (``store.attempts.<method>``) runs in a read
    transaction; the others run in a write transaction (:class:`taskyard.store.store.OneShot`)."""
    READS_EACH: ClassVar[frozenset[str]] = frozenset({'fetch'})
    """... in autocommit reads that share no snapshot (PostgreSQL: no ``BEGIN``/``COMMIT``)."""

    def __init__(self, tx: Tx) -> None:
        self.tx = tx

    def record(self, worker_id: int, started: Sequence[Started] = (),
               ended: Sequence[Outcome] = (), *, prefetch: int | None = None,
               ) -> tuple[int, list[bool]]:
        """Record ``started`` attempts (dispatched → running), then ``ended`` ones
        (running → their end, or pending again when a retry is due), and set the
        worker's prefetch window. Returns how many starts were recorded and, per ended
        attempt, whether its end was accepted (False: fenced off). Graph bookkeeping
        waits for the end of the transaction (see Dependents.defer_graph_writes)."""
        for o in ended:
            if o.state not in ENDS:
                raise InvalidInput(f"outcome of job {o.job_id}: unknown state {o.state!r}")
        self.tx.dependents.defer_graph_writes()
        ending = {(o.job_id, o.attempt) for o in ended}
        ago = {(s.job_id, s.attempt): max(0.0, s.ago) for s in started
               if (s.job_id, s.attempt) in ending}
        count = 0
        for starts in chunks([s for s in started if (s.job_id, s.attempt) not in ago]):
            count += len(self.start(worker_id, starts))
        accepted: set[Key] = set()
        for ends in chunks(ended):
            accepted |= self.end(worker_id, ends, ago)
        if prefetch is not None:
            self.tx.driver.set_prefetch(self.tx.raw, worker_id, prefetch)
        return (count + len(accepted & ago.keys()),
                [(o.job_id, o.attempt) in accepted for o in ended])

    def start(self, worker_id: int, part: Sequence[Started]) -> set[Key]:
        """Dispatched → running for the attempts of ``part`` that are current here;
        returns those (job, attempt) pairs."""
        rows = self.tx.driver.start_attempts(self.tx.raw, StartAttempts(worker_id, [
            AttemptStart(s.job_id, s.attempt, max(0.0, s.ago)) for s in part]))
        if not rows:
            return set()
        self.tx.events.append(job_running(job, attempt, worker_id, graph, routing)
                              for job, attempt, _, graph, routing in rows)
        self.tx.dependents.graph_progress(graph for _, _, _, graph, _ in rows
                                          if graph is not None)
        return {(job, attempt) for job, attempt, _, _, _ in rows}

    def end(self, worker_id: int, part: Sequence[Outcome], ago: Mapping[Key, float]) -> set[Key]:
        """Running (or, with its start in ``ago``, dispatched) → the reported end, or
        pending when a retry is due (core decides: :func:`after_attempt`); returns the
        (job, attempt) pairs accepted."""
        failing = [o.job_id for o in part if o.state != AttemptState.SUCCEEDED]
        policies = self.tx.retries.policies(failing) if failing else {}
        ends: list[AttemptEnd] = []
        delays: dict[int, float] = {}
        for o in part:
            delay = None
            if o.job_id in policies:  # a failure: a retry may be due
                policy, failed = policies[o.job_id]
                then = after_attempt(AttemptState(o.state), policy, failed, random.random())
                delay = then.delay if then.state is JobState.PENDING else None
                if delay:
                    delays[o.job_id] = delay
            ends.append(AttemptEnd(
                o.job_id, o.attempt, ENDS[AttemptState(o.state)].value, o.exit_code,
                None if o.result is None else dumps(o.result), o.error, delay,
                ago.get((o.job_id, o.attempt)), o.stdout_tail, o.stderr_tail))
        result = self.tx.driver.end_attempts(self.tx.raw, EndAttempts(worker_id, ends))
        rows = result.rows
        if not rows:
            return set()
        done = {(r[0], r[1]): r for r in rows}
        events: list[Event] = []
        ended: list[Ended] = []
        for o in part:
            if (o.job_id, o.attempt) not in done:
                continue
            _, _, state, graph, routing, schedule = done[(o.job_id, o.attempt)]
            if (o.job_id, o.attempt) in ago:
                events.append(job_running(o.job_id, o.attempt, worker_id, graph, routing))
            retry = state == JobState.PENDING
            if retry and delays.get(o.job_id):  # the scheduler learns when it is due
                self.tx.notify("scheduler")
            events.append(attempt_ended(o.job_id, o.attempt, o.state, retry=retry, graph_id=graph,
                                        routing=routing))
            if not retry:
                ended.append(Ended(o.job_id, ENDS[AttemptState(o.state)], graph, schedule or ""))
        self.tx.events.append(events)
        if ended:
            self.tx.dependents.jobs_ended(ended, edges=result.edges, waiting=result.waiting)
        return set(done)

    def fetch(self, worker_id: int, known: Collection[Key] = (),
              limit: int = FETCH_LIMIT) -> Assignment:
        """What is placed on this worker: jobs dispatched to it and not in ``known``, and
        the active set (read only: the worker records each start). A job's details are
        written once, before its dispatch: no shared snapshot is needed."""
        placed = self.tx.driver.placed_here(self.tx.raw, worker_id, known)
        if placed.rows is None:
            return Assignment(self.details(worker_id, placed.ids)[:limit], placed.active)
        return Assignment(self._claimed(placed.rows[:limit]), placed.active)

    def details(self, worker_id: int, ids: Sequence[int]) -> list[ClaimedJob]:
        """What the worker needs to run each job dispatched to it among ``ids``, in
        placement order."""
        if not ids:
            return []
        rows: list[tuple[Any, ...]] = []
        for part in chunks(list(ids)):
            rows += self.tx.driver.job_details(self.tx.raw, worker_id, part)
        rows.sort(key=lambda r: (-r[8], r[0]))
        return self._claimed(rows)

    def _claimed(self, rows: Iterable[tuple[Any, ...]]) -> list[ClaimedJob]:
        """Args with ``$result`` substituted, and the results of stages that earlier
        attempts finished."""
        jobs = [_Row(*r) for r in rows]
        results = self._upstream_results([(j.graph_id, j.args) for j in jobs])
        stages = self.tx.stages.finished([(j.id, j.attempt) for j in jobs if j.attempt > 1])
        return [
            ClaimedJob(
                job_id=j.id, attempt=j.attempt, type=j.type, handler=j.handler,
                args=_substituted(j.graph_id, j.args, results), timeout=j.timeout,
                graph_id=j.graph_id, label=j.label, stages=stages.get(j.id, {}), cost=j.cost,
                priority=j.priority, logical_time=j.logical_time,
                trace_context=j.trace_context,
            )
            for j in jobs
        ]

    def dispatched_args(self, job: JobRecord) -> dict[str, Any] | None:
        """The args ``job``'s handler received: its ``{$result: LABEL}`` markers filled
        in as at dispatch (:meth:`details`); None while it was never dispatched."""
        if job.attempt == 0:
            return None
        args_text = dumps(job.args)
        return _substituted(job.graph_id, args_text,
                            self._upstream_results([(job.graph_id, args_text)]))

    def _upstream_results(self, jobs: Sequence[tuple[int | None, str]]
                          ) -> dict[int, dict[str, Any]]:
        """Results of the labels that ``{$result: LABEL}`` markers name, per graph (seed
        004's substitution, done at dispatch), for jobs given as (graph id, args text)."""
        wanted: dict[int, set[str]] = {}
        for graph_id, args in jobs:
            if graph_id is not None and '"$result"' in args:
                wanted.setdefault(graph_id, set()).update(result_references(loads(args)))
        return {
            graph_id: {label: loads(result) for label, result in self.tx.driver.results_of(
                self.tx.raw, graph_id, sorted(labels))}
            for graph_id, labels in wanted.items()
        }


@dataclass(slots=True)  # not frozen: one per claimed job (1.4 -> 0.2 µs to build)
class _Row:
    id: int
    attempt: int
    type: str
    args: str
    timeout: float | None
    graph_id: int | None
    label: str | None
    cost: int
    priority: int
    handler: str
    logical_time: float | None = None
    trace_context: str | None = None


def _substituted(graph_id: int | None, args_text: str,
                 results: dict[int, dict[str, Any]]) -> dict[str, Any]:
    args: dict[str, Any] = loads(args_text)
    if graph_id in results:
        return dict(substitute_results(args, results[graph_id]))
    return args
