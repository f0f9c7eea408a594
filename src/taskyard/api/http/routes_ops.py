"""The operator's routes in one router (graph timelines; more join it), included before
``/api/v1/jobs/{id}`` so that fixed paths under ``/api/v1/jobs/`` are theirs."""

from __future__ import annotations

from fastapi import APIRouter

from taskyard.api.http.routes_search import router as search
from taskyard.api.http.routes_timeline import router as timeline

router = APIRouter()
for _part in (timeline, search):
    router.include_router(_part)
