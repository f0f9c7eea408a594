"""Decisions of a job's life outside placement, as pure functions.

What happens to a job when an attempt ends and when its worker is lost, whether a
worker may start a queued job now, and when an adaptive schedule ticks (when one of
its parents ends: :func:`taskyard.core.edges.decide_dependent`). The store applies
these decisions to rows; the simulator applies them to jobs in memory: the same rules
in both.
"""

from __future__ import annotations

from dataclasses import dataclass

from taskyard.core.recurrence import TickPlan, adaptive_next_run
from taskyard.core.retry import RetryPolicy, decide_retry
from taskyard.core.states import AttemptState, JobState

TIMEOUT_EXIT_CODE = 130
"""Exit code of an attempt stopped at its timeout (kaiju): a failure like any other."""

_ENDS = {
    AttemptState.SUCCEEDED: JobState.SUCCEEDED,
    AttemptState.FAILED: JobState.FAILED,
    AttemptState.ERROR: JobState.ERROR,
    AttemptState.CANCELED: JobState.CANCELED,
}


@dataclass(frozen=True, slots=True)
class AttemptEnd:
    """A job's state once an attempt ended; with ``pending``, it runs again ``delay``
    seconds later."""

    state: JobState
    delay: float = 0.0


_FINAL = {state: AttemptEnd(state) for state in _ENDS.values()}
"""One value per final state: most attempts succeed, and need no new object."""


def after_attempt(outcome: AttemptState, policy: RetryPolicy, failures_before: int,
                  jitter: float) -> AttemptEnd:
    """The job's state after an attempt ended in ``outcome``.

    A failure or error with retries left sends it back to pending after the retry
    delay (:func:`taskyard.core.retry.decide_retry`); ``failures_before`` counts the
    earlier attempts that ended failed or error (lost ones are its workers', not its).
    A timeout is a failure (exit code :data:`TIMEOUT_EXIT_CODE`).
    """
    state = _ENDS[outcome]
    if state not in (JobState.FAILED, JobState.ERROR):
        return _FINAL[state]
    decision = decide_retry(policy, failures_before + 1, jitter)
    return AttemptEnd(JobState.PENDING, decision.delay) if decision.retry else _FINAL[state]


def losses_after_suspend(losses: int, was_running: bool, *, counts: bool = True) -> int:
    """A job's worker losses once its worker is lost. Only a started attempt counts: a
    job merely queued on the worker cannot be what brought it down. A stop (SIGTERM,
    ``counts=False``) is the operator's doing and never counts."""
    return losses + (1 if was_running and counts else 0)


def after_worker_loss(losses: int, max_losses: int) -> JobState:
    """A suspended job goes back to pending, or ends in error once it has lost its
    worker more than ``max_losses`` times."""
    return JobState.ERROR if losses > max_losses else JobState.PENDING


def may_start(executing: int, used: int, cost: int, capacity: int) -> bool:
    """May a worker start its next queued job now? It runs at most ``max(1, capacity)``
    handlers; an idle worker always starts one, whatever its cost; a busy one when the
    running jobs leave room for its cost."""
    if executing >= max(1, capacity):
        return False
    return executing == 0 or used + cost <= capacity


def adaptive_tick(next_run: float, clock: float, interval: float,
                  last_run_ended: bool) -> TickPlan:
    """The due step of an adaptive schedule at ``clock``: a job now, and a provisional
    next run (the run's end sets the real one) — unless its last run is still going
    (runs never overlap): then nothing, and a look again one interval later."""
    if not last_run_ended:
        return TickPlan((), clock + interval)
    return TickPlan((next_run,), adaptive_next_run(clock, interval, next_run))
