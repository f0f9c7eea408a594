"""``GET /api/v1/jobs/search``: jobs by id, label, type, text in label or args, state,
pool, worker and time range, in creation or end order, page by page (see
``store/reads/job_search.py`` for which index answers what)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, Query

from taskyard.api.http.auth import READ
from taskyard.api.http.context import YardDep, errors
from taskyard.api.http.errors import ApiError
from taskyard.api.http.jsonio import answer
from taskyard.api.http.schemas import ID_MAX
from taskyard.api.http.schemas_ops import JobSearchOut
from taskyard.api.search import decode_position, encode_position, job_query
from taskyard.core.states import JobState
from taskyard.store.reads.job_search import JobQuery, search_jobs

router = APIRouter(prefix="/api/v1/jobs", tags=["jobs"])
Text = Annotated[str | None, Query(max_length=200)]


SORT = Literal["-created", "created", "-finished", "finished"]


def search_query(
    yard: YardDep,
    q: Annotated[str | None, Query(max_length=200, description="A job id (`123`, `#123`), "
                                   "or text found in the label or args (any case).")] = None,
    state: Annotated[list[JobState] | None, Query(description="Any of these states.")] = None,
    type: Annotated[list[str] | None, Query(description="Any of these task types.")] = None,
    label: Text = None,
    graph_id: Annotated[int | None, Query(ge=1, le=ID_MAX)] = None,
    schedule: Annotated[str | None, Query(max_length=200, description="Jobs of this "
                                          "schedule.")] = None,
    pool: Annotated[str | None, Query(max_length=200, description="One of the job's "
                                      "pools.")] = None,
    worker: Annotated[str | None, Query(max_length=200, description="A worker that ran "
                                        "an attempt of it.")] = None,
    since: Annotated[str | None, Query(max_length=60, description="Created (in end order: "
                                       "ended) at or after: `2h` ago or an ISO 8601 "
                                       "time.")] = None,
    until: Annotated[str | None, Query(max_length=60, description="… and before.")] = None,
    sort: Annotated[SORT, Query(description="Newest created first (default), oldest, "
                                "last ended first, first ended first.")] = "-created",
) -> JobQuery:
    """The search's filters from the query string (also those of the bulk actions)."""
    return job_query(yard.store.now, q=q, state=state, type=type, label=label, graph_id=graph_id,
                     schedule=schedule, pool=pool, worker=worker, since=since, until=until,
                     sort=sort)


SearchQuery = Annotated[JobQuery, Depends(search_query)]


@router.get("/search", response_model=JobSearchOut, dependencies=[READ],
            responses=errors(422), summary="Search jobs, page by page")
def search(
    yard: YardDep, query: SearchQuery,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
    cursor: Annotated[str | None, Query(max_length=60, description="`next` of the page "
                                        "before.")] = None,
) -> Any:
    sort = query.sort
    try:
        after = decode_position(cursor, by_end=sort.endswith("finished"))
    except ValueError as exc:
        raise ApiError(400, str(exc)) from None
    page = search_jobs(yard.store, query, after=after, limit=limit)
    return answer({"items": [j.to_json() for j in page.items],
                   "next": encode_position(page.next), "complete": page.complete})
