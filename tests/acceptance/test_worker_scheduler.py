"""``taskyard worker --scheduler``: one process runs a worker and a scheduler. What only a
scheduler does (a periodic cycle: a job whose ``run_after`` comes after every cycle a
submit or a completion triggered) happens with no other process, and SIGTERM stops both
cleanly."""

from __future__ import annotations

import time

from acceptance_cli import Cli, stop

from polling import wait_for
from taskyard.store import open_store


def test_a_worker_with_a_scheduler_places_a_delayed_job_alone(cli: Cli, db_url: str) -> None:
    cli("init").ok()
    cli("task-type", "add", "hello", "--handler", "shell:echo hi").ok()
    store = open_store(db_url)
    worker = cli.popen("worker", "--name", "both", "--scheduler")
    try:
        wait_for("the worker", lambda: [w for w in store.workers.list()
                                        if w.state == "active"], timeout=120)
        # Due in 3 s: the submit's own cycle cannot place it, and no completion follows
        # that would run another; only the scheduler's periodic cycle can.
        job_id = int(cli("submit", "hello", "--run-after", "3s").ok().out)
        job = wait_for("the delayed job to succeed", lambda: (
            found if (found := store.jobs.get(job_id)) and found.state == "succeeded"
            else None), timeout=120)
        assert job.worker == "both"
    finally:
        err = stop(worker)
    assert worker.returncode == 0, err
    assert "event=scheduler-started" in err and "event=scheduler-stopped" in err
    assert "event=worker-started" in err
    assert "Traceback" not in err
    assert [w.state for w in store.workers.list()] in ([], ["stopped"])
    store.close()


def test_without_the_flag_the_delayed_job_waits(cli: Cli, db_url: str) -> None:
    """The same worker without ``--scheduler`` leaves it pending (what the test above
    shows is the scheduler's doing, not the worker's own cycles)."""
    cli("init").ok()
    cli("task-type", "add", "hello", "--handler", "shell:echo hi").ok()
    store = open_store(db_url)
    worker = cli.popen("worker", "--name", "alone")
    try:
        wait_for("the worker", lambda: [w for w in store.workers.list()
                                        if w.state == "active"], timeout=120)
        job_id = int(cli("submit", "hello", "--run-after", "1s").ok().out)
        # Past its due time, and a periodic cycle (1 s) would have placed it by far.
        deadline = time.monotonic() + 4
        while time.monotonic() < deadline:
            job = store.jobs.get(job_id)
            assert job is not None and job.state == "pending", job
            time.sleep(0.2)
    finally:
        stop(worker)
        store.close()
