"""What every route shares: the one Yard, the event feed, the token checker, the limits."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any

from fastapi import Depends, Request

from taskyard.api.http import MAX_BODY
from taskyard.api.http.errors import ApiError
from taskyard.api.http.feed import EventFeed
from taskyard.api.http.schemas import ErrorOut
from taskyard.api.yard import Yard


@dataclass
class Settings:
    """Server settings (``taskyard serve`` options)."""

    max_body: int = MAX_BODY
    """Largest body of a graph document (bytes); smaller routes have smaller limits
    (:class:`taskyard.api.http.guard.BodyLimits`)."""
    batch_body: int = 16 * 1024 * 1024
    """Largest body of ``POST /api/v1/jobs/batch``."""
    apply_body: int = 4 * 1024 * 1024
    """Largest body of ``POST /api/v1/apply``."""
    token_ttl: float = 1.0
    """Seconds a token's row is believed (a revocation elsewhere takes this long)."""
    auth_failures: int = 60
    """Failed authentications a client address may make per minute (then 429)."""
    trusted_hosts: tuple[str, ...] = ()
    """``Host`` names answered (``*.example.com`` for subdomains); empty: any."""
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
                 415: "Body not JSON", 422: "Refused by taskyard's validation",
                 429: "Too many failed authentications", 500: "Server error"}
    wanted = sorted({400, 401, 403, 429, *statuses})
    return {s: {"model": ErrorOut, "description": described[s]} for s in wanted}


def parse_cursor(cursor: str | None) -> int | None:
    """A page cursor as given by ``next`` (opaque to clients; a job id here)."""
    if cursor is None or cursor == "":
        return None
    if not (cursor.isascii() and cursor.isdigit()) or len(cursor) > 18:
        raise ApiError(400, f"cursor: {cursor[:40]!r} is not a cursor this API gave")
    return int(cursor)
