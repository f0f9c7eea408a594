"""Approvals and signals: ``POST /api/v1/jobs/{id}/approve`` and ``/deny``, ``POST
/api/v1/signals`` (write scope). Who decided is the token's name."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Annotated, Any

from anyio import to_thread
from fastapi import APIRouter, Path, Request
from pydantic import BaseModel, ConfigDict, Field, StrictStr

from taskyard.api.http.auth import granted
from taskyard.api.http.context import YardDep, errors
from taskyard.api.http.jsonio import answer, read_model
from taskyard.api.http.schemas import ID_MAX, JobOut, body_of
from taskyard.model.records import JobRecord

router = APIRouter(prefix="/api/v1", tags=["waits"])
JobId = Annotated[int, Path(ge=1, le=ID_MAX, description="Job id.")]


class DecisionIn(BaseModel):
    """Why, kept in the approval's result with who decided."""

    model_config = ConfigDict(extra="forbid")
    note: StrictStr | None = None


class SignalIn(BaseModel):
    """A signal: every awaiting wait for its name (and key, when the wait has one)
    succeeds with its payload as the result."""

    model_config = ConfigDict(extra="forbid")
    name: StrictStr
    key: StrictStr | None = Field(default=None, description="None: only waits for any key.")
    payload: Any = Field(default=None, description="Any JSON value.")


DECISION_BODY = body_of(DecisionIn, required=False)


class SignalOut(BaseModel):
    completed: list[int] = Field(description="The jobs it completed.")


@router.post("/jobs/{job_id}/approve", response_model=JobOut,
             responses=errors(404, 409, 413, 415), openapi_extra=DECISION_BODY,
             summary="Approve an awaiting approval (it succeeds)")
async def approve_job(job_id: JobId, request: Request, yard: YardDep) -> Any:
    return await _decide(yard.approve, job_id, request)


@router.post("/jobs/{job_id}/deny", response_model=JobOut,
             responses=errors(404, 409, 413, 415), openapi_extra=DECISION_BODY,
             summary="Deny an awaiting approval (it fails)")
async def deny_job(job_id: JobId, request: Request, yard: YardDep) -> Any:
    return await _decide(yard.deny, job_id, request)


@router.post("/signals", response_model=SignalOut, responses=errors(413, 415, 422),
             openapi_extra=body_of(SignalIn), summary="Send a signal to the waits that expect it")
async def send_signal(request: Request, yard: YardDep) -> Any:
    token = granted(request, "write")
    body = await read_model(request, SignalIn)
    completed = await to_thread.run_sync(partial(yard.signal, body.name, body.key,
                                                 body.payload, by=token.name))
    return answer({"completed": completed})


async def _decide(decide: Callable[..., JobRecord], job_id: int, request: Request) -> Any:
    """An approval decided (``decide``: the Yard's approve or deny) by the token's name,
    with the body's note; the job as it is then."""
    token = granted(request, "write")
    note = await _note(request)
    job = await to_thread.run_sync(partial(decide, job_id, note=note, by=token.name))
    return answer(job.to_json())


async def _note(request: Request) -> str | None:
    """The decision's note: the body is optional (no body, no note)."""
    if not await request.body():
        return None
    return (await read_model(request, DecisionIn)).note
