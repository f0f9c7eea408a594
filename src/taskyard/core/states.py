"""The job and attempt state machines, defined once.

Every transition the store performs is listed in ``JOB_TRANSITIONS``; the store
guards each change in SQL with the expected source state, and tests check that
the store never performs a transition missing from this table.
"""

from __future__ import annotations

from enum import StrEnum


class JobState(StrEnum):
    """Where a job is in its life. Who moves it in and out is said per state."""

    WAITING = "waiting"
    """Dependencies unmet (unmet_deps > 0). Left by the completion of its last
    parent (→ pending, or → awaiting for an approval, wait or sleep), a parent's
    final failure (→ dependency_failed), a condition that can no longer hold
    (→ skipped), or cancel."""
    PENDING = "pending"
    """Ready to run; waits for run_after, capacity, locks and queue length.
    Left when the scheduling cycle places it (→ dispatched) or on cancel."""
    DISPATCHED = "dispatched"
    """Placed on a worker by the cycle; the worker has not claimed it yet."""
    RUNNING = "running"
    """Claimed by its worker; the handler is executing under the current attempt."""
    AWAITING = "awaiting"
    """An approval, a wait or a sleep whose dependencies are met (entered at submit
    or from waiting): it holds no worker slot and no lock, and runs no handler. Left
    by a decision — ``job approve`` (→ succeeded), ``job deny`` (→ failed), the
    first matching signal (→ succeeded), its timeout passing on the database clock
    (an approval or wait → failed, a sleep → succeeded), found by the cycle — or by
    cancel."""
    SUSPENDED = "suspended"
    """Its worker was lost or stopped; the cycle requeues it (→ pending) with a
    new attempt number, or ends it in error when the worker-loss budget is spent."""
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    """The handler's own failure (non-zero exit, exception, timeout = exit 130)."""
    ERROR = "error"
    """A system failure (handler not importable, worker-loss budget spent)."""
    CANCELED = "canceled"
    DEPENDENCY_FAILED = "dependency_failed"
    SKIPPED = "skipped"


class AttemptState(StrEnum):
    """The outcome of one try of a job on one worker."""

    DISPATCHED = "dispatched"
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    ERROR = "error"
    CANCELED = "canceled"
    LOST = "lost"
    """The worker was expelled or suspended its work; the job was requeued."""


TERMINAL: frozenset[JobState] = frozenset(
    {
        JobState.SUCCEEDED,
        JobState.FAILED,
        JobState.ERROR,
        JobState.CANCELED,
        JobState.DEPENDENCY_FAILED,
        JobState.SKIPPED,
    }
)
ACTIVE: frozenset[JobState] = frozenset({JobState.DISPATCHED, JobState.RUNNING})
"""States in which a job occupies capacity on a worker and holds its locks."""

FAILURES: frozenset[JobState] = frozenset(
    {JobState.FAILED, JobState.ERROR, JobState.CANCELED, JobState.DEPENDENCY_FAILED}
)
"""Terminal states that count as 'did not succeed' for dependents."""

INITIAL: frozenset[JobState] = frozenset({JobState.WAITING, JobState.PENDING, JobState.AWAITING})
"""States a job is created in: waiting (parents to wait for), else pending (work for a
worker) or awaiting (an approval, a wait or a sleep)."""

_S = JobState
JOB_TRANSITIONS: dict[JobState, frozenset[JobState]] = {
    _S.WAITING: frozenset({_S.PENDING, _S.AWAITING, _S.DEPENDENCY_FAILED, _S.SKIPPED,
                           _S.CANCELED}),
    _S.PENDING: frozenset({_S.DISPATCHED, _S.WAITING, _S.CANCELED, _S.DEPENDENCY_FAILED}),
    # A worker may report an attempt's start and end together: dispatched → its end.
    _S.DISPATCHED: frozenset(
        {_S.RUNNING, _S.SUSPENDED, _S.CANCELED, _S.SUCCEEDED, _S.FAILED, _S.ERROR, _S.PENDING}
    ),
    _S.RUNNING: frozenset(
        {_S.SUCCEEDED, _S.FAILED, _S.ERROR, _S.CANCELED, _S.SUSPENDED, _S.PENDING}
    ),
    # Never on a worker: a decision, a signal or its timeout ends it.
    _S.AWAITING: frozenset({_S.SUCCEEDED, _S.FAILED, _S.CANCELED}),
    _S.SUSPENDED: frozenset({_S.PENDING, _S.ERROR, _S.CANCELED}),
    # Manual `job retry` brings a finished failure back (waiting when some of its parents
    # have not ended; awaiting for an approval, a wait or a sleep), and reopens the
    # dependents that its failure ended or skipped. Success is final.
    _S.FAILED: frozenset({_S.PENDING, _S.WAITING, _S.AWAITING}),
    _S.ERROR: frozenset({_S.PENDING, _S.WAITING, _S.AWAITING}),
    _S.CANCELED: frozenset({_S.PENDING, _S.WAITING, _S.AWAITING}),
    _S.DEPENDENCY_FAILED: frozenset({_S.PENDING, _S.WAITING, _S.AWAITING}),
    _S.SKIPPED: frozenset({_S.PENDING, _S.WAITING, _S.AWAITING}),
    _S.SUCCEEDED: frozenset(),
}


def can_transition(source: JobState, target: JobState) -> bool:
    """True when the state machine allows ``source`` → ``target``."""
    return target in JOB_TRANSITIONS[source]
