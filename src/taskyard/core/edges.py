"""Workflow edges: when a parent's end lets a dependent run, skip, or fail.

AWX workflows join nodes by success, failure and always edges; TaskCluster
tasks may require all-completed or all-resolved. Each edge's outcome is a pure
function of the parent's final state and the edge's condition; a dependent's
fate follows from its edges' outcomes and its convergence (all or any).

========================  =========  =========  =========
parent ended              success    failure    always
========================  =========  =========  =========
succeeded                 holds      skip       holds
failed / error            fail       holds      holds
dependency_failed         fail       skip       skip
canceled                  fail       fail       fail
skipped                   skip       skip       skip
========================  =========  =========  =========

A dependent with convergence ``all`` becomes pending when every edge held,
and ends at the first edge that does not: ``dependency_failed`` for *fail*,
``skipped`` for *skip*. With convergence ``any`` it becomes pending at the
first edge that holds; if none does, it ends ``dependency_failed`` when any
edge failed, else ``skipped``.
"""

from __future__ import annotations

from enum import StrEnum

from taskyard.core.states import JobState


class EdgeOutcome(StrEnum):
    HOLDS = "holds"
    SKIP = "skip"
    FAIL = "fail"


_H, _S, _F = EdgeOutcome.HOLDS, EdgeOutcome.SKIP, EdgeOutcome.FAIL
_TABLE: dict[JobState, dict[str, EdgeOutcome]] = {
    JobState.SUCCEEDED: {"success": _H, "failure": _S, "always": _H},
    JobState.FAILED: {"success": _F, "failure": _H, "always": _H},
    JobState.ERROR: {"success": _F, "failure": _H, "always": _H},
    # A job that never ran (AWX: do-not-run) neither failed nor finished: its
    # failure and always branches do not run; its success dependents fail.
    JobState.DEPENDENCY_FAILED: {"success": _F, "failure": _S, "always": _S},
    JobState.CANCELED: {"success": _F, "failure": _F, "always": _F},
    JobState.SKIPPED: {"success": _S, "failure": _S, "always": _S},
}


def edge_outcome(parent: JobState, condition: str) -> EdgeOutcome:
    """The outcome of one edge once its parent ended in ``parent``."""
    return _TABLE[parent][condition]


def dependent_state(
    convergence: str, outcome: EdgeOutcome, unmet_after: int, failures_after: int
) -> JobState | None:
    """A waiting dependent's new state after one edge resolved (None: keep waiting).

    ``unmet_after``: edges still unresolved after this one; ``failures_after``:
    edges that resolved *fail* so far, this one included.
    """
    if convergence == "any":
        if outcome is EdgeOutcome.HOLDS:
            return JobState.PENDING
        if unmet_after == 0:
            return JobState.DEPENDENCY_FAILED if failures_after else JobState.SKIPPED
        return None
    if outcome is EdgeOutcome.FAIL:
        return JobState.DEPENDENCY_FAILED
    if outcome is EdgeOutcome.SKIP:
        return JobState.SKIPPED
    return JobState.PENDING if unmet_after == 0 else None


def failure_is_handled(state: JobState, conditions: set[str]) -> bool:
    """A failed job's graph stays unblocked when a failure/always edge (``conditions``
    of its dependents' edges) takes over. A canceled job is never handled: someone
    stopped the work, and the graph cannot count as finished."""
    if state is JobState.CANCELED:
        return False
    return bool(conditions & {"failure", "always"})


def reopened(convergence: str,
             outcomes: list[EdgeOutcome | None]) -> tuple[JobState, int, int] | None:
    """A job that ended dependency_failed or skipped, once a parent is retried: its new
    state and counters (unmet edges, failed edges), or None when it must stay as it is
    (another edge still cannot hold). ``outcomes``: per parent edge, its outcome, or
    None for an edge whose parent runs again (or has not ended)."""
    unresolved = sum(1 for o in outcomes if o is None)
    fails = sum(1 for o in outcomes if o is EdgeOutcome.FAIL)
    if convergence == "any":
        if any(o is EdgeOutcome.HOLDS for o in outcomes):
            return JobState.PENDING, 0, fails
        return (JobState.WAITING, unresolved, fails) if unresolved else None
    if fails or any(o is EdgeOutcome.SKIP for o in outcomes):
        return None
    return (JobState.WAITING, unresolved, 0) if unresolved else (JobState.PENDING, 0, 0)


def step_outcome(convergence: str, holds: int, skips: int, fails: int) -> EdgeOutcome:
    """The outcome that counts when several of a dependent's edges resolve at once
    (one step of propagation): for ``all`` the worst one, for ``any`` the best one."""
    if convergence == "any":
        return EdgeOutcome.HOLDS if holds else (EdgeOutcome.FAIL if fails else EdgeOutcome.SKIP)
    return EdgeOutcome.FAIL if fails else (EdgeOutcome.SKIP if skips else EdgeOutcome.HOLDS)


def decide_dependent(convergence: str, holds: int, skips: int, fails: int, *,
                     unmet_after: int, failures_after: int) -> JobState | None:
    """A waiting dependent's new state once ``holds + skips + fails`` of its edges
    resolved together (None: keep waiting); see :func:`dependent_state`."""
    return dependent_state(convergence, step_outcome(convergence, holds, skips, fails),
                           unmet_after, failures_after)
