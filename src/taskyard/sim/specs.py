"""What a scenario defines, as the simulator's parts read it: task types, worker
groups, the scheduler's settings (parsed and checked by :mod:`taskyard.sim.scenario`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from taskyard.core.durations import Interval
from taskyard.core.rate_limits import RateLimit
from taskyard.core.retry import RetryPolicy
from taskyard.sim.distributions import DurationSpec

DEFAULT_PREFETCH = 512
"""The most jobs a worker accepts queued beyond capacity, as ``taskyard worker``'s
``--prefetch`` default; the window only opens while jobs are short (core.prefetch)."""


@dataclass(frozen=True, slots=True)
class Prerequisite:
    """Update on launch: a job of ``type`` with ``args`` rendered from the launching
    job's, reused when in flight or when it succeeded within ``cache`` seconds."""

    type: str
    args: Mapping[str, Any]
    cache: float


_ONE_SECOND = DurationSpec("constant", 1.0)


@dataclass(frozen=True, slots=True)
class TypeSpec:
    """A task type as the simulator needs it: taskyard's fields, and its behaviour."""

    name: str
    pools: tuple[str, ...] = ("default",)
    cost: int = 1
    timeout: float | None = None
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    locks: tuple[str, ...] = ()
    simultaneous: bool = True
    max_queue_length: int | None = None
    max_worker_losses: int = 3
    interval: Interval | None = None
    backoff_factor: float | None = None
    prerequisites: tuple[Prerequisite, ...] = ()
    rate_limit: RateLimit | None = None
    rate_key: str | None = None
    """Its rate-limit key template over args (``tenant:{tenant}``); None: one key."""
    duration: DurationSpec = _ONE_SECOND
    fail: float = 0.0
    """Probability that an attempt fails (the handler's own failure)."""
    eventful: float | None = None
    """Probability that a run reports ``eventful: true`` (adaptive schedules); None:
    runs do not say, and the interval stays."""


@dataclass(frozen=True, slots=True)
class WorkerGroup:
    """``count`` workers alike, named ``NAME-1`` … ``NAME-count``."""

    name: str
    count: int
    capacity: int
    pools: tuple[str, ...] = ("default",)
    prefetch: int = DEFAULT_PREFETCH
    lease: float = 15.0
    """Seconds from a crash until the scheduler expels the worker (0: at once, as
    ``taskyard up`` releases a worker it saw die)."""
    crash_every: float | None = None
    """Mean seconds between crashes of each worker (exponential); None: never."""
    crash_at: tuple[float, ...] = ()
    """Instants at which every worker of the group running then crashes."""
    restart: float = 1.0
    """Seconds from a crash until the worker runs again (as a new registration)."""


@dataclass(frozen=True, slots=True)
class SchedulerSpec:
    aging: float = 600.0
    """Seconds per +1 priority of a waiting job (the scheduler's ``--aging``); 0: off."""
    scan_limit: int = 10_000
    """Most pending jobs one cycle examines per pools list (the store's SCAN_LIMIT)."""
    timeout_grace: float = 10.0
    """Seconds past an attempt's deadline before the scheduler fails it, when its worker
    is gone (the store's TIMEOUT_GRACE)."""
