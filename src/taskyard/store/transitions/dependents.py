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
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypeVar

from sqlalchemy import ColumnElement, select, true, update

from taskyard.core.edges import EdgeOutcome, decide_dependent, edge_outcome, failure_is_handled
from taskyard.core.states import FAILURES, TERMINAL, JobState
from taskyard.model.records import JSON
from taskyard.store import schema as t
from taskyard.store.transitions.events import graph_changed, job_pending

if TYPE_CHECKING:
    from taskyard.store.unit import Tx

CHUNK = 500
T = TypeVar("T")
_J, _D, _G = t.jobs, t.dependencies, t.graphs
_WHY = {
    JobState.DEPENDENCY_FAILED: "a job it requires did not succeed",
    JobState.SKIPPED: "its edge conditions can no longer hold",
}


def _still_waiting() -> ColumnElement[bool]:
    """``state = 'waiting'``, written (``IS TRUE``, as the cycle's DISPATCH) so that no
    index on ``state`` can serve it: the statements that use it name their rows by id,
    and the primary key is always the plan. Without statistics (a graph just
    bulk-inserted, before autovacuum's ANALYZE), PostgreSQL took a state index and read
    every waiting job for each 500-id chunk: releasing the 100,000 children of a
    fan-out's root took 28 s."""
    return (_J.c.state == JobState.WAITING.value).is_(true())


_STILL_WAITING_SQL = "(state = 'waiting') IS TRUE"
""":func:`_still_waiting` for :class:`Cursor` statements."""


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


@dataclass
class _Tally:
    resolved: int = 0
    holds: int = 0
    skips: int = 0
    fails: int = 0


