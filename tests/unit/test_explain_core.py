"""Why a pending job is not running: the placement decision in words (pure core)."""

from __future__ import annotations

from taskyard.core.explain import Reason, from_decision
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
