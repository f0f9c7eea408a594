"""``GET /api/v1/graphs/{id}/timeline``: a graph's run as a Gantt chart's data — each
job's ready, start and end times, its duration and wait, and the critical path."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Path, Query

from taskyard.api.http.auth import READ
from taskyard.api.http.context import YardDep, errors
from taskyard.api.http.jsonio import answer
from taskyard.api.http.schemas import ID_MAX
from taskyard.api.http.schemas_ops import TimelineOut
from taskyard.core.durations import iso
from taskyard.core.timeline import build_timeline
from taskyard.store.reads.graph_timeline import read_graph_timeline

router = APIRouter(prefix="/api/v1/graphs", tags=["graphs"])
TIMELINE_MAX = 5000
"""Most jobs a timeline holds (the dashboard draws one up to 2,500)."""


@router.get("/{graph_id}/timeline", response_model=TimelineOut, dependencies=[READ],
            responses=errors(404), summary="A graph's timeline and critical path")
def graph_timeline(
    yard: YardDep, graph_id: Annotated[int, Path(ge=1, le=ID_MAX, description="Graph id.")],
    limit: Annotated[int, Query(ge=1, le=TIMELINE_MAX,
                                description="Most jobs, in id order.")] = TIMELINE_MAX,
) -> Any:
    yard.store.graphs.get(graph_id, jobs=False)  # 404 for no such graph
    rows = read_graph_timeline(yard.store, graph_id, limit=limit)
    timeline = build_timeline([j.node for j in rows.jobs], rows.now)
    on_path = set(timeline.critical)
    items = [{"id": j.node.id, "label": j.label, "type": j.type, "state": j.state,
              "attempts": j.attempts, "requires": list(j.node.requires),
              "ready_at": iso(s.ready), "started_at": iso(s.start), "ended_at": iso(s.end),
              "running": s.running, "duration": s.duration, "wait": s.wait,
              "critical": j.node.id in on_path}
             for j, s in zip(rows.jobs, timeline.spans, strict=True)]
    span = (None if timeline.begin is None or timeline.finish is None
            else max(timeline.finish - timeline.begin, 0.0))
    return answer({"graph_id": graph_id, "now": iso(rows.now), "begin": iso(timeline.begin),
                   "finish": iso(timeline.finish), "span": span,
                   "critical": list(timeline.critical),
                   "critical_seconds": timeline.critical_seconds, "items": items,
                   "truncated": rows.truncated})