class Resolution:
    """What jobs' ends mean for their dependents and graphs, in one transaction."""

    def __init__(self, tx: Tx) -> None:
        self.tx = tx
        self._later: _GraphWork | None = None
        """Graph writes deferred to the end of the transaction (see defer_graph_writes)."""

    def jobs_ended(self, ended: Sequence[Ended]) -> list[Ended]:
        """Resolve dependents of ``ended`` (transitively) and update their graphs.

        Returns every job that ended, including dependents that ended as a result.
        """
        everything = list(ended)
        frontier = list(ended)
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
        raw = self.tx.raw
        which, params = raw.member("id", graphs)
        raw.run(f"UPDATE graphs SET last_progress_at = {{now}}, stalled_at = NULL "
                f"WHERE {which}", params)

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

    def propagate(self, parents: Sequence[Ended], only: set[int] | None = None) -> list[Ended]:
        """Apply the parents' outcomes to their waiting dependents; return those that ended."""
        tallies = self._tallies(parents, only)
        if not tallies:
            return []
        raw = self.tx.raw
        # The children's counters as they are now, locked as the UPDATE below would lock
        # them: a concurrent completion of another of their parents waits for our
        # commit (or we for its, and read what it wrote). SQLite's write transactions
        # run one at a time. Then one UPDATE per group of equal changes sets counters
        # and state together: one write per child, not one for the counters and a
        # second for its new state.
        groups: dict[tuple[JobState | None, int, int], list[int]] = defaultdict(list)
        lock = self.tx.driver.row_lock
        for part in chunks(sorted(tallies)):
            which, params = raw.member("id", part)
            for job_id, unmet, failures, convergence in raw.all(
                    "SELECT id, unmet_deps, dep_failures, convergence FROM jobs "
                    f"WHERE {which} AND {_STILL_WAITING_SQL}{lock}", params):
                tally = tallies[job_id]
                new = decide_dependent(convergence, tally.holds, tally.skips, tally.fails,
                                       unmet_after=unmet - tally.resolved,
                                       failures_after=failures + tally.fails)
                groups[(new, tally.resolved, tally.fails)].append(job_id)
        ended: list[Ended] = []
        for (state, resolved, fails), ids in groups.items():
            values: dict[str, object] = {"unmet_deps": _J.c.unmet_deps - resolved,
                                         "dep_failures": _J.c.dep_failures + fails}
            if state in TERMINAL:
                values.update(state=state, finished_at=self.tx.now, error=_WHY.get(state))
            elif state is not None:
                # Pending with edges still open (convergence 'any'): satisfy the
                # waiting-has-deps invariant by clearing the counter.
                values.update(state=state, unmet_deps=0)
            for part in chunks(ids):
                statement = update(_J).where(self.tx.driver.ids_in(_J.c.id, part),
                                             _still_waiting())
                if state is None:
                    self.tx.conn.execute(statement.values(**values))
                    continue
                rows = self.tx.conn.execute(
                    statement.values(**values).returning(_J.c.id, _J.c.graph_id, _J.c.routing)
                ).all()
                if state in TERMINAL:
                    ended.extend(Ended(job_id, state, graph_id) for job_id, graph_id, _ in rows)
                    continue
                self.tx.events.append(job_pending(job_id, graph_id, routing)
                                      for job_id, graph_id, routing in rows)
        return ended

    def _tallies(self, parents: Sequence[Ended], only: set[int] | None) -> dict[int, _Tally]:
        """Per dependent (among ``only``, if given): its edges that the parents resolve."""
        state_of = {p.job_id: p.state for p in parents}
        tallies: dict[int, _Tally] = defaultdict(_Tally)
        raw = self.tx.raw
        for part in chunks(list(state_of)):
            which, params = raw.member("requires_id", part)
            for child, parent, condition in raw.all(
                "SELECT job_id, requires_id, condition FROM dependencies "
                f"WHERE {which}", params):
                if only is not None and child not in only:
                    continue
                tally = tallies[child]
                tally.resolved += 1
                outcome = edge_outcome(state_of[parent], condition)
                tally.holds += outcome is EdgeOutcome.HOLDS
                tally.skips += outcome is EdgeOutcome.SKIP
                tally.fails += outcome is EdgeOutcome.FAIL
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
        handlers: dict[int, set[str]] = defaultdict(set)
        conn = self.tx.conn
        for part in chunks(failed):
            for parent, condition in conn.execute(
                select(_D.c.requires_id, _D.c.condition).where(_D.c.requires_id.in_(part))
            ):
                handlers[parent].add(condition)
        for graph_id, items in sorted(by_graph.items()):
            row = conn.execute(
                update(_G)
                .where(_G.c.id == graph_id)
                .values(jobs_done=_G.c.jobs_done + len(items), last_progress_at=self.tx.now,
                        stalled_at=None)
                .returning(_G.c.jobs_done, _G.c.jobs_total, _G.c.state, _G.c.routing)
            ).first()
            if row is None or row.state != "running":
                continue
            unhandled = [e.job_id for e in items if e.job_id in set(failed)
                         and not failure_is_handled(e.state, handlers[e.job_id])]
            unhandled += self._failed_from_outside(graph_id, items)
            if unhandled:
                self.set_graph_state(graph_id, "blocked", row.routing,
                                     {"failed_job_ids": unhandled})
            elif row.jobs_done >= row.jobs_total:
                self.set_graph_state(graph_id, "finished", row.routing, {})

    def _failed_from_outside(self, graph_id: int, items: Sequence[Ended]) -> list[int]:
        """Jobs of the graph that ended dependency_failed because of a job outside it (a
        prerequisite): no edge of the graph handles that failure, so it blocks it."""
        ids = [e.job_id for e in items if e.state is JobState.DEPENDENCY_FAILED]
        if not ids:
            return []
        parent = _J.alias("parent")
        rows = self.tx.conn.execute(
            select(_D.c.job_id).select_from(_D.join(parent, parent.c.id == _D.c.requires_id))
            .where(_D.c.job_id.in_(ids), parent.c.state.in_(sorted(FAILURES)),
                   parent.c.graph_id.is_distinct_from(graph_id))
        ).scalars()
        return sorted(set(rows))

    def set_graph_state(self, graph_id: int, state: str, routing: str,
                        extra: dict[str, JSON]) -> bool:
        """Move the graph to ``state`` (guarded) and announce it; False if it was not in
        a state it could leave for that one."""
        values: dict[str, object] = {"state": state}
        if state in ("finished", "canceled"):
            values["finished_at"] = self.tx.now
        sources = ("running", "blocked") if state == "canceled" else ("running",)
        changed = self.tx.conn.execute(
            update(_G).where(_G.c.id == graph_id, _G.c.state.in_(sources)).values(**values)
        ).rowcount
        if changed:
            self.tx.events.append([graph_changed(graph_id, state, routing, **extra)])
        return bool(changed)

