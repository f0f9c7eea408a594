"""A worker's transitions in batches: start and end many attempts in one transaction.

A worker reports what happened since its last report — attempts it started
(dispatched → running) and attempts that ended — in one write transaction, which
may also run the scheduling cycle (seed 000 runs schedule() on completion) and
pick up the jobs that cycle placed on it. Every transition is fenced in SQL: the
attempt number, the job's state, the worker, and its lease on the database clock.

The statements are set-based and run on the driver's cursor (:mod:`.raw`): at
thousands of jobs per second, one statement per job, or SQLAlchemy's own cost per
statement, would exceed the database's work.
"""

from __future__ import annotations

import random
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import Connection

from taskyard.core.graph import substitute_results
from taskyard.core.retry import decide_retry
from taskyard.core.states import AttemptState, JobState
from taskyard.store.base import job_key
from taskyard.store.cycle import CycleStore, Placer
from taskyard.store.errors import InvalidInput
from taskyard.store.raw import Raw, pg_row_set
from taskyard.store.records import ClaimedJob, Outcome, Started, dumps, loads
from taskyard.store.resolution import Ended, chunks
from taskyard.store.results import ResultsMixin

_ENDS = {
    AttemptState.SUCCEEDED: JobState.SUCCEEDED,
    AttemptState.FAILED: JobState.FAILED,
    AttemptState.ERROR: JobState.ERROR,
    AttemptState.CANCELED: JobState.CANCELED,
}
_TOPIC = {
    JobState.SUCCEEDED: "job-completed",
    JobState.FAILED: "job-failed",
    JobState.ERROR: "job-exception",
    JobState.CANCELED: "job-exception",
}
Event = tuple[str, str, dict[str, Any] | str, int | None, int | None]
Key = tuple[int, int]
FETCH_LIMIT = 10_000
"""Most jobs one fetch returns (placement bounds what is on a worker far below it)."""

_LEASED = ("EXISTS (SELECT 1 FROM workers w WHERE w.id = ? AND w.state = 'active' "
           "AND w.lease_expires_at >= {now})")
_START = (
    "WITH v(id, attempt, ago) AS ({rows}) "
    "UPDATE jobs SET state = 'running', started_at = {now} - v.ago, "
    "deadline = {now} - v.ago + jobs.timeout FROM v "
    "WHERE {key} jobs.id = v.id AND jobs.attempt = v.attempt AND jobs.state = 'dispatched' "
    f"AND jobs.worker_id = ? AND {_LEASED} "
    "RETURNING jobs.id, jobs.attempt, jobs.started_at, jobs.graph_id, jobs.routing")
_START_TYPES = ("bigint", "integer", "double precision")
# An attempt whose start is reported in the same batch ends straight from dispatched
# (``ago`` set): one write of the row instead of two.
_END = (
    "WITH v(id, attempt, state, code, res, err, delay, ago) AS ({rows}) "
    "UPDATE jobs SET "
    "state = CASE WHEN v.delay IS NULL THEN v.state ELSE 'pending' END, "
    "run_after = CASE WHEN v.delay IS NULL THEN jobs.run_after ELSE {now} + v.delay END, "
    "finished_at = CASE WHEN v.delay IS NULL THEN {now} ELSE NULL END, "
    "started_at = CASE WHEN v.ago IS NULL THEN jobs.started_at ELSE {now} - v.ago END, "
    "worker_id = NULL, deadline = NULL, exit_code = v.code, error = v.err, result = v.res "
    "FROM v WHERE {key} jobs.id = v.id AND jobs.attempt = v.attempt AND (jobs.state = 'running' "
    "OR (jobs.state = 'dispatched' AND v.ago IS NOT NULL)) "
    f"AND jobs.worker_id = ? AND {_LEASED} "
    "RETURNING jobs.id, jobs.attempt, jobs.state, jobs.graph_id, jobs.routing, "
    "jobs.schedule_name")
_END_TYPES = ("bigint", "integer", "text", "integer", "text", "text", "double precision",
              "double precision")
