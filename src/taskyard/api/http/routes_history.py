"""``GET /api/v1/history``: the stored history of the last hour, day or week — all pools
and types, or one pool or type — for the dashboard's charts (no Prometheus needed)."""

from __future__ import annotations

import logging
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Query

from taskyard.api.http.auth import READ
from taskyard.api.http.context import YardDep, errors
from taskyard.api.http.jsonio import answer
from taskyard.api.http.schemas_ops import HistoryOut
from taskyard.core.durations import iso
from taskyard.core.history import WINDOWS, Point, combine, series
from taskyard.core.limits import LimitError, check_text
from taskyard.model.errors import InvalidInput
from taskyard.store.reads.charts import history_keys, window_rows
from taskyard.store.transitions.history import roll_up

router = APIRouter(prefix="/api/v1", tags=["cluster"])
log = logging.getLogger("taskyard.http")
CATCH_UP = 4
"""Batches of events a read folds into the history first (a scheduler's history keeper
does the rest)."""
COUNTS = ("arrived", "started", "succeeded", "failed", "errored", "canceled", "finished")


def _point(p: Point) -> dict[str, Any]:
    return {"t": iso(p.bucket), **{k: getattr(p.counts, k) for k in COUNTS},
            "wait_p50": p.wait_p50, "wait_p95": p.wait_p95, "cycle_p50": p.cycle_p50,
            "cycle_p95": p.cycle_p95, "depth": p.depth, "depth_max": p.depth_max}


@router.get("/history", response_model=HistoryOut, dependencies=[READ], responses=errors(422),
            summary="Throughput, queue depth, waits, failures and cycle times over time")
def history(
    yard: YardDep,
    window: Annotated[Literal["hour", "day", "week"], Query(
        description="The last hour (1-minute buckets), day (15 minutes) or week "
                    "(2 hours).")] = "hour",
    pool: Annotated[str | None, Query(max_length=200, description="Only jobs whose first "
                                      "pool is this one.")] = None,
    type: Annotated[str | None, Query(max_length=200, description="Only this task "
                                      "type.")] = None,
) -> Any:
    for name, value in (("pool", pool), ("type", type)):
        try:
            check_text(value or "", name)
        except LimitError as exc:
            raise InvalidInput(str(exc)) from None
    try:
        roll_up(yard.store, batches=CATCH_UP)
    except Exception as exc:  # what is stored is still worth drawing
        log.warning("event=history-catch-up-failed error=%s", " ".join(str(exc).split()))
    now, rows = window_rows(yard.store, window, pool=pool or None, type=type or None)
    points = series(rows, now=now, window=window)
    total = combine(p.counts for p in points)
    keys = history_keys(yard.store)
    return answer({"window": window, "bucket_seconds": WINDOWS[window][1], "now": iso(now),
                   "pool": pool, "type": type, "points": [_point(p) for p in points],
                   "totals": {k: getattr(total, k) for k in COUNTS},
                   "pools": keys.get("pools", []), "types": keys.get("types", [])})
