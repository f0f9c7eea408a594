"""The simulator applies taskyard's rules: each case a small scenario whose outcome the
rule decides (docs/task-manager.md, failures.md, graphs.md, recurring.md)."""

from __future__ import annotations

from pathlib import Path

import pytest
from sim_runs import events, jobs, run, start_order, starts, worker_names

from taskyard.core.states import JobState


def one_worker(capacity: int = 1, **extra):
    return {"w": {"count": 1, "capacity": capacity, **extra}}


def test_one_worker_runs_jobs_one_after_the_other():
    result = run({"workers": one_worker(),
                  "task_types": {"t": {"duration": "10s"}},
                  "arrivals": [{"type": "t", "at": 0, "burst": 3}]})
    assert starts(result) == {1: [0.0], 2: [10.0], 3: [20.0]}
    assert result.report["waits"][0]["max"] == 20.0
    assert result.report["pools"][0]["utilization"] == 1.0


def test_highest_priority_first_then_oldest():
    result = run({"workers": one_worker(),
                  "task_types": {"t": {"duration": "1s"}},
                  "arrivals": [{"type": "t", "at": 0, "priority": p} for p in (0, 5, 1, 5)]})
    assert start_order(result) == [2, 4, 3, 1]


def test_node_affinity_and_pools_in_order_of_preference():
    """docs/task-manager.md's example: render jobs of cost 2 on gpu1 (2) and big (4)."""
    result = run({"workers": {"gpu1": {"capacity": 2, "pools": ["gpu"]},
                              "big": {"capacity": 4, "pools": ["default"]}},
                  "task_types": {"render": {"pools": ["gpu", "default"], "cost": 2,
                                            "duration": "20s"}},
                  "arrivals": [{"type": "render", "at": 0, "burst": 4}]})
    names = worker_names(result)
    placed = {job: names[worker] for _, job, worker, _ in events(result, "start")}
    assert placed == {1: "gpu1-1", 2: "big-1", 3: "big-1", 4: "gpu1-1"}
    assert starts(result)[4] == [20.0]


def test_an_idle_worker_takes_one_job_costlier_than_its_capacity():
    result = run({"workers": one_worker(capacity=2),
                  "task_types": {"big": {"cost": 5, "duration": "5s"},
                                 "small": {"duration": "5s"}},
                  "arrivals": [{"type": "big", "at": 0}, {"type": "small", "at": 0}]})
    assert starts(result) == {1: [0.0], 2: [5.0]}


def test_locks_shared_and_exclusive_run_in_creation_order():
    result = run({"workers": one_worker(capacity=10),
                  "task_types": {"job": {"duration": "10s", "locks": ["p:shared"]},
                                 "update": {"duration": "10s", "locks": ["p"]},
                                 "other": {"duration": "10s"}},
                  "arrivals": [{"type": name, "at": 0}
                               for name in ("job", "job", "update", "job", "other")]})
    assert starts(result) == {1: [0.0], 2: [0.0], 5: [0.0], 3: [10.0], 4: [20.0]}
    locks = {row["lock"]: row for row in result.report["locks"]}
    assert locks["p"]["jobs"] == 1 and locks["p:shared"]["jobs"] == 1
    assert locks["p"]["seconds"] == 10.0 and locks["p:shared"]["seconds"] == 20.0


def test_no_simultaneous_runs_of_the_same_args():
    result = run({"workers": one_worker(capacity=10),
                  "task_types": {"t": {"duration": "10s", "simultaneous": False}},
                  "arrivals": [{"type": "t", "at": 0, "args": {"x": x}} for x in (1, 1, 2)]})
    assert starts(result) == {1: [0.0], 3: [0.0], 2: [10.0]}


def test_max_queue_length_bounds_a_type_across_workers():
    result = run({"workers": {"w": {"count": 3, "capacity": 4}},
                  "task_types": {"t": {"duration": "10s", "max_queue_length": 2}},
                  "arrivals": [{"type": "t", "at": 0, "burst": 5}]})
    assert sorted(t[0] for t in starts(result).values()) == [0, 0, 10, 10, 20]


