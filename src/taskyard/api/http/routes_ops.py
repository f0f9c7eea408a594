"""The operator's routes in one router (graph timelines, jobs search, history, running a
schedule now, live logs, bulk actions, drain), included before ``/api/v1/jobs/{id}`` so that
fixed paths under ``/api/v1/jobs/`` are theirs."""

from __future__ import annotations

from fastapi import APIRouter

from taskyard.api.http.routes_bulk import router as bulk
from taskyard.api.http.routes_drain import router as drain
from taskyard.api.http.routes_history import router as history
from taskyard.api.http.routes_logs import router as logs
from taskyard.api.http.routes_schedule_runs import router as schedule_runs
from taskyard.api.http.routes_search import router as search
from taskyard.api.http.routes_timeline import router as timeline

router = APIRouter()
for _part in (timeline, search, history, schedule_runs, logs, bulk, drain):
    router.include_router(_part)
