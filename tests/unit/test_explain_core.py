"""Why a pending job is not running: the placement decision in words (pure core)."""

from __future__ import annotations

from hypothesis import example, given
from hypothesis import strategies as st

from taskyard.core.explain import Reason, explain_candidate, from_decision
from taskyard.core.locks import LockClaim
from taskyard.core.placement import (
    ActiveJob,
    Candidate,
    Placement,
    Planner,
    Skip,
    SkipReason,
    WorkerSlot,
)
from taskyard.core.rate_limits import RateBook, RateLimit
from taskyard.core.spread import spread

NAMES = {1: "alpha", 2: "beta"}


def _decide(job: Candidate, *, active: tuple[ActiveJob, ...] = (),
            ahead: tuple[Candidate, ...] = (), limits: dict[str, int] | None = None,
            workers: tuple[WorkerSlot, ...] = (WorkerSlot(1, "alpha", ("east",), 2),),
            ) -> Placement | Skip:
    """The placement function's decision for ``job`` after the jobs ``ahead`` of it."""
    planner = Planner.from_snapshot(workers, active, limits)
    for other in ahead:
        planner.offer(other)
    return planner.offer(job)


def test_a_placeable_job_names_its_worker() -> None:
    decision = _decide(Candidate(7, "build", 0, ("east",)))
    assert decision == Placement(7, 1)
    reason = from_decision(decision, ahead=0, worker_names=NAMES)
    assert reason == Reason("placeable", "can be placed on worker alpha at the next cycle",
                            detail="alpha")


def test_a_worker_without_a_known_name_is_named_by_its_id() -> None:
    reason = from_decision(Placement(7, 9), ahead=0, worker_names=NAMES)
    assert (reason.message, reason.detail) == ("can be placed on worker 9 at the next cycle",
                                               "9")


def test_a_held_lock_names_the_lock_and_its_holder() -> None:
    held = ActiveJob(3, "deploy", 1, 1, (LockClaim("inventory:5"),))
    decision = _decide(Candidate(7, "build", 0, ("east",), locks=(LockClaim("inventory:5"),)),
                       active=(held,))
    reason = from_decision(decision, ahead=0, worker_names=NAMES)
    assert reason == Reason("lock_held",
                            "lock inventory:5 conflicts with job 3, which holds it",
                            3, "inventory:5")


def test_a_lock_wanted_ahead_names_the_job_ahead() -> None:
    # Job 3, ahead in line, is held back (its type's queue is full) and still wants its
    # lock: job 7, whose claim conflicts with it, waits behind it.
    first = Candidate(3, "deploy", 5, ("east",), locks=(LockClaim("inv"),))
    decision = _decide(Candidate(7, "build", 0, ("east",), locks=(LockClaim("inv", False),)),
                       ahead=(first,), limits={"deploy": 0})
    assert decision == Skip(7, SkipReason.LOCK_WANTED_AHEAD, "inv:shared", 3)
    reason = from_decision(decision, ahead=1, worker_names=NAMES)
    assert reason == Reason(
        "lock_wanted_ahead", "job 3, ahead in line, wants conflicting lock inv:shared; jobs "
        "that conflict run in order", 3, "inv:shared")


def test_a_full_queue_names_the_type_and_its_limit() -> None:
    running = ActiveJob(1, "build", 1, 1)
    decision = _decide(Candidate(7, "build", 0, ("east",)), active=(running,),
                       limits={"build": 1})
    reason = from_decision(decision, ahead=0, worker_names=NAMES, queue_limit=1)
    assert reason == Reason("queue_full", "task type build is at its max queue length "
                            "(1 dispatched or running)", detail="build")


def test_pools_no_worker_serves_are_named() -> None:
    decision = _decide(Candidate(7, "build", 0, ("gpu", "tpu")))
    reason = from_decision(decision, ahead=0, worker_names=NAMES)
    assert reason == Reason("no_worker", "no live worker serves its pools (gpu,tpu)",
                            detail="gpu,tpu")