def test_retries_wait_their_backoff_and_then_the_job_fails():
    result = run({"workers": one_worker(),
                  "task_types": {"t": {"duration": "1s", "fail": 1.0, "retries": 2,
                                       "retry_delay": "10s", "retry_backoff": 2}},
                  "arrivals": [{"type": "t", "at": 0}]})
    first, second, third = starts(result)[1]
    assert 1 + 5 <= second - first <= 1 + 10      # jitter shortens by half at most
    assert 1 + 10 <= third - second <= 1 + 20
    assert jobs(result)[1].state is JobState.FAILED
    assert result.report["jobs"]["ended"] == {"failed": 1}


def test_a_timeout_fails_the_attempt_at_the_deadline():
    result = run({"workers": one_worker(),
                  "task_types": {"t": {"duration": "1m", "timeout": "5s"}},
                  "arrivals": [{"type": "t", "at": 0, "burst": 2}]})
    assert starts(result) == {1: [0.0], 2: [5.0]}
    assert result.report["jobs"]["ended"] == {"failed": 2}


@pytest.mark.parametrize(("losses", "state", "attempts"), [(3, JobState.SUCCEEDED, 2),
                                                           (0, JobState.ERROR, 1)])
def test_a_crashed_workers_jobs_return_after_its_lease(losses, state, attempts):
    """Crash at 5 s; the lease (15 s) runs out at 20 s: the job is requeued (a loss
    within the budget) and runs on the worker that restarted at 35 s, or ends in error
    when the budget is 0."""
    result = run({"workers": one_worker(lease="15s", crash={"at": "5s", "restart": "30s"}),
                  "task_types": {"t": {"duration": "100s", "max_worker_losses": losses}},
                  "arrivals": [{"type": "t", "at": 0}]})
    job = jobs(result)[1]
    assert job.state is state
    assert job.attempt == attempts
    assert [t for t, *_ in events(result, "lost")] == [20.0]
    if state is JobState.SUCCEEDED:
        assert starts(result)[1] == [0.0, 35.0]
        assert job.finished == 135.0
        assert job.losses == 1


def test_a_job_placed_on_a_dead_worker_before_its_expulsion_waits_there():
    result = run({"workers": one_worker(capacity=2, lease="15s",
                                        crash={"at": "5s", "restart": "60s"}),
                  "task_types": {"t": {"duration": "100s"}},
                  "arrivals": [{"type": "t", "at": 0}, {"type": "t", "at": "10s"}]})
    assert events(result, "dispatch")[1][:2] == (10.0, 2)
    lost = {job: t for t, job, _, _ in events(result, "lost")}
    assert lost == {1: 20.0, 2: 20.0}
    assert jobs(result)[2].losses == 0  # it had not started: no loss counted
    assert starts(result)[2] == [65.0]


def test_the_scheduler_times_out_an_attempt_on_a_dead_worker():
    result = run({"workers": one_worker(lease="60s", crash={"at": "5s", "restart": "1h"}),
                  "scheduler": {"timeout_grace": "10s"},
                  "task_types": {"t": {"duration": "1m", "timeout": "20s"}},
                  "arrivals": [{"type": "t", "at": 0}]})
    assert [t for t, *_ in events(result, "timeout")] == [30.0]
    assert jobs(result)[1].state is JobState.FAILED


GRAPH = """
tasks:
  build: {type: ok}
  test: {type: broken, requires: [build]}
  deploy: {type: ok, requires: [test]}
  notify: {type: ok, requires: [{label: test, on: failure}]}
  cleanup: {type: ok, requires: [{label: deploy, on: always}]}
"""


def test_a_graph_failure_is_handled_by_its_failure_edge(tmp_path: Path):
    (tmp_path / "g.yaml").write_text(GRAPH)
    result = run({"workers": one_worker(capacity=4),
                  "task_types": {"ok": {"duration": "1s"},
                                 "broken": {"duration": "1s", "fail": 1.0}},
                  "arrivals": [{"graph": "g.yaml", "at": 0}]}, base=tmp_path)
    states = {j.label: j.state for j in jobs(result).values()}
    assert states == {"build": JobState.SUCCEEDED, "test": JobState.FAILED,
                      "deploy": JobState.DEPENDENCY_FAILED, "notify": JobState.SUCCEEDED,
                      "cleanup": JobState.SKIPPED}
    assert result.report["graphs"]["states"] == {"finished": 1}
    assert result.report["graphs"]["makespan_max"] == 3.0


