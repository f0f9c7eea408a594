"""A fixed-rhythm schedule's ticks beyond the next one: the ticks of a past range (a
backfill), the ticks a plan drops and why (catch-up, its window, overlap), and what a
tick does while the schedule's previous run has not ended (its overlap policy).

Pure: ``following(t)``, the first tick strictly after ``t``, stands for the rhythm (an
``every`` grid or a cron expression); callers pass times in.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from typing import TypeVar

from taskyard.core.durations import DurationError, parse_duration, parse_when

TICK_GAP = 0.001
"""Less than the gap between two ticks of any schedule (every ≥ 1 s; cron: minutes)."""
DROPPED_COUNTED = 1000
"""Most dropped ticks a plan counts one by one (a longer span says "or more")."""
C = TypeVar("C", bound=StrEnum)
_UNENDED = ("waiting", "pending", "dispatched", "running", "suspended", "awaiting")


class Overlap(StrEnum):
    """What a tick does while the schedule's previous job has not ended."""

    ALLOW = "allow"
    """Start another job (the default: cron's behaviour)."""
    SKIP = "skip"
    """Drop the tick."""
    BUFFER_ONE = "buffer-one"
    """Keep one job queued behind the running one; drop the tick when one is queued."""


def parse_choice(kind: type[C], value: str | None, default: C, field: str) -> C:
    """The member of ``kind`` named ``value`` (any case; ``default`` for None); else
    ValueError naming ``field`` and the choices."""
    if value is None:
        return default
    try:
        return kind(str(value).lower())
    except ValueError:
        choices = ", ".join(member.value for member in kind)
        raise ValueError(f"{field}: {value!r} is not one of {choices}") from None


def parse_overlap(value: str | None) -> Overlap:
    """``allow`` (also for ``None``), ``skip`` or ``buffer-one``; ValueError otherwise."""
    return parse_choice(Overlap, value, Overlap.ALLOW, "overlap")


class OverlapAction(StrEnum):
    RUN = "run"
    """Create the tick's job as usual."""
    BUFFER = "buffer"
    """Create it waiting for the previous job to end (an ``always`` edge)."""
    SKIP = "skip"
    """Create nothing; the tick is dropped."""


def overlap_action(policy: Overlap, previous: str | None) -> OverlapAction:
    """What a tick does under ``policy`` when the schedule's previous job is in state
    ``previous`` (None: there is none). A previous job that is itself ``waiting`` is one
    queued already (behind the running one, or its prerequisites)."""
    if policy is Overlap.ALLOW or previous not in _UNENDED:
        return OverlapAction.RUN
    if policy is Overlap.SKIP or previous == "waiting":
        return OverlapAction.SKIP
    return OverlapAction.BUFFER


def overlap_reason(policy: Overlap, previous_job: str, previous: str) -> str:
    """Why a tick was dropped for its overlap with the previous job (``previous_job``:
    which, in words; ``previous``: its state)."""
    if previous == "waiting" and policy is Overlap.BUFFER_ONE:
        return f"overlap buffer-one: {previous_job} is queued already"
    return f"overlap {policy}: {previous_job} is {previous}"


@dataclass(frozen=True, slots=True)
class Dropped:
    """Ticks a plan dropped: the first and the last, how many (at most
    :data:`DROPPED_COUNTED`; ``more``: there were more), and why."""

    first: float
    last: float
    count: int
    reason: str
    more: bool = False


def dropped(first: float, stop: float, following: Callable[[float], float],
            reason: str) -> Dropped | None:
    """The ticks from ``first`` (a tick) up to ``stop`` (excluded), or None when there is
    none; counted one by one up to :data:`DROPPED_COUNTED`."""
    if first >= stop:
        return None
    count, last, tick = 0, first, first
    while tick < stop and count < DROPPED_COUNTED:
        count, last, tick = count + 1, tick, following(tick)
    return Dropped(first, last, count, reason, more=tick < stop)


def grid_after(anchor: float, every: float, after: float) -> float:
    """The first tick of ``anchor + k * every`` (k any whole number, before the anchor
    too) strictly after ``after``: an ``every`` schedule's ticks in the past, for a
    backfill. By multiplication, so that ticks do not drift."""
    steps = math.floor((after - anchor) / every)
    tick = anchor + steps * every
    while tick > after:  # float rounding: step back, then forward to the first after
        steps -= 1
        tick = anchor + steps * every
    while tick <= after:
        steps += 1
        tick = anchor + steps * every
    return tick


def when_past(value: float | str, *, now: float, field: str) -> float:
    """Epoch seconds of a moment in the past: epoch seconds, ``now``, an ISO 8601 time
    (UTC if naive), or a duration meaning that long ago (``7d``: seven days ago).
    DurationError names ``field``."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    if not isinstance(value, str):
        raise DurationError(f"{field}: expected a time, got {type(value).__name__}")
    if value.strip().lower() == "now":
        return now
    try:
        return now - parse_duration(value, field=field)
    except DurationError:
        return parse_when(value, now=now, field=field)


def ticks_between(following: Callable[[float], float], start: float, end: float,
                  limit: int) -> list[float]:
    """The ticks in ``[start, end)``, oldest first; at most ``limit + 1`` (one more than
    ``limit`` says the range holds too many)."""
    ticks: list[float] = []
    # A millisecond before: ticks are at least a second apart, and times are read to the
    # microsecond (a cron's next fire of one float step before a tick is the tick after).
    tick = following(start - TICK_GAP)
    while tick < end and len(ticks) <= limit:
        ticks.append(tick)
        tick = following(tick)
    return ticks