def test_no_capacity_counts_the_jobs_ahead() -> None:
    full = ActiveJob(1, "build", 1, 2)  # takes all of alpha's capacity of 2
    decision = _decide(Candidate(7, "build", 0, ("east",)), active=(full,))
    reason = from_decision(decision, ahead=4, worker_names=NAMES)
    assert reason == Reason("no_capacity", "no worker in its pools (east) has room for it; "
                            "4 job(s) ahead in line", detail="east")


def test_a_reason_is_json_with_every_field() -> None:
    assert Reason("lock_held", "m", 3, "inv").to_json() == {
        "code": "lock_held", "message": "m", "job_id": 3, "detail": "inv"}
    assert Reason("run_after", "later").to_json() == {
        "code": "run_after", "message": "later", "job_id": None, "detail": ""}


# Every reason at once (issue 41: a job held by capacity *and* a lock showed only one).

CLAIMS = st.lists(st.builds(LockClaim, st.sampled_from(["db", "inv"]), st.booleans()),
                  max_size=2, unique_by=lambda c: c.key).map(tuple)
JOBS = st.lists(st.tuples(st.integers(0, 2), st.sampled_from([("east",), ("west",),
                                                               ("west", "east")]),
                          st.integers(0, 3), CLAIMS, st.sampled_from(["build", "deploy"])),
                min_size=1, max_size=12)
WORKERS = st.lists(st.tuples(st.sampled_from([("east",), ("west",), ("east", "west")]),
                             st.integers(0, 3)), max_size=3)


@given(WORKERS, JOBS, st.sampled_from([{}, {"deploy": 1}, {"build": 0}]), st.data())
def test_the_obstacles_agree_with_the_placement_decision(workers, rows, limits, data) -> None:
    """Before each offer: no obstacle if and only if the job is placed, else the first
    obstacle is the skip the placement function returns; the obstacles change nothing."""
    slots = [WorkerSlot(n + 1, f"w{n}", pools, cap) for n, (pools, cap) in enumerate(workers)]
    held = ActiveJob(100, "deploy", 1, 1, data.draw(CLAIMS)) if slots else None
    planner = Planner.from_snapshot(slots, [held] if held else [], limits)
    jobs = sorted((Candidate(n + 1, typ, prio, pools, cost, claims)
                   for n, (prio, pools, cost, claims, typ) in enumerate(rows)),
                  key=lambda c: (-c.priority, c.id))
    for job in jobs:
        found = planner.obstacles(job)
        assert planner.obstacles(job) == found
        decision = planner.offer(job)
        if found:
            assert decision == found[0]
            assert len({(s.reason, s.detail) for s in found}) == len(found)
        else:
            assert isinstance(decision, Placement)


def test_a_job_is_told_every_reason_that_holds_it() -> None:
    # Alpha has 1 unit left and runs a build and a deploy holding db; job 3, ahead,
    # waits (its type's queue is full) and wants inv; job 7 wants both and 2 units.
    active = [ActiveJob(1, "deploy", 1, 1, (LockClaim("db"),)), ActiveJob(2, "build", 1, 1)]
    planner = Planner.from_snapshot([WorkerSlot(1, "alpha", ("east",), 3)], active,
                                    {"build": 1, "deploy": 1})
    planner.offer(Candidate(3, "deploy", 0, ("east",), locks=(LockClaim("inv"),)))
    job = Candidate(7, "build", 0, ("east",), 2, (LockClaim("db"), LockClaim("inv")))
    reasons = explain_candidate(planner, job, ahead=1, worker_names=NAMES, queue_limit=1)
    assert [(r.code, r.job_id, r.detail) for r in reasons] == [
        ("lock_held", 1, "db"), ("lock_wanted_ahead", 3, "inv"), ("queue_full", None, "build"),
        ("no_capacity", None, "east")]
    assert reasons[-1].message.endswith("; 1 job(s) ahead in line")


