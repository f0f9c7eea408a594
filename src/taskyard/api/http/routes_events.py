"""``/api/v1/events`` (a page of the event log) and ``/api/v1/events/stream`` (SSE)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Header, Query, Request
from fastapi.responses import StreamingResponse

from taskyard.api.http.auth import READ
from taskyard.api.http.context import FeedDep, errors
from taskyard.api.http.errors import ApiError
from taskyard.api.http.feed import EventFilter
from taskyard.api.http.jsonio import answer
from taskyard.api.http.schemas import ID_MAX, EventListOut
from taskyard.api.http.sse import event_stream
from taskyard.store.transitions.events import EventCursor

router = APIRouter(prefix="/api/v1/events", tags=["events"], dependencies=[READ])
Pattern = Annotated[str | None, Query(max_length=400, description=(
    "AMQP topic pattern on the routing key (`*` one word, `#` any number).") )]
Topics = Annotated[list[str] | None, Query(max_length=20, description="Only these topics.")]
After = Annotated[int | None, Query(ge=0, le=ID_MAX, description="Events after this id.")]


def _filter(pattern: str | None, topic: list[str] | None) -> EventFilter:
    return EventFilter(pattern=pattern or None, topics=tuple(topic or ()))


@router.get("", response_model=EventListOut, responses=errors(),
            summary="Stored events after an id, oldest first")
def list_events(feed: FeedDep, after: After = None, pattern: Pattern = None,
                topic: Topics = None,
                limit: Annotated[int, Query(ge=1, le=1000)] = 100,
                tail: Annotated[int | None, Query(ge=1, le=1000, description=(
                    "Instead: the last N events (that match), oldest first."))] = None) -> Any:
    wanted = _filter(pattern, topic)
    page = feed.tail(tail, wanted) if tail else feed.read(after, wanted, limit=limit)
    return answer({"items": [e.to_json() for e in page.events], "next": page.next_id})


@router.get("/stream", response_class=StreamingResponse, responses={
    **errors(), 200: {"description": "`text/event-stream`: `id:`, `event:`, `data:` per "
                                     "event", "content": {"text/event-stream": {}}}},
    summary="New events as Server-Sent Events (resumable with Last-Event-ID)")
def stream_events(
    request: Request, feed: FeedDep, pattern: Pattern = None, topic: Topics = None,
    after: Annotated[int | None, Query(ge=0, le=ID_MAX, description=(
        "Start after this id (default: only events from now on).") )] = None,
    last_event_id: Annotated[str | None, Header(max_length=40)] = None,
) -> StreamingResponse:
    start: EventCursor | int | None = after
    if last_event_id:
        if not (last_event_id.isascii() and last_event_id.isdigit()) or len(last_event_id) > 18:
            raise ApiError(400, f"Last-Event-ID: {last_event_id[:40]!r} is not an event id")
        start = int(last_event_id)
    if start is None:
        start = feed.head()
    heartbeat: float = request.app.state.settings.heartbeat
    return StreamingResponse(
        event_stream(feed, _filter(pattern, topic), start, heartbeat=heartbeat),
        media_type="text/event-stream",
        headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})
