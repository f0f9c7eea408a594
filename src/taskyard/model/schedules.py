"""What a schedule is: its validated definition and its stored record.

Validation here needs no database (the task type is checked by the store);
:mod:`taskyard.store.transitions.schedules` writes schedules and
:mod:`taskyard.store.transitions.schedule_runs` runs them.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from taskyard.core.cron import CronError, next_fire, parse_cron, resolve_zone
from taskyard.core.durations import DurationError, Interval, iso, parse_duration
from taskyard.core.limits import PRIORITY_MAX, check_name, encode_args, whole
from taskyard.core.recurrence import MIN_EVERY, Catchup, every_after, parse_catchup
from taskyard.core.ticks import Overlap, grid_after, parse_overlap
from taskyard.model.errors import InvalidInput, refused_as_invalid
from taskyard.model.records import JSON

SCHEDULE_FIELDS = frozenset(
    {"type", "args", "every", "cron", "timezone", "paused", "priority", "catchup",
     "catchup_window", "overlap"}
)
"""Field names of a schedule in ``taskyard apply`` files (DESIGN.md, plus priority/catchup)."""


@dataclass(frozen=True, slots=True)
class ScheduleDef:
    """A validated schedule definition: what ``schedule add`` and ``apply`` write."""

    name: str
    type: str
    args: dict[str, JSON]
    priority: int = 0
    every: float | None = None
    cron: str | None = None
    timezone: str = "UTC"
    catchup: Catchup = Catchup.ONE
    paused: bool = False
    catchup_window: float | None = None
    """Missed ticks older than this many seconds are dropped (None: no window)."""
    overlap: Overlap = Overlap.ALLOW

    @property
    def adaptive(self) -> bool:
        return self.every is None and self.cron is None


def define_schedule(
    name: str,
    type: str,
    *,
    every: float | str | None = None,
    cron: str | None = None,
    args: dict[str, JSON] | None = None,
    timezone: str | None = None,
    priority: int = 0,
    catchup: str | None = None,
    paused: bool = False,
    catchup_window: float | str | None = None,
    overlap: str | None = None,
) -> ScheduleDef:
    """Check a definition's own fields; InvalidInput names the schedule and the problem."""
    with refused_as_invalid():
        check_name(name, "schedule name")
    where = f"schedule {name!r}"
    if any(c.isspace() for c in name):
        raise InvalidInput(f"{where}: the name must be 1-200 characters without spaces")
    if not isinstance(type, str) or not type:
        raise InvalidInput(f"{where}: 'type' must name a task type")
    if every is not None and cron is not None:
        raise InvalidInput(f"{where}: give every or cron, not both")
    if args is not None and not isinstance(args, dict):
        raise InvalidInput(f"{where}: args must be a JSON object")
    with refused_as_invalid(where):
        check_name(type, "type")
        whole(priority, "priority", minimum=-PRIORITY_MAX, maximum=PRIORITY_MAX)
        for field, text in (("cron", cron), ("timezone", timezone)):
            if text is not None:
                check_name(text, field)
    with refused_as_invalid():
        encode_args(args or {}, where=where)
    if not isinstance(paused, bool):
        raise InvalidInput(f"{where}: paused must be true or false")
    try:
        seconds = None if every is None else parse_duration(every, field=f"{where}: every")
        expr = None if cron is None else parse_cron(cron)
        zone = timezone or "UTC"
        resolve_zone(zone)
        policy = parse_catchup(catchup)
        overlaps = parse_overlap(overlap)
        window = None if catchup_window is None else parse_duration(
            catchup_window, field=f"{where}: catchup_window")
    except DurationError as exc:
        raise InvalidInput(str(exc)) from None
    except (CronError, ValueError) as exc:
        raise InvalidInput(f"{where}: {exc}") from None
    if seconds is not None and seconds < MIN_EVERY:
        raise InvalidInput(f"{where}: every must be at least {MIN_EVERY:g}s")
    if window is not None and window <= 0:
        raise InvalidInput(f"{where}: catchup_window must be more than 0 seconds")
    return ScheduleDef(name, type, dict(args or {}), priority, seconds,
                       expr.text if expr else None, zone, policy, paused, window, overlaps)


