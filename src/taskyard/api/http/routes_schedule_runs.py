"""``POST /api/v1/schedules/{name}/run``: run a schedule now, once (write scope: it
submits a job; its next run stays). Its jobs: ``GET /api/v1/jobs/search?schedule=NAME``."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Path

from taskyard.api.http.auth import WRITE
from taskyard.api.http.context import YardDep, errors
from taskyard.api.http.jsonio import answer
from taskyard.api.http.schemas import JobOut

router = APIRouter(prefix="/api/v1/schedules", tags=["schedules"])


@router.post("/{name}/run", status_code=201, response_model=JobOut, dependencies=[WRITE],
             responses=errors(404), summary="Run a schedule now, once")
def run_schedule(name: Annotated[str, Path(min_length=1, max_length=200)],
                 yard: YardDep) -> Any:
    return answer(yard.get_job(yard.run_schedule(name)).to_json(), 201)
