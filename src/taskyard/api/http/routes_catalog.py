"""``/api/v1/task-types``, ``/api/v1/schedules``, ``/api/v1/apply`` and ``/api/v1/prune``:
what the admin declares and cleans up. Task types go through :meth:`Yard.apply`, the
parser of ``taskyard apply``, so that the API takes the YAML field names and values
(``timeout: 5m``) and checks them once.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Body, Path, Query, Response

from taskyard.api.http.auth import ADMIN, READ
from taskyard.api.http.context import YardDep, answer, errors
from taskyard.api.http.schemas import (
    PruneIn,
    PruneOut,
    ScheduleIn,
    ScheduleListOut,
    ScheduleOut,
    TaskTypeIn,
    TaskTypeListOut,
    TaskTypeOut,
)
from taskyard.core.durations import parse_duration
from taskyard.model.errors import InvalidInput, NotFound
from taskyard.store.transitions.retention import prune as prune_store

router = APIRouter(prefix="/api/v1", tags=["task types and schedules"])
Name = Annotated[str, Path(min_length=1, max_length=200)]
Verify = Annotated[bool, Query(description="Check that a python handler imports here.")]


@router.post("/task-types", status_code=201, response_model=TaskTypeOut,
             dependencies=[ADMIN], responses=errors(422), summary="Create or update a task type")
def put_task_type(body: TaskTypeIn, yard: YardDep, verify: Verify = True) -> Any:
    fields = {k: v for k, v in body.model_dump(exclude_unset=True).items() if k != "name"}
    yard.apply({"task_types": {body.name: fields}}, verify=verify)
    spec = yard.store.task_types.get(body.name)
    assert spec is not None
    return answer(spec.to_json(), 201)


@router.get("/task-types", response_model=TaskTypeListOut, dependencies=[READ],
            responses=errors(), summary="Task types")
def list_task_types(yard: YardDep) -> Any:
    return answer({"items": [s.to_json() for s in yard.store.task_types.list()]})


@router.get("/task-types/{name}", response_model=TaskTypeOut, dependencies=[READ],
            responses=errors(404), summary="One task type")
def show_task_type(name: Name, yard: YardDep) -> Any:
    spec = yard.store.task_types.get(name)
    if spec is None:
        raise NotFound(f"no task type {name!r}")
    return answer(spec.to_json())


@router.post("/apply", dependencies=[ADMIN], responses=errors(422),
             summary="Create or update task types, pools and schedules (taskyard apply)")
def apply_config(yard: YardDep, doc: Annotated[dict[str, Any], Body()],
                 verify: Verify = True) -> Any:
    decl = yard.apply(doc, verify=verify)
    return answer({"task_types": len(decl.task_types), "pools": len(decl.pools),
                   "schedules": len(decl.schedules)})


@router.get("/schedules", response_model=ScheduleListOut, dependencies=[READ],
            responses=errors(), summary="Schedules and their next runs")
def list_schedules(yard: YardDep) -> Any:
    return answer({"items": [s.to_json() for s in yard.list_schedules()]})


@router.post("/schedules", status_code=201, response_model=ScheduleOut, dependencies=[ADMIN],
             responses=errors(409, 422), summary="Create (or replace) a schedule")
def add_schedule(body: ScheduleIn, yard: YardDep) -> Any:
    options = body.model_dump(exclude={"name", "type"})
    return answer(yard.add_schedule(body.name, body.type, **options).to_json(), 201)


@router.get("/schedules/{name}", response_model=ScheduleOut, dependencies=[READ],
            responses=errors(404), summary="One schedule")
def show_schedule(name: Name, yard: YardDep) -> Any:
    return answer(yard.get_schedule(name).to_json())


@router.post("/schedules/{name}/pause", response_model=ScheduleOut, dependencies=[ADMIN],
             responses=errors(404), summary="Stop creating jobs for a schedule")
def pause_schedule(name: Name, yard: YardDep) -> Any:
    return answer(yard.pause_schedule(name).to_json())


@router.post("/schedules/{name}/resume", response_model=ScheduleOut, dependencies=[ADMIN],
             responses=errors(404), summary="Create jobs for a schedule again")
def resume_schedule(name: Name, yard: YardDep) -> Any:
    return answer(yard.resume_schedule(name).to_json())


@router.delete("/schedules/{name}", status_code=204, dependencies=[ADMIN],
               responses=errors(404), summary="Remove a schedule (its jobs stay)")
def delete_schedule(name: Name, yard: YardDep) -> Response:
    yard.delete_schedule(name)
    return Response(status_code=204)


@router.post("/prune", response_model=PruneOut, dependencies=[ADMIN], responses=errors(422),
             summary="Delete finished work older than a duration (taskyard prune)")
def prune(body: PruneIn, yard: YardDep) -> Any:
    seconds = parse_duration(body.older_than, field="older_than")
    if seconds < 0:
        raise InvalidInput(f"older_than: {body.older_than!r} must not be negative")
    return answer(prune_store(yard.store, seconds, dry_run=body.dry_run).to_json())