# PostgreSQL ends the jobs and their attempts in one statement (one round trip). The
# attempts are looked up from the rows ``done`` returns, one index probe each: an
# ``= ANY(ids)`` beside that join would be evaluated again on every probe (an ending
# of 300 jobs took 2.5x as long with it).
_END_PG_TYPES = (*_END_TYPES, "text", "text")
_END_PG = (
    "WITH v(id, attempt, state, code, res, err, delay, ago, out, errt) AS ("
    + pg_row_set(_END_PG_TYPES, "rows") + "), "
    "done AS (UPDATE jobs SET "
    "state = CASE WHEN v.delay IS NULL THEN v.state ELSE 'pending' END, "
    "run_after = CASE WHEN v.delay IS NULL THEN jobs.run_after ELSE {now} + v.delay END, "
    "finished_at = CASE WHEN v.delay IS NULL THEN {now} ELSE NULL END, "
    "started_at = CASE WHEN v.ago IS NULL THEN jobs.started_at ELSE {now} - v.ago END, "
    "worker_id = NULL, deadline = NULL, exit_code = v.code, error = v.err, result = v.res "
    "FROM v WHERE jobs.id = ANY(%(ids)s::bigint[]) AND jobs.id = v.id "
    "AND jobs.attempt = v.attempt AND (jobs.state = 'running' "
    "OR (jobs.state = 'dispatched' AND v.ago IS NOT NULL)) AND jobs.worker_id = %(w)s "
    "AND EXISTS (SELECT 1 FROM workers w WHERE w.id = %(w)s AND w.state = 'active' "
    "AND w.lease_expires_at >= {now}) "
    "RETURNING jobs.id, jobs.attempt, jobs.state, jobs.graph_id, jobs.routing, "
    "jobs.schedule_name), "
    "a AS (UPDATE attempts SET state = v.state, "
    "started_at = COALESCE(attempts.started_at, {now} - COALESCE(v.ago, 0)), "
    "finished_at = {now}, exit_code = v.code, result = v.res, error = v.err, "
    "stdout_tail = v.out, stderr_tail = v.errt FROM done JOIN v ON v.id = done.id "
    "AND v.attempt = done.attempt WHERE attempts.job_id = done.id "
    "AND attempts.attempt = done.attempt) "
    "SELECT * FROM done")
_ATTEMPT_START = (
    "WITH v(job, attempt, started) AS ({rows}) "
    "UPDATE attempts SET state = 'running', started_at = v.started FROM v "
    "WHERE {key} attempts.job_id = v.job AND attempts.attempt = v.attempt")
_ATTEMPT_START_TYPES = ("bigint", "integer", "double precision")
_ATTEMPT_END = (
    "WITH v(job, attempt, state, ago, code, res, err, out, errt) AS ({rows}) "
    "UPDATE attempts SET state = v.state, "
    "started_at = COALESCE(attempts.started_at, {now} - v.ago), finished_at = {now}, "
    "exit_code = v.code, result = v.res, error = v.err, stdout_tail = v.out, "
    "stderr_tail = v.errt FROM v "
    "WHERE {key} attempts.job_id = v.job AND attempts.attempt = v.attempt")
_ATTEMPT_END_TYPES = ("bigint", "integer", "text", "double precision", "integer", "text",
                      "text", "text", "text")
_ACTIVE_HERE = ("SELECT id, attempt, state FROM jobs "
                "WHERE worker_id = ? AND state IN ('dispatched', 'running')")
_DETAILS = ("SELECT j.id, j.attempt, j.type, j.args, j.timeout, j.graph_id, j.label, j.cost, "
            "j.priority, tt.handler FROM jobs j JOIN task_types tt ON tt.name = j.type "
            "WHERE {which} AND j.state = 'dispatched' AND j.worker_id = ?")

