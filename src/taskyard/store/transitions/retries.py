"""``job retry``: run a job that ended in failure once more, and undo what its failure
caused — its dependents that ended dependency_failed or skipped wait again, and its
graph, blocked by it, runs again (TaskCluster: a task-graph is only blocked for as long
as a failed task stays failed)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from sqlalchemy import func, select, update

from taskyard.core.edges import EdgeOutcome, edge_outcome, failure_is_handled, reopened
from taskyard.core.retry import RetryPolicy
from taskyard.core.states import FAILURES, TERMINAL, JobState
from taskyard.core.waits import ready_state
from taskyard.model.errors import Conflict, NotFound
from taskyard.model.records import JobRecord
from taskyard.store import schema as t
from taskyard.store.transitions.dependents import chunks
from taskyard.store.transitions.events import graph_changed, job_pending

if TYPE_CHECKING:
    from taskyard.store.unit import Tx

_J, _D, _A, _G = t.jobs, t.dependencies, t.attempts, t.graphs
_UNDONE = (JobState.DEPENDENCY_FAILED, JobState.SKIPPED)


class Retries:
    """Retry policies, and running a failed job once more, in one transaction."""

    def __init__(self, tx: Tx) -> None:
        self.tx = tx

    def policies(self, job_ids: list[int]) -> dict[int, tuple[RetryPolicy, int]]:
        """Per job: its retry policy and how many times its handler failed before (the
        attempts that ended failed or error; lost ones are the worker's, not its)."""
        found: dict[int, tuple[RetryPolicy, int]] = {}
        raw = self.tx.raw
        for part in chunks(job_ids):
            which, params = raw.member("j.id", part)
            for job, retries, delay, backoff, cap, failed in raw.all(
                "SELECT j.id, j.retries, j.retry_delay, j.retry_backoff, j.retry_max_delay, "
                "(SELECT COUNT(*) FROM attempts a WHERE a.job_id = j.id "
                "AND a.state IN ('failed', 'error')) FROM jobs j "
                f"WHERE {which}", params):
                found[job] = (RetryPolicy(retries, delay, backoff, cap), int(failed))
        return found

    def retry(self, job_id: int) -> JobRecord:
        """Run a job that failed, errored or was canceled once more (one more attempt;
        its retries are then spent). A dependency_failed job is refused: retry the job
        it depends on, which reopens it."""
        conn = self.tx.conn
        row = conn.execute(select(_J.c.state, _J.c.graph_id, _J.c.routing,
                                  _J.c.convergence, _J.c.kind).where(_J.c.id == job_id)).first()
        if row is None:
            raise NotFound(f"no job {job_id}")
        state = JobState(row.state)
        if state not in FAILURES:
            raise Conflict(f"job {job_id} is {state}; only a failed, errored, canceled "
                           "or dependency_failed job can be retried")
        outcomes = self._parent_outcomes(job_id, reopening=set())
        blockers = [p for p, o in outcomes if o in (EdgeOutcome.FAIL, EdgeOutcome.SKIP)]
        if blockers:
            raise Conflict(f"job {job_id} depends on job(s) "
                           f"{', '.join(map(str, sorted(blockers)))}, which did not end as "
                           "its edges need; retry those instead")
        unmet = sum(1 for _, o in outcomes if o is None)
        failures = conn.execute(select(func.count()).select_from(_A).where(
            _A.c.job_id == job_id, _A.c.state.in_(("failed", "error")))).scalar_one()
        new = JobState.WAITING if unmet else ready_state(row.kind)
        changed = conn.execute(
            update(_J).where(_J.c.id == job_id, _J.c.state == state)
            .values(state=new, retries=failures, run_after=None, finished_at=None,
                    result=None, exit_code=None, error=None, cancel_requested=False,
                    unmet_deps=unmet, dep_failures=0)
        ).rowcount
        if not changed:
            raise Conflict(f"job {job_id} changed state while retrying; try again")
        again = self._reopen_dependents([job_id])
        if new is JobState.PENDING:
            self.tx.events.append([job_pending(job_id, row.graph_id, row.routing,
                                               retry="manual")])
        self._reopen_graphs([(job_id, row.graph_id), *again])
        # An approval, a wait or a sleep awaits again: its timeout starts over, and only
        # a signal sent from now on completes a wait (the first one did, or timed out).
        self._awaiting([job_id] if new is JobState.AWAITING else [], anew=True)
        self.tx.notify("scheduler")
        record = self.tx.jobs.get(job_id)
        assert record is not None
        return record

    def _parent_outcomes(self, job_id: int,
                         reopening: set[int]) -> list[tuple[int, EdgeOutcome | None]]:
        """Per parent edge of the job: the parent and the edge's outcome (None while the
        parent has not ended, or runs again)."""
        conn = self.tx.conn
        parent = _J.alias("parent")
        rows = conn.execute(
            select(_D.c.requires_id, _D.c.condition, parent.c.state)
            .select_from(_D.join(parent, parent.c.id == _D.c.requires_id))
            .where(_D.c.job_id == job_id)
        ).all()
        return [
            (p, None if p in reopening or JobState(s) not in TERMINAL
             else edge_outcome(JobState(s), condition))
            for p, condition, s in rows
        ]

    def _reopen_dependents(self, roots: Sequence[int]) -> list[tuple[int, int | None]]:
        """Dependents (transitively) that ended dependency_failed or skipped and whose
        edges can all hold again: back to waiting (or pending). Returns (id, graph)."""
        conn = self.tx.conn
        reopening = set(roots)
        frontier = list(roots)
        done: list[tuple[int, int | None]] = []
        awaiting: list[int] = []
        while frontier:
            children = conn.execute(
                select(_J.c.id, _J.c.graph_id, _J.c.routing, _J.c.convergence,
                       _J.c.kind).distinct()
                .select_from(_D.join(_J, _J.c.id == _D.c.job_id))
                .where(_D.c.requires_id.in_(frontier), _J.c.state.in_(_UNDONE))
            ).all()
            frontier = []
            for child in children:
                outcomes = [o for _, o in self._parent_outcomes(child.id, reopening)]
                decision = reopened(child.convergence, outcomes)
                if decision is None:
                    continue  # another of its edges still cannot hold
                state, unmet, fails = decision
                if state is JobState.PENDING:
                    state = ready_state(child.kind)
                conn.execute(
                    update(_J).where(_J.c.id == child.id, _J.c.state.in_(_UNDONE))
                    .values(state=state, unmet_deps=unmet, dep_failures=fails,
                            finished_at=None, error=None)
                )
                if state is JobState.PENDING:
                    self.tx.events.append([job_pending(child.id, child.graph_id, child.routing)])
                elif state is JobState.AWAITING:
                    awaiting.append(child.id)
                reopening.add(child.id)
                frontier.append(child.id)
                done.append((child.id, child.graph_id))
        self._awaiting(awaiting, anew=False)
        return done

    def _awaiting(self, ids: Sequence[int], *, anew: bool) -> None:
        """Jobs that await again (see Waits.started); a wait whose signal came ends now."""
        if ids:
            ended = self.tx.waits.started(ids, anew=anew)
            if ended:
                self.tx.resolution.jobs_ended(ended)

    def _reopen_graphs(self, jobs: Sequence[tuple[int, int | None]]) -> None:
        """Jobs of a graph run again: they are no longer done, and a graph blocked by
        them runs again unless another unhandled failure still blocks it."""
        conn = self.tx.conn
        per_graph: dict[int, int] = {}
        for _, graph_id in jobs:
            if graph_id is not None:
                per_graph[graph_id] = per_graph.get(graph_id, 0) + 1
        for graph_id, count in sorted(per_graph.items()):
            graph = conn.execute(
                update(_G).where(_G.c.id == graph_id)
                .values(jobs_done=_G.c.jobs_done - count, stalled_at=None,
                        last_progress_at=self.tx.now)
                .returning(_G.c.state, _G.c.routing)
            ).first()
            if graph is None or graph.state not in ("blocked", "finished"):
                continue
            if graph.state == "blocked" and self._still_blocked(graph_id):
                continue
            conn.execute(update(_G).where(_G.c.id == graph_id)
                         .values(state="running", finished_at=None))
            self.tx.events.append([graph_changed(graph_id, "running", graph.routing,
                                                 reason="retry")])

    def _still_blocked(self, graph_id: int) -> bool:
        conn = self.tx.conn
        failed = conn.execute(
            select(_J.c.id, _J.c.state).where(
                _J.c.graph_id == graph_id,
                _J.c.state.in_((JobState.FAILED, JobState.ERROR, JobState.CANCELED)))
        ).all()
        for job_id, state in failed:
            handlers = set(conn.execute(
                select(_D.c.condition).where(_D.c.requires_id == job_id)).scalars())
            if not failure_is_handled(JobState(state), handlers):
                return True
        return False
