"""Rate limits: at most N starts of a task type per second, minute or hour, per key.

A type's ``rate_limit`` (``10/s``, ``100/m``, ``5/h``) bounds how many of its jobs the
cycle dispatches in any window of that length. Its optional ``rate_key`` template
(``tenant:{tenant}``, filled from each job's args when it is submitted) splits the
budget: each key has the whole limit to itself; without a template the type has one
key, ``""``.

The rule is a sliding log: a job may start at ``now`` when fewer than N starts of its
key fall after ``now - window``. Checked at every start, it holds in *every* window:
if some window held N + 1 starts, the last of them saw the other N within its own
window, and was refused. The cycle is global (one holder of its lock at a time), so
one rule enforced there binds every scheduler and worker.

Pure functions over values: the scheduling cycle (through :class:`RateBook`, which
:class:`~taskyard.core.placement.Planner` consults) and the simulator call the same
:func:`budget` and :func:`reopens_at`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from taskyard.core.templates import fill_template, template_fields

UNITS = {"s": 1.0, "m": 60.0, "h": 3600.0}
LONGEST_WINDOW = max(UNITS.values())
"""Starts older than this never count again (the store may forget them)."""
_LIMIT = re.compile(r"^\s*(\d+)\s*/\s*([smh])\s*$")


class RateLimitError(ValueError):
    """A rate limit or key template that cannot be read; the message names the field."""


@dataclass(frozen=True, slots=True)
class RateLimit:
    """At most ``count`` starts in any window of ``per`` seconds."""

    count: int
    per: float

    def encode(self) -> str:
        """The form users write and see: ``10/s``, ``100/m``, ``5/h``."""
        return f"{self.count}/{_unit(self.per)}"


def _unit(per: float) -> str:
    return next(u for u, seconds in UNITS.items() if seconds == per)


def parse_rate_limit(text: object, *, field: str = "rate_limit") -> RateLimit:
    """``N/s``, ``N/m`` or ``N/h`` (N >= 1) into a :class:`RateLimit`."""
    match = _LIMIT.match(text) if isinstance(text, str) else None
    if match is None:
        raise RateLimitError(f"{field}: {text!r} is not a rate limit (use N/s, N/m or N/h)")
    count = int(match.group(1))
    if count < 1:
        raise RateLimitError(f"{field}: {text!r} must allow at least 1 start")
    return RateLimit(count, UNITS[match.group(2)])


def check_rate_key(template: str, *, field: str = "rate_key") -> None:
    """RateLimitError unless ``template`` can be filled from args (``tenant:{tenant}``)."""
    if not template:
        raise RateLimitError(f"{field}: the template is empty")
    try:
        template_fields(template, f"{field} {template!r}")
    except ValueError as exc:
        raise RateLimitError(str(exc)) from None


def render_rate_key(template: str, args: Mapping[str, object]) -> str:
    """The key of a job with ``args`` (RateLimitError names an arg it lacks)."""
    try:
        return fill_template(template, args, f"rate_key {template!r}")
    except ValueError as exc:
        raise RateLimitError(str(exc)) from None


def budget(limit: RateLimit, starts: Iterable[float], now: float) -> int:
    """How many more starts ``limit`` allows at ``now``, given the key's earlier starts
    (in any order; those before the window are ignored): 0 or less means none."""
    since = now - limit.per
    return limit.count - sum(1 for at in starts if at > since)


def reopens_at(limit: RateLimit, starts: Iterable[float], now: float) -> float | None:
    """When the next start becomes possible, if ``limit`` allows none at ``now``: the
    moment enough of the window's starts have left it. None while there is budget."""
    since = now - limit.per
    window = sorted(at for at in starts if at > since)
    excess = len(window) - limit.count
    if excess < 0:
        return None
    return window[excess] + limit.per


def describe(type_name: str, key: str, limit: RateLimit, starts: Sequence[float],
             now: float) -> str:
    """Why a job of ``type_name`` with ``key`` waits, in words (for ``explain``)."""
    since = now - limit.per
    count = sum(1 for at in starts if at > since)
    where = f"of {type_name}" + (f" on key {key}" if key else "")
    text = f"{limit.encode()} {where}: {count} starts in the last 1{_unit(limit.per)}"
    opens = reopens_at(limit, starts, now)
    return text if opens is None else f"{text}; the next may start in {opens - now:.1f}s"


Recent = Callable[[str, str, RateLimit], Sequence[float]]
"""The starts of (type, key) within ``limit``'s window before the cycle's ``now`` (the
newest ``limit.count`` are enough), read on demand by :class:`RateBook`."""


@dataclass
class _Bucket:
    starts: list[float]
    left: int


@dataclass
class RateBook:
    """The rate limits one cycle enforces at ``now``: for each (type, key) it meets,
    the starts in the window (read once, through ``recent``) and its own starts.

    A cycle reads only the keys of the candidates it offers: its cost follows the
    work placed, not how many keys or starts there are."""

    limits: Mapping[str, RateLimit]
    now: float
    recent: Recent
    started: list[tuple[str, str]] = field(default_factory=list)
    """(type, key) of every start this cycle added, in order: what the store records."""
    spent: set[tuple[str, str]] = field(default_factory=set)
    """(type, key) that this cycle found without budget: the candidates still to be read
    may leave their jobs out (the same answer, without reading them)."""
    soonest: float | None = None
    """The earliest moment a job refused by this cycle may start (a scheduler wakes
    then, rather than at its next periodic cycle)."""
    _buckets: dict[tuple[str, str], _Bucket] = field(default_factory=dict)

    def limited(self, type_name: str) -> bool:
        return type_name in self.limits

    def _bucket(self, type_name: str, key: str) -> _Bucket:
        found = self._buckets.get((type_name, key))
        if found is None:
            limit = self.limits[type_name]
            starts = list(self.recent(type_name, key, limit))
            found = self._buckets[type_name, key] = _Bucket(
                starts, budget(limit, starts, self.now))
        return found

    def refusal(self, type_name: str, key: str | None) -> str | None:
        """None when a job of a limited ``type_name`` with ``key`` may start now, else
        why not (see :func:`describe`)."""
        bucket = self._bucket(type_name, key or "")
        if bucket.left > 0:
            return None
        self._spend(type_name, key or "", bucket)
        return describe(type_name, key or "", self.limits[type_name], bucket.starts, self.now)

    def start(self, type_name: str, key: str | None) -> None:
        """A job of ``type_name`` with ``key`` starts now (nothing for unlimited types)."""
        if type_name not in self.limits:
            return
        bucket = self._bucket(type_name, key or "")
        bucket.starts.append(self.now)
        bucket.left -= 1
        self.started.append((type_name, key or ""))
        if bucket.left <= 0:
            self._spend(type_name, key or "", bucket)

    def _spend(self, type_name: str, key: str, bucket: _Bucket) -> None:
        """The key has no budget left in this cycle: note when it reopens."""
        self.spent.add((type_name, key))
        opens = reopens_at(self.limits[type_name], bucket.starts, self.now)
        if opens is not None and (self.soonest is None or opens < self.soonest):
            self.soonest = opens
