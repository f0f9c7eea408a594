"""Stages (seed 001): each stage's result is stored when it ends, and a later attempt
skips the stages already finished and gets their results — Python and shell handlers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.store.driver import claim

from conftest import Cluster
from taskyard.model.errors import InvalidInput

SHELL_STAGES = r"""
log={log}
case " $TASKYARD_STAGES_DONE " in
  *" build "*) ;;
  *) echo "begin build" >> "$TASKYARD_STAGES"
     echo "build $TASKYARD_ATTEMPT" >> "$log"
     echo 'end build {{"artifact": "a.tar"}}' >> "$TASKYARD_STAGES" ;;
esac
echo "begin upload" >> "$TASKYARD_STAGES"
echo "upload $TASKYARD_ATTEMPT" >> "$log"
if [ "$TASKYARD_ATTEMPT" = 1 ]; then
  echo "fail upload network down" >> "$TASKYARD_STAGES"; exit 4
fi
echo "bogus line" >> "$TASKYARD_STAGES"
echo "end upload done" >> "$TASKYARD_STAGES"
cat "$TASKYARD_STAGE_RESULTS" > "$TASKYARD_RESULT"
"""


@pytest.mark.parametrize("handler", ["staged", "async_staged"])
def test_a_retry_skips_finished_python_stages(cluster: Cluster, tmp_path: Path,
                                              handler: str) -> None:
    """Plain and ``async def`` handlers alike (``await stage(...)`` for a coroutine)."""
    y = cluster.yard
    y.add_task_type("etl", f"python:handlers_for_tests:{handler}", retries=1)
    cluster.add_scheduler()
    cluster.add_worker("w1")
    log = tmp_path / "steps.log"
    job = y.wait(y.submit("etl", {"log": str(log), "marker": str(tmp_path / "m")}), 30)
    assert job.state == "succeeded", job.error
    assert job.result == {"rows": [1, 2, 3], "total": 6, "loaded": 6, "attempt": 2}
    # fetch and transform ran once (attempt 1); load failed there and ran again in attempt 2.
    assert log.read_text().split("\n")[:-1] == ["fetch 1", "transform 1", "load 2"]
    assert [(s.attempt, s.name, s.state, s.result) for s in job.stages] == [
        (1, "fetch", "succeeded", [1, 2, 3]),
        (1, "transform", "succeeded", 6),
        (1, "load", "failed", "RuntimeError: flaky load"),
        (2, "load", "succeeded", 6),
    ]
    assert [a.state for a in job.attempts] == ["failed", "succeeded"]


def test_shell_handlers_report_and_skip_stages(cluster: Cluster, tmp_path: Path) -> None:
    y = cluster.yard
    log = tmp_path / "steps.log"
    y.add_task_type("ship", "shell:" + SHELL_STAGES.format(log=log), retries=1)
    cluster.add_scheduler()
    cluster.add_worker("w1")
    job = y.wait(y.submit("ship"), 30)
    assert job.state == "succeeded", (job.error, job.attempts[-1].stderr_tail)
    assert log.read_text().split("\n")[:-1] == ["build 1", "upload 1", "upload 2"]
    assert job.result == {"build": {"artifact": "a.tar"}}
    assert [(s.attempt, s.name, s.state, s.result) for s in job.stages] == [
        (1, "build", "succeeded", {"artifact": "a.tar"}),
        (1, "upload", "failed", "network down"),
        (2, "upload", "succeeded", "done"),
    ]
    # A malformed report is ignored and said so in the attempt's stderr.
    assert "ignored" in (job.attempts[1].stderr_tail or "")


def test_stage_reports_are_fenced(cluster: Cluster) -> None:
    """Only the current attempt, running on this worker under a valid lease, may report."""
    store = cluster.yard.store
    y = cluster.yard
    y.add_task_type("t", "shell:true")
    job_id = y.submit("t")
    worker = store.workers.register("manual", ["default"], 1, lease_seconds=30)
    y.schedule()
    (claimed,) = claim(store, worker.id, 1)
    assert store.stages.report(worker.id, job_id, 1, "a", "running")
    assert not store.stages.report(worker.id, job_id, 2, "a", "succeeded", result=1)
    other = store.workers.register("other", ["default"], 1, lease_seconds=30)
    assert not store.stages.report(other.id, job_id, 1, "a", "succeeded", result=1)
    assert store.stages.report(worker.id, job_id, 1, "a", "succeeded", result={"k": 1})
    for bad, why in (("", "stage name"), ("a b", "stage name")):
        try:
            store.stages.report(worker.id, job_id, 1, bad, "running")
        except InvalidInput as exc:
            assert why in str(exc)
        else:
            raise AssertionError(f"{bad!r} accepted")
    stored = y.get_job(job_id).stages
    assert [(s.attempt, s.name, s.state, s.result) for s in stored] == [(1, "a", "succeeded",
                                                                          {"k": 1})]
    store.jobs.cancel(job_id)
    assert not store.stages.report(worker.id, job_id, 1, "b", "running")
    assert json.dumps(y.get_job(job_id).to_json()["stages"])
    assert claimed.stages == {}
