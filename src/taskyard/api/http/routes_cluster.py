"""Workers, pools, the dashboard's overview, and ``/healthz`` (the one path without a
token: it says whether the server and its database answer, nothing more)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query, Request

from taskyard.api.http.auth import READ, require
from taskyard.api.http.context import YardDep, errors
from taskyard.api.http.jsonio import answer
from taskyard.api.http.schemas import (
    HealthOut,
    OverviewOut,
    PoolListOut,
    TokenOut,
    WorkerListOut,
)
from taskyard.api.http.views import graphs_json
from taskyard.store.reads.metrics import recent_endings
from taskyard.store.transitions.tokens import TokenRecord

router = APIRouter(tags=["cluster"])
WINDOW = 300.0
"""Seconds over which the overview counts attempt endings (its throughput)."""


@router.get("/api/v1/workers", response_model=WorkerListOut, dependencies=[READ],
            responses=errors(), summary="Workers, their pools and load")
def list_workers(yard: YardDep, all: Annotated[bool, Query(
        description="Include stopped and expelled workers.")] = False) -> Any:
    return answer({"items": [w.to_json() for w in yard.workers(include_gone=all)]})


@router.get("/api/v1/pools", response_model=PoolListOut, dependencies=[READ],
            responses=errors(), summary="Pools with their live workers and capacity")
def list_pools(yard: YardDep) -> Any:
    return answer({"items": [{**p, "free": max(p["capacity"] - p["used"], 0)}
                             for p in yard.pools()]})


@router.get("/api/v1/overview", response_model=OverviewOut, dependencies=[READ],
            responses=errors(), summary="Counts, recent throughput, workers, recent graphs")
def overview(yard: YardDep, request: Request) -> Any:
    workers = yard.workers()
    return answer({
        "jobs": request.app.state.metrics.counts.read(),  # see state_counts.py
        "endings": recent_endings(yard.store, WINDOW),
        "window_seconds": WINDOW,
        "workers": len(workers),
        "capacity": sum(w.capacity for w in workers),
        "used": sum(w.used for w in workers),
        "graphs": graphs_json(yard, yard.graphs(limit=8)),
    })


@router.get("/api/v1/whoami", response_model=TokenOut, responses=errors(),
            summary="The token this request carries (name, scope)")
def whoami(token: Annotated[TokenRecord, Depends(require("read"))]) -> Any:
    return answer(token.to_json())


@router.get("/healthz", response_model=HealthOut, responses={503: {"description": "down"}},
            summary="Liveness: the server answers and reaches its database (no token)")
def healthz(yard: YardDep) -> Any:
    try:
        yard.store.now()
    except Exception as exc:
        return answer({"status": "database unreachable",
                       "error": " ".join(str(exc).split())[:200]}, 503)
    return answer({"status": "ok"})
