"""Readers of scenario fields: each checks one value and names it when it is wrong.

Every error is one line that starts with the field's path, e.g.
``workers.east.capacity: must be an integer >= 0``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

from taskyard.core.durations import DurationError, parse_duration


class ScenarioError(ValueError):
    """A scenario that cannot be simulated; the message names the field."""


def mapping(value: Any, where: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise ScenarioError(f"{where}: must be a mapping")
    return value


def known_keys(value: Mapping[str, Any], allowed: set[str], where: str) -> None:
    unknown = sorted(str(k) for k in set(value) - allowed)
    if unknown:
        raise ScenarioError(f"{where}: unknown field {unknown[0]!r} "
                            f"(expected one of {', '.join(sorted(allowed))})")


def integer(value: Any, where: str, *, minimum: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or (
            minimum is not None and value < minimum):
        bound = "" if minimum is None else f" >= {minimum}"
        raise ScenarioError(f"{where}: must be an integer{bound}")
    return value


def number(value: Any, where: str, *, minimum: float = 0.0, maximum: float = math.inf) -> float:
    if (isinstance(value, bool) or not isinstance(value, int | float)
            or not math.isfinite(value) or not minimum <= value <= maximum):
        bound = f" >= {minimum:g}" if maximum == math.inf else f" in [{minimum:g}, {maximum:g}]"
        raise ScenarioError(f"{where}: must be a number{bound}")
    return float(value)


def probability(value: Any, where: str) -> float:
    return number(value, where, minimum=0.0, maximum=1.0)


def duration(value: Any, where: str, *, positive: bool = False) -> float:
    """Seconds: ``90``, ``90s``, ``5m``, ``2h``, ``1d`` (as everywhere in taskyard)."""
    try:
        seconds = parse_duration(value, field=where)
    except DurationError as exc:
        raise ScenarioError(str(exc)) from None
    if positive and seconds <= 0:
        raise ScenarioError(f"{where}: must be a duration > 0")
    return seconds


def boolean(value: Any, where: str) -> bool:
    if not isinstance(value, bool):
        raise ScenarioError(f"{where}: must be true or false")
    return value


def names(value: Any, where: str) -> tuple[str, ...]:
    """A list of non-empty names, or one name."""
    if isinstance(value, str):
        value = [value]
    if (not isinstance(value, list) or not value
            or not all(isinstance(v, str) and v for v in value)):
        raise ScenarioError(f"{where}: must be a list of names")
    return tuple(value)


def text(value: Any, where: str) -> str:
    if not isinstance(value, str) or not value:
        raise ScenarioError(f"{where}: must be a non-empty string")
    return value


_RATE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*/\s*([smhd])\s*$")
_PER = {"s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}


def rate(value: Any, where: str) -> float:
    """Events per second from ``2/s``, ``30/m``, ``100/h``, ``5/d`` or a number per
    second; must be > 0."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        per_second = float(value)
    else:
        match = _RATE.match(str(value))
        if match is None:
            raise ScenarioError(f"{where}: {value!r} is not a rate (use 2/s, 30/m, 100/h, "
                                "5/d or a number per second)")
        per_second = float(match.group(1)) / _PER[match.group(2)]
    if not math.isfinite(per_second) or per_second <= 0:
        raise ScenarioError(f"{where}: must be a rate > 0")
    return per_second


def times(value: Any, where: str) -> tuple[float, ...]:
    """One duration (from the start) or a list of them, in order of the list."""
    items: Sequence[Any] = value if isinstance(value, list) else [value]
    if not items:
        raise ScenarioError(f"{where}: must be a duration or a list of durations")
    return tuple(duration(v, f"{where}[{n}]" if isinstance(value, list) else where)
                 for n, v in enumerate(items))
