"""A lone worker (no scheduler daemon) places the work submitted before it started:
it runs one scheduling cycle once registered, trying the global lock, not waiting."""

from __future__ import annotations

from conftest import Cluster
from cycle_lock import holding_the_cycle
from polling import wait_for
from taskyard.scheduler.cycle import run_cycle
from taskyard.store import CycleTx, open_store


def worker_cycle(cycle: CycleTx) -> object:
    """The cycle ``taskyard worker`` runs in its reports (see cli/daemons.py)."""
    return run_cycle(cycle, holder="worker", maintenance_every=0.25, record=False)


def test_a_job_submitted_before_any_worker_runs_on_a_lone_worker(cluster: Cluster) -> None:
    y = cluster.yard
    y.add_task_type("echo", "python:handlers_for_tests:echo")
    job_id = y.submit("echo", {"x": 1})  # its inline cycle finds no worker
    assert y.get_job(job_id).state == "pending"
    cluster.add_worker("lone", placer=worker_cycle)
    job = y.wait(job_id, 60)
    assert (job.state, job.worker, job.result["args"]) == ("succeeded", "lone", {"x": 1})


def test_a_graph_submitted_before_any_worker_completes_on_a_lone_worker(
    cluster: Cluster,
) -> None:
    y = cluster.yard
    y.add_task_type("echo", "python:handlers_for_tests:echo")
    graph_id = y.submit_graph({"tasks": {
        "first": {"type": "echo", "args": {"n": 1}},
        "then": {"type": "echo", "args": {"n": 2}, "requires": ["first"]},
    }})
    cluster.add_worker("lone", placer=worker_cycle)
    graph = y.wait_graph(graph_id, 60)
    assert graph.state == "finished"
    by_label = {j.label: j for j in graph.jobs}
    assert [by_label[label].state for label in ("first", "then")] == ["succeeded"] * 2
    assert by_label["then"].worker == "lone"


def test_a_lone_worker_that_finds_the_cycle_lock_held_places_once_it_is_free(
    cluster: Cluster,
) -> None:
    y = cluster.yard
    y.add_task_type("echo", "python:handlers_for_tests:echo")
    job_id = y.submit("echo")
    other = open_store(cluster.url)
    try:
        with holding_the_cycle(other):
            worker = cluster.add_worker("lone", placer=worker_cycle)
            # Its first report tried the lock and went on without the cycle.
            wait_for("the worker's first report", lambda: worker.stats["reports"] >= 1)
            assert y.get_job(job_id).state == "pending"
        assert y.wait(job_id, 60).state == "succeeded"
    finally:
        other.close()
