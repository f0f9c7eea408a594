"""``POST /api/v1/pools/{name}/pause`` and ``/resume`` (admin scope): nothing new is
placed in a paused pool; jobs running there go on."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Path

from taskyard.api.http.auth import ADMIN
from taskyard.api.http.context import YardDep, errors
from taskyard.api.http.jsonio import answer
from taskyard.api.http.schemas import PoolOut

router = APIRouter(prefix="/api/v1/pools", tags=["cluster"])
Name = Annotated[str, Path(min_length=1, max_length=200, description="Pool name.")]


def _shown(pool: dict[str, Any]) -> Any:
    return answer({**pool, "free": max(pool["capacity"] - pool["used"], 0)})


@router.post("/{name}/pause", response_model=PoolOut, dependencies=[ADMIN],
             responses=errors(404), summary="Place nothing new in a pool")
def pause_pool(name: Name, yard: YardDep) -> Any:
    return _shown(yard.pause_pool(name))


@router.post("/{name}/resume", response_model=PoolOut, dependencies=[ADMIN],
             responses=errors(404), summary="Place jobs in a pool again")
def resume_pool(name: Name, yard: YardDep) -> Any:
    return _shown(yard.pause_pool(name, paused=False))
