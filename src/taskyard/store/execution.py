"""The worker's hot path: claim dispatched jobs, complete attempts (fenced, batched)."""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

from sqlalchemy import Connection, bindparam, exists, select, update

from taskyard.core.graph import result_references, substitute_results
from taskyard.core.retry import decide_retry
from taskyard.core.states import AttemptState, JobState
from taskyard.store import schema as t
from taskyard.store.base import job_key, lit
from taskyard.store.errors import InvalidInput
from taskyard.store.records import ClaimedJob, Outcome, dumps, loads
from taskyard.store.resolution import Ended, ResolutionMixin
from taskyard.store.stages import StageMixin

_J = t.jobs
_A = t.attempts
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


class ExecutionMixin(StageMixin, ResolutionMixin):
    def claim_dispatched(self, worker_id: int, limit: int) -> list[ClaimedJob]:
        """Move up to ``limit`` jobs dispatched to this worker to running, in one transaction."""
        if limit <= 0:
            return []
        params = {"w": worker_id, "n": limit}
        if self.sqlite:
            # Listeners on SQLite wake on any commit: look before taking the write lock.
            with self._read() as conn:
                if not conn.execute(self._q("claim.any", self._claim_any), params).scalar():
                    return []
        with self._tx() as conn:
            rows = list(conn.execute(self._q("claim.update", self._claim_update), params).all())
            if not rows:
                return []
            conn.execute(self._q("claim.attempts", lambda: (
                update(_A)
                .where(_A.c.job_id == bindparam("j"), _A.c.attempt == bindparam("a"))
                .values(state=AttemptState.RUNNING, started_at=self._now)
            )), [{"j": r.id, "a": r.attempt} for r in rows])
            handlers: dict[str, str] = {
                h.name: h.handler
                for h in conn.execute(self._q("claim.handlers", lambda: (
                    select(t.task_types.c.name, t.task_types.c.handler).where(
                        t.task_types.c.name.in_(bindparam("types", expanding=True)))
                )), {"types": sorted({r.type for r in rows})})
            }
            self._events(
                conn,
                (
                    ("job-running", job_key(r.graph_id, r.routing),
                     {"job_id": r.id, "attempt": r.attempt, "worker_id": worker_id}, r.id,
                     r.graph_id)
                    for r in rows
                ),
            )
            results = self._upstream_results(conn, rows)
            stages = self._finished_stages(conn, [(r.id, r.attempt) for r in rows])
            graph_ids = sorted({r.graph_id for r in rows if r.graph_id is not None})
            if graph_ids:
                conn.execute(update(t.graphs).where(t.graphs.c.id.in_(graph_ids))
                             .values(last_progress_at=self._now, stalled_at=None))
        rows.sort(key=lambda r: r.id)
        return [
            ClaimedJob(
                job_id=r.id,
                attempt=r.attempt,
                type=r.type,
                handler=handlers[r.type],
                args=substitute_results(loads(r.args), results[r.graph_id])
                if r.graph_id in results else loads(r.args),
                timeout=r.timeout,
                graph_id=r.graph_id,
                label=r.label,
                stages=stages.get(r.id, {}),
            )
            for r in rows
        ]

    def _mine(self) -> Any:
        return (_J.c.worker_id == bindparam("w")) & (_J.c.state == lit(JobState.DISPATCHED))

    def _leased(self) -> Any:
        """The worker ``:w`` holds a valid lease (database clock): the second half of
        every fence, with the attempt number."""
        w = t.workers
        return exists().where(w.c.id == bindparam("w"), w.c.state == lit("active"),
                              w.c.lease_expires_at >= self._now)

    def _claim_any(self) -> Any:
        return select(exists().where(self._mine()) & self._leased())

    def _claim_update(self) -> Any:
        picked: Any = (select(_J.c.id).where(self._mine())
                       .order_by(_J.c.priority.desc(), _J.c.id).limit(bindparam("n")))
        if self.sqlite:
            picked = picked.scalar_subquery()
        else:
            # A materialized CTE runs once: as a plain subquery PostgreSQL may rescan the
            # LIMIT … SKIP LOCKED per row (rows it just updated are then skipped and the
            # limit no longer holds).
            cte = (picked.with_for_update(skip_locked=True).cte("picked")
                   .prefix_with("MATERIALIZED"))
            picked = select(cte.c.id)
        return (
            update(_J)
            .where(_J.c.id.in_(picked), _J.c.state == JobState.DISPATCHED, self._leased())
            .values(state=JobState.RUNNING, started_at=self._now,
                    deadline=self._now + _J.c.timeout)
            .returning(_J.c.id, _J.c.attempt, _J.c.type, _J.c.args, _J.c.timeout,
                       _J.c.graph_id, _J.c.label, _J.c.routing)
        )

    def _upstream_results(self, conn: Connection, rows: Sequence[Any]) -> dict[int, dict[str, Any]]:
        """Results of the labels that ``{$result: LABEL}`` markers name, per graph."""
        wanted: dict[int, set[str]] = {}
        for r in rows:
            if r.graph_id is not None and '"$result"' in r.args:
                wanted.setdefault(r.graph_id, set()).update(result_references(loads(r.args)))
        found: dict[int, dict[str, Any]] = {}
        for graph_id, labels in wanted.items():
            found[graph_id] = {
                label: loads(result)
                for label, result in conn.execute(
                    select(_J.c.label, _J.c.result).where(
                        _J.c.graph_id == graph_id, _J.c.label.in_(labels)
                    )
                )
            }
        return found

    def complete_attempts(self, worker_id: int, outcomes: Sequence[Outcome]) -> list[bool]:
        """End attempts in one transaction. Each is accepted only if it is the job's current
        attempt, still running on this worker; otherwise it changes nothing (False)."""
        for o in outcomes:
            if o.state not in _ENDS:
                raise InvalidInput(f"outcome of job {o.job_id}: unknown state {o.state!r}")
        if not outcomes:
            return []
        accepted: list[bool] = []
        with self._tx() as conn:
            failing = [o for o in outcomes if o.state != AttemptState.SUCCEEDED]
            policies = self._retry_policies(conn, [o.job_id for o in failing])
            ended: list[Ended] = []
            events: list[tuple[str, str, dict[str, Any], int | None, int | None]] = []
            for o in outcomes:
                end = _ENDS[AttemptState(o.state)]
                retry_after = None
                if end in (JobState.FAILED, JobState.ERROR) and o.job_id in policies:
                    decision = decide_retry(policies[o.job_id], o.attempt, random.random())
                    if decision.retry:
                        retry_after = decision.delay
                row = self._end_job(conn, worker_id, o, end, retry_after)
                accepted.append(row is not None)
                if row is None:
                    continue
                self._end_attempt(conn, o)
                payload = {"job_id": o.job_id, "attempt": o.attempt, "state": o.state,
                           "retry": retry_after is not None}
                events.append((_TOPIC[end], job_key(row.graph_id, row.routing), payload,
                               o.job_id, row.graph_id))
                if retry_after is None:
                    ended.append(Ended(o.job_id, end, row.graph_id))
            self._events(conn, events)
            if ended:
                self._jobs_ended(conn, ended)
            if any(accepted):
                self._notify(conn, ["scheduler"])
        return accepted

    def _end_job(
        self, conn: Connection, worker_id: int, o: Outcome, end: JobState,
        retry_after: float | None,
    ) -> Any:
        """The fenced transition: only the current, running attempt on this worker may end."""
        params: dict[str, Any] = {
            "jid": o.job_id, "att": o.attempt, "w": worker_id, "code": o.exit_code,
            "err": o.error, "res": None if o.result is None else dumps(o.result)}
        if retry_after is not None:
            stmt = self._q("complete.retry", lambda: self._end_job_stmt(
                state=JobState.PENDING, run_after=self._now + bindparam("delay")))
            params["delay"] = retry_after
        else:
            stmt = self._q("complete.end", lambda: self._end_job_stmt(
                state=bindparam("end"), finished_at=self._now))
            params["end"] = end.value
        return conn.execute(stmt, params).first()

    def _end_job_stmt(self, **values: Any) -> Any:
        return (
            update(_J)
            .where(_J.c.id == bindparam("jid"), _J.c.attempt == bindparam("att"),
                   _J.c.state == JobState.RUNNING, _J.c.worker_id == bindparam("w"),
                   self._leased())
            .values(worker_id=None, deadline=None, exit_code=bindparam("code"),
                    error=bindparam("err"), result=bindparam("res"), **values)
            .returning(_J.c.graph_id, _J.c.routing)
        )

    def _end_attempt(self, conn: Connection, o: Outcome) -> None:
        conn.execute(self._q("complete.attempt", lambda: (
            update(_A)
            .where(_A.c.job_id == bindparam("jid"), _A.c.attempt == bindparam("att"))
            .values(state=bindparam("st"), finished_at=self._now, exit_code=bindparam("code"),
                    result=bindparam("res"), error=bindparam("err"),
                    stdout_tail=bindparam("out"), stderr_tail=bindparam("errt"))
        )), {"jid": o.job_id, "att": o.attempt, "st": o.state, "code": o.exit_code,
             "res": None if o.result is None else dumps(o.result), "err": o.error,
             "out": o.stdout_tail, "errt": o.stderr_tail})
