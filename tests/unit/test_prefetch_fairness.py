"""A batch queued in prefetch windows is spread over the workers (bench.fleet found one
worker with 2,033 of 20,000 jobs and another with 25, for a fair 400): once every worker
is busy, each queued job goes where it would start soonest — the least (queued + 1) /
(capacity + window) —, so the windows fill level by level instead of the widest first."""

from __future__ import annotations

from collections import Counter
from fractions import Fraction

from hypothesis import given
from hypothesis import strategies as st

from taskyard.core.placement import ActiveJob, Candidate, Placement, Planner, WorkerSlot, place

# (capacity, window, jobs queued on it already): every slot taken, so the batch goes to
# the windows.
worker_st = st.tuples(st.integers(1, 3), st.integers(0, 40), st.integers(0, 6))


def _busy(specs: list[tuple[int, int, int]]) -> tuple[list[WorkerSlot], list[ActiveJob]]:
    workers = [WorkerSlot(n, f"w{n}", ("a",), capacity, window)
               for n, (capacity, window, _) in enumerate(specs, 1)]
    active = [ActiveJob(-(n * 100 + k), "t", n, 1)
              for n, (capacity, _, queued) in enumerate(specs, 1)
              for k in range(capacity + queued)]
    return workers, active


@given(st.lists(worker_st, min_size=1, max_size=8), st.integers(1, 200))
def test_a_batch_fills_the_windows_level_by_level(specs, batch):
    """Water-filling: after the batch, no worker that got a job of it is filled (queued
    over capacity + window) beyond where the next job on any worker still with room
    would be."""
    workers, active = _busy(specs)
    placed, _ = place(workers, active, [Candidate(n, "t", 0, ("a",)) for n in range(batch)])
    got = Counter(p.worker_id for p in placed)
    before = Counter(job.worker_id for job in active)
    queued = {w.id: before[w.id] + got[w.id] - w.capacity for w in workers}
    level = {w.id: Fraction(queued[w.id], w.budget) for w in workers}
    with_room = [w for w in workers if queued[w.id] < w.prefetch]
    for taker in got:
        for w in with_room:
            assert level[taker] <= level[w.id] + Fraction(1, w.budget), (taker, w.id, queued)


@given(st.lists(st.integers(1, 8), min_size=2, max_size=30), st.integers(1, 3))
def test_each_window_gets_its_share_of_a_batch(sizes, levels):
    """Capacity-1 workers each running a job, windows of 4m - 1 (capacity + window = 4m:
    a worker of twice the window gets through twice the work in the same time): a batch
    of ``levels`` * Σm jobs puts ``levels`` * m on each — none is passed over because
    another's window is wider, none gets more than its pace warrants."""
    workers, active = _busy([(1, 4 * m - 1, 0) for m in sizes])
    batch = levels * sum(sizes)
    placed, _ = place(workers, active, [Candidate(n, "t", 0, ("a",)) for n in range(batch)])
    got = Counter(p.worker_id for p in placed)
    assert [got[n] for n in range(1, len(sizes) + 1)] == [levels * m for m in sizes]


def test_a_costly_job_goes_to_the_largest_room_when_it_does_not_fit_where_it_starts_soonest():
    # w1: nothing queued, 2 of room (a job there starts after 1/3 of its window's time);
    # w2: 2 queued, 5 of room (after 3/8).
    workers = [WorkerSlot(1, "w1", ("a",), 1, 2), WorkerSlot(2, "w2", ("a",), 1, 7)]
    active = [ActiveJob(-1, "t", 1, 1), ActiveJob(-2, "t", 2, 3)]
    planner = Planner.from_snapshot(workers, active)
    assert planner.offer(Candidate(1, "t", 0, ("a",), cost=3)) == Placement(1, 2)
    assert planner.offer(Candidate(2, "t", 0, ("a",), cost=1)) == Placement(2, 1)
    assert planner.offer(Candidate(3, "t", 0, ("a",), cost=2)) == Placement(3, 2)
    assert planner.offer(Candidate(4, "t", 0, ("a",), cost=1)) == Placement(4, 1)
    # Every window full: a job of cost 0 still queues, on the largest room (0).
    assert planner.room(1) == planner.room(2) == 0
    assert planner.offer(Candidate(5, "t", 0, ("a",), cost=0)) == Placement(5, 1)


def test_a_full_window_stays_full_through_the_index_rebuilding_itself():
    # w1's window is full (1 running, 1 queued) while w2's jobs come and go: hundreds of
    # updates make the index drop its stale entries (a rebuild) with w1 still full.
    workers = [WorkerSlot(1, "w1", ("a",), 1, 1), WorkerSlot(2, "w2", ("a",), 1, 50)]
    planner = Planner.from_snapshot(workers, [ActiveJob(-1, "t", 1, 1), ActiveJob(-2, "t", 1, 1),
                                              ActiveJob(-3, "t", 2, 1)])
    assert planner.room(1) == 0
    for n in range(300):
        assert planner.offer(Candidate(n, "t", 0, ("a",))) == Placement(n, 2)
        planner.release(n, "t", 2, 1, ())
    planner.release(-2, "t", 1, 1, ())  # w1's queued job leaves: its room comes back
    # A job queued on w1 would start half its window's time from now, on w2 (1 running,
    # 50 of window) after (q + 1) / 51 of it: w2 takes 25 more first.
    got = [planner.offer(Candidate(n, "t", 0, ("a",))) for n in range(300, 326)]
    assert got == [*(Placement(n, 2) for n in range(300, 325)), Placement(325, 1)]