# PostgreSQL: the active rows of this worker, with the details of the new ones only
# (args may be large), in one statement.
_MINE_PG = (
    "SELECT j.id, j.attempt, tt.handler, j.type, "
    "CASE WHEN tt.name IS NULL THEN NULL ELSE j.args END, j.timeout, j.graph_id, j.label, "
    "j.cost, j.priority FROM jobs j LEFT JOIN task_types tt ON tt.name = j.type "
    "AND j.state = 'dispatched' AND (j.id || ':' || j.attempt) <> ALL(%(known)s::text[]) "
    "WHERE j.worker_id = %(w)s AND j.state IN ('dispatched', 'running')")


@dataclass(frozen=True)
class Assignment:
    """What is placed on a worker: the jobs it did not know yet, and (``active``, when
    looked up) every attempt dispatched to or running on it — any other attempt it
    holds is stale (canceled, timed out or fenced) and must stop."""

    jobs: list[ClaimedJob]
    active: frozenset[Key] | None = None


@dataclass
class BatchReport:
    """What one :meth:`BatchMixin.record_attempts` call did."""

    accepted: list[bool] = field(default_factory=list)
    """Per ended attempt, in order: True if the end was recorded (False: fenced off)."""
    started: int = 0
    assignment: Assignment = field(default_factory=lambda: Assignment([]))
    """New jobs for this worker: those its own cycle placed here, or with ``fetch``
    every new one and the active set."""
    cycle: object = None
    """What ``place`` returned, or None when another process held the cycle lock."""


