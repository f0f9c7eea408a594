"""``/api/v1/jobs``: submit (one, or a batch), list (filters, cursor), show, cancel,
retry, logs."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from anyio import to_thread
from fastapi import APIRouter, Path, Query, Request, Response
from pydantic import ValidationError

from taskyard.api.http.auth import READ, WRITE, granted
from taskyard.api.http.context import YardDep, errors, parse_cursor
from taskyard.api.http.errors import ApiError
from taskyard.api.http.jsonio import answer, dumps, read_json, read_model
from taskyard.api.http.schemas import (
    ID_MAX,
    JobBatchIn,
    JobBatchOut,
    JobDetailOut,
    JobIn,
    JobOut,
    JobPageOut,
    LogsOut,
    body_of,
)
from taskyard.api.http.submitter import Submitter
from taskyard.api.http.tracing import request_options
from taskyard.api.http.views import job_detail, job_logs
from taskyard.api.yard import Yard
from taskyard.core.states import JobState
from taskyard.store.reads.job_pages import jobs_by_id, list_job_page

router = APIRouter(prefix="/api/v1/jobs", tags=["jobs"])
JobId = Annotated[int, Path(ge=1, le=ID_MAX, description="Job id.")]


@router.post("", status_code=201, response_model=JobOut, responses=errors(409, 413, 415, 422),
             openapi_extra=body_of(JobIn), summary="Submit a job")
async def submit_job(request: Request) -> Any:
    """With a ``unique_key`` that a job holds: that job (``on_duplicate: existing``, as
    ``taskyard submit`` prints its id), or 409 (``reject``). Concurrent submits are
    written together (group commit: :mod:`taskyard.api.http.submitter`)."""
    granted(request, "write")  # inline, not a dependency: the hot path
    body = await read_model(request, JobIn)
    submitter: Submitter = request.app.state.submitter
    job = body.model_dump(exclude_none=True)
    job.update(request_options(request))  # its trace context (api/http/tracing.py)
    return answer(await submitter.submit(job), 201)


@router.post("/batch", status_code=201, response_model=JobBatchOut,
             responses=errors(409, 413, 415, 422), openapi_extra=body_of(JobBatchIn),
             summary="Submit up to 1,000 jobs at once (all or none)")
async def submit_batch(request: Request) -> Any:
    """The jobs in one transaction: all are submitted or none is. A refusal names the
    first bad job's index (0-based) and field: ``job 3: run_after: …``."""
    granted(request, "write")
    data = await read_json(request)
    yard: Yard = request.app.state.yard
    # Checked, written, read back and encoded on a thread: 1,000 jobs take milliseconds
    # of Python the event loop must not wait for.
    return Response(await to_thread.run_sync(_submit_all, yard, data,
                                             request_options(request)), 201,
                    media_type="application/json")


def _submit_all(yard: Yard, data: Any, trace: dict[str, str]) -> bytes:
    try:
        JobBatchIn.model_validate(data)  # the JSON shape (400); the values: submit_many
    except ValidationError as exc:
        raise ApiError(400, _batch_error(exc)) from None
    ids = yard.submit_many([{**job, **trace} for job in data["jobs"]] if trace
                           else data["jobs"])
    found = jobs_by_id(yard.store, ids)
    return dumps({"items": [found[i].to_json() for i in ids]})


def _batch_error(exc: ValidationError) -> str:
    """Pydantic's first error as ``job N: field: why`` (or ``jobs: why``)."""
    first = exc.errors()[0]
    loc = [str(p) for p in first.get("loc", ())]
    message = first.get("msg", "invalid")
    if len(loc) >= 2 and loc[0] == "jobs" and loc[1].isdigit():
        field = ".".join(loc[2:]) or "job"
        return f"job {loc[1]}: {field}: {message}"
    return f"{'.'.join(loc) or 'body'}: {message}"


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
