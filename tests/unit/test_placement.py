"""Properties of the pure placement function (seed 000's task-manager rules)."""

from __future__ import annotations

from collections import Counter

from hypothesis import given, settings
from hypothesis import strategies as st

from taskyard.core.locks import LockClaim
from taskyard.core.placement import (
    ActiveJob,
    Candidate,
    Placement,
    Planner,
    SkipReason,
    WorkerSlot,
    place,
    placement_key,
)

POOLS = ["a", "b", "c"]

workers_st = st.lists(
    st.builds(
        lambda i, pools, cap: WorkerSlot(i, f"w{i}", tuple(pools), cap),
        st.integers(),
        st.lists(st.sampled_from(POOLS), min_size=1, max_size=3, unique=True),
        st.integers(0, 6),
    ),
    max_size=5,
).map(lambda ws: [WorkerSlot(n, w.name, w.pools, w.capacity) for n, w in enumerate(ws)])

claims_st = st.lists(
    st.builds(
        lambda key, mode: LockClaim(key, mode == "x", mode if mode in ("g1", "g2") else ""),
        st.sampled_from(["p1", "p2", "inv"]),
        st.sampled_from(["x", "shared", "g1", "g2"]),
    ),
    max_size=2,
    unique_by=lambda c: c.key,
).map(tuple)

jobs_st = st.lists(
    st.tuples(
        st.integers(0, 3),
        st.lists(st.sampled_from(POOLS), min_size=1, max_size=2, unique=True),
        st.integers(0, 4),
        claims_st,
        st.sampled_from(["t1", "t2"]),
    ),
    max_size=25,
).map(
    lambda rows: sorted(
        (
            Candidate(i + 1, typ, prio, tuple(pools), cost, claims)
            for i, (prio, pools, cost, claims, typ) in enumerate(rows)
        ),
        key=placement_key,
    )
)


def _run(
    workers: list[WorkerSlot], jobs: list[Candidate], limits: dict[str, int] | None = None
) -> tuple[list[Placement], list[object]]:
    placed, skipped = place(workers, [], jobs, limits)
    return placed, list(skipped)


@settings(max_examples=300)
@given(workers_st, jobs_st)
def test_never_over_capacity_except_one_job_on_an_idle_worker(workers, jobs):
    placed, _ = _run(workers, jobs)
    cost = {j.id: j.cost for j in jobs}
    load: Counter[int] = Counter()
    count: Counter[int] = Counter()
    for p in placed:
        load[p.worker_id] += cost[p.job_id]
        count[p.worker_id] += 1
    for w in workers:
        assert load[w.id] <= w.capacity or count[w.id] == 1


@settings(max_examples=300)
@given(workers_st, jobs_st)
def test_placed_jobs_never_hold_conflicting_locks(workers, jobs):
    placed, _ = _run(workers, jobs)
    by_id = {j.id: j for j in jobs}
    claims = [c for p in placed for c in by_id[p.job_id].locks]
    for i, a in enumerate(claims):
        for b in claims[i + 1 :]:
            assert not a.conflicts(b)


@settings(max_examples=300)
@given(workers_st, jobs_st)
def test_a_younger_job_never_overtakes_an_older_conflicting_one(workers, jobs):
    """Chronological fairness: a job left behind while its pools had an open worker
    holds back every younger job it conflicts with. (One whose pools have no open
    worker at all does not: it could hold them back for ever.)"""
    planner = Planner.from_snapshot(workers, [])
    waiting: list[Candidate] = []
    for job in jobs:
        if planner.exhausted():
            break
        had_room = planner.has_room(job.pools)
        decision = planner.offer(job)
        if isinstance(decision, Placement):
            for older in waiting:
                assert not any(a.conflicts(b) for a in older.locks for b in job.locks)
        elif had_room:
            waiting.append(job)


@settings(max_examples=300)
@given(workers_st, jobs_st)
def test_placement_only_uses_workers_of_the_jobs_pools(workers, jobs):
    placed, _ = _run(workers, jobs)
    by_id = {j.id: j for j in jobs}
    pools = {w.id: set(w.pools) for w in workers}
    for p in placed:
        assert pools[p.worker_id] & set(by_id[p.job_id].pools)


@settings(max_examples=200)
@given(workers_st, jobs_st, st.integers(1, 3))
def test_max_queue_length_is_respected(workers, jobs, limit):
    placed, _ = _run(workers, jobs, {"t1": limit})
    by_id = {j.id: j for j in jobs}
    assert sum(1 for p in placed if by_id[p.job_id].type == "t1") <= limit


@settings(max_examples=200)
@given(workers_st, jobs_st)
def test_an_unblocked_job_is_placed_whenever_a_worker_can_take_it(workers, jobs):
    """Work-conserving: no skip for capacity while a matching worker could run it."""
    planner = Planner.from_snapshot(workers, [])
    for job in jobs:
        if planner.exhausted():
            break
        decision = planner.offer(job)
        if isinstance(decision, Placement):
            continue
        if decision.reason in (SkipReason.NO_CAPACITY, SkipReason.NO_WORKER):
            for w in workers:
                if w.capacity > 0 and set(w.pools) & set(job.pools):
                    assert not planner.idle(w.id)
                    assert planner.remaining(w.id) < job.cost


def test_idle_worker_with_largest_capacity_is_chosen_first():
    workers = [WorkerSlot(1, "small", ("a",), 2), WorkerSlot(2, "big", ("a",), 8)]
    placed, _ = place(workers, [], [Candidate(1, "t", 0, ("a",))])
    assert placed == [Placement(1, 2)]