class BatchMixin(CycleStore, ResultsMixin):
    def record_attempts(
        self,
        worker_id: int,
        started: Sequence[Started] = (),
        ended: Sequence[Outcome] = (),
        *,
        prefetch: int | None = None,
        place: Placer | None = None,
        fetch: bool = False,
        known: Collection[Key] = (),
    ) -> BatchReport:
        """In one transaction: record ``started`` attempts (dispatched → running), then
        ``ended`` ones (running → their end, or pending again when a retry is due),
        set the worker's prefetch window, run ``place`` under the cycle lock if it is
        free, and return the jobs it placed on this worker — with ``fetch``, every job
        dispatched here and not in ``known``, and the active set. Reports from an
        attempt that is not the job's current one on this worker under a valid lease
        change nothing."""
        for o in ended:
            if o.state not in _ENDS:
                raise InvalidInput(f"outcome of job {o.job_id}: unknown state {o.state!r}")
        report = BatchReport()
        ending = {(o.job_id, o.attempt) for o in ended}
        ago = {(s.job_id, s.attempt): max(0.0, s.ago) for s in started
               if (s.job_id, s.attempt) in ending}
        with self._tx() as conn:
            self._defer_graph_writes(conn)
            raw = Raw(conn)
            for starts in chunks([s for s in started if (s.job_id, s.attempt) not in ago]):
                report.started += len(self._start(conn, raw, worker_id, starts))
            accepted: set[Key] = set()
            for ends in chunks(ended):
                accepted |= self._end(conn, raw, worker_id, ends, ago)
            report.started += len(accepted & ago.keys())
            report.accepted = [(o.job_id, o.attempt) in accepted for o in ended]
            if prefetch is not None:
                raw.run("UPDATE workers SET prefetch = ? WHERE id = ?", (prefetch, worker_id))
            placed_here: list[int] = []
            carried: list[str] = []
            if place is not None:
                with self.cycle(conn) as tx:
                    if tx is not None:
                        tx.quiet.add(f"worker.{worker_id}")  # we take those below: no self wake-up
                        report.cycle = place(tx)
                        placed_here = tx.dispatched.get(worker_id, [])
                        carried = tx.carried.get(worker_id, [])
            if accepted and (place is None or report.cycle is None):
                self._notify(conn, ["scheduler"])  # freed capacity: someone must place
            if fetch:
                report.assignment = self._fetch_mine(conn, worker_id, known, FETCH_LIMIT)
            elif placed_here:
                report.assignment = Assignment(self.jobs_in_wakeups(carried) or
                                               self._details(conn, worker_id, placed_here))
        return report

    @staticmethod
    def jobs_in_wakeups(payloads: Sequence[str]) -> list[ClaimedJob] | None:
        """The jobs wake-ups carry (PostgreSQL: see cycle_pg.DISPATCH), in placement
        order; None when one carries none (an empty payload: a cancel, jobs that need
        more than their row, too many jobs) or there is none: the worker must look."""
        jobs: list[ClaimedJob] = []
        try:
            for payload in payloads:
                if not payload:
                    return None
                jobs += [ClaimedJob(job_id=int(job), attempt=int(attempt), type=type_,
                                    handler=handler, args=loads(args), timeout=timeout,
                                    graph_id=graph, label=label, cost=int(cost),
                                    priority=int(priority))
                         for job, attempt, handler, type_, args, timeout, graph, label, cost,
                         priority in loads(payload)]
        except (ValueError, TypeError):
            return None
        jobs.sort(key=lambda j: (-j.priority, j.job_id))
        return jobs or None

    def fetch_dispatched(self, worker_id: int, known: Collection[Key] = (),
                         limit: int = FETCH_LIMIT) -> Assignment:
        """What is placed on this worker: jobs dispatched to it and not in ``known``
        (read only; the worker records each start with :meth:`record_attempts`). A job's
        details are written once, before its dispatch: no shared snapshot is needed."""
        with self._read_each() as conn:
            return self._fetch_mine(conn, worker_id, known, limit)

    def _start(self, conn: Connection, raw: Raw, worker_id: int,
               part: Sequence[Started]) -> set[Key]:
        """Dispatched → running for the attempts of ``part`` that are current here;
        returns those (job, attempt) pairs."""
        rows = raw.rows(_START, [(s.job_id, s.attempt, max(0.0, s.ago)) for s in part],
                        _START_TYPES, (worker_id, worker_id), key="jobs.id")
        if not rows:
            return set()
        raw.rows(_ATTEMPT_START, [(job, attempt, started_at)
                                  for job, attempt, started_at, _, _ in rows],
                 _ATTEMPT_START_TYPES, key="attempts.job_id")
        self._events(conn, (
            ("job-running", job_key(graph, routing),
             f'{{"job_id":{job},"attempt":{attempt},"worker_id":{worker_id}}}', job, graph)
            for job, attempt, _, graph, routing in rows))
        self._graph_progress(conn, (graph for _, _, _, graph, _ in rows if graph is not None))
        return {(job, attempt) for job, attempt, _, _, _ in rows}

    def _end(self, conn: Connection, raw: Raw, worker_id: int, part: Sequence[Outcome],
             ago: dict[Key, float]) -> set[Key]:
        """Running (or, with its start in ``ago``, dispatched) → the reported end, or
        pending when a retry is due; returns the (job, attempt) pairs accepted."""
        failing = [o.job_id for o in part if o.state != AttemptState.SUCCEEDED]
        policies = self._retry_policies(conn, failing) if failing else {}
        values: list[tuple[Any, ...]] = []
        for o in part:
            end = _ENDS[AttemptState(o.state)]
            delay = None
            if end in (JobState.FAILED, JobState.ERROR) and o.job_id in policies:
                policy, failed = policies[o.job_id]
                decision = decide_retry(policy, failed + 1, random.random())
                delay = decision.delay if decision.retry else None
            values.append((o.job_id, o.attempt, end.value, o.exit_code,
                           None if o.result is None else dumps(o.result), o.error, delay,
                           ago.get((o.job_id, o.attempt))))
        if not raw.sqlite:
            rows = raw.pg(_END_PG, {
                "rows": raw.json_rows([(*v, o.stdout_tail, o.stderr_tail)
                                       for v, o in zip(values, part, strict=True)]),
                "ids": raw.id_array([o.job_id for o in part]), "w": worker_id})
            done = {(r[0], r[1]): r for r in rows}
            mine = [o for o in part if (o.job_id, o.attempt) in done]
        else:
            rows = raw.rows(_END, values, _END_TYPES, (worker_id, worker_id), key="jobs.id")
            done = {(r[0], r[1]): r for r in rows}
            mine = [o for o in part if (o.job_id, o.attempt) in done]
            raw.rows(_ATTEMPT_END, [
                (o.job_id, o.attempt, o.state, ago.get((o.job_id, o.attempt), 0.0),
                 o.exit_code, None if o.result is None else dumps(o.result), o.error,
                 o.stdout_tail, o.stderr_tail) for o in mine], _ATTEMPT_END_TYPES,
                key="attempts.job_id")
        if not rows:
            return set()
        events: list[Event] = []
        ended: list[Ended] = []
        for o in mine:
            _, _, state, graph, routing, schedule = done[(o.job_id, o.attempt)]
            if (o.job_id, o.attempt) in ago:
                events.append(("job-running", job_key(graph, routing),
                               f'{{"job_id":{o.job_id},"attempt":{o.attempt},'
                               f'"worker_id":{worker_id}}}', o.job_id, graph))
            end = _ENDS[AttemptState(o.state)]
            retry = state == JobState.PENDING
            events.append((_TOPIC[end], job_key(graph, routing),
                           f'{{"job_id":{o.job_id},"attempt":{o.attempt},"state":"{o.state}",'
                           f'"retry":{"true" if retry else "false"}}}', o.job_id, graph))
            if not retry:
                ended.append(Ended(o.job_id, end, graph, schedule or ""))
        self._events(conn, events)
        if ended:
            self._jobs_ended(conn, ended)
        return set(done)

    def _fetch_mine(self, conn: Connection, worker_id: int, known: Collection[Key],
                    limit: int) -> Assignment:
        if not self.sqlite:  # one round trip: on a worker's wake-up path
            rows = Raw(conn).pg(_MINE_PG, {"w": worker_id,
                                           "known": [f"{j}:{a}" for j, a in known]})
            fresh = sorted(((job, attempt, type_, args, timeout, graph, label, cost, prio,
                             handler) for job, attempt, handler, type_, args, timeout, graph,
                            label, cost, prio in rows if handler is not None),
                           key=lambda r: (-r[8], r[0]))
            return Assignment(self._claimed(conn, fresh[:limit]),
                              frozenset((r[0], r[1]) for r in rows))
        # Two steps: the active rows of this worker through its partial index (a few
        # ids), then the details of the new ones only (args may be large).
        active = Raw(conn).all(_ACTIVE_HERE, (worker_id,))
        current = frozenset((job, attempt) for job, attempt, _ in active)
        new = [job for job, attempt, state in active
               if state == JobState.DISPATCHED and (job, attempt) not in known]
        return Assignment(self._details(conn, worker_id, new)[:limit], current)

    def _details(self, conn: Connection, worker_id: int, ids: Sequence[int]) -> list[ClaimedJob]:
        """What the worker needs to run each job dispatched to it among ``ids``, in
        placement order."""
        if not ids:
            return []
        raw = Raw(conn)
        rows: list[tuple[Any, ...]] = []
        for part in chunks(list(ids)):
            which, params = raw.member("j.id", part)
            rows += raw.all(_DETAILS.replace("{which}", which), (*params, worker_id))
        rows.sort(key=lambda r: (-r[8], r[0]))
        return self._claimed(conn, rows)

    def _claimed(self, conn: Connection, rows: Iterable[tuple[Any, ...]]) -> list[ClaimedJob]:
        """Args with ``$result`` substituted, and the results of stages that earlier
        attempts finished."""
        jobs = [_Row(*r) for r in rows]
        results = self._upstream_results(conn, jobs)
        stages = self._finished_stages(conn, [(j.id, j.attempt) for j in jobs if j.attempt > 1])
        return [
            ClaimedJob(
                job_id=j.id, attempt=j.attempt, type=j.type, handler=j.handler,
                args=_substituted(j, results), timeout=j.timeout, graph_id=j.graph_id,
                label=j.label, stages=stages.get(j.id, {}), cost=j.cost, priority=j.priority,
            )
            for j in jobs
        ]


@dataclass(frozen=True, slots=True)
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


def _substituted(row: _Row, results: dict[int, dict[str, Any]]) -> dict[str, Any]:
    args: dict[str, Any] = loads(row.args)
    if row.graph_id in results:
        return dict(substitute_results(args, results[row.graph_id]))
    return args
