"""Reads for the HTTP API and the dashboard: jobs page by page, a graph's shape and counts.

Functions over a :class:`~taskyard.store.Store` (read-only), so that they can move onto
the storage seam as they are. Pages use a keyset on the job id: a page costs what it
returns, however deep in the list it is, and jobs created meanwhile never shift it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from sqlalchemy import func, select

from taskyard.core.states import JobState
from taskyard.model.errors import InvalidInput
from taskyard.model.records import JSON, JobRecord, loads
from taskyard.store import schema as t
from taskyard.store.reads.job_search import JobQuery, Position, search_jobs
from taskyard.store.schema.job_rows import JOB_COLUMNS, JOB_FROM, to_record

if TYPE_CHECKING:
    from taskyard.store import Store

_J, _D = t.jobs, t.dependencies


@dataclass(frozen=True, slots=True)
class JobPage:
    """One page of jobs and the id to continue after (None: this was the last page)."""

    items: list[JobRecord]
    next_after: int | None


def list_job_page(store: Store, *, state: str | None = None, type: str | None = None,
                  graph_id: int | None = None, after: int | None = None, limit: int = 100,
                  oldest_first: bool = False) -> JobPage:
    """Jobs, newest first (or oldest first), optionally of one state, type and graph;
    ``after``: the ``next_after`` of the page before."""
    if state is not None and state not in set(JobState):
        raise InvalidInput(
            f"state: unknown state {state!r} (one of {', '.join(s.value for s in JobState)})")
    if limit < 1:
        raise InvalidInput(f"limit: {limit} must be at least 1")
    if type is not None and state is None and graph_id is None:
        # A type alone: one walk of (type, state, id) per state, merged (job_search.py),
        # not every row of the type sorted by id.
        page = search_jobs(store, JobQuery(types=(type,),
                                           sort="created" if oldest_first else "-created"),
                           after=None if after is None else Position(after), limit=limit)
        return JobPage(page.items, None if page.next is None else page.next.id)
    order = _J.c.id.asc() if oldest_first else _J.c.id.desc()
    query = select(*JOB_COLUMNS).select_from(JOB_FROM).order_by(order).limit(limit + 1)
    if state is not None:
        query = query.where(_J.c.state == state)
    if type is not None:
        query = query.where(_J.c.type == type)
    if graph_id is not None:
        query = query.where(_J.c.graph_id == graph_id)
    if after is not None:
        query = query.where(_J.c.id > after if oldest_first else _J.c.id < after)
    with store.read() as tx:
        conn = tx.conn
        rows = conn.execute(query).all()
    items = [to_record(r) for r in rows[:limit]]
    return JobPage(items, items[-1].id if len(rows) > limit else None)


def states_by_graph(store: Store, graph_ids: Iterable[int]) -> dict[int, dict[str, int]]:
    """For each graph, how many of its jobs are in each state (states without jobs left
    out; a graph without jobs maps to {}): one statement for every graph asked for."""
    wanted = sorted(set(graph_ids))
    found: dict[int, dict[str, int]] = {g: {} for g in wanted}
    if not wanted:
        return found
    query = (select(_J.c.graph_id, _J.c.state, func.count()).where(_J.c.graph_id.in_(wanted))
             .group_by(_J.c.graph_id, _J.c.state))
    with store.read() as tx:
        conn = tx.conn
        for graph_id, state, n in conn.execute(query):
            found[int(graph_id)][state] = int(n)
    return found


def graph_edges(store: Store, graph_id: int, *, limit: int) -> list[tuple[int, int, str]]:
    """The graph's ``requires`` edges as (job id, required job id, condition), at most
    ``limit`` of them; edges to a prerequisite outside the graph are included."""
    query = (select(_D.c.job_id, _D.c.requires_id, _D.c.condition)
             .join(_J, _J.c.id == _D.c.job_id).where(_J.c.graph_id == graph_id)
             .order_by(_D.c.job_id, _D.c.requires_id).limit(limit))
    with store.read() as tx:
        conn = tx.conn
        return [(int(a), int(b), str(c)) for a, b, c in conn.execute(query)]


def succeeded_results(store: Store, graph_id: int, labels: Iterable[str]) -> dict[str, JSON]:
    """Results of the graph's jobs with these labels that have succeeded (what a
    ``{$result: LABEL}`` marker becomes at dispatch)."""
    wanted = sorted(set(labels))
    if not wanted:
        return {}
    query = select(_J.c.label, _J.c.result).where(
        _J.c.graph_id == graph_id, _J.c.label.in_(wanted), _J.c.state == JobState.SUCCEEDED)
    with store.read() as tx:
        conn = tx.conn
        return {str(label): loads(result) for label, result in conn.execute(query)}
