"""Recurring work, decided without a clock: ticks, catch-up, adaptive intervals, aging.

A schedule fires on *ticks*: instants from a fixed interval (``every``), a cron
expression, or — for an adaptive schedule — the end of the previous run plus
the current interval (Software Heritage's recurring tasks). The store asks
these functions what to do and writes the answer; callers pass ``now`` in.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from taskyard.core.durations import Interval, duration_text, iso
from taskyard.core.ticks import Dropped, dropped, parse_choice

MAX_CATCHUP_RUNS = 100
"""Most jobs one schedule creates in one cycle under ``catchup: all``."""
MISFIRE_GRACE = 60.0
"""A tick later than this (seconds) counts as missed rather than merely late."""
MIN_EVERY = 1.0
"""Shortest fixed interval: ticks are keyed by whole seconds, one job per key."""


class Catchup(StrEnum):
    """What to do about ticks missed while no scheduler ran."""

    ONE = "one"
    """One catch-up run for all the missed ticks, then the normal rhythm (default)."""
    ALL = "all"
    """One run per missed tick, at most :data:`MAX_CATCHUP_RUNS` per cycle."""
    NONE = "none"
    """Missed ticks are skipped; only a tick late by at most the grace runs."""


def parse_catchup(value: str | None) -> Catchup:
    """``one`` (also for ``None``), ``all`` or ``none``; ValueError otherwise."""
    return parse_choice(Catchup, value, Catchup.ONE, "catchup")


@dataclass(frozen=True, slots=True)
class TickPlan:
    """Which ticks get a job now, and the schedule's next due time afterwards."""

    ticks: tuple[float, ...]
    next_run: float
    skipped: bool = False
    """True when missed ticks were dropped (policy ``one`` or ``none``, or the window)."""
    dropped: tuple[Dropped, ...] = ()
    """The ticks that get no job of their own, and why (a ``schedule-skipped`` event)."""


def plan_ticks(
    next_run: float,
    now: float,
    following: Callable[[float], float],
    policy: Catchup,
    *,
    grace: float = MISFIRE_GRACE,
    limit: int = MAX_CATCHUP_RUNS,
    window: float | None = None,
) -> TickPlan:
    """Decide the jobs of a fixed-rhythm schedule due at ``next_run``.

    ``following(t)`` is the first tick strictly after ``t``. ``window``: missed ticks
    at or before ``now - window`` are dropped whatever the policy (the catch-up
    window). Cost: at most ``limit`` calls of ``following`` (policy ``all``), else a
    few — never one per missed tick, however long the downtime — plus the counting of
    dropped ticks (at most :data:`taskyard.core.ticks.DROPPED_COUNTED`).
    """
    if next_run > now:
        return TickPlan((), next_run)
    too_old: tuple[Dropped, ...] = ()
    if window is not None and next_run <= now - window:
        kept = following(now - window)
        span = dropped(next_run, kept, following, f"older than the catch-up window "
                                                 f"({duration_text(window)})")
        too_old = (span,) if span else ()
        next_run = kept
        if next_run > now:
            return TickPlan((), next_run, skipped=True, dropped=too_old)
    plan = _plan_due(next_run, now, following, policy, grace=grace, limit=limit)
    if too_old:
        return TickPlan(plan.ticks, plan.next_run, True, too_old + plan.dropped)
    return plan


