"""The operator's routes in one router (graph timelines, jobs search, history), included before
``/api/v1/jobs/{id}`` so that fixed paths under ``/api/v1/jobs/`` are theirs."""

from __future__ import annotations

from fastapi import APIRouter

from taskyard.api.http.routes_history import router as history
from taskyard.api.http.routes_search import router as search
from taskyard.api.http.routes_timeline import router as timeline

router = APIRouter()
for _part in (timeline, search, history):
    router.include_router(_part)
