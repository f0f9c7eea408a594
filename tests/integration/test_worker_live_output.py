"""Live output on a real worker (worker/log_pump.py, store/transitions/logs.py): what a
running attempt prints is stored while it runs, a canceled attempt keeps it, each
stream is bounded, and a follower gets it all in order."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest

from conftest import Cluster
from taskyard.api.http.views import job_logs
from taskyard.api.log_follow import LogFollower
from taskyard.store import open_store
from taskyard.store.transitions.logs import attempt_output
from taskyard.worker.daemon import WorkerDaemon

DEADLINE = 60.0


def _until(what: str, check: Callable[[], object]) -> object:
    deadline = time.monotonic() + DEADLINE
    while time.monotonic() < deadline:
        found = check()
        if found:
            return found
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


@pytest.mark.parametrize("handler", [
    "python:handlers_for_tests:talker",
    "shell:for i in 0 1 2; do echo line $i; sleep 0.2; done; echo to stderr >&2; sleep 60",
])
def test_a_running_job_s_output_is_stored_and_a_cancel_keeps_it(
        cluster: Cluster, handler: str) -> None:
    y = cluster.yard
    y.add_task_type("talk", handler)
    cluster.add_scheduler()
    cluster.add_worker("w1", lease=5.0)
    job_id = y.submit("talk", {"lines": 3, "every": 0.2, "then": 60})

    def printed() -> bool:
        out = attempt_output(y.store, job_id, 1)
        return out is not None and "line 2\n" in out[0] and "to stderr" in out[1]

    _until("the lines while the job runs", printed)
    assert y.get_job(job_id).state == "running"
    logs = job_logs(y, job_id).to_json()
    assert logs["stdout"] == "line 0\nline 1\nline 2\n" and logs["stderr"] == "to stderr\n"
    y.cancel(job_id)
    _until("the worker to stop the job", lambda: cluster.workers[0].executor.busy() == 0)
    kept = job_logs(y, job_id).to_json()
    assert (kept["state"], kept["stdout"], kept["stderr"]) == (
        "canceled", "line 0\nline 1\nline 2\n", "to stderr\n")


def test_each_stream_keeps_its_newest_bytes(cluster: Cluster) -> None:
    y = cluster.yard
    y.add_task_type("loud", "shell:for i in $(seq 1 400); do echo row-$i-xxxxxxxxxxxxxxxxxxxx; "
                            "done; echo end")
    cluster.add_scheduler()
    daemon = WorkerDaemon(open_store(cluster.url), name="w1", capacity=1, kill_grace=1.0,
                          log_limit=2000)
    cluster._start(daemon.run)
    cluster.workers.append(daemon)
    job = y.wait(y.submit("loud"), DEADLINE)
    assert job.state == "succeeded"
    out = attempt_output(y.store, job.id, 1)
    assert out is not None
    assert out[0].endswith("row-400-xxxxxxxxxxxxxxxxxxxx\nend\n")
    # At most the bound and one chunk (a chunk is read whole, at most the bound).
    assert len(out[0]) <= 4000 and "row-1-" not in out[0]


def test_a_follower_gets_every_attempt_s_output_in_order(cluster: Cluster) -> None:
    y = cluster.yard
    y.add_task_type("talk", "python:handlers_for_tests:talker", retries=1)
    y.add_task_type("flaky", "shell:echo try $TASKYARD_ATTEMPT; "
                             "test $TASKYARD_ATTEMPT -gt 1 || exit 3", retries=1)
    cluster.add_scheduler()
    cluster.add_worker("w1")
    for job_id, expected in ((y.submit("talk", {"lines": 4, "every": 0.1}),
                              [(1, "stdout", "line 0\nline 1\nline 2\nline 3\n"),
                               (1, "stderr", "to stderr\n")]),
                             (y.submit("flaky"), [(1, "stdout", "try 1\n"),
                                                  (2, "stdout", "try 2\n")])):
        # From the first attempt on, whichever runs now (as a client resuming does).
        follower = LogFollower(y.store, job_id, after=(1, 0))
        got: dict[tuple[int, str], str] = {}

        def done() -> str | None:
            step = follower.step()  # noqa: B023 - called in this iteration only
            for chunk in step.chunks:
                key = (chunk.attempt, chunk.stream)
                got[key] = got.get(key, "") + chunk.data  # noqa: B023
            return step.done

        assert _until(f"job {job_id} to end", done) == "succeeded"
        assert sorted((a, s, text) for (a, s), text in got.items()) == sorted(expected)
