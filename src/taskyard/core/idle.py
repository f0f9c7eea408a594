"""When ``taskyard up --until-idle`` may stop: no job left that can still run.

The rule, in order: a job dispatched, running or suspended is progress under way; a
pending job counts while it is due within the horizon and one of its pools has a live
worker; anything else — a pending job no live worker serves, one not due before the
horizon, and a waiting job (it waits on jobs that are themselves stuck, or it would
count through them) — cannot run here, and is said in the verdict instead of waited for.
An awaiting job (an approval, a wait, a sleep) counts while its timeout (a sleep's end)
falls within the horizon: time alone ends it; one that awaits a decision or a signal
beyond it is said in the verdict.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass

from taskyard.core.durations import iso


@dataclass(frozen=True, slots=True)
class PendingGroup:
    """Pending jobs that share their pools: how many are due within the horizon, how
    many are due later, and the earliest of those later ones."""

    pools: tuple[str, ...]
    due: int
    later: int = 0
    next_due: float | None = None


@dataclass(frozen=True, slots=True)
class Unfinished:
    """The unfinished jobs, as ``up`` sees them at one moment."""

    active: int
    """Dispatched, running or suspended."""
    waiting: int
    pending: Sequence[PendingGroup] = ()
    timers: int = 0
    """Awaiting jobs whose timeout (a sleep's end) falls within the horizon."""
    awaiting: int = 0
    """Awaiting jobs without a timeout within the horizon: a decision or a signal ends them."""


@dataclass(frozen=True, slots=True)
class IdleVerdict:
    idle: bool
    waits_for: str
    """What it waits for (empty once idle), e.g. ``2 running or dispatched, 3 pending``."""
    left: str
    """What is left that cannot run here (empty when nothing is), for the exit log."""


def idle_verdict(jobs: Unfinished, served: Collection[str],
                 paused: Collection[str] = ()) -> IdleVerdict:
    """Whether ``up --until-idle`` may stop, given the pools live workers serve and the
    paused ones (nothing is placed there: they count as served by none)."""
    served = set(served) - set(paused)
    runnable = sum(g.due for g in jobs.pending if any(p in served for p in g.pools))
    waits = [f"{jobs.active} dispatched, running or suspended" if jobs.active else "",
             f"{runnable} pending" if runnable else "",
             f"{jobs.timers} awaiting their timeout" if jobs.timers else ""]
    held = [g for g in jobs.pending if paused and set(g.pools) <= set(paused)]
    unserved = [g for g in jobs.pending
                if not any(p in served for p in g.pools) and g not in held]
    lost = sum(g.due + g.later for g in unserved)
    later = [g for g in jobs.pending if g not in unserved and g not in held and g.later]
    pools = sorted({p for g in unserved for p in g.pools})
    first = min((g.next_due for g in later if g.next_due is not None), default=None)
    stopped = sum(g.due + g.later for g in held)
    left = [
        f"{lost} pending in pools no live worker serves ({', '.join(pools)})" if lost else "",
        f"{stopped} pending in paused pools "
        f"({', '.join(sorted({p for g in held for p in g.pools}))})" if stopped else "",
        f"{sum(g.later for g in later)} pending not due yet (the first at {iso(first)})"
        if later else "",
        f"{jobs.awaiting} awaiting a decision or a signal" if jobs.awaiting else "",
        f"{jobs.waiting} waiting on those" if jobs.waiting else "",
    ]
    return IdleVerdict(idle=not jobs.active and not runnable and not jobs.timers,
                       waits_for=", ".join(w for w in waits if w),
                       left="; ".join(x for x in left if x))
