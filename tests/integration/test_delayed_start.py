"""A scheduler sleeps no longer than until the next delayed job is due: its maintenance
reads that time with its question (``ix_jobs_delayed``'s first entry), and the cycle at
that moment makes the job placeable and places it — not the next periodic tick."""

from __future__ import annotations

from conftest import Cluster
from polling import wait_for


def test_a_delayed_job_starts_when_due_not_at_the_schedulers_next_tick(
        cluster: Cluster) -> None:
    yard = cluster.yard
    yard.add_task_type("echo", "python:handlers_for_tests:echo")
    cluster.add_worker("w1")  # runs no cycle of its own: only the scheduler places
    wait_for("the worker to register", lambda: yard.store.workers.list())  # noqa: PLW0108
    job_id = yard.submit("echo", {"n": 1}, run_after="3s")
    cluster.add_scheduler(interval=60.0)  # its first cycle reads when the job is due
    job = yard.wait(job_id, 45)
    assert job.state == "succeeded", "placed at a tick, not when due"
    assert job.run_after is not None and job.started_at is not None
    assert job.started_at >= job.run_after


def test_a_job_for_later_submitted_while_the_scheduler_sleeps_starts_when_due(
        cluster: Cluster) -> None:
    """The submit wakes the scheduler, whose cycle reads when the job is due: it does not
    sleep through to its next tick (60 s here) with the job's time unknown."""
    yard = cluster.yard
    yard.add_task_type("echo", "python:handlers_for_tests:echo")
    cluster.add_worker("w1")
    wait_for("the worker to register", lambda: yard.store.workers.list())  # noqa: PLW0108
    cluster.add_scheduler(interval=60.0)
    # Its first cycles are done (each reads the delayed jobs: none yet) once it has
    # placed a job submitted now.
    assert yard.wait(yard.submit("echo", {"n": 0}), 45).state == "succeeded"
    for delay in ("2s", "0.3s"):
        job_id = yard.submit("echo", {"n": 1}, run_after=delay)
        job = yard.wait(job_id, 45)
        assert job.state == "succeeded", f"a job for {delay} later waited for a tick"
        assert job.run_after is not None and job.started_at is not None
        assert job.started_at >= job.run_after


def test_a_retry_with_a_delay_starts_when_due_not_at_the_schedulers_next_tick(
        cluster: Cluster) -> None:
    """A failed attempt's retry waits its delay outside the placement index; the report
    that delays it wakes the scheduler, which learns when it is due."""
    yard = cluster.yard
    yard.add_task_type("boom", "python:handlers_for_tests:boom", retries=1, retry_delay=2.0)
    cluster.add_worker("w1")
    wait_for("the worker to register", lambda: yard.store.workers.list())  # noqa: PLW0108
    cluster.add_scheduler(interval=60.0)
    job = yard.wait(yard.submit("boom"), 50)
    assert job.state == "failed", "the retry waited for a tick"
    first, second = job.attempts
    assert first.finished_at is not None and second.started_at is not None
    assert second.started_at >= first.finished_at + 1.0  # jitter shortens it to half
