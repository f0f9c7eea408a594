"""The values a scheduling cycle's driver transitions take and give back (its reads,
its candidates, what its dispatch placed, its end), and the page and slice sizes they
use: the cycle's part of driver/params.py."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

FIRST_PAGE = 16
"""The smallest page of candidates, and the first one a PostgreSQL cycle reads with its
snapshot, before it knows its room (then: the page its last cycle wanted). Here, not in
transitions/candidates.py, so that a submit need not import the placement code."""


T = TypeVar("T")

DISPATCH_SLICE = 500
"""Most jobs one dispatch statement places."""


def slices(items: Sequence[T], size: int = DISPATCH_SLICE) -> list[Sequence[T]]:
    """``items`` cut into consecutive slices of at most ``size``."""
    return [items[i:i + size] for i in range(0, len(items), size)]


@dataclass(frozen=True, slots=True)
class Snapshot:
    """What the planner starts from, as read: live workers (id, name, pools, capacity,
    prefetch, unpaced prefetch), what is dispatched or running (holder, type, worker,
    cost, locks, count), the task types' limits (name, max queue length, rate limit),
    the paused pools."""

    workers: list[Any]
    active: list[Any]
    limits: list[Any]
    paused: list[Any] = field(default_factory=list)
    """The paused pools' names: placement sees no worker serving them."""


@dataclass(frozen=True, slots=True)
class CycleReads:
    """A cycle's first reads: its snapshot and, read with it (PostgreSQL), the pools lists
    of pending jobs and the first page (``page`` rows at most) of the first list. The
    snapshot may be left out (None) when nothing is pending (see CycleTx.snapshot)."""

    snapshot: Snapshot | None
    lists: list[str] | None = None
    first: list[Any] | None = None
    page: int = FIRST_PAGE


@dataclass(frozen=True, slots=True)
class MaintenanceWork:
    """Ask which maintenance steps have work (``grace``: the timeouts' grace past an
    attempt's deadline); ``read_ahead``: the cycle has not made its first reads yet
    (PostgreSQL then makes them in the same round trip)."""

    grace: float
    read_ahead: bool = False


@dataclass(frozen=True, slots=True)
class MaintenanceFound:
    """Which maintenance steps have work (see portable/cycle.py, in its order) and, when
    none has and they were read ahead, the cycle's first reads."""

    work: tuple[bool, ...]
    reads: CycleReads | None = None
    next_delayed: float | None = None
    """Seconds until the earliest delayed job is due (negative: due; None: none)."""


@dataclass(frozen=True, slots=True)
class CycleStart:
    """The cycle's global lock, tried ahead of the cycle in its unit of work, and its
    first reads when the lock is ours (made in the same round trip)."""

    held: bool
    reads: CycleReads | None = None


@dataclass(frozen=True, slots=True)
class ReadCandidates:
    """Pending jobs due now of the pools list ``pools``, in placement order, after the
    keyset ``after`` (priority, id), at most ``limit``; ``skip``: (type, rate key) whose
    jobs are left out."""

    pools: str
    after: tuple[int, int] | None
    limit: int
    skip: Sequence[tuple[str, str]] = ()


@dataclass(slots=True)
class Dispatched:
    """What one cycle's dispatch statements placed."""

    placed: list[int] = field(default_factory=list)
    per_worker: dict[int, list[int]] = field(default_factory=dict)
    wakeups: dict[int, list[str]] = field(default_factory=dict)
    """Per worker, what each of its dispatch statements' wake-up carries (the jobs, as
    driver/wakeup_payloads.py writes them, or "" when the worker must read them)."""
    woken: set[str] = field(default_factory=set)
    """Channels the statements woke already."""
    scans_on: bool = False
    """The statements turned the planner's scans back on."""


@dataclass(frozen=True, slots=True)
class FinishCycle:
    """The end of a cycle: the channels to wake, with what each wake-up carries, and the
    page of candidates the cycle wanted (PostgreSQL reads that much ahead next time)."""

    channels: Sequence[str]
    carried: dict[str, str]
    scans_off: bool
    page: int
