"""``POST /api/v1/jobs/bulk/{action}``: cancel or retry every job a search finds (write
scope). The filters are the search's query parameters (``GET /api/v1/jobs/search``);
``dry_run=true`` counts them and answers ``up_to``, the newest job of the set: sent back,
the action changes what was counted and no job submitted since (see
``store/transitions/bulk.py``: one transaction per batch, an event per job)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Path, Query

from taskyard.api.http.auth import WRITE
from taskyard.api.http.context import YardDep, errors
from taskyard.api.http.jsonio import answer
from taskyard.api.http.routes_search import SearchQuery
from taskyard.api.http.schemas import ID_MAX
from taskyard.api.http.schemas_ops import BulkOut
from taskyard.store.transitions.bulk import act_on_jobs

router = APIRouter(prefix="/api/v1/jobs", tags=["jobs"])


@router.post("/bulk/{action}", response_model=BulkOut, dependencies=[WRITE],
             responses=errors(422), summary="Cancel or retry every job a search finds")
def bulk(
    yard: YardDep, query: SearchQuery,
    action: Annotated[Literal["cancel", "retry"], Path(description=(
        "cancel: the jobs not ended yet; retry: the failed, errored, canceled or "
        "dependency_failed ones."))],
    dry_run: Annotated[bool, Query(description="Count only; change nothing.")] = False,
    up_to: Annotated[int | None, Query(ge=1, le=ID_MAX, description=(
        "Only jobs up to this id: `up_to` of the dry run whose count was confirmed."))] = None,
) -> Any:
    done = act_on_jobs(yard.store, action, query, up_to=up_to, dry_run=dry_run)
    return answer(done.to_json(dry_run=dry_run))
