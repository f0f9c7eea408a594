"""Replay (``taskyard simulate --from-db``): jobs really run on each store are read back
with their attempts, edges and workers, and replayed: each attempt as long as it ran and
ending as it ended; under another capacity, what the capacity decides changes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

from driver import drive

from taskyard.core.states import JobState
from taskyard.model.records import ClaimedJob, JobSubmission, TaskTypeSpec
from taskyard.sim import simulate
from taskyard.sim.replay import replay_scenario
from taskyard.store import Store
from taskyard.store.reads.history import read_history

GRAPH = {"tasks": {"build": {"type": "work"}, "test": {"type": "work", "requires": ["build"]},
                   "ship": {"type": "work", "requires": [{"label": "test", "on": "always"}]}}}


def _outcome(job: ClaimedJob) -> tuple[str, Any]:
    # The flaky type fails its first attempt; a retry succeeds.
    if job.type == "flaky" and job.attempt == 1:
        return "failed", None
    return "succeeded", None


def _history(store: Store) -> tuple[list[int], int, int]:
    store.task_types.put(TaskTypeSpec("work", "python:m:f", pools=("east",), locks=("r:{r}",)))
    store.task_types.put(TaskTypeSpec("flaky", "python:m:f", pools=("east",), retries=2,
                                     max_queue_length=3))
    ids = store.jobs.submit([JobSubmission("work", {"r": n % 2}, priority=n % 3)
                             for n in range(6)] + [JobSubmission("flaky", {}, 5)])
    graph = store.graphs.submit({**GRAPH, "tasks": {k: {**v, "args": {"r": 9}}
                                                   for k, v in GRAPH["tasks"].items()}})
    canceled = store.jobs.submit([JobSubmission("work", {"r": 7})])[0]
    store.jobs.cancel(canceled)
    drive(store, _outcome, worker="east-1")
    return ids, graph, canceled


def test_a_recorded_day_replays_attempt_by_attempt(store: Store) -> None:
    # The driver's worker serves "default": a worker of pool "east" runs the jobs.
    store.workers.register("east-1", ["east"], 4, lease_seconds=300)
    ids, graph_id, canceled = _history(store)
    history = read_history(store, 3600)

    by_id = {j.id: j for j in history.jobs}
    assert set(by_id) >= {*ids, canceled}
    flaky = by_id[ids[-1]]
    assert [a.state for a in flaky.attempts] == ["failed", "succeeded"]
    assert flaky.retries == 2 and flaky.priority == 5 and flaky.pools == ("east",)
    assert by_id[ids[0]].locks == ("r:0",)
    graph_jobs = {j.label: j for j in history.jobs if j.graph_id == graph_id}
    assert graph_jobs["ship"].requires == ((graph_jobs["test"].id, "always"),)
    assert history.queue_limits == {"flaky": 3}
    assert {(w.name, w.pools, w.capacity) for w in history.workers} >= {
        ("east-1", ("east",), 4)}

    scenario, notes = replay_scenario(history)
    assert notes.left_out_canceled == 1 and notes.estimated == 0
    assert notes.jobs == len(history.jobs) - 1
    result = simulate(scenario, trace=True, keep_jobs=True)
    assert result.simulation.jobs is not None
    replayed = {j.id: j for j in result.simulation.jobs.values()}
    assert result.report["jobs"]["created"] == notes.jobs
    assert result.report["jobs"]["ended"] == {"succeeded": notes.jobs}
    # Ids are given again in creation order: the n-th recorded job is the n-th replayed.
    recorded = [j for j in history.jobs if j.id != canceled]
    for sim_id, job in enumerate(recorded, 1):
        again = replayed[sim_id]
        assert (again.type.name, again.base_priority, again.pools, again.attempt) == (
            job.type, job.priority, job.pools, len(job.attempts))
        ran = [a.finished_at - a.started_at for a in job.attempts]
        assert [again.recorded[n][0] for n in range(len(ran))] == ran  # type: ignore[index]
    assert result.trace is not None
    ends = {job: t for t, what, job, _, _ in result.trace if what.startswith("end:")}
    starts = {job: t for t, what, job, _, _ in result.trace if what == "start"}
    labels = {j.label: n for n, j in enumerate(recorded, 1) if j.graph_id == graph_id}
    assert starts[labels["test"]] >= ends[labels["build"]]
    assert starts[labels["ship"]] >= ends[labels["test"]]


def test_another_capacity_changes_what_capacity_decides(store: Store) -> None:
    store.workers.register("east-1", ["east"], 4, lease_seconds=300)
    _history(store)
    scenario, notes = replay_scenario(read_history(store, 3600))
    assert notes.workers["east"] == 1
    none = simulate(scenario.with_workers({"east": (0, None)}, new_groups=True))
    assert none.report["jobs"]["unfinished"] == {"pending": 8, "waiting": 2}
    more = simulate(scenario.with_workers({"east": (3, 1), "west+east": (1, 2)},
                                          new_groups=True))
    assert {p["pool"]: p["workers"] for p in more.report["pools"]} == {"east": 4, "west": 1}
    assert more.report["jobs"]["ended"] == {"succeeded": notes.jobs}


def test_the_cli_replays_a_database(store: Store, db_url: str) -> None:
    store.workers.register("east-1", ["east"], 4, lease_seconds=300)
    _history(store)
    env = {k: v for k, v in os.environ.items() if k != "TASKYARD_DB"}
    done = subprocess.run(
        [sys.executable, "-m", "taskyard", "simulate", "--from-db", db_url, "--since", "1h",
         "--workers", "east=2x2", "--json"],
        capture_output=True, text=True, env=env, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["replay"]["jobs"] == 10 and report["replay"]["left_out_canceled"] == 1
    assert report["replay"]["workers"] == {"east": 2}
    assert report["jobs"]["ended"] == {JobState.SUCCEEDED.value: 10}
    bad = subprocess.run(
        [sys.executable, "-m", "taskyard", "simulate", "--from-db", "mysql://x/y"],
        capture_output=True, text=True, env=env, timeout=120, check=False)
    assert bad.returncode == 2
    assert bad.stderr.startswith("taskyard: error: ") and len(bad.stderr.splitlines()) == 1