def _plan_due(next_run: float, now: float, following: Callable[[float], float],
              policy: Catchup, *, grace: float, limit: int) -> TickPlan:
    if policy is Catchup.ALL:
        ticks: list[float] = []
        tick = next_run
        while tick <= now and len(ticks) < limit:
            ticks.append(tick)
            tick = following(tick)
        return TickPlan(tuple(ticks), tick)
    upcoming = following(now)
    second = following(next_run)
    if policy is Catchup.ONE:
        # Keyed by the oldest due tick: every scheduler that read the same
        # next_run picks the same key, so racing schedulers create one job.
        folded = dropped(second, upcoming, following,
                         f"catchup one: run once, as the job of {iso(next_run)}")
        return TickPlan((next_run,), upcoming, skipped=folded is not None,
                        dropped=() if folded is None else (folded,))
    missed = "catchup none: missed while no scheduler ran"
    if now - next_run <= grace:
        late = dropped(second, upcoming, following, missed)
        return TickPlan((next_run,), upcoming, skipped=late is not None,
                        dropped=() if late is None else (late,))
    late_tick = following(now - grace)
    if late_tick <= now:
        span = dropped(next_run, late_tick, following, missed)
        return TickPlan((late_tick,), upcoming, skipped=True,
                        dropped=() if span is None else (span,))
    span = dropped(next_run, upcoming, following, missed)
    return TickPlan((), upcoming, skipped=True, dropped=() if span is None else (span,))


def every_after(anchor: float, every: float, after: float) -> float:
    """The first tick of ``anchor + k * every`` (k ≥ 0) strictly after ``after``.

    Computed by multiplication, not by adding ``every`` repeatedly, so ticks do
    not drift and a long downtime costs nothing.
    """
    if after < anchor:
        return anchor
    # Start one step short of the estimate, so float rounding of the division
    # can never skip a tick; the loop then runs at most a few times.
    steps = max(math.floor((after - anchor) / every) - 1, 0)
    tick = anchor + steps * every
    while tick <= after:
        steps += 1
        tick = anchor + steps * every
    return tick


def eventful_of(result: Any) -> bool | None:
    """A handler's ``{"eventful": true|false}`` report, or ``None`` if it gave none."""
    if isinstance(result, dict):
        value = result.get("eventful")
        if isinstance(value, bool):
            return value
    return None


def next_interval(
    current: float | None,
    bounds: Interval,
    backoff_factor: float | None,
    *,
    succeeded: bool,
    eventful: bool | None,
) -> float:
    """The adaptive interval after a run (Software Heritage's backoff).

    Eventful → divided by ``backoff_factor`` (come back sooner); uneventful →
    multiplied (come back later); clamped to ``[bounds.minimum, bounds.maximum]``.
    A failure, or a success that did not say, keeps the interval: a failure
    says nothing about how often the source changes.
    """
    interval = bounds.default if current is None else current
    if succeeded and eventful is not None and backoff_factor is not None:
        interval = interval / backoff_factor if eventful else interval * backoff_factor
    return min(max(interval, bounds.minimum), bounds.maximum)


def adaptive_next_run(end: float, interval: float, previous_tick: float) -> float:
    """Next run of an adaptive schedule: ``end + interval``.

    Never within the whole second of the previous tick: jobs are keyed by the
    tick's whole second, and a new tick must get a new key.
    """
    return max(end + interval, math.floor(previous_tick) + 1.0)


def tick_key(schedule: str, tick: float) -> str:
    """The job dedup key of one schedule tick: ``schedule:<name>:<epoch int>``."""
    return f"schedule:{schedule}:{math.floor(tick)}"


def effective_priority(priority: int, waited_seconds: float, aging_minutes: float) -> int:
    """Priority with anti-starvation aging: +1 per full ``aging_minutes`` of waiting.

    ``aging_minutes == 0`` turns aging off (the default): order is then strictly
    priority, then age. Nothing changes before the first full period has passed.
    """
    if aging_minutes < 0:
        raise ValueError(f"aging_minutes must be >= 0, got {aging_minutes}")
    if aging_minutes == 0 or waited_seconds <= 0:
        return priority
    return priority + math.floor(waited_seconds / (aging_minutes * 60.0))


def placement_key(
    priority: int, job_id: int, waited_seconds: float, aging_minutes: float
) -> tuple[int, int]:
    """Sort key of a pending job: higher effective priority first, then older (lower id)."""
    return (-effective_priority(priority, waited_seconds, aging_minutes), job_id)
