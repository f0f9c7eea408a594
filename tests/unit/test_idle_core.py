"""``up --until-idle``'s rule (core/idle.py): progress under way, or a pending job that a
live worker serves and that is due within the horizon, keeps it running; the rest is
said, not waited for."""

from __future__ import annotations

from taskyard.core.idle import PendingGroup, Unfinished, idle_verdict


def test_nothing_unfinished_is_idle_with_nothing_left() -> None:
    verdict = idle_verdict(Unfinished(active=0, waiting=0), served={"default"})
    assert (verdict.idle, verdict.waits_for, verdict.left) == (True, "", "")


def test_work_under_way_or_due_in_a_served_pool_is_waited_for() -> None:
    running = idle_verdict(Unfinished(active=2, waiting=1), served=set())
    assert not running.idle and running.waits_for == "2 dispatched, running or suspended"
    due = idle_verdict(Unfinished(0, 0, [PendingGroup(("gpu", "default"), due=3)]),
                       served={"default"})
    assert not due.idle and due.waits_for == "3 pending"


def test_jobs_that_cannot_run_here_are_left_and_said() -> None:
    jobs = Unfinished(active=0, waiting=4, pending=[
        PendingGroup(("gpu",), due=1, later=1, next_due=2e9),
        PendingGroup(("default",), due=0, later=2, next_due=1.7e9),
        PendingGroup(("default", "east"), due=0, later=1, next_due=1.8e9),
    ])
    verdict = idle_verdict(jobs, served={"default"})
    assert verdict.idle and verdict.waits_for == ""
    assert verdict.left == ("2 pending in pools no live worker serves (gpu); "
                            "3 pending not due yet (the first at 2023-11-14T22:13:20Z); "
                            "4 waiting on those")


def test_awaiting_jobs_are_waited_for_only_until_their_timeout() -> None:
    timers = idle_verdict(Unfinished(0, 1, timers=2, awaiting=1), served={"default"})
    assert not timers.idle and timers.waits_for == "2 awaiting their timeout"
    decisions = idle_verdict(Unfinished(0, 1, awaiting=3), served={"default"})
    assert decisions.idle
    assert decisions.left == "3 awaiting a decision or a signal; 1 waiting on those"


def test_jobs_of_paused_pools_are_left_and_said() -> None:
    jobs = Unfinished(0, 0, [PendingGroup(("gpu",), due=2), PendingGroup(("gpu", "cpu"), due=1)])
    verdict = idle_verdict(jobs, served={"gpu", "cpu"}, paused={"gpu"})
    assert not verdict.idle and verdict.waits_for == "1 pending"  # cpu still takes one
    alone = idle_verdict(Unfinished(0, 0, [PendingGroup(("gpu",), due=2)]), served={"gpu"},
                         paused={"gpu"})
    assert alone.idle and alone.left == "2 pending in paused pools (gpu)"
