"""``job retry``: run a job that ended in failure once more, and undo what its failure
caused — its dependents that ended dependency_failed or skipped wait again, and its
graph, blocked by it, runs again (TaskCluster: a task-graph is only blocked for as long
as a failed task stays failed)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, ClassVar

from taskyard.core.edges import EdgeOutcome, edge_outcome, failure_is_handled, reopened
from taskyard.core.retry import RetryPolicy
from taskyard.core.states import FAILURES, TERMINAL, JobState
from taskyard.model.errors import Conflict, NotFound
from taskyard.model.records import JobRecord
from taskyard.store.driver.params import ReopenJob
from taskyard.store.transitions.dependents import chunks
from taskyard.store.transitions.events import graph_changed, job_pending

if TYPE_CHECKING:
    from taskyard.store.unit import Tx



class Retries:
    """Retry policies, and running a failed job once more, in one transaction."""

    READS: ClassVar[frozenset[str]] = frozenset()
    """Methods a call through the store (``store.retries.<method>``) runs in a read
    transaction; the others run in a write transaction (:class:`taskyard.store.store.OneShot`)."""

    def __init__(self, tx: Tx) -> None:
        self.tx = tx

    def policies(self, job_ids: list[int]) -> dict[int, tuple[RetryPolicy, int]]:
        """Per job: its retry policy and how many times its handler failed before (the
        attempts that ended failed or error; lost ones are the worker's, not its)."""
        found: dict[int, tuple[RetryPolicy, int]] = {}
        for part in chunks(job_ids):
            for job, retries, delay, backoff, cap, failed in self.tx.driver.retry_policies(
                    self.tx.raw, part):
                found[job] = (RetryPolicy(retries, delay, backoff, cap), int(failed))
        return found

    def retry(self, job_id: int) -> JobRecord:
        """Run a job that failed, errored or was canceled once more (one more attempt;
        its retries are then spent). A dependency_failed job is refused: retry the job
        it depends on, which reopens it."""
        driver, raw = self.tx.driver, self.tx.raw
        row = driver.read_job_state(raw, job_id)
        if row is None:
            raise NotFound(f"no job {job_id}")
        state, _, graph_id, routing = row
        state = JobState(state)
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
        new = JobState.WAITING if unmet else JobState.PENDING
        if not driver.reset_job(raw, ReopenJob(job_id, new.value, unmet, was=state.value),
                                driver.count_failures(raw, job_id)):
            raise Conflict(f"job {job_id} changed state while retrying; try again")
        again = self._reopen_dependents([job_id])
        if new is JobState.PENDING:
            self.tx.events.append([job_pending(job_id, graph_id, routing, retry="manual")])
        self._reopen_graphs([(job_id, graph_id), *again])
        self.tx.notify("scheduler")
        record = self.tx.jobs.get(job_id)
        assert record is not None
        return record

    def _parent_outcomes(self, job_id: int,
                         reopening: set[int]) -> list[tuple[int, EdgeOutcome | None]]:
        """Per parent edge of the job: the parent and the edge's outcome (None while the
        parent has not ended, or runs again)."""
        return [
            (p, None if p in reopening or JobState(s) not in TERMINAL
             else edge_outcome(JobState(s), condition))
            for p, condition, s in self.tx.driver.parent_edges(self.tx.raw, job_id)
        ]

    def _reopen_dependents(self, roots: Sequence[int]) -> list[tuple[int, int | None]]:
        """Dependents (transitively) that ended dependency_failed or skipped and whose
        edges can all hold again: back to waiting (or pending). Returns (id, graph)."""
        driver, raw = self.tx.driver, self.tx.raw
        reopening = set(roots)
        frontier = list(roots)
        done: list[tuple[int, int | None]] = []
        while frontier:
            children = driver.undone_children(raw, frontier)
            frontier = []
            for child, graph_id, routing, convergence in children:
                outcomes = [o for _, o in self._parent_outcomes(child, reopening)]
                decision = reopened(convergence, outcomes)
                if decision is None:
                    continue  # another of its edges still cannot hold
                state, unmet, fails = decision
                driver.reopen_child(raw, ReopenJob(child, state.value, unmet, fails=fails))
                if state is JobState.PENDING:
                    self.tx.events.append([job_pending(child, graph_id, routing)])
                reopening.add(child)
                frontier.append(child)
                done.append((child, graph_id))
        return done

    def _reopen_graphs(self, jobs: Sequence[tuple[int, int | None]]) -> None:
        """Jobs of a graph run again: they are no longer done, and a graph blocked by
        them runs again unless another unhandled failure still blocks it."""
        driver, raw = self.tx.driver, self.tx.raw
        per_graph: dict[int, int] = {}
        for _, graph_id in jobs:
            if graph_id is not None:
                per_graph[graph_id] = per_graph.get(graph_id, 0) + 1
        for graph_id, count in sorted(per_graph.items()):
            graph = driver.uncount_done(raw, graph_id, count)
            if graph is None or graph[0] not in ("blocked", "finished"):
                continue
            if graph[0] == "blocked" and self._still_blocked(graph_id):
                continue
            driver.run_graph_again(raw, graph_id)
            self.tx.events.append([graph_changed(graph_id, "running", graph[1],
                                                 reason="retry")])

    def _still_blocked(self, graph_id: int) -> bool:
        handlers: dict[tuple[int, str], set[str]] = {}
        for job_id, state, condition in self.tx.driver.failed_jobs_of(self.tx.raw, graph_id):
            conditions = handlers.setdefault((job_id, state), set())
            if condition is not None:
                conditions.add(condition)
        return any(not failure_is_handled(JobState(state), conditions)
                   for (_, state), conditions in handlers.items())
