"""``GET /api/v1/jobs/{id}/logs/stream``: a job's output as Server-Sent Events, as it is
written (the worker reads it a few times a second; this route looks for news every
``POLL`` seconds), resumable: each chunk's ``id:`` is ``ATTEMPT.SEQ``, which a client
that reconnects sends back as ``Last-Event-ID``.

Events: ``attempt`` (``{"attempt"}``: its output follows), ``chunk`` (``{"attempt",
"seq", "stream", "data"}``), ``attempt-ended`` (``{"attempt", "state"}``), ``end``
(``{"state"}``: the job ended, or the one attempt asked for; the stream closes).
"""

from __future__ import annotations

import asyncio
import json
import re
import time
from collections.abc import AsyncIterator
from typing import Annotated, Any

from anyio import to_thread
from fastapi import APIRouter, Header, Path, Query, Request
from fastapi.responses import StreamingResponse

from taskyard.api.http.auth import READ
from taskyard.api.http.context import YardDep, errors
from taskyard.api.http.errors import ApiError
from taskyard.api.http.feed import EventFeed
from taskyard.api.http.schemas import ID_MAX
from taskyard.api.http.sse import RETRY_MS
from taskyard.api.log_follow import LogFollower, Step

router = APIRouter(prefix="/api/v1/jobs", tags=["jobs"])
POLL = 0.2
"""Seconds between two looks at the job's output while nothing is new."""
_RESUME = re.compile(r"^(\d{1,9})\.(\d{1,10})$")


def _message(event: str, data: dict[str, Any], event_id: str | None = None) -> str:
    head = "" if event_id is None else f"id: {event_id}\n"
    return f"{head}event: {event}\ndata: {json.dumps(data, separators=(',', ':'))}\n\n"


def _messages(step: Step) -> list[str]:
    out = []
    if step.began is not None and not step.chunks and step.ended is None:
        out.append(_message("attempt", {"attempt": step.began}))
    for c in step.chunks:
        out.append(_message("chunk", {"attempt": c.attempt, "seq": c.seq, "stream": c.stream,
                                      "data": c.data}, f"{c.attempt}.{c.seq}"))
    if step.ended is not None:
        out.append(_message("attempt-ended", {"attempt": step.ended[0],
                                              "state": step.ended[1]}))
        if step.began is not None and step.done is None:
            out.append(_message("attempt", {"attempt": step.began}))
    if step.done is not None:
        out.append(_message("end", {"state": step.done}))
    return out


async def log_stream(follower: LogFollower, feed: EventFeed, *,
                     heartbeat: float) -> AsyncIterator[str]:
    """The stream's text after its first step (see the module docstring)."""
    quiet_since = time.monotonic()
    while not feed.closed:
        step = await to_thread.run_sync(follower.step)
        for text in _messages(step):
            yield text
        if step.done is not None:
            return
        if step.chunks:
            quiet_since = time.monotonic()
        elif time.monotonic() - quiet_since >= heartbeat:
            yield ": keep-alive\n\n"
            quiet_since = time.monotonic()
        if not step.more:
            await asyncio.sleep(POLL)


@router.get("/{job_id}/logs/stream", response_class=StreamingResponse, dependencies=[READ],
            responses={**errors(404), 200: {
                "description": "`text/event-stream`: `attempt`, `chunk` (id "
                               "`ATTEMPT.SEQ`), `attempt-ended`, `end`",
                "content": {"text/event-stream": {}}}},
            summary="A job's output as it is written (Server-Sent Events, resumable)")
def stream_logs(
    request: Request, yard: YardDep,
    job_id: Annotated[int, Path(ge=1, le=ID_MAX, description="Job id.")],
    attempt: Annotated[int | None, Query(ge=1, le=2**31 - 1, description=(
        "Only this attempt (default: from the latest on, and the later ones)."))] = None,
    last_event_id: Annotated[str | None, Header(max_length=40)] = None,
) -> StreamingResponse:
    after = None
    if last_event_id:
        found = _RESUME.match(last_event_id)
        if found is None:
            raise ApiError(400, f"Last-Event-ID: {last_event_id[:40]!r} is not ATTEMPT.SEQ "
                                "as this stream sends")
        after = (int(found.group(1)), int(found.group(2)))
    follower = LogFollower(yard.store, job_id, attempt=attempt, after=after)
    first = follower.step()  # a missing job is a 404, not an empty stream
    heartbeat: float = request.app.state.settings.heartbeat

    async def stream() -> AsyncIterator[str]:
        yield f"retry: {RETRY_MS}\n\n"
        for text in _messages(first):
            yield text
        if first.done is not None:
            return
        async for text in log_stream(follower, request.app.state.feed, heartbeat=heartbeat):
            yield text

    return StreamingResponse(stream(), media_type="text/event-stream",
                             headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})
