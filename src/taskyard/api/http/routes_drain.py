"""``POST /api/v1/workers/{name}/drain``: the live worker of that name finishes what it
runs and is given nothing new (write scope; see ``store/transitions/drain.py``)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Path

from taskyard.api.http.auth import WRITE
from taskyard.api.http.context import YardDep, errors
from taskyard.api.http.jsonio import answer
from taskyard.api.http.schemas_ops import DrainOut
from taskyard.store.transitions.drain import drain_worker

router = APIRouter(prefix="/api/v1/workers", tags=["cluster"])


@router.post("/{name}/drain", response_model=DrainOut, dependencies=[WRITE],
             responses=errors(404), summary="Drain a worker: finish its jobs, take no new one")
def drain(name: Annotated[str, Path(min_length=1, max_length=200)], yard: YardDep) -> Any:
    return answer({"id": drain_worker(yard.store, name), "name": name, "draining": True})
