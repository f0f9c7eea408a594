"""``Yard.backfill``: a schedule's jobs for the ticks of a past range (see
``store/transitions/backfills.py``), times read as users give them."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from taskyard.core.durations import DurationError
from taskyard.core.ticks import when_past
from taskyard.model.errors import InvalidInput

if TYPE_CHECKING:
    from taskyard.store import Store
    from taskyard.store.transitions.backfills import Backfill


def backfill(store: Store, schedule: str, start: float | str, end: float | str, *,
             max_active: int | None, dry_run: bool,
             progress: Callable[[int, int], None] | None) -> Backfill:
    """See :meth:`taskyard.api.yard.Yard.backfill`."""
    now = store.now()
    try:
        first = when_past(start, now=now, field="--from")
        last = when_past(end, now=now, field="--to")
    except DurationError as exc:
        raise InvalidInput(str(exc)) from None
    if dry_run:
        return store.backfills.plan(schedule, first, last)
    return store.backfills.create(schedule, first, last, max_active=max_active,
                                  progress=progress)
