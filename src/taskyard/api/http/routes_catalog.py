"""``/api/v1/task-types``, ``/api/v1/schedules``, ``/api/v1/apply`` and ``/api/v1/prune``:
what the admin declares and cleans up. Task types go through :meth:`Yard.apply`, the
parser of ``taskyard apply``, so that the API takes the YAML field names and values
(``timeout: 5m``) and checks them once.
"""

from __future__ import annotations

from functools import partial
from typing import Annotated, Any

from anyio import to_thread
from fastapi import APIRouter, Path, Query, Request, Response

from taskyard.api.http.auth import ADMIN, READ
from taskyard.api.http.context import YardDep, errors
from taskyard.api.http.errors import ApiError
from taskyard.api.http.jsonio import answer, read_json, read_model
from taskyard.api.http.schemas import (
    PruneIn,
    PruneOut,
    ScheduleIn,
    ScheduleListOut,
    ScheduleOut,
    TaskTypeIn,
    TaskTypeListOut,
    TaskTypeOut,
    body_of,
)
from taskyard.api.yard import Yard
from taskyard.core.durations import parse_duration
from taskyard.model.errors import InvalidInput, NotFound
from taskyard.model.records import TaskTypeSpec
from taskyard.store.transitions.retention import prune as prune_store

router = APIRouter(prefix="/api/v1", tags=["task types and schedules"])
# ``{name:path}`` in the routes: a name may hold a slash (``team/nightly``), like any name.
Name = Annotated[str, Path(min_length=1, max_length=200)]
Verify = Annotated[bool, Query(description="Check that a python handler imports here.")]


@router.post("/task-types", status_code=201, response_model=TaskTypeOut,
             dependencies=[ADMIN], responses=errors(413, 415, 422),
             openapi_extra=body_of(TaskTypeIn), summary="Create or update a task type")
async def put_task_type(request: Request, yard: YardDep, verify: Verify = True) -> Any:
    body = await read_model(request, TaskTypeIn)
    fields = {k: v for k, v in body.model_dump(exclude_unset=True).items() if k != "name"}
    spec = await to_thread.run_sync(_put_task_type, yard, body.name, fields, verify)
    return answer(spec.to_json(), 201)


def _put_task_type(yard: Yard, name: str, fields: dict[str, Any],
                   verify: bool) -> TaskTypeSpec:
    yard.apply({"task_types": {name: fields}}, verify=verify)
    spec = yard.store.task_types.get(name)
    assert spec is not None
    return spec


@router.get("/task-types", response_model=TaskTypeListOut, dependencies=[READ],
            responses=errors(), summary="Task types")
def list_task_types(yard: YardDep) -> Any:
    return answer({"items": [s.to_json() for s in yard.store.task_types.list()]})


@router.get("/task-types/{name:path}", response_model=TaskTypeOut, dependencies=[READ],
            responses=errors(404), summary="One task type")
def show_task_type(name: Name, yard: YardDep) -> Any:
    spec = yard.store.task_types.get(name)
    if spec is None:
        raise NotFound(f"no task type {name!r}")
    return answer(spec.to_json())


APPLY_BODY = {"requestBody": {"required": True, "content": {"application/json": {
    "schema": {"type": "object", "description": "What `taskyard apply` reads: task_types, "
               "pools, schedules."}}}}}


@router.post("/apply", dependencies=[ADMIN], responses=errors(413, 415, 422),
             openapi_extra=APPLY_BODY,
             summary="Create or update task types, pools and schedules (taskyard apply)")
async def apply_config(request: Request, yard: YardDep, verify: Verify = True) -> Any:
    doc = await read_json(request)
    if not isinstance(doc, dict):
        raise ApiError(400, "body: a JSON object is required (task_types, pools, schedules)")
    decl = await to_thread.run_sync(partial(yard.apply, doc, verify=verify))
    return answer({"task_types": len(decl.task_types), "pools": len(decl.pools),
                   "schedules": len(decl.schedules)})


@router.get("/schedules", response_model=ScheduleListOut, dependencies=[READ],
            responses=errors(), summary="Schedules and their next runs")
def list_schedules(yard: YardDep) -> Any:
    return answer({"items": [s.to_json() for s in yard.list_schedules()]})


@router.post("/schedules", status_code=201, response_model=ScheduleOut, dependencies=[ADMIN],
             responses=errors(409, 413, 415, 422), openapi_extra=body_of(ScheduleIn),
             summary="Create (or replace) a schedule")
async def add_schedule(request: Request, yard: YardDep) -> Any:
    body = await read_model(request, ScheduleIn)
    options = body.model_dump(exclude={"name", "type"})
    record = await to_thread.run_sync(partial(yard.add_schedule, body.name, body.type,
                                              **options))
    return answer(record.to_json(), 201)


@router.get("/schedules/{name:path}", response_model=ScheduleOut, dependencies=[READ],
            responses=errors(404), summary="One schedule")
def show_schedule(name: Name, yard: YardDep) -> Any:
    return answer(yard.get_schedule(name).to_json())


@router.post("/schedules/{name:path}/pause", response_model=ScheduleOut, dependencies=[ADMIN],
             responses=errors(404), summary="Stop creating jobs for a schedule")
def pause_schedule(name: Name, yard: YardDep) -> Any:
    return answer(yard.pause_schedule(name).to_json())


@router.post("/schedules/{name:path}/resume", response_model=ScheduleOut, dependencies=[ADMIN],
             responses=errors(404), summary="Create jobs for a schedule again")
def resume_schedule(name: Name, yard: YardDep) -> Any:
    return answer(yard.resume_schedule(name).to_json())


@router.delete("/schedules/{name:path}", status_code=204, dependencies=[ADMIN],
               responses=errors(404), summary="Remove a schedule (its jobs stay)")
def delete_schedule(name: Name, yard: YardDep) -> Response:
    yard.delete_schedule(name)
    return Response(status_code=204)


@router.post("/prune", response_model=PruneOut, dependencies=[ADMIN],
             responses=errors(413, 415, 422), openapi_extra=body_of(PruneIn),
             summary="Delete finished work older than a duration (taskyard prune)")
async def prune(request: Request, yard: YardDep) -> Any:
    body = await read_model(request, PruneIn)
    seconds = parse_duration(body.older_than, field="older_than")
    if seconds < 0:
        raise InvalidInput(f"older_than: {body.older_than!r} must not be negative")
    done = await to_thread.run_sync(partial(prune_store, yard.store, seconds,
                                            dry_run=body.dry_run))
    return answer(done.to_json())
