"""``/api/v1/jobs``: submit, list (filters, cursor), show, cancel, retry, logs."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Path, Query

from taskyard.api.http.auth import READ, WRITE
from taskyard.api.http.context import YardDep, answer, errors, parse_cursor
from taskyard.api.http.schemas import ID_MAX, JobDetailOut, JobIn, JobOut, JobPageOut, LogsOut
from taskyard.api.http.views import job_detail, job_logs
from taskyard.core.states import JobState
from taskyard.store.reads.job_pages import list_job_page

router = APIRouter(prefix="/api/v1/jobs", tags=["jobs"])
JobId = Annotated[int, Path(ge=1, le=ID_MAX, description="Job id.")]


@router.post("", status_code=201, response_model=JobOut, dependencies=[WRITE],
             responses=errors(409, 422), summary="Submit a job")
def submit_job(body: JobIn, yard: YardDep) -> Any:
    """With a ``unique_key`` that a job holds: that job (``on_duplicate: existing``, as
    ``taskyard submit`` prints its id), or 409 (``reject``)."""
    job_id = yard.submit(body.type, body.args or {}, priority=body.priority,
                         run_after=body.run_after, pools=body.pools, locks=body.locks,
                         timeout=body.timeout, unique_key=body.unique_key,
                         unique_for=body.unique_for, on_duplicate=body.on_duplicate)
    return answer(yard.get_job(job_id).to_json(), 201)


@router.get("", response_model=JobPageOut, dependencies=[READ], responses=errors(),
            summary="List jobs, newest first, page by page")
def list_jobs(
    yard: YardDep,
    state: Annotated[JobState | None, Query(description="Only jobs in this state.")] = None,
    type: Annotated[str | None, Query(max_length=200, description="Task type.")] = None,
    graph_id: Annotated[int | None, Query(ge=1, le=ID_MAX, description="Graph.")] = None,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
    cursor: Annotated[str | None, Query(max_length=40, description="`next` of the page "
                                        "before.")] = None,
    order: Annotated[Literal["newest", "oldest"], Query()] = "newest",
) -> Any:
    page = list_job_page(yard.store, state=state, type=type, graph_id=graph_id,
                         after=parse_cursor(cursor), limit=limit,
                         oldest_first=order == "oldest")
    return answer({"items": [j.to_json() for j in page.items],
                   "next": None if page.next_after is None else str(page.next_after)})


@router.get("/{job_id}", response_model=JobDetailOut, dependencies=[READ],
            responses=errors(404), summary="A job, its attempts and stages, and why")
def show_job(job_id: JobId, yard: YardDep) -> Any:
    return answer(job_detail(yard, job_id))


@router.post("/{job_id}/cancel", response_model=JobOut, dependencies=[WRITE],
             responses=errors(404, 409), summary="Cancel a job")
def cancel_job(job_id: JobId, yard: YardDep) -> Any:
    return answer(yard.cancel(job_id).to_json())


@router.post("/{job_id}/retry", response_model=JobOut, dependencies=[WRITE],
             responses=errors(404, 409), summary="Run a failed job once more")
def retry_job(job_id: JobId, yard: YardDep) -> Any:
    return answer(yard.retry(job_id).to_json())


@router.get("/{job_id}/logs", response_model=LogsOut, dependencies=[READ],
            responses=errors(404), summary="An attempt's stdout and stderr tails")
def job_logs_route(
    job_id: JobId, yard: YardDep,
    attempt: Annotated[int | None, Query(ge=1, le=2**31 - 1,
                                         description="Default: the latest.")] = None,
) -> Any:
    return answer(job_logs(yard, job_id, attempt).to_json())