def test_busy_workers_take_by_largest_remaining_capacity_that_fits():
    workers = [WorkerSlot(1, "x", ("a",), 4), WorkerSlot(2, "y", ("a",), 10)]
    active = [ActiveJob(100, "t", 1, 1), ActiveJob(101, "t", 2, 7)]
    placed, _ = place(workers, active, [Candidate(1, "t", 0, ("a",), cost=3)])
    assert placed == [Placement(1, 1)]  # x has 3 left, y has 3 left: tie → lowest id


def test_one_job_always_runs_on_an_idle_worker_even_above_capacity():
    workers = [WorkerSlot(1, "x", ("a",), 2)]
    jobs = [Candidate(1, "t", 0, ("a",), cost=5), Candidate(2, "t", 0, ("a",), cost=1)]
    placed, skipped = place(workers, [], jobs)
    assert placed == [Placement(1, 1)]
    assert skipped == []  # the worker is then exhausted: reading stops


def test_pools_are_tried_in_order_of_preference():
    workers = [WorkerSlot(1, "east", ("east",), 1), WorkerSlot(2, "west", ("west",), 1)]
    jobs = [Candidate(1, "t", 0, ("west", "east")), Candidate(2, "t", 0, ("west", "east"))]
    placed, _ = place(workers, [], jobs)
    assert placed == [Placement(1, 2), Placement(2, 1)]


def test_job_without_a_serving_worker_says_so():
    _, skipped = place([WorkerSlot(1, "x", ("a",), 1)], [], [Candidate(1, "t", 0, ("gpu",))])
    assert [(s.reason, s.detail) for s in skipped] == [(SkipReason.NO_WORKER, "gpu")]


def test_shared_locks_coexist_and_exclusive_waits_in_creation_order():
    w = [WorkerSlot(1, "x", ("a",), 10)]
    shared, excl = LockClaim("p", False), LockClaim("p", True)
    jobs = [
        Candidate(1, "job", 0, ("a",), locks=(shared,)),
        Candidate(2, "job", 0, ("a",), locks=(shared,)),
        Candidate(3, "update", 0, ("a",), locks=(excl,)),
        Candidate(4, "job", 0, ("a",), locks=(shared,)),
        Candidate(5, "other", 0, ("a",)),
    ]
    placed, skipped = place(w, [], jobs)
    assert [p.job_id for p in placed] == [1, 2, 5]
    assert {s.job_id: s.reason for s in skipped} == {
        3: SkipReason.LOCK_HELD,
        4: SkipReason.LOCK_WANTED_AHEAD,
    }


active_st = st.lists(
    st.tuples(st.integers(0, 4), st.integers(0, 3), claims_st, st.sampled_from(["t1", "t2"])),
    max_size=8,
)
prefetch_st = st.lists(st.integers(0, 4), min_size=5, max_size=5)


def _snapshot(workers, rows, prefetch):
    """Workers with a prefetch window, and active jobs on them, their locks compatible
    (as the database guarantees: they were placed by earlier cycles)."""
    workers = [WorkerSlot(w.id, w.name, w.pools, w.capacity, prefetch[w.id]) for w in workers]
    active: list[ActiveJob] = []
    held: list[LockClaim] = []
    for n, (slot, cost, claims, typ) in enumerate(rows):
        if not workers or any(a.conflicts(b) for a in claims for b in held):
            continue
        held.extend(claims)
        active.append(ActiveJob(1000 + n, typ, workers[slot % len(workers)].id, cost, claims))
    return workers, active


@settings(max_examples=300)
@given(workers_st, jobs_st, active_st, prefetch_st)
def test_with_work_already_placed_budgets_and_locks_still_hold(workers, jobs, rows, prefetch):
    """Active jobs and prefetch windows: a worker never gets more than its capacity plus
    its window (unless it was idle and takes one job), a drained worker (capacity 0)
    gets nothing, and no placed job conflicts with a held lock or another placed one."""
    workers, active = _snapshot(workers, rows, prefetch)
    placed, _ = place(workers, active, jobs)
    cost = {j.id: j.cost for j in jobs}
    before: Counter[int] = Counter()
    for a in active:
        before[a.worker_id] += a.cost
    busy_before = {a.worker_id for a in active}
    added: Counter[int] = Counter()
    count: Counter[int] = Counter()
    for p in placed:
        added[p.worker_id] += cost[p.job_id]
        count[p.worker_id] += 1
    for w in workers:
        if w.capacity == 0:
            assert count[w.id] == 0
        elif count[w.id] and before[w.id] + added[w.id] > w.capacity + w.prefetch:
            assert w.id not in busy_before and count[w.id] == 1
    by_id = {j.id: j for j in jobs}
    claims = [c for a in active for c in a.locks] + [
        c for p in placed for c in by_id[p.job_id].locks]
    for i, a in enumerate(claims):
        for b in claims[i + 1:]:
            assert not a.conflicts(b)


@settings(max_examples=200)
@given(workers_st, jobs_st)
def test_no_job_starves_over_cycles(workers, jobs):
    """Cycle after cycle (each one's jobs finishing before the next), every job that some
    open worker serves is placed: no job waits for ever, whatever is ahead of it (the
    order itself is the single-cycle properties' business)."""
    pending = list(jobs)
    placed_at: dict[int, int] = {}
    for cycle in range(len(jobs) + 1):
        if not pending:
            break
        placed, _ = place(workers, [], pending)
        for p in placed:
            placed_at[p.job_id] = cycle
        pending = [j for j in pending if j.id not in placed_at]
    for job in jobs:
        servable = any(w.capacity > 0 and set(w.pools) & set(job.pools) for w in workers)
        assert (job.id in placed_at) == servable, job
