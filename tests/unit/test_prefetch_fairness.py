"""A batch queued in prefetch windows is spread over the workers (bench.fleet found one
worker with 2,033 of 20,000 jobs and another with 25, for a fair 400): once every worker
is busy, each queued job goes to the worker with the fewest queued per slot — the least
(queued + 1) / capacity —, so the windows fill level by level instead of the widest first,
and a window caps what its worker holds without drawing work to it."""

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
    """Water-filling: after the batch, no worker that got a job of it holds more queued
    per slot than the next job on any worker still with room would make."""
    workers, active = _busy(specs)
    placed, _ = place(workers, active, [Candidate(n, "t", 0, ("a",)) for n in range(batch)])
    got = Counter(p.worker_id for p in placed)
    before = Counter(job.worker_id for job in active)
    queued = {w.id: before[w.id] + got[w.id] - w.capacity for w in workers}
    level = {w.id: Fraction(queued[w.id], w.capacity) for w in workers}
    with_room = [w for w in workers if queued[w.id] < w.prefetch]
    for taker in got:
        for w in with_room:
            assert level[taker] <= level[w.id] + Fraction(1, w.capacity), (taker, w.id, queued)


@given(st.lists(st.integers(1, 512), min_size=2, max_size=50), st.integers(1, 20))
def test_equal_workers_get_equal_shares_whatever_their_windows(windows, per_worker):
    """Capacity-1 workers each running a job, windows as wide as they happen to be (each
    at least the fair share): a batch of ``per_worker`` jobs a worker puts ``per_worker``
    on each, not more on the widest windows."""
    windows = [max(w, per_worker) for w in windows]
    workers, active = _busy([(1, w, 0) for w in windows])
    batch = per_worker * len(workers)
    placed, _ = place(workers, active, [Candidate(n, "t", 0, ("a",)) for n in range(batch)])
    assert len(placed) == batch
    assert set(Counter(p.worker_id for p in placed).values()) == {per_worker}


def test_a_narrow_window_caps_its_worker_and_the_rest_goes_to_the_others():
    # Capacity 2 and 1 (a level is per slot), windows 499, 80 and 499: 600 jobs.
    workers, active = _busy([(2, 499, 0), (1, 80, 0), (1, 499, 0)])
    placed, _ = place(workers, active, [Candidate(n, "t", 0, ("a",)) for n in range(600)])
    got = Counter(p.worker_id for p in placed)
    # w2 holds its 80; the other 520 go two for w1 (two slots) to one for w3.
    assert (got[1], got[2], got[3]) == (347, 80, 173)


def test_a_costly_job_goes_to_the_largest_room_when_it_does_not_fit_where_it_starts_soonest():
    # w1: nothing queued, 2 of room; w2: 2 queued, 5 of room.
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
    # Nothing queued on either: the lowest id first; then w1 is full again.
    got = [planner.offer(Candidate(n, "t", 0, ("a",))) for n in range(300, 304)]
    assert got == [Placement(300, 1), *(Placement(n, 2) for n in range(301, 304))]
