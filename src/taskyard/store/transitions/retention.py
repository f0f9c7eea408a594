"""Retention: delete old finished work in bounded batches so tables do not grow forever.

Each batch is a transaction of its own (a long delete would hold its locks for long),
so pruning is an operation on the store, not on one unit of work."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from sqlalchemy import and_, delete, exists, select

from taskyard.core.states import TERMINAL
from taskyard.store import schema as t
from taskyard.store.sql import lits

if TYPE_CHECKING:
    from taskyard.store.store import Store

_J, _D, _G, _E = t.jobs, t.dependencies, t.graphs, t.events


@dataclass
class PruneReport:
    jobs: int = 0
    graphs: int = 0
    events: int = 0

    def to_json(self) -> dict[str, int]:
        return {"jobs": self.jobs, "graphs": self.graphs, "events": self.events}


def prune(store: Store, older_than: float, *, batch: int = 10_000, dry_run: bool = False,
          max_batches: int = 1000) -> PruneReport:
    """Delete jobs that ended more than ``older_than`` seconds ago (with their attempts,
    stages and edges), graphs whose jobs are all gone, and older events.

    A finished job still required by an unfinished one is kept, and so is every job of
    a graph that is still running or blocked (it may get new tasks or be retried).
    """
    report = PruneReport()
    cutoff = store.now_expr - older_than
    child = _J.alias("child")
    live_dependent = exists().where(
        _D.c.requires_id == _J.c.id, child.c.id == _D.c.job_id,
        child.c.state.not_in(lits(TERMINAL)))
    live_graph = exists().where(_G.c.id == _J.c.graph_id,
                                _G.c.state.in_(("running", "blocked")))
    old_jobs = (select(_J.c.id)
                .where(_J.c.state.in_(lits(TERMINAL)), _J.c.finished_at < cutoff,
                       ~live_dependent, ~live_graph)
                .limit(batch))
    old_events = select(_E.c.id).where(_E.c.created_at < cutoff).limit(batch)
    empty_graphs = select(_G.c.id).where(
        _G.c.state.in_(("finished", "canceled")), _G.c.finished_at < cutoff,
        ~exists().where(_J.c.graph_id == _G.c.id)).limit(batch)
    for _ in range(max_batches):
        with store.write() as tx:
            conn = tx.conn
            ids = list(conn.execute(old_jobs).scalars())
            events = list(conn.execute(old_events).scalars())
            if dry_run:
                report.jobs, report.events = len(ids), len(events)
                return report
            if ids:
                # Edges pointing at these jobs from finished dependents go too.
                conn.execute(delete(_D).where(_D.c.requires_id.in_(ids)))
                conn.execute(delete(t.attempts).where(t.attempts.c.job_id.in_(ids)))
                conn.execute(delete(t.stages).where(t.stages.c.job_id.in_(ids)))
                conn.execute(delete(_D).where(_D.c.job_id.in_(ids)))
                conn.execute(delete(_J).where(_J.c.id.in_(ids)))
            if events:
                conn.execute(delete(_E).where(_E.c.id.in_(events)))
            report.jobs += len(ids)
            report.events += len(events)
        if len(ids) < batch and len(events) < batch:
            break
    with store.write() as tx:
        conn = tx.conn
        graphs = list(conn.execute(empty_graphs).scalars())
        if graphs:
            conn.execute(delete(_G).where(and_(_G.c.id.in_(graphs))))
        report.graphs = len(graphs)
    return report
