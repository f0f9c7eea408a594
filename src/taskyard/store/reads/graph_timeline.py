"""What a graph's timeline reads: its jobs' times (the first attempt's start), their
edges inside the graph, and the database clock — in one read transaction.

Bounded: at most ``limit`` jobs (in id order) and their edges; a larger graph is
answered in part and says so. Jobs come through ``ix_jobs_graph_label`` (graph_id
first), edges through the dependencies' primary key (job_id first), first starts
through the attempts' primary key.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from sqlalchemy import func, select

from taskyard.core.timeline import Node
from taskyard.store import schema as t

if TYPE_CHECKING:
    from taskyard.store import Store

_J, _D, _A = t.jobs, t.dependencies, t.attempts


@dataclass(frozen=True, slots=True)
class TimelineJob:
    """A job as the timeline shows it, beside its :class:`Node`."""

    node: Node
    label: str | None
    type: str
    state: str
    attempts: int


@dataclass(frozen=True, slots=True)
class GraphTimelineRows:
    jobs: list[TimelineJob]
    now: float
    truncated: bool


def read_graph_timeline(store: Store, graph_id: int, *, limit: int) -> GraphTimelineRows:
    """The first ``limit`` jobs of the graph with their times and in-graph parents."""
    first_start = (select(func.min(_A.c.started_at)).where(_A.c.job_id == _J.c.id)
                   .scalar_subquery())
    jobs_query = (select(_J.c.id, _J.c.label, _J.c.type, _J.c.state, _J.c.attempt,
                         _J.c.created_at, first_start, _J.c.finished_at)
                  .where(_J.c.graph_id == graph_id).order_by(_J.c.id).limit(limit + 1))
    parent = _J.alias("parent")
    edges_query = (select(_D.c.job_id, _D.c.requires_id)
                   .join(_J, _J.c.id == _D.c.job_id)
                   .join(parent, parent.c.id == _D.c.requires_id)
                   .where(_J.c.graph_id == graph_id, parent.c.graph_id == graph_id)
                   .order_by(_D.c.job_id, _D.c.requires_id))
    with store.read() as tx:
        conn = tx.conn
        now = float(conn.execute(select(store.now_expr)).scalar_one())
        rows = conn.execute(jobs_query).all()
        kept = {int(r[0]) for r in rows[:limit]}
        parents: dict[int, list[int]] = {}
        if kept:
            bounded = edges_query.where(_D.c.job_id <= max(kept))
            for job_id, requires_id in conn.execute(bounded):
                if job_id in kept and requires_id in kept:
                    parents.setdefault(int(job_id), []).append(int(requires_id))
    jobs = [TimelineJob(Node(int(r[0]), float(r[5]), None if r[6] is None else float(r[6]),
                             None if r[7] is None else float(r[7]),
                             tuple(parents.get(int(r[0]), ()))),
                        r[1], str(r[2]), str(r[3]), int(r[4]))
            for r in rows[:limit]]
    return GraphTimelineRows(jobs, now, len(rows) > limit)
