"""Human sentences for why a job is not running (AWX users' "why is it blocked?")."""

from __future__ import annotations

import shlex
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from taskyard.core.durations import iso
from taskyard.core.placement import Candidate, Placement, Planner, Skip, SkipReason
from taskyard.core.spread import spread
from taskyard.core.waits import Kind, awaits_text


@dataclass(frozen=True, slots=True)
class Reason:
    """One cause, machine-readable (``code``, ``job_id``, ``detail``) and in words."""

    code: str
    message: str
    job_id: int | None = None
    detail: str = ""

    def to_json(self) -> dict[str, Any]:
        return {"code": self.code, "message": self.message, "job_id": self.job_id,
                "detail": self.detail}


def from_decision(decision: Placement | Skip, *, ahead: int, worker_names: dict[int, str],
                  queue_limit: int | None = None, at_least: bool = False) -> Reason:
    """Explain the placement function's decision for a pending job; ``at_least``: there
    may be more than ``ahead`` jobs ahead of it (the count stopped)."""
    if isinstance(decision, Placement):
        name = worker_names.get(decision.worker_id, str(decision.worker_id))
        return Reason("placeable", f"can be placed on worker {name} at the next cycle",
                      detail=name)
    r, d, who = decision.reason, decision.detail, decision.blocker
    if r is SkipReason.LOCK_HELD:
        return Reason("lock_held", f"lock {d} conflicts with job {who}, which holds it", who, d)
    if r is SkipReason.LOCK_WANTED_AHEAD:
        return Reason("lock_wanted_ahead",
                      f"job {who}, ahead in line, wants conflicting lock {d}; jobs that "
                      "conflict run in order", who, d)
    if r is SkipReason.QUEUE_FULL:
        return Reason("queue_full", f"task type {d} is at its max queue length "
                      f"({queue_limit} dispatched or running)", detail=d)
    if r is SkipReason.RATE_LIMITED:
        return Reason("rate_limited", f"rate limit {d}", detail=d)
    if r is SkipReason.NO_WORKER:
        return Reason("no_worker", f"no live worker serves its pools ({d})", detail=d)
    return Reason("no_capacity", f"no worker in its pools ({d}) has room for it; "
                  f"{'at least ' if at_least else ''}{ahead} job(s) ahead in line", detail=d)


def pool_paused(paused: Iterable[str], *, every: bool) -> Reason:
    """A pending job held back by paused pools (``every``: all of its pools are)."""
    names = ", ".join(paused)
    held = "its pools are" if every else "of its pools,"
    return Reason("pool_paused", f"{held} paused ({names}): nothing new is placed there "
                  f"until taskyard pools resume", detail=names)


def awaiting(job_id: int, kind: str, signal: str | None, key: str | None, *,
             deadline: float | None, now: float) -> Reason:
    """What an awaiting job (an approval, a wait, a sleep) awaits, how to give it, and
    when it times out."""
    if kind == Kind.SLEEP:
        assert deadline is not None  # a sleep always has its end
        return Reason("sleeping", f"sleeps until {iso(deadline)} "
                      f"(in {max(0.0, deadline - now):.0f}s)", detail=iso(deadline) or "")
    if kind == Kind.APPROVAL:
        how = f"taskyard job approve {job_id} or taskyard job deny {job_id}"
    else:
        how = f"taskyard signal {shlex.quote(signal or '')}" + (
            "" if key is None else f" --key {shlex.quote(key)}")
    limit = "no timeout" if deadline is None else \
        f"times out at {iso(deadline)} (in {max(0.0, deadline - now):.0f}s)"
    return Reason(f"awaiting_{kind}", f"awaits {awaits_text(kind, signal, key)} ({how}); "
                  f"{limit}", detail=signal or "")


def explain_candidate(planner: Planner, job: Candidate, *, ahead: int,
                      worker_names: dict[int, str], queue_limit: int | None = None,
                      reached: bool = True, placed: Sequence[tuple[Candidate, int]] = (),
                      rest: Iterable[Candidate] = ()) -> list[Reason]:
    """Every reason the pending ``job`` is not placed by ``planner`` — replayed up to
    it: ``ahead`` jobs of its pools come before it in line — or where it would go.
    ``reached``: False when the replay stopped before ``job`` (its scan limit), so it
    would not be offered this cycle even if nothing held it back. ``placed``: what the
    replay placed before it (job, worker), in order; ``rest``: the candidates after it,
    which the cycle offers too — with them, a job the cycle would place and then take
    back to spread a burst (:func:`taskyard.core.spread.spread`) is said to stay pending."""
    found = [from_decision(skip, ahead=ahead, worker_names=worker_names,
                           queue_limit=queue_limit, at_least=not reached)
             for skip in planner.obstacles(job)]
    if not reached and not any(r.code in ("no_capacity", "no_worker") for r in found):
        found.append(Reason("far_in_line", f"more than {ahead} jobs are ahead of it in line"))
    if not found:
        decision = planner.offer(job)
        if isinstance(decision, Placement) and _taken_back(planner, decision,
                                                           [*placed, (job, decision.worker_id)],
                                                           rest):
            name = worker_names.get(decision.worker_id, str(decision.worker_id))
            found.append(Reason(
                "spread", f"fits on worker {name}, but only beyond that worker's fair share "
                "of a burst: it stays pending for a worker with room (the next cycles place "
                "it)", detail=name))
        else:
            found.append(from_decision(decision, ahead=ahead, worker_names=worker_names,
                                       queue_limit=queue_limit))
    return found


def _taken_back(planner: Planner, decision: Placement, placed: list[tuple[Candidate, int]],
                rest: Iterable[Candidate]) -> bool:
    """Whether the cycle, offering ``rest`` after ``placed`` as it does (until no worker
    can take more), takes the placement ``decision`` back to spread a burst."""
    if planner.exhausted():
        return False
    for other in rest:
        offered = planner.offer(other)
        if isinstance(offered, Placement):
            placed.append((other, offered.worker_id))
        if planner.exhausted():
            return False
    return any(p.job_id == decision.job_id for p in spread(planner, placed))
