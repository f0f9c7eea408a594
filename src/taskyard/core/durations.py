"""Parsing of durations and points in time as users write them.

``90``, ``90s``, ``5m``, ``2h``, ``1d`` (a bare number is seconds);
``--run-after`` takes a duration or an ISO 8601 time.

Both are bounded where they enter (DESIGN.md): a duration is 0 to 100 years, a time
lies in years 1 to 9999 — what every reader can print as ISO 8601. Rendering is total
all the same: :func:`iso` clamps a time stored out of range (by an older version), so
that one bad row never takes a whole list down.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from datetime import UTC, datetime

from taskyard.core.limits import quoted

DURATION_MAX = 100 * 365.25 * 86400.0
"""The longest duration taken anywhere (100 years, in seconds)."""
TIME_MIN = -62135596800.0
"""0001-01-01T00:00:00Z in epoch seconds: the earliest time taken."""
TIME_MAX = 253402300799.0
"""9999-12-31T23:59:59Z in epoch seconds: the latest time taken."""
_UNITS = {"": 1.0, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0, "w": 604800.0}
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhdw]?)\s*$", re.IGNORECASE)


class DurationError(ValueError):
    """A duration or time that cannot be read; the message says why."""


def parse_duration(text: str | float | int, *, field: str = "duration") -> float:
    """Seconds in ``text`` (``90``, ``90s``, ``5m``, ``2h``, ``1d``)."""
    if isinstance(text, bool):
        raise DurationError(f"{field}: expected a duration like 90, 90s, 5m, 2h or 1d")
    if isinstance(text, int | float):
        try:
            value = float(text)
        except OverflowError:  # an int past any float
            value = math.inf
    else:
        match = _DURATION.match(text)
        if match is None:
            raise DurationError(
                f"{field}: {quoted(text)} is not a duration (use 90, 90s, 5m, 2h or 1d)"
            )
        value = float(match.group(1)) * _UNITS[match.group(2).lower()]
    if math.isnan(value) or value < 0:
        raise DurationError(f"{field}: {quoted(text)} must be a non-negative duration")
    if value > DURATION_MAX:
        raise DurationError(f"{field}: {quoted(text)} is out of range: a duration is "
                            "0 to 100 years")
    return value


def check_time(value: object, *, field: str = "time") -> float:
    """``value`` (epoch seconds) if it is a number in years 1 to 9999; else
    DurationError naming ``field`` and the range."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise DurationError(f"{field}: {quoted(value)} is not a time (epoch seconds or "
                            "ISO 8601)")
    try:
        seconds = float(value)
    except OverflowError:  # an int past any float
        seconds = math.inf
    if not (math.isfinite(seconds) and TIME_MIN <= seconds <= TIME_MAX):
        raise _out_of_time(field, value)
    return seconds


def _out_of_time(field: str, value: object) -> DurationError:
    return DurationError(f"{field}: {quoted(value)} is out of range: a time lies between "
                         "0001-01-01 and 9999-12-31T23:59:59Z")


@dataclass(frozen=True, slots=True)
class Interval:
    """An adaptive interval: default, and the bounds it is clamped to."""

    default: float
    minimum: float
    maximum: float


def parse_interval(text: str | dict[str, object], *, field: str = "interval") -> Interval:
    """``DEFAULT[,MIN,MAX]`` or ``{default, min, max}`` into an :class:`Interval`."""
    if isinstance(text, dict):
        unknown = set(text) - {"default", "min", "max"}
        if unknown:
            raise DurationError(f"{field}: unknown keys {sorted(unknown)}")
        if "default" not in text:
            raise DurationError(f"{field}: 'default' is required")
        default = parse_duration(_as_duration(text["default"], field), field=field)
        low = parse_duration(_as_duration(text.get("min", default), field), field=field)
        high = parse_duration(_as_duration(text.get("max", default), field), field=field)
    else:
        parts = [p.strip() for p in str(text).split(",")]
        if len(parts) not in (1, 3):
            raise DurationError(f"{field}: expected DEFAULT or DEFAULT,MIN,MAX, got {text!r}")
        default = parse_duration(parts[0], field=field)
        low, high = (
            (parse_duration(parts[1], field=field), parse_duration(parts[2], field=field))
            if len(parts) == 3
            else (default, default)
        )
    if not low <= default <= high:
        raise DurationError(f"{field}: need MIN <= DEFAULT <= MAX, got {low}, {default}, {high}")
    if default <= 0:
        raise DurationError(f"{field}: the interval must be positive")
    return Interval(default, low, high)


def _as_duration(value: object, field: str) -> str | float:
    if isinstance(value, str | int | float) and not isinstance(value, bool):
        return value
    raise DurationError(f"{field}: {value!r} is not a duration")


def parse_when(text: str, *, now: float, field: str = "run_after") -> float:
    """Epoch seconds for a duration from ``now`` or an ISO 8601 time (UTC if naive),
    within the bounds of :func:`check_time`."""
    try:
        return check_time(now + parse_duration(text, field=field), field=field)
    except DurationError as exc:
        if _DURATION.match(text) is not None:  # a duration, out of range: say so
            raise exc from None
    try:
        moment = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        raise DurationError(
            f"{field}: {quoted(text)} is neither a duration (2s, 5m) nor an ISO 8601 time"
        ) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    stamp = moment.timestamp()  # 9999-12-31T23:00-14:00 is past year 9999 in UTC
    if not TIME_MIN <= stamp <= TIME_MAX:
        raise _out_of_time(field, text)
    return stamp


def duration_text(seconds: float) -> str:
    """A duration in the units the CLI reads, its two largest parts: ``30s``, ``0.5s``,
    ``5m``, ``1h30m``, ``1d12h`` (a value no bound allows, stored by an older version:
    its number of seconds)."""
    if not math.isfinite(seconds) or seconds > DURATION_MAX:
        return f"{seconds:g}s"
    if seconds < 60:
        return f"{seconds:g}s"
    parts, rest = [], seconds
    for suffix, length in (("d", 86400.0), ("h", 3600.0), ("m", 60.0), ("s", 1.0)):
        if rest >= length:
            count = int(rest // length)
            parts.append(f"{count}{suffix}")
            rest -= count * length
    return "".join(parts[:2])


def iso(epoch: float | None) -> str | None:
    """ISO 8601 UTC text for epoch seconds (``None`` stays ``None``). Total: a time
    out of range (stored before the bounds) reads as the bound it passed, NaN as None."""
    if epoch is None or math.isnan(epoch):
        return None
    epoch = min(max(epoch, TIME_MIN), TIME_MAX)
    return datetime.fromtimestamp(epoch, UTC).isoformat().replace("+00:00", "Z")
