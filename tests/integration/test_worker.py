"""End to end: a job submitted on SQLite or PostgreSQL runs on a real worker."""

from __future__ import annotations

import time
from pathlib import Path

from conftest import Cluster


def test_python_and_shell_jobs_run_with_results(cluster: Cluster) -> None:
    y = cluster.yard
    y.add_task_type("echo", "python:handlers_for_tests:echo")
    y.add_task_type("sh", "shell:printf '{\"n\": %s}' {n} > \"$TASKYARD_RESULT\"; echo out {word}")
    y.add_task_type("sh-text", "shell:echo plain > $TASKYARD_RESULT")
    cluster.add_scheduler()
    cluster.add_worker("w1")
    a = y.submit("echo", {"x": 1})
    b = y.submit("sh", {"n": 7, "word": "it's quoted"})
    c = y.submit("sh-text")
    job = y.wait(a, 30)
    assert (job.state, job.exit_code, job.worker) == ("succeeded", 0, "w1")
    assert job.result["args"] == {"x": 1} and job.result["job_id"] == str(a)
    assert job.attempts[0].stdout_tail == f"hello from {a}\n"
    sh = y.wait(b, 30)
    assert (sh.state, sh.result) == ("succeeded", {"n": 7})
    assert sh.attempts[0].stdout_tail == "out it's quoted\n"
    assert y.wait(c, 30).result == "plain"


def test_failures_are_recorded(cluster: Cluster) -> None:
    y = cluster.yard
    y.add_task_type("boom", "python:handlers_for_tests:boom")
    y.add_task_type("exit3", "shell:echo bad >&2; exit 3")
    y.add_task_type("notjson", "python:handlers_for_tests:not_json")
    y.add_task_type("missing", "python:handlers_for_tests:nope", verify=False)
    cluster.add_scheduler()
    cluster.add_worker("w1")
    boom = y.wait(y.submit("boom", {"message": "kaput"}), 30)
    assert (boom.state, boom.exit_code, boom.error) == ("failed", 1, "ValueError: kaput")
    assert "Traceback" in (boom.attempts[0].stderr_tail or "")
    exit3 = y.wait(y.submit("exit3"), 30)
    assert (exit3.state, exit3.exit_code, exit3.attempts[0].stderr_tail) == ("failed", 3, "bad\n")
    assert y.wait(y.submit("notjson"), 30).state == "error"
    missing = y.wait(y.submit("missing"), 30)
    assert missing.state == "error" and "nope" in (missing.error or "")


def test_timeout_kills_the_child_with_exit_code_130(cluster: Cluster) -> None:
    y = cluster.yard
    y.add_task_type("slow", "python:handlers_for_tests:sleepy", timeout=0.5)
    y.add_task_type("slow-sh", "shell:sleep 30", timeout=0.5)
    y.add_task_type("echo", "python:handlers_for_tests:echo")
    cluster.add_scheduler()
    cluster.add_worker("w1", capacity=1)
    for job_id in (y.submit("slow", {"seconds": 30}), y.submit("slow-sh")):
        job = y.wait(job_id, 30)
        assert (job.state, job.exit_code) == ("failed", 130)
    assert y.wait(y.submit("echo"), 30).state == "succeeded"  # a fresh child took over


def test_cancel_a_running_job(cluster: Cluster) -> None:
    y = cluster.yard
    y.add_task_type("slow", "shell:sleep 60")
    cluster.add_scheduler()
    cluster.add_worker("w1", lease=3.0)
    job_id = y.submit("slow")
    deadline = time.monotonic() + 20
    while y.get_job(job_id).state != "running" and time.monotonic() < deadline:
        time.sleep(0.02)
    started = time.monotonic()
    assert y.cancel(job_id).state == "canceled"
    worker = cluster.workers[0]
    while worker.executor.busy() and time.monotonic() - started < 10:
        time.sleep(0.02)
    assert worker.executor.busy() == 0
    assert time.monotonic() - started < 3.0  # the handler was stopped promptly


