"""Parsing of durations and points in time as users write them.

``90``, ``90s``, ``5m``, ``2h``, ``1d`` (a bare number is seconds);
``--run-after`` takes a duration or an ISO 8601 time.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from datetime import UTC, datetime

_UNITS = {"": 1.0, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0, "w": 604800.0}
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhdw]?)\s*$", re.IGNORECASE)


class DurationError(ValueError):
    """A duration or time that cannot be read; the message says why."""


def parse_duration(text: str | float | int, *, field: str = "duration") -> float:
    """Seconds in ``text`` (``90``, ``90s``, ``5m``, ``2h``, ``1d``)."""
    if isinstance(text, bool):
        raise DurationError(f"{field}: expected a duration like 90, 90s, 5m, 2h or 1d")
    if isinstance(text, int | float):
        value = float(text)
    else:
        match = _DURATION.match(text)
        if match is None:
            raise DurationError(
                f"{field}: {text!r} is not a duration (use 90, 90s, 5m, 2h or 1d)"
            )
        value = float(match.group(1)) * _UNITS[match.group(2).lower()]
    if not math.isfinite(value) or value < 0:
        raise DurationError(f"{field}: {text!r} must be a non-negative duration")
    return value


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
    """Epoch seconds for a duration from ``now`` or an ISO 8601 time (UTC if naive)."""
    try:
        return now + parse_duration(text, field=field)
    except DurationError:
        pass
    try:
        moment = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        raise DurationError(
            f"{field}: {text!r} is neither a duration (2s, 5m) nor an ISO 8601 time"
        ) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.timestamp()


def duration_text(seconds: float) -> str:
    """A duration in the units the CLI reads, its two largest parts: ``30s``, ``0.5s``,
    ``5m``, ``1h30m``, ``1d12h``."""
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
    """ISO 8601 UTC text for epoch seconds (``None`` stays ``None``)."""
    if epoch is None:
        return None
    return datetime.fromtimestamp(epoch, UTC).isoformat().replace("+00:00", "Z")
