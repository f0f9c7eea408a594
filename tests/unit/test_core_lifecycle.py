"""The pure decisions of a job's life (core.lifecycle) and the cycle's candidate order
(core.candidates)."""

from __future__ import annotations

import itertools
from collections import deque

import pytest
from hypothesis import given
from hypothesis import strategies as st

from taskyard.core.candidates import merged
from taskyard.core.edges import EdgeOutcome, decide_dependent, dependent_state
from taskyard.core.lifecycle import (
    adaptive_tick,
    after_attempt,
    after_worker_loss,
    losses_after_suspend,
    may_start,
)
from taskyard.core.placement import Candidate, placement_key
from taskyard.core.prefetch import prefetch_window, worth_declaring
from taskyard.core.retry import RetryPolicy
from taskyard.core.states import AttemptState, JobState

POLICY = RetryPolicy(retries=2, delay=10.0, backoff=2.0)


@pytest.mark.parametrize(("outcome", "failures", "expected"), [
    (AttemptState.SUCCEEDED, 0, (JobState.SUCCEEDED, 0.0)),
    (AttemptState.CANCELED, 0, (JobState.CANCELED, 0.0)),
    (AttemptState.FAILED, 0, (JobState.PENDING, 10.0)),   # 1st failure: delay
    (AttemptState.ERROR, 1, (JobState.PENDING, 20.0)),    # 2nd: delay x backoff
    (AttemptState.FAILED, 2, (JobState.FAILED, 0.0)),     # 3rd: retries spent
    (AttemptState.ERROR, 2, (JobState.ERROR, 0.0)),
])
def test_after_an_attempt(outcome, failures, expected):
    end = after_attempt(outcome, POLICY, failures, jitter=0.0)
    assert (end.state, end.delay) == expected


def test_jitter_only_shortens_a_retry_delay_by_half_at_most():
    assert after_attempt(AttemptState.FAILED, POLICY, 0, jitter=0.999).delay == pytest.approx(
        5.0, abs=0.01)


def test_worker_losses_count_only_started_attempts_and_spend_a_budget():
    assert losses_after_suspend(1, was_running=True) == 2
    assert losses_after_suspend(1, was_running=False) == 1
    assert losses_after_suspend(1, was_running=True, counts=False) == 1
    assert after_worker_loss(3, max_losses=3) is JobState.PENDING
    assert after_worker_loss(4, max_losses=3) is JobState.ERROR
    assert after_worker_loss(1, max_losses=0) is JobState.ERROR


@given(st.sampled_from(["all", "any"]), st.tuples(*[st.integers(0, 3)] * 5))
def test_a_dependent_is_decided_by_its_worst_or_best_edge(convergence, counts):
    """With one edge resolved at a time this is core.edges.dependent_state; several at
    once are decided by the worst (all) or the best (any) of them."""
    holds, skips, fails, unmet, earlier = counts
    if holds + skips + fails == 0:
        return
    state = decide_dependent(convergence, holds, skips, fails, unmet_after=unmet,
                             failures_after=earlier + fails)
    order = ([EdgeOutcome.HOLDS, EdgeOutcome.FAIL, EdgeOutcome.SKIP] if convergence == "any"
             else [EdgeOutcome.FAIL, EdgeOutcome.SKIP, EdgeOutcome.HOLDS])
    counts = {EdgeOutcome.HOLDS: holds, EdgeOutcome.SKIP: skips, EdgeOutcome.FAIL: fails}
    decisive = next(o for o in order if counts[o])
    assert state == dependent_state(convergence, decisive, unmet, earlier + fails)


@pytest.mark.parametrize(("executing", "used", "cost", "capacity", "starts"), [
    (0, 0, 8, 2, True),     # an idle worker starts one job, whatever its cost
    (1, 1, 1, 2, True),
    (1, 1, 2, 2, False),    # no room for its cost
    (2, 0, 0, 2, False),    # every slot busy (cost 0 jobs run one per slot)
    (0, 0, 0, 0, True),     # capacity 0 still has one slot
    (1, 0, 0, 0, False),
])
def test_a_worker_starts_its_next_job_when_it_fits(executing, used, cost, capacity, starts):
    assert may_start(executing, used, cost, capacity) is starts


def test_an_adaptive_schedule_never_overlaps_its_runs():
    busy = adaptive_tick(next_run=100.0, clock=105.0, interval=60.0, last_run_ended=False)
    assert (busy.ticks, busy.next_run) == ((), 165.0)
    due = adaptive_tick(next_run=100.0, clock=105.0, interval=60.0, last_run_ended=True)
    assert (due.ticks, due.next_run) == ((100.0,), 165.0)