def test_a_free_job_is_placeable_and_one_past_the_scan_is_far_in_line() -> None:
    planner = Planner.from_snapshot([WorkerSlot(1, "alpha", ("east",), 2)], [])
    job = Candidate(7, "build", 0, ("east",))
    far = explain_candidate(planner, job, ahead=10_000, worker_names=NAMES, reached=False)
    assert [(r.code, r.message) for r in far] == [
        ("far_in_line", "more than 10000 jobs are ahead of it in line")]
    (placed,) = explain_candidate(planner, job, ahead=0, worker_names=NAMES)
    assert placed.code == "placeable" and placed.detail == "alpha"
    # Past the scan and without room: the capacity says it all.
    full = Planner.from_snapshot([WorkerSlot(1, "alpha", ("east",), 1)],
                                 [ActiveJob(1, "x", 1, 1)])
    assert [r.message for r in explain_candidate(full, job, ahead=10_000, worker_names=NAMES,
                                                 reached=False)] == [
        "no worker in its pools (east) has room for it; at least 10000 job(s) ahead in line"]


def test_a_spent_rate_limit_is_among_the_reasons() -> None:
    rates = RateBook({"mail": RateLimit(1, 60.0)}, 100.0, lambda *_: [90.0])
    planner = Planner.from_snapshot([], [], rates=rates)
    job = Candidate(7, "mail", 0, ("east",))
    assert [s.reason for s in planner.obstacles(job)] == [SkipReason.RATE_LIMITED,
                                                           SkipReason.NO_WORKER]
    free = Planner.from_snapshot([], [], rates=RateBook({"mail": RateLimit(1, 60.0)}, 100.0,
                                                        lambda *_: []))
    assert [s.reason for s in free.obstacles(job)] == [SkipReason.NO_WORKER]


@given(windows=st.lists(st.integers(0, 12), min_size=1, max_size=4),
       burst=st.integers(1, 40), from_end=st.integers(0, 39))
@example(windows=[0, 12], burst=6, from_end=0)  # the last two are taken back
@example(windows=[0, 12], burst=6, from_end=2)  # kept
def test_explain_says_what_the_cycle_does_with_a_burst_it_spreads(
        windows: list[int], burst: int, from_end: int) -> None:
    """For a burst over workers of unequal prefetch windows, a job explained "placeable"
    is one the cycle places and keeps, and one explained "spread" one it places and takes
    back (core.spread): the explanation replays the cycle past the job."""
    workers = [WorkerSlot(n, f"w{n}", ("default",), 1, w) for n, w in enumerate(windows)]
    jobs = [Candidate(n, "t", 0, ("default",)) for n in range(burst)]
    target = max(0, burst - 1 - from_end)  # the last placed are those taken back

    planner = Planner.from_snapshot(workers, [])
    placed: list[tuple[Candidate, int]] = []
    for job in jobs:  # the cycle (scheduler/cycle.py:_place)
        decision = planner.offer(job)
        if isinstance(decision, Placement):
            placed.append((job, decision.worker_id))
        if planner.exhausted():
            break
    back = set() if planner.exhausted() else {p.job_id for p in spread(planner, placed)}
    kept = {job.id for job, _ in placed} - back

    replay = Planner.from_snapshot(workers, [])
    before: list[tuple[Candidate, int]] = []
    for job in jobs[:target]:
        decision = replay.offer(job)
        if isinstance(decision, Placement):
            before.append((job, decision.worker_id))
    (reason,) = explain_candidate(replay, jobs[target], ahead=target, worker_names={},
                                  placed=before, rest=iter(jobs[target + 1:]))
    assert (reason.code == "placeable") == (target in kept)
    assert (reason.code == "spread") == (target in back)


def test_a_job_that_fits_no_worker_after_it_leaves_the_spread_as_it_is() -> None:
    """The replay past the job offers what comes after it, placeable or not, as the
    cycle does: a job of a pool no worker serves changes nothing."""
    workers = [WorkerSlot(0, "narrow", ("default",), 1, 0),
               WorkerSlot(1, "wide", ("default",), 1, 12)]
    jobs = [Candidate(n, "t", 0, ("default",)) for n in range(6)]
    planner = Planner.from_snapshot(workers, [])
    before = [(job, planner.offer(job).worker_id) for job in jobs[:5]]  # type: ignore[union-attr]
    (reason,) = explain_candidate(planner, jobs[5], ahead=5, worker_names={1: "wide"},
                                  placed=before, rest=[Candidate(6, "t", 0, ("gpu",))])
    assert reason == Reason("spread", "fits on worker wide, but only beyond that worker's "
                            "fair share of a burst: it stays pending for a worker with room "
                            "(the next cycles place it)", detail="wide")
