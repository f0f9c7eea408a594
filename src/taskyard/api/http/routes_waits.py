"""Approvals and signals: ``POST /api/v1/jobs/{id}/approve`` and ``/deny``, ``POST
/api/v1/signals`` (write scope). Who decided is the token's name."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Path
from pydantic import BaseModel, ConfigDict, Field, StrictStr

from taskyard.api.http.auth import require
from taskyard.api.http.context import YardDep, errors
from taskyard.api.http.jsonio import answer
from taskyard.api.http.schemas import ID_MAX, JobOut
from taskyard.store.transitions.tokens import TokenRecord

router = APIRouter(prefix="/api/v1", tags=["waits"])
JobId = Annotated[int, Path(ge=1, le=ID_MAX, description="Job id.")]
Writer = Annotated[TokenRecord, Depends(require("write"))]


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


class SignalOut(BaseModel):
    completed: list[int] = Field(description="The jobs it completed.")


@router.post("/jobs/{job_id}/approve", response_model=JobOut, responses=errors(404, 409),
             summary="Approve an awaiting approval (it succeeds)")
def approve_job(job_id: JobId, yard: YardDep, token: Writer,
                body: DecisionIn | None = None) -> Any:
    return answer(yard.approve(job_id, note=_note(body), by=token.name).to_json())


@router.post("/jobs/{job_id}/deny", response_model=JobOut, responses=errors(404, 409),
             summary="Deny an awaiting approval (it fails)")
def deny_job(job_id: JobId, yard: YardDep, token: Writer, body: DecisionIn | None = None) -> Any:
    return answer(yard.deny(job_id, note=_note(body), by=token.name).to_json())


@router.post("/signals", response_model=SignalOut, responses=errors(422),
             summary="Send a signal to the waits that expect it")
def send_signal(body: SignalIn, yard: YardDep, token: Writer) -> Any:
    return answer({"completed": yard.signal(body.name, body.key, body.payload,
                                            by=token.name)})


def _note(body: DecisionIn | None) -> str | None:
    return None if body is None else body.note
