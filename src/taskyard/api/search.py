"""Jobs search as the HTTP API and the dashboard ask for it: text in, a
:class:`~taskyard.store.reads.job_search.JobQuery` and page cursors out (the store
read does the rest)."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from taskyard.core.durations import DurationError, parse_duration, parse_when
from taskyard.model.errors import InvalidInput
from taskyard.store.reads.job_search import JobQuery, Position

_ID = re.compile(r"^#?(\d{1,18})$")
_POSITION = re.compile(r"^(\d{1,18})$|^f(-?\d{1,12}(?:\.\d{1,9})?)_(\d{1,18})$")


def when_text(text: str, now: float, field: str) -> float:
    """A duration back from ``now`` (``10m``) or an ISO 8601 time, as epoch seconds."""
    try:
        return now - parse_duration(text, field=field)
    except DurationError:
        pass
    try:
        return parse_when(text, now=now, field=field)
    except (DurationError, ValueError, OverflowError):
        raise InvalidInput(f"{field}: {text[:60]!r} is neither a duration (10m, 2h) nor an "
                           "ISO 8601 time") from None


def id_in_text(text: str) -> int | None:
    """The job id a search text names (``123`` or ``#123``), else None."""
    found = _ID.match(text.strip())
    return None if found is None else int(found.group(1))


def encode_position(at: Position | None) -> str | None:
    """A page's ``next``: the last job examined (with its end time in end order)."""
    if at is None:
        return None
    if at.finished_at is None:
        return str(at.id)
    return f"f{at.finished_at!r}_{at.id}"


def decode_position(text: str | None, *, by_end: bool) -> Position | None:
    """A ``cursor`` as :func:`encode_position` wrote it, for the same order (ValueError
    for any other text)."""
    if not text:
        return None
    found = _POSITION.match(text)
    if found is None or (found.group(1) is None) != by_end:
        raise ValueError(f"cursor: {text[:40]!r} is not a cursor this search gave")
    if found.group(1) is not None:
        return Position(int(found.group(1)))
    return Position(int(found.group(3)), float(found.group(2)))


def job_query(now_fn: Callable[[], float], *, q: str | None,
              state: Sequence[str] | None,
              type: Sequence[str] | None, label: str | None, graph_id: int | None,
              schedule: str | None, pool: str | None, worker: str | None,
              since: str | None, until: str | None, sort: str) -> JobQuery:
    """The search the filters ask for, as text (``q``: a job id, else text; ``since``
    and ``until``: durations back from ``now_fn()``, or times), for the HTTP API and the CLI."""
    now = now_fn() if since or until else 0.0
    named = None if q is None else id_in_text(q)
    return JobQuery(
        ids=() if named is None else (named,), states=tuple(state or ()),
        types=tuple(type or ()), label=label or None, graph_id=graph_id,
        schedule=schedule or None, pool=pool or None,
        worker=worker or None, text=None if named is not None or q is None else q,
        since=None if not since else when_text(since, now, "since"),
        until=None if not until else when_text(until, now, "until"), sort=sort)