def test_child_processes_are_reused(cluster: Cluster) -> None:
    y = cluster.yard
    y.add_task_type("echo", "python:handlers_for_tests:echo")
    cluster.add_scheduler()
    cluster.add_worker("w1", capacity=1)
    pids = {y.wait(y.submit("echo"), 30).result["pid"] for _ in range(5)}
    assert len(pids) == 1


def test_capacity_is_never_exceeded(cluster: Cluster, tmp_path: Path) -> None:
    y = cluster.yard
    log = tmp_path / "runs.log"
    y.add_task_type("sleepy", "python:handlers_for_tests:sleepy")
    cluster.add_scheduler()
    cluster.add_worker("w1", capacity=2)
    cluster.add_worker("w2", capacity=3)
    ids = [y.submit("sleepy", {"seconds": 0.1, "log": str(log)}) for _ in range(30)]
    for job_id in ids:
        assert y.wait(job_id, 60).state == "succeeded"
    events = sorted((float(t), kind) for kind, t, _ in
                    (line.split() for line in log.read_text().splitlines()))
    level = peak = 0
    for _, kind in events:
        level += 1 if kind == "start" else -1
        peak = max(peak, level)
    assert 2 <= peak <= 5


def test_graceful_stop_requeues_running_jobs(cluster: Cluster) -> None:
    y = cluster.yard
    y.add_task_type("sleepy", "python:handlers_for_tests:sleepy")
    cluster.add_scheduler()
    first = cluster.add_worker("first", capacity=1)
    job_id = y.submit("sleepy", {"seconds": 2})
    deadline = time.monotonic() + 20
    while y.get_job(job_id).state != "running" and time.monotonic() < deadline:
        time.sleep(0.02)
    stop_index = cluster.workers.index(first)
    cluster.stops[stop_index + 1].set()  # stops[0] is the scheduler's
    cluster.threads[stop_index + 1].join(20)
    cluster.add_worker("second", capacity=1)
    job = y.wait(job_id, 30)
    assert (job.state, job.worker, job.attempt) == ("succeeded", "second", 2)
    assert [a.state for a in job.attempts] == ["lost", "succeeded"]


def test_a_stopping_worker_hands_a_job_back_only_once_its_handler_is_gone(
        cluster: Cluster, tmp_path: Path) -> None:
    """SIGTERM (seed 001): the job is requeued, but not while its handler, which traps
    the signal to clean up, still runs — it still holds the job's locks."""
    y = cluster.yard
    log = tmp_path / "log"
    y.add_task_type("careful", "shell:" + (
        f"echo start $TASKYARD_ATTEMPT $(date +%s.%N) >> {log}; "
        f"trap 'sleep 0.5; echo gone $TASKYARD_ATTEMPT $(date +%s.%N) >> {log}; exit 143' TERM; "
        "sleep 30 & wait; "
        f"echo done $TASKYARD_ATTEMPT $(date +%s.%N) >> {log}"), locks=["res"])
    cluster.add_scheduler(interval=0.2)
    first = cluster.add_worker("first", capacity=1)
    job_id = y.submit("careful")
    deadline = time.monotonic() + 20
    while not (log.exists() and "start 1" in log.read_text()):
        assert time.monotonic() < deadline
        time.sleep(0.02)
    index = cluster.workers.index(first)
    cluster.stops[index + 1].set()  # stops[0] is the scheduler's
    cluster.add_worker("second", capacity=1)
    deadline = time.monotonic() + 30
    while "start 2" not in log.read_text():
        assert time.monotonic() < deadline
        time.sleep(0.05)
    y.cancel(job_id)
    times = {f"{kind} {attempt}": float(at) for kind, attempt, at in
             (line.split() for line in log.read_text().splitlines())}
    assert times["gone 1"] < times["start 2"]
    assert [a.state for a in y.get_job(job_id).attempts][:1] == ["lost"]
