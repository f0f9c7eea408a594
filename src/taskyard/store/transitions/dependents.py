"""What a job's end means for the jobs that require it (seed 003, option 3).

Each dependent keeps counters: unresolved parent edges (``unmet_deps``) and
edges that failed (``dep_failures``). When jobs end, their waiting dependents
are read and locked, :mod:`taskyard.core.edges` decides who becomes pending,
skipped or dependency_failed, and one ``UPDATE`` per group of equal changes
writes counters and state together; those that end propagate in turn, breadth
first. Cost: O(dependents) rows, each written once, in O(1) statements per
step (per 500 rows) — never a scan.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from taskyard.core.edges import EdgeOutcome, decide_dependent, edge_outcome, failure_is_handled
from taskyard.core.states import TERMINAL, JobState
from taskyard.core.waits import ready_state
from taskyard.model.records import JSON
from taskyard.store.driver.params import SetGraphState, UpdateDependents
from taskyard.store.transitions.events import graph_changed, job_pending

if TYPE_CHECKING:
    from taskyard.store.unit import Tx

CHUNK = 500
FLUSH_AT = 5_000
"""Buffered events written at once (in the transaction) while dependents are released."""
T = TypeVar("T")
_WHY = {
    JobState.DEPENDENCY_FAILED: "a job it requires did not succeed",
    JobState.SKIPPED: "its edge conditions can no longer hold",
}


def chunks(items: Sequence[T], size: int = CHUNK) -> Iterable[Sequence[T]]:
    """Consecutive slices of at most ``size`` items (bounded IN lists and batches)."""
    for start in range(0, len(items), size):
        yield items[start : start + size]


@dataclass(frozen=True, slots=True)
class Ended:
    """A job that reached a final state in the current transaction."""

    job_id: int
    state: JobState
    graph_id: int | None
    schedule: str | None = None
    """The schedule that made it; "" when known to be none, None when not looked up."""


@dataclass
class _GraphWork:
    """Graph writes left to the end of a transaction."""

    ended: list[Ended] = field(default_factory=list)
    progressed: set[int] = field(default_factory=set)


_Tally = tuple[int, int, int, int]
"""What the parents' ends do to one dependent's edges: (resolved, holds, skips, fails).
A plain tuple, one object per distinct tally (a fan-out's 100,000 members share one)."""
_NONE: _Tally = (0, 0, 0, 0)
_STEP: dict[EdgeOutcome, _Tally] = {EdgeOutcome.HOLDS: (1, 1, 0, 0),
                                    EdgeOutcome.SKIP: (1, 0, 1, 0),
                                    EdgeOutcome.FAIL: (1, 0, 0, 1)}


class Dependents:
    """What jobs' ends mean for their dependents and graphs, in one transaction."""

    def __init__(self, tx: Tx) -> None:
        self.tx = tx
        self._later: _GraphWork | None = None
        """Graph writes deferred to the end of the transaction (see defer_graph_writes)."""

    def jobs_ended(self, ended: Sequence[Ended],
                   edges: Iterator[tuple[Any, ...]] | None = None,
                   waiting: Sequence[tuple[Any, ...]] | None = None) -> list[Ended]:
        """Resolve dependents of ``ended`` (transitively) and update their graphs.
        ``edges``: the edges from ``ended`` (and maybe from other jobs), read already;
        ``waiting``: every waiting job those edges lead to, read and locked already (as
        ``lock_waiting`` reads them).

        Returns every job that ended, including dependents that ended as a result.
        """
        everything = list(ended)
        frontier = self.propagate(ended, edges=edges, waiting=waiting)
        everything.extend(frontier)
        while frontier:
            frontier = self.propagate(frontier)
            everything.extend(frontier)
        if self._later is None:
            self._graph_bookkeeping(everything)
        else:
            self._later.ended.extend(everything)
        # Schedules learn their runs' outcomes (adaptive intervals follow them).
        self.tx.schedule_runs.record_outcomes(everything)
        return everything

    def graph_progress(self, graph_ids: Iterable[int]) -> None:
        """Jobs of these graphs made progress (started): reset their stall clocks."""
        graphs = sorted(set(graph_ids))
        if not graphs:
            return
        if self._later is not None:
            self._later.progressed.update(graphs)
            return
        self.tx.driver.graphs_progressed(self.tx.raw, graphs)

    def defer_graph_writes(self) -> None:
        """In this transaction, graph writes wait for its end. A graph's row is written
        by every job of it that starts or ends, from every worker: deferred, its lock is
        held for one statement and the commit, not for the rest of the transaction (the
        scheduling cycle, ...): on PostgreSQL, workers' reports queued on it."""
        if self._later is None:
            self._later = _GraphWork()
            self.tx.before_commit(self._write_deferred)

    def _write_deferred(self) -> None:
        later, self._later = self._later, None
        assert later is not None
        self._graph_bookkeeping(later.ended)
        self.graph_progress(later.progressed - {e.graph_id for e in later.ended})

    def propagate(self, parents: Sequence[Ended], only: set[int] | None = None, *,
                  edges: Iterator[tuple[Any, ...]] | None = None,
                  waiting: Sequence[tuple[Any, ...]] | None = None) -> list[Ended]:
        """Apply the parents' outcomes to their waiting dependents; return those that ended
    (a wait released may end at once: its signal was sent already). ``edges``,
    ``waiting``: see :meth:`jobs_ended`."""
        tallies = self._tallies(parents, only, edges)
        if not tallies:
            return []
        driver, raw = self.tx.driver, self.tx.raw
        # The children's counters as they are now, locked as the update will lock them;
        # core decides each one's new state; then one update per group of equal changes
        # sets counters and state together: one write per child.
        groups: dict[tuple[JobState | None, int, int], list[int]] = defaultdict(list)
        locked = ((driver.lock_waiting(raw, part) for part in chunks(sorted(tallies)))
                  if waiting is None else ([r for r in waiting if r[0] in tallies],))
        for found in locked:
            for job_id, unmet, failures, convergence, kind in found:
                resolved, holds, skips, fails = tallies[job_id]
                new = decide_dependent(convergence, holds, skips, fails,
                                       unmet_after=unmet - resolved,
                                       failures_after=failures + fails)
                if new is JobState.PENDING:
                    new = ready_state(kind)  # an approval, a wait or a sleep: awaiting
                groups[(new, resolved, fails)].append(job_id)
        ended: list[Ended] = []
        for (state, resolved, fails), ids in groups.items():
            for part in chunks(ids):
                rows = driver.update_dependents(raw, UpdateDependents(
                    part, resolved, fails, None if state is None else state.value,
                    _WHY.get(state) if state in TERMINAL else None))
                if state in TERMINAL:
                    ended.extend(Ended(job_id, state, graph_id) for job_id, graph_id, _, _ in rows)
                elif state is JobState.AWAITING:  # a wait may find its signal sent already
                    ended.extend(self.tx.waits.started([job_id for job_id, _, _, _ in rows]))
                elif state is not None:
                    self.tx.events.append(job_pending(job_id, graph_id, routing)
                                          for job_id, graph_id, routing, _ in rows)
                    if any(delayed is not None for _, _, _, delayed in rows):
                        self.tx.notify("scheduler")  # it learns when the first is due
                    if len(self.tx.events.buffer) >= FLUSH_AT:
                        self.tx.events.flush()  # a fan-out's events, not all in memory
        return ended

    def _tallies(self, parents: Sequence[Ended], only: set[int] | None,
                 edges: Iterator[tuple[Any, ...]] | None = None) -> dict[int, _Tally]:
        """Per dependent (among ``only``, if given): its edges that the parents resolve."""
        state_of = {p.job_id: p.state for p in parents}
        tallies: dict[int, _Tally] = {}
        same: dict[_Tally, _Tally] = {}  # one object per distinct tally
        driver, raw = self.tx.driver, self.tx.raw
        reads = ((edges,) if edges is not None else
                 (driver.read_edges_from(raw, part) for part in chunks(list(state_of))))
        for read in reads:
            for child, parent, condition in read:
                if (only is not None and child not in only) or parent not in state_of:
                    continue  # read with the ends: a job retried or fenced off
                r, h, k, f = tallies.get(child, _NONE)
                dr, dh, dk, df = _STEP.get(edge_outcome(state_of[parent], condition),
                                           (1, 0, 0, 0))
                tally = (r + dr, h + dh, k + dk, f + df)
                tallies[child] = same.setdefault(tally, tally)
        return tallies

    def _graph_bookkeeping(self, ended: Sequence[Ended]) -> None:
        """Count finished jobs per graph; block a graph on an unhandled failure,
        finish it when every job ended and none blocked it."""
        by_graph: dict[int, list[Ended]] = defaultdict(list)
        for e in ended:
            if e.graph_id is not None:
                by_graph[e.graph_id].append(e)
        if not by_graph:
            return
        failed = [e.job_id for e in ended if e.graph_id is not None and e.state in (
            JobState.FAILED, JobState.ERROR, JobState.CANCELED)]
        driver, raw = self.tx.driver, self.tx.raw
        handlers: dict[int, set[str]] = defaultdict(set)
        for part in chunks(failed):
            for parent, condition in driver.edge_conditions(raw, part):
                handlers[parent].add(condition)
        for graph_id, items in sorted(by_graph.items()):
            row = driver.count_done(raw, graph_id, len(items))
            if row is None:
                continue
            jobs_done, jobs_total, state, routing = row
            if state != "running":
                continue
            unhandled = [e.job_id for e in items if e.job_id in set(failed)
                         and not failure_is_handled(e.state, handlers[e.job_id])]
            fell = [e.job_id for e in items if e.state is JobState.DEPENDENCY_FAILED]
            if fell:  # because of a job outside the graph (a prerequisite): no edge of
                # the graph handles that failure, so it blocks the graph
                unhandled += driver.failed_from_outside(raw, graph_id, fell)
            if unhandled:
                self.set_graph_state(graph_id, "blocked", routing,
                                     {"failed_job_ids": unhandled})
            elif jobs_done >= jobs_total:
                self.set_graph_state(graph_id, "finished", routing, {})

    def set_graph_state(self, graph_id: int, state: str, routing: str,
                        extra: dict[str, JSON]) -> bool:
        """Move the graph to ``state`` (guarded) and announce it; False if it was not in
        a state it could leave for that one."""
        changed = self.tx.driver.set_graph_state(self.tx.raw, SetGraphState(graph_id, state))
        if changed:
            self.tx.events.append([graph_changed(graph_id, state, routing, **extra)])
        return changed