class _List:
    """A candidate stream over a list (the simulator's and the store's stand in)."""

    def __init__(self, pools: tuple[str, ...], jobs: list[Candidate]) -> None:
        self._pools = pools
        self.jobs = deque(sorted(jobs, key=placement_key))

    @property
    def pools(self) -> tuple[str, ...]:
        return self._pools

    def peek(self) -> Candidate | None:
        return self.jobs[0] if self.jobs else None

    def take(self) -> Candidate:
        return self.jobs.popleft()


candidates_st = st.lists(st.tuples(st.integers(0, 3), st.sampled_from(["a", "b", "c"])),
                         max_size=30)


@given(candidates_st, st.integers(1, 40), st.sampled_from(["a", "ab", "abc"]))
def test_streams_merge_in_placement_order_each_read_at_most_per_list(rows, per_list, lists):
    jobs = [Candidate(n, "t", priority, (pool,)) for n, (priority, pool) in enumerate(rows)
            if pool in lists]
    streams = [_List((pool,), [j for j in jobs if j.pools == (pool,)]) for pool in lists]
    out = list(merged(streams, lambda pools: True, per_list))
    assert [placement_key(j) for j in out] == sorted(placement_key(j) for j in out)
    for pool in lists:
        total = sum(1 for j in jobs if j.pools == (pool,))
        assert sum(1 for j in out if j.pools == (pool,)) == min(total, per_list)


def test_a_stream_without_room_is_not_read_and_stops_when_its_room_ends():
    counter = itertools.count()
    full = _List(("busy",), [Candidate(next(counter), "t", 9, ("busy",)) for _ in range(3)])
    free = _List(("free",), [Candidate(next(counter), "t", 0, ("free",)) for _ in range(3)])
    room = {"busy": False, "free": True}
    out = []
    for job in merged([full, free], lambda pools: room[pools[0]], 100):
        out.append(job.id)
        room["free"] = len(out) < 2  # the second job fills the pool
    assert out == [3, 4]
    assert len(full.jobs) == 3
    alone = _List(("free",), [Candidate(n, "t", 0, ("free",)) for n in range(3)])
    room["free"] = True
    assert [j.id for j in merged([alone], lambda pools: room[pools[0]], 2)] == [0, 1]
    room["free"] = False
    assert list(merged([alone], lambda pools: room[pools[0]], 2)) == []


def test_a_worker_declares_its_prefetch_window_when_it_opens_closes_or_moves_a_quarter():
    assert prefetch_window(4, None, 512) == 0
    assert prefetch_window(4, 0.001, 512) == 196
    assert prefetch_window(4, 0.05, 512) == 0
    assert worth_declaring(0, 0) is False
    assert worth_declaring(8, 0) is True and worth_declaring(0, 8) is True
    assert worth_declaring(9, 8) is False and worth_declaring(10, 8) is True


@given(candidates_st, st.integers(1, 40), st.sampled_from(["a", "ab", "abc"]),
       st.sets(st.integers(0, 29)))
def test_jobs_the_merge_does_not_want_are_passed_over_and_not_counted(
        rows, per_list, lists, refused):
    jobs = [Candidate(n, "t", priority, (pool,)) for n, (priority, pool) in enumerate(rows)
            if pool in lists]
    streams = [_List((pool,), [j for j in jobs if j.pools == (pool,)]) for pool in lists]
    out = list(merged(streams, lambda pools: True, per_list,
                      wanted=lambda job: job.id not in refused))
    assert not {j.id for j in out} & refused
    assert [placement_key(j) for j in out] == sorted(placement_key(j) for j in out)
    for pool in lists:
        left = [j for j in jobs if j.pools == (pool,) and j.id not in refused]
        assert sum(1 for j in out if j.pools == (pool,)) == min(len(left), per_list)


def test_one_holder_of_a_shared_lock_leaves_and_the_other_still_holds_it():
    from taskyard.core.locks import LockClaim
    from taskyard.core.placement import ActiveJob, Planner, Skip, WorkerSlot

    shared, exclusive = LockClaim("db", exclusive=False), LockClaim("db", exclusive=True)
    planner = Planner.from_snapshot([WorkerSlot(1, "w", ("a",), 4)], [
        ActiveJob(1, "t", 1, 1, (shared,)), ActiveJob(2, "t", 1, 1, (shared,))])
    planner.release(1, "t", 1, 1, (shared,))
    assert isinstance(planner.offer(Candidate(3, "t", 0, ("a",), 1, (exclusive,))), Skip)
    planner.release(2, "t", 1, 1, (shared,))
    assert planner.idle(1)
    # Job 3 now waits ahead for the lock; the next job in line to want it does not jump in.
    assert planner.offer(Candidate(4, "t", 0, ("a",), 1, (exclusive,))).blocker == 3
