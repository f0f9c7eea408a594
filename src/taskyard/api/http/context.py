"""What every route shares: the one Yard, the event feed, the token checker, the limits."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any

from fastapi import Depends, Request
from fastapi.responses import JSONResponse

from taskyard.api.http import MAX_BODY
from taskyard.api.http.errors import ApiError
from taskyard.api.http.feed import EventFeed
from taskyard.api.http.schemas import ErrorOut
from taskyard.api.yard import Yard


@dataclass
class Settings:
    """Server settings (``taskyard serve`` options)."""

    max_body: int = MAX_BODY
    heartbeat: float = 15.0
    """Seconds between keep-alive comments on an idle event stream."""
    threads: int = 12
    """Threads running handlers and the event stream's reads, each holding at most one
    database connection at a time: fewer than the store's PostgreSQL pool (5 + 10
    overflow), so that none waits for a connection."""


# Asynchronous, so that FastAPI does not run them in the threadpool: they only read the
# application's state (a thread hop per dependency would cost more than they do).
async def get_yard(request: Request) -> Yard:
    yard: Yard = request.app.state.yard
    return yard


async def get_feed(request: Request) -> EventFeed:
    feed: EventFeed = request.app.state.feed
    return feed


YardDep = Annotated[Yard, Depends(get_yard)]
FeedDep = Annotated[EventFeed, Depends(get_feed)]


def errors(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """OpenAPI ``responses`` for these error statuses, plus the ones every route has."""
    described = {400: "Not the API's schema", 401: "No valid token", 403: "Scope too low",
                 404: "Not found", 409: "Does not apply now", 413: "Body too large",
                 422: "Refused by taskyard's validation", 500: "Server error"}
    wanted = sorted({400, 401, 403, *statuses})
    return {s: {"model": ErrorOut, "description": described[s]} for s in wanted}


def parse_cursor(cursor: str | None) -> int | None:
    """A page cursor as given by ``next`` (opaque to clients; a job id here)."""
    if cursor is None or cursor == "":
        return None
    if not (cursor.isascii() and cursor.isdigit()) or len(cursor) > 18:
        raise ApiError(400, f"cursor: {cursor[:40]!r} is not a cursor this API gave")
    return int(cursor)


def answer(data: Any, status: int = 200) -> JSONResponse:
    """A JSON answer, sent as built: the records' ``to_json`` already gives the documented
    shape, and re-validating a 100,000-job graph on its way out would take seconds."""
    return JSONResponse(data, status_code=status)
