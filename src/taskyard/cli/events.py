"""``taskyard events``: the event log, filtered; ``--follow`` waits for new events through
the same feed as the HTTP event stream (woken by the database, not by polling hard)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import click

from taskyard.cli.main import State
from taskyard.cli.output import print_json, short, when
from taskyard.core.durations import DurationError, parse_duration, parse_when
from taskyard.model.records import EventRecord

if TYPE_CHECKING:
    from taskyard.api.http.feed import EventFeed, EventFilter, FeedPage
    from taskyard.store.transitions.events import EventCursor


def since_epoch(text: str, now: float) -> float:
    """``--since``: a duration back from now (``10m``) or an ISO 8601 time."""
    try:
        return now - parse_duration(text, field="--since")
    except DurationError:
        pass
    try:
        return parse_when(text, now=now, field="--since")
    except DurationError:
        raise click.BadParameter(f"{text!r} is neither a duration (10m, 2h) nor an ISO "
                                 "8601 time", param_hint="--since") from None


def _line(e: EventRecord) -> str:
    return f"{when(e.created_at)}  {e.topic:<15} {e.routing_key}  {short(e.payload, 120)}"


@click.command("events")
@click.option("--follow", "-f", is_flag=True, help="Then keep printing new events.")
@click.option("--pattern", help="AMQP topic pattern on the routing key (* one word, # any).")
@click.option("--topic", "topics", multiple=True, help="Only these topics (repeatable).")
@click.option("--since", help="From this time: a duration back (10m, 2h) or an ISO 8601 time.")
@click.option("--tail", type=click.IntRange(min=0),
              help="Only the last N stored events (with --follow: then the new ones).")
@click.option("--limit", type=click.IntRange(min=1), default=1000, show_default=True,
              help="Most stored events printed (without --follow); filters see every event.")
@click.option("--json", "as_json", is_flag=True,
              help="Print JSON: a list, or with --follow one object per line.")
@click.pass_obj
def events(state: State, follow: bool, pattern: str | None, topics: tuple[str, ...],
           since: str | None, tail: int | None, limit: int, as_json: bool) -> None:
    """Stored events (topic, routing key, payload), oldest first.

    --follow without --since or --tail prints only events from now on.
    """
    # Imported here: `taskyard --help` lists this command without the database stack.
    from taskyard.api.http.feed import EventFeed, EventFilter  # noqa: PLC0415 - start-up time

    wanted = EventFilter(pattern=pattern, topics=topics)
    feed = EventFeed(state.yard.store)
    try:
        first = _stored(feed, state, wanted, since=since, tail=tail,
                        limit=None if follow else limit, history=not follow)
        if not follow:
            if as_json:
                print_json([e.to_json() for e in first.events])
            else:
                for e in first.events:
                    click.echo(_line(e))
            return
        cursor = first.cursor
        while True:
            for e in first.events:
                click.echo(json.dumps(e.to_json()) if as_json else _line(e))
            if not first.events:
                feed.wait(5.0)
            first = feed.read(cursor, wanted)
            cursor = first.cursor
    finally:
        feed.close()


def _stored(feed: EventFeed, state: State, wanted: EventFilter, *, since: str | None,
            tail: int | None, limit: int | None, history: bool) -> FeedPage:
    """The events to print first, and the cursor after them."""
    from taskyard.api.http.feed import FeedPage  # noqa: PLC0415 - start-up time

    if tail is not None:
        page = feed.tail(tail, wanted) if tail else FeedPage([], feed.head())
        if since is not None:
            start = since_epoch(since, state.yard.store.now())
            page = FeedPage([e for e in page.events if e.created_at >= start], page.cursor)
        return page
    if since is not None:
        cursor: EventCursor | None = feed.cursor_at(since_epoch(since, state.yard.store.now()))
    elif history:
        cursor = None
    else:
        return FeedPage([], feed.head())  # --follow alone: from now on
    found: list[EventRecord] = []
    while limit is None or len(found) < limit:
        page = feed.read(cursor, wanted, limit=1000 if limit is None else limit - len(found))
        found.extend(page.events)
        if page.cursor == cursor:
            break
        cursor = page.cursor
    return FeedPage(found, feed.cursor(cursor))


def register(group: click.Group) -> None:
    group.add_command(events)
