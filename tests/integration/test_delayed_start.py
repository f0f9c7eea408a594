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