def definition_from_mapping(name: str, body: Mapping[str, Any]) -> ScheduleDef:
    """A definition from an ``apply`` file entry (``type``, ``args``, ``every`` …)."""
    unknown = set(body) - SCHEDULE_FIELDS
    if unknown:
        raise InvalidInput(f"schedule {name!r}: unknown fields {sorted(unknown)}")
    return define_schedule(
        name, body.get("type"),  # type: ignore[arg-type]  # checked inside
        every=body.get("every"), cron=body.get("cron"), args=body.get("args"),
        timezone=body.get("timezone"), priority=body.get("priority", 0),
        catchup=body.get("catchup"), paused=body.get("paused", False),
        catchup_window=body.get("catchup_window"), overlap=body.get("overlap"),
    )


@dataclass(frozen=True, slots=True)
class ScheduleRecord:
    """A schedule as stored. Times are epoch seconds; intervals are seconds."""

    name: str
    type: str
    args: dict[str, JSON]
    priority: int
    every: float | None
    cron: str | None
    timezone: str
    catchup: str
    paused: bool
    next_run: float
    current_interval: float | None
    last_job_id: int | None
    last_run_at: float | None
    last_outcome: str | None
    created_at: float
    updated_at: float
    catchup_window: float | None = None
    overlap: str = "allow"

    @property
    def kind(self) -> str:
        """``every``, ``cron`` or ``adaptive``."""
        return "every" if self.every is not None else "cron" if self.cron else "adaptive"

    @property
    def interval(self) -> float | None:
        """Seconds between runs: ``every``, or the adaptive current interval; None for cron."""
        return self.every if self.every is not None else self.current_interval

    def to_json(self) -> dict[str, JSON]:
        return {
            "name": self.name,
            "type": self.type,
            "kind": self.kind,
            "next_run": iso(self.next_run),
            "interval": self.interval,
            "cron": self.cron,
            "paused": self.paused,
            "timezone": self.timezone,
            "args": self.args,
            "priority": self.priority,
            "catchup": self.catchup,
            "catchup_window": self.catchup_window,
            "overlap": self.overlap,
            "current_interval": self.current_interval,
            "last_job_id": self.last_job_id,
            "last_run_at": iso(self.last_run_at),
            "last_outcome": self.last_outcome,
            "created_at": iso(self.created_at),
            "updated_at": iso(self.updated_at),
        }


def type_interval(m: Any) -> Interval | None:
    """The task type's adaptive interval from a row carrying its ``interval_*`` columns."""
    if m["interval_default"] is None:
        return None
    return Interval(m["interval_default"], m["interval_min"], m["interval_max"])


def following(m: Any, *, past: bool = False) -> Callable[[float], float]:
    """``t -> first tick after t`` of an every/cron schedule row (anchored on next_run;
    ``past``: an every grid extends before it too, for a backfill)."""
    if m["every"] is not None:
        anchor, every = float(m["next_run"]), float(m["every"])
        if past:
            return lambda after: grid_after(anchor, every, after)
        return lambda after: every_after(anchor, every, after)
    expr, zone = parse_cron(m["cron"]), resolve_zone(m["timezone"])
    return lambda after: next_fire(expr, after, zone)


def initial_timing(
    d: ScheduleDef, bounds: Interval | None, old: ScheduleRecord | None, now: float
) -> tuple[float | None, float]:
    """(current_interval, next_run) of a new or redefined schedule.

    New every/adaptive schedules run at once; cron ones at their next fire.
    A redefinition keeps next_run when the timing did not change, and an
    adaptive one keeps what it learned (clamped to the type's bounds).
    """
    if d.adaptive:
        assert bounds is not None
        if old is not None and old.kind == "adaptive":
            current = old.current_interval or bounds.default
            return min(max(current, bounds.minimum), bounds.maximum), old.next_run
        return bounds.default, now
    if old is not None and (old.every, old.cron, old.timezone) == (d.every, d.cron, d.timezone):
        return None, old.next_run
    if d.every is not None:
        # A whole-second anchor keeps ticks exact, hence their keys distinct.
        return None, float(math.floor(now))
    assert d.cron is not None
    return None, next_fire(d.cron, now, d.timezone)
