"""Workflow edges: each edge's outcome, a dependent's fate, and reopening (pure core)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from taskyard.core.edges import (
    EdgeOutcome,
    decide_dependent,
    dependent_state,
    edge_outcome,
    failure_is_handled,
    reopened,
    step_outcome,
)
from taskyard.core.graph import CONDITIONS
from taskyard.core.states import JOB_TRANSITIONS, TERMINAL, JobState

H, S, F = EdgeOutcome.HOLDS, EdgeOutcome.SKIP, EdgeOutcome.FAIL
_S = JobState

# The table in the module's docstring, row by row: success, failure, always.
DOCUMENTED = {
    _S.SUCCEEDED: (H, S, H),
    _S.FAILED: (F, H, H),
    _S.ERROR: (F, H, H),
    _S.DEPENDENCY_FAILED: (F, S, S),
    _S.CANCELED: (F, F, F),
    _S.SKIPPED: (S, S, S),
}


@pytest.mark.parametrize("parent", sorted(TERMINAL))
def test_each_edge_outcome_is_the_documented_one(parent: JobState) -> None:
    assert tuple(edge_outcome(parent, c) for c in CONDITIONS) == DOCUMENTED[parent]


def test_only_ended_parents_and_known_conditions_have_an_outcome() -> None:
    assert set(DOCUMENTED) == TERMINAL
    for parent in set(JobState) - TERMINAL:
        with pytest.raises(KeyError):
            edge_outcome(parent, "success")
    with pytest.raises(KeyError):
        edge_outcome(_S.SUCCEEDED, "sometimes")


@pytest.mark.parametrize(("outcome", "unmet_after", "expected"), [
    (H, 2, None),          # others still open: keep waiting
    (H, 0, _S.PENDING),    # the last edge held
    (F, 2, _S.DEPENDENCY_FAILED),  # ends at the first edge that does not hold
    (F, 0, _S.DEPENDENCY_FAILED),
    (S, 2, _S.SKIPPED),
    (S, 0, _S.SKIPPED),
])
def test_convergence_all_needs_every_edge(
        outcome: EdgeOutcome, unmet_after: int, expected: JobState | None) -> None:
    assert dependent_state("all", outcome, unmet_after, int(outcome is F)) is expected


@pytest.mark.parametrize(("outcome", "unmet_after", "failures_after", "expected"), [
    (H, 3, 0, _S.PENDING),   # the first edge that holds
    (H, 0, 2, _S.PENDING),
    (F, 1, 1, None),         # another edge may still hold
    (S, 1, 0, None),
    (F, 0, 1, _S.DEPENDENCY_FAILED),  # none held and one failed
    (S, 0, 1, _S.DEPENDENCY_FAILED),  # an earlier edge failed
    (S, 0, 0, _S.SKIPPED),            # none held, none failed
])
def test_convergence_any_needs_one_edge(outcome: EdgeOutcome, unmet_after: int,
                                        failures_after: int, expected: JobState | None) -> None:
    assert dependent_state("any", outcome, unmet_after, failures_after) is expected


@pytest.mark.parametrize(("state", "conditions", "handled"), [
    (_S.FAILED, {"failure"}, True),
    (_S.ERROR, {"success", "always"}, True),
    (_S.DEPENDENCY_FAILED, {"always"}, True),
    (_S.FAILED, {"success"}, False),
    (_S.FAILED, set(), False),
    (_S.CANCELED, {"failure", "always"}, False),  # stopped work is never handled
])
def test_a_failure_is_handled_by_a_failure_or_always_edge(
        state: JobState, conditions: set[str], handled: bool) -> None:
    assert failure_is_handled(state, conditions) is handled


@pytest.mark.parametrize(("convergence", "outcomes", "expected"), [
    ("all", [None, H], (_S.WAITING, 1, 0)),
    ("all", [None, None], (_S.WAITING, 2, 0)),
    ("all", [H, H], (_S.PENDING, 0, 0)),
    ("all", [None, F], None),   # another edge still fails
    ("all", [None, S], None),   # another edge still skips
    ("any", [None, F], (_S.WAITING, 1, 1)),
    ("any", [S, F, H], (_S.PENDING, 0, 1)),
    ("any", [None, H], (_S.PENDING, 0, 0)),
    ("any", [S, F], None),      # nothing can hold any more
])
def test_a_retried_parent_reopens_its_ended_dependent(
        convergence: str, outcomes: list[EdgeOutcome | None],
        expected: tuple[JobState, int, int] | None) -> None:
    decision = reopened(convergence, outcomes)
    assert decision == expected
    if decision is not None:
        assert decision[0] in JOB_TRANSITIONS[_S.DEPENDENCY_FAILED]
        assert decision[0] in JOB_TRANSITIONS[_S.SKIPPED]


def _replay(convergence: str, outcomes: list[EdgeOutcome | None]) -> JobState:
    """Resolve the edges one by one as the store does when parents end: the dependent's
    state once every resolved edge was seen (waiting if none decided it)."""
    resolved = [o for o in outcomes if o is not None]
    unmet, failures = len(outcomes), 0
    for outcome in resolved:
        unmet -= 1
        failures += outcome is F
        state = dependent_state(convergence, outcome, unmet, failures)
        if state is not None:
            return state
    return _S.WAITING


@given(st.sampled_from(["all", "any"]),
       st.lists(st.sampled_from([H, S, F, None]), min_size=1, max_size=6))
def test_reopening_agrees_with_resolving_the_edges_afresh(
        convergence: str, outcomes: list[EdgeOutcome | None]) -> None:
    # After a retry the dependent must be where it would be had the retried parents not
    # ended yet: still ended (None), pending, or waiting on exactly the open edges.
    fresh = _replay(convergence, outcomes)
    decision = reopened(convergence, outcomes)
    if fresh in TERMINAL:
        assert decision is None
    else:
        assert decision is not None
        state, unmet, fails = decision
        assert state is fresh
        assert unmet == (outcomes.count(None) if state is _S.WAITING else 0)
        assert fails == (outcomes.count(F) if convergence == "any" else 0)


@given(st.sampled_from(["all", "any"]), st.sampled_from(sorted(TERMINAL)),
       st.sampled_from(CONDITIONS), st.integers(0, 3), st.integers(0, 3))
def test_a_dependent_only_moves_along_the_state_machine(
        convergence: str, parent: JobState, condition: str, unmet: int, failures: int) -> None:
    new = dependent_state(convergence, edge_outcome(parent, condition), unmet, failures)
    assert new is None or new in JOB_TRANSITIONS[_S.WAITING]


@given(st.sampled_from(["all", "any"]), st.tuples(*[st.integers(0, 3)] * 3),
       st.integers(0, 4), st.integers(0, 4))
def test_a_step_resolving_several_edges_counts_one_outcome(
        convergence: str, counts: tuple[int, int, int], unmet: int, failures: int) -> None:
    holds, skips, fails = counts
    if holds + skips + fails == 0:
        return
    outcome = step_outcome(convergence, holds, skips, fails)
    present = {EdgeOutcome.HOLDS: holds, EdgeOutcome.SKIP: skips, EdgeOutcome.FAIL: fails}
    assert present[outcome] > 0  # always one of the outcomes that happened
    # all: the worst counts; any: one that holds, else a failure over a skip (the
    # dependent then ends dependency_failed, not skipped).
    first = ([EdgeOutcome.FAIL, EdgeOutcome.SKIP, EdgeOutcome.HOLDS] if convergence == "all"
             else [EdgeOutcome.HOLDS, EdgeOutcome.FAIL, EdgeOutcome.SKIP])
    assert outcome == next(o for o in first if present[o])
    assert decide_dependent(convergence, holds, skips, fails, unmet_after=unmet,
                            failures_after=failures) == dependent_state(
        convergence, outcome, unmet, failures)


def test_one_failing_edge_among_holding_ones_fails_all_but_not_any() -> None:
    assert decide_dependent("all", 2, 0, 1, unmet_after=0, failures_after=1) is (
        JobState.DEPENDENCY_FAILED)
    assert decide_dependent("any", 2, 0, 1, unmet_after=0, failures_after=1) is JobState.PENDING
    assert decide_dependent("any", 0, 1, 0, unmet_after=1, failures_after=0) is None
    assert decide_dependent("any", 0, 1, 0, unmet_after=0, failures_after=0) is JobState.SKIPPED
