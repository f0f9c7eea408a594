"""Reads for the HTTP API and the dashboard: jobs page by page, a graph's shape and counts.

Functions over a :class:`~taskyard.store.Store` (read-only), in SQL text both backends
run as written (the jobs through the driver's read). Pages use a keyset on the job id: a
page costs what it returns, however deep in the list it is, and jobs created meanwhile
never shift it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from taskyard.core.states import JobState
from taskyard.model.errors import InvalidInput
from taskyard.model.records import JSON, AttemptRecord, JobRecord, StageRecord, loads
from taskyard.store.driver.params import ReadJobs
from taskyard.store.portable.job_reads import (
    mapped,
    read_attempts_in,
    read_jobs_in,
    read_stages_in,
)
from taskyard.store.reads.job_search import JobQuery, Position, search_jobs
from taskyard.store.schema.job_rows import attempt_record, to_record

if TYPE_CHECKING:
    from taskyard.store import Store



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
    with store.read() as tx:
        rows = tx.driver.read_jobs(tx.raw, ReadJobs(
            graph_id=graph_id, state=state, type=type, newest_first=not oldest_first,
            limit=limit + 1, after=after))
    items = [to_record(mapped(r)) for r in rows[:limit]]
    return JobPage(items, items[-1].id if len(rows) > limit else None)


def jobs_by_id(store: Store, ids: Sequence[int]) -> dict[int, JobRecord]:
    """The jobs with these ids, each with its attempts and stages, as :meth:`Jobs.get`
    gives one — what the answer to a group of submits reads: one statement while none
    of them has had an attempt (new jobs), three otherwise."""
    if not ids:
        return {}
    # A read transaction, not read_each's autocommit: switching a pooled PostgreSQL
    # connection to autocommit and back costs more than BEGIN and COMMIT (0.99 -> 0.77 ms
    # a group of 4, wall).
    with store.read() as tx:
        rows = read_jobs_in(tx.raw, sorted(set(ids)))
        begun = [int(r["id"]) for r in rows if r["attempt"] > 0]
        tries: dict[int, list[AttemptRecord]] = {}
        stages: dict[int, list[StageRecord]] = {}
        if begun:
            for a in read_attempts_in(tx.raw, begun):
                tries.setdefault(int(a["job_id"]), []).append(attempt_record(mapped(a)))
            for job_id, attempt, name, seq, state, started, finished, result in (
                    read_stages_in(tx.raw, begun)):
                stages.setdefault(int(job_id), []).append(StageRecord(
                    attempt, name, seq, state, started, finished, loads(result)))
    return {int(r["id"]): to_record(mapped(r), tries.get(int(r["id"]), ()),
                                    stages.get(int(r["id"]), ())) for r in rows}


def states_by_graph(store: Store, graph_ids: Iterable[int]) -> dict[int, dict[str, int]]:
    """For each graph, how many of its jobs are in each state (states without jobs left
    out; a graph without jobs maps to {}): one statement for every graph asked for."""
    wanted = sorted(set(graph_ids))
    found: dict[int, dict[str, int]] = {g: {} for g in wanted}
    if not wanted:
        return found
    with store.read() as tx:
        which, params = tx.raw.member("graph_id", wanted)
        for graph_id, state, n in tx.raw.all(
                f"SELECT graph_id, state, COUNT(*) FROM jobs WHERE {which} "
                "GROUP BY graph_id, state", params):
            found[int(graph_id)][state] = int(n)
    return found


def graph_edges(store: Store, graph_id: int, *, limit: int) -> list[tuple[int, int, str]]:
    """The graph's ``requires`` edges as (job id, required job id, condition), at most
    ``limit`` of them; edges to a prerequisite outside the graph are included."""
    with store.read() as tx:
        return [(int(a), int(b), str(c)) for a, b, c in tx.raw.all(
            "SELECT d.job_id, d.requires_id, d.condition FROM dependencies d "
            "JOIN jobs j ON j.id = d.job_id WHERE j.graph_id = ? "
            "ORDER BY d.job_id, d.requires_id LIMIT ?", (graph_id, limit))]


def succeeded_results(store: Store, graph_id: int, labels: Iterable[str]) -> dict[str, JSON]:
    """Results of the graph's jobs with these labels that have succeeded (what a
    ``{$result: LABEL}`` marker becomes at dispatch)."""
    wanted = sorted(set(labels))
    if not wanted:
        return {}
    with store.read() as tx:
        which, params = tx.raw.member("label", wanted)
        return {str(label): loads(result) for label, result in tx.raw.all(
            f"SELECT label, result FROM jobs WHERE graph_id = ? AND {which} "
            "AND state = 'succeeded'", (graph_id, *params))}