def test_an_unhandled_failure_blocks_its_graph(tmp_path: Path):
    (tmp_path / "g.yaml").write_text("tasks:\n  a: {type: broken}\n"
                                     "  b: {type: ok, requires: [a]}\n")
    result = run({"workers": one_worker(),
                  "task_types": {"ok": {"duration": "1s"},
                                 "broken": {"duration": "1s", "fail": 1.0}},
                  "arrivals": [{"graph": "g.yaml", "at": [0, "10s"]}]}, base=tmp_path)
    assert result.report["graphs"]["states"] == {"blocked": 2}


def test_prerequisites_are_reused_in_flight_and_within_their_cache():
    result = run({"workers": one_worker(capacity=10),
                  "task_types": {
                      "update": {"duration": "10s"},
                      "deploy": {"duration": "5s", "prerequisites": [
                          {"type": "update", "args": {"p": "{p}"}, "cache": "60s"}]}},
                  "arrivals": [{"type": "deploy", "at": [0, 0, "30s", "100s"],
                                "args": {"p": 1}}]})
    by_type = {}
    for job in jobs(result).values():
        by_type.setdefault(job.type.name, []).append(job)
    assert [j.created for j in by_type["update"]] == [0.0, 100.0]
    assert [starts(result)[j.id][0] for j in by_type["deploy"]] == [10.0, 10.0, 30.0, 110.0]


def test_schedules_every_cron_and_adaptive():
    result = run({"workers": one_worker(capacity=10),
                  "until": "3h",
                  "task_types": {
                      "tick": {"duration": "1s"},
                      "hourly": {"duration": "1s"},
                      "feed": {"duration": "1m", "interval": "10m,5m,40m",
                               "backoff_factor": 2, "eventful": 0.0}},
                  "arrivals": [{"type": "tick", "every": "30m"},
                               {"type": "hourly", "cron": "0 * * * *"},
                               {"type": "feed", "adaptive": True}]})
    created: dict[str, list[float]] = {}
    for job in jobs(result).values():
        created.setdefault(job.type.name, []).append(job.created)
    assert created["tick"] == [0, 1800, 3600, 5400, 7200, 9000]
    assert created["hourly"] == [3600, 7200]
    # Uneventful runs: the interval doubles up to its max (20, 40, 40 minutes), each
    # counted from the end of the run before.
    assert created["feed"] == [0, 60 + 1200, 1260 + 60 + 2400, 3720 + 60 + 2400,
                               6180 + 60 + 2400]


def test_aging_lets_a_low_priority_job_past_a_stream_of_higher_ones():
    doc = {"workers": one_worker(),
           "until": "2h",
           "task_types": {"t": {"duration": "1m"}},
           "arrivals": [{"type": "t", "at": "30s", "priority": 0},
                        {"type": "t", "every": "1m", "priority": 1}]}
    aged = run({**doc, "scheduler": {"aging": "10m"}})
    low = next(j for j in jobs(aged).values() if j.base_priority == 0)
    assert low.started is not None and low.started < 25 * 60
    unaged = run({**doc, "scheduler": {"aging": 0}})
    low = next(j for j in jobs(unaged).values() if j.base_priority == 0)
    assert low.started == 2 * 3600  # once the stream stops


def test_short_jobs_open_a_prefetch_window():
    result = run({"workers": one_worker(capacity=2),
                  "task_types": {"t": {"duration": 0.001}},
                  "arrivals": [{"type": "t", "at": 0, "burst": 200}]})
    queued = [t for t, job, _, _ in events(result, "dispatch")
              if starts(result)[job][0] > t]
    assert queued, "jobs are placed ahead of their start once the window opens"
    assert result.report["jobs"]["ended"] == {"succeeded": 200}
    shut = run({"workers": one_worker(capacity=2, prefetch=0),
                "task_types": {"t": {"duration": 0.001}},
                "arrivals": [{"type": "t", "at": 0, "burst": 200}]})
    assert all(starts(shut)[job][0] == t for t, job, _, _ in events(shut, "dispatch"))


def test_jobs_no_worker_serves_stay_pending_and_are_reported():
    result = run({"workers": one_worker(),
                  "task_types": {"gpu": {"pools": ["gpu"], "duration": "1s"},
                                 "t": {"duration": "1s"}},
                  "arrivals": [{"type": "gpu", "at": 0}, {"type": "t", "at": 0}]})
    assert result.report["jobs"]["unfinished"] == {"pending": 1}
    assert result.report["starvation"]["still_waiting"] == 1
