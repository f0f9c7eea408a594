"""``async def`` handlers run in the worker's child processes like plain functions: one
event loop per child, reused job after job; failures, timeouts, cancels and stages
behave the same (real worker, real child processes, both stores)."""

from __future__ import annotations

import time
from pathlib import Path

from conftest import Cluster


def _wait_for(path: Path, seconds: float = 30) -> None:
    deadline = time.monotonic() + seconds
    while not path.exists():
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.02)


def test_async_handlers_return_results_on_one_reused_loop(cluster: Cluster) -> None:
    y = cluster.yard
    y.add_task_type("aecho", "python:handlers_for_tests:async_echo")
    y.add_task_type("boom", "python:handlers_for_tests:async_boom")
    y.add_task_type("own-loop", "python:handlers_for_tests:sync_runs_its_own_loop")
    cluster.add_scheduler()
    cluster.add_worker("w1", capacity=1)
    runs = [y.wait(y.submit("aecho", {"n": n}), 30) for n in range(3)]
    assert [(j.state, j.result["args"]) for j in runs] == [("succeeded", {"n": n})
                                                            for n in range(3)]
    assert runs[0].attempts[0].stdout_tail == f"async hello from {runs[0].id}\n"
    # One child (capacity 1), and in it one event loop for every async job.
    assert len({j.result["pid"] for j in runs}) == 1
    assert len({j.result["loop"] for j in runs}) == 1
    failed = y.wait(y.submit("boom", {"message": "kaput"}), 30)
    assert (failed.state, failed.exit_code, failed.error) == ("failed", 1, "ValueError: kaput")
    assert "Traceback" in (failed.attempts[0].stderr_tail or "")
    # A plain function may still run a loop of its own in the same child.
    assert y.wait(y.submit("own-loop"), 30).result == 2
    assert y.wait(y.submit("aecho"), 30).result["pid"] == runs[0].result["pid"]


def test_tasks_an_async_job_leaves_behind_do_not_run_into_the_next(
        cluster: Cluster, tmp_path: Path) -> None:
    y = cluster.yard
    y.add_task_type("leaves", "python:handlers_for_tests:async_leaves_a_task")
    y.add_task_type("sleepy", "python:handlers_for_tests:async_sleepy")
    cluster.add_scheduler()
    cluster.add_worker("w1", capacity=1)
    leaked = tmp_path / "leaked"
    assert y.wait(y.submit("leaves", {"path": str(leaked)}), 30).result == "left"
    # The next job awaits well past the time the left task would have written.
    assert y.wait(y.submit("sleepy", {"seconds": 1.0}), 30).state == "succeeded"
    assert not leaked.exists()


def test_an_async_handler_times_out_with_exit_code_130(cluster: Cluster) -> None:
    y = cluster.yard
    y.add_task_type("slow", "python:handlers_for_tests:async_sleepy", timeout=0.5)
    y.add_task_type("aecho", "python:handlers_for_tests:async_echo")
    cluster.add_scheduler()
    cluster.add_worker("w1", capacity=1)
    job = y.wait(y.submit("slow", {"seconds": 30}), 30)
    assert (job.state, job.exit_code) == ("failed", 130)
    assert y.wait(y.submit("aecho"), 30).state == "succeeded"  # a fresh child took over


def test_cancel_stops_a_running_async_handler(cluster: Cluster, tmp_path: Path) -> None:
    y = cluster.yard
    y.add_task_type("slow", "python:handlers_for_tests:async_sleepy")
    cluster.add_scheduler()
    worker = cluster.add_worker("w1", capacity=1, lease=3.0)
    started = tmp_path / "started"
    job_id = y.submit("slow", {"seconds": 60, "started": str(started)})
    _wait_for(started)
    assert y.cancel(job_id).state == "canceled"
    deadline = time.monotonic() + 30
    while worker.executor.busy() and time.monotonic() < deadline:
        time.sleep(0.02)
    assert worker.executor.busy() == 0
    assert y.get_job(job_id).attempts[0].state == "canceled"
