"""``POST /api/v1/schedules/{name}/backfill`` and ``/backfill/cancel`` (write scope: they
submit and cancel jobs): a schedule's jobs for the ticks of a past range."""

from __future__ import annotations

from functools import partial
from typing import Annotated, Any

from anyio import to_thread
from fastapi import APIRouter, Path, Request
from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictFloat, StrictInt, StrictStr

from taskyard.api.http.auth import WRITE, granted
from taskyard.api.http.context import YardDep, errors
from taskyard.api.http.jsonio import answer, read_model
from taskyard.api.http.schemas import body_of

router = APIRouter(prefix="/api/v1/schedules", tags=["schedules"])
Name = Annotated[str, Path(max_length=200, description="Schedule name.")]
When = StrictFloat | StrictInt | StrictStr


class BackfillIn(BaseModel):
    """The range of ticks: ISO 8601 times, durations ago (`7d`), `now`, or epoch seconds."""

    model_config = ConfigDict(extra="forbid")
    from_: When = Field(alias="from", description="First tick (included).")
    to: When = Field(default="now", description="End of the range (excluded).")
    max_active: StrictInt | None = Field(default=None, ge=1, le=1_000_000, description=(
        "At most this many of its jobs pending, dispatched or running at once."))
    dry_run: StrictBool = Field(default=False, description="The ticks only; nothing written.")


class BackfillOut(BaseModel):
    model_config = ConfigDict(extra="allow")
    schedule: str
    ticks: list[str]
    graph_id: int | None
    jobs: list[int] | None
    existing: int


class CanceledOut(BaseModel):
    canceled: int = Field(description="Jobs canceled.")


@router.post("/{name}/backfill", response_model=BackfillOut, responses=errors(404, 413, 415, 422),
             openapi_extra=body_of(BackfillIn), summary="Jobs of a schedule for a past range")
async def backfill(name: Name, request: Request, yard: YardDep) -> Any:
    granted(request, "write")
    body = await read_model(request, BackfillIn)
    done = await to_thread.run_sync(partial(
        yard.backfill, name, body.from_, body.to, max_active=body.max_active,
        dry_run=body.dry_run))
    return answer(done.to_json())


@router.post("/{name}/backfill/cancel", response_model=CanceledOut, dependencies=[WRITE],
             responses=errors(404), summary="Cancel what remains of a schedule's backfills")
def cancel_backfill(name: Name, yard: YardDep) -> Any:
    return answer({"canceled": yard.cancel_backfill(name)})
